/* pyembed/native.c: _cellexec_native, the C functions helper.py calls. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>

#include "pyembed/pyembed-private.h"

static PyObject *
native_in_cell(PyObject *module, PyObject *unused)
{
  return PyBool_FromLong(cx__py_in_cell());
}

/* publish_display(data, metadata, display_id, kind) -> bool: a
 * display_data, update_display_data or execute_result (KIND "display",
 * "update", "execute_result") of the running cell; False when no cell
 * runs. */
static PyObject *
native_publish_display(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
  static const char *const kinds[] = { "display", "update", "execute_result", NULL };
  const char *kind_name = nargs == 4 && PyUnicode_Check(args[3]) ? PyUnicode_AsUTF8(args[3]) : NULL;
  if (kind_name == NULL || !g_strv_contains(kinds, kind_name))
    return PyErr_Format(PyExc_TypeError, "publish_display(data, metadata, display_id, kind): "
                                         "kind is \"display\", \"update\" or \"execute_result\"");
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return Py_NewRef(Py_False);
  /* IPython's ids are str; any other id is named by its str(). */
  PyObject *id_text = args[2] != Py_None ? PyObject_Str(args[2]) : NULL;
  const char *display_id = id_text != NULL ? PyUnicode_AsUTF8(id_text) : NULL;
  if (args[2] != Py_None && display_id == NULL) {
    Py_XDECREF(id_text);
    return NULL; /* str() failed: its exception stands */
  }
  cx__py_output_kind kind = g_str_equal(kind_name, "update")           ? CX__PY_UPDATE_DISPLAY
                            : g_str_equal(kind_name, "execute_result") ? CX__PY_EXECUTE_RESULT
                                                                       : CX__PY_DISPLAY;
  gboolean ok = cx__py_publish(cell, kind, args[0], args[1], display_id);
  Py_XDECREF(id_text);
  return ok ? Py_NewRef(Py_True) : NULL;
}

/* show_error(ename, evalue, lines) -> bool: an error output of the
 * running cell that does not end it, its traceback the list of str LINES;
 * False when no cell runs. */
static PyObject *
native_show_error(PyObject *module, PyObject *args)
{
  const char *ename, *evalue;
  PyObject *list;
  if (!PyArg_ParseTuple(args, "ssO!:show_error", &ename, &evalue, &PyList_Type, &list))
    return NULL;
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return Py_NewRef(Py_False);
  GStrvBuilder *builder = g_strv_builder_new();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
    char *line = cx__py_utf8_keeping_nul(PyList_GET_ITEM(list, i)); /* NUL kept */
    if (line == NULL) {
      g_strv_builder_unref(builder);
      PyErr_Clear();
      return PyErr_Format(PyExc_TypeError, "show_error: the lines must be str");
    }
    g_strv_builder_add(builder, line);
    g_free(line);
  }
  g_auto(GStrv) lines = g_strv_builder_end(builder);
  g_strv_builder_unref(builder);
  cx__py_show_error(cell, ename, evalue, (const char *const *)lines);
  return Py_NewRef(Py_True);
}

/* pass_message(msg_type, content) -> bool: a Jupyter IOPub message that
 * is no output (a comm's) for the running cell's output callback; False
 * when no cell runs. */
static PyObject *
native_pass_message(PyObject *module, PyObject *args)
{
  const char *msg_type;
  PyObject *content;
  if (!PyArg_ParseTuple(args, "sO!:pass_message", &msg_type, &PyDict_Type, &content))
    return NULL;
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return Py_NewRef(Py_False);
  return cx__py_pass_message(cell, msg_type, content) ? Py_NewRef(Py_True) : NULL;
}

/* ask_input(prompt, password) -> str, or None when nothing answers the
 * running cell's input requests: its run options' input callback, called
 * without the GIL. */
static PyObject *
native_ask_input(PyObject *module, PyObject *args)
{
  const char *prompt;
  int password;
  if (!PyArg_ParseTuple(args, "sp:ask_input", &prompt, &password))
    return NULL;
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL || cell->run == NULL ||
      cx_run_options_get_input_callback(cell->run, NULL) == NULL)
    return Py_NewRef(Py_None);
  cx__py_fdcapture_deliver(cell); /* what the cell wrote comes before the prompt */
  GError *error = NULL;
  char *line;
  Py_BEGIN_ALLOW_THREADS
  line = cx_run_options_ask_input(cell->run, prompt, password, &error);
  Py_END_ALLOW_THREADS
  if (line == NULL) {
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    else
      PyErr_SetString(PyExc_EOFError, error->message);
    g_error_free(error);
    return NULL;
  }
  PyObject *value = PyUnicode_DecodeUTF8(line, (Py_ssize_t)strlen(line), "surrogateescape");
  g_free(line);
  return value;
}

static PyObject *
native_clear_output(PyObject *module, PyObject *wait)
{
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return Py_NewRef(Py_False);
  int truth = PyObject_IsTrue(wait);
  if (truth < 0)
    return NULL;
  cx__py_clear_output(cell, truth);
  return Py_NewRef(Py_True);
}

/* os.environ is a copy taken when Python started; the C environment may
 * have changed since, and the cell's env must be restored in both. */
static PyObject *
native_c_getenv(PyObject *module, PyObject *key)
{
  const char *name = PyUnicode_AsUTF8(key);
  if (name == NULL)
    return NULL;
  const char *value = getenv(name);
  return value != NULL ? PyUnicode_DecodeFSDefault(value) : Py_NewRef(Py_None);
}

static PyObject *
native_c_setenv(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
  if (nargs != 2 || !PyUnicode_Check(args[0]))
    return PyErr_Format(PyExc_TypeError, "c_setenv(key: str, value: str | None)");
  PyObject *name = PyUnicode_EncodeFSDefault(args[0]);
  if (name == NULL)
    return NULL;
  int failed;
  if (args[1] == Py_None) {
    failed = unsetenv(PyBytes_AS_STRING(name));
  } else {
    PyObject *value = PyUnicode_EncodeFSDefault(args[1]);
    if (value == NULL) {
      Py_DECREF(name);
      return NULL;
    }
    failed = setenv(PyBytes_AS_STRING(name), PyBytes_AS_STRING(value), 1);
    Py_DECREF(value);
  }
  Py_DECREF(name);
  if (failed)
    return PyErr_SetFromErrno(PyExc_OSError);
  return Py_NewRef(Py_None);
}

gboolean cx__py_shell_started;

/* shell_started(): IPython's shell exists now; cells end with its
 * post_execute and post_run_cell events from here on. */
static PyObject *
native_shell_started(PyObject *module, PyObject *unused)
{
  cx__py_shell_started = TRUE;
  return Py_NewRef(Py_None);
}

static PyMethodDef native_methods[] = {
  { "shell_started", native_shell_started, METH_NOARGS,
    "IPython's shell exists: cells end with its events from now on." },
  { "in_cell", native_in_cell, METH_NOARGS,
    "True when the calling thread is running a cell." },
  { "publish_display", (PyCFunction)(void (*)(void))native_publish_display, METH_FASTCALL,
    "publish_display(data, metadata, display_id, kind): show a MIME bundle in the "
    "running cell as kind \"display\" or \"execute_result\", or replace the one named "
    "display_id (\"update\"); False when no cell runs." },
  { "pass_message", native_pass_message, METH_VARARGS,
    "pass_message(msg_type, content): a comm's IOPub message for the running cell's "
    "output callback; False when no cell runs." },
  { "show_error", native_show_error, METH_VARARGS,
    "show_error(ename, evalue, lines): an error output of the running cell that "
    "does not end it; False when no cell runs." },
  { "ask_input", native_ask_input, METH_VARARGS,
    "ask_input(prompt, password): the line the running cell's input callback answers; "
    "None when it has none." },
  { "clear_output", native_clear_output, METH_O,
    "clear_output(wait): clear the running cell's outputs; False when no cell runs." },
  { "c_getenv", native_c_getenv, METH_O, "getenv(3)." },
  { "c_setenv", (PyCFunction)(void (*)(void))native_c_setenv, METH_FASTCALL,
    "setenv(3), or unsetenv(3) for a value of None." },
  { NULL }
};

static struct PyModuleDef native_module = {
  PyModuleDef_HEAD_INIT,
  .m_name = "_cellexec_native",
  .m_doc = "C side of cellexec's embedded runtime.",
  .m_size = -1,
  .m_methods = native_methods,
};

gboolean
cx__py_native_init(void)
{
  PyObject *module = PyModule_Create(&native_module);
  if (module == NULL)
    return FALSE;
  int failed = PyDict_SetItemString(PyImport_GetModuleDict(), native_module.m_name, module);
  Py_DECREF(module);
  return !failed;
}
