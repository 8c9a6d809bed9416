/* python/cellexec/ref.c: cellexec.Ref, a Python object that stays in a session. */
#include "pycx_internal.h"

#include <structmember.h>

PyObject *
pycx_ref_new_from(PyObject *id, PyObject *repr)
{
  RefObject *self = PyObject_New(RefObject, &pycx_RefType);
  if (self == NULL)
    return NULL;
  self->id = Py_NewRef(id);
  self->repr = Py_NewRef(repr);
  return (PyObject *)self;
}

static PyObject *
Ref_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
  static char *keywords[] = { "id", "repr", NULL };
  PyObject *id, *repr = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|U:Ref", keywords, &PyLong_Type, &id, &repr))
    return NULL;
  RefObject *self = (RefObject *)type->tp_alloc(type, 0);
  if (self == NULL)
    return NULL;
  self->id = Py_NewRef(id);
  self->repr = repr != NULL ? Py_NewRef(repr) : PyUnicode_FromString("");
  if (self->repr == NULL) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void
Ref_dealloc(RefObject *self)
{
  Py_XDECREF(self->id);
  Py_XDECREF(self->repr);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Ref_repr(RefObject *self)
{
  return PyUnicode_FromFormat("<cellexec.Ref %S: %U>", self->id, self->repr);
}

static PyObject *
Ref_richcompare(PyObject *a, PyObject *b, int op)
{
  if (!PyObject_TypeCheck(b, &pycx_RefType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  return PyObject_RichCompare(((RefObject *)a)->id, ((RefObject *)b)->id, op);
}

static Py_hash_t
Ref_hash(RefObject *self)
{
  return PyObject_Hash(self->id);
}

static PyMemberDef Ref_members[] = {
  { "id", T_OBJECT, offsetof(RefObject, id), READONLY, "The reference's number in its session." },
  { "repr", T_OBJECT, offsetof(RefObject, repr), READONLY, "repr() of the object, as the session gave it." },
  { NULL }
};

PyTypeObject pycx_RefType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.Ref",
  .tp_basicsize = sizeof(RefObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Ref(id, repr='')\n--\n\n"
            "A Python object that stays in a session: what an executor operation\n"
            "returns for a value JSON cannot hold exactly.  Pass it back (as a value,\n"
            "or inside lists and dicts) in later calls on the same session to mean\n"
            "that object again.",
  .tp_new = Ref_new,
  .tp_dealloc = (destructor)Ref_dealloc,
  .tp_repr = (reprfunc)Ref_repr,
  .tp_richcompare = Ref_richcompare,
  .tp_hash = (hashfunc)Ref_hash,
  .tp_members = Ref_members,
};
