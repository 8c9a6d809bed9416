/* python/cellexec/options.c: the run options of a run_cell call, and paths, from
 * Python arguments. */
#include "pycx_internal.h"

/* PATH (str, bytes or os.PathLike) as a new C string, or NULL with an exception. */
char *
pycx_path_to_string(PyObject *path)
{
  PyObject *bytes = NULL;
  if (!PyUnicode_FSConverter(path, &bytes))
    return NULL;
  char *text = g_strdup(PyBytes_AS_STRING(bytes));
  Py_DECREF(bytes);
  return text;
}

static gboolean
add_env(cx_run_options *run, PyObject *key, PyObject *value)
{
  PyObject *assignment = value != NULL ? PyUnicode_FromFormat("%S=%S", key, value)
                                       : PyObject_Str(key);
  const char *text = assignment != NULL ? PyUnicode_AsUTF8(assignment) : NULL;
  gboolean ok = text != NULL && cx_run_options_add_env(run, text);
  if (text != NULL && !ok)
    PyErr_Format(pycx_error_types[CX_ERROR_OPTION], "env entry %R is not KEY=VALUE with a KEY",
                 assignment);
  Py_XDECREF(assignment);
  return ok;
}

/* The run options of a run_cell call, or NULL with an exception. */
cx_run_options *
pycx_make_run_options(PyObject *timeout, PyObject *cwd, PyObject *env, PyObject *mime,
                      int use_subprocess)
{
  cx_run_options *run = cx_run_options_new();
  if (timeout == NULL && cwd == NULL && env == NULL && mime == NULL && !use_subprocess)
    return run; /* the common call: nothing to parse */
  if (timeout != NULL && timeout != Py_None) {
    double seconds = PyFloat_AsDouble(timeout);
    if (seconds == -1.0 && PyErr_Occurred())
      goto fail;
    GError *error = NULL;
    if (!cx_timeout_check(seconds, &error)) {
      pycx_raise_gerror(error);
      goto fail;
    }
    cx_run_options_set_timeout(run, seconds);
  }
  if (cwd != NULL && cwd != Py_None) {
    char *dir = pycx_path_to_string(cwd);
    if (dir == NULL)
      goto fail;
    cx_run_options_set_cwd(run, dir);
    g_free(dir);
  }
  if (env != NULL && env != Py_None) {
    if (PyDict_Check(env)) {
      PyObject *key, *value;
      Py_ssize_t position = 0;
      while (PyDict_Next(env, &position, &key, &value))
        if (!add_env(run, key, value))
          goto fail;
    } else {
      PyObject *items = PyMapping_Check(env) && PyObject_HasAttrString(env, "items")
                          ? PyMapping_Items(env) : PySequence_List(env);
      if (items == NULL)
        goto fail;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        gboolean ok = PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2
                        ? add_env(run, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1))
                        : add_env(run, item, NULL);
        if (!ok) {
          Py_DECREF(items);
          goto fail;
        }
      }
      Py_DECREF(items);
    }
  }
  if (mime != NULL && mime != Py_None) {
    PyObject *types = PyUnicode_Check(mime) ? PyTuple_Pack(1, mime) : PySequence_Tuple(mime);
    if (types == NULL)
      goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
      const char *type = PyUnicode_Check(PyTuple_GET_ITEM(types, i))
                           ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(types, i)) : NULL;
      if (type == NULL) {
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_TypeError, "mime must be a str or an iterable of str");
        Py_DECREF(types);
        goto fail;
      }
      cx_run_options_add_allowed_mime_type(run, type);
    }
    Py_DECREF(types);
  }
  cx_run_options_set_use_subprocess(run, use_subprocess != 0);
  return run;
fail:
  cx_run_options_free(run);
  return NULL;
}
