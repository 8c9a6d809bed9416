/* plugins/jupyter: the `jupyter` backend, cells on Jupyter kernels.
 *
 * Two ways to a kernel: `kernel = NAME` launches kernels from the
 * kernelspec NAME (a warm pool for stateless cells, one kernel per
 * session); `connection-file = PATH` attaches to one kernel someone else
 * started, shared by every call and never shut down by us.  The protocol
 * is in kernel.c, message.c, execute.c and outputs.c; this file is the
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

/* ---- The pool of warm kernels ------------------------------------------------------ */

static void
starter_thread(gpointer data, gpointer user_data)
{
  jupyter_backend *backend = user_data;
  g_autoptr(GError) error = NULL;
  jk_kernel *kernel =
    backend->gateway_url != NULL
      ? jk_kernel_gateway_start(backend->gateway_url, backend->token, backend->kernel_name,
                                backend->nodelay, backend->start_timeout, &backend->counters, &error)
      : jk_kernel_launch(backend->zmq, backend->spec, backend->cwd, backend->start_timeout,
                         &backend->cancel_starts, &backend->counters, &error);
  g_mutex_lock(&backend->lock);
  backend->starting--;
  if (kernel != NULL) {
    backend->kernels_started++;
    if (backend->stopping) {
      g_mutex_unlock(&backend->lock);
      jk_kernel_free(kernel);
      g_mutex_lock(&backend->lock);
    } else {
      g_queue_push_tail(&backend->ready, kernel);
    }
    g_clear_error(&backend->start_error);
  } else {
    g_clear_error(&backend->start_error);
    backend->start_error = g_steal_pointer(&error);
  }
  g_cond_broadcast(&backend->cond);
  g_mutex_unlock(&backend->lock);
}

static void
discard_thread(gpointer data, gpointer user_data)
{
  jk_kernel_free(data);
}

/* Start kernels until ready + starting reaches the pool size.  With
 * backend->lock held. */
static void
fill_pool_locked(jupyter_backend *backend)
{
  while (!backend->stopping && g_queue_get_length(&backend->ready) + backend->starting <
                                 (guint)backend->pool_size) {
    backend->starting++;
    g_thread_pool_push(backend->starters, GINT_TO_POINTER(1), NULL);
  }
}

/* A warm kernel of the pool, for one cell or one session; a replacement
 * starts at once. */
jk_kernel *
jupyter_pool_take(jupyter_backend *backend, GError **error)
{
  gint64 deadline = g_get_monotonic_time() + (gint64)((backend->start_timeout + 10) * G_USEC_PER_SEC);
  g_mutex_lock(&backend->lock);
  g_clear_error(&backend->start_error); /* a past failure is not this call's */
  for (;;) {
    jk_kernel *kernel = g_queue_pop_head(&backend->ready);
    if (kernel != NULL && !jk_kernel_alive(kernel)) {
      g_thread_pool_push(backend->discarder, kernel, NULL);
      continue;
    }
    fill_pool_locked(backend);
    if (kernel == NULL && backend->starting == 0 && backend->start_error == NULL &&
        !backend->stopping) {
      /* pool-size 0: a kernel on demand. */
      backend->starting++;
      g_thread_pool_push(backend->starters, GINT_TO_POINTER(1), NULL);
    }
    if (kernel != NULL) {
      g_mutex_unlock(&backend->lock);
      return kernel;
    }
    if (backend->start_error != NULL) {
      g_propagate_error(error, g_steal_pointer(&backend->start_error));
      g_mutex_unlock(&backend->lock);
      return NULL;
    }
    if (!g_cond_wait_until(&backend->cond, &backend->lock, deadline)) {
      g_mutex_unlock(&backend->lock);
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: no kernel started within %g s",
                  backend->start_timeout + 10);
      return NULL;
    }
  }
}

/* Done with KERNEL: it goes, in the background. */
void
jupyter_discard(jupyter_backend *backend, jk_kernel *kernel)
{
  if (kernel != NULL)
    g_thread_pool_push(backend->discarder, kernel, NULL);
}

/* ---- Running a cell ------------------------------------------------------------------ */

/* A Python string literal for TEXT (JSON's escapes are Python's too). */
char *
jupyter_py_literal(const char *text)
{
  g_autoptr(JsonNode) node = json_node_init_string(json_node_alloc(), text);
  return cx_json_to_string(node, FALSE);
}

/* Code that applies RUN's cwd and environment, or NULL when it has none. */
static char *
setup_code(const cx_run_options *run)
{
  const char *cwd = cx_run_options_get_cwd(run);
  const char *const *env = cx_run_options_get_env(run);
  if (cwd == NULL && (env == NULL || *env == NULL))
    return NULL;
  GString *code = g_string_new("import os as _cellexec_os\n");
  if (cwd != NULL) {
    g_autofree char *literal = jupyter_py_literal(cwd);
    g_string_append_printf(code, "_cellexec_os.chdir(%s)\n", literal);
  }
  for (; env != NULL && *env != NULL; env++) {
    g_auto(GStrv) kv = g_strsplit(*env, "=", 2);
    g_autofree char *k = jupyter_py_literal(kv[0]);
    g_autofree char *v = jupyter_py_literal(kv[1] ? kv[1] : "");
    g_string_append_printf(code, "_cellexec_os.environ[%s] = %s\n", k, v);
  }
  g_string_append(code, "del _cellexec_os\n");
  return g_string_free(code, FALSE);
}

cx_result *
jupyter_run_on(jupyter_backend *backend, jk_kernel *kernel, const char *code,
               const cx_run_options *run, gboolean *kernel_lost, GError **error)
{
  cx_result *result = cx_result_new_streaming(run);
  /* The backend's timeout is in RUN already (plugin.h); its own
   * backend->timeout is for the executor operations, which get no RUN. */
  double timeout = cx_run_options_get_timeout(run);
  gint64 start = g_get_monotonic_time();
  *kernel_lost = FALSE;
  g_autofree char *setup = setup_code(run);
  if (setup != NULL) {
    jk_exec exec = { .code = setup, .silent = TRUE, .timeout = timeout, .grace = backend->grace };
    jk_exec_outcome outcome = jk_kernel_execute(kernel, &exec);
    const char *status = exec.reply ? cx__peer_get_string(exec.reply, "status", "") : "";
    if (outcome == JK_EXEC_DONE && g_strcmp0(status, "error") == 0) {
      /* The kernel could not enter the cwd or set the env: the run options
       * are wrong, as the other backends say, and no cell ran. */
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "cannot run the cell in directory %s with its environment; check the cwd and "
                  "env options: %s: %s",
                  cx_run_options_get_cwd(run) != NULL ? cx_run_options_get_cwd(run) : "(unchanged)",
                  cx__peer_get_string(exec.reply, "ename", "Error"),
                  cx__peer_get_string(exec.reply, "evalue", ""));
      jk_exec_clear(&exec);
      cx_result_free(result);
      return NULL;
    }
    if (outcome != JK_EXEC_DONE || g_strcmp0(status, "ok") != 0) {
      g_autofree char *message = g_strdup_printf(
        "cannot apply the run options (cwd, env) in the kernel: %s",
        exec.reply ? cx__peer_get_string(exec.reply, "evalue", status) : "no reply");
      cx_result_set_error(result, outcome == JK_EXEC_DIED ? CX_ERROR_TYPE_KERNEL_DIED : "RuntimeError", message, "");
      *kernel_lost = outcome != JK_EXEC_DONE;
      jk_exec_clear(&exec);
      return result;
    }
    jk_exec_clear(&exec);
  }
  /* JSON carries UTF-8 only: other bytes are replaced, and Python judges
   * what is left. */
  g_autofree char *valid = g_utf8_validate(code, -1, NULL) ? NULL : g_utf8_make_valid(code, -1);
  jk_exec exec = { .code = valid != NULL ? valid : code, .store_history = TRUE, .result = result,
                   .run = run, .timeout = timeout, .grace = backend->grace,
                   .output_limit = backend->output_limit };
  jk_exec_outcome outcome = jk_kernel_execute(kernel, &exec);
  if (outcome == JK_EXEC_SEND_FAILED)
    cx_result_set_error(result, CX_ERROR_TYPE_KERNEL_DIED, "cannot send the cell to the kernel", "");
  *kernel_lost = outcome == JK_EXEC_DIED || exec.killed || outcome == JK_EXEC_SEND_FAILED;
  jk_exec_clear(&exec);
  cx_result_set_extra(result, "duration_ms",
                      json_node_init_double(json_node_alloc(),
                                            (g_get_monotonic_time() - start) / 1000.0));
  return result;
}

static void
running_add(jupyter_backend *backend, jk_kernel *kernel)
{
  g_mutex_lock(&backend->lock);
  g_ptr_array_add(backend->running, kernel);
  g_mutex_unlock(&backend->lock);
}

static void
running_remove(jupyter_backend *backend, jk_kernel *kernel)
{
  g_mutex_lock(&backend->lock);
  g_ptr_array_remove_fast(backend->running, kernel);
  g_mutex_unlock(&backend->lock);
}

/* The attached kernel, connected again if it was lost. */
static jk_kernel *
attached_kernel(jupyter_backend *backend, gboolean *reattached, GError **error)
{
  *reattached = FALSE;
  if (backend->attached != NULL && jk_kernel_alive(backend->attached))
    return backend->attached;
  g_mutex_lock(&backend->lock);
  jk_kernel *old = backend->attached;
  backend->attached = NULL;
  g_mutex_unlock(&backend->lock);
  jk_kernel_free(old);
  jk_kernel *kernel = jk_kernel_attach(backend->zmq, backend->connection_file,
                                       MIN(backend->start_timeout, 5), &backend->counters, error);
  g_mutex_lock(&backend->lock);
  backend->attached = kernel;
  g_mutex_unlock(&backend->lock);
  *reattached = kernel != NULL && old != NULL;
  return kernel;
}

cx_result *
jupyter_run_attached(jupyter_backend *backend, const char *code, const cx_run_options *run,
                     gboolean *restarted, GError **error)
{
  g_mutex_lock(&backend->attached_lock);
  jk_kernel *kernel = attached_kernel(backend, restarted, error);
  if (kernel == NULL) {
    g_mutex_unlock(&backend->attached_lock);
    return NULL;
  }
  running_add(backend, kernel);
  gboolean lost;
  cx_result *result = jupyter_run_on(backend, kernel, code, run, &lost, error);
  running_remove(backend, kernel);
  g_mutex_unlock(&backend->attached_lock);
  return result;
}

static cx_result *
jupyter_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
                 GError **error)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  if (backend->connection_file != NULL) {
    gboolean restarted;
    return jupyter_run_attached(backend, code, run, &restarted, error);
  }
  jk_kernel *kernel = jupyter_pool_take(backend, error);
  if (kernel == NULL)
    return NULL;
  running_add(backend, kernel);
  gboolean lost;
  cx_result *result = jupyter_run_on(backend, kernel, code, run, &lost, error);
  running_remove(backend, kernel);
  jupyter_discard(backend, kernel);
  return result;
}

/* ---- The backend --------------------------------------------------------------------- */

static void
jupyter_destroy(cx_backend_instance *instance)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  g_mutex_lock(&backend->lock);
  backend->stopping = TRUE;
  g_mutex_unlock(&backend->lock);
  /* Launched kernels still starting are killed (a one-shot `cellexec run`
   * does not wait half a second for a spare it will never use); a
   * gateway's finish starting, and are shut down. */
  g_atomic_int_set(&backend->cancel_starts, 1);
  if (backend->starters != NULL)
    g_thread_pool_free(backend->starters, FALSE, TRUE);
  jk_kernel *kernel;
  while ((kernel = g_queue_pop_head(&backend->ready)) != NULL)
    jk_kernel_free(kernel);
  if (backend->discarder != NULL)
    g_thread_pool_free(backend->discarder, FALSE, TRUE);
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
  backend->discarder = g_thread_pool_new(discard_thread, backend, 1, FALSE, NULL);
  if (backend->connection_file != NULL) {
    gboolean reattached;
    if (attached_kernel(backend, &reattached, error) == NULL) {
      jupyter_destroy((cx_backend_instance *)backend);
      return NULL;
    }
    return (cx_backend_instance *)backend;
  }
  backend->starters = g_thread_pool_new(starter_thread, backend, MAX(1, (gint)pool_size), FALSE, NULL);
  g_mutex_lock(&backend->lock);
  fill_pool_locked(backend);
  g_mutex_unlock(&backend->lock);
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
