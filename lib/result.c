/* The result bundle of one cell: building, reading, JSON in and out. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "lib/internal.h"

/* One entry of the ordered outputs.  The error output is not one: it is
 * made from the error fields, always last. */
typedef enum {
  ITEM_STREAM,
  ITEM_DISPLAY,
  ITEM_EXECUTE_RESULT,
  ITEM_SHOWN_ERROR, /* an error shown, not the cell's failure */
} item_kind;

typedef struct {
  item_kind kind;
  int stream;           /* ITEM_STREAM: 1 stdout, 2 stderr */
  GString *text;        /* ITEM_STREAM: its bytes */
  char *ename, *evalue; /* ITEM_SHOWN_ERROR */
  char **traceback;     /* ITEM_SHOWN_ERROR: the lines of its "traceback" */
  JsonObject *data;     /* the others: the MIME bundle (possibly empty) */
  JsonObject *metadata; /* never NULL for them */
  char *display_id;     /* ITEM_DISPLAY: NULL when it has none */
  gint64 execution_count;
} output_item;

struct cx_result {
  GString *out;
  GString *err;
  GPtrArray *items;   /* output_item*, in the order they happened */
  GPtrArray *outputs; /* rich_outputs: the bundles of the non-empty items, borrowed */
  gboolean clear_pending; /* clear_output(wait=True) waits for the next output */
  gboolean success;
  char *error_type; /* NULL when no error */
  char *error_message;
  char *error_traceback;
  /* How the error shows in the outputs: its output's traceback lines
   * (NULL: those of error_traceback), or no output at all. */
  char **error_output_lines;
  gboolean error_output_hidden;
  JsonObject *extras; /* extra top-level keys, in insertion order */
  /* Streaming: each output goes to the output callback of LISTENER_RUN as
   * it is added (cx_result_new_streaming), or a plugin gave them itself;
   * either way the core does not give them again. */
  cx_run_options *listener_run;
  gboolean streamed;
};

/* Keys cx_result_set_extra() refuses: the five standard ones, and the
 * ordered outputs the core builds itself. */
static const char *const reserved_keys[] = {
  "stdout", "stderr", "rich_outputs", "success", "error", "outputs", NULL
};

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
static char **
traceback_lines(const char *traceback)
{
  char **split = g_strsplit(traceback != NULL ? traceback : "", "\n", -1);
  guint n = g_strv_length(split);
  if (n > 0 && split[n - 1][0] == '\0') {
    g_free(split[n - 1]); /* the text ends with a line break */
    split[n - 1] = NULL;
  }
  return split;
}

static gboolean text_is_valid(const char *text, gboolean nul_marker);

/* A copy of LINES when every line is UTF-8 text (CX_RESULT_NUL standing
 * for a NUL, which error_output() writes as the other error texts), else
 * NULL. */
static char **
output_lines_copy(const char *const *lines)
{
  if (lines == NULL)
    return NULL;
  for (const char *const *line = lines; *line != NULL; line++)
    if (!text_is_valid(*line, TRUE))
      return NULL;
  return g_strdupv((char **)lines);
}

/* TEXT of an error (NUL as CX_RESULT_NUL) for a JsonNode: as it is when
 * KEEP_NUL (cx_json_to_string writes the marker as \u0000), else with each
 * NUL as U+FFFD, as set_text_member() does.  A new string. */
static char *
error_text(const char *text, gboolean keep_nul)
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
  g_autofree char *value = error_text(evalue, keep_nul);
  g_auto(GStrv) split = NULL;
  if (lines == NULL) {
    g_autofree char *text = error_text(traceback, keep_nul);
    lines = (const char *const *)(split = traceback_lines(text));
  }
  JsonArray *array = json_array_new();
  for (const char *const *line = lines; *line != NULL; line++) {
    /* A shown error's lines come from a text that may hold the NUL marker. */
    g_autofree char *text = error_text(*line, keep_nul);
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

static void
append_stream(cx_result *result, int stream, const char *data, gsize len)
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
    emit(result, stream_output(stream, last->text->str + last->text->len - len, len, FALSE));
}

void
cx_result_append_stdout(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  append_stream(result, 1, data, len < 0 ? strlen(data) : (gsize)len);
}

void
cx_result_append_stderr(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  append_stream(result, 2, data, len < 0 ? strlen(data) : (gsize)len);
}

/* rich_outputs follows the items: rebuilt after a change to their data. */
static void
rebuild_rich_outputs(cx_result *result)
{
  g_ptr_array_set_size(result->outputs, 0);
  for (guint i = 0; i < result->items->len; i++) {
    output_item *item = g_ptr_array_index(result->items, i);
    if (item->data != NULL && json_object_get_size(item->data) > 0)
      g_ptr_array_add(result->outputs, item->data);
  }
}

static output_item *
add_bundle_item(cx_result *result, item_kind kind, JsonObject *bundle, JsonObject *metadata)
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
  JsonObject *output = item_to_output(item, FALSE);
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
  output_item *item = add_bundle_item(result, ITEM_DISPLAY, bundle, metadata);
  item->display_id = g_strdup(display_id);
  emit_item(result, item);
  return TRUE;
}

gboolean
cx_result_add_execute_result(cx_result *result, JsonObject *bundle, JsonObject *metadata,
                             gint64 execution_count)
{
  g_return_val_if_fail(result != NULL && bundle != NULL, FALSE);
  if (json_object_get_size(bundle) == 0)
    return FALSE;
  output_item *item = add_bundle_item(result, ITEM_EXECUTE_RESULT, bundle, metadata);
  item->execution_count = execution_count;
  emit_item(result, item);
  return TRUE;
}

gboolean
cx_result_add_output(cx_result *result, JsonObject *bundle)
{
  return cx_result_add_display(result, bundle, NULL, NULL);
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
    rebuild_rich_outputs(result);
  if (updated > 0 && result->listener_run != NULL) {
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
  emit(result, item_to_output(item, FALSE));
}

void
cx_result_add_error_output(cx_result *result, const char *ename, const char *evalue,
                           const char *traceback)
{
  g_return_if_fail(result != NULL && ename != NULL && evalue != NULL);
  add_shown_error(result, ename, evalue, traceback_lines(traceback));
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
  if (g_strv_contains(reserved_keys, key)) {
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
    g_autoptr(JsonArray) outputs = outputs_to_json(result, FALSE);
    for (guint i = 0; i < json_array_get_length(outputs); i++)
      cx_run_options_emit_output(run, json_array_get_object_element(outputs, i));
  } else {
    g_autoptr(JsonObject) failure = failure_output(result, FALSE);
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
    g_autofree char *message = error_text(result->error_message, keep_nul);
    g_autofree char *traceback = error_text(result->error_traceback, keep_nul);
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

/* ---- JSON in ------------------------------------------------------------- */

static gboolean
wrong_type(const char *key, const char *expected, GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_JSON,
              "result bundle: \"%s\" must be %s", key, expected);
  return FALSE;
}

static gboolean
is_string_node(JsonNode *node)
{
  return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING;
}

static gboolean
read_text(JsonObject *object, const char *key, cx_result *result, GString *into, GError **error)
{
  JsonNode *node = json_object_get_member(object, key);
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (!is_string_node(node))
    return wrong_type(key, "a string", error);
  g_string_append(into, json_node_get_string(node));
  return TRUE;
}

static const char *member_string(JsonObject *object, const char *key);

static gboolean
read_rich_outputs(JsonObject *object, cx_result *result, GError **error)
{
  JsonNode *node = json_object_get_member(object, "rich_outputs");
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY(node))
    return wrong_type("rich_outputs", "an array of MIME bundles", error);
  JsonArray *array = json_node_get_array(node);
  for (guint i = 0; i < json_array_get_length(array); i++) {
    JsonNode *element = json_array_get_element(array, i);
    if (!JSON_NODE_HOLDS_OBJECT(element) || json_object_get_size(json_node_get_object(element)) == 0) {
      g_autofree char *where = g_strdup_printf("rich_outputs[%u]", i);
      return wrong_type(where, "a non-empty object {mime: data}", error);
    }
    g_autoptr(JsonNode) copy = json_node_copy(element);
    cx_result_add_output(result, json_node_get_object(copy));
  }
  return TRUE;
}

/* An object member of OUTPUT that must be one when present; a new
 * reference to a copy, or to an empty object when missing. */
static gboolean
read_bundle_member(JsonObject *output, const char *key, guint index, JsonObject **into,
                   GError **error)
{
  JsonNode *node = json_object_get_member(output, key);
  if (node != NULL && !JSON_NODE_HOLDS_OBJECT(node)) {
    g_autofree char *where = g_strdup_printf("outputs[%u].%s", index, key);
    return wrong_type(where, "an object", error);
  }
  if (node == NULL) {
    *into = json_object_new();
  } else {
    g_autoptr(JsonNode) copy = json_node_copy(node);
    *into = json_object_ref(json_node_get_object(copy));
  }
  return TRUE;
}

/* One nbformat output of "outputs" into the items (streams into the items
 * only: stdout and stderr come from their own keys). */
/* The strings of an error output's "traceback" (a new vector; what is not
 * a string is left out). */
static char **
traceback_member_lines(JsonObject *output)
{
  GStrvBuilder *builder = g_strv_builder_new();
  JsonNode *lines = json_object_get_member(output, "traceback");
  JsonArray *array = lines != NULL && JSON_NODE_HOLDS_ARRAY(lines) ? json_node_get_array(lines)
                                                                   : NULL;
  for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
    JsonNode *line = json_array_get_element(array, i);
    if (is_string_node(line))
      g_strv_builder_add(builder, json_node_get_string(line));
  }
  char **strv = g_strv_builder_end(builder);
  g_strv_builder_unref(builder);
  return strv;
}

/* One nbformat output of "outputs" into the items (streams into the items
 * only: stdout and stderr come from their own keys).  The failure's error
 * output (LAST_IS_FAILURE) is made from "error": only its traceback lines
 * are kept, in FAILURE_LINES. */
static gboolean
read_ordered_output(JsonNode *node, guint index, gboolean last_is_failure, cx_result *result,
                    char ***failure_lines, GError **error)
{
  g_autofree char *where = g_strdup_printf("outputs[%u]", index);
  if (!JSON_NODE_HOLDS_OBJECT(node))
    return wrong_type(where, "an nbformat output object", error);
  JsonObject *output = json_node_get_object(node);
  const char *type = member_string(output, "output_type");
  if (type == NULL)
    return wrong_type(where, "an object with a string \"output_type\"", error);
  if (g_str_equal(type, "error")) {
    if (last_is_failure) {
      *failure_lines = traceback_member_lines(output);
      return TRUE;
    }
    const char *ename = member_string(output, "ename");
    const char *evalue = member_string(output, "evalue");
    if (ename == NULL || evalue == NULL)
      return wrong_type(where, "an error with string \"ename\" and \"evalue\"", error);
    g_auto(GStrv) lines = traceback_member_lines(output);
    cx_result_add_error_output_lines(result, ename, evalue, (const char *const *)lines);
    return TRUE;
  }
  if (g_str_equal(type, "stream")) {
    const char *name = member_string(output, "name");
    const char *text = member_string(output, "text");
    if (name == NULL || text == NULL ||
        (!g_str_equal(name, "stdout") && !g_str_equal(name, "stderr")))
      return wrong_type(where, "a stream with \"name\" stdout or stderr and a \"text\"", error);
    output_item *item = g_new0(output_item, 1);
    item->kind = ITEM_STREAM;
    item->stream = g_str_equal(name, "stdout") ? 1 : 2;
    item->text = g_string_new(text);
    g_ptr_array_add(result->items, item);
    return TRUE;
  }
  item_kind kind;
  if (g_str_equal(type, "display_data"))
    kind = ITEM_DISPLAY;
  else if (g_str_equal(type, "execute_result"))
    kind = ITEM_EXECUTE_RESULT;
  else
    return wrong_type(where, "an output of type stream, display_data, execute_result or error",
                      error);
  g_autoptr(JsonObject) data = NULL;
  g_autoptr(JsonObject) metadata = NULL;
  if (!read_bundle_member(output, "data", index, &data, error) ||
      !read_bundle_member(output, "metadata", index, &metadata, error))
    return FALSE;
  output_item *item = add_bundle_item(result, kind, data, metadata);
  if (kind == ITEM_EXECUTE_RESULT)
    item->execution_count = json_object_get_int_member_with_default(output, "execution_count", 0);
  return TRUE;
}

/* The items: from "outputs" when given (rich_outputs then follows from
 * them), else made from stdout, stderr and rich_outputs.  *FAILURE_SHOWN
 * is FALSE when "outputs" is given and the failure has no output in it;
 * *FAILURE_LINES the traceback lines of the one it has. */
static gboolean
read_outputs(JsonObject *object, cx_result *result, char ***failure_lines,
             gboolean *failure_shown, GError **error)
{
  JsonNode *node = json_object_get_member(object, "outputs");
  if (node == NULL || JSON_NODE_HOLDS_NULL(node)) {
    g_autoptr(GString) out = g_string_new_len(result->out->str, result->out->len);
    g_autoptr(GString) err = g_string_new_len(result->err->str, result->err->len);
    g_string_truncate(result->out, 0);
    g_string_truncate(result->err, 0);
    append_stream(result, 1, out->str, out->len);
    append_stream(result, 2, err->str, err->len);
    return read_rich_outputs(object, result, error);
  }
  if (!JSON_NODE_HOLDS_ARRAY(node))
    return wrong_type("outputs", "an array of nbformat outputs", error);
  /* The cell's failure is its last output, made again from "error". */
  JsonArray *array = json_node_get_array(node);
  JsonNode *failure = json_object_get_member(object, "error");
  gboolean failed = failure != NULL && JSON_NODE_HOLDS_OBJECT(failure);
  guint n = json_array_get_length(array);
  gboolean last_is_error = FALSE;
  if (n > 0 && failed) {
    /* The failure's own output: last, and of the failure's type (else it
     * is an error the cell showed, and the failure has no output). */
    JsonNode *last = json_array_get_element(array, n - 1);
    JsonObject *output = JSON_NODE_HOLDS_OBJECT(last) ? json_node_get_object(last) : NULL;
    last_is_error = output != NULL &&
                    g_strcmp0(member_string(output, "output_type"), "error") == 0 &&
                    g_strcmp0(member_string(output, "ename"),
                              member_string(json_node_get_object(failure), "type")) == 0;
  }
  for (guint i = 0; i < n; i++)
    if (!read_ordered_output(json_array_get_element(array, i), i,
                             failed && last_is_error && i == n - 1, result, failure_lines, error))
      return FALSE;
  *failure_shown = !failed || last_is_error;
  return TRUE;
}

static const char *
member_string(JsonObject *object, const char *key)
{
  JsonNode *node = json_object_get_member(object, key);
  return node != NULL && is_string_node(node) ? json_node_get_string(node) : NULL;
}

static gboolean
read_error(JsonObject *object, cx_result *result, GError **error)
{
  JsonNode *node = json_object_get_member(object, "error");
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT(node))
    return wrong_type("error", "null or {\"type\", \"message\", \"traceback\"}", error);
  JsonObject *e = json_node_get_object(node);
  const char *type = member_string(e, "type");
  if (type == NULL)
    return wrong_type("error.type", "a string", error);
  JsonNode *message = json_object_get_member(e, "message");
  if (message != NULL && !JSON_NODE_HOLDS_NULL(message) && !is_string_node(message))
    return wrong_type("error.message", "a string", error);
  JsonNode *traceback = json_object_get_member(e, "traceback");
  if (traceback != NULL && !JSON_NODE_HOLDS_NULL(traceback) && !is_string_node(traceback))
    return wrong_type("error.traceback", "a string", error);
  const char *text = member_string(e, "message");
  cx_result_set_error(result, type, text != NULL ? text : "", member_string(e, "traceback"));
  return TRUE;
}

/* Where a string of a bundle may hold CX_RESULT_NUL: only the error's
 * message and traceback (cx_result_set_error takes it as NUL there), as
 * a reader keeping NUL (cx_json_from_string_keeping_nul) gives it. */
typedef enum { NUL_NOWHERE, NUL_IN_ERROR_TEXTS, NUL_HERE } nul_marker_place;

static gboolean
text_is_valid(const char *text, gboolean nul_marker)
{
  if (!nul_marker || strstr(text, CX_RESULT_NUL) == NULL)
    return g_utf8_validate(text, -1, NULL);
  g_auto(GStrv) parts = g_strsplit(text, CX_RESULT_NUL, -1);
  for (char **part = parts; *part != NULL; part++)
    if (!g_utf8_validate(*part, -1, NULL))
      return FALSE;
  return TRUE;
}

/* NODE's values, checked for what JSON text cannot hold: a number that
 * overflowed to infinity (json-glib reads 1e999 so), and a string that is
 * not UTF-8 (json-glib lets a malformed \u escape through as raw bytes).
 * Either way the bundle could not be written back as it came.  PLACE:
 * where the NUL marker may stand (the bundle's root: in its error). */
static gboolean
check_values(JsonNode *node, nul_marker_place place, GError **error)
{
  switch (JSON_NODE_TYPE(node)) {
  case JSON_NODE_OBJECT: {
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    json_object_iter_init(&iter, json_node_get_object(node));
    while (json_object_iter_next(&iter, &name, &member)) {
      nul_marker_place inner = NUL_NOWHERE;
      if (place == NUL_IN_ERROR_TEXTS)
        inner = g_str_equal(name, "error") ? NUL_HERE : NUL_NOWHERE;
      else if (place == NUL_HERE)
        inner = g_str_equal(name, "message") || g_str_equal(name, "traceback") ? NUL_HERE
                                                                                : NUL_NOWHERE;
      if (!g_utf8_validate(name, -1, NULL) || !check_values(member, inner, error)) {
        if (error != NULL && *error == NULL)
          g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                      "result bundle: a key is not valid UTF-8 (a malformed \\u escape?)");
        return FALSE;
      }
    }
    return TRUE;
  }
  case JSON_NODE_ARRAY: {
    JsonArray *array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++)
      if (!check_values(json_array_get_element(array, i), NUL_NOWHERE, error))
        return FALSE;
    return TRUE;
  }
  case JSON_NODE_VALUE:
    if (json_node_get_value_type(node) == G_TYPE_DOUBLE && !isfinite(json_node_get_double(node))) {
      g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                  "result bundle: a number is too large for a double (an overflow to "
                  "infinity); write it as a string");
      return FALSE;
    }
    if (json_node_get_value_type(node) == G_TYPE_STRING &&
        !text_is_valid(json_node_get_string(node), place == NUL_HERE)) {
      g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                  "result bundle: a string is not valid UTF-8 (a malformed \\u escape?)");
      return FALSE;
    }
    return TRUE;
  case JSON_NODE_NULL:
  default:
    return TRUE;
  }
}

cx_result *
cx_result_from_json_node(JsonNode *node, GError **error)
{
  g_return_val_if_fail(node != NULL, NULL);
  if (!JSON_NODE_HOLDS_OBJECT(node)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "result bundle: expected a JSON object");
    return NULL;
  }
  JsonObject *object = json_node_get_object(node);
  if (!check_values(node, NUL_IN_ERROR_TEXTS, error))
    return NULL;
  g_autoptr(cx_result) result = cx_result_new();
  g_auto(GStrv) failure_lines = NULL;
  gboolean failure_shown = TRUE;
  if (!read_text(object, "stdout", result, result->out, error) ||
      !read_text(object, "stderr", result, result->err, error) ||
      !read_outputs(object, result, &failure_lines, &failure_shown, error) ||
      !read_error(object, result, error))
    return NULL;
  if (result->error_type != NULL) {
    /* Lines of its own only where they are not the plain traceback's. */
    g_autofree char *plain_text = error_text(result->error_traceback, FALSE);
    g_auto(GStrv) plain = traceback_lines(plain_text);
    gboolean own = failure_lines != NULL &&
                   !g_strv_equal((const char *const *)failure_lines, (const char *const *)plain);
    cx_result_set_error_output(result, own ? (const char *const *)failure_lines : NULL,
                               failure_shown);
  }

  /* success defaults to "no error"; when given it must be a boolean. */
  JsonNode *success = json_object_get_member(object, "success");
  if (success != NULL) {
    if (!JSON_NODE_HOLDS_VALUE(success) || json_node_get_value_type(success) != G_TYPE_BOOLEAN) {
      wrong_type("success", "true or false", error);
      return NULL;
    }
    result->success = json_node_get_boolean(success);
  } else {
    result->success = result->error_type == NULL;
  }

  JsonObjectIter iter;
  const char *key;
  JsonNode *value;
  json_object_iter_init_ordered(&iter, object);
  while (json_object_iter_next_ordered(&iter, &key, &value))
    if (!g_strv_contains(reserved_keys, key))
      json_object_set_member(result->extras, key, json_node_copy(value));
  return g_steal_pointer(&result);
}

cx_result *
cx_result_from_json(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(GError) parse_error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text, -1, &parse_error);
  if (node == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "result bundle: %s", parse_error->message);
    return NULL;
  }
  return cx_result_from_json_node(node, error);
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
  rebuild_rich_outputs(copy);
  copy->clear_pending = result->clear_pending;
  copy->success = result->success;
  copy->error_type = g_strdup(result->error_type);
  copy->error_message = g_strdup(result->error_message);
  copy->error_traceback = g_strdup(result->error_traceback);
  copy->error_output_lines = g_strdupv(result->error_output_lines);
  copy->error_output_hidden = result->error_output_hidden;
  json_object_unref(copy->extras);
  copy->extras = cx__json_object_deep_copy(result->extras);
  return copy;
}

/* Keep, in every bundle, only the MIME types RUN allows; drop what is left
 * without data (an execute_result, a display without an id). */
void
cx__result_filter_mime(cx_result *result, const cx_run_options *run)
{
  if (cx_run_options_get_allowed_mime_types(run) == NULL)
    return;
  gboolean changed = FALSE;
  for (guint i = 0; i < result->items->len;) {
    output_item *item = g_ptr_array_index(result->items, i);
    if (item->data == NULL) {
      i++;
      continue;
    }
    JsonObject *kept = cx__run_options_filter_bundle(run, item->data);
    if (kept != NULL) {
      json_object_unref(item->data);
      item->data = kept;
      changed = TRUE;
    }
    if (json_object_get_size(item->data) == 0 &&
        (item->kind == ITEM_EXECUTE_RESULT || (item->kind == ITEM_DISPLAY && item->display_id == NULL))) {
      g_ptr_array_remove_index(result->items, i);
      changed = TRUE;
      continue;
    }
    i++;
  }
  if (changed)
    rebuild_rich_outputs(result);
}
