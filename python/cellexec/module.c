/* python/cellexec/module.c: the module cellexec._cellexec: its functions
 * (registry, library_version) and PyInit__cellexec, which adds the types and
 * exceptions of the other files.  See pycx_internal.h for the whole. */
#include "pycx_internal.h"

/* "methods" as `cellexec plugins --json` gives it: {"sessions", "interrupt",
 * "query", "executor": [operations]}, or None for a faulty plugin. */
static PyObject *
plugin_methods(const cx_plugin_info *info)
{
  if (!cx_plugin_info_is_usable(info))
    Py_RETURN_NONE;
  static const char *const backend_methods[] = { "session_open", "session_run_cell",
                                                 "session_close", "interrupt", "query", NULL };
  const char *const *names = cx_plugin_info_get_optional_methods(info);
  PyObject *executor = PyList_New(0);
  for (const char *const *name = names; executor != NULL && *name != NULL; name++) {
    if (g_strv_contains(backend_methods, *name))
      continue;
    PyObject *op = PyUnicode_FromString(*name);
    if (op == NULL || PyList_Append(executor, op) < 0)
      Py_CLEAR(executor);
    Py_XDECREF(op);
  }
  if (executor == NULL)
    return NULL;
  return Py_BuildValue("{s:O,s:O,s:O,s:N}", "sessions",
                       g_strv_contains(names, "session_open") ? Py_True : Py_False, "interrupt",
                       g_strv_contains(names, "interrupt") ? Py_True : Py_False, "query",
                       g_strv_contains(names, "query") ? Py_True : Py_False, "executor", executor);
}

/* One registry entry, with the keys `cellexec plugins --json` gives it. */
static PyObject *
plugin_to_dict(const cx_plugin_info *info)
{
  guint major, minor;
  cx_plugin_info_get_abi(info, &major, &minor);
  g_autofree char *abi = major == 0 && minor == 0 ? NULL : g_strdup_printf("%u.%u", major, minor);
  const GError *why = cx_plugin_info_get_error(info);
  PyObject *options = PyList_New(0);
  const cx_option_spec *spec = cx_plugin_info_get_options(info);
  for (; options != NULL && spec != NULL && spec->name != NULL; spec++) {
    PyObject *option = Py_BuildValue("{s:s,s:s,s:z,s:s}", "name", spec->name, "type",
                                     cx_option_type_name(spec->type), "default",
                                     spec->default_value, "help", spec->help ? spec->help : "");
    if (option == NULL || PyList_Append(options, option) < 0)
      Py_CLEAR(options);
    Py_XDECREF(option);
  }
  if (options == NULL)
    return NULL;
  PyObject *methods = plugin_methods(info);
  PyObject *shadows = PyList_New(0);
  for (const char *const *path = cx_plugin_info_get_shadowed_paths(info);
       shadows != NULL && path != NULL && *path != NULL; path++) {
    PyObject *item = PyUnicode_DecodeFSDefault(*path);
    if (item == NULL || PyList_Append(shadows, item) < 0)
      Py_CLEAR(shadows);
    Py_XDECREF(item);
  }
  if (methods == NULL || shadows == NULL) {
    Py_DECREF(options);
    Py_XDECREF(methods);
    Py_XDECREF(shadows);
    return NULL;
  }
  return Py_BuildValue("{s:z,s:z,s:z,s:z,s:z,s:s,s:z,s:N,s:O,s:N,s:N}", "name",
                       cx_plugin_info_get_name(info), "version", cx_plugin_info_get_version(info),
                       "description", cx_plugin_info_get_description(info), "abi", abi, "path",
                       cx_plugin_info_get_path(info), "status", why == NULL ? "ok" : "faulty",
                       "reason", why != NULL ? why->message : NULL, "shadows", shadows,
                       "executor",
                       cx_plugin_info_has_executor(info) ? Py_True : Py_False, "methods", methods,
                       "options", options);
}

static PyObject *
module_registry(PyObject *module, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "config", NULL };
  PyObject *config = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:registry", keywords, &config))
    return NULL;
  g_autofree char *config_path = NULL;
  if (config != NULL && config != Py_None && (config_path = pycx_path_to_string(config)) == NULL)
    return NULL;
  GError *error = NULL;
  cx_config *loaded = NULL;
  cx_registry *registry = NULL;
  Py_BEGIN_ALLOW_THREADS
  if (config_path == NULL || (loaded = cx_config_load(config_path, &error)) != NULL)
    registry = cx_registry_new(loaded != NULL ? cx_config_get_plugin_path(loaded) : NULL);
  Py_END_ALLOW_THREADS
  if (registry == NULL)
    return pycx_raise_gerror(error);
  PyObject *dirs = PyList_New(0);
  for (const char *const *dir = cx_registry_get_search_path(registry);
       dirs != NULL && *dir != NULL; dir++) {
    PyObject *text = PyUnicode_DecodeFSDefault(*dir);
    if (text == NULL || PyList_Append(dirs, text) < 0)
      Py_CLEAR(dirs);
    Py_XDECREF(text);
  }
  PyObject *plugins = PyList_New(0);
  for (guint i = 0; plugins != NULL && i < cx_registry_get_n_plugins(registry); i++) {
    PyObject *plugin = plugin_to_dict(cx_registry_get_plugin(registry, i));
    if (plugin == NULL || PyList_Append(plugins, plugin) < 0)
      Py_CLEAR(plugins);
    Py_XDECREF(plugin);
  }
  cx_registry_unref(registry);
  if (loaded != NULL)
    cx_config_free(loaded);
  if (dirs == NULL || plugins == NULL) {
    Py_XDECREF(dirs);
    Py_XDECREF(plugins);
    return NULL;
  }
  return Py_BuildValue("{s:N,s:N}", "search_path", dirs, "plugins", plugins);
}

static PyObject *
module_version(PyObject *module, PyObject *unused)
{
  return PyUnicode_FromString(cx_version());
}

static PyMethodDef module_methods[] = {
  { "registry", (PyCFunction)(void (*)(void))module_registry, METH_VARARGS | METH_KEYWORDS,
    "registry(config=None)\n--\n\n{'search_path': [...], 'plugins': [...]}, as `cellexec plugins --json`\n"
    "prints it (with the plugin-path of CONFIG, when given)." },
  { "library_version", module_version, METH_NOARGS,
    "library_version()\n--\n\nThe version of libcellexec loaded." },
  { NULL }
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT,
  .m_name = "cellexec._cellexec",
  .m_doc = "The C half of the cellexec package: use `import cellexec`.",
  .m_size = -1,
  .m_methods = module_methods,
};

static int
add_type(PyObject *module, const char *name, PyTypeObject *type)
{
  if (PyType_Ready(type) < 0)
    return -1;
  if (PyModule_AddObjectRef(module, name, (PyObject *)type) < 0)
    return -1;
  return 0;
}

PyMODINIT_FUNC PyInit__cellexec(void);

PyMODINIT_FUNC
PyInit__cellexec(void)
{
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL)
    return NULL;
  if (add_type(module, "Ref", &pycx_RefType) < 0 ||
      add_type(module, "Backend", &pycx_BackendType) < 0 ||
      add_type(module, "Session", &pycx_SessionType) < 0 ||
      add_type(module, "Env", &pycx_EnvType) < 0 ||
      add_type(module, "ByThread", &pycx_ByThreadType) < 0)
    goto fail;
  if (pycx_errors_add(module) < 0)
    goto fail;
  if (PyModule_AddIntConstant(module, "ABI_MAJOR", CX_ABI_MAJOR) < 0 ||
      PyModule_AddIntConstant(module, "ABI_MINOR", CX_ABI_MINOR) < 0)
    goto fail;
  return module;
fail:
  Py_DECREF(module);
  return NULL;
}
