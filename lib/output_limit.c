/* lib/output_limit.c: the output-limit rule (see the header). */
#include "config.h"

#include <string.h>

#include "lib/output_limit.h"

void
cx__output_note_cut(JsonArray *truncated, const char *part, guint64 total, guint64 omitted)
{
  if (truncated == NULL || json_array_get_length(truncated) >= CX__OUTPUT_MAX_CUTS_LISTED)
    return;
  JsonObject *entry = json_object_new();
  json_object_set_string_member(entry, "part", part);
  json_object_set_int_member(entry, "total_bytes", (gint64)total);
  json_object_set_int_member(entry, "omitted_bytes", (gint64)omitted);
  json_array_add_object_element(truncated, entry);
}

void
cx__output_split(guint64 limit, guint64 before, gsize len, gsize *in_head, gsize *omitted)
{
  if (limit == 0) {
    *in_head = len;
    *omitted = 0;
    return;
  }
  guint64 head = cx__output_head_size(limit), tail = cx__output_tail_size(limit);
  *in_head = before < head ? (gsize)MIN(head - before, (guint64)len) : 0;
  gsize rest = len - *in_head;
  *omitted = rest > tail ? (gsize)(rest - tail) : 0;
}

char *
cx__output_omitted_line(guint64 omitted)
{
  return g_strdup_printf("\n[cellexec: %" G_GUINT64_FORMAT " bytes omitted: the output "
                         "exceeded output-limit]\n", omitted);
}

char *
cx__output_cut_text(const char *text, gsize len, guint64 limit, guint64 *omitted)
{
  if (limit == 0 || len <= limit)
    return NULL;
  /* Head and tail as for the streams, moved to character boundaries so
   * that the text stays valid UTF-8. */
  gsize head = (gsize)cx__output_head_size(limit);
  gsize tail_start = len - (gsize)cx__output_tail_size(limit);
  while (head > 0 && ((guchar)text[head] & 0xc0) == 0x80)
    head--;
  while (tail_start < len && ((guchar)text[tail_start] & 0xc0) == 0x80)
    tail_start++;
  *omitted = tail_start - head;
  GString *cut = g_string_sized_new(limit + 100);
  g_string_append_len(cut, text, head);
  g_autofree char *line = cx__output_omitted_line(*omitted);
  g_string_append(cut, line);
  g_string_append_len(cut, text + tail_start, len - tail_start);
  return g_string_free(cut, FALSE);
}

/* Member KEY of OBJECT when it is a string, else NULL: outputs come from
 * code that is not trusted to keep to the types. */
static const char *
string_member(JsonObject *object, const char *key)
{
  JsonNode *node = json_object_get_member(object, key);
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING
           ? json_node_get_string(node) : NULL;
}

static gsize
json_size(JsonNode *node)
{
  g_autofree char *text = cx_json_to_string(node, FALSE);
  return strlen(text);
}

void
cx__output_bound_string(JsonObject *object, const char *key, const char *part, guint64 limit,
                        JsonArray *truncated)
{
  const char *text = string_member(object, key);
  if (text == NULL)
    return;
  gsize len = strlen(text);
  guint64 omitted;
  g_autofree char *cut = cx__output_cut_text(text, len, limit, &omitted);
  if (cut == NULL)
    return;
  cx__output_note_cut(truncated, part, len, omitted);
  json_object_set_string_member(object, key, cut);
}

char **
cx__output_lines(JsonArray *array, guint64 limit)
{
  if (array == NULL)
    return NULL;
  GStrvBuilder *builder = g_strv_builder_new();
  guint64 total = 0;
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < json_array_get_length(array); i++) {
    JsonNode *line = json_array_get_element(array, i);
    ok = JSON_NODE_HOLDS_VALUE(line) && json_node_get_value_type(line) == G_TYPE_STRING;
    if (ok) {
      total += strlen(json_node_get_string(line)) + 1; /* with its break */
      g_strv_builder_add(builder, json_node_get_string(line));
    }
  }
  char **lines = g_strv_builder_end(builder);
  g_strv_builder_unref(builder);
  if (!ok || (limit > 0 && total > limit))
    g_clear_pointer(&lines, g_strfreev);
  return lines;
}

void
cx__output_bound_lines(JsonObject *object, const char *key, const char *part, guint64 limit,
                       JsonArray *truncated)
{
  JsonNode *node = json_object_get_member(object, key);
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node)) {
    cx__output_bound_string(object, key, part, limit, truncated);
    return;
  }
  JsonArray *lines = json_node_get_array(node);
  g_autoptr(GString) joined = g_string_new(NULL);
  for (guint i = 0; i < json_array_get_length(lines); i++) {
    JsonNode *line = json_array_get_element(lines, i);
    if (JSON_NODE_HOLDS_VALUE(line) && json_node_get_value_type(line) == G_TYPE_STRING)
      g_string_append_printf(joined, "%s\n", json_node_get_string(line));
  }
  guint64 omitted;
  g_autofree char *cut = cx__output_cut_text(joined->str, joined->len, limit, &omitted);
  if (cut == NULL)
    return;
  cx__output_note_cut(truncated, part, joined->len, omitted);
  JsonArray *kept = json_array_new();
  g_auto(GStrv) split = g_strsplit(cut, "\n", -1);
  for (char **line = split; *line != NULL; line++)
    if (line[1] != NULL || **line != '\0')
      json_array_add_string_element(kept, *line);
  json_object_set_array_member(object, key, kept);
}

/* Text MIME types are cut keeping head and tail; the others (base64 of
 * images, PDF, ...) would be corrupted by a cut, so they are left out. */
static gboolean
is_text_type(const char *mime)
{
  return g_str_has_prefix(mime, "text/") || g_str_has_suffix(mime, "+xml") ||
         g_str_has_suffix(mime, "+json") || g_str_equal(mime, "application/javascript") ||
         g_str_equal(mime, "application/json") || g_str_equal(mime, "application/xml");
}

static void
bound_data(JsonObject *data, guint64 limit, JsonArray *truncated)
{
  g_autoptr(GList) members = json_object_get_members(data);
  g_autoptr(GString) left_out = NULL;
  for (GList *l = members; l != NULL; l = l->next) {
    const char *mime = l->data;
    JsonNode *value = json_object_get_member(data, mime);
    gboolean text = JSON_NODE_HOLDS_VALUE(value) &&
                    json_node_get_value_type(value) == G_TYPE_STRING;
    if (text && is_text_type(mime)) {
      cx__output_bound_string(data, mime, mime, limit, truncated);
      continue;
    }
    gsize size = text ? strlen(json_node_get_string(value)) : json_size(value);
    if (size <= limit)
      continue;
    cx__output_note_cut(truncated, mime, size, size);
    if (left_out == NULL)
      left_out = g_string_new(NULL);
    g_string_append_printf(left_out, "%s%s (%" G_GSIZE_FORMAT " bytes)",
                           left_out->len > 0 ? ", " : "", mime, size);
    json_object_remove_member(data, mime);
  }
  /* Said in text/plain, which every front end shows: better than the
   * repr of an object whose data is gone. */
  if (left_out != NULL) {
    g_autofree char *placeholder = g_strdup_printf(
      "[cellexec: output omitted: %s exceeded output-limit]", left_out->str);
    json_object_set_string_member(data, "text/plain", placeholder);
  }
}

void
cx__output_bound_bundle(JsonObject *output, guint64 limit, JsonArray *truncated)
{
  if (limit == 0)
    return;
  JsonNode *data = json_object_get_member(output, "data");
  if (data != NULL && JSON_NODE_HOLDS_OBJECT(data))
    bound_data(json_node_get_object(data), limit, truncated);
  JsonNode *metadata = json_object_get_member(output, "metadata");
  if (metadata != NULL) {
    gsize size = json_size(metadata);
    if (size > limit) {
      cx__output_note_cut(truncated, "metadata", size, size);
      json_object_set_object_member(output, "metadata", json_object_new());
    }
  }
}

guint64
cx__output_stop_threshold(guint64 limit)
{
  return limit == 0 ? 0 : MAX(limit * CX__OUTPUT_STOP_FACTOR, (guint64)CX__OUTPUT_STOP_FLOOR);
}

char *
cx__output_stop_message(guint64 stop_at, const char *stream)
{
  return g_strdup_printf("the cell wrote more than %" G_GUINT64_FORMAT " bytes to %s, more than "
                         "a cell may (%d times output-limit, at least %d MiB); raise "
                         "output-limit or print less", stop_at, stream, CX__OUTPUT_STOP_FACTOR,
                         CX__OUTPUT_STOP_FLOOR / (1024 * 1024));
}
