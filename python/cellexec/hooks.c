/* python/cellexec/hooks.c: ByThread, the host's or the cell's version of a hook
 * (input(), sys.stdin, exit()), for _host.py. */
#include "pycx_internal.h"

/* ByThread(in_cell, cell, host): calls, attributes, iteration and repr go to
 * CELL when in_cell() is true (the calling thread runs a cell), else to
 * HOST.  _host.py puts these where the local backend's runtime replaced
 * the host's input(), sys.stdin and exit() for the whole process.  Written
 * in C so that no frame of it shows in a cell's traceback. */
typedef struct {
  PyObject_HEAD
  PyObject *in_cell;
  PyObject *cell;
  PyObject *host;
} ByThreadObject;

static PyObject *
by_thread_target(ByThreadObject *self)
{
  PyObject *in_cell = PyObject_CallNoArgs(self->in_cell);
  if (in_cell == NULL)
    return NULL;
  int yes = PyObject_IsTrue(in_cell);
  Py_DECREF(in_cell);
  return yes < 0 ? NULL : Py_NewRef(yes ? self->cell : self->host);
}

static PyObject *
ByThread_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
  PyObject *in_cell, *cell, *host;
  if (!PyArg_ParseTuple(args, "OOO:ByThread", &in_cell, &cell, &host))
    return NULL;
  ByThreadObject *self = (ByThreadObject *)type->tp_alloc(type, 0);
  if (self != NULL) {
    self->in_cell = Py_NewRef(in_cell);
    self->cell = Py_NewRef(cell);
    self->host = Py_NewRef(host);
  }
  return (PyObject *)self;
}

static void
ByThread_dealloc(ByThreadObject *self)
{
  Py_XDECREF(self->in_cell);
  Py_XDECREF(self->cell);
  Py_XDECREF(self->host);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
ByThread_call(ByThreadObject *self, PyObject *args, PyObject *kwargs)
{
  PyObject *target = by_thread_target(self);
  PyObject *value = target != NULL ? PyObject_Call(target, args, kwargs) : NULL;
  Py_XDECREF(target);
  return value;
}

static PyObject *
ByThread_getattro(ByThreadObject *self, PyObject *name)
{
  PyObject *target = by_thread_target(self);
  PyObject *value = target != NULL ? PyObject_GetAttr(target, name) : NULL;
  Py_XDECREF(target);
  return value;
}

static int
ByThread_setattro(ByThreadObject *self, PyObject *name, PyObject *value)
{
  PyObject *target = by_thread_target(self);
  int status = target != NULL ? PyObject_SetAttr(target, name, value) : -1;
  Py_XDECREF(target);
  return status;
}

static PyObject *
ByThread_repr(ByThreadObject *self)
{
  PyObject *target = by_thread_target(self);
  PyObject *value = target != NULL ? PyObject_Repr(target) : NULL;
  Py_XDECREF(target);
  return value;
}

static PyObject *
ByThread_iter(ByThreadObject *self)
{
  PyObject *target = by_thread_target(self);
  PyObject *value = target != NULL ? PyObject_GetIter(target) : NULL;
  Py_XDECREF(target);
  return value;
}

static PyObject *
ByThread_iternext(ByThreadObject *self)
{
  PyObject *target = by_thread_target(self);
  PyObject *value = NULL;
  if (target != NULL && Py_TYPE(target)->tp_iternext != NULL)
    value = Py_TYPE(target)->tp_iternext(target);
  else if (target != NULL)
    PyErr_Format(PyExc_TypeError, "'%.100s' object is not an iterator", Py_TYPE(target)->tp_name);
  Py_XDECREF(target);
  return value;
}

PyTypeObject pycx_ByThreadType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec._cellexec.ByThread",
  .tp_basicsize = sizeof(ByThreadObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "ByThread(in_cell, cell, host)\n--\n\n"
            "CELL on a thread running a cell (in_cell() true), HOST elsewhere: calls,\n"
            "attributes, iteration and repr are forwarded to the one that applies.",
  .tp_new = ByThread_new,
  .tp_dealloc = (destructor)ByThread_dealloc,
  .tp_call = (ternaryfunc)ByThread_call,
  .tp_getattro = (getattrofunc)ByThread_getattro,
  .tp_setattro = (setattrofunc)ByThread_setattro,
  .tp_repr = (reprfunc)ByThread_repr,
  .tp_iter = (getiterfunc)ByThread_iter,
  .tp_iternext = (iternextfunc)ByThread_iternext,
};
