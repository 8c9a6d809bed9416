/* The result bundle of one cell: building it, reading it, JSON out and
 * copies (JSON in: result_json.c; the MIME filter: result_mime.c). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "lib/result_private.h"

/* Keys cx_result_set_extra() refuses: the five standard ones, and the
 * ordered outputs the core builds itself. */
static const char *const reserved_keys[] = {
  "stdout", "stderr", "rich_outputs", "success", "error", "outputs", NULL
};

gboolean
cx__result_key_is_reserved(const char *key)
{
  return g_strv_contains(reserved_keys, key);
}

static void
output_item_free(output_item *item)
{
  if (item->text != NULL)
    g_string_free(item->text, TRUE);
  g_clear_pointer(&item->data, json_object_unref);
  g_clear_pointer(&item->metadata, json_object_unref);
  g_free(item->display_id);
  g_free(item->ename);
  g_free(item->evalue);
  g_strfreev(item->traceback);
  g_free(item);
}

cx_result *
cx_result_new(void)
{
  cx_result *result = g_new0(cx_result, 1);
  result->out = g_string_new(NULL);
  result->err = g_string_new(NULL);
  result->items = g_ptr_array_new_with_free_func((GDestroyNotify)output_item_free);
  result->outputs = g_ptr_array_new();
  result->success = TRUE;
  result->extras = json_object_new();
  return result;
}

cx_result *
cx_result_new_streaming(const cx_run_options *run)
{
  cx_result *result = cx_result_new();
  if (run == NULL || cx_run_options_get_output_callback(run, NULL) == NULL)
    return result;
  result->listener_run = cx_run_options_copy(run);
  result->streamed = TRUE;
  return result;
}

void
cx_result_set_streamed(cx_result *result)
{
  g_return_if_fail(result != NULL);
  result->streamed = TRUE;
}

/* Whether the output callback wants a NUL as CX_RESULT_NUL, not U+FFFD. */
static gboolean
listener_keeps_nul(const cx_result *result)
{
  return cx_run_options_get_output_keeps_nul(result->listener_run);
}

/* Give OUTPUT (taken) to the output callback, if there is one. */
static void
emit(cx_result *result, JsonObject *output)
{
  if (result->listener_run != NULL)
    cx_run_options_emit_output(result->listener_run, output);
  json_object_unref(output);
}

/* Cell output is bytes; JSON strings are UTF-8 (and, in a JsonNode, have no
 * NUL unless KEEP_NUL marks them for cx_json_to_string). */
static void
set_text_member(JsonObject *object, const char *key, const char *data, gsize len,
                gboolean keep_nul)
{
  if (memchr(data, '\0', len) == NULL && g_utf8_validate_len(data, len, NULL)) {
    json_object_set_string_member(object, key, data);
  } else {
    g_autofree char *valid = cx__json_text_from_bytes(data, len, keep_nul);
    json_object_set_string_member(object, key, valid);
  }
}

/* A stream output: LEN bytes of DATA written to STREAM (1: stdout, 2: stderr). */
static JsonObject *
stream_output(int stream, const char *data, gsize len, gboolean keep_nul)
{
  JsonObject *output = json_object_new();
  json_object_set_string_member(output, "output_type", "stream");
  json_object_set_string_member(output, "name", stream == 1 ? "stdout" : "stderr");
  set_text_member(output, "text", data, len, keep_nul);
  return output;
}

/* The lines of TRACEBACK, as an error output lists them (a new vector). */
char **
cx__result_traceback_lines(const char *traceback)
{
  char **split = g_strsplit(traceback != NULL ? traceback : "", "\n", -1);
  guint n = g_strv_length(split);
  if (n > 0 && split[n - 1][0] == '\0') {
    g_free(split[n - 1]); /* the text ends with a line break */
    split[n - 1] = NULL;
  }
  return split;
}

gboolean
cx__result_text_is_valid(const char *text, gboolean nul_marker)
{
  if (!nul_marker || strstr(text, CX_RESULT_NUL) == NULL)
    return g_utf8_validate(text, -1, NULL);
  g_auto(GStrv) parts = g_strsplit(text, CX_RESULT_NUL, -1);
  for (char **part = parts; *part != NULL; part++)
    if (!g_utf8_validate(*part, -1, NULL))
      return FALSE;
  return TRUE;
}

/* A copy of LINES when every line is UTF-8 text (CX_RESULT_NUL standing
 * for a NUL, which error_output() writes as the other error texts), else
 * NULL. */
static char **
output_lines_copy(const char *const *lines)
{
  if (lines == NULL)
    return NULL;
  for (const char *const *line = lines; *line != NULL; line++)
    if (!cx__result_text_is_valid(*line, TRUE))
      return NULL;
  return g_strdupv((char **)lines);
}

/* TEXT of an error (NUL as CX_RESULT_NUL) for a JsonNode: as it is when
 * KEEP_NUL (cx_json_to_string writes the marker as \u0000), else with each
 * NUL as U+FFFD, as set_text_member() does.  A new string. */
char *
cx__result_error_text(const char *text, gboolean keep_nul)
{
  if (keep_nul || strstr(text, CX_RESULT_NUL) == NULL)
    return g_strdup(text);
  g_auto(GStrv) parts = g_strsplit(text, CX_RESULT_NUL, -1);
  return g_strjoinv("\xef\xbf\xbd", parts);
}

/* An error output; its traceback LINES, or else the lines of TRACEBACK. */
static JsonObject *
error_output(const char *ename, const char *evalue, const char *const *lines,
             const char *traceback, gboolean keep_nul)
{
  g_autofree char *value = cx__result_error_text(evalue, keep_nul);
  g_auto(GStrv) split = NULL;
  if (lines == NULL) {
    g_autofree char *text = cx__result_error_text(traceback, keep_nul);
    lines = (const char *const *)(split = cx__result_traceback_lines(text));
  }
  JsonArray *array = json_array_new();
  for (const char *const *line = lines; *line != NULL; line++) {
    /* A shown error's lines come from a text that may hold the NUL marker. */
    g_autofree char *text = cx__result_error_text(*line, keep_nul);
    json_array_add_string_element(array, text);
  }
  JsonObject *error = json_object_new();
  json_object_set_string_member(error, "output_type", "error");
  json_object_set_string_member(error, "ename", ename);
  json_object_set_string_member(error, "evalue", value);
  json_object_set_array_member(error, "traceback", array);
  return error;
}

/* The output of the cell's failure, or NULL when it has none. */
static JsonObject *
failure_output(const cx_result *result, gboolean keep_nul)
{
  if (result->error_type == NULL || result->error_output_hidden)
    return NULL;
  return error_output(result->error_type, result->error_message,
                      (const char *const *)result->error_output_lines, result->error_traceback,
                      keep_nul);
}

/* One entry of the ordered outputs as an nbformat output object. */
static JsonObject *
item_to_output(const output_item *item, gboolean keep_nul)
{
  if (item->kind == ITEM_SHOWN_ERROR)
    return error_output(item->ename, item->evalue, (const char *const *)item->traceback, NULL,
                        keep_nul);
  if (item->kind == ITEM_STREAM)
    return stream_output(item->stream, item->text->str, item->text->len, keep_nul);
  JsonObject *output = json_object_new();
  switch (item->kind) {
  case ITEM_EXECUTE_RESULT:
    json_object_set_string_member(output, "output_type", "execute_result");
    json_object_set_int_member(output, "execution_count", item->execution_count);
    break;
  case ITEM_DISPLAY:
    json_object_set_string_member(output, "output_type", "display_data");
    break;
  case ITEM_STREAM:
  case ITEM_SHOWN_ERROR:
    g_assert_not_reached();
  }
  /* Bundles are never modified once added, so the document shares them. */
  if (item->data != NULL) {
    json_object_set_object_member(output, "data", json_object_ref(item->data));
    json_object_set_object_member(output, "metadata", json_object_ref(item->metadata));
  }
  return output;
}

static void
clear_error(cx_result *result)
{
  g_clear_pointer(&result->error_type, g_free);
  g_clear_pointer(&result->error_message, g_free);
  g_clear_pointer(&result->error_traceback, g_free);
  g_clear_pointer(&result->error_output_lines, g_strfreev);
  result->error_output_hidden = FALSE;
}

void
cx_result_free(cx_result *result)
{
  if (result == NULL)
    return;
  g_string_free(result->out, TRUE);
  g_string_free(result->err, TRUE);
  g_ptr_array_unref(result->outputs);
  g_ptr_array_unref(result->items);
  clear_error(result);
  json_object_unref(result->extras);
  g_clear_pointer(&result->display_updates, json_array_unref);
  cx_run_options_free(result->listener_run);
  g_free(result);
}

/* What clear_output(wait=False) does to what the result holds. */
static void
clear_now(cx_result *result)
{
  result->clear_pending = FALSE;
  g_string_truncate(result->out, 0);
  g_string_truncate(result->err, 0);
  g_ptr_array_set_size(result->outputs, 0);
  g_ptr_array_set_size(result->items, 0);
}

/* Before any output: a clear_output(wait=True) waiting for it happens now
 * (a streaming consumer was told when it was asked for). */
static void
output_arrives(cx_result *result)
{
  if (result->clear_pending)
    clear_now(result);
}

/* Past this many outputs, a write that switches stream joins the output
 * of its stream just before the last one: a cell alternating stdout and
 * stderr a million times keeps a bounded list (the two streams' order is
 * then approximate there, as a kernel's buffering makes it anyway). */
#define MAX_INTERLEAVED_ITEMS 10000

void
cx__result_append_stream(cx_result *result, int stream, const char *data, gsize len)
{
  if (len == 0)
    return;
  output_arrives(result);
  g_string_append_len(stream == 1 ? result->out : result->err, data, len);
  guint n = result->items->len;
  output_item *last = n > 0 ? g_ptr_array_index(result->items, n - 1) : NULL;
  if (n >= MAX_INTERLEAVED_ITEMS && last != NULL && last->kind == ITEM_STREAM &&
      last->stream != stream) {
    output_item *before = g_ptr_array_index(result->items, n - 2);
    if (before->kind == ITEM_STREAM && before->stream == stream)
      last = before;
  }
  if (last == NULL || last->kind != ITEM_STREAM || last->stream != stream) {
    last = g_new0(output_item, 1);
    last->kind = ITEM_STREAM;
    last->stream = stream;
    last->text = g_string_sized_new(len);
    g_ptr_array_add(result->items, last);
  }
  g_string_append_len(last->text, data, len);
  /* DATA need not end with a NUL; the copy in LAST does. */
  if (result->listener_run != NULL)
    emit(result, stream_output(stream, last->text->str + last->text->len - len, len,
                               listener_keeps_nul(result)));
}

void
cx_result_append_stdout(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  cx__result_append_stream(result, 1, data, len < 0 ? strlen(data) : (gsize)len);
}

void
cx_result_append_stderr(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  cx__result_append_stream(result, 2, data, len < 0 ? strlen(data) : (gsize)len);
}

/* rich_outputs follows the items: rebuilt after a change to their data. */
void
cx__result_rebuild_rich_outputs(cx_result *result)
{
  g_ptr_array_set_size(result->outputs, 0);
  for (guint i = 0; i < result->items->len; i++) {
    output_item *item = g_ptr_array_index(result->items, i);
    if (item->data != NULL && json_object_get_size(item->data) > 0)
      g_ptr_array_add(result->outputs, item->data);
  }
}

output_item *
cx__result_add_bundle_item(cx_result *result, item_kind kind, JsonObject *bundle, JsonObject *metadata)
{
  output_arrives(result);
  output_item *item = g_new0(output_item, 1);
  item->kind = kind;
  item->data = json_object_ref(bundle);
  item->metadata = metadata != NULL ? json_object_ref(metadata) : json_object_new();
  g_ptr_array_add(result->items, item);
  if (json_object_get_size(bundle) > 0)
    g_ptr_array_add(result->outputs, item->data);
  return item;
}

/* After a display or execute_result ITEM is complete. */
static void
emit_item(cx_result *result, const output_item *item)
{
  if (result->listener_run == NULL)
    return;
  JsonObject *output = item_to_output(item, listener_keeps_nul(result));
  if (item->display_id != NULL) {
    JsonObject *transient = json_object_new();
    json_object_set_string_member(transient, "display_id", item->display_id);
    json_object_set_object_member(output, "transient", transient);
  }
  emit(result, output);
}

gboolean
cx_result_add_display(cx_result *result, JsonObject *bundle, JsonObject *metadata,
                      const char *display_id)
{
  g_return_val_if_fail(result != NULL && bundle != NULL, FALSE);
  if (json_object_get_size(bundle) == 0 && display_id == NULL)
    return FALSE;
  output_item *item = cx__result_add_bundle_item(result, ITEM_DISPLAY, bundle, metadata);
  item->display_id = g_strdup(display_id);
  emit_item(result, item);
  return TRUE;
}

gboolean
cx_result_add_execute_result(cx_result *result, JsonObject *bundle, JsonObject *metadata,
                             gint64 execution_count)
{
  return cx_result_add_execute_result_with_id(result, bundle, metadata, execution_count, NULL);
}

gboolean
cx_result_add_execute_result_with_id(cx_result *result, JsonObject *bundle, JsonObject *metadata,
                                     gint64 execution_count, const char *display_id)
{
  g_return_val_if_fail(result != NULL && bundle != NULL, FALSE);
  if (json_object_get_size(bundle) == 0)
    return FALSE;
  output_item *item = cx__result_add_bundle_item(result, ITEM_EXECUTE_RESULT, bundle, metadata);
  item->execution_count = execution_count;
  item->display_id = g_strdup(display_id);
  emit_item(result, item);
  return TRUE;
}

gboolean
cx_result_pass_message(cx_result *result, const char *msg_type, JsonObject *content)
{
  static const char *const passed[] = { "comm_open", "comm_msg", "comm_close", NULL };
  g_return_val_if_fail(result != NULL && msg_type != NULL && content != NULL, FALSE);
  if (!g_strv_contains(passed, msg_type))
    return FALSE;
  if (result->listener_run != NULL) {
    JsonObject *message = cx__json_object_deep_copy(content);
    json_object_set_string_member(message, "output_type", msg_type);
    emit(result, message);
  }
  return TRUE;
}

gboolean
cx_result_add_output(cx_result *result, JsonObject *bundle)
{
  return cx_result_add_display(result, bundle, NULL, NULL);
}

static void
record_display_update(cx_result *result, const char *display_id, JsonObject *bundle,
                      JsonObject *metadata)
{
  JsonObject *update = json_object_new();
  json_object_set_string_member(update, "display_id", display_id);
  json_object_set_object_member(update, "data", json_object_ref(bundle));
  json_object_set_object_member(update, "metadata",
                                metadata != NULL ? json_object_ref(metadata) : json_object_new());
  if (result->display_updates == NULL)
    result->display_updates = json_array_new();
  json_array_add_object_element(result->display_updates, update);
}

guint
cx_result_update_display(cx_result *result, const char *display_id, JsonObject *bundle,
                         JsonObject *metadata)
{
  g_return_val_if_fail(result != NULL && display_id != NULL && bundle != NULL, 0);
  guint updated = 0;
  for (guint i = 0; i < result->items->len; i++) {
    output_item *item = g_ptr_array_index(result->items, i);
    if (item->display_id == NULL || !g_str_equal(item->display_id, display_id))
      continue;
    /* Replaced, never changed in place: documents made earlier share them. */
    g_clear_pointer(&item->data, json_object_unref);
    item->data = json_object_ref(bundle);
    g_clear_pointer(&item->metadata, json_object_unref);
    item->metadata = metadata != NULL ? json_object_ref(metadata) : json_object_new();
    updated++;
  }
  if (updated > 0)
    cx__result_rebuild_rich_outputs(result);
  record_display_update(result, display_id, bundle, metadata);
  /* Sent whether or not this cell showed the id, as ipykernel sends it: a
   * front end updates the display wherever an earlier cell showed it. */
  if (result->listener_run != NULL) {
    JsonObject *output = json_object_new();
    json_object_set_string_member(output, "output_type", "update_display_data");
    json_object_set_object_member(output, "data", json_object_ref(bundle));
    json_object_set_object_member(output, "metadata",
                                  metadata != NULL ? json_object_ref(metadata) : json_object_new());
    JsonObject *transient = json_object_new();
    json_object_set_string_member(transient, "display_id", display_id);
    json_object_set_object_member(output, "transient", transient);
    emit(result, output);
  }
  return updated;
}

void
cx_result_clear_output(cx_result *result, gboolean wait)
{
  g_return_if_fail(result != NULL);
  if (result->listener_run != NULL && !(wait && result->clear_pending)) {
    JsonObject *output = json_object_new();
    json_object_set_string_member(output, "output_type", "clear_output");
    json_object_set_boolean_member(output, "wait", wait);
    emit(result, output);
  }
  if (wait)
    result->clear_pending = TRUE;
  else
    clear_now(result);
}

static void
add_shown_error(cx_result *result, const char *ename, const char *evalue, char **lines)
{
  output_arrives(result);
  output_item *item = g_new0(output_item, 1);
  item->kind = ITEM_SHOWN_ERROR;
  item->ename = g_strdup(ename);
  item->evalue = g_strdup(evalue);
  item->traceback = lines;
  g_ptr_array_add(result->items, item);
  emit(result, item_to_output(item, listener_keeps_nul(result)));
}

void
cx_result_add_error_output(cx_result *result, const char *ename, const char *evalue,
                           const char *traceback)
{
  g_return_if_fail(result != NULL && ename != NULL && evalue != NULL);
  add_shown_error(result, ename, evalue, cx__result_traceback_lines(traceback));
}

void
cx_result_add_error_output_lines(cx_result *result, const char *ename, const char *evalue,
                                 const char *const *traceback_lines)
{
  g_return_if_fail(result != NULL && ename != NULL && evalue != NULL);
  char **lines = output_lines_copy(traceback_lines);
  add_shown_error(result, ename, evalue, lines != NULL ? lines : g_new0(char *, 1));
}

void
cx_result_add_output_text(cx_result *result, const char *mime, const char *text)
{
  g_return_if_fail(result != NULL && mime != NULL && text != NULL);
  JsonObject *bundle = json_object_new();
  json_object_set_string_member(bundle, mime, text);
  cx_result_add_output(result, bundle);
  json_object_unref(bundle);
}

void
cx_result_set_error(cx_result *result, const char *type, const char *message,
                    const char *traceback)
{
  g_return_if_fail(result != NULL && type != NULL && message != NULL);
  char *new_type = g_strdup(type), *new_message = g_strdup(message);
  char *new_traceback = g_strdup(traceback != NULL ? traceback : "");
  output_arrives(result); /* the error output is an output too */
  clear_error(result); /* after copying: the arguments may be our own strings */
  result->error_type = new_type;
  result->error_message = new_message;
  result->error_traceback = new_traceback;
  result->success = FALSE;
}

void
cx_result_set_error_output(cx_result *result, const char *const *traceback_lines,
                           gboolean shown)
{
  g_return_if_fail(result != NULL);
  g_clear_pointer(&result->error_output_lines, g_strfreev);
  result->error_output_lines = output_lines_copy(traceback_lines);
  result->error_output_hidden = !shown;
}

gboolean
cx_result_get_error_output_shown(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, FALSE);
  return result->error_type != NULL && !result->error_output_hidden;
}

const char *const *
cx_result_get_error_output_traceback(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return (const char *const *)result->error_output_lines;
}

void
cx_result_set_success(cx_result *result, gboolean success)
{
  g_return_if_fail(result != NULL);
  result->success = success;
}

gboolean
cx_result_set_extra(cx_result *result, const char *key, JsonNode *value)
{
  g_return_val_if_fail(result != NULL && key != NULL && value != NULL, FALSE);
  if (cx__result_key_is_reserved(key)) {
    g_warning("cx_result_set_extra: '%s' is a key the result bundle keeps itself", key);
    json_node_unref(value);
    return FALSE;
  }
  json_object_set_member(result->extras, key, value);
  return TRUE;
}

const char *
cx_result_get_stdout(const cx_result *result, gsize *len)
{
  g_return_val_if_fail(result != NULL, NULL);
  if (len != NULL)
    *len = result->out->len;
  return result->out->str;
}

const char *
cx_result_get_stderr(const cx_result *result, gsize *len)
{
  g_return_val_if_fail(result != NULL, NULL);
  if (len != NULL)
    *len = result->err->len;
  return result->err->str;
}

gboolean
cx_result_get_success(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, FALSE);
  return result->success;
}

guint
cx_result_get_n_outputs(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, 0);
  return result->outputs->len;
}

JsonObject *
cx_result_get_output(const cx_result *result, guint index)
{
  g_return_val_if_fail(result != NULL, NULL);
  return index < result->outputs->len ? g_ptr_array_index(result->outputs, index) : NULL;
}

gboolean
cx_result_has_error(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, FALSE);
  return result->error_type != NULL;
}

gboolean
cx_result_ends_session(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, FALSE);
  static const char *const ending[] = { CX_ERROR_TYPE_TIMEOUT, CX_ERROR_TYPE_WORKER_CRASHED,
                                        CX_ERROR_TYPE_KERNEL_DIED, NULL };
  return result->error_type != NULL && g_strv_contains(ending, result->error_type);
}

const char *
cx_result_get_error_type(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return result->error_type;
}

const char *
cx_result_get_error_message(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return result->error_message;
}

const char *
cx_result_get_error_traceback(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return result->error_traceback;
}

JsonNode *
cx_result_get_extra(const cx_result *result, const char *key)
{
  g_return_val_if_fail(result != NULL && key != NULL, NULL);
  return json_object_get_member(result->extras, key);
}

char **
cx_result_list_extras(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  g_autoptr(GStrvBuilder) keys = g_strv_builder_new();
  JsonObjectIter iter;
  const char *key;
  json_object_iter_init_ordered(&iter, result->extras);
  while (json_object_iter_next_ordered(&iter, &key, NULL))
    g_strv_builder_add(keys, key);
  return g_strv_builder_end(keys);
}

/* ---- JSON out ------------------------------------------------------------ */

static JsonArray *
outputs_to_json(const cx_result *result, gboolean keep_nul)
{
  JsonArray *array = json_array_sized_new(result->items->len + 1);
  for (guint i = 0; i < result->items->len; i++)
    json_array_add_object_element(array,
                                  item_to_output(g_ptr_array_index(result->items, i), keep_nul));
  JsonObject *failure = failure_output(result, keep_nul);
  if (failure != NULL)
    json_array_add_object_element(array, failure);
  return array;
}

void
cx__result_finish_streaming(cx_result *result, const cx_run_options *run)
{
  if (cx_run_options_get_output_callback(run, NULL) == NULL)
    return;
  if (!result->streamed) {
    /* Built without streaming: everything now, in order. */
    g_autoptr(JsonArray) outputs =
      outputs_to_json(result, cx_run_options_get_output_keeps_nul(run));
    for (guint i = 0; i < json_array_get_length(outputs); i++)
      cx_run_options_emit_output(run, json_array_get_object_element(outputs, i));
  } else {
    g_autoptr(JsonObject) failure =
      failure_output(result, cx_run_options_get_output_keeps_nul(run));
    if (failure != NULL)
      cx_run_options_emit_output(run, failure);
  }
  /* Later additions (by the caller) are not streamed. */
  g_clear_pointer(&result->listener_run, cx_run_options_free);
}

JsonArray *
cx_result_list_outputs(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return outputs_to_json(result, FALSE);
}

JsonArray *
cx__result_list_outputs_keeping_nul(const cx_result *result)
{
  return outputs_to_json(result, TRUE);
}

const char *
cx__result_output_display_id(const cx_result *result, guint i)
{
  if (i >= result->items->len)
    return NULL;
  const output_item *item = g_ptr_array_index(result->items, i);
  return item->display_id;
}

JsonArray *
cx__result_display_updates(const cx_result *result)
{
  return result->display_updates;
}

static JsonNode *
to_json_node(const cx_result *result, gboolean keep_nul)
{
  JsonObject *object = json_object_new();
  set_text_member(object, "stdout", result->out->str, result->out->len, keep_nul);
  set_text_member(object, "stderr", result->err->str, result->err->len, keep_nul);

  JsonArray *outputs = json_array_sized_new(result->outputs->len);
  for (guint i = 0; i < result->outputs->len; i++)
    json_array_add_object_element(outputs, json_object_ref(g_ptr_array_index(result->outputs, i)));
  json_object_set_array_member(object, "rich_outputs", outputs);
  json_object_set_boolean_member(object, "success", result->success);

  if (result->error_type != NULL) {
    JsonObject *error = json_object_new();
    g_autofree char *message = cx__result_error_text(result->error_message, keep_nul);
    g_autofree char *traceback = cx__result_error_text(result->error_traceback, keep_nul);
    json_object_set_string_member(error, "type", result->error_type);
    json_object_set_string_member(error, "message", message);
    json_object_set_string_member(error, "traceback", traceback);
    json_object_set_object_member(object, "error", error);
  } else {
    json_object_set_null_member(object, "error");
  }
  json_object_set_array_member(object, "outputs", outputs_to_json(result, keep_nul));

  JsonObjectIter iter;
  const char *key;
  JsonNode *value;
  json_object_iter_init_ordered(&iter, result->extras);
  while (json_object_iter_next_ordered(&iter, &key, &value))
    json_object_set_member(object, key, json_node_copy(value));

  JsonNode *node = json_node_alloc();
  json_node_take_object(json_node_init(node, JSON_NODE_OBJECT), object);
  return node;
}

JsonNode *
cx_result_to_json_node(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return to_json_node(result, FALSE);
}

char *
cx_result_to_json(const cx_result *result, gboolean pretty)
{
  g_return_val_if_fail(result != NULL, NULL);
  g_autoptr(JsonNode) node = to_json_node(result, TRUE);
  return cx_json_to_string(node, pretty);
}

static output_item *
output_item_copy(const output_item *item)
{
  output_item *copy = g_new0(output_item, 1);
  *copy = *item;
  if (item->text != NULL)
    copy->text = g_string_new_len(item->text->str, item->text->len);
  /* Nothing shared: json-glib's reference counts are not atomic, and a
   * copy (a fake's replayed result) may live on another thread. */
  if (item->data != NULL)
    copy->data = cx__json_object_deep_copy(item->data);
  if (item->metadata != NULL)
    copy->metadata = cx__json_object_deep_copy(item->metadata);
  copy->display_id = g_strdup(item->display_id);
  copy->ename = g_strdup(item->ename);
  copy->evalue = g_strdup(item->evalue);
  copy->traceback = g_strdupv(item->traceback);
  return copy;
}

cx_result *
cx_result_copy(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  cx_result *copy = cx_result_new();
  g_string_append_len(copy->out, result->out->str, result->out->len);
  g_string_append_len(copy->err, result->err->str, result->err->len);
  for (guint i = 0; i < result->items->len; i++)
    g_ptr_array_add(copy->items, output_item_copy(g_ptr_array_index(result->items, i)));
  cx__result_rebuild_rich_outputs(copy);
  copy->clear_pending = result->clear_pending;
  copy->success = result->success;
  copy->error_type = g_strdup(result->error_type);
  copy->error_message = g_strdup(result->error_message);
  copy->error_traceback = g_strdup(result->error_traceback);
  copy->error_output_lines = g_strdupv(result->error_output_lines);
  copy->error_output_hidden = result->error_output_hidden;
  json_object_unref(copy->extras);
  copy->extras = cx__json_object_deep_copy(result->extras);
  if (result->display_updates != NULL) {
    g_autoptr(JsonNode) updates = json_node_init_array(json_node_alloc(), result->display_updates);
    g_autoptr(JsonNode) updates_copy = cx__json_deep_copy(updates);
    copy->display_updates = json_array_ref(json_node_get_array(updates_copy));
  }
  return copy;
}
