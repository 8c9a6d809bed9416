/* pyembed/convert.h: Python values as JSON trees, the one converter of
 * them (pyembed/convert.c), used by the embedded runtime and by the
 * Python binding (python/cellexec).  Internal: in the convenience library
 * pyembed/libcxpyconvert.la, which both link.
 *
 * The rules of json.dumps(allow_nan=False): None, bools, ints, floats,
 * strings, lists and tuples, dicts whose keys are strings.  A value
 * JSON-GLib cannot hold exactly is a ValueError, never an approximation:
 * an int outside the 64-bit range, a str holding NUL, NaN and the
 * infinities.
 */
#ifndef CX__PY_CONVERT_H
#define CX__PY_CONVERT_H

#include <Python.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* A value of none of the JSON types as a new node, or NULL with a Python
 * exception set: the caller's own types (the binding's cellexec.Ref). */
typedef JsonNode *(*cx__py_json_other)(PyObject *value);

/* VALUE as a new JSON node, or NULL with a Python exception (TypeError,
 * ValueError) for something JSON cannot hold.  cx__py_to_json_with() asks
 * OTHER (may be NULL: a TypeError naming the type) for a value, at any
 * depth, that is none of the JSON types. */
JsonNode *cx__py_to_json(PyObject *value);
JsonNode *cx__py_to_json_with(PyObject *value, cx__py_json_other other);

G_END_DECLS

#endif /* CX__PY_CONVERT_H */
