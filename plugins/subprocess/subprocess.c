/* plugins/subprocess: the `subprocess` backend, cells in worker processes.
 *
 * For code you do not trust to behave.  A fork server (cellexec-worker,
 * Python started once) forks a fresh process per stateless cell and a
 * dedicated one per session; the host enforces deadlines and output
 * limits, the cell's process its resource limits, and a crash costs one
 * cell, never the host.  See docs/worker-protocol.md.
 *
 * This file is the glue to the plugin ABI: the backend's life, stateless
 * cells, interrupts and queries.  Its options are read by options.c, the
 * fork server and the requests to it are requests.c's, sessions are
 * session.c's.
 */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cellexec/plugin.h>

#include "plugins/subprocess/backend.h"
#include "plugins/subprocess/executor_host.h"
#include "plugins/subprocess/wire/protocol.h"

/* ---- The backend --------------------------------------------------------------- */

static void
subprocess_destroy(cx_backend_instance *instance)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  g_clear_pointer(&backend->server, cx__sp_worker_process_stop);
  g_free(backend->worker_path);
  g_free(backend->preload);
  g_strfreev(backend->environment);
  g_free(backend->cwd);
  g_strfreev(backend->worker_arguments);
  g_strfreev(backend->view);
  g_clear_pointer(&backend->limits, json_object_unref);
  g_free(backend->sandbox);
  g_ptr_array_unref(backend->running);
  g_mutex_clear(&backend->lock);
  g_free(backend);
}

static cx_backend_instance *
subprocess_create(const cx_options *options, GError **error)
{
  subprocess_backend *backend = g_new0(subprocess_backend, 1);
  g_mutex_init(&backend->lock);
  backend->running = g_ptr_array_new();
  if (!cx__sp_configure(backend, options, error)) {
    subprocess_destroy((cx_backend_instance *)backend);
    return NULL;
  }
  /* Start the server now: a worker that cannot start fails here, and the
   * first cell does not pay for Python's start. */
  if (!backend->spawn_mode) {
    backend->server = cx__sp_start_worker(backend, error);
    if (backend->server == NULL) {
      subprocess_destroy((cx_backend_instance *)backend);
      return NULL;
    }
  }
  return (cx_backend_instance *)backend;
}

static cx_result *
run_stateless_once(subprocess_backend *backend, const char *code, const cx_run_options *run,
                   cx__sp_call_outcome *outcome, GError **error)
{
  JsonObject *request = cx__sp_open_request(backend, "cell");
  json_object_set_object_member(request, "cell", cx__sp_cell_request(backend, code, run));
  if (strlen(code) > CX__WIRE_MAX_PAYLOAD / 8 && !cx__sp_request_fits(request, error)) {
    json_object_unref(request);
    *outcome = CX__SP_CALL_DONE;
    return NULL;
  }

  cx__sp_worker_process *own_server = NULL;
  cx__sp_server_watch watch;
  int channel = cx__sp_open_channel(backend, &own_server, request, &watch, error);
  if (channel < 0) {
    cx__sp_worker_process_stop(own_server);
    *outcome = CX__SP_CALL_PROCESS_GONE;
    return NULL;
  }

  gint pid = 0;
  g_mutex_lock(&backend->lock);
  g_ptr_array_add(backend->running, &pid);
  g_mutex_unlock(&backend->lock);

  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(channel);
  cx__sp_call_params params = cx__sp_call_params_for(backend, run, TRUE);
  params.server_alive = cx__sp_server_alive;
  params.server_data = &watch;
  cx_result *result = cx__sp_cell_call_run(channel, reader, &pid, &params, outcome, error);

  g_mutex_lock(&backend->lock);
  g_ptr_array_remove_fast(backend->running, &pid);
  g_mutex_unlock(&backend->lock);
  close(channel);
  cx__sp_worker_process_stop(own_server);
  return result;
}

static cx_result *
subprocess_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
                    GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  cx__sp_call_outcome outcome;
  g_autoptr(GError) first_error = NULL;
  if (!cx__sp_cwd_in_view(backend, run, error))
    return NULL;
  cx_result *result = run_stateless_once(backend, code, run, &outcome, &first_error);
  /* The server died with the request: the cell never ran, so run it on a
   * new server. */
  if (result == NULL && outcome == CX__SP_CALL_NEVER_STARTED)
    return run_stateless_once(backend, code, run, &outcome, error);
  if (result == NULL)
    g_propagate_error(error, g_steal_pointer(&first_error));
  return result;
}

/* ---- Interrupts and queries ---------------------------------------------------- */

static gboolean
subprocess_interrupt(cx_backend_instance *instance, cx_session_instance *session_instance,
                     GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  if (session_instance != NULL) {
    cx__sp_session_interrupt((subprocess_session *)session_instance);
    return TRUE;
  }
  g_mutex_lock(&backend->lock);
  for (guint i = 0; i < backend->running->len; i++) {
    gint *slot = g_ptr_array_index(backend->running, i);
    /* Not started yet: the cell's process gets SIGINT the moment it says
     * it has (cx__sp_cell_call_run), or the request would be lost. */
    if (g_atomic_int_compare_and_exchange(slot, 0, CX__SP_INTERRUPT_PENDING))
      continue;
    gint pid = g_atomic_int_get(slot);
    if (pid > 0)
      kill(pid, SIGINT);
  }
  g_mutex_unlock(&backend->lock);
  return TRUE;
}

static JsonNode *
subprocess_query(cx_backend_instance *instance, const char *what, GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  if (g_strcmp0(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the subprocess backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  JsonObject *info = json_object_new();
  json_object_set_string_member(info, "mode", backend->spawn_mode ? "spawn" : "forkserver");
  json_object_set_string_member(info, "worker", backend->worker_path);
  json_object_set_int_member(info, "protocol", CX__WIRE_PROTOCOL_VERSION);
  json_object_set_string_member(info, "isolation", backend->sandbox != NULL ? "sandbox" : "none");
  g_mutex_lock(&backend->lock);
  json_object_set_int_member(info, "running_cells", backend->running->len);
  if (backend->server != NULL && cx__sp_worker_process_alive(backend->server)) {
    json_object_set_int_member(info, "server_pid", backend->server->pid);
    JsonObject *hello = json_node_get_object(backend->server->hello);
    JsonNode *python = json_object_get_member(hello, "python");
    if (python != NULL)
      json_object_set_member(info, "python", json_node_copy(python));
    /* The measures the worker applied, as it reported them. */
    JsonNode *measures = json_object_get_member(hello, "sandbox");
    if (measures != NULL)
      json_object_set_member(info, "sandbox", json_node_copy(measures));
  }
  g_mutex_unlock(&backend->lock);
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, info);
  return node;
}

static const cx_backend_vtable subprocess_backend_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = subprocess_create,
  .destroy = subprocess_destroy,
  .run_cell = subprocess_run_cell,
  .session_open = cx__sp_session_open,
  .session_run_cell = cx__sp_session_run_cell,
  .session_close = cx__sp_session_close,
  .interrupt = subprocess_interrupt,
  .query = subprocess_query,
  .session_request = cx__sp_session_request,
};

/* Every cell already runs in a worker process: use_subprocess is served. */
CX_PLUGIN_DESCRIBE(.name = "subprocess", .version = PACKAGE_VERSION,
                   .description = "cells in worker processes: timeouts, resource limits, "
                                  "crash isolation",
                   .options = cx__sp_options, .backend = &subprocess_backend_vtable,
                   .executor = &cx__sp_executor_vtable,
                   .flags = CX_PLUGIN_HANDLES_USE_SUBPROCESS)
