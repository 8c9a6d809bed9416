/* python/cellexec/env.c: cellexec.Env, an executor environment, and the host
 * functions of create_dynamic_function. */
#include "pycx_internal.h"

/* A new Env for ENV (freed on failure) in SESSION. */
PyObject *
pycx_env_wrap(SessionObject *session, cx_env *env)
{
  EnvObject *object = PyObject_New(EnvObject, &pycx_EnvType);
  if (object == NULL) {
    Py_BEGIN_ALLOW_THREADS
    cx_env_free(env);
    Py_END_ALLOW_THREADS
    return NULL;
  }
  object->session = (SessionObject *)Py_NewRef(session);
  object->env = env;
  object->users = 0;
  g_ptr_array_add(session->envs, object);
  return (PyObject *)object;
}

/* ENV's C handle for one operation, with its session taken; NULL with an
 * exception when either is closed. */
static cx_env *
env_enter(EnvObject *self)
{
  if (self->env == NULL) {
    PyErr_SetString(PyExc_ValueError, "this cellexec.Env is closed");
    return NULL;
  }
  if (pycx_session_enter(self->session) == NULL)
    return NULL;
  self->users++;
  return self->env;
}

/* env_enter() for an operation taking the mapping argument VALUE (its
 * keyword WHAT), converted into *OBJECT (NULL for None; unreferenced when
 * NULL is returned). */
static cx_env *
env_enter_with(EnvObject *self, PyObject *value, const char *what, JsonObject **object)
{
  if (!pycx_py_to_json_object(value, what, object))
    return NULL;
  cx_env *env = env_enter(self);
  if (env == NULL && *object != NULL)
    g_clear_pointer(object, json_object_unref);
  return env;
}

static void
env_leave(EnvObject *self)
{
  self->users--;
  pycx_session_leave(self->session);
}

static void
Env_dealloc(EnvObject *self)
{
  g_ptr_array_remove(self->session->envs, self);
  cx_env *env = g_steal_pointer(&self->env);
  if (env != NULL) {
    Py_BEGIN_ALLOW_THREADS
    cx_env_free(env);
    Py_END_ALLOW_THREADS
  }
  Py_CLEAR(self->session);
  PyObject_Free(self);
}

static PyObject *
Env_close(EnvObject *self, PyObject *unused)
{
  if (self->env != NULL && self->users > 0) {
    PyErr_SetString(PyExc_RuntimeError, "this cellexec.Env is in use by another thread");
    return NULL;
  }
  cx_env *env = g_steal_pointer(&self->env);
  if (env != NULL) {
    Py_BEGIN_ALLOW_THREADS
    cx_env_free(env);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

typedef enum { EVALUATE_INLINE, EXECUTE_BLOCK } inline_kind;

static PyObject *
env_evaluate(EnvObject *self, PyObject *args, PyObject *kwargs, inline_kind kind)
{
  static char *keywords[] = { "code", "locals", NULL };
  const char *code;
  PyObject *locals = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                   kind == EVALUATE_INLINE ? "s|O:evaluate_inline"
                                                           : "s|O:execute_block",
                                   keywords, &code, &locals))
    return NULL;
  JsonObject *object;
  cx_env *env = env_enter_with(self, locals, "locals", &object);
  if (env == NULL)
    return NULL;
  GError *error = NULL;
  JsonNode *node;
  Py_BEGIN_ALLOW_THREADS
  node = kind == EVALUATE_INLINE ? cx_env_evaluate_inline(env, code, object, &error)
                                 : cx_env_execute_block(env, code, object, &error);
  if (object != NULL)
    json_object_unref(object);
  Py_END_ALLOW_THREADS
  env_leave(self);
  return pycx_node_result(node, error);
}

static PyObject *
Env_evaluate_inline(EnvObject *self, PyObject *args, PyObject *kwargs)
{
  return env_evaluate(self, args, kwargs, EVALUATE_INLINE);
}

static PyObject *
Env_execute_block(EnvObject *self, PyObject *args, PyObject *kwargs)
{
  return env_evaluate(self, args, kwargs, EXECUTE_BLOCK);
}

static PyObject *
Env_execute_side_effects(EnvObject *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "code", "bindings", "line_offset", NULL };
  const char *code;
  PyObject *bindings = NULL;
  int line_offset = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|Oi:execute_side_effects", keywords, &code,
                                   &bindings, &line_offset))
    return NULL;
  JsonObject *object;
  cx_env *env = env_enter_with(self, bindings, "bindings", &object);
  if (env == NULL)
    return NULL;
  GError *error = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  ok = cx_env_execute_side_effects(env, code, object, line_offset, &error);
  if (object != NULL)
    json_object_unref(object);
  Py_END_ALLOW_THREADS
  env_leave(self);
  if (!ok)
    return pycx_raise_gerror(error);
  Py_RETURN_NONE;
}

static PyObject *
Env_evaluate_type_expression(EnvObject *self, PyObject *args)
{
  const char *code;
  if (!PyArg_ParseTuple(args, "s:evaluate_type_expression", &code))
    return NULL;
  cx_env *env = env_enter(self);
  if (env == NULL)
    return NULL;
  GError *error = NULL;
  JsonNode *node;
  Py_BEGIN_ALLOW_THREADS
  node = cx_env_evaluate_type_expression(env, code, &error);
  Py_END_ALLOW_THREADS
  env_leave(self);
  return pycx_node_result(node, error);
}

static PyObject *
Env_snapshot(EnvObject *self, PyObject *unused)
{
  cx_env *env = env_enter(self);
  if (env == NULL)
    return NULL;
  GError *error = NULL;
  JsonObject *object;
  Py_BEGIN_ALLOW_THREADS
  object = cx_env_snapshot(env, &error);
  Py_END_ALLOW_THREADS
  env_leave(self);
  if (object == NULL)
    return pycx_raise_gerror(error);
  PyObject *value = pycx_json_object_to_py(object);
  json_object_unref(object);
  return value;
}

/* A host function: the Python callable, called with the arguments as
 * keywords.  Arrives without the GIL, on any thread. */
static JsonNode *
call_python(JsonObject *arguments, gpointer user_data, GError **error)
{
  PyGILState_STATE gil = PyGILState_Ensure();
  JsonNode *value = NULL;
  PyObject *kwargs = pycx_json_object_to_py(arguments);
  if (kwargs != NULL && !PyDict_Check(kwargs)) /* a {"$ref"} lookalike: pass it as it came */
    Py_CLEAR(kwargs);
  PyObject *args = kwargs != NULL ? PyTuple_New(0) : NULL;
  PyObject *returned = args != NULL ? PyObject_Call(user_data, args, kwargs) : NULL;
  if (returned != NULL) {
    value = pycx_py_to_json(returned);
    Py_DECREF(returned);
  }
  if (value == NULL) {
    /* The cell sees this as an exception (RuntimeError "TYPE: MESSAGE"). */
    PyObject *type, *exc, *traceback;
    PyErr_Fetch(&type, &exc, &traceback);
    PyErr_NormalizeException(&type, &exc, &traceback);
    PyObject *text = exc != NULL ? PyObject_Str(exc) : NULL;
    const char *message = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    if (message == NULL)
      PyErr_Clear();
    g_set_error(error, CX_ERROR, CX_ERROR_PYTHON, "%s: %s",
                type != NULL ? ((PyTypeObject *)type)->tp_name : "Error",
                message != NULL ? message : "");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(traceback);
  }
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  PyGILState_Release(gil);
  return value;
}

static void
release_callable(gpointer user_data)
{
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject *)user_data);
  PyGILState_Release(gil);
}

static PyObject *
Env_create_dynamic_function(EnvObject *self, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "name", "params", "defaults", "callable", NULL };
  const char *name;
  PyObject *params, *defaults, *callable;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOOO:create_dynamic_function", keywords, &name,
                                   &params, &defaults, &callable))
    return NULL;
  if (!PyCallable_Check(callable)) {
    PyErr_SetString(PyExc_TypeError, "callable must be callable");
    return NULL;
  }
  PyObject *list = PySequence_List(params);
  if (list == NULL)
    return NULL;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
    const char *param = PyUnicode_Check(PyList_GET_ITEM(list, i))
                          ? PyUnicode_AsUTF8(PyList_GET_ITEM(list, i)) : NULL;
    if (param == NULL) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "params must be an iterable of str");
      Py_DECREF(list);
      g_ptr_array_unref(names);
      return NULL;
    }
    g_ptr_array_add(names, g_strdup(param));
  }
  Py_DECREF(list);
  g_ptr_array_add(names, NULL);
  JsonObject *object;
  if (!pycx_py_to_json_object(defaults, "defaults", &object)) {
    g_ptr_array_unref(names);
    return NULL;
  }
  cx_env *env = env_enter(self);
  if (env == NULL) {
    g_ptr_array_unref(names);
    if (object != NULL)
      json_object_unref(object);
    return NULL;
  }
  Py_INCREF(callable); /* released by release_callable, exactly once */
  GError *error = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  ok = cx_env_create_dynamic_function(env, name, (const char *const *)names->pdata, object,
                                      call_python, callable, release_callable, &error);
  if (object != NULL)
    json_object_unref(object);
  Py_END_ALLOW_THREADS
  env_leave(self);
  g_ptr_array_unref(names);
  if (!ok)
    return pycx_raise_gerror(error);
  Py_RETURN_NONE;
}

static PyObject *
Env_enter(EnvObject *self, PyObject *unused)
{
  return Py_NewRef(self);
}

static PyObject *
Env_exit(EnvObject *self, PyObject *args)
{
  return Env_close(self, NULL);
}

static PyObject *
Env_get_closed(EnvObject *self, void *closure)
{
  return PyBool_FromLong(self->env == NULL);
}

static PyObject *
Env_get_session(EnvObject *self, void *closure)
{
  return Py_NewRef(self->session);
}

static PyMethodDef Env_methods[] = {
  { "evaluate_inline", (PyCFunction)(void (*)(void))Env_evaluate_inline, METH_VARARGS | METH_KEYWORDS,
    "evaluate_inline($self, code, locals=None)\n--\n\nThe value of the expression CODE, with LOCALS (a dict)\n"
    "visible.  Values with no exact JSON form come back as cellexec.Ref." },
  { "execute_block", (PyCFunction)(void (*)(void))Env_execute_block, METH_VARARGS | METH_KEYWORDS,
    "execute_block($self, code, locals=None)\n--\n\nCODE run as a function body: the value of its return\n"
    "(None without one).  Names of the Env it rebinds are written back." },
  { "execute_side_effects", (PyCFunction)(void (*)(void))Env_execute_side_effects,
    METH_VARARGS | METH_KEYWORDS,
    "execute_side_effects($self, code, bindings=None, line_offset=0)\n--\n\nCODE run for its effects on\n"
    "the Env with BINDINGS visible as globals; error line numbers shifted by LINE_OFFSET." },
  { "create_dynamic_function", (PyCFunction)(void (*)(void))Env_create_dynamic_function,
    METH_VARARGS | METH_KEYWORDS,
    "create_dynamic_function($self, name, params, defaults, callable)\n--\n\nBind NAME in the Env to a\n"
    "function with exactly the parameters PARAMS and DEFAULTS (a dict or None) that\n"
    "calls CALLABLE(**arguments) here, in the host.  CALLABLE returns a JSON value\n"
    "(or a Ref); an exception it raises is raised in the calling code as\n"
    "RuntimeError('TYPE: MESSAGE')." },
  { "evaluate_type_expression", (PyCFunction)Env_evaluate_type_expression, METH_VARARGS,
    "evaluate_type_expression($self, code)\n--\n\nA type descriptor for the type expression CODE, e.g.\n"
    "{'kind': 'union', 'args': [...]} for 'list[int] | None'." },
  { "snapshot", (PyCFunction)Env_snapshot, METH_NOARGS,
    "snapshot($self)\n--\n\nThe Env's contents as a dict (Refs for values with no JSON form)." },
  { "close", (PyCFunction)Env_close, METH_NOARGS,
    "close($self)\n--\n\nFree the environment (its session frees it when closed, too)." },
  { "__enter__", (PyCFunction)Env_enter, METH_NOARGS, NULL },
  { "__exit__", (PyCFunction)Env_exit, METH_VARARGS, NULL },
  { NULL }
};

static PyGetSetDef Env_getset[] = {
  { "closed", (getter)Env_get_closed, NULL, "True once freed (or its session closed).", NULL },
  { "session", (getter)Env_get_session, NULL, "The Session the Env lives in.", NULL },
  { NULL }
};

PyTypeObject pycx_EnvType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.Env",
  .tp_basicsize = sizeof(EnvObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "An executor environment: a Python namespace in a session (in this\n"
            "interpreter for 'local', in the session's worker for 'subprocess'), from\n"
            "Session.execute_prelude().  Values cross as JSON, or as cellexec.Ref.",
  .tp_dealloc = (destructor)Env_dealloc,
  .tp_methods = Env_methods,
  .tp_getset = Env_getset,
};
