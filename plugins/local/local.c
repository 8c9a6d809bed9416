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

#include <cellexec/plugin.h>

#include "pyembed/pyembed.h"

typedef struct {
  gboolean isolated;
} local_backend;

typedef struct {
  local_backend *backend;
  cx_pyembed_session *python;
} local_session;

static const cx_option_spec local_options[] = {
  { "isolated", CX_OPTION_BOOL, "false",
    "run Python as `python3 -I -S`: no site-packages, no user site, no '' on sys.path" },
  { "cwd", CX_OPTION_PATH, NULL, "working directory of each cell (default: the host's)" },
  { "env", CX_OPTION_ENV, NULL, "environment variables set for each cell, then restored" },
  { "timeout", CX_OPTION_DOUBLE, NULL,
    "seconds after which a cell is interrupted with TimeoutError (unset or 0: never)" },
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
  if (!cx_pyembed_check_isolation(isolated, error))
    return NULL;
  local_backend *backend = g_new0(local_backend, 1);
  backend->isolated = isolated;
  return backend;
}

static void
local_destroy(cx_backend_instance *instance)
{
  g_free(instance);
}

/* The checks every run makes before Python sees the cell. */
static gboolean
local_prepare_run(local_backend *backend, const cx_run_options *run, GError **error)
{
  if (cx_run_options_get_use_subprocess(run)) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "use_subprocess needs the subprocess backend, which is not installed; "
                "run the cell without use_subprocess, or select another backend");
    return FALSE;
  }
  return cx_pyembed_start(backend->isolated, error);
}

static cx_result *
local_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
               GError **error)
{
  local_backend *backend = instance;
  if (!local_prepare_run(backend, run, error))
    return NULL;
  return cx_pyembed_run_cell(backend, NULL, code, run, error);
}

static cx_session_instance *
local_session_open(cx_backend_instance *instance, GError **error)
{
  local_backend *backend = instance;
  if (!cx_pyembed_start(backend->isolated, error))
    return NULL;
  cx_pyembed_session *python = cx_pyembed_session_new(error);
  if (python == NULL)
    return NULL;
  local_session *session = g_new0(local_session, 1);
  session->backend = backend;
  session->python = python;
  return session;
}

static cx_result *
local_session_run_cell(cx_session_instance *instance, const char *code,
                       const cx_run_options *run, GError **error)
{
  local_session *session = instance;
  if (!local_prepare_run(session->backend, run, error))
    return NULL;
  return cx_pyembed_run_cell(session, session->python, code, run, error);
}

static void
local_session_close(cx_session_instance *instance)
{
  local_session *session = instance;
  cx_pyembed_session_free(session->python);
  g_free(session);
}

static gboolean
local_interrupt(cx_backend_instance *backend, cx_session_instance *session, GError **error)
{
  /* Cells are registered under their session, stateless ones under the
   * backend: see local_run_cell and local_session_run_cell. */
  cx_pyembed_interrupt(session != NULL ? session : backend);
  return TRUE;
}

static JsonNode *
local_query(cx_backend_instance *instance, const char *what, GError **error)
{
  local_backend *backend = instance;
  if (g_strcmp0(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the local backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  if (!cx_pyembed_start(backend->isolated, error))
    return NULL;
  return cx_pyembed_describe(error);
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
};

CX_PLUGIN_DEFINE("local", PACKAGE_VERSION, "CPython embedded in the host process",
                 local_options, &local_backend_vtable, NULL, local_init)
