/* plugins/subprocess/session.c: sessions, each a process of its own that
 * the fork server forks and keeps cells' state in; a session whose
 * process died starts a new one on its next call, and says so. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugins/subprocess/backend.h"
#include "plugins/subprocess/wire/protocol.h"

/* How long opening a session may wait for its process. */
#define SESSION_START_TIMEOUT_S 30

static gboolean session_connect_once(subprocess_session *session, gboolean *server_lost,
                                     GError **error);

static void
session_disconnect(subprocess_session *session)
{
  if (session->channel >= 0)
    close(session->channel);
  session->channel = -1;
  g_clear_pointer(&session->reader, cx__wire_reader_free);
  g_clear_pointer(&session->own_server, cx__sp_worker_process_stop);
  g_atomic_int_set(&session->pid, 0);
}

/* Read the first frame of a session's channel by DEADLINE, as
 * cx__wire_read_within() does, and give up early (*SERVER_LOST) if the
 * server that should start the process is gone. */
static gboolean
read_first_frame(subprocess_session *session, cx__sp_server_watch *watch, gint64 deadline,
                 guint8 *type, const guint8 **payload, gsize *len, gboolean *timed_out,
                 gboolean *server_lost, GError **error)
{
  *server_lost = FALSE;
  for (;;) {
    gint64 slice = MIN(deadline, g_get_monotonic_time() + CX__SP_SERVER_CHECK_US);
    g_autoptr(GError) read_error = NULL;
    if (cx__wire_read_within(session->reader, slice, type, payload, len, timed_out, &read_error))
      return TRUE;
    if (!*timed_out || g_get_monotonic_time() >= deadline) {
      if (read_error != NULL) /* none at a clean EOF */
        g_propagate_error(error, g_steal_pointer(&read_error));
      return FALSE;
    }
    *timed_out = FALSE;
    if (!cx__sp_server_alive(watch)) {
      *server_lost = TRUE;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker stopped before it started the session's process");
      return FALSE;
    }
  }
}

/* Fork the session's process and wait for its STARTED.  A server found
 * stopped meanwhile is replaced, once. */
static gboolean
session_connect(subprocess_session *session, GError **error)
{
  for (int attempt = 0;; attempt++) {
    gboolean server_lost = FALSE;
    g_autoptr(GError) attempt_error = NULL;
    if (session_connect_once(session, &server_lost, &attempt_error))
      return TRUE;
    if (!server_lost || attempt > 0) {
      if (attempt_error != NULL)
        g_propagate_error(error, g_steal_pointer(&attempt_error));
      return FALSE;
    }
  }
}

static gboolean
session_connect_once(subprocess_session *session, gboolean *server_lost, GError **error)
{
  subprocess_backend *backend = session->backend;
  JsonObject *request = cx__sp_open_request(backend, "session");
  cx__sp_server_watch watch;
  session->channel = cx__sp_open_channel(backend, &session->own_server, request, &watch, error);
  if (session->channel < 0)
    return FALSE;
  session->reader = cx__wire_reader_new(session->channel);
  guint8 type;
  const guint8 *payload;
  gsize len;
  g_autoptr(JsonNode) started = NULL;
  gboolean timed_out = FALSE;
  gint64 deadline = g_get_monotonic_time() + SESSION_START_TIMEOUT_S * G_USEC_PER_SEC;
  if (read_first_frame(session, &watch, deadline, &type, &payload, &len, &timed_out,
                       server_lost, error)) {
    started = cx__wire_parse_object(payload, len, "STARTED", error);
    if (started != NULL && type == CX__WIRE_MSG_ERROR) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker could not start a session process: %s",
                  cx__wire_error_message(json_node_get_object(started)));
      g_clear_pointer(&started, json_node_unref);
    } else if (started != NULL && type != CX__WIRE_MSG_STARTED) {
      g_clear_pointer(&started, json_node_unref);
    }
  } else if (timed_out) {
    g_clear_error(error);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the subprocess worker did not start a session process within %d s; "
                "check that the machine can start processes", SESSION_START_TIMEOUT_S);
  }
  gint64 pid = started != NULL ? cx__peer_get_int(
                                   json_node_get_object(started), "pid", 0) : 0;
  if (pid <= 1 || pid > G_MAXINT) {
    if (error != NULL && *error == NULL)
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker could not start a session process");
    session_disconnect(session);
    return FALSE;
  }
  g_atomic_int_set(&session->pid, (gint)pid);
  session->dead = FALSE;
  session->generation++;
  session->cells_run = 0;
  return TRUE;
}

cx_session_instance *
cx__sp_session_open(cx_backend_instance *instance, GError **error)
{
  subprocess_session *session = g_new0(subprocess_session, 1);
  session->backend = (subprocess_backend *)instance;
  session->channel = -1;
  session->interrupted = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (session->interrupted < 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "subprocess: cannot open a session: eventfd: %s",
                g_strerror(errno));
    g_free(session);
    return NULL;
  }
  g_rec_mutex_init(&session->lock);
  if (!session_connect(session, error)) {
    close(session->interrupted);
    g_rec_mutex_clear(&session->lock);
    g_free(session);
    return NULL;
  }
  return (cx_session_instance *)session;
}

/* TRUE when the session's process has ended since its last cell (its
 * channel has EXITED or EOF waiting). */
static gboolean
session_ended_while_idle(subprocess_session *session)
{
  struct pollfd fd = { session->channel, POLLIN, 0 };
  return poll(&fd, 1, 0) != 0;
}

gboolean
cx__sp_session_revive(subprocess_session *session, GError **error)
{
  if (!session->dead && session->channel >= 0 && !session_ended_while_idle(session))
    return TRUE;
  /* Outer executor requests still wait on the old channel: a new process
   * must not take its place under them. */
  if (session->executor_depth > 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the session's worker died: an executor operation in progress was waiting "
                "for it; the session restarts once that operation has returned");
    return FALSE;
  }
  /* Its state is gone with it: the caller says so, and goes on in a new
   * process. */
  session_disconnect(session);
  if (!session_connect(session, error))
    return FALSE;
  session->restart_unreported = TRUE;
  return TRUE;
}

cx_result *
cx__sp_session_run_cell(cx_session_instance *instance, const char *code,
                            const cx_run_options *run, GError **error)
{
  subprocess_session *session = (subprocess_session *)instance;
  subprocess_backend *backend = session->backend;
  if (!cx__sp_cwd_in_view(backend, run, error))
    return NULL;
  g_rec_mutex_lock(&session->lock);
  if (!cx__sp_session_revive(session, error)) {
    g_rec_mutex_unlock(&session->lock);
    return NULL;
  }

  cx_result *result = NULL;
  cx__sp_call_outcome outcome = CX__SP_CALL_PROCESS_GONE;
  JsonObject *cell = cx__sp_cell_request(backend, code, run);
  if (strlen(code) > CX__WIRE_MAX_PAYLOAD / 8 && !cx__sp_request_fits(cell, error)) {
    json_object_unref(cell);
    g_rec_mutex_unlock(&session->lock);
    return NULL;
  }
  if (cx__wire_send_object(session->channel, CX__WIRE_MSG_RUN, cell, -1, error)) {
    cx__sp_call_params params = cx__sp_call_params_for(backend, run, FALSE);
    /* Numbered as the worker numbers it: a cell kept out of the history
     * has the number of the last one that was not. */
    params.cell_number = cx_run_options_get_store_history(run) ? ++session->cells_run
                                                               : session->cells_run;
    params.wake_fd = session->interrupted;
    guint64 stale;
    while (read(session->interrupted, &stale, sizeof stale) > 0)
      ; /* for a cell before this one */
    g_atomic_int_set(&session->busy, TRUE);
    result = cx__sp_cell_call_run(session->channel, session->reader, &session->pid, &params,
                                  &outcome, error);
    g_atomic_int_set(&session->busy, FALSE);
  }
  if (outcome != CX__SP_CALL_DONE)
    session->dead = TRUE;
  if (result != NULL && session->restart_unreported) {
    cx_result_set_extra(result, "session_restarted", json_node_init_boolean(json_node_alloc(), TRUE));
    session->restart_unreported = FALSE;
  }
  g_rec_mutex_unlock(&session->lock);
  return result;
}

void
cx__sp_session_close(cx_session_instance *instance)
{
  subprocess_session *session = (subprocess_session *)instance;
  /* EOF on its channel: the session's process kills what it started and
   * exits; the server reaps it. */
  session_disconnect(session);
  close(session->interrupted);
  g_clear_pointer(&session->host_functions, g_hash_table_unref);
  g_rec_mutex_clear(&session->lock);
  g_free(session);
}

void
cx__sp_session_interrupt(subprocess_session *session)
{
  gint pid = g_atomic_int_get(&session->pid);
  if (g_atomic_int_get(&session->busy) && pid > 0) {
    kill(pid, SIGINT);
    guint64 one = 1;
    ssize_t ignored = write(session->interrupted, &one, sizeof one);
    (void)ignored;
  }
}
