/* plugins/local: the `local` backend, CPython embedded in the host process.
 *
 * Glue between the plugin ABI and pyembed, which does the Python work.
 * Fast (no process, no IPC) but shares the process: a cell can change the
 * host's working directory, environment and memory, and a cell blocked in
 * a C call cannot be stopped.  Use the subprocess backend to contain cells.
 *
 * Threads: any thread may run cells, several at once (they take turns on
 * the GIL); runs with a cwd or env are serialised with each other.
 */
#include "config.h"

#include <dlfcn.h>

#include <cellexec/cellexec.h>
#include <cellexec/plugin.h>

#include "pyembed/pyembed.h"
#include "pyembed/executor.h"

typedef struct {
  gboolean isolated;
  cx__py_run_flags run_flags; /* CX__PY_RUN_CAPTURE_FDS unless capture-fds = false */
} local_backend;

typedef struct {
  local_backend *backend;
  cx__py_session *python;
  cx__py_executor *executor; /* made by the first executor operation */
  GMutex executor_lock;
} local_session;

static const cx_option_spec local_options[] = {
  { "isolated", CX_OPTION_BOOL, "false",
    "run Python as `python3 -I -S`: no site-packages, no user site, no '' on sys.path" },
  { "cwd", CX_OPTION_PATH, NULL, "working directory of each cell (default: the host's)" },
  { "env", CX_OPTION_ENV, NULL, "environment variables set for each cell, then restored" },
  { "timeout", CX_OPTION_DOUBLE, NULL,
    "seconds after which a cell is interrupted with TimeoutError (unset or 0: never)" },
  { "capture-fds", CX_OPTION_BOOL, "true",
    "also capture what cells write to file descriptors 1 and 2 (os.system, child processes, "
    "C code); while a cell runs, every thread's writes to the host's fds 1 and 2 go to it" },
  { NULL }
};

/* Extension modules (ctypes, numpy) look libpython's symbols up globally,
 * but the registry loads this plugin RTLD_LOCAL: promote libpython to the
 * global scope, and keep it resident since Python is never finalised. */
static gboolean
local_init(GError **error)
{
  if (dlopen(CX_LIBPYTHON_SONAME, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_INIT_REFUSED,
                "cannot load %s for %s: %s; install the Python runtime library "
                "(Debian: libpython3-dev) or rebuild cellexec against the Python you have",
                CX_LIBPYTHON_SONAME, CX_PYTHON_EXECUTABLE, dlerror());
    return FALSE;
  }
  return TRUE;
}

static cx_backend_instance *
local_create(const cx_options *options, GError **error)
{
  gboolean isolated = cx_options_get_bool(options, "isolated", FALSE);
  /* Python itself starts with the first cell; only check it could. */
  if (!cx__py_check_isolation(isolated, error))
    return NULL;
  local_backend *backend = g_new0(local_backend, 1);
  backend->isolated = isolated;
  backend->run_flags = cx_options_get_bool(options, "capture-fds", TRUE)
                         ? CX__PY_RUN_CAPTURE_FDS : CX__PY_RUN_DEFAULT;
  return (cx_backend_instance *)backend;
}

static void
local_destroy(cx_backend_instance *instance)
{
  local_backend *backend = (local_backend *)instance;
  g_free(backend);
}

/* The checks every run makes before Python sees the cell. */
static gboolean
local_prepare_run(local_backend *backend, const cx_run_options *run, GError **error)
{
  return cx__py_start(backend->isolated, error);
}

static cx_result *
local_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
               GError **error)
{
  local_backend *backend = (local_backend *)instance;
  if (!local_prepare_run(backend, run, error))
    return NULL;
  return cx__py_run_cell(backend, NULL, code, run, backend->run_flags, error);
}

static cx_session_instance *
local_session_open(cx_backend_instance *instance, GError **error)
{
  local_backend *backend = (local_backend *)instance;
  if (!cx__py_start(backend->isolated, error))
    return NULL;
  cx__py_session *python = cx__py_session_new(error);
  if (python == NULL)
    return NULL;
  local_session *session = g_new0(local_session, 1);
  session->backend = backend;
  session->python = python;
  g_mutex_init(&session->executor_lock);
  return (cx_session_instance *)session;
}

static cx_result *
local_session_run_cell(cx_session_instance *instance, const char *code,
                       const cx_run_options *run, GError **error)
{
  local_session *session = (local_session *)instance;
  if (!local_prepare_run(session->backend, run, error))
    return NULL;
  return cx__py_run_cell(session, session->python, code, run, session->backend->run_flags,
                         error);
}

static void
local_session_close(cx_session_instance *instance)
{
  local_session *session = (local_session *)instance;
  cx__py_executor_free(session->executor);
  g_mutex_clear(&session->executor_lock);
  cx__py_session_free(session->python);
  g_free(session);
}

static JsonObject *
local_session_request(cx_session_instance *instance, const char *type, JsonObject *content,
                      GError **error)
{
  return cx__py_session_request(((local_session *)instance)->python, type, content, error);
}

static gboolean
local_interrupt(cx_backend_instance *backend, cx_session_instance *session, GError **error)
{
  /* Cells are registered under their session, stateless ones under the
   * backend: see local_run_cell and local_session_run_cell. */
  cx__py_interrupt(session != NULL ? (const void *)session : (const void *)backend);
  return TRUE;
}

static JsonNode *
local_query(cx_backend_instance *instance, const char *what, GError **error)
{
  local_backend *backend = (local_backend *)instance;
  if (g_strcmp0(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the local backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  if (!cx__py_start(backend->isolated, error))
    return NULL;
  return cx__py_describe(error);
}

static const cx_backend_vtable local_backend_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = local_create,
  .destroy = local_destroy,
  .run_cell = local_run_cell,
  .session_open = local_session_open,
  .session_run_cell = local_session_run_cell,
  .session_close = local_session_close,
  .interrupt = local_interrupt,
  .query = local_query,
  .session_request = local_session_request,
};

/* ---- The executor operations: pyembed/executor.h does the work. ---- */

/* The session's executor (its table of references), made on first use. */
static cx__py_executor *
local_executor(local_session *session, GError **error)
{
  g_mutex_lock(&session->executor_lock);
  if (session->executor == NULL)
    session->executor = cx__py_executor_new(error);
  cx__py_executor *executor = session->executor;
  g_mutex_unlock(&session->executor_lock);
  return executor;
}

static cx_env_instance *
local_execute_prelude_incremental(cx_session_instance *instance, cx_env_instance *env,
                                  const char *code, GError **error)
{
  cx__py_executor *executor = local_executor((local_session *)instance, error);
  cx__py_env *target = (cx__py_env *)env;
  if (executor == NULL || (target == NULL && (target = cx__py_env_new(executor, error)) == NULL))
    return NULL;
  if (!cx__py_env_execute(target, code, NULL, 0, "<prelude>", error)) {
    if (env == NULL)
      cx__py_env_free(target);
    return NULL;
  }
  return (cx_env_instance *)target;
}

static cx_env_instance *
local_execute_prelude(cx_session_instance *session, const char *code, GError **error)
{
  return local_execute_prelude_incremental(session, NULL, code, error);
}

static JsonNode *
local_evaluate_inline(cx_session_instance *session, cx_env_instance *env, const char *code,
                      JsonObject *locals, GError **error)
{
  return cx__py_env_evaluate_inline((cx__py_env *)env, code, locals, error);
}

static JsonNode *
local_execute_block(cx_session_instance *session, cx_env_instance *env, const char *code,
                    JsonObject *locals, GError **error)
{
  return cx__py_env_execute_block((cx__py_env *)env, code, locals, error);
}

static gboolean
local_execute_side_effects(cx_session_instance *session, cx_env_instance *env, const char *code,
                           JsonObject *bindings, int line_offset, GError **error)
{
  return cx__py_env_execute((cx__py_env *)env, code, bindings, line_offset, "<side_effects>", error);
}

static gboolean
local_create_dynamic_function(cx_session_instance *session, cx_env_instance *env,
                              const char *name, const char *const *params, JsonObject *defaults,
                              cx_host_function function, gpointer user_data,
                              GDestroyNotify destroy, GError **error)
{
  return cx__py_env_bind_function((cx__py_env *)env, name, params, defaults, function, user_data, destroy,
                                  error);
}

static JsonNode *
local_evaluate_type_expression(cx_session_instance *session, cx_env_instance *env,
                               const char *code, GError **error)
{
  return cx__py_env_evaluate_type_expression((cx__py_env *)env, code, error);
}

static JsonObject *
local_env_snapshot(cx_session_instance *session, cx_env_instance *env, GError **error)
{
  return cx__py_env_snapshot((cx__py_env *)env, error);
}

static void
local_env_free(cx_session_instance *session, cx_env_instance *env)
{
  cx__py_env_free((cx__py_env *)env);
}

static const cx_executor_vtable local_executor_vtable = {
  .struct_size = sizeof(cx_executor_vtable),
  .execute_prelude = local_execute_prelude,
  .execute_prelude_incremental = local_execute_prelude_incremental,
  .evaluate_inline = local_evaluate_inline,
  .execute_block = local_execute_block,
  .execute_side_effects = local_execute_side_effects,
  .create_dynamic_function = local_create_dynamic_function,
  .evaluate_type_expression = local_evaluate_type_expression,
  .env_snapshot = local_env_snapshot,
  .env_free = local_env_free,
};

CX_PLUGIN_DEFINE("local", PACKAGE_VERSION, "CPython embedded in the host process",
                 local_options, &local_backend_vtable, &local_executor_vtable, local_init)
