/* pyembed/convert.c: Python values as JSON trees (pyembed/convert.h).
 * JSON-GLib keeps integers as gint64 (as a double, a big one would lose
 * digits) and its strings end at NUL: such values are refused. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "pyembed/convert.h"

/* VALUE (a str) as UTF-8 in a C string, or NULL with a Python exception. */
static const char *
utf8_without_nul(PyObject *value)
{
  Py_ssize_t size;
  const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size);
  if (utf8 != NULL && strlen(utf8) != (size_t)size) {
    PyErr_SetString(PyExc_ValueError,
                    "a str holding a NUL character has no JSON form here "
                    "(JSON-GLib strings end at NUL)");
    return NULL;
  }
  return utf8;
}

static JsonNode *
string_node(PyObject *value)
{
  const char *utf8 = utf8_without_nul(value);
  return utf8 != NULL ? json_node_init_string(json_node_alloc(), utf8) : NULL;
}

static JsonNode *
number_node(PyObject *value)
{
  if (PyLong_Check(value)) {
    int overflow;
    long long integer = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0) {
      PyErr_SetString(PyExc_ValueError,
                      "an int outside the 64-bit range has no JSON form here "
                      "(JSON-GLib keeps 64-bit integers)");
      return NULL;
    }
    if (integer == -1 && PyErr_Occurred())
      return NULL;
    return json_node_init_int(json_node_alloc(), integer);
  }
  double number = PyFloat_AsDouble(value);
  if (number == -1.0 && PyErr_Occurred())
    return NULL;
  if (!isfinite(number)) {
    PyErr_Format(PyExc_ValueError, "%R is not a JSON number", value);
    return NULL;
  }
  return json_node_init_double(json_node_alloc(), number);
}

static JsonNode *
array_node(PyObject *sequence, cx__py_json_other other)
{
  JsonArray *array = json_array_sized_new(PySequence_Fast_GET_SIZE(sequence));
  JsonNode *node = json_node_init_array(json_node_alloc(), array);
  json_array_unref(array);
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
    JsonNode *element = cx__py_to_json_with(PySequence_Fast_GET_ITEM(sequence, i), other);
    if (element == NULL) {
      json_node_unref(node);
      return NULL;
    }
    json_array_add_element(array, element);
  }
  return node;
}

static JsonNode *
object_node(PyObject *dict, cx__py_json_other other)
{
  JsonObject *object = json_object_new();
  JsonNode *node = json_node_init_object(json_node_alloc(), object);
  json_object_unref(object);
  Py_ssize_t position = 0;
  PyObject *key, *value;
  while (PyDict_Next(dict, &position, &key, &value)) {
    if (!PyUnicode_Check(key)) {
      PyErr_Format(PyExc_TypeError, "JSON object keys must be str, not %.100s",
                   Py_TYPE(key)->tp_name);
      json_node_unref(node);
      return NULL;
    }
    const char *name = utf8_without_nul(key);
    JsonNode *member = name != NULL ? cx__py_to_json_with(value, other) : NULL;
    if (member == NULL) {
      json_node_unref(node);
      return NULL;
    }
    json_object_set_member(object, name, member);
  }
  return node;
}

JsonNode *
cx__py_to_json_with(PyObject *value, cx__py_json_other other)
{
  if (value == Py_None)
    return json_node_init_null(json_node_alloc());
  if (PyBool_Check(value))
    return json_node_init_boolean(json_node_alloc(), value == Py_True);
  if (PyUnicode_Check(value))
    return string_node(value);
  if (PyLong_Check(value) || PyFloat_Check(value))
    return number_node(value);

  if (!PyList_Check(value) && !PyTuple_Check(value) && !PyDict_Check(value)) {
    if (other != NULL)
      return other(value);
    PyErr_Format(PyExc_TypeError, "Object of type %.100s is not JSON serializable",
                 Py_TYPE(value)->tp_name);
    return NULL;
  }
  if (Py_EnterRecursiveCall(" while converting a value to JSON"))
    return NULL;
  JsonNode *node;
  if (PyDict_Check(value)) {
    node = object_node(value, other);
  } else {
    PyObject *sequence = PySequence_Fast(value, "expected a sequence");
    node = sequence != NULL ? array_node(sequence, other) : NULL;
    Py_XDECREF(sequence);
  }
  Py_LeaveRecursiveCall();
  return node;
}

JsonNode *
cx__py_to_json(PyObject *value)
{
  return cx__py_to_json_with(value, NULL);
}
