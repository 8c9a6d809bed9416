/* plugins/subprocess/worker/pid_namespace.c: a PID namespace per spare.
 *
 * Every spare (so every stateless cell and every session) is forked into
 * a PID namespace of its own, as pid 2: the kernel lets no process name a
 * pid outside its namespace, so no call that takes a pid (kill, prlimit,
 * setpriority, sched_setaffinity, ioprio_set, pidfd_open, /proc/PID) nor
 * one that takes a user or group (PRIO_USER, kill(-1)) reaches another
 * session's processes or the idle spares.
 *
 * The fork server stays in the host's PID namespace (the host signals a
 * cell by the pid the server's fork returned).  It cannot make namespaces
 * itself: once it has entered one for its next child (setns), the kernel
 * refuses it a new one (unshare or clone with CLONE_NEWPID need the
 * namespace for children to be the caller's own).  So a small process
 * forked before Python starts, the maker (cellexec-pidns), makes them: on
 * each request it clones a child into a new namespace, that namespace's
 * init, and answers with its pid; the server enters the namespace with
 * setns(pidfd) and forks the spare, which is then still the server's own
 * child (the server waits for it and reports how it ended, as without
 * the sandbox) but pid 2 of the new namespace.
 *
 * The init (cellexec-init) only reaps: what a cell leaves running when
 * its process ends is reparented to it, not to the server.  When the
 * spare has ended the server kills the init, and with it the kernel kills
 * whatever is left in the namespace.  The spare is not the init itself,
 * for the kernel ignores a signal an init sends itself without a handler:
 * os.kill(os.getpid(), SIGKILL) and abort() would no longer end a cell.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"

pid_t cx__worker_pid_namespace_maker;
static int maker = -1;         /* the server's end of the maker's socket */
static GHashTable *inits;      /* a spare's pid -> its namespace's init */

static void
on_child(int signal_number)
{
}

/* A namespace's init: reap until killed (by the server, or when the maker
 * dies), with nothing a cell could use. */
G_GNUC_NORETURN static void
init_main(void)
{
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_NAME, "cellexec-init");
  close_range(0, ~0U, 0);
  struct sigaction action = { .sa_handler = on_child };
  sigemptyset(&action.sa_mask);
  sigaction(SIGCHLD, &action, NULL);
  /* Under the maker's filter already (maker_main). */
  if (!cx__worker_drop_privileges(FALSE, NULL))
    _exit(1);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (;;) {
    if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
      pause();
  }
}

/* The maker: one byte in, the pid of a new namespace's init out (or -1
 * and errno).  Its inits are reaped by the kernel (SIGCHLD ignored). */
G_GNUC_NORETURN static void
maker_main(int socket_fd)
{
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_NAME, "cellexec-pidns");
  if (socket_fd > 0)
    close_range(0, socket_fd - 1, 0);
  close_range(socket_fd + 1, ~0U, 0);
  signal(SIGCHLD, SIG_IGN);
  /* It keeps the capabilities of its user namespace to make namespaces
   * with; the rest goes, for it and every init it makes. */
  if (!cx__worker_drop_privileges(TRUE, NULL) || !cx__worker_seccomp_load_for_maker(NULL))
    _exit(1);
  char request;
  while (read(socket_fd, &request, 1) == 1) {
    /* The raw call: glibc's clone() wants a stack, and its fork() takes no
     * flags.  The child runs only init_main()'s system calls. */
    int answer[2] = { (int)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL),
                      errno };
    if (answer[0] == 0)
      init_main();
    if (write(socket_fd, answer, sizeof answer) != sizeof answer)
      break;
  }
  _exit(0);
}

gboolean
cx__worker_pid_namespaces_start(GError **error)
{
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) < 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "PID namespaces: %s", g_strerror(errno));
    return FALSE;
  }
  pid_t pid = fork();
  if (pid == 0)
    maker_main(ends[1]);
  int saved = errno;
  close(ends[1]);
  if (pid < 0) {
    close(ends[0]);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "PID namespaces: %s", g_strerror(saved));
    return FALSE;
  }
  maker = ends[0];
  cx__worker_pid_namespace_maker = pid;
  inits = g_hash_table_new(NULL, NULL);
  return TRUE;
}

/* Namespaces the maker keeps made ahead of need: making one (a request,
 * its clone of the init) cost 160-300 µs, about as much as the fork of a
 * spare, and waiting for it held up the server's one thread; made ahead,
 * on the other core when there is one, entering one is an answer already
 * read and a setns (10-30 µs).  Each is an idle init until used. */
#define NAMESPACES_AHEAD 4

/* The init of a new namespace, which this process's next fork goes into;
 * -1 with *ERROR. */
static pid_t
enter_new_namespace(GError **error)
{
  static guint asked; /* requests the maker has not answered yet */
  while (asked < NAMESPACES_AHEAD && write(maker, "n", 1) == 1)
    asked++;
  int answer[2] = { -1, EPIPE };
  gssize n = 0;
  if (asked > 0) {
    while ((n = read(maker, answer, sizeof answer)) < 0 && errno == EINTR)
      ;
    asked--;
  }
  if (n != sizeof answer)
    answer[0] = -1;
  pid_t init = answer[0];
  int pidfd = init > 0 ? (int)syscall(SYS_pidfd_open, init, 0) : -1;
  errno = init > 0 ? errno : answer[1];
  gboolean ok = pidfd >= 0 && setns(pidfd, CLONE_NEWPID) == 0;
  int saved = errno;
  if (pidfd >= 0)
    close(pidfd);
  if (!ok) {
    if (init > 0)
      kill(init, SIGKILL);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "PID namespace of a cell's process: %s",
                g_strerror(saved));
    return -1;
  }
  return init;
}

pid_t
cx__worker_fork_in_new_namespace(pid_t (*fork_function)(void), GError **error)
{
  pid_t init = maker < 0 ? 0 : enter_new_namespace(error);
  if (init < 0)
    return -1;
  pid_t pid = fork_function();
  int saved = errno;
  if (pid > 0 && init > 0)
    g_hash_table_insert(inits, GINT_TO_POINTER(pid), GINT_TO_POINTER(init));
  if (pid < 0) {
    if (init > 0)
      kill(init, SIGKILL);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the worker cannot fork a process for the cell: %s", g_strerror(saved));
  }
  return pid;
}

void
cx__worker_pid_namespace_release(pid_t pid)
{
  gpointer init;
  if (inits != NULL && g_hash_table_steal_extended(inits, GINT_TO_POINTER(pid), NULL, &init))
    kill(GPOINTER_TO_INT(init), SIGKILL);
}
