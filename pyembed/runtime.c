/* pyembed/runtime.c: starting the embedded interpreter, and the GIL.
 *
 * The interpreter is configured like the system python3 (CX_PYTHON_EXECUTABLE,
 * found by configure) but deaf to PYTHON* environment variables, so a
 * developer's PYTHONUNBUFFERED or PYTHONPATH cannot change what a cell does.
 * It never installs signal handlers (the host owns its signals) and never
 * touches the host's C stdio.
 */
#include "config.h"

#include "pyembed/pyembed-private.h"
#include "pyembed/pyembed-process.h"
#include "pyembed/errors-py.h" /* cx__py_errors_source, generated from errors.py */
#include "pyembed/helper-py.h" /* cx__py_helper_source */
#include "pyembed/ipython_shell-py.h" /* cx__py_ipython_shell_source */
#include "pyembed/kernel-py.h" /* cx__py_kernel_source */
#include "pyembed/requests-py.h" /* cx__py_requests_source */

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>

/* The pseudo file names of the Python halves: tracebacks drop their frames. */
#define ERRORS_FILENAME "<cellexec-errors>"
#define ERRORS_MODULE "_cellexec_errors"
#define HELPER_FILENAME "<cellexec-helper>"
#define HELPER_MODULE "_cellexec_helper"
#define IPYTHON_FILENAME "<cellexec-ipython>"
#define IPYTHON_MODULE "_cellexec_ipython"
#define KERNEL_FILENAME "<cellexec-kernel>"
#define KERNEL_MODULE "_cellexec_kernel"
#define REQUESTS_FILENAME "<cellexec-requests>"
#define REQUESTS_MODULE "_cellexec_requests"

static GMutex start_lock;
static gint started;            /* atomic; TRUE once everything below is set */
static GError *start_failure;   /* why starting failed: Python is not restarted */
static gboolean started_isolated;
static gboolean threading_on_demand; /* cx__py_import_threading_on_demand() */
static PyObject *helper_module;
static PyObject *namespace_template;

/* ---- The GIL --------------------------------------------------------------- */

static _Thread_local gboolean thread_pinned;

/* At exit of a thread pinned below: drop its thread state.  Done by hand,
 * not with PyGILState_Release: the TSS slot PyGILState relies on may have
 * been cleared already when thread-exit destructors run. */
static void
forget_thread_state(gpointer data)
{
  PyThreadState *thread_state = data;
  PyEval_RestoreThread(thread_state);
  PyThreadState_Clear(thread_state);
  PyThreadState_DeleteCurrent();
}

static GPrivate pinned_thread_state = G_PRIVATE_INIT(forget_thread_state);

static void
pin_thread_state(void)
{
  thread_pinned = TRUE;
  if (PyGILState_GetThisThreadState() != NULL)
    return; /* Python already owns a thread state for this thread */
  /* PyGILState_Ensure creates the thread state with a use count of 1 that
   * we never give back, so later Ensure/Release pairs keep it. */
  (void)PyGILState_Ensure();
  g_private_set(&pinned_thread_state, PyEval_SaveThread());
}

PyGILState_STATE
cx__py_gil_acquire(void)
{
  if (G_UNLIKELY(!thread_pinned))
    pin_thread_state();
  return PyGILState_Ensure();
}

void
cx__py_gil_release(PyGILState_STATE state)
{
  PyGILState_Release(state);
}

/* ---- Errors ---------------------------------------------------------------- */

void
cx__py_error_from_python(GError **error, int code, const char *prefix, ...)
{
  va_list args;
  va_start(args, prefix);
  g_autofree char *what = g_strdup_vprintf(prefix, args);
  va_end(args);

  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  g_autofree char *detail = NULL;
  if (value != NULL) {
    PyObject *text = PyObject_Str(value);
    const char *utf8 = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    detail = g_strdup_printf("%s: %s", ((PyTypeObject *)type)->tp_name, utf8 ? utf8 : "?");
    Py_XDECREF(text);
    PyErr_Clear();
  } else if (type != NULL) {
    detail = g_strdup(((PyTypeObject *)type)->tp_name);
  } else {
    detail = g_strdup("unknown error");
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  g_set_error(error, CX_ERROR, code, "%s: %s", what, detail);
}

/* ---- Starting -------------------------------------------------------------- */

static gboolean
status_to_error(PyStatus status, GError **error)
{
  if (!PyStatus_Exception(status))
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "cannot start the embedded Python (%s): %s%s%s; check that %s and its "
              "standard library are installed",
              CX_PYTHON_EXECUTABLE, status.err_msg ? status.err_msg : "exit requested",
              status.func ? " in " : "", status.func ? status.func : "", CX_PYTHON_EXECUTABLE);
  return FALSE;
}

static gboolean
initialize_interpreter(gboolean isolated, GError **error)
{
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  /* Set before anything below pre-initialises Python from this config. */
  config.use_environment = 0;          /* PYTHONPATH, PYTHONUNBUFFERED, ...: ignored */
  config.parse_argv = 0;
  config.install_signal_handlers = 0;  /* SIGINT, SIGPIPE stay the host's */
  config.configure_c_stdio = 0;
  if (isolated) {
    config.isolated = 1;               /* -I: no user site, no environment, safe path */
    config.site_import = 0;            /* -S */
    config.user_site_directory = 0;
  }
  /* Left alone, an embedded interpreter derives sys.executable (and from it
   * sys.prefix) from PATH, which may lead to another Python. */
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, CX_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status))
    status = PyConfig_SetBytesString(&config, &config.executable, CX_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status))
    status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  return status_to_error(status, error);
}

PyObject *
cx__py_load_module(const char *source, const char *filename, const char *name)
{
  PyObject *code = Py_CompileStringExFlags(source, filename, Py_file_input, NULL, 0);
  PyObject *module = code != NULL ? PyImport_AddModule(name) : NULL; /* borrowed */
  PyObject *globals = module != NULL ? PyModule_GetDict(module) : NULL;
  PyObject *file = PyUnicode_FromString(filename);
  PyObject *done = NULL;
  if (globals != NULL && file != NULL &&
      PyDict_SetItemString(globals, "__file__", file) == 0 &&
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0)
    done = PyEval_EvalCode(code, globals, globals);
  Py_XDECREF(file);
  Py_XDECREF(code);
  Py_XDECREF(done);
  return done != NULL ? module : NULL;
}

/* cx__py_load_module(), then the module's install(). */
static PyObject *
load_module(const char *source, const char *filename, const char *name)
{
  PyObject *module = cx__py_load_module(source, filename, name);
  PyObject *installed = module != NULL ? PyObject_CallMethod(module, "install", NULL) : NULL;
  Py_XDECREF(installed);
  return installed != NULL ? module : NULL;
}

static gboolean
load_helper(GError **error)
{
  if (!cx__py_native_init() || !cx__py_running_init() ||
      !cx__py_capture_init()) {
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot set up the embedded Python");
    return FALSE;
  }
  /* Each imports the ones before: errors.py, the IPython glue, the kernel
   * object, the Jupyter requests, helper.py. */
  PyObject *module = cx__py_load_module(cx__py_errors_source, ERRORS_FILENAME, ERRORS_MODULE);
  if (module != NULL)
    module = load_module(cx__py_ipython_shell_source, IPYTHON_FILENAME, IPYTHON_MODULE);
  if (module != NULL)
    module = load_module(cx__py_kernel_source, KERNEL_FILENAME, KERNEL_MODULE);
  if (module != NULL)
    module = load_module(cx__py_requests_source, REQUESTS_FILENAME, REQUESTS_MODULE);
  if (module != NULL)
    module = load_module(cx__py_helper_source, HELPER_FILENAME, HELPER_MODULE);
  if (module == NULL) {
    cx__py_error_from_python(error, CX_ERROR_BACKEND,
                             "cannot load cellexec's Python helper into %s",
                             CX_PYTHON_EXECUTABLE);
    return FALSE;
  }
  helper_module = Py_NewRef(module);
  return TRUE;
}

/* threading, imported by the thread that starts Python: threading takes
 * the thread that first imports it for the main thread, and a host's cell
 * on another thread must not become that.  (The helper tags its threads
 * when it is imported.) */
static gboolean
import_threading(GError **error)
{
  PyObject *module = PyImport_ImportModule("threading");
  if (module == NULL) {
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot import threading into %s",
                             CX_PYTHON_EXECUTABLE);
    return FALSE;
  }
  Py_DECREF(module);
  return TRUE;
}

void
cx__py_import_threading_on_demand(void)
{
  threading_on_demand = TRUE;
}

/* What every cell namespace starts as: what a script's __main__ holds, and
 * IPython's _i, _ii and _iii. */
static gboolean
create_namespace_template(GError **error)
{
  namespace_template = PyDict_New();
  PyObject *builtins = PyImport_ImportModule("builtins");
  PyObject *main_name = PyUnicode_FromString("__main__");
  gboolean ok = namespace_template != NULL && builtins != NULL && main_name != NULL &&
                PyDict_SetItemString(namespace_template, "__name__", main_name) == 0 &&
                PyDict_SetItemString(namespace_template, "__doc__", Py_None) == 0 &&
                PyDict_SetItemString(namespace_template, "__package__", Py_None) == 0 &&
                PyDict_SetItemString(namespace_template, "__spec__", Py_None) == 0 &&
                PyDict_SetItemString(namespace_template, "__builtins__", builtins) == 0;
  /* The input history before a first cell (helper.History). */
  PyObject *empty = ok ? PyUnicode_FromString("") : NULL;
  ok = empty != NULL && PyDict_SetItemString(namespace_template, "_i", empty) == 0 &&
       PyDict_SetItemString(namespace_template, "_ii", empty) == 0 &&
       PyDict_SetItemString(namespace_template, "_iii", empty) == 0;
  Py_XDECREF(empty);
  Py_XDECREF(builtins);
  Py_XDECREF(main_name);
  if (!ok)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot create cell namespaces");
  return ok;
}

/* sys.flags.isolated of an interpreter someone else started. */
static gboolean
interpreter_is_isolated(void)
{
  PyObject *flags = PySys_GetObject("flags"); /* borrowed */
  PyObject *isolated = flags != NULL ? PyObject_GetAttrString(flags, "isolated") : NULL;
  gboolean result = isolated != NULL && PyObject_IsTrue(isolated) == 1;
  Py_XDECREF(isolated);
  PyErr_Clear();
  return result;
}

static gboolean
isolation_matches(gboolean isolated, GError **error)
{
  if (!started_isolated == !isolated)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "the embedded Python of this process already runs with isolated=%s and "
              "cannot be restarted with isolated=%s; use one isolated setting for every "
              "local backend of a process (or the subprocess backend)",
              started_isolated ? "true" : "false", isolated ? "true" : "false");
  return FALSE;
}

gboolean
cx__py_check_isolation(gboolean isolated, GError **error)
{
  return !g_atomic_int_get(&started) || isolation_matches(isolated, error);
}

/* SIGINT back to SIG_DFL, in Python's record of it too (signal.getsignal
 * must not name a handler that is not there); with the GIL held, on the
 * thread that initialised Python, which Python takes as its main thread. */
static void
restore_default_sigint(const struct sigaction *host_sigint)
{
  PyObject *signal_module = PyImport_ImportModule("signal");
  PyObject *done = signal_module != NULL
                     ? PyObject_CallMethod(signal_module, "signal", "ii", SIGINT, 0 /* SIG_DFL */)
                     : NULL;
  if (done == NULL) {
    PyErr_Clear();
    sigaction(SIGINT, host_sigint, NULL); /* the disposition at least */
  }
  Py_XDECREF(done);
  Py_XDECREF(signal_module);
}

/* Starts Python; with start_lock held.  On failure the interpreter may be
 * half-initialised, so the caller never tries again. */
static gboolean
start_locked(gboolean isolated, GError **error)
{
  /* A host that embeds Python itself keeps its interpreter; we only add our
   * helper to it. */
  gboolean ours = !Py_IsInitialized();
  /* Most hosts start their threads later: grown now, the descriptor table
   * need not be grown while they run (cx__py_fdcapture_reserve). */
  cx__py_fdcapture_reserve();
  struct sigaction host_sigint;
  sigaction(SIGINT, NULL, &host_sigint);
  if (ours && !initialize_interpreter(isolated, error))
    return FALSE;
  PyGILState_STATE gil = ours ? PyGILState_LOCKED : PyGILState_Ensure();
  gboolean ok = load_helper(error) && create_namespace_template(error) &&
                (threading_on_demand || import_threading(error));
  /* Importing Python's signal module (the helper does) replaces a SIG_DFL
   * SIGINT with Python's own handler, install_signal_handlers = 0 or not:
   * Ctrl-C would then stop reaching the host.  Its signals stay its own. */
  if (ours && host_sigint.sa_handler == SIG_DFL)
    restore_default_sigint(&host_sigint);
  started_isolated = ours ? isolated : interpreter_is_isolated();
  if (ours) {
    /* This thread owns the main thread state: pin it as is. */
    thread_pinned = TRUE;
    (void)PyEval_SaveThread();
  } else {
    PyGILState_Release(gil);
  }
  return ok;
}

gboolean
cx__py_start(gboolean isolated, GError **error)
{
  if (G_LIKELY(g_atomic_int_get(&started)))
    return isolation_matches(isolated, error);

  g_mutex_lock(&start_lock);
  if (!g_atomic_int_get(&started) && start_failure == NULL) {
    if (start_locked(isolated, &start_failure))
      g_atomic_int_set(&started, TRUE);
  }
  g_mutex_unlock(&start_lock);
  if (start_failure != NULL) {
    g_propagate_error(error, g_error_copy(start_failure));
    return FALSE;
  }
  return isolation_matches(isolated, error);
}

/* ---- Small services for the other files ------------------------------------- */

/* Enough for threads that copy bytes and make system calls. */
#define HELPER_THREAD_STACK_SIZE (256 * 1024)

int
cx__py_start_thread(void *(*main)(void *), void *data)
{
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, HELPER_THREAD_STACK_SIZE);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* The new thread inherits this mask; ours is put back. */
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  pthread_t thread;
  int failed = pthread_create(&thread, &attr, main, data);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  pthread_attr_destroy(&attr);
  return failed;
}


PyObject *
cx__py_new_main_module(void)
{
  PyObject *module = PyModule_New("__main__");
  if (module != NULL && PyDict_Update(PyModule_GetDict(module), namespace_template) < 0)
    Py_CLEAR(module);
  return module;
}

PyObject *
cx__py_call_helper(const char *name, PyObject *const *args, size_t nargs)
{
  PyObject *function = PyObject_GetAttrString(helper_module, name);
  if (function == NULL)
    return NULL;
  PyObject *value = PyObject_Vectorcall(function, args, nargs, NULL);
  Py_DECREF(function);
  return value;
}

JsonNode *
cx__py_describe(GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *info = cx__py_call_helper("info", NULL, 0);
  JsonNode *node = info != NULL ? cx__py_to_json(info) : NULL;
  Py_XDECREF(info);
  if (node != NULL) {
    json_object_set_string_member(json_node_get_object(node), "libpython", CX_LIBPYTHON_SONAME);
  } else {
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot describe the embedded Python");
  }
  cx__py_gil_release(gil);
  return node;
}
