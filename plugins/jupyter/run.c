/* plugins/jupyter/run.c: one cell on one kernel (the run options applied
 * first), on the attached kernel, or stateless on a kernel of the pool;
 * the kernels running cells are listed for jupyter_interrupt(). */
#include "config.h"

#include <string.h>

#include "plugins/jupyter/jupyter.h"

/* A Python string literal for TEXT (JSON's escapes are Python's too). */
char *
jupyter_py_literal(const char *text)
{
  g_autoptr(JsonNode) node = json_node_init_string(json_node_alloc(), text);
  return cx_json_to_string(node, FALSE);
}

/* A cell's input_request, answered by the run options' input callback; a
 * failed answer is an empty line, which is all input_reply can say. */
static char *
cell_input(const char *prompt, gboolean password, const char *msg_id, gpointer data)
{
  g_autoptr(GError) error = NULL;
  return cx_run_options_ask_input(data, prompt, password, &error);
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
  jk_exec exec = { .code = valid != NULL ? valid : code,
                   .store_history = cx_run_options_get_store_history(run), .result = result,
                   .run = run, .timeout = timeout, .grace = backend->grace,
                   .output_limit = backend->output_limit };
  if (run != NULL && cx_run_options_get_input_callback(run, NULL) != NULL) {
    exec.on_input = cell_input;
    exec.input_data = (gpointer)run;
  }
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

jk_kernel *
jupyter_attached_kernel(jupyter_backend *backend, gboolean *reattached, GError **error)
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
  jk_kernel *kernel = jupyter_attached_kernel(backend, restarted, error);
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

/* A stateless cell: on a warm kernel of the pool, used once. */
cx_result *
jupyter_run_stateless(jupyter_backend *backend, const char *code, const cx_run_options *run,
                      GError **error)
{
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
