/* pyembed/process.c: forking, output while a cell runs, and a real
 * os._exit, for the subprocess worker (see pyembed-process.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "pyembed/pyembed-private.h"
#include "pyembed/pyembed-process.h"

pid_t
cx__py_fork(void)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyOS_BeforeFork();
  pid_t pid = fork();
  int saved_errno = errno;
  if (pid == 0)
    PyOS_AfterFork_Child();
  else
    PyOS_AfterFork_Parent();
  cx__py_gil_release(gil);
  errno = saved_errno;
  return pid;
}

/* Pass FUNC the bytes of RESULT's streams past CURSOR, up to OUT_AT and
 * ERR_AT. */
static void
peek_streams(const cx_result *result, cx__py_output_cursor *cursor, gsize out_at,
             gsize err_at, cx__py_output_func func, gpointer user_data)
{
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  len = MIN(len, out_at);
  if (len > cursor->stdout_seen) {
    func(1, out + cursor->stdout_seen, len - cursor->stdout_seen, user_data);
    cursor->stdout_seen = len;
  }
  const char *err = cx_result_get_stderr(result, &len);
  len = MIN(len, err_at);
  if (len > cursor->stderr_seen) {
    func(2, err + cursor->stderr_seen, len - cursor->stderr_seen, user_data);
    cursor->stderr_seen = len;
  }
}

/* With the GIL held: the events recorded since CURSOR, each after the
 * stream bytes written before it, then the rest of the streams. */
static void
peek_result(const cx_result *result, cx__py_output_cursor *cursor,
            cx__py_output_func func, gpointer user_data)
{
  JsonArray *events = cx__py_events();
  guint n = json_array_get_length(events);
  for (; cursor->events_seen < n; cursor->events_seen++) {
    JsonNode *node = json_array_get_element(events, cursor->events_seen);
    JsonObject *event = json_node_get_object(node);
    peek_streams(result, cursor, (gsize)json_object_get_int_member(event, "stdout_at"),
                 (gsize)json_object_get_int_member(event, "stderr_at"), func, user_data);
    if (g_str_equal(json_object_get_string_member(event, "event"), "mark"))
      continue; /* a switch of streams: only orders the bytes before it */
    json_object_remove_member(event, "stdout_at");
    json_object_remove_member(event, "stderr_at");
    g_autofree char *text = cx_json_to_string(node, FALSE);
    func(0, text, strlen(text), user_data);
  }
  peek_streams(result, cursor, G_MAXSIZE, G_MAXSIZE, func, user_data);
}

void
cx__py_peek_streams_in_signal_handler(cx__py_output_cursor *cursor,
                                      cx__py_output_func func, gpointer user_data)
{
  cx__py_cell *cell = cx__py_output_cell();
  if (cell != NULL)
    peek_streams(cell->result, cursor, G_MAXSIZE, G_MAXSIZE, func, user_data);
}

gboolean
cx__py_peek_output_gil_held(cx__py_output_cursor *cursor, cx__py_output_func func,
                            gpointer user_data)
{
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return FALSE;
  peek_result(cell->result, cursor, func, user_data);
  return TRUE;
}

gboolean
cx__py_peek_output(cx__py_output_cursor *cursor, cx__py_output_func func,
                   gpointer user_data)
{
  /* Appends to a cell's result happen with the GIL held: holding it, the
   * buffers cannot move under us. */
  PyGILState_STATE gil = cx__py_gil_acquire();
  cx__py_fdcapture_deliver(NULL); /* fd output streams too */
  gboolean running = cx__py_peek_output_gil_held(cursor, func, user_data);
  cx__py_gil_release(gil);
  return running;
}

void
cx__py_peek_finished(cx__py_output_cursor *cursor, const cx_result *result,
                     cx__py_output_func func, gpointer user_data)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  peek_result(result, cursor, func, user_data);
  cx__py_gil_release(gil);
}

static void (*before_process_exit)(int status);

static PyObject *
process_exit(PyObject *module, PyObject *arg)
{
  long status = PyLong_AsLong(arg);
  if (status == -1 && PyErr_Occurred())
    return NULL;
  if (status < INT_MIN || status > INT_MAX)
    return PyErr_Format(PyExc_OverflowError, "exit status %ld out of range", status);
  cx__py_fdcapture_deliver(NULL); /* written before: not lost with the process */
  if (before_process_exit != NULL)
    before_process_exit((int)status);
  _exit((int)status);
}

static PyMethodDef process_exit_def = {
  "_exit", process_exit, METH_O,
  "Exit the process with STATUS at once, without cleanup (the worker's os._exit)."
};

gboolean
cx__py_use_process_exit(void (*before_exit)(int status), GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  before_process_exit = before_exit;
  PyObject *function = PyCFunction_New(&process_exit_def, NULL);
  PyObject *os = function != NULL ? PyImport_ImportModule("os") : NULL;
  gboolean ok = os != NULL && PyObject_SetAttrString(os, "_exit", function) == 0;
  if (!ok)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot install the worker's os._exit");
  Py_XDECREF(os);
  Py_XDECREF(function);
  cx__py_gil_release(gil);
  return ok;
}

gboolean
cx__py_route_sigint(GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *signal_module = PyImport_ImportModule("signal");
  PyObject *handler = signal_module != NULL
                        ? PyObject_GetAttrString(signal_module, "default_int_handler")
                        : NULL;
  PyObject *done = handler != NULL
                     ? PyObject_CallMethod(signal_module, "signal", "iO", SIGINT, handler)
                     : NULL;
  gboolean ok = done != NULL;
  if (!ok)
    cx__py_error_from_python(error, CX_ERROR_BACKEND,
                             "cannot route SIGINT to KeyboardInterrupt");
  Py_XDECREF(done);
  Py_XDECREF(handler);
  Py_XDECREF(signal_module);
  cx__py_gil_release(gil);
  return ok;
}

void
cx__py_interrupt_main_thread(void)
{
  (void)PyErr_SetInterruptEx(SIGINT);
}

void
cx__py_discard_interrupt(void)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  if (PyErr_CheckSignals() < 0)
    PyErr_Clear();
  cx__py_gil_release(gil);
}

gboolean
cx__py_set_cwd_importable(gboolean importable, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *path = PySys_GetObject("path"); /* borrowed */
  PyObject *empty = PyUnicode_FromString("");
  gboolean ok = path != NULL && PyList_Check(path) && empty != NULL;
  /* Every "" entry out; then, if asked and not isolated, one first. */
  for (Py_ssize_t i = ok ? PyList_GET_SIZE(path) - 1 : -1; ok && i >= 0; i--) {
    int equal = PyObject_RichCompareBool(PyList_GET_ITEM(path, i), empty, Py_EQ);
    ok = equal >= 0 && (equal == 0 || PySequence_DelItem(path, i) == 0);
  }
  PyObject *flags = PySys_GetObject("flags"); /* borrowed */
  PyObject *isolated = ok && importable && flags != NULL
                         ? PyObject_GetAttrString(flags, "isolated") : NULL;
  if (ok && importable)
    ok = isolated != NULL && (PyObject_IsTrue(isolated) || PyList_Insert(path, 0, empty) == 0);
  Py_XDECREF(isolated);
  if (!ok)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot set sys.path");
  Py_XDECREF(empty);
  cx__py_gil_release(gil);
  return ok;
}

gboolean
cx__py_setenv(const char *name, const char *value, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *os = PyImport_ImportModule("os");
  PyObject *environ = os != NULL ? PyObject_GetAttrString(os, "environ") : NULL;
  PyObject *key = PyUnicode_DecodeFSDefault(name);
  PyObject *text = PyUnicode_DecodeFSDefault(value);
  /* os.environ's __setitem__ calls putenv() too. */
  gboolean ok = environ != NULL && key != NULL && text != NULL &&
                PyObject_SetItem(environ, key, text) == 0;
  if (!ok)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot set %s", name);
  Py_XDECREF(text);
  Py_XDECREF(key);
  Py_XDECREF(environ);
  Py_XDECREF(os);
  cx__py_gil_release(gil);
  return ok;
}
