/* plugins/subprocess/requests.c: the fork server (started, restarted when
 * it died) and what is sent to it: a channel opened for a cell or a
 * session, the cell's request, its limits and call parameters. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/subprocess/backend.h"
#include "plugins/subprocess/wire/protocol.h"

cx__sp_worker_process *
cx__sp_start_worker(subprocess_backend *backend, GError **error)
{
  return cx__sp_worker_process_start(backend->worker_path, backend->isolated, backend->preload,
                                     backend->sandbox, backend->worker_arguments,
                                     backend->environment, error);
}

/* Open a channel to a process the server forks for REQUEST (consumed):
 * send it with the other end of a new socket pair.  Restarts a dead
 * server once.  With backend->lock held (SERVER is backend->server) or
 * on a server of one's own. */
static int
open_channel(subprocess_backend *backend, cx__sp_worker_process **server, JsonObject *request,
             GError **error)
{
  g_autoptr(JsonObject) owned = request;
  for (int attempt = 0;; attempt++) {
    if (*server == NULL || !cx__sp_worker_process_alive(*server)) {
      g_clear_pointer(server, cx__sp_worker_process_stop);
      *server = cx__sp_start_worker(backend, error);
      if (*server == NULL)
        return -1;
    }
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) < 0) {
      int saved = errno;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot create a socket pair: %s",
                  g_strerror(saved));
      return -1;
    }
    g_autoptr(GError) send_error = NULL;
    gboolean sent = cx__wire_send_object((*server)->control, CX__WIRE_MSG_RUN,
                                         json_object_ref(owned), sockets[1], &send_error);
    close(sockets[1]);
    if (sent)
      return sockets[0];
    close(sockets[0]);
    /* The server died since we last looked: start another, once. */
    g_clear_pointer(server, cx__sp_worker_process_stop);
    if (attempt > 0) {
      g_propagate_error(error, g_steal_pointer(&send_error));
      return -1;
    }
  }
}


/* A cwd asked for one call must lie in the sandbox's view, which was made
 * when the worker started: say so, and what to set, rather than let the
 * cell fail to find it. */
gboolean
cx__sp_cwd_in_view(subprocess_backend *backend, const cx_run_options *run, GError **error)
{
  const char *cwd = cx_run_options_get_cwd(run);
  if (backend->view == NULL || cwd == NULL)
    return TRUE;
  /* As the worker resolves it: from the cells' cwd, the view's first. */
  g_autofree char *path = g_canonicalize_filename(cwd, backend->view[0]);
  for (char **dir = backend->view; *dir != NULL; dir++) {
    gsize n = strlen(*dir);
    if (g_str_has_prefix(path, *dir) && (path[n] == '\0' || path[n] == '/' || n == 1))
      return TRUE;
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "subprocess: the cwd %s is outside what isolation = sandbox shows the cells (its "
              "`cwd`, `writable-paths` and `read-only-paths`, fixed when the backend opened); "
              "add it to `writable-paths` or set `cwd` to it",
              path);
  return FALSE;
}

JsonObject *
cx__sp_cell_request(subprocess_backend *backend, const char *code, const cx_run_options *run)
{
  JsonObject *cell = json_object_new();
  /* JSON strings are UTF-8: other bytes travel encoded, so that Python,
   * not the protocol, judges them (a SyntaxError, as on every backend). */
  if (g_utf8_validate(code, -1, NULL)) {
    json_object_set_string_member(cell, "code", code);
  } else {
    g_autofree char *encoded = g_base64_encode((const guchar *)code, strlen(code));
    json_object_set_string_member(cell, "code_base64", encoded);
  }
  /* The backend's cwd, env and timeout are in RUN already (plugin.h).
   * With cwd-per-session the backend's cwd means the process's own
   * directory, where it works already. */
  const char *cwd = cx_run_options_get_cwd(run);
  if (cwd != NULL && !(backend->cwd_per_session && g_strcmp0(cwd, backend->cwd) == 0))
    json_object_set_string_member(cell, "cwd", cwd);
  JsonArray *env = json_array_new();
  for (const char *const *assignment = cx_run_options_get_env(run); *assignment != NULL;
       assignment++)
    json_array_add_string_element(env, *assignment);
  json_object_set_array_member(cell, "env", env);
  const char *const *mime = cx_run_options_get_allowed_mime_types(run);
  if (mime != NULL) {
    JsonArray *types = json_array_new();
    for (; *mime != NULL; mime++)
      json_array_add_string_element(types, *mime);
    json_object_set_array_member(cell, "mime_types", types);
  }
  /* input() asks the host (INPUT) only when something here answers. */
  if (cx_run_options_get_input_callback(run, NULL) != NULL)
    json_object_set_boolean_member(cell, "stdin", TRUE);
  if (!cx_run_options_get_store_history(run))
    json_object_set_boolean_member(cell, "store_history", FALSE);
  return cell;
}

/* A request too long for a frame fails here, before anything is sent:
 * neither the server nor a session may pay for it. */
gboolean
cx__sp_request_fits(JsonObject *request, GError **error)
{
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), request);
  gsize len = cx__wire_json_size(node);
  if (len <= CX__WIRE_MAX_PAYLOAD)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "subprocess: the cell's code is too large to send to the worker (%" G_GSIZE_FORMAT
              " bytes as a message, %u MiB at most)", len, CX__WIRE_MAX_PAYLOAD / (1024 * 1024));
  return FALSE;
}

JsonObject *
cx__sp_open_request(subprocess_backend *backend, const char *kind)
{
  JsonObject *request = json_object_new();
  json_object_set_string_member(request, "kind", kind);
  /* A copy, not a reference to backend->limits: JsonObject's reference
   * count is not atomic, and requests are made on the callers' threads. */
  JsonObject *limits = json_object_new();
  g_autoptr(GList) names = json_object_get_members(backend->limits);
  for (GList *name = names; name != NULL; name = name->next)
    json_object_set_int_member(limits, name->data, json_object_get_int_member(backend->limits, name->data));
  json_object_set_object_member(request, "limits", limits);
  json_object_set_int_member(request, "output_limit", (gint64)backend->output_limit);
  return request;
}

cx__sp_call_params
cx__sp_call_params_for(subprocess_backend *backend, const cx_run_options *run, gboolean one_shot)
{
  return (cx__sp_call_params){
    .timeout = cx_run_options_get_timeout(run),
    .output_limit = backend->output_limit,
    .one_shot = one_shot,
    .interrupt_grace = backend->interrupt_grace,
    .wake_fd = -1,
    .run = run,
    .cell_number = 1,
  };
}


gboolean
cx__sp_server_alive(gpointer data)
{
  cx__sp_server_watch *watch = data;
  if (watch->own_server != NULL)
    return cx__sp_worker_process_alive(watch->own_server);
  subprocess_backend *backend = watch->backend;
  g_mutex_lock(&backend->lock);
  /* Replaced since: the one we used is gone. */
  gboolean alive = backend->server != NULL && backend->server->pid == watch->pid &&
                   cx__sp_worker_process_alive(backend->server);
  g_mutex_unlock(&backend->lock);
  return alive;
}

int
cx__sp_open_channel(subprocess_backend *backend, cx__sp_worker_process **own_server,
                    JsonObject *request, cx__sp_server_watch *watch, GError **error)
{
  *watch = (cx__sp_server_watch){ backend, NULL, 0 };
  if (backend->spawn_mode) {
    int channel = open_channel(backend, own_server, request, error);
    watch->own_server = *own_server;
    return channel;
  }
  g_mutex_lock(&backend->lock);
  int channel = open_channel(backend, &backend->server, request, error);
  watch->pid = backend->server != NULL ? backend->server->pid : 0;
  g_mutex_unlock(&backend->lock);
  return channel;
}
