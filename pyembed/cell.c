/* pyembed/cell.c: run one cell into a cx_result, and session namespaces. */
#include "config.h"

#include <signal.h>

#include "pyembed/pyembed-private.h"

/* The trace and profile functions of a thread (sys.settrace,
 * sys.setprofile, cProfile, coverage, pdb). */
typedef struct {
  Py_tracefunc trace, profile;
  PyObject *trace_arg, *profile_arg; /* owned */
} hooks;

struct cx__py_session {
  PyObject *module;     /* the __main__ cells run in */
  PyObject *namespace;  /* its dict (borrowed from module) */
  hooks hooks;          /* what its last cell left set, for its next */
  PyObject *runner;     /* helper.AsyncRunner: the event loop of top-level await */
  PyObject *history;    /* helper.History: In, Out, _, ... */
  gint64 execution_count; /* cells run so far, as a kernel counts them */
};

/* cwd and env are process-wide: calls that set them take turns.  Recursive,
 * for a cell whose host callback runs another cell. */
static GRecMutex context_lock;


/* TEXT (a str) as UTF-8 with each NUL as CX_RESULT_NUL: a C string would
 * end at the first, cutting an exception's message there.  NULL with a
 * Python exception when TEXT has no UTF-8 form. */
char *
cx__py_utf8_keeping_nul(PyObject *text)
{
  Py_ssize_t size;
  const char *utf8 = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &size) : NULL;
  if (utf8 == NULL)
    return NULL;
  GString *kept = g_string_sized_new((gsize)size + 1);
  for (Py_ssize_t i = 0; i < size; i++)
    if (utf8[i] == '\0')
      g_string_append(kept, CX_RESULT_NUL);
    else
      g_string_append_c(kept, utf8[i]);
  return g_string_free(kept, FALSE);
}

/* LINES, a list of str, as a NULL-terminated vector of UTF-8 texts; NULL
 * when it is not one, or a text holds a NUL. */
static char **
text_lines(PyObject *lines)
{
  if (!PyList_Check(lines))
    return NULL;
  GStrvBuilder *builder = g_strv_builder_new();
  gboolean ok = TRUE;
  for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(lines); i++) {
    /* A NUL leaves the plain traceback's lines: the worker's frame keeps
     * the NUL marker only in the error's own texts. */
    g_autofree char *utf8 = cx__py_utf8_keeping_nul(PyList_GET_ITEM(lines, i));
    ok = utf8 != NULL && strstr(utf8, CX_RESULT_NUL) == NULL;
    if (ok)
      g_strv_builder_add(builder, utf8);
  }
  char **strv = g_strv_builder_end(builder);
  g_strv_builder_unref(builder);
  if (!ok) {
    PyErr_Clear();
    g_clear_pointer(&strv, g_strfreev);
  }
  return strv;
}

/* The cell's error from EXCEPTION.  SHOWN FALSE: it has no error output
 * (helper.show_usage_error printed it). */
static void
set_error_from_exception(cx_result *result, PyObject *exception, const cx__py_cell *cell,
                         const cx_run_options *run, gboolean shown)
{
  PyObject *timeout = cell->timed_out ? PyFloat_FromDouble(cx_run_options_get_timeout(run))
                                      : Py_NewRef(Py_None);
  PyObject *args[] = { exception, timeout };
  PyObject *described = timeout != NULL ? cx__py_call_helper("describe_error", args, 2) : NULL;
  Py_XDECREF(timeout);
  const char *type = NULL;
  g_autofree char *message = NULL, *traceback = NULL;
  g_auto(GStrv) lines = NULL;
  if (described != NULL && PyTuple_Check(described) && PyTuple_GET_SIZE(described) == 4) {
    type = PyUnicode_AsUTF8(PyTuple_GET_ITEM(described, 0));
    message = type != NULL ? cx__py_utf8_keeping_nul(PyTuple_GET_ITEM(described, 1)) : NULL;
    traceback = message != NULL ? cx__py_utf8_keeping_nul(PyTuple_GET_ITEM(described, 2)) : NULL;
    lines = text_lines(PyTuple_GET_ITEM(described, 3));
  }
  if (type != NULL && message != NULL && traceback != NULL) {
    cx_result_set_error(result, type, message, traceback);
    cx_result_set_error_output(result, (const char *const *)lines, shown);
  } else {
    /* Describing failed too (no memory?): say at least what it was. */
    PyErr_Clear();
    cx_result_set_error(result, Py_TYPE(exception)->tp_name, "", "");
  }
  Py_XDECREF(described);
}

/* TRUE when EXCEPTION is shown on stderr instead of an error output, as a
 * kernel shows IPython's UsageError; while the cell's output is captured. */
static gboolean
show_usage_error(PyObject *exception)
{
  PyObject *shown = cx__py_call_helper("show_usage_error", &exception, 1);
  if (shown == NULL)
    PyErr_Clear();
  gboolean usage_error = shown == Py_True;
  Py_XDECREF(shown);
  return usage_error;
}

/* The exception being handled, normalised, with its traceback; cleared. */
static PyObject *
take_exception(void)
{
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != NULL && value != NULL)
    PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return value;
}

/* str() of the pending exception (cleared), for messages of our own. */
static char *
take_exception_text(void)
{
  PyObject *exception = take_exception();
  PyObject *text = exception != NULL ? PyObject_Str(exception) : NULL;
  const char *utf8 = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
  char *copy = g_strdup(utf8 != NULL ? utf8 : "unknown error");
  PyErr_Clear();
  Py_XDECREF(text);
  Py_XDECREF(exception);
  return copy;
}

/* The cell's value (helper.execute's (data, metadata)) as its execute_result. */
static gboolean
publish_value(cx__py_cell *cell, PyObject *value)
{
  if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) != 2) {
    PyErr_SetString(PyExc_TypeError, "execute() must return (data, metadata) or None");
    return FALSE;
  }
  return cx__py_publish(cell, CX__PY_EXECUTE_RESULT, PyTuple_GET_ITEM(value, 0),
                        PyTuple_GET_ITEM(value, 1), NULL);
}

/* What the cell paged (`len?`), as the extra key "payload". */
static void
set_payload(cx_result *result)
{
  PyObject *payload = cx__py_call_helper("take_payload", NULL, 0);
  JsonNode *node = payload != NULL && payload != Py_None ? cx__py_to_json(payload) : NULL;
  if (node != NULL)
    cx_result_set_extra(result, "payload", node);
  PyErr_Clear(); /* a payload that is not JSON is dropped, as a front end would */
  Py_XDECREF(payload);
}

/* ---- Signal dispositions ---------------------------------------------------
 *
 * A cell's signal.signal() changes the disposition of the whole process:
 * SIG_IGN for SIGINT would outlive the cell and leave the host deaf to ^C.
 * helper.py's wrappers of signal.signal and signal.siginterrupt call
 * save_signal() before the first change of a signal in a cell; when the
 * cell (the outermost one of its thread) ends, the saved disposition is put
 * back.  Only the thread that made the change restores it: Python lets only
 * its main thread change signals, and a cell on another thread must not
 * undo a cell still running there.  All of it with the GIL held. */

typedef struct {
  struct sigaction action;  /* the process's disposition before the cell */
  PyObject *handler;        /* what signal.getsignal() said then */
  unsigned long thread;     /* PyThread_get_thread_ident() of the changer */
} saved_signal;

static saved_signal *saved_signals[NSIG];
static gboolean signals_saved;

/* save_signal(signum, handler): remember SIGNUM's disposition (and HANDLER,
 * Python's idea of it), unless saved already or no cell runs here. */
static PyObject *
native_save_signal(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
  if (nargs != 2)
    return PyErr_Format(PyExc_TypeError, "save_signal(signum, handler)");
  long signum = PyLong_AsLong(args[0]);
  if (signum == -1 && PyErr_Occurred())
    return NULL;
  if (signum <= 0 || signum >= NSIG || saved_signals[signum] != NULL || !cx__py_in_cell())
    return Py_NewRef(Py_None);
  saved_signal *saved = g_new0(saved_signal, 1);
  if (sigaction((int)signum, NULL, &saved->action) != 0) {
    g_free(saved);
    return Py_NewRef(Py_None); /* not a signal one can change: nothing to restore */
  }
  saved->handler = Py_NewRef(args[1]);
  saved->thread = PyThread_get_thread_ident();
  saved_signals[signum] = saved;
  signals_saved = TRUE;
  return Py_NewRef(Py_None);
}

static PyMethodDef signal_methods[] = {
  { "save_signal", (PyCFunction)(void (*)(void))native_save_signal, METH_FASTCALL,
    "save_signal(signum, handler): a cell is about to change SIGNUM; put it back "
    "when the cell ends." },
  { NULL }
};

gboolean
cx__py_signals_init(PyObject *module)
{
  return PyModule_AddFunctions(module, signal_methods) == 0;
}

void
cx__py_signals_restore(void)
{
  if (G_LIKELY(!signals_saved))
    return;
  unsigned long thread = PyThread_get_thread_ident();
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject *module = PyImport_ImportModule("_signal"); /* not the wrapped signal.signal */
  signals_saved = FALSE;
  for (int signum = 1; signum < NSIG; signum++) {
    saved_signal *saved = saved_signals[signum];
    if (saved == NULL)
      continue;
    if (saved->thread != thread) {
      signals_saved = TRUE;
      continue;
    }
    /* Python's record first (it calls sigaction too), then the very
     * disposition the process had: flags, mask, a handler of the host. */
    if (module != NULL && saved->handler != Py_None) {
      /* _signal knows SIG_DFL and SIG_IGN as the plain ints 0 and 1, not
       * as the enum members signal.getsignal() returns. */
      PyObject *handler = PyLong_Check(saved->handler)
                            ? PyLong_FromLong(PyLong_AsLong(saved->handler))
                            : Py_NewRef(saved->handler);
      PyObject *done = handler != NULL
                         ? PyObject_CallMethod(module, "signal", "iO", signum, handler) : NULL;
      Py_XDECREF(done);
      Py_XDECREF(handler);
    }
    PyErr_Clear();
    sigaction(signum, &saved->action, NULL);
    Py_DECREF(saved->handler);
    g_free(saved);
    saved_signals[signum] = NULL;
  }
  Py_XDECREF(module);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

/* ---- Trace and profile functions -------------------------------------------
 *
 * A cell's sys.settrace() or profiler is the thread's: left set, it would
 * trace cellexec's own code after the cell and every later cell of the
 * thread, other sessions' and stateless ones included.  So the outermost
 * cell of a thread starts with what the thread had (the host's, usually
 * none) or, in a session, what the session's last cell left; when it ends,
 * what it left set is the session's, and the thread gets its own back.
 * All of it with the GIL held, on the cell's thread. */

static hooks
hooks_of_thread(void)
{
  PyThreadState *thread = PyThreadState_Get();
  return (hooks){
    .trace = thread->c_tracefunc,
    .profile = thread->c_profilefunc,
    .trace_arg = Py_XNewRef(thread->c_traceobj),
    .profile_arg = Py_XNewRef(thread->c_profileobj),
  };
}

static gboolean
hooks_equal(const hooks *a, const hooks *b)
{
  return a->trace == b->trace && a->profile == b->profile && a->trace_arg == b->trace_arg &&
         a->profile_arg == b->profile_arg;
}

static void
hooks_clear(hooks *h)
{
  Py_CLEAR(h->trace_arg);
  Py_CLEAR(h->profile_arg);
  h->trace = h->profile = NULL;
}

/* Make H the thread's (an exception pending is kept). */
static void
hooks_install(const hooks *h)
{
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyEval_SetProfile(h->profile, h->profile_arg);
  PyEval_SetTrace(h->trace, h->trace_arg);
  PyErr_Restore(type, value, traceback);
}

/* Before the outermost cell of a thread: *THREAD_HOOKS gets what the thread
 * has, and SESSION's hooks (if any) are set. */
static void
hooks_enter_cell(hooks *thread_hooks, cx__py_session *session)
{
  *thread_hooks = hooks_of_thread();
  if (session != NULL && (session->hooks.trace != NULL || session->hooks.profile != NULL))
    hooks_install(&session->hooks);
}

/* After it: SESSION keeps what the cell left set (a stateless cell's are
 * dropped), the thread gets THREAD_HOOKS back. */
static void
hooks_leave_cell(hooks *thread_hooks, cx__py_session *session)
{
  hooks left = hooks_of_thread();
  gboolean changed = !hooks_equal(&left, thread_hooks);
  if (session != NULL) {
    hooks_clear(&session->hooks);
    if (changed) {
      session->hooks = left;
      left = (hooks){ 0 };
    }
  }
  if (changed)
    hooks_install(thread_hooks);
  hooks_clear(&left);
  hooks_clear(thread_hooks);
}

/* ---- __main__ -----------------------------------------------------------------
 *
 * A cell runs in the dict of a module of its own named __main__, which is
 * sys.modules["__main__"] while it runs: pickle, cProfile.run, doctest,
 * inspect and multiprocessing look up what cells define there, as in a
 * kernel.  When the last running cell ends, the host's own __main__ (the
 * embedding program's, a Python host's script) is put back.  Cells running
 * at once on several threads share sys.modules: the one started last
 * wins, as with the shell (ipython_shell.py).  All of it with the GIL
 * held. */

typedef struct {
  GList link;        /* in running_mains */
  PyObject *module;  /* borrowed: the cell holds it */
} main_entry;

static GQueue running_mains = G_QUEUE_INIT; /* of main_entry, oldest first */
static PyObject *host_main;                 /* sys.modules["__main__"] before them */

static PyObject *
main_key(void)
{
  static PyObject *key; /* "__main__", interned once */
  if (key == NULL)
    key = PyUnicode_InternFromString("__main__");
  return key;
}

static void
set_main(PyObject *module)
{
  PyObject *modules = PyImport_GetModuleDict();
  if (main_key() == NULL)
    return;
  if (module != NULL)
    PyDict_SetItem(modules, main_key(), module);
  else if (PyDict_GetItem(modules, main_key()) != NULL)
    PyDict_DelItem(modules, main_key());
}

static void
main_enter(main_entry *entry, PyObject *module)
{
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (g_queue_is_empty(&running_mains) && main_key() != NULL)
    host_main = Py_XNewRef(PyDict_GetItem(PyImport_GetModuleDict(), main_key()));
  *entry = (main_entry){ .link = { .data = entry }, .module = module };
  g_queue_push_tail_link(&running_mains, &entry->link);
  set_main(module);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

static void
main_leave(main_entry *entry)
{
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  g_queue_unlink(&running_mains, &entry->link);
  PyObject *current = main_key() != NULL ? PyDict_GetItem(PyImport_GetModuleDict(), main_key())
                                         : NULL;
  if (current == entry->module) {
    main_entry *latest = running_mains.tail != NULL ? running_mains.tail->data : NULL;
    set_main(latest != NULL ? latest->module : host_main);
  }
  if (g_queue_is_empty(&running_mains))
    Py_CLEAR(host_main);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

/* IPython's post-execution events (helper.finish_cell), while the cell
 * still receives output: the figures matplotlib's inline backend shows
 * come after the cell's value, as in a kernel.  An exception they raise
 * (an interrupt) ends the cell if nothing else did. */
static void
finish_cell(PyObject *source, PyObject **exception)
{
  PyObject *args[] = { source, *exception != NULL ? *exception : Py_None };
  PyObject *done = cx__py_call_helper("finish_cell", args, G_N_ELEMENTS(args));
  if (done == NULL) {
    PyObject *late = take_exception();
    if (*exception == NULL)
      *exception = late;
    else
      Py_XDECREF(late);
  }
  Py_XDECREF(done);
}

/* Runs SOURCE with cwd and env already applied. */
static void
execute(cx_result *result, const void *owner, cx__py_session *session, PyObject *source,
        const cx_run_options *run, cx__py_run_flags flags)
{
  PyObject *module = session != NULL ? Py_NewRef(session->module) : cx__py_new_main_module();
  PyObject *namespace = module != NULL ? PyModule_GetDict(module) : NULL;
  if (namespace == NULL) {
    Py_XDECREF(module);
    PyErr_Clear();
    cx_result_set_error(result, "MemoryError", "cannot create the cell's namespace", "");
    return;
  }
  double timeout = cx_run_options_get_timeout(run);
  gint64 start = g_get_monotonic_time();
  cx__py_cell cell = {
    .owner = owner,
    .deadline = timeout > 0 ? start + (gint64)(timeout * G_USEC_PER_SEC) : 0,
    .result = result,
    .run = run,
    /* A stateless cell is the first of a fresh kernel; a cell not stored
     * in the history has the number of the last one that was. */
    .execution_count = session == NULL                        ? 1
                       : cx_run_options_get_store_history(run) ? ++session->execution_count
                                                               : session->execution_count,
    .record_events = (flags & CX__PY_RUN_RECORD_EVENTS) != 0,
  };
  PyObject *count = PyLong_FromLongLong(cell.execution_count);
  if (count == NULL) {
    Py_DECREF(module);
    PyErr_Clear();
    cx_result_set_error(result, "MemoryError", "cannot number the cell", "");
    return;
  }
  PyObject *args[] = { source, namespace, session != NULL ? session->runner : Py_None,
                       session != NULL ? session->history : Py_None, count,
                       cx_run_options_get_store_history(run) ? Py_True : Py_False };

  gboolean outermost = !cx__py_in_cell();
  hooks thread_hooks = { 0 };
  if (outermost)
    hooks_enter_cell(&thread_hooks, session);
  main_entry main;
  main_enter(&main, module);
  cx__py_fdcapture_begin(flags);
  cx__py_capture_begin();
  cx__py_running_begin(&cell);
  PyObject *value = cx__py_call_helper("execute", args, G_N_ELEMENTS(args));
  /* Fetched first: capture_end runs Python code (flush), which must not
   * start with an exception pending. */
  PyObject *exception = value == NULL ? take_exception() : NULL;
  /* Before any more of cellexec's code runs. */
  if (outermost)
    hooks_leave_cell(&thread_hooks, session);
  /* Published while the cell is still the one receiving output: a
   * _repr_html_ may print, and a recording worker streams it in order. */
  if (value != NULL && value != Py_None && !publish_value(&cell, value))
    exception = take_exception(); /* e.g. a _repr_json_ that is not JSON */
  gboolean error_shown = TRUE;
  if (cx__py_shell_started) {
    if (exception != NULL)
      error_shown = !show_usage_error(exception);
    finish_cell(source, &exception);
  }
  cx__py_running_end(&cell);
  if (cell.outer == NULL)
    cx__py_signals_restore();
  cx__py_capture_end();
  cx__py_fdcapture_end(flags, &cell);
  main_leave(&main);
  Py_DECREF(module);
  Py_DECREF(count);
  Py_XDECREF(value);

  if (exception != NULL) {
    set_error_from_exception(result, exception, &cell, run, error_shown);
    Py_DECREF(exception);
  }
  set_payload(result);
  cx_result_set_extra(result, "execution_count",
                      json_node_init_int(json_node_alloc(), cell.execution_count));
  cx_result_set_extra(result, "duration_ms",
                      json_node_init_double(json_node_alloc(),
                                            (g_get_monotonic_time() - start) / 1000.0));
}

static PyObject *
env_list(const char *const *env)
{
  PyObject *list = PyList_New(0);
  for (const char *const *assignment = env; list != NULL && *assignment != NULL; assignment++) {
    PyObject *item = PyUnicode_DecodeFSDefault(*assignment);
    if (item == NULL || PyList_Append(list, item) < 0)
      Py_CLEAR(list);
    Py_XDECREF(item);
  }
  return list;
}

/* With the GIL held.  NULL with ERROR set when cwd or env cannot be applied. */
static cx_result *
run_with_gil(const void *owner, cx__py_session *session, const char *code,
             const cx_run_options *run, cx__py_run_flags flags, gboolean with_context,
             GError **error)
{
  /* Built as the cell runs: its output streams to the run's callback. */
  g_autoptr(cx_result) result = cx_result_new_streaming(run);
  /* Before anything can fail: a cell whose source does not decode must
   * not report the events of the cell before it. */
  if (flags & CX__PY_RUN_RECORD_EVENTS)
    cx__py_events_reset();
  PyObject *context = NULL;
  if (with_context) {
    const char *cwd = cx_run_options_get_cwd(run);
    PyObject *directory = cwd != NULL ? PyUnicode_DecodeFSDefault(cwd) : Py_NewRef(Py_None);
    PyObject *assignments = env_list(cx_run_options_get_env(run));
    PyObject *args[] = { directory, assignments };
    if (directory != NULL && assignments != NULL)
      context = cx__py_call_helper("enter_context", args, 2);
    Py_XDECREF(directory);
    Py_XDECREF(assignments);
    if (context == NULL) {
      cx__py_error_from_python(error, CX_ERROR_BACKEND,
                               "cannot run the cell in directory %s with its environment; "
                               "check the cwd and env options",
                               cwd != NULL ? cwd : "(unchanged)");
      return NULL;
    }
  }

  PyObject *source = PyUnicode_DecodeUTF8(code, strlen(code), "strict");
  if (source != NULL) {
    execute(result, owner, session, source, run, flags);
    Py_DECREF(source);
  } else {
    /* As python3 reports a source file that is not UTF-8. */
    g_autofree char *message = take_exception_text();
    g_autofree char *traceback = g_strdup_printf("SyntaxError: %s\n", message);
    cx_result_set_error(result, "SyntaxError", message, traceback);
  }

  if (context != NULL) {
    PyObject *restored = cx__py_call_helper("leave_context", &context, 1);
    if (restored == NULL) {
      /* The cell ran; say what could not be undone where the user looks. */
      g_autofree char *message = take_exception_text();
      g_autofree char *warning = g_strdup_printf(
        "cellexec: could not restore the working directory or environment: %s\n", message);
      cx_result_append_stderr(result, warning, -1);
    }
    Py_XDECREF(restored);
    Py_DECREF(context);
  }
  return g_steal_pointer(&result);
}

cx_result *
cx__py_run_cell(const void *owner, cx__py_session *session, const char *code,
                const cx_run_options *run, cx__py_run_flags flags, GError **error)
{
  g_return_val_if_fail(code != NULL && run != NULL, NULL);
  gboolean with_context = cx_run_options_get_cwd(run) != NULL ||
                          cx_run_options_get_env(run)[0] != NULL;
  if (with_context) {
    /* Never wait for this lock while holding the GIL: its holder needs it. */
    if (PyGILState_Check()) {
      Py_BEGIN_ALLOW_THREADS
      g_rec_mutex_lock(&context_lock);
      Py_END_ALLOW_THREADS
    } else {
      g_rec_mutex_lock(&context_lock);
    }
  }
  PyGILState_STATE gil = cx__py_gil_acquire();
  cx_result *result = run_with_gil(owner, session, code, run, flags, with_context, error);
  cx__py_gil_release(gil);
  if (with_context)
    g_rec_mutex_unlock(&context_lock);
  return result;
}

/* ---- Sessions -------------------------------------------------------------- */

cx__py_session *
cx__py_session_new(GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *module = cx__py_new_main_module();
  PyObject *runner = module != NULL ? cx__py_call_helper("AsyncRunner", NULL, 0) : NULL;
  PyObject *history = runner != NULL ? cx__py_call_helper("History", NULL, 0) : NULL;
  cx__py_session *session = NULL;
  if (history != NULL) {
    session = g_new0(cx__py_session, 1);
    session->module = module;
    session->namespace = PyModule_GetDict(module);
    session->runner = runner;
    session->history = history;
  } else {
    Py_XDECREF(module);
    Py_XDECREF(runner);
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot create a session namespace");
  }
  cx__py_gil_release(gil);
  return session;
}

void
cx__py_session_free(cx__py_session *session)
{
  if (session == NULL)
    return;
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *closed = PyObject_CallMethod(session->runner, "close", NULL);
  if (closed == NULL)
    PyErr_WriteUnraisable(session->runner);
  Py_XDECREF(closed);
  /* Functions defined in the session refer to the namespace and it to them:
   * clear it so the objects go now, not at some later collection. */
  PyDict_Clear(session->namespace);
  Py_DECREF(session->module);
  hooks_clear(&session->hooks);
  Py_DECREF(session->runner);
  Py_DECREF(session->history);
  cx__py_gil_release(gil);
  g_free(session);
}

JsonObject *
cx__py_session_request(cx__py_session *session, const char *type, JsonObject *content,
                       GError **error)
{
  g_return_val_if_fail(session != NULL && type != NULL && content != NULL, NULL);
  g_autoptr(JsonNode) node_of_content = json_node_init_object(json_node_alloc(), content);
  g_autofree char *text = cx_json_to_string(node_of_content, FALSE);
  PyGILState_STATE gil = cx__py_gil_acquire();
  JsonObject *reply = NULL;
  PyObject *name = PyUnicode_FromString(type);
  PyObject *json = name != NULL ? PyUnicode_FromString(text) : NULL;
  PyObject *args[] = { name, json, session->namespace, session->history };
  PyObject *value = json != NULL ? cx__py_call_helper("answer_request", args, 4) : NULL;
  if (value == Py_None) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the Python backends answer complete, inspect, is_complete, history and "
                "user_expressions requests, not \"%s\"", type);
  } else if (value != NULL) {
    JsonNode *node = cx__py_to_json(value);
    if (node != NULL && JSON_NODE_HOLDS_OBJECT(node))
      reply = json_object_ref(json_node_get_object(node));
    else if (node != NULL)
      PyErr_SetString(PyExc_TypeError, "a request's answer must be a dict");
    if (node != NULL)
      json_node_unref(node);
  }
  if (reply == NULL && PyErr_Occurred())
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot answer %s", type);
  Py_XDECREF(value);
  Py_XDECREF(json);
  Py_XDECREF(name);
  cx__py_gil_release(gil);
  return reply;
}
