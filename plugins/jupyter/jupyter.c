/* plugins/jupyter: the `jupyter` backend, cells on Jupyter kernels.
 *
 * Two ways to a kernel: `kernel = NAME` launches kernels from the
 * kernelspec NAME (a warm pool for stateless cells, one kernel per
 * session); `connection-file = PATH` attaches to one kernel someone else
 * started, shared by every call and never shut down by us.  The protocol
 * is in kernel.c, message.c, execute.c and outputs.c, the warm pool in
 * pool.c, running a cell in run.c, sessions in session.c; this file is the
 * glue to the plugin ABI.  See README.md.
 */
#include "config.h"

#include <string.h>
#include <zmq.h>

#include <cellexec/plugin.h>

#include "plugins/jupyter/jupyter.h"

static const cx_option_spec jupyter_options[] = {
  { "kernel", CX_OPTION_STRING, "python3",
    "the kernelspec to launch (searched in the Jupyter data directories; python3 also without one)" },
  { "connection-file", CX_OPTION_PATH, NULL,
    "attach to the running kernel this connection file describes instead (never shut down)" },
  { "gateway-url", CX_OPTION_STRING, NULL,
    "start kernels through the Jupyter Server (or Kernel/Enterprise Gateway) at this http:// URL" },
  { "token", CX_OPTION_STRING, NULL, "the gateway's token (default: $JUPYTER_TOKEN)" },
  { "tcp-nodelay", CX_OPTION_BOOL, "true",
    "TCP_NODELAY and TCP_QUICKACK on the gateway's socket (false only to measure the Nagle stall)" },
  { "pool-size", CX_OPTION_INT, "1",
    "kernels kept started ahead for stateless cells, each used once" },
  { "timeout", CX_OPTION_DOUBLE, NULL,
    "seconds after which a cell is interrupted and ends with TimeoutError (unset or 0: never)" },
  { "interrupt-grace", CX_OPTION_DOUBLE, "1",
    "seconds an interrupted cell has to stop before its kernel is killed and replaced" },
  { "output-limit", CX_OPTION_SIZE, "10M",
    "bytes of stdout and of stderr kept per cell, and of each part of an output; past it the "
    "head and tail (0: all)" },
  { "start-timeout", CX_OPTION_DOUBLE, "60",
    "seconds a kernel has to answer kernel_info_request once started" },
  { "cwd", CX_OPTION_PATH, NULL, "working directory of launched kernels (default: the host's)" },
  { "history", CX_OPTION_STRING, "memory",
    "where launched ipykernels keep input history: memory (private, fast) or sqlite (the user's file)" },
  { NULL }
};

static cx_result *
jupyter_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
                 GError **error)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  gboolean restarted;
  return backend->connection_file != NULL
           ? jupyter_run_attached(backend, code, run, &restarted, error)
           : jupyter_run_stateless(backend, code, run, error);
}

/* ---- The backend --------------------------------------------------------------------- */

static void
jupyter_destroy(cx_backend_instance *instance)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  jupyter_pool_close(backend);
  jk_kernel_free(backend->attached); /* disconnects only: not ours */
  if (backend->zmq != NULL)
    zmq_ctx_term(backend->zmq);
  jk_spec_free(backend->spec);
  g_clear_error(&backend->start_error);
  g_free(backend->connection_file);
  g_free(backend->gateway_url);
  g_free(backend->token);
  g_free(backend->kernel_name);
  g_free(backend->cwd);
  g_ptr_array_unref(backend->running);
  g_mutex_clear(&backend->lock);
  g_mutex_clear(&backend->attached_lock);
  g_cond_clear(&backend->cond);
  g_free(backend);
}

static cx_backend_instance *
jupyter_create(const cx_options *options, GError **error)
{
  gint64 pool_size = cx_options_get_int(options, "pool-size", 1);
  double grace = cx_options_get_double(options, "interrupt-grace", 1);
  double start_timeout = cx_options_get_double(options, "start-timeout", 60);
  double timeout = cx_options_get_double(options, "timeout", 0);
  guint64 output_limit = cx_options_get_size(options, "output-limit", 0);
  if (pool_size < 0 || pool_size > 64) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "jupyter: pool-size must be from 0 to 64, not %" G_GINT64_FORMAT, pool_size);
    return NULL;
  }
  if (!(grace >= 0 && grace <= 3600) || !(start_timeout > 0 && start_timeout <= 3600)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "jupyter: interrupt-grace (0 to 3600) and start-timeout (more than 0, up to 3600) "
                "are seconds");
    return NULL;
  }
  if (!cx_timeout_check(timeout, error))
    return NULL;
  const char *connection_file = cx_options_get_string(options, "connection-file", NULL);
  const char *gateway_url = cx_options_get_string(options, "gateway-url", NULL);
  const char *token = cx_options_get_string(options, "token", g_getenv("JUPYTER_TOKEN"));
  g_autoptr(jk_spec) spec = NULL;
  if (connection_file != NULL && gateway_url != NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "jupyter: connection-file and gateway-url exclude each other; give one");
    return NULL;
  }
  if (gateway_url != NULL) {
    /* Reachable, and the token taken: said now, in one line. */
    if (!jk_gateway_check(gateway_url, token, MIN(start_timeout, 10), error))
      return NULL;
  } else if (connection_file == NULL) {
    spec = jk_spec_find(cx_options_get_string(options, "kernel", "python3"), error);
    if (spec == NULL)
      return NULL;
    const char *history = cx_options_get_string(options, "history", "memory");
    if (!g_str_equal(history, "memory") && !g_str_equal(history, "sqlite")) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "jupyter: history must be \"memory\" or \"sqlite\", not \"%s\"", history);
      return NULL;
    }
    spec->memory_history = g_str_equal(history, "memory");
  } else if (!g_file_test(connection_file, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: no connection file %s", connection_file);
    return NULL;
  }

  jupyter_backend *backend = g_new0(jupyter_backend, 1);
  g_mutex_init(&backend->lock);
  g_mutex_init(&backend->attached_lock);
  g_cond_init(&backend->cond);
  g_queue_init(&backend->ready);
  backend->running = g_ptr_array_new();
  backend->zmq = zmq_ctx_new();
  backend->pool_size = pool_size;
  backend->grace = grace;
  backend->start_timeout = start_timeout;
  backend->timeout = timeout;
  backend->output_limit = output_limit;
  backend->cwd = g_strdup(cx_options_get_string(options, "cwd", NULL));
  backend->connection_file = g_strdup(connection_file);
  backend->spec = g_steal_pointer(&spec);
  backend->gateway_url = g_strdup(gateway_url);
  backend->token = g_strdup(token);
  backend->nodelay = cx_options_get_bool(options, "tcp-nodelay", TRUE);
  backend->kernel_name = g_strdup(cx_options_get_string(options, "kernel", "python3"));
  /* Attached: the one kernel, connected now; else the pool starts filling. */
  jupyter_pool_open(backend, backend->connection_file == NULL);
  gboolean reattached;
  if (backend->connection_file != NULL &&
      jupyter_attached_kernel(backend, &reattached, error) == NULL) {
    jupyter_destroy((cx_backend_instance *)backend);
    return NULL;
  }
  return (cx_backend_instance *)backend;
}

/* ---- Interrupts and queries ---------------------------------------------------------- */

static gboolean
jupyter_interrupt(cx_backend_instance *instance, cx_session_instance *session_instance,
                  GError **error)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  if (session_instance != NULL)
    return jupyter_session_interrupt(session_instance, error);
  g_mutex_lock(&backend->lock);
  for (guint i = 0; i < backend->running->len; i++)
    jk_kernel_interrupt(backend->running->pdata[i], NULL);
  g_mutex_unlock(&backend->lock);
  return TRUE;
}

static JsonNode *
jupyter_query(cx_backend_instance *instance, const char *what, GError **error)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  if (g_strcmp0(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the jupyter backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "mode");
  json_builder_add_string_value(b, backend->connection_file ? "attach"
                                   : backend->gateway_url    ? "gateway" : "launch");
  if (backend->gateway_url != NULL) {
    json_builder_set_member_name(b, "gateway_url");
    json_builder_add_string_value(b, backend->gateway_url);
  }
  json_builder_set_member_name(b, "protocol_version");
  json_builder_add_string_value(b, "5.3");
  if (backend->spec != NULL) {
    json_builder_set_member_name(b, "kernel");
    json_builder_add_string_value(b, backend->spec->name);
    json_builder_set_member_name(b, "argv");
    json_builder_begin_array(b);
    for (char **arg = backend->spec->argv; *arg != NULL; arg++)
      json_builder_add_string_value(b, *arg);
    json_builder_end_array(b);
  }
  if (backend->connection_file != NULL) {
    json_builder_set_member_name(b, "connection_file");
    json_builder_add_string_value(b, backend->connection_file);
  }
  g_mutex_lock(&backend->lock);
  json_builder_set_member_name(b, "pool_size");
  json_builder_add_int_value(b, backend->pool_size);
  json_builder_set_member_name(b, "pool_ready");
  json_builder_add_int_value(b, g_queue_get_length(&backend->ready));
  json_builder_set_member_name(b, "kernels_starting");
  json_builder_add_int_value(b, backend->starting);
  json_builder_set_member_name(b, "kernels_started");
  json_builder_add_int_value(b, backend->kernels_started);
  json_builder_set_member_name(b, "running_cells");
  json_builder_add_int_value(b, backend->running->len);
  g_mutex_unlock(&backend->lock);
  json_builder_set_member_name(b, "dropped");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "bad_signature");
  json_builder_add_int_value(b, g_atomic_int_get(&backend->counters.bad_signature));
  json_builder_set_member_name(b, "wrong_parent");
  json_builder_add_int_value(b, g_atomic_int_get(&backend->counters.wrong_parent));
  json_builder_set_member_name(b, "malformed");
  json_builder_add_int_value(b, g_atomic_int_get(&backend->counters.malformed));
  json_builder_end_object(b);
  json_builder_end_object(b);
  return json_builder_get_root(b);
}

static const cx_backend_vtable jupyter_backend_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = jupyter_create,
  .destroy = jupyter_destroy,
  .run_cell = jupyter_run_cell,
  .session_open = jupyter_session_open,
  .session_run_cell = jupyter_session_run_cell,
  .session_close = jupyter_session_close,
  .session_request = jupyter_session_request,
  .interrupt = jupyter_interrupt,
  .query = jupyter_query,
};

/* Every cell runs in a kernel process: use_subprocess is served. */
CX_PLUGIN_DESCRIBE(.name = "jupyter", .version = PACKAGE_VERSION,
                   .description = "cells on Jupyter kernels: launched from a kernelspec, "
                                  "attached by connection file, or through a Jupyter server",
                   .options = jupyter_options, .backend = &jupyter_backend_vtable,
                   .executor = &jupyter_executor_vtable,
                   .flags = CX_PLUGIN_HANDLES_USE_SUBPROCESS)
