/* python/cellexec/session.c: cellexec.Session, a namespace kept across cells and
 * the home of executor environments. */
#include "pycx_internal.h"

static cx_result *
session_run_cell(void *handle, const char *code, const cx_run_options *run, GError **error)
{
  return cx_session_run_cell(handle, code, run, error);
}

static gboolean
session_interrupt(void *handle, GError **error)
{
  return cx_session_interrupt(handle, error);
}

static void
session_set_debug_exporter(void *handle, cx_debug_exporter *exporter)
{
  cx_session_set_debug_exporter(handle, exporter);
}

/* Close the C session: its environments first, as executor.h asks. */
static void
session_destroy(HandleObject *handle)
{
  SessionObject *self = (SessionObject *)handle;
  cx_session *session = g_steal_pointer(&self->handle);
  cx_debug_exporter *exporter = g_steal_pointer(&self->exporter);
  GPtrArray *envs = g_ptr_array_new();
  for (guint i = 0; self->envs != NULL && i < self->envs->len; i++) {
    EnvObject *env = self->envs->pdata[i];
    if (env->env != NULL)
      g_ptr_array_add(envs, g_steal_pointer(&env->env));
  }
  Py_BEGIN_ALLOW_THREADS
  for (guint i = 0; i < envs->len; i++)
    cx_env_free(envs->pdata[i]);
  if (session != NULL)
    cx_session_close(session);
  if (exporter != NULL)
    cx_debug_exporter_free(exporter);
  Py_END_ALLOW_THREADS
  g_ptr_array_unref(envs);
}

static const handle_class session_class = {
  "cellexec.Session", session_run_cell, session_interrupt, session_set_debug_exporter,
  session_destroy,
};

SessionObject *
pycx_session_new(BackendObject *backend, cx_session *session)
{
  SessionObject *object = PyObject_New(SessionObject, &pycx_SessionType);
  if (object == NULL) {
    Py_BEGIN_ALLOW_THREADS
    cx_session_close(session);
    Py_END_ALLOW_THREADS
    return NULL;
  }
  object->klass = &session_class;
  object->handle = session;
  object->exporter = NULL;
  object->users = 0;
  object->closing = FALSE;
  object->backend = (BackendObject *)Py_NewRef(backend);
  object->envs = g_ptr_array_new();
  return object;
}

static void
Session_dealloc(SessionObject *self)
{
  session_destroy((HandleObject *)self); /* no Env is left: each holds a reference */
  g_clear_pointer(&self->envs, g_ptr_array_unref);
  Py_CLEAR(self->backend);
  PyObject_Free(self);
}

cx_session *
pycx_session_enter(SessionObject *self)
{
  return pycx_handle_enter((HandleObject *)self);
}

void
pycx_session_leave(SessionObject *self)
{
  pycx_handle_leave((HandleObject *)self);
}

static PyObject *
Session_execute_prelude(SessionObject *self, PyObject *args)
{
  const char *code;
  if (!PyArg_ParseTuple(args, "s:execute_prelude", &code))
    return NULL;
  cx_session *session = pycx_session_enter(self);
  if (session == NULL)
    return NULL;
  GError *error = NULL;
  cx_env *env;
  Py_BEGIN_ALLOW_THREADS
  env = cx_session_execute_prelude(session, code, &error);
  Py_END_ALLOW_THREADS
  PyObject *object = env != NULL ? pycx_env_wrap(self, env) : pycx_raise_gerror(error);
  pycx_session_leave(self);
  return object;
}

static PyObject *
Session_execute_prelude_incremental(SessionObject *self, PyObject *args)
{
  PyObject *env_arg;
  const char *code;
  if (!PyArg_ParseTuple(args, "Os:execute_prelude_incremental", &env_arg, &code))
    return NULL;
  EnvObject *env = NULL;
  if (env_arg != Py_None) {
    if (!PyObject_TypeCheck(env_arg, &pycx_EnvType)) {
      PyErr_SetString(PyExc_TypeError, "env must be a cellexec.Env or None");
      return NULL;
    }
    env = (EnvObject *)env_arg;
    if (env->session != self) {
      PyErr_SetString(PyExc_ValueError, "this environment belongs to another session");
      return NULL;
    }
    if (env->env == NULL) {
      PyErr_SetString(PyExc_ValueError, "this cellexec.Env is closed");
      return NULL;
    }
  }
  cx_session *session = pycx_session_enter(self);
  if (session == NULL)
    return NULL;
  GError *error = NULL;
  cx_env *given = env != NULL ? env->env : NULL, *returned;
  if (env != NULL)
    env->users++;
  Py_BEGIN_ALLOW_THREADS
  returned = cx_session_execute_prelude_incremental(session, given, code, &error);
  Py_END_ALLOW_THREADS
  if (env != NULL)
    env->users--;
  PyObject *object;
  if (returned == NULL)
    object = pycx_raise_gerror(error);
  else if (env != NULL && returned == given)
    object = Py_NewRef(env);
  else
    object = pycx_env_wrap(self, returned);
  pycx_session_leave(self);
  return object;
}

static PyObject *
Session_get_backend(SessionObject *self, void *closure)
{
  return Py_NewRef(self->backend);
}

static PyMethodDef Session_methods[] = {
  HANDLE_METHODS("Run CODE in the session's namespace, kept across cells.  One cell at a\n"
                 "time: calls from several threads take turns.",
                 "Close the session and its environments (after a cell still running)."),
  { "interrupt", (PyCFunction)pycx_Handle_interrupt, METH_NOARGS,
    "interrupt($self)\n--\n\nInterrupt the session's running cell (KeyboardInterrupt in it)." },
  { "execute_prelude", (PyCFunction)Session_execute_prelude, METH_VARARGS,
    "execute_prelude($self, code)\n--\n\nA new Env: a namespace holding the globals CODE defines.\n"
    "Raises cellexec.PythonError when CODE raises." },
  { "execute_prelude_incremental", (PyCFunction)Session_execute_prelude_incremental, METH_VARARGS,
    "execute_prelude_incremental($self, env, code)\n--\n\nRun CODE in ENV, extending it, and return ENV\n"
    "(ENV None: a new Env)." },
  { NULL }
};

static PyGetSetDef Session_getset[] = {
  { "closed", (getter)pycx_Handle_get_closed, NULL, "True once close() was called.", NULL },
  { "backend", (getter)Session_get_backend, NULL, "The Backend the session was opened on.", NULL },
  { NULL }
};

PyTypeObject pycx_SessionType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.Session",
  .tp_basicsize = sizeof(SessionObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A namespace kept across cells, from Backend.session().  A context manager:\n"
            "leaving the with block closes it.  Also the home of executor environments\n"
            "(execute_prelude) and of debug exports.",
  .tp_dealloc = (destructor)Session_dealloc,
  .tp_methods = Session_methods,
  .tp_getset = Session_getset,
};
