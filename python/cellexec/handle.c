/* python/cellexec/handle.c: what Backend and Session share: a C handle used by
 * several threads' calls, closed by the last of them, and the methods
 * run_cell, interrupt, debug_export, close and the context manager. */
#include "pycx_internal.h"

static char *run_cell_keywords[] = { "code", "timeout", "cwd", "env", "mime", "use_subprocess", NULL };
#define RUN_CELL_FORMAT "U|$OOOOp:run_cell"

/* CODE (a str) as the C string cx_session_run_cell() takes (new bytes),
 * each NUL as CX_RESULT_NUL, so that the cell fails as Python fails such
 * source instead of this call refusing the string; NULL with an exception
 * for a str that is not text (a lone surrogate). */
static PyObject *
code_bytes(PyObject *code)
{
  if (PyUnicode_FindChar(code, 0, 0, PyUnicode_GET_LENGTH(code), 1) < 0)
    return PyUnicode_AsUTF8String(code);
  PyObject *nul = PyUnicode_FromOrdinal(0);
  /* U+DCC0 U+DC80 encode as the bytes C0 80 under surrogateescape. */
  PyObject *marker = PyUnicode_DecodeUTF8(CX_RESULT_NUL, strlen(CX_RESULT_NUL), "surrogateescape");
  PyObject *marked =
    nul != NULL && marker != NULL ? PyUnicode_Replace(code, nul, marker, -1) : NULL;
  PyObject *bytes = marked != NULL ? PyUnicode_AsEncodedString(marked, "utf-8", "surrogateescape")
                                   : NULL;
  Py_XDECREF(nul);
  Py_XDECREF(marker);
  Py_XDECREF(marked);
  return bytes;
}

/* Take SELF's C handle for one call; NULL with an exception when closed. */
void *
pycx_handle_enter(HandleObject *self)
{
  if (self->handle == NULL || self->closing) {
    PyErr_Format(PyExc_ValueError, "this %s is closed", self->klass->type_name);
    return NULL;
  }
  self->users++;
  return self->handle;
}

void
pycx_handle_leave(HandleObject *self)
{
  if (--self->users == 0 && self->closing && self->handle != NULL)
    self->klass->destroy(self);
}

PyObject *
pycx_Handle_run_cell(HandleObject *self, PyObject *args, PyObject *kwargs)
{
  PyObject *code_text;
  PyObject *timeout = NULL, *cwd = NULL, *env = NULL, *mime = NULL;
  int use_subprocess = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, RUN_CELL_FORMAT, run_cell_keywords, &code_text,
                                   &timeout, &cwd, &env, &mime, &use_subprocess))
    return NULL;
  PyObject *code_object = code_bytes(code_text);
  if (code_object == NULL)
    return NULL;
  const char *code = PyBytes_AS_STRING(code_object);
  cx_run_options *run = pycx_make_run_options(timeout, cwd, env, mime, use_subprocess);
  if (run == NULL) {
    Py_DECREF(code_object);
    return NULL;
  }
  void *handle = pycx_handle_enter(self);
  if (handle == NULL) {
    cx_run_options_free(run);
    Py_DECREF(code_object);
    return NULL;
  }
  GError *error = NULL;
  cx_result *result;
  Py_BEGIN_ALLOW_THREADS
  result = self->klass->run_cell(handle, code, run, &error);
  cx_run_options_free(run);
  Py_END_ALLOW_THREADS
  Py_DECREF(code_object);
  pycx_handle_leave(self);
  if (result == NULL)
    return pycx_raise_gerror(error);
  PyObject *dict = pycx_result_to_dict(result);
  cx_result_free(result);
  return dict;
}

PyObject *
pycx_Handle_interrupt(HandleObject *self, PyObject *unused)
{
  void *handle = pycx_handle_enter(self);
  if (handle == NULL)
    return NULL;
  GError *error = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  ok = self->klass->interrupt(handle, &error);
  Py_END_ALLOW_THREADS
  pycx_handle_leave(self);
  if (!ok)
    return pycx_raise_gerror(error);
  Py_RETURN_NONE;
}

/* Options of debug_export(): REDACT (None: the defaults) and MAX_VALUE_BYTES. */
static cx_debug_exporter *
new_exporter(PyObject *path, PyObject *redact, Py_ssize_t max_value_bytes)
{
  g_autofree char *file = pycx_path_to_string(path);
  if (file == NULL)
    return NULL;
  g_autoptr(GPtrArray) patterns = NULL;
  cx_debug_export_options options = { .struct_size = sizeof options };
  if (max_value_bytes < 0) {
    PyErr_SetString(PyExc_ValueError, "max_value_bytes must not be negative");
    return NULL;
  }
  options.max_value_bytes = (gsize)max_value_bytes;
  if (redact != NULL && redact != Py_None) {
    PyObject *list = PySequence_List(redact);
    if (list == NULL)
      return NULL;
    patterns = g_ptr_array_new_with_free_func(g_free);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
      const char *pattern = PyUnicode_Check(PyList_GET_ITEM(list, i))
                              ? PyUnicode_AsUTF8(PyList_GET_ITEM(list, i)) : NULL;
      if (pattern == NULL) {
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_TypeError, "redact must be an iterable of str");
        Py_DECREF(list);
        return NULL;
      }
      g_ptr_array_add(patterns, g_strdup(pattern));
    }
    Py_DECREF(list);
    g_ptr_array_add(patterns, NULL);
    options.redact = (const char *const *)patterns->pdata;
  }
  GError *error = NULL;
  cx_debug_exporter *exporter;
  Py_BEGIN_ALLOW_THREADS
  exporter = cx_debug_exporter_new_for_path(file, &options, &error);
  Py_END_ALLOW_THREADS
  if (exporter == NULL)
    pycx_raise_gerror(error);
  return exporter;
}

static char *debug_export_keywords[] = { "path", "redact", "max_value_bytes", NULL };

PyObject *
pycx_Handle_debug_export(HandleObject *self, PyObject *args, PyObject *kwargs)
{
  PyObject *path, *redact = NULL;
  Py_ssize_t max_value_bytes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$On:debug_export", debug_export_keywords,
                                   &path, &redact, &max_value_bytes))
    return NULL;
  cx_debug_exporter *exporter = NULL;
  if (path != Py_None && (exporter = new_exporter(path, redact, max_value_bytes)) == NULL)
    return NULL;
  void *handle = pycx_handle_enter(self);
  if (handle == NULL) {
    if (exporter != NULL)
      cx_debug_exporter_free(exporter);
    return NULL;
  }
  cx_debug_exporter *old = self->exporter;
  self->exporter = exporter;
  Py_BEGIN_ALLOW_THREADS
  self->klass->set_debug_exporter(handle, exporter);
  if (old != NULL)
    cx_debug_exporter_free(old);
  Py_END_ALLOW_THREADS
  pycx_handle_leave(self);
  Py_RETURN_NONE;
}

PyObject *
pycx_Handle_close(HandleObject *self, PyObject *unused)
{
  if (self->handle != NULL && !self->closing) {
    self->closing = TRUE;
    self->users++;
    pycx_handle_leave(self); /* closes now, or when the last call using it returns */
  }
  Py_RETURN_NONE;
}

PyObject *
pycx_Handle_enter_context(HandleObject *self, PyObject *unused)
{
  if (pycx_handle_enter(self) == NULL)
    return NULL;
  self->users--;
  return Py_NewRef(self);
}

PyObject *
pycx_Handle_exit_context(HandleObject *self, PyObject *args)
{
  return pycx_Handle_close(self, NULL);
}

PyObject *
pycx_Handle_get_closed(HandleObject *self, void *closure)
{
  return PyBool_FromLong(self->handle == NULL || self->closing);
}
