/* plugins/subprocess/worker_process.c: starting and stopping a worker.
 *
 * posix_spawn (vfork-fast, safe in a threaded host) with the control
 * socket as descriptor 3, /dev/null as stdin, nothing else inherited, all
 * signals at their defaults and a process group of its own, so the
 * host's terminal's Ctrl-C and the host's signal settings do not reach
 * cells.  The host reaps only the pids it started (waitpid(pid)), never
 * waitpid(-1): other children of the host are not ours.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker_process.h"

extern char **environ;

/* How long Python may take to start (valgrind, a cold disk). */
#define HELLO_TIMEOUT_MS 30000
/* How long a worker may take to exit once told to. */
#define STOP_TIMEOUT_US (2 * G_USEC_PER_SEC)

static gboolean
allowed_variable(const char *assignment)
{
  static const char *const names[] = { "PATH", "HOME", "LANG", "TZ", "TMPDIR" };
  const char *equals = strchr(assignment, '=');
  if (equals == NULL)
    return FALSE;
  gsize len = equals - assignment;
  if (len > 3 && strncmp(assignment, "LC_", 3) == 0)
    return TRUE;
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    if (strlen(names[i]) == len && strncmp(assignment, names[i], len) == 0)
      return TRUE;
  }
  return FALSE;
}

char **
cx__sp_worker_environment(gboolean inherit, const char *const *configured)
{
  /* Index by name: the configured list may be long, and g_environ_setenv
   * copies the whole array on every call. */
  g_autoptr(GPtrArray) assignments = g_ptr_array_new();
  g_autoptr(GHashTable) position = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (int source = 0; source < 2; source++) {
    const char *const *list = source == 0 ? (const char *const *)environ : configured;
    for (const char *const *variable = list; variable != NULL && *variable != NULL; variable++) {
      const char *equals = strchr(*variable, '=');
      if (equals == NULL || (source == 0 && !inherit && !allowed_variable(*variable)))
        continue;
      char *name = g_strndup(*variable, equals - *variable);
      gpointer index;
      if (g_hash_table_lookup_extended(position, name, NULL, &index)) {
        g_ptr_array_index(assignments, GPOINTER_TO_UINT(index)) = (gpointer)*variable;
        g_free(name);
      } else {
        g_hash_table_insert(position, name, GUINT_TO_POINTER(assignments->len));
        g_ptr_array_add(assignments, (gpointer)*variable);
      }
    }
  }
  char **environment = g_new(char *, assignments->len + 1);
  for (guint i = 0; i < assignments->len; i++)
    environment[i] = g_strdup(g_ptr_array_index(assignments, i));
  environment[assignments->len] = NULL;
  return environment;
}

/* Copy what a sandboxed worker writes on its fds 1 and 2 to the host's
 * stderr until every process holding the pipe has closed it.  A plain
 * pthread that allocates nothing: a process the host forks meanwhile
 * inherits no memory of it. */
static void *
relay_stderr(void *data)
{
  int from = GPOINTER_TO_INT(data);
  char buffer[4096];
  ssize_t got;
  while ((got = read(from, buffer, sizeof buffer)) != 0) {
    if (got < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (ssize_t done = 0; done < got;) {
      ssize_t wrote = write(STDERR_FILENO, buffer + done, got - done);
      if (wrote < 0 && errno == EINTR)
        continue;
      if (wrote <= 0)
        break; /* the host's stderr is gone: keep draining */
      done += wrote;
    }
  }
  close(from);
  return NULL;
}

/* The worker's fds 1 and 2.  Its stdout is the host's stderr too: between
 * cells a session's fds 1 and 2 are the worker's own, and what a thread or
 * child a cell left behind writes then must not land in the host's stdout
 * (a `cellexec run --json` document, say).  A sandboxed worker gets a pipe
 * that a thread relays instead of the host's stderr itself: the worker
 * keeps copies of its fds 1 and 2 while a cell runs (to restore them
 * after), and a cell holding a descriptor of the host's stderr file could
 * read, truncate or rewrite it.  *RELAY is the pipe's read end, or -1. */
static gboolean
set_up_output(posix_spawn_file_actions_t *actions, gboolean sandboxed, int *relay,
              int *relay_writer, GError **error)
{
  *relay = *relay_writer = -1;
  if (sandboxed) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) < 0) {
      int saved = errno;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "cannot create the sandboxed worker's stderr pipe: %s", g_strerror(saved));
      return FALSE;
    }
    *relay = ends[0];
    *relay_writer = ends[1];
    posix_spawn_file_actions_adddup2(actions, ends[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(actions, ends[1], STDERR_FILENO);
  } else if (fcntl(STDERR_FILENO, F_GETFD) >= 0) {
    posix_spawn_file_actions_adddup2(actions, STDERR_FILENO, STDOUT_FILENO);
  } else {
    posix_spawn_file_actions_addopen(actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  }
  return TRUE;
}

static pid_t
spawn(const char *path, gboolean isolated, const char *preload, const char *sandbox,
      char **more_arguments, char **environment, int remote, int *relay, GError **error)
{
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, remote, 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int relay_writer;
  if (!set_up_output(&actions, sandbox != NULL, relay, &relay_writer, error)) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                          POSIX_SPAWN_SETPGROUP);

  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)path);
  if (isolated)
    g_ptr_array_add(argv, "--isolated");
  if (preload != NULL && *preload != '\0') {
    g_ptr_array_add(argv, "--preload");
    g_ptr_array_add(argv, (char *)preload);
  }
  if (sandbox != NULL) {
    g_ptr_array_add(argv, "--sandbox");
    g_ptr_array_add(argv, (char *)sandbox);
  }
  for (char **argument = more_arguments; argument != NULL && *argument != NULL; argument++)
    g_ptr_array_add(argv, *argument);
  g_ptr_array_add(argv, NULL);
  pid_t pid = -1;
  int failed = posix_spawn(&pid, path, &actions, &attributes, (char **)argv->pdata, environment);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (relay_writer >= 0)
    close(relay_writer);
  if (failed && *relay >= 0) {
    close(*relay);
    *relay = -1;
  }
  if (failed) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "cannot start the subprocess worker %s: %s; check the `worker` option "
                "(or CELLEXEC_WORKER) and that cellexec is installed completely",
                path, g_strerror(failed));
    return -1;
  }
  return pid;
}

static void
reap(pid_t pid)
{
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
}

/* Wait for the HELLO (or an ERROR saying why the worker cannot start). */
static JsonNode *
read_hello(int control, const char *path, GError **error)
{
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(control);
  gint64 deadline = g_get_monotonic_time() + HELLO_TIMEOUT_MS * 1000;
  guint8 type;
  const guint8 *payload;
  gsize len;
  gboolean timed_out;
  g_autoptr(GError) read_error = NULL;
  if (!cx__wire_read_within(reader, deadline, &type, &payload, &len, &timed_out, &read_error)) {
    if (timed_out)
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker %s did not start within %d s", path,
                  HELLO_TIMEOUT_MS / 1000);
    else if (read_error != NULL)
      g_propagate_error(error, g_steal_pointer(&read_error));
    else
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker %s exited before it was ready; its messages are "
                  "on standard error", path);
    return NULL;
  }
  g_autoptr(JsonNode) node = cx__wire_parse_object(payload, len, "HELLO", error);
  if (node == NULL)
    return NULL;
  JsonObject *object = json_node_get_object(node);
  if (type == CX__WIRE_MSG_ERROR) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the subprocess worker %s failed: %s",
                path, cx__wire_error_message(object));
    return NULL;
  }
  gint64 version = cx__peer_get_int(object, "protocol", 0);
  if (type != CX__WIRE_MSG_HELLO || version != CX__WIRE_PROTOCOL_VERSION) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the subprocess worker %s speaks protocol %" G_GINT64_FORMAT
                ", not %d; install the worker of this cellexec version",
                path, version, CX__WIRE_PROTOCOL_VERSION);
    return NULL;
  }
  return g_steal_pointer(&node);
}

cx__sp_worker_process *
cx__sp_worker_process_start(const char *path, gboolean isolated, const char *preload,
                            const char *sandbox, char **more_arguments, char **environment,
                            GError **error)
{
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) < 0) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot create a socket pair: %s",
                g_strerror(saved));
    return NULL;
  }
  int relay;
  pid_t pid = spawn(path, isolated, preload, sandbox, more_arguments, environment, sockets[1],
                    &relay, error);
  close(sockets[1]);
  if (pid < 0) {
    close(sockets[0]);
    return NULL;
  }
  cx__sp_worker_process *worker = g_new0(cx__sp_worker_process, 1);
  worker->pid = pid;
  worker->control = sockets[0];
  if (relay >= 0) {
    int failed = pthread_create(&worker->relay, NULL, relay_stderr, GINT_TO_POINTER(relay));
    if (failed) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "cannot start the thread relaying the sandboxed worker's stderr: %s",
                  g_strerror(failed));
      close(relay);
      cx__sp_worker_process_stop(worker);
      return NULL;
    }
    worker->relaying = TRUE;
  }
  worker->hello = read_hello(sockets[0], path, error);
  if (worker->hello == NULL) {
    kill(pid, SIGKILL);
    cx__sp_worker_process_stop(worker);
    return NULL;
  }
  return worker;
}

/* TRUE when PID is stopped (SIGSTOP, a tracer): the state field of
 * /proc/PID/stat, after the command name in parentheses. */
static gboolean
process_stopped(pid_t pid)
{
  g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents(path, &stat, NULL, NULL))
    return FALSE;
  const char *end = strrchr(stat, ')');
  return end != NULL && end[1] == ' ' && (end[2] == 'T' || end[2] == 't');
}

gboolean
cx__sp_worker_process_alive(cx__sp_worker_process *worker)
{
  if (worker->pid <= 0)
    return FALSE;
  int status;
  pid_t done = waitpid(worker->pid, &status, WNOHANG);
  if (done == worker->pid || (done < 0 && errno == ECHILD)) {
    worker->pid = 0;
    return FALSE;
  }
  /* A cell can stop its fork server (os.kill(os.getppid(), SIGSTOP)):
   * it would never serve again, so it counts as dead.  Its processes die
   * with it (PDEATHSIG). */
  if (process_stopped(worker->pid)) {
    kill(worker->pid, SIGKILL);
    reap(worker->pid);
    worker->pid = 0;
    return FALSE;
  }
  return TRUE;
}

/* Wait for the relay to copy what the worker wrote last (its reason for
 * failing, say) before the host reports its own error.  The worker's
 * processes are gone with it; a descendant that still holds the pipe
 * leaves the relay to end on its own. */
static void
finish_relay(cx__sp_worker_process *worker)
{
  if (!worker->relaying)
    return;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += STOP_TIMEOUT_US / G_USEC_PER_SEC;
  if (pthread_timedjoin_np(worker->relay, NULL, &deadline) != 0)
    pthread_detach(worker->relay);
  worker->relaying = FALSE;
}

void
cx__sp_worker_process_stop(cx__sp_worker_process *worker)
{
  if (worker == NULL)
    return;
  close(worker->control);
  if (worker->pid > 0 && process_stopped(worker->pid)) {
    kill(worker->pid, SIGKILL); /* it would never see its channel close */
    reap(worker->pid);
    worker->pid = 0;
  }
  if (worker->pid > 0) {
    gint64 deadline = g_get_monotonic_time() + STOP_TIMEOUT_US;
    int status;
    pid_t done;
    while ((done = waitpid(worker->pid, &status, WNOHANG)) == 0 &&
           g_get_monotonic_time() < deadline)
      g_usleep(1000);
    if (done == 0) {
      kill(worker->pid, SIGKILL);
      reap(worker->pid);
    }
  }
  finish_relay(worker);
  if (worker->hello != NULL)
    json_node_unref(worker->hello);
  g_free(worker);
}
