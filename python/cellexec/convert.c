/* python/cellexec/convert.c: values between JSON (json-glib) and Python, and
 * result bundles as dicts. */
#include "pycx_internal.h"
#include "pyembed/convert.h"

#include <math.h>
#include <string.h>

/* ---- JSON <-> Python ------------------------------------------------------- */

/* Dict keys seen often (the bundle's, "output_type", "text/plain", ...) are
 * made once: a new str per key per result costs more than the rest of the
 * conversion.  With the GIL held; bounded, short keys only. */
#define KEY_CACHE_MAX 512
#define KEY_CACHE_KEY_MAX 64
static GHashTable *key_cache; /* char * -> PyObject * (interned), both owned */

/* A new reference to the str KEY. */
static PyObject *
key_object(const char *key)
{
  if (key_cache == NULL)
    key_cache = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  PyObject *cached = g_hash_table_lookup(key_cache, key);
  if (cached != NULL)
    return Py_NewRef(cached);
  PyObject *name = PyUnicode_DecodeUTF8(key, strlen(key), "replace");
  if (name != NULL && strlen(key) <= KEY_CACHE_KEY_MAX &&
      g_hash_table_size(key_cache) < KEY_CACHE_MAX) {
    PyUnicode_InternInPlace(&name);
    g_hash_table_insert(key_cache, g_strdup(key), Py_NewRef(name));
  }
  return name;
}

PyObject *
pycx_json_object_to_py(JsonObject *object)
{
  /* {"$ref": ID, "repr": TEXT}: a reference. */
  guint size = json_object_get_size(object);
  if ((size == 1 || size == 2) && json_object_has_member(object, "$ref") &&
      (size == 1 || json_object_has_member(object, "repr"))) {
    JsonNode *id = json_object_get_member(object, "$ref");
    if (JSON_NODE_HOLDS_VALUE(id) && json_node_get_value_type(id) == G_TYPE_INT64) {
      PyObject *py_id = PyLong_FromLongLong(json_node_get_int(id));
      const char *repr = size == 2 ? json_object_get_string_member_with_default(object, "repr", "") : "";
      PyObject *py_repr = PyUnicode_FromString(repr != NULL ? repr : "");
      PyObject *ref = py_id != NULL && py_repr != NULL ? pycx_ref_new_from(py_id, py_repr) : NULL;
      Py_XDECREF(py_id);
      Py_XDECREF(py_repr);
      return ref;
    }
  }
  PyObject *dict = PyDict_New();
  if (dict == NULL)
    return NULL;
  JsonObjectIter iter;
  const char *key;
  JsonNode *member;
  json_object_iter_init_ordered(&iter, object);
  while (json_object_iter_next_ordered(&iter, &key, &member)) {
    PyObject *name = key_object(key);
    PyObject *value = name != NULL ? pycx_json_to_py(member) : NULL;
    if (value == NULL || PyDict_SetItem(dict, name, value) < 0) {
      Py_XDECREF(name);
      Py_XDECREF(value);
      Py_DECREF(dict);
      return NULL;
    }
    Py_DECREF(name);
    Py_DECREF(value);
  }
  return dict;
}

static PyObject *
json_array_to_py(JsonArray *array)
{
  guint n = json_array_get_length(array);
  PyObject *list = PyList_New(n);
  for (guint i = 0; list != NULL && i < n; i++) {
    PyObject *item = pycx_json_to_py(json_array_get_element(array, i));
    if (item == NULL) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

/* A new Python value for NODE (NULL node: None). */
PyObject *
pycx_json_to_py(JsonNode *node)
{
  if (node == NULL)
    Py_RETURN_NONE;
  switch (JSON_NODE_TYPE(node)) {
  case JSON_NODE_NULL:
    Py_RETURN_NONE;
  case JSON_NODE_OBJECT:
    return pycx_json_object_to_py(json_node_get_object(node));
  case JSON_NODE_ARRAY:
    return json_array_to_py(json_node_get_array(node));
  case JSON_NODE_VALUE:
    break;
  }
  switch (json_node_get_value_type(node)) {
  case G_TYPE_INT64:
    return PyLong_FromLongLong(json_node_get_int(node));
  case G_TYPE_DOUBLE:
    return PyFloat_FromDouble(json_node_get_double(node));
  case G_TYPE_BOOLEAN:
    return PyBool_FromLong(json_node_get_boolean(node));
  case G_TYPE_STRING: {
    const char *text = json_node_get_string(node);
    return PyUnicode_DecodeUTF8(text, strlen(text), "replace");
  }
  default:
    Py_RETURN_NONE;
  }
}

/* A cellexec.Ref crosses as {"$ref": id, "repr": text}; nothing else
 * beyond the JSON types crosses. */
static JsonNode *
ref_to_json(PyObject *value)
{
  if (!PyObject_TypeCheck(value, &pycx_RefType)) {
    PyErr_Format(PyExc_TypeError,
                 "cannot pass a %.100s to a session: only None, bool, int, float, str, list, "
                 "tuple, dict with str keys and cellexec.Ref cross",
                 Py_TYPE(value)->tp_name);
    return NULL;
  }
  RefObject *ref = (RefObject *)value;
  long long id = PyLong_AsLongLong(ref->id);
  if (id == -1 && PyErr_Occurred())
    return NULL;
  const char *repr = PyUnicode_AsUTF8(ref->repr);
  if (repr == NULL)
    return NULL;
  JsonObject *object = json_object_new();
  json_object_set_int_member(object, "$ref", id);
  json_object_set_string_member(object, "repr", repr);
  JsonNode *node = json_node_init_object(json_node_alloc(), object);
  json_object_unref(object);
  return node;
}

/* A new node for VALUE, or NULL with a Python exception (TypeError or
 * ValueError) for a value that has no exact JSON form: pyembed's rules
 * (pyembed/convert.h), and cellexec.Ref. */
JsonNode *
pycx_py_to_json(PyObject *value)
{
  return cx__py_to_json_with(value, ref_to_json);
}

PyObject *
pycx_node_result(JsonNode *node, GError *error)
{
  if (error != NULL) {
    if (node != NULL)
      json_node_unref(node);
    return pycx_raise_gerror(error);
  }
  PyObject *value = pycx_json_to_py(node);
  if (node != NULL)
    json_node_unref(node);
  return value;
}

/* VALUE (None or a dict) as a new JsonObject in *OBJECT; FALSE with an exception. */
gboolean
pycx_py_to_json_object(PyObject *value, const char *what, JsonObject **object)
{
  *object = NULL;
  if (value == NULL || value == Py_None)
    return TRUE;
  if (!PyDict_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be a dict or None, not %.100s", what,
                 Py_TYPE(value)->tp_name);
    return FALSE;
  }
  JsonNode *node = pycx_py_to_json(value);
  if (node == NULL)
    return FALSE;
  *object = json_object_ref(json_node_get_object(node));
  json_node_unref(node);
  return TRUE;
}

/* ---- Result bundles -------------------------------------------------------- */

/* Cell output bytes as str, read exactly as cx_result_to_json() reads them. */
static PyObject *
text_from_bytes(const char *data, gsize len)
{
  if (g_utf8_validate_len(data, len, NULL))
    return PyUnicode_DecodeUTF8(data, (Py_ssize_t)len, NULL);
  char *valid = g_utf8_make_valid(data, (gssize)len);
  PyObject *text = PyUnicode_FromString(valid);
  g_free(valid);
  return text;
}

static int
set_item_steal(PyObject *dict, const char *key, PyObject *value)
{
  if (value == NULL)
    return -1;
  PyObject *name = key_object(key);
  int status = name != NULL ? PyDict_SetItem(dict, name, value) : -1;
  Py_XDECREF(name);
  Py_DECREF(value);
  return status;
}

/* The result bundle as a dict, with the keys cx_result_to_json() writes, in
 * its order. */
PyObject *
pycx_result_to_dict(const cx_result *result)
{
  gsize out_len, err_len;
  const char *out = cx_result_get_stdout(result, &out_len);
  const char *err = cx_result_get_stderr(result, &err_len);
  gboolean nul_in_error = cx_result_has_error(result) &&
                         (strstr(cx_result_get_error_message(result), CX_RESULT_NUL) != NULL ||
                          strstr(cx_result_get_error_traceback(result), CX_RESULT_NUL) != NULL);
  if (memchr(out, '\0', out_len) != NULL || memchr(err, '\0', err_len) != NULL || nul_in_error) {
    /* A JsonNode cannot hold NUL, nor a C string (CX_RESULT_NUL stands for
     * it in an error); the JSON text keeps it as \u0000. */
    g_autofree char *text = cx_result_to_json(result, FALSE);
    PyObject *json = PyImport_ImportModule("json");
    PyObject *dict = json != NULL ? PyObject_CallMethod(json, "loads", "s", text) : NULL;
    Py_XDECREF(json);
    return dict;
  }
  PyObject *dict = PyDict_New();
  if (dict == NULL)
    return NULL;
  if (set_item_steal(dict, "stdout", text_from_bytes(out, out_len)) < 0 ||
      set_item_steal(dict, "stderr", text_from_bytes(err, err_len)) < 0)
    goto fail;
  guint n = cx_result_get_n_outputs(result);
  PyObject *rich = PyList_New(n);
  for (guint i = 0; rich != NULL && i < n; i++) {
    PyObject *bundle = pycx_json_object_to_py(cx_result_get_output(result, i));
    if (bundle == NULL) {
      Py_CLEAR(rich);
      break;
    }
    PyList_SET_ITEM(rich, i, bundle);
  }
  if (set_item_steal(dict, "rich_outputs", rich) < 0 ||
      set_item_steal(dict, "success", PyBool_FromLong(cx_result_get_success(result))) < 0)
    goto fail;
  if (cx_result_has_error(result)) {
    PyObject *error = Py_BuildValue("{s:s,s:s,s:s}", "type", cx_result_get_error_type(result),
                                    "message", cx_result_get_error_message(result), "traceback",
                                    cx_result_get_error_traceback(result));
    if (set_item_steal(dict, "error", error) < 0)
      goto fail;
  } else if (set_item_steal(dict, "error", Py_NewRef(Py_None)) < 0) {
    goto fail;
  }
  JsonArray *outputs = cx_result_list_outputs(result);
  PyObject *py_outputs = json_array_to_py(outputs);
  json_array_unref(outputs);
  if (set_item_steal(dict, "outputs", py_outputs) < 0)
    goto fail;
  char **extras = cx_result_list_extras(result);
  for (char **key = extras; key != NULL && *key != NULL; key++) {
    if (set_item_steal(dict, *key, pycx_json_to_py(cx_result_get_extra(result, *key))) < 0) {
      g_strfreev(extras);
      goto fail;
    }
  }
  g_strfreev(extras);
  return dict;
fail:
  Py_DECREF(dict);
  return NULL;
}
