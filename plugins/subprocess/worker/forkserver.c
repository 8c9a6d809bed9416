/* plugins/subprocess/worker/forkserver.c: the fork server.
 *
 * The process tree, all in the worker's own process group at first:
 *
 *   host (the plugin)
 *    └─ fork server: Python started once, single-threaded, child subreaper
 *        ├─ cell process (one per stateless cell; its own process group)
 *        │   └─ whatever the cell starts
 *        └─ session process (one per session)
 *
 * The server reads open requests (RUN with a channel descriptor) from the
 * control channel and hands each, with its channel, to a spare: a process
 * forked ahead of need (SPARES of them), set up and warmed up, waiting for
 * one request.  A process serves one stateless cell or one session, then
 * exits; every cell gets a fresh one.  When one
 * ends it kills what that process left (orphans the server adopted), then
 * tells the host how it ended (EXITED) on the process's channel.  When the
 * host closes the control channel, everything is killed and the server
 * exits.
 */
#include "config.h"

#include <fcntl.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

/* Spares forked ahead of need: a fork costs milliseconds (more on some
 * virtual machines), so cells should not wait for one.  Four to start
 * with: with two, a caller running cells back to back often got a spare
 * still being forked or warmed up (refilled right after the previous
 * request) and a stateless cell took 3.6-4.0 ms; with four, 2.0-2.3 ms
 * (bench/README.md).  Each costs about 1.5 MB of private memory, so more
 * are kept only when cells come fast enough to need them: a spare handed
 * out within SPARE_YOUNG_US of its fork was likely still warming up, and
 * the pool grows by one, up to SPARES_MAX (two callers: 425 cells/s with
 * four, 734 with twelve). */
#define SPARES 4
#define SPARES_MAX 16
#define SPARE_YOUNG_US (20 * 1000)

/* pid -> the channel descriptor the server keeps to send EXITED, or -1
 * for a spare not handed a cell yet. */
static GHashTable *children;
/* Spares, oldest first: {pid, the server's end of its socket}. */
typedef struct {
  pid_t pid;
  int socket;
  gint64 forked_at;
} spare;
static GQueue spares = G_QUEUE_INIT;
/* SPARES, growing with the load; or $CELLEXEC_WORKER_SPARES (1 to 16, set
 * through the `env` option), fixed, for measuring what the number changes
 * (bench/README.md). */
static guint spares_wanted = SPARES;
static gboolean spares_fixed;

static gboolean
fork_spare(GError **error)
{
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) < 0) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot create a socket pair: %s",
                g_strerror(saved));
    return FALSE;
  }
  /* In the sandbox the server is outside the children's PID namespace:
   * they see their parent as pid 0. */
  pid_t server = cx__worker_sandboxed ? 0 : getpid();
  /* In the sandbox, into a PID namespace of its own (pid_namespace.c). */
  pid_t pid = -1;
  if (cx__worker_private_cwd_prepare(error))
    pid = cx__worker_fork_in_new_namespace(cx__py_fork, error);
  if (pid == 0)
    cx__worker_spare_main(sockets[1], server);
  cx__worker_private_cwd_adopt(pid);
  close(sockets[1]);
  if (pid < 0) {
    close(sockets[0]);
    return FALSE;
  }
  if (cx__worker_sandboxed) {
    /* Its cgroup before it gets a cell; and its pid as the host sees it,
     * which it cannot learn inside its namespace. */
    JsonObject *pid_message = json_object_new();
    json_object_set_int_member(pid_message, "pid", pid);
    if (!cx__worker_sandbox_adopt(pid, error) ||
        !cx__wire_send_object(sockets[0], CX__WIRE_MSG_STARTED, pid_message, -1, error)) {
      kill(pid, SIGKILL);
      close(sockets[0]);
      /* Reaped (and its cgroup released) by reap_children(). */
      g_hash_table_insert(children, GINT_TO_POINTER(pid), GINT_TO_POINTER(-2));
      return FALSE;
    }
  }
  spare *s = g_new(spare, 1);
  *s = (spare){ pid, sockets[0], g_get_monotonic_time() };
  g_queue_push_tail(&spares, s);
  g_hash_table_insert(children, GINT_TO_POINTER(pid), GINT_TO_POINTER(-1));
  return TRUE;
}

static void
refill_spares(void)
{
  while (g_queue_get_length(&spares) < spares_wanted && fork_spare(NULL))
    ;
}

/* Hand the open request PAYLOAD and CHANNEL to a spare. */
static void
open_channel(int channel, const guint8 *payload, gsize len)
{
  g_autoptr(GError) error = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (g_queue_is_empty(&spares) && !fork_spare(&error))
      break;
    g_autofree spare *s = g_queue_pop_head(&spares);
    if (!spares_fixed && spares_wanted < SPARES_MAX &&
        g_get_monotonic_time() - s->forked_at < SPARE_YOUNG_US)
      spares_wanted++;
    struct iovec part = { (void *)payload, len };
    gboolean sent = cx__wire_sendv(s->socket, CX__WIRE_MSG_RUN, &part, 1, channel, NULL);
    close(s->socket);
    if (sent) {
      /* Its EXITED goes on the channel, through our copy. */
      g_hash_table_insert(children, GINT_TO_POINTER(s->pid), GINT_TO_POINTER(channel));
      return;
    }
    /* That spare died; reap_children() will see it go. */
  }
  cx__wire_send_error(channel,
                      error != NULL ? error->message : "the worker cannot start a cell process",
                      NULL);
  close(channel);
}

/* What the process PID had, once it has ended: its cgroup and what is
 * left in it, its PID namespace, its own cwd. */
static void
release_child(pid_t pid)
{
  cx__worker_sandbox_release(pid);
  cx__worker_pid_namespace_release(pid);
  cx__worker_private_cwd_release(pid);
}

/* A spare died before it got a cell (killed from outside?). */
static void
forget_spare(pid_t pid)
{
  for (GList *l = spares.head; l != NULL; l = l->next) {
    spare *s = l->data;
    if (s->pid == pid) {
      close(s->socket);
      g_free(s);
      g_queue_delete_link(&spares, l);
      return;
    }
  }
}

/* Kill the stopped spare PID and forget it; reap_children() reaps it. */
static void
drop_stopped_spare(pid_t pid)
{
  kill(pid, SIGKILL);
  forget_spare(pid);
}

/* The maker of the sandbox's PID namespaces ended (killed from outside?):
 * no spare can be forked any more, so the server ends, and the host starts
 * another at the next call. */
static gboolean maker_ended;

/* Reap what ended; for a cell or session process, sweep its orphans and
 * send EXITED. */
static void
reap_children(void)
{
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0 ||
         (pid < 0 && errno == EINTR)) {
    gpointer channel;
    if (pid > 0 && WIFSTOPPED(status)) {
      /* A spare some cell stopped would take the next cell and never run
       * it: replace it.  One stopped just after it was handed a cell (the
       * signal had not taken effect yet) is continued: no one else may
       * stop a cell, which has no terminal for job control. */
      if (GPOINTER_TO_INT(g_hash_table_lookup(children, GINT_TO_POINTER(pid))) == -1)
        drop_stopped_spare(pid);
      else
        kill(pid, SIGCONT);
      continue;
    }
    if (pid > 0 && pid == cx__worker_pid_namespace_maker)
      maker_ended = TRUE;
    if (pid < 0 || !g_hash_table_steal_extended(children, GINT_TO_POINTER(pid), NULL, &channel))
      continue; /* an adopted orphan */
    release_child(pid);
    if (GPOINTER_TO_INT(channel) < 0) {
      forget_spare(pid);
      continue;
    }
    /* What is left of its process group, then its adopted descendants. */
    kill(-pid, SIGKILL);
    cx__worker_kill_orphans(children);
    /* Never block here: the dead process could have filled the channel,
     * and this single thread serves every other cell.  If EXITED does not
     * fit, the host still sees the channel close and reports the crash. */
    int flags = fcntl(GPOINTER_TO_INT(channel), F_GETFL);
    if (flags >= 0)
      fcntl(GPOINTER_TO_INT(channel), F_SETFL, flags | O_NONBLOCK);
    cx__wire_send_object(GPOINTER_TO_INT(channel), CX__WIRE_MSG_EXITED,
                         cx__wire_exit_object(status), -1, NULL);
    close(GPOINTER_TO_INT(channel));
  }
}

static void
shut_down(void)
{
  spare *s;
  while ((s = g_queue_pop_head(&spares)) != NULL) {
    close(s->socket); /* it exits on EOF, or is killed below */
    g_free(s);
  }
  GHashTableIter iter;
  gpointer pid;
  g_hash_table_iter_init(&iter, children);
  while (g_hash_table_iter_next(&iter, &pid, NULL)) {
    kill(-GPOINTER_TO_INT(pid), SIGKILL);
    release_child(GPOINTER_TO_INT(pid));
  }
  g_hash_table_remove_all(children);
  cx__worker_kill_orphans(children);
  cx__worker_sandbox_finish();
}

static gboolean
handle_requests(int control, cx__wire_reader *reader, GError **error)
{
  guint8 type;
  const guint8 *payload;
  gsize len;
  switch (cx__wire_reader_fill(reader, FALSE, error)) {
  case CX__WIRE_READ_EOF:
    return FALSE;
  case CX__WIRE_READ_ERROR:
    return FALSE;
  default:
    break;
  }
  while (cx__wire_reader_next(reader, &type, &payload, &len, error)) {
    int channel = cx__wire_reader_take_fd(reader);
    if (type != CX__WIRE_MSG_RUN || channel < 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "unexpected message '%c' on the control channel", type);
      if (channel >= 0)
        close(channel);
      return FALSE;
    }
    open_channel(channel, payload, len);
  }
  return error == NULL || *error == NULL;
}

int
cx__worker_serve(int control, GPtrArray *measures)
{
  /* SIGCHLD through a descriptor, so one poll() waits for both. */
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int child_events = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  children = g_hash_table_new(NULL, NULL);
  const char *wanted = g_getenv("CELLEXEC_WORKER_SPARES");
  if (wanted != NULL && atoi(wanted) >= 1 && atoi(wanted) <= SPARES_MAX) {
    spares_wanted = (guint)atoi(wanted);
    spares_fixed = TRUE;
  }

  JsonObject *hello = json_object_new();
  json_object_set_int_member(hello, "protocol", CX__WIRE_PROTOCOL_VERSION);
  json_object_set_string_member(hello, "worker", "cellexec-worker " PACKAGE_VERSION);
  json_object_set_int_member(hello, "pid", getpid());
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) python = cx__py_describe(&error);
  if (python != NULL)
    json_object_set_member(hello, "python", g_steal_pointer(&python));
  if (measures != NULL) {
    JsonArray *list = json_array_new();
    for (guint i = 0; i < measures->len; i++)
      json_array_add_string_element(list, g_ptr_array_index(measures, i));
    json_object_set_array_member(hello, "sandbox", list);
  }
  if (!cx__wire_send_object(control, CX__WIRE_MSG_HELLO, hello, -1, &error))
    return 1;

  refill_spares();
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(control);
  /* A fork failed (a process limit?): no more until the next request. */
  gboolean refill_failed = FALSE;
  for (;;) {
    struct pollfd fds[] = { { control, POLLIN, 0 }, { child_events, POLLIN, 0 } };
    /* Spares are forked one at a time, when nothing else waits: a fork
     * takes a millisecond or more of this one thread, and a request that
     * comes meanwhile is handed a spare first. */
    gboolean short_of_spares = !refill_failed && g_queue_get_length(&spares) < spares_wanted;
    int ready = poll(fds, 2, short_of_spares ? 0 : -1);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (ready == 0) {
      refill_failed = !fork_spare(NULL);
      continue;
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(child_events, &info, sizeof info) > 0)
        ;
      reap_children();
      if (maker_ended) {
        g_clear_error(&error);
        g_set_error(&error, CX_ERROR, CX_ERROR_BACKEND,
                    "the maker of PID namespaces ended; stopping");
        break;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      g_clear_error(&error);
      refill_failed = FALSE;
      if (!handle_requests(control, reader, &error))
        break;
    }
  }
  if (error != NULL)
    g_printerr("cellexec-worker: %s\n", error->message);
  shut_down();
  return 0;
}
