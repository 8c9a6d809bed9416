/* tests/fuzz/fuzz_convert.c: libFuzzer target for the executor's value
 * conversion (pyembed/convert.c, cx__py_to_json: Python values as JSON).
 * The input, read by ast.literal_eval, is any nesting of Python literals
 * (big ints, floats, strings with NUL or lone surrogates, bytes, sets,
 * tuples, dicts with any keys); the conversion must give a tree or a
 * Python exception, and a tree it gives must serialise. */
#include "config.h"

#include "pyembed/pyembed-private.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static PyObject *literal_eval;

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  if (literal_eval == NULL) {
    Py_InitializeEx(0);
    PyObject *ast = PyImport_ImportModule("ast");
    literal_eval = ast != NULL ? PyObject_GetAttrString(ast, "literal_eval") : NULL;
    Py_XDECREF(ast);
    if (literal_eval == NULL)
      __builtin_trap();
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject_CallMethod(sys, "setrecursionlimit", "i", 200);
    Py_XDECREF(sys);
  }
  PyObject *text = PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)size, "surrogatepass");
  PyObject *value = text != NULL ? PyObject_CallOneArg(literal_eval, text) : NULL;
  Py_XDECREF(text);
  if (value == NULL) {
    PyErr_Clear();
    return 0;
  }
  JsonNode *node = cx__py_to_json(value);
  Py_DECREF(value);
  if (node == NULL) {
    if (!PyErr_Occurred())
      __builtin_trap(); /* NULL must come with an exception */
    PyErr_Clear();
    return 0;
  }
  g_autofree char *json = json_to_string(node, FALSE);
  if (json == NULL)
    __builtin_trap();
  json_node_unref(node);
  return 0;
}
