/* pyembed/executor.c: the C half of the executor operations.  The Python
 * half is executor.py (compiled in as a string).  Values from the host go
 * to it as JSON text, which Python's json reads exactly; its values come
 * back as plain Python data (references made already) that convert.c
 * turns into nodes, so json-glib's parser, which wraps integers beyond 64
 * bits and cuts strings at \u0000, never reads them. */
#include "config.h"

#include "pyembed/pyembed-private.h"
#include "pyembed/executor.h"
#include "pyembed/executor-py.h" /* cx__py_executor_source, from executor.py */

#define EXECUTOR_FILENAME "<cellexec-executor>"
#define EXECUTOR_MODULE "_cellexec_executor"

struct cx__py_executor {
  PyObject *state; /* executor.Executor */
};

typedef struct {
  GDestroyNotify destroy;
  gpointer data;
} host_data;

struct cx__py_env {
  PyObject *state;        /* executor.Env */
  GArray *host_data;      /* host_data, destroyed with the env */
  GPtrArray *capsules;    /* PyObject* capsules of its host functions (owned refs) */
};

/* A host function bound into Python: what its capsule holds (and frees).
 * FUNCTION becomes NULL when the env is freed: Python may keep the
 * function object longer than the host keeps USER_DATA. */
typedef struct {
  cx_host_function function;
  gpointer user_data;
} host_call;

static void
host_call_free(PyObject *capsule)
{
  g_free(PyCapsule_GetPointer(capsule, NULL));
}

static PyObject *module; /* _cellexec_executor; loaded once, with the GIL */

/* ---- Loading ----------------------------------------------------------------- */

static PyObject *
load_module(void)
{
  if (module != NULL)
    return module;
  PyObject *m = cx__py_load_module(cx__py_executor_source, EXECUTOR_FILENAME, EXECUTOR_MODULE);
  if (m != NULL)
    module = Py_NewRef(m);
  return module;
}

/* Call executor.NAME(ARGS); new reference, or NULL with an exception set. */
static PyObject *
call(const char *name, PyObject *const *args, size_t nargs)
{
  PyObject *m = load_module();
  PyObject *function = m != NULL ? PyObject_GetAttrString(m, name) : NULL;
  PyObject *result = function != NULL ? PyObject_Vectorcall(function, args, nargs, NULL) : NULL;
  Py_XDECREF(function);
  return result;
}

/* ---- Results ------------------------------------------------------------------ */

/* Unpack ("ok", payload) or ("error", type, message, traceback, line) from
 * OUTCOME (consumed).  Returns the payload (new reference, may be None) or
 * NULL with ERROR set. */
static PyObject *
unpack(PyObject *outcome, GError **error)
{
  if (outcome == NULL) {
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "the executor helper failed");
    return NULL;
  }
  PyObject *payload = NULL;
  const char *status = PyTuple_Check(outcome) && PyTuple_GET_SIZE(outcome) >= 2
                         ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(outcome, 0))
                         : NULL;
  if (status != NULL && g_str_equal(status, "ok")) {
    payload = Py_NewRef(PyTuple_GET_ITEM(outcome, 1));
  } else if (status != NULL && g_str_equal(status, "error") && PyTuple_GET_SIZE(outcome) == 5) {
    const char *type = PyUnicode_AsUTF8(PyTuple_GET_ITEM(outcome, 1));
    const char *message = PyUnicode_AsUTF8(PyTuple_GET_ITEM(outcome, 2));
    const char *traceback = PyUnicode_AsUTF8(PyTuple_GET_ITEM(outcome, 3));
    long line = PyLong_AsLong(PyTuple_GET_ITEM(outcome, 4));
    if (type != NULL && message != NULL && traceback != NULL)
      cx_set_python_error(error, type, message, traceback, (int)line);
    else
      cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot read a Python exception");
  } else {
    PyErr_Clear();
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the executor helper returned a bad outcome");
  }
  Py_DECREF(outcome);
  return payload;
}

/* PAYLOAD (plain data from executor.py, consumed) as a node. */
static JsonNode *
payload_to_json(PyObject *payload, GError **error)
{
  if (payload == NULL)
    return NULL;
  JsonNode *node = cx__py_to_json(payload);
  if (node == NULL)
    cx__py_error_from_python(error, CX_ERROR_JSON, "a value did not convert to JSON");
  Py_DECREF(payload);
  return node;
}

/* OBJECT as JSON text in a Python str, or None for NULL. */
static PyObject *
json_text(JsonObject *object)
{
  if (object == NULL)
    return Py_NewRef(Py_None);
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  return PyUnicode_FromString(text);
}

/* ---- Executors and environments ------------------------------------------------ */

cx__py_executor *
cx__py_executor_new(GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *state = call("new_executor", NULL, 0);
  if (state == NULL)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot start the executor");
  cx__py_gil_release(gil);
  if (state == NULL)
    return NULL;
  cx__py_executor *executor = g_new0(cx__py_executor, 1);
  executor->state = state;
  return executor;
}

void
cx__py_executor_free(cx__py_executor *executor)
{
  if (executor == NULL)
    return;
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { executor->state };
  PyObject *closed = call("close_executor", args, 1);
  if (closed == NULL)
    PyErr_Clear(); /* nothing to report to: the executor goes anyway */
  Py_XDECREF(closed);
  Py_DECREF(executor->state);
  cx__py_gil_release(gil);
  g_free(executor);
}

cx__py_env *
cx__py_env_new(cx__py_executor *executor, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { executor->state };
  PyObject *state = call("new_env", args, 1);
  if (state == NULL)
    cx__py_error_from_python(error, CX_ERROR_BACKEND, "cannot create an environment");
  cx__py_gil_release(gil);
  if (state == NULL)
    return NULL;
  cx__py_env *env = g_new0(cx__py_env, 1);
  env->state = state;
  env->host_data = g_array_new(FALSE, FALSE, sizeof(host_data));
  env->capsules = g_ptr_array_new();
  return env;
}

void
cx__py_env_free(cx__py_env *env)
{
  if (env == NULL)
    return;
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { env->state };
  PyObject *closed = call("close_env", args, 1);
  if (closed == NULL)
    PyErr_Clear(); /* nothing to report to: the env goes anyway */
  Py_XDECREF(closed);
  for (guint i = 0; i < env->capsules->len; i++) {
    PyObject *capsule = g_ptr_array_index(env->capsules, i);
    host_call *host = PyCapsule_GetPointer(capsule, NULL);
    host->function = NULL;
    Py_DECREF(capsule);
  }
  g_ptr_array_unref(env->capsules);
  Py_DECREF(env->state);
  cx__py_gil_release(gil);
  for (guint i = 0; i < env->host_data->len; i++) {
    host_data *d = &g_array_index(env->host_data, host_data, i);
    if (d->destroy != NULL)
      d->destroy(d->data);
  }
  g_array_unref(env->host_data);
  g_free(env);
}

gboolean
cx__py_env_execute(cx__py_env *env, const char *code, JsonObject *bindings,
                   int line_offset, const char *filename, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { env->state, PyUnicode_FromString(code), json_text(bindings),
                       PyLong_FromLong(line_offset), PyUnicode_FromString(filename) };
  PyObject *outcome = args[1] && args[2] && args[3] && args[4] ? call("execute", args, 5) : NULL;
  for (int i = 1; i < 5; i++)
    Py_XDECREF(args[i]);
  PyObject *payload = unpack(outcome, error);
  Py_XDECREF(payload);
  cx__py_gil_release(gil);
  return payload != NULL;
}

/* Call executor.NAME(env, code, json(object)) and return its JSON value. */
static JsonNode *
value_call(cx__py_env *env, const char *name, const char *code, JsonObject *object,
           gboolean with_object, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { env->state, PyUnicode_FromString(code), with_object ? json_text(object) : NULL };
  size_t nargs = with_object ? 3 : 2;
  PyObject *outcome = args[1] && (!with_object || args[2]) ? call(name, args, nargs) : NULL;
  Py_XDECREF(args[1]);
  Py_XDECREF(args[2]);
  JsonNode *value = payload_to_json(unpack(outcome, error), error);
  cx__py_gil_release(gil);
  return value;
}

JsonNode *
cx__py_env_evaluate_inline(cx__py_env *env, const char *code, JsonObject *locals,
                           GError **error)
{
  return value_call(env, "evaluate_inline", code, locals, TRUE, error);
}

JsonNode *
cx__py_env_execute_block(cx__py_env *env, const char *code, JsonObject *locals,
                         GError **error)
{
  return value_call(env, "execute_block", code, locals, TRUE, error);
}

JsonNode *
cx__py_env_evaluate_type_expression(cx__py_env *env, const char *code, GError **error)
{
  return value_call(env, "evaluate_type_expression", code, NULL, FALSE, error);
}

JsonObject *
cx__py_env_snapshot(cx__py_env *env, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  PyObject *args[] = { env->state };
  JsonNode *node = payload_to_json(unpack(call("snapshot", args, 1), error), error);
  cx__py_gil_release(gil);
  if (node == NULL)
    return NULL;
  JsonObject *object = JSON_NODE_HOLDS_OBJECT(node) ? json_object_ref(json_node_get_object(node)) : NULL;
  json_node_unref(node);
  return object;
}

/* ---- Host functions ------------------------------------------------------------------ */

/* The Python-callable side of a host function: ARG is the arguments as
 * plain data (a dict); returns the host's value as JSON text. */
static PyObject *
call_host(PyObject *capsule, PyObject *arg)
{
  host_call *host = PyCapsule_GetPointer(capsule, NULL);
  if (host != NULL && host->function == NULL) {
    PyErr_SetString(PyExc_RuntimeError,
                    "this host function was released with the environment it was made in");
    return NULL;
  }
  if (host == NULL)
    return NULL;
  if (!PyDict_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "host function arguments must be a dict");
    return NULL;
  }
  g_autoptr(JsonNode) arguments = cx__py_to_json(arg);
  if (arguments == NULL)
    return NULL;

  /* The host may take its time, or call back into Python: let other
   * threads run meanwhile. */
  g_autoptr(GError) error = NULL;
  JsonNode *value;
  Py_BEGIN_ALLOW_THREADS
  value = host->function(json_node_get_object(arguments), host->user_data, &error);
  Py_END_ALLOW_THREADS

  if (error != NULL) {
    if (value != NULL)
      json_node_unref(value);
    PyErr_SetString(PyExc_RuntimeError, error->message);
    return NULL;
  }
  if (value == NULL)
    return PyUnicode_FromString("null");
  g_autofree char *result = cx_json_to_string(value, FALSE);
  json_node_unref(value);
  return PyUnicode_FromString(result);
}

static PyMethodDef call_host_def = { "call_host", call_host, METH_O,
                                     "Call the host program's function with JSON arguments." };

gboolean
cx__py_env_bind_function(cx__py_env *env, const char *name, const char *const *params,
                         JsonObject *defaults, cx_host_function function, gpointer user_data,
                         GDestroyNotify destroy, GError **error)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  host_call *host = g_new0(host_call, 1);
  host->function = function;
  host->user_data = user_data;
  PyObject *capsule = PyCapsule_New(host, NULL, host_call_free);
  if (capsule == NULL)
    g_free(host);
  PyObject *callable = capsule != NULL ? PyCFunction_New(&call_host_def, capsule) : NULL;
  PyObject *param_list = PyList_New(0);
  for (const char *const *p = params; param_list != NULL && *p != NULL; p++) {
    PyObject *item = PyUnicode_FromString(*p);
    if (item == NULL || PyList_Append(param_list, item) != 0)
      Py_CLEAR(param_list);
    Py_XDECREF(item);
  }
  PyObject *args[] = { env->state, PyUnicode_FromString(name), param_list, json_text(defaults), callable };
  gboolean ready = capsule && callable && param_list && args[1] && args[3];
  PyObject *outcome = ready ? call("bind_function", args, 5) : NULL;
  for (int i = 1; i < 5; i++)
    Py_XDECREF(args[i]);
  PyObject *payload = unpack(outcome, error);
  Py_XDECREF(payload);
  if (capsule != NULL)
    g_ptr_array_add(env->capsules, capsule); /* the env keeps our reference */
  cx__py_gil_release(gil);

  if (payload == NULL) {
    if (destroy != NULL)
      destroy(user_data);
    return FALSE;
  }
  host_data caller = { destroy, user_data };
  g_array_append_val(env->host_data, caller);
  return TRUE;
}
