/* pyembed/display.c: what a cell shows besides its streams, into the
 * cell's result: display_data, update_display_data, clear_output and the
 * value of the cell (execute_result).
 *
 * helper.py and ipython_shell.py decide what an object looks like (repr,
 * _repr_html_, IPython's formatters, binary data as base64); this file
 * filters a bundle by the run's allowed MIME types and hands it to the
 * result, which keeps outputs in order.  In a worker that streams its
 * cells' outputs (CX__PY_RUN_RECORD_EVENTS), they are recorded as events
 * for the host instead, which applies them to its own result.
 */
#include "config.h"

#include "pyembed/pyembed-private.h"

static JsonArray *recorded_events; /* under the GIL */

/* BUNDLE as a JSON object of the MIME types CELL's run allows; NULL with a
 * Python exception set when it is not a {str: data} dict of JSON values. */
static JsonObject *
bundle_to_json(cx__py_cell *cell, PyObject *bundle, gboolean filter)
{
  if (!PyDict_Check(bundle)) {
    PyErr_Format(PyExc_TypeError, "display data and metadata must be a dict {mime: data}, "
                 "not %.100s", Py_TYPE(bundle)->tp_name);
    return NULL;
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
      return NULL;
    }
    if (filter && !cx_run_options_mime_allowed(cell->run, mime))
      continue;
    JsonNode *data = cx__py_to_json(value);
    if (data == NULL)
      return NULL;
    json_object_set_member(object, mime, data);
  }
  return g_steal_pointer(&object);
}

static void
record_event(cx__py_cell *cell, JsonObject *event)
{
  gsize out_len, err_len;
  cx_result_get_stdout(cell->result, &out_len);
  cx_result_get_stderr(cell->result, &err_len);
  /* Where in the streams it happened: the host interleaves by these. */
  json_object_set_int_member(event, "stdout_at", (gint64)out_len);
  json_object_set_int_member(event, "stderr_at", (gint64)err_len);
  json_array_add_object_element(cx__py_events(), event);
}

/* Switches of stream recorded per cell at most: a cell alternating stdout
 * and stderr a million times must not hold a million events.  Past it, the
 * two streams keep their order only per streamer round. */
#define MAX_STREAM_SWITCHES 4096

void
cx__py_note_stream(cx__py_cell *cell, int fd)
{
  if (!cell->record_events || cell->last_stream == fd)
    return;
  if (cell->last_stream != 0 && cell->stream_switches++ < MAX_STREAM_SWITCHES) {
    /* Not sent as such: it tells the streamer to send what the other
     * stream wrote before this write. */
    JsonObject *mark = json_object_new();
    json_object_set_string_member(mark, "event", "mark");
    record_event(cell, mark);
  }
  cell->last_stream = fd;
}

gboolean
cx__py_publish(cx__py_cell *cell, cx__py_output_kind kind, PyObject *bundle,
               PyObject *metadata, const char *display_id)
{
  cx__py_fdcapture_deliver(cell); /* what reached fds 1 and 2 before comes first */
  g_autoptr(JsonObject) data = bundle_to_json(cell, bundle, TRUE);
  g_autoptr(JsonObject) meta = data != NULL && metadata != NULL && metadata != Py_None
                                 ? bundle_to_json(cell, metadata, FALSE) : NULL;
  if (data == NULL || (meta == NULL && metadata != NULL && metadata != Py_None))
    return FALSE;
  if (kind == CX__PY_UPDATE_DISPLAY && display_id == NULL) {
    PyErr_SetString(PyExc_TypeError, "display_id required for update_display");
    return FALSE;
  }

  if (cell->record_events) {
    static const char *const names[] = { "display", "update", "execute_result" };
    JsonObject *event = json_object_new();
    json_object_set_string_member(event, "event", names[kind]);
    json_object_set_object_member(event, "data", json_object_ref(data));
    if (meta != NULL)
      json_object_set_object_member(event, "metadata", json_object_ref(meta));
    if (display_id != NULL)
      json_object_set_string_member(event, "display_id", display_id);
    if (kind == CX__PY_EXECUTE_RESULT)
      json_object_set_int_member(event, "execution_count", cell->execution_count);
    record_event(cell, event);
    return TRUE;
  }
  switch (kind) {
  case CX__PY_DISPLAY:
    cx_result_add_display(cell->result, data, meta, display_id); /* {} alone adds nothing */
    break;
  case CX__PY_UPDATE_DISPLAY:
    cx_result_update_display(cell->result, display_id, data, meta);
    break;
  case CX__PY_EXECUTE_RESULT:
    cx_result_add_execute_result_with_id(cell->result, data, meta, cell->execution_count,
                                         display_id);
    break;
  }
  return TRUE;
}

void
cx__py_show_error(cx__py_cell *cell, const char *ename, const char *evalue,
                  const char *const *lines)
{
  cx__py_fdcapture_deliver(cell);
  if (cell->record_events) {
    JsonObject *event = json_object_new();
    json_object_set_string_member(event, "event", "error");
    json_object_set_string_member(event, "ename", ename);
    json_object_set_string_member(event, "evalue", evalue);
    JsonArray *array = json_array_new();
    for (const char *const *line = lines; *line != NULL; line++)
      json_array_add_string_element(array, *line);
    json_object_set_array_member(event, "traceback", array);
    record_event(cell, event);
  } else {
    cx_result_add_error_output_lines(cell->result, ename, evalue, lines);
  }
}

void
cx__py_clear_output(cx__py_cell *cell, gboolean wait)
{
  cx__py_fdcapture_deliver(cell);
  if (cell->record_events) {
    JsonObject *event = json_object_new();
    json_object_set_string_member(event, "event", "clear");
    json_object_set_boolean_member(event, "wait", wait);
    record_event(cell, event);
  } else {
    cx_result_clear_output(cell->result, wait);
  }
}

gboolean
cx__py_pass_message(cx__py_cell *cell, const char *msg_type, PyObject *content)
{
  g_autoptr(JsonNode) node = cx__py_to_json(content);
  if (node == NULL)
    return FALSE;
  if (!JSON_NODE_HOLDS_OBJECT(node)) {
    PyErr_SetString(PyExc_TypeError, "a message's content must be a dict");
    return FALSE;
  }
  cx__py_fdcapture_deliver(cell); /* in order with what the cell printed */
  if (cell->record_events) {
    JsonObject *event = json_object_new();
    json_object_set_string_member(event, "event", "message");
    json_object_set_string_member(event, "msg_type", msg_type);
    json_object_set_object_member(event, "content", json_object_ref(json_node_get_object(node)));
    record_event(cell, event);
  } else {
    cx_result_pass_message(cell->result, msg_type, json_node_get_object(node));
  }
  return TRUE;
}

void
cx__py_events_reset(void)
{
  g_clear_pointer(&recorded_events, json_array_unref);
  recorded_events = json_array_new();
}

JsonArray *
cx__py_events(void)
{
  if (recorded_events == NULL)
    recorded_events = json_array_new();
  return recorded_events;
}
