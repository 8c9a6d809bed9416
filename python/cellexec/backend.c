/* python/cellexec/backend.c: cellexec.Backend, an open plugin. */
#include "pycx_internal.h"

#include <string.h>

static cx_result *
backend_run_cell(void *handle, const char *code, const cx_run_options *run, GError **error)
{
  return cx_backend_run_cell(handle, code, run, error);
}

static gboolean
backend_interrupt(void *handle, GError **error)
{
  return cx_backend_interrupt(handle, error);
}

static void
backend_set_debug_exporter(void *handle, cx_debug_exporter *exporter)
{
  cx_backend_set_debug_exporter(handle, exporter);
}

static void
backend_destroy(HandleObject *self)
{
  cx_backend *backend = g_steal_pointer(&self->handle);
  cx_debug_exporter *exporter = g_steal_pointer(&self->exporter);
  Py_BEGIN_ALLOW_THREADS
  if (backend != NULL)
    cx_backend_free(backend);
  if (exporter != NULL)
    cx_debug_exporter_free(exporter);
  Py_END_ALLOW_THREADS
}

static const handle_class backend_class = {
  "cellexec.Backend", backend_run_cell, backend_interrupt, backend_set_debug_exporter,
  backend_destroy,
};

/* The [cellexec] debug-export of CONFIG, attached to SELF's backend. */
static gboolean
attach_config_exporter(BackendObject *self, cx_config *config, GError **error)
{
  const char *path = cx_config_get_debug_export(config);
  if (path == NULL)
    return TRUE;
  self->exporter = cx_debug_exporter_new_for_path(path, NULL, error);
  if (self->exporter == NULL)
    return FALSE;
  cx_backend_set_debug_exporter(self->handle, self->exporter);
  return TRUE;
}

/* Options of the Backend constructor as "KEY", "VALUE" text pairs. */
static GPtrArray *
options_to_pairs(PyObject *options)
{
  GPtrArray *pairs = g_ptr_array_new_with_free_func(g_free);
  if (options == NULL || options == Py_None)
    return pairs;
  PyObject *items = PyMapping_Items(options);
  if (items == NULL) {
    g_ptr_array_unref(pairs);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
    PyObject *key = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 0);
    PyObject *value = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1);
    PyObject *text;
    if (PyBool_Check(value))
      text = PyUnicode_FromString(value == Py_True ? "true" : "false");
    else if (PyDict_Check(value)) /* an env option: KEY=VALUE;... */
      text = NULL;
    else if (PyUnicode_Check(value) || PyLong_Check(value) || PyFloat_Check(value))
      text = PyObject_Str(value);
    else
      text = PyOS_FSPath(value);
    if (PyDict_Check(value)) {
      GString *env = g_string_new(NULL);
      PyObject *k, *v;
      Py_ssize_t position = 0;
      while (PyDict_Next(value, &position, &k, &v)) {
        PyObject *entry = PyUnicode_FromFormat("%S=%S", k, v);
        if (entry == NULL)
          break;
        g_string_append_printf(env, "%s%s", env->len ? ";" : "", PyUnicode_AsUTF8(entry));
        Py_DECREF(entry);
      }
      text = PyErr_Occurred() ? NULL : PyUnicode_FromString(env->str);
      g_string_free(env, TRUE);
    }
    const char *k_text = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    const char *v_text = text != NULL && PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : NULL;
    if (k_text == NULL || v_text == NULL) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "options must map str to str, bool, int, float or path");
      Py_XDECREF(text);
      Py_DECREF(items);
      g_ptr_array_unref(pairs);
      return NULL;
    }
    g_ptr_array_add(pairs, g_strdup(k_text));
    g_ptr_array_add(pairs, g_strdup(v_text));
    Py_DECREF(text);
  }
  Py_DECREF(items);
  return pairs;
}

/* Open NAME (NULL: the config's choice) with the config at CONFIG_PATH
 * (NULL: the usual lookup) and OPTIONS over the config's.  Without the GIL. */
static cx_backend *
open_backend(const char *name, const char *config_path, GPtrArray *pairs, cx_config **config_out,
             GError **error)
{
  g_autoptr(cx_config) config = cx_config_load(config_path, error);
  if (config == NULL)
    return NULL;
  if (name == NULL)
    name = cx_config_get_backend(config);
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (!cx_config_check_sections(config, registry, error))
    return NULL;
  const cx_plugin_info *info = cx_registry_lookup(registry, name, error);
  if (info == NULL)
    return NULL;
  if (!cx_plugin_info_is_usable(info)) {
    *error = g_error_copy(cx_plugin_info_get_error(info));
    return NULL;
  }
  cx_options *options = cx_config_get_backend_options(config, info, error);
  if (options == NULL)
    return NULL;
  for (guint i = 0; i + 1 < pairs->len; i += 2) {
    if (!cx_options_set(options, pairs->pdata[i], pairs->pdata[i + 1], error)) {
      cx_options_free(options);
      return NULL;
    }
  }
  cx_backend *backend = cx_backend_open(registry, name, options, error);
  if (backend != NULL)
    *config_out = g_steal_pointer(&config);
  return backend;
}

/* The local backend runs cells in this interpreter: its runtime starts now,
 * and cellexec._host keeps the host's input(), sys.stdin and exit() outside
 * cells (see _host.py). */
static int
adopt_local_runtime(BackendObject *self)
{
  PyObject *host = PyImport_ImportModule("cellexec._host");
  PyObject *done = host != NULL ? PyObject_CallMethod(host, "adopt", "O", self) : NULL;
  Py_XDECREF(host);
  Py_XDECREF(done);
  return done != NULL ? 0 : -1;
}

static int
Backend_init(BackendObject *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "name", "options", "config", NULL };
  const char *name = "local";
  PyObject *options = NULL, *config = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zOO:Backend", keywords, &name, &options,
                                   &config))
    return -1;
  self->klass = &backend_class;
  if (self->handle != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "Backend.__init__ called twice");
    return -1;
  }
  if (options != NULL && options != Py_None && !PyDict_Check(options) &&
      !PyObject_HasAttrString(options, "items")) {
    PyErr_SetString(PyExc_TypeError, "options must be a dict of backend options");
    return -1;
  }
  g_autofree char *config_path = NULL;
  if (config != NULL && config != Py_None && (config_path = pycx_path_to_string(config)) == NULL)
    return -1;
  GPtrArray *pairs = options_to_pairs(options);
  if (pairs == NULL)
    return -1;
  g_autofree char *backend_name = g_strdup(name);
  GError *error = NULL;
  cx_config *loaded = NULL;
  cx_backend *backend;
  Py_BEGIN_ALLOW_THREADS
  backend = open_backend(backend_name, config_path, pairs, &loaded, &error);
  Py_END_ALLOW_THREADS
  g_ptr_array_unref(pairs);
  if (backend == NULL) {
    pycx_raise_gerror(error);
    return -1;
  }
  self->handle = backend;
  gboolean ok = attach_config_exporter(self, loaded, &error);
  cx_config_free(loaded);
  if (!ok) {
    pycx_raise_gerror(error);
    return -1;
  }
  if (strcmp(cx_backend_get_name(backend), "local") == 0)
    return adopt_local_runtime(self);
  return 0;
}

static void
Backend_dealloc(BackendObject *self)
{
  backend_destroy((HandleObject *)self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Backend_query(BackendObject *self, PyObject *args)
{
  const char *what;
  if (!PyArg_ParseTuple(args, "s:query", &what))
    return NULL;
  cx_backend *backend = pycx_handle_enter((HandleObject *)self);
  if (backend == NULL)
    return NULL;
  GError *error = NULL;
  JsonNode *node;
  Py_BEGIN_ALLOW_THREADS
  node = cx_backend_query(backend, what, &error);
  Py_END_ALLOW_THREADS
  pycx_handle_leave((HandleObject *)self);
  return pycx_node_result(node, error);
}

static PyObject *
Backend_session(BackendObject *self, PyObject *unused)
{
  cx_backend *backend = pycx_handle_enter((HandleObject *)self);
  if (backend == NULL)
    return NULL;
  GError *error = NULL;
  cx_session *session;
  Py_BEGIN_ALLOW_THREADS
  session = cx_session_open(backend, &error);
  Py_END_ALLOW_THREADS
  pycx_handle_leave((HandleObject *)self);
  if (session == NULL)
    return pycx_raise_gerror(error);
  return (PyObject *)pycx_session_new(self, session);
}

static PyObject *
Backend_get_name(BackendObject *self, void *closure)
{
  if (self->handle == NULL)
    Py_RETURN_NONE;
  return PyUnicode_FromString(cx_backend_get_name(self->handle));
}

static PyObject *
Backend_get_has_executor(BackendObject *self, void *closure)
{
  if (self->handle == NULL)
    Py_RETURN_FALSE;
  return PyBool_FromLong(cx_plugin_info_has_executor(cx_backend_get_plugin(self->handle)));
}

static PyObject *
Backend_repr(BackendObject *self)
{
  if (self->handle == NULL)
    return PyUnicode_FromString("<cellexec.Backend (closed)>");
  return PyUnicode_FromFormat("<cellexec.Backend %s>", cx_backend_get_name(self->handle));
}

static PyMethodDef Backend_methods[] = {
  HANDLE_METHODS("Run CODE statelessly, in a fresh namespace (a new IPython session per call).",
                 "Release the backend (its open sessions keep it alive until they close)."),
  { "session", (PyCFunction)Backend_session, METH_NOARGS,
    "session($self)\n--\n\nA new Session: a namespace kept across cells.  Use it as a context\n"
    "manager, or close() it." },
  { "interrupt", (PyCFunction)pycx_Handle_interrupt, METH_NOARGS,
    "interrupt($self)\n--\n\nInterrupt the stateless cells running on this backend (KeyboardInterrupt)." },
  { "query", (PyCFunction)Backend_query, METH_VARARGS,
    "query($self, what)\n--\n\nThe backend's introspection (e.g. 'info'), as plain data." },
  { NULL }
};

static PyGetSetDef Backend_getset[] = {
  { "name", (getter)Backend_get_name, NULL, "The plugin's name, e.g. 'local'.", NULL },
  { "closed", (getter)pycx_Handle_get_closed, NULL, "True once close() was called.", NULL },
  { "has_executor", (getter)Backend_get_has_executor, NULL,
    "True when the plugin implements the executor operations.", NULL },
  { NULL }
};

PyTypeObject pycx_BackendType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.Backend",
  .tp_basicsize = sizeof(BackendObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "Backend(name='local', options=None, config=None)\n--\n\n"
            "An execution backend: the plugin NAME ('local', 'subprocess', 'fake', ...;\n"
            "None: the config's choice) opened with the config file CONFIG (None: the\n"
            "usual lookup: $CELLEXEC_CONFIG, ~/.config/cellexec/config,\n"
            "/etc/cellexec/config) and OPTIONS, a dict of backend options over the\n"
            "config's (e.g. {'timeout': 2.0, 'capture-fds': False}).  Raises\n"
            "cellexec.Error (ConfigError, OptionError, NotFoundError, ...) when it\n"
            "cannot be opened.  A context manager: leaving the with block closes it.\n\n"
            "The local backend runs cells in this interpreter, each in a fresh\n"
            "namespace; their output is captured and never reaches this process's\n"
            "sys.stdout.  The subprocess backend runs them in worker processes.",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)Backend_init,
  .tp_dealloc = (destructor)Backend_dealloc,
  .tp_repr = (reprfunc)Backend_repr,
  .tp_methods = Backend_methods,
  .tp_getset = Backend_getset,
};
