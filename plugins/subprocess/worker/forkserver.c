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
 * control channel and forks a process to serve each channel.  When one
 * ends it kills what that process left (orphans the server adopted), then
 * tells the host how it ended (EXITED) on the process's channel.  When the
 * host closes the control channel, everything is killed and the server
 * exits.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/subprocess/protocol.h"
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

/* pid -> the channel descriptor the server keeps to send EXITED. */
static GHashTable *children;

static void
send_error_on(int channel, const char *message)
{
  JsonObject *error = json_object_new();
  json_object_set_string_member(error, "message", message);
  cx_protocol_send_object(channel, CX_MSG_ERROR, error, -1, NULL);
}

static void
open_channel(int channel, const guint8 *payload, gsize len)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) request = cx_protocol_parse_object(payload, len, "RUN", &error);
  if (request == NULL) {
    send_error_on(channel, error->message);
    close(channel);
    return;
  }
  pid_t server = getpid();
  pid_t pid = cx_pyembed_fork();
  if (pid == 0)
    cx_worker_serve_channel(channel, json_node_get_object(request), server);
  if (pid < 0) {
    int saved = errno;
    g_autofree char *message = g_strdup_printf(
      "the worker cannot fork a process for the cell: %s", g_strerror(saved));
    send_error_on(channel, message);
    close(channel);
    return;
  }
  g_hash_table_insert(children, GINT_TO_POINTER(pid), GINT_TO_POINTER(channel));
}

/* Reap what ended; for a cell or session process, sweep its orphans and
 * send EXITED. */
static void
reap_children(void)
{
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
    gpointer channel;
    if (pid < 0 || !g_hash_table_steal_extended(children, GINT_TO_POINTER(pid), NULL, &channel))
      continue; /* an adopted orphan */
    /* What is left of its process group, then its adopted descendants. */
    kill(-pid, SIGKILL);
    cx_worker_kill_orphans(children);
    cx_protocol_send_object(GPOINTER_TO_INT(channel), CX_MSG_EXITED,
                            cx_protocol_exit_object(status), -1, NULL);
    close(GPOINTER_TO_INT(channel));
  }
}

static void
shut_down(void)
{
  GHashTableIter iter;
  gpointer pid;
  g_hash_table_iter_init(&iter, children);
  while (g_hash_table_iter_next(&iter, &pid, NULL))
    kill(-GPOINTER_TO_INT(pid), SIGKILL);
  g_hash_table_remove_all(children);
  cx_worker_kill_orphans(children);
}

static gboolean
handle_requests(int control, cx_frame_reader *reader, GError **error)
{
  guint8 type;
  const guint8 *payload;
  gsize len;
  switch (cx_frame_reader_fill(reader, FALSE, error)) {
  case CX_FRAME_READ_EOF:
    return FALSE;
  case CX_FRAME_READ_ERROR:
    return FALSE;
  default:
    break;
  }
  while (cx_frame_reader_next(reader, &type, &payload, &len, error)) {
    int channel = cx_frame_reader_take_fd(reader);
    if (type != CX_MSG_RUN || channel < 0) {
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
cx_worker_serve(int control)
{
  /* SIGCHLD through a descriptor, so one poll() waits for both. */
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int child_events = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  children = g_hash_table_new(NULL, NULL);

  JsonObject *hello = json_object_new();
  json_object_set_int_member(hello, "protocol", CX_WORKER_PROTOCOL_VERSION);
  json_object_set_string_member(hello, "worker", "cellexec-worker " PACKAGE_VERSION);
  json_object_set_int_member(hello, "pid", getpid());
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) python = cx_pyembed_describe(&error);
  if (python != NULL)
    json_object_set_member(hello, "python", g_steal_pointer(&python));
  if (!cx_protocol_send_object(control, CX_MSG_HELLO, hello, -1, &error))
    return 1;

  g_autoptr(cx_frame_reader) reader = cx_frame_reader_new(control);
  for (;;) {
    struct pollfd fds[] = { { control, POLLIN, 0 }, { child_events, POLLIN, 0 } };
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(child_events, &info, sizeof info) > 0)
        ;
      reap_children();
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      g_clear_error(&error);
      if (!handle_requests(control, reader, &error))
        break;
    }
  }
  if (error != NULL)
    g_printerr("cellexec-worker: %s\n", error->message);
  shut_down();
  return 0;
}
