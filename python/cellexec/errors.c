/* python/cellexec/errors.c: the exceptions: cellexec.Error, PluginError and one
 * class per CX_ERROR_* code, and raising the one for a GError. */
#include "pycx_internal.h"

#include <string.h>

static PyObject *Error;       /* cellexec.Error, the base of the ones below */
static PyObject *PluginError; /* base of the plugin-loading errors */
static PyObject *PythonError; /* CX_ERROR_PYTHON: Python code of an executor step raised */

/* One class per CX_ERROR_* code, indexed by code. */
static const struct {
  const char *name;
  gboolean plugin; /* a subclass of PluginError */
  const char *doc;
} error_classes[] = {
  [CX_ERROR_FAILED] = { "FailedError", FALSE, "CX_ERROR_FAILED: a failure without a more precise code." },
  [CX_ERROR_NOT_FOUND] = { "NotFoundError", TRUE, "CX_ERROR_NOT_FOUND: no plugin of that name on the search path." },
  [CX_ERROR_PLUGIN_LOAD] = { "PluginLoadError", TRUE, "CX_ERROR_PLUGIN_LOAD: the plugin file could not be loaded." },
  [CX_ERROR_NO_ENTRY] = { "NoEntryError", TRUE, "CX_ERROR_NO_ENTRY: the file has no cellexec plugin entry." },
  [CX_ERROR_ABI_MISMATCH] = { "ABIMismatchError", TRUE, "CX_ERROR_ABI_MISMATCH: the plugin was built for another ABI." },
  [CX_ERROR_INVALID_PLUGIN] = { "InvalidPluginError", TRUE, "CX_ERROR_INVALID_PLUGIN: descriptor or vtable unusable." },
  [CX_ERROR_INIT_REFUSED] = { "InitRefusedError", TRUE, "CX_ERROR_INIT_REFUSED: the plugin declined to load." },
  [CX_ERROR_DUPLICATE] = { "DuplicateError", TRUE, "CX_ERROR_DUPLICATE: another plugin of that name came first." },
  [CX_ERROR_CONFIG] = { "ConfigError", FALSE, "CX_ERROR_CONFIG: the config file is unreadable or malformed." },
  [CX_ERROR_OPTION] = { "OptionError", FALSE, "CX_ERROR_OPTION: an unknown option, or a value of the wrong type." },
  [CX_ERROR_UNSUPPORTED] = { "UnsupportedError", FALSE, "CX_ERROR_UNSUPPORTED: the backend does not implement this operation." },
  [CX_ERROR_BACKEND] = { "BackendError", FALSE, "CX_ERROR_BACKEND: the backend could not run the request at all." },
  [CX_ERROR_JSON] = { "JSONError", FALSE, "CX_ERROR_JSON: malformed JSON, or JSON of the wrong shape." },
  [CX_ERROR_PYTHON] = { "PythonError", FALSE,
                        "CX_ERROR_PYTHON: Python code of an executor operation raised.\n\n"
                        "Attributes: type (the exception class name), message (str(exc)),\n"
                        "traceback (formatted), line (line of the step's code, 0 if unknown)." },
};
#define N_ERROR_CLASSES G_N_ELEMENTS(error_classes)
PyObject *pycx_error_types[N_ERROR_CLASSES];

/* Raise the exception for ERROR (consumed). */
PyObject *
pycx_raise_gerror(GError *error)
{
  PyObject *type = Error;
  if (error->domain == CX_ERROR && error->code >= 0 && (gsize)error->code < N_ERROR_CLASSES)
    type = pycx_error_types[error->code];
  PyObject *exc = PyObject_CallFunction(type, "s", error->message);
  if (exc != NULL) {
    PyObject *code = PyLong_FromLong(error->domain == CX_ERROR ? error->code : -1);
    if (code == NULL || PyObject_SetAttrString(exc, "code", code) < 0)
      PyErr_Clear();
    Py_XDECREF(code);
    const cx_python_error *python = cx_error_get_python(error);
    if (python != NULL) {
      PyObject *line = PyLong_FromLong(python->line);
      PyObject *values[] = {
        PyUnicode_DecodeUTF8(python->type ? python->type : "", strlen(python->type ? python->type : ""), "replace"),
        PyUnicode_DecodeUTF8(python->message ? python->message : "", strlen(python->message ? python->message : ""), "replace"),
        PyUnicode_DecodeUTF8(python->traceback ? python->traceback : "", strlen(python->traceback ? python->traceback : ""), "replace"),
        line,
      };
      static const char *const names[] = { "type", "message", "traceback", "line" };
      for (gsize i = 0; i < G_N_ELEMENTS(values); i++) {
        if (values[i] == NULL || PyObject_SetAttrString(exc, names[i], values[i]) < 0)
          PyErr_Clear();
        Py_XDECREF(values[i]);
      }
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
  }
  g_error_free(error);
  return NULL;
}

int
pycx_errors_add(PyObject *module)
{
  Error = PyErr_NewExceptionWithDoc(
    "cellexec.Error",
    "What cellexec raises when a backend could not do what was asked (never for a\n"
    "Python exception inside a cell: that is the result's error).  Attribute code:\n"
    "the CX_ERROR_* code.",
    NULL, NULL);
  if (Error == NULL || PyModule_AddObjectRef(module, "Error", Error) < 0)
    return -1;
  PluginError = PyErr_NewExceptionWithDoc(
    "cellexec.PluginError", "A plugin could not be found, loaded or used.", Error, NULL);
  if (PluginError == NULL || PyModule_AddObjectRef(module, "PluginError", PluginError) < 0)
    return -1;
  for (gsize i = 0; i < N_ERROR_CLASSES; i++) {
    g_autofree char *qualified = g_strdup_printf("cellexec.%s", error_classes[i].name);
    pycx_error_types[i] = PyErr_NewExceptionWithDoc(qualified, error_classes[i].doc,
                                                    error_classes[i].plugin ? PluginError : Error,
                                                    NULL);
    if (pycx_error_types[i] == NULL ||
        PyModule_AddObjectRef(module, error_classes[i].name, pycx_error_types[i]) < 0)
      return -1;
  }
  PythonError = pycx_error_types[CX_ERROR_PYTHON];
  return 0;
}
