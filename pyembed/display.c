/* pyembed/display.c: MIME bundles into a cell's rich outputs.
 *
 * helper.py decides what an object looks like (repr, _repr_html_, ...,
 * binary data as base64); this file filters the bundle by the run's allowed
 * MIME types and appends it to the result, in the order display() was
 * called, the value of the last expression last.
 */
#include "config.h"

#include "pyembed/pyembed-private.h"

gboolean
cx__pyembed_add_bundle(cx__pyembed_cell *cell, PyObject *bundle)
{
  if (!PyDict_Check(bundle)) {
    PyErr_Format(PyExc_TypeError, "a display bundle must be a dict {mime: data}, not %.100s",
                 Py_TYPE(bundle)->tp_name);
    return FALSE;
  }
  g_autoptr(JsonObject) object = json_object_new();
  Py_ssize_t position = 0;
  PyObject *key, *value;
  while (PyDict_Next(bundle, &position, &key, &value)) {
    const char *mime = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (mime == NULL) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "MIME types must be str, not %.100s",
                     Py_TYPE(key)->tp_name);
      return FALSE;
    }
    if (!cx_run_options_mime_allowed(cell->run, mime))
      continue;
    JsonNode *data = cx__pyembed_to_json(value);
    if (data == NULL)
      return FALSE;
    json_object_set_member(object, mime, data);
  }
  cx_result_add_output(cell->result, object); /* an empty bundle adds nothing */
  return TRUE;
}
