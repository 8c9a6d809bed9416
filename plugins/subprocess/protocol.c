/* plugins/subprocess/protocol.c: message payloads of the worker protocol. */
#define _GNU_SOURCE /* sigabbrev_np */
#include "config.h"

#include <string.h>
#include <sys/wait.h>

#include <cellexec/executor.h>

#include "plugins/subprocess/protocol.h"

void
cx_protocol_encode_output_header(guint8 header[CX_OUTPUT_HEADER_SIZE], int stream,
                                 guint64 omitted)
{
  header[0] = (guint8)stream;
  for (int i = 0; i < 8; i++)
    header[1 + i] = (guint8)(omitted >> (56 - 8 * i));
}

gboolean
cx_protocol_decode_output(const guint8 *payload, gsize len, int *stream, guint64 *omitted,
                          const guint8 **data, gsize *data_len, GError **error)
{
  if (len < CX_OUTPUT_HEADER_SIZE || (payload[0] != 1 && payload[0] != 2)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "malformed OUTPUT message from the worker (%" G_GSIZE_FORMAT " bytes)", len);
    return FALSE;
  }
  *stream = payload[0];
  *omitted = 0;
  for (int i = 0; i < 8; i++)
    *omitted = (*omitted << 8) | payload[1 + i];
  *data = payload + CX_OUTPUT_HEADER_SIZE;
  *data_len = len - CX_OUTPUT_HEADER_SIZE;
  return TRUE;
}

/* PAYLOAD as a JSON object; MUTABLE: nodes the caller may change. */
static JsonNode *
parse_object(const guint8 *payload, gsize len, const char *what, gboolean mutable,
             GError **error)
{
  g_autoptr(JsonParser) parser = mutable ? json_parser_new() : json_parser_new_immutable();
  g_autoptr(GError) parse_error = NULL;
  if (!json_parser_load_from_data(parser, (const char *)payload, (gssize)len, &parse_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "malformed %s message from the worker: %s",
                what, parse_error->message);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "malformed %s message from the worker: not a JSON object", what);
    return NULL;
  }
  return json_node_ref(root);
}

JsonNode *
cx_protocol_parse_object(const guint8 *payload, gsize len, const char *what, GError **error)
{
  return parse_object(payload, len, what, FALSE, error);
}

JsonNode *
cx_protocol_parse_mutable_object(const guint8 *payload, gsize len, const char *what,
                                 GError **error)
{
  return parse_object(payload, len, what, TRUE, error);
}

JsonArray *
cx_protocol_get_array(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

JsonObject *
cx_protocol_get_object(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

gboolean
cx_protocol_send_object(int socket, guint8 type, JsonObject *object, int fd_to_pass,
                        GError **error)
{
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  json_object_unref(object);
  gsize len;
  g_autofree char *text = cx_json_to_string(node, FALSE);
  len = strlen(text);
  struct iovec part = { text, len };
  return cx_frame_sendv(socket, type, &part, 1, fd_to_pass, error);
}

char *
cx_protocol_signal_name(int signal_number)
{
  const char *abbrev = sigabbrev_np(signal_number);
  if (abbrev != NULL)
    return g_strdup_printf("SIG%s", abbrev);
  return g_strdup_printf("signal %d", signal_number);
}

JsonObject *
cx_protocol_exit_object(int wait_status)
{
  JsonObject *object = json_object_new();
  if (WIFSIGNALED(wait_status)) {
    json_object_set_int_member(object, "signal", WTERMSIG(wait_status));
    g_autofree char *name = cx_protocol_signal_name(WTERMSIG(wait_status));
    json_object_set_string_member(object, "signal_name", name);
  } else {
    json_object_set_int_member(object, "exit_status", WEXITSTATUS(wait_status));
  }
  return object;
}

int
cx_protocol_exit_signal(JsonObject *exited)
{
  return (int)json_object_get_int_member_with_default(exited, "signal", 0);
}

char *
cx_protocol_describe_exit(JsonObject *exited)
{
  int signal_number = cx_protocol_exit_signal(exited);
  if (signal_number > 0) {
    g_autofree char *name = cx_protocol_signal_name(signal_number);
    return g_strdup_printf("was killed by signal %d (%s)", signal_number, name);
  }
  return g_strdup_printf("exited with status %" G_GINT64_FORMAT,
                         json_object_get_int_member_with_default(exited, "exit_status", -1));
}

JsonObject *
cx_protocol_error_object(const GError *error)
{
  JsonObject *object = json_object_new();
  const cx_python_error *python = cx_error_get_python(error);
  if (python != NULL) {
    JsonObject *details = json_object_new();
    json_object_set_string_member(details, "type", python->type);
    json_object_set_string_member(details, "message", python->message);
    json_object_set_string_member(details, "traceback", python->traceback);
    json_object_set_int_member(details, "line", python->line);
    json_object_set_object_member(object, "python_error", details);
  } else {
    json_object_set_string_member(object, "error", error->message);
  }
  return object;
}

const char *
cx_protocol_get_string(JsonObject *object, const char *key, const char *fallback)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING
           ? json_node_get_string(node)
           : fallback;
}

gboolean
cx_protocol_check_reply(JsonObject *reply, const char *who, GError **error)
{
  JsonObject *python = cx_protocol_get_object(reply, "python_error");
  if (python != NULL) {
    /* A member of the wrong type must not become NULL: that would leave
     * ERROR unset, and a failure would pass for success. */
    cx_set_python_error(error, cx_protocol_get_string(python, "type", "Exception"),
                        cx_protocol_get_string(python, "message", ""),
                        cx_protocol_get_string(python, "traceback", ""),
                        (int)json_object_get_int_member_with_default(python, "line", 0));
    return FALSE;
  }
  if (json_object_has_member(reply, "error")) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s: %s", who,
                cx_protocol_get_string(reply, "error", "unknown error"));
    return FALSE;
  }
  return TRUE;
}

/* ---- Bounding outputs ------------------------------------------------------------ */

static void
note_cut(JsonArray *truncated, const char *part, guint64 total, guint64 omitted)
{
  if (truncated == NULL)
    return;
  JsonObject *entry = json_object_new();
  json_object_set_string_member(entry, "part", part);
  json_object_set_int_member(entry, "total_bytes", (gint64)total);
  json_object_set_int_member(entry, "omitted_bytes", (gint64)omitted);
  json_array_add_object_element(truncated, entry);
}

char *
cx_protocol_omitted_line(guint64 omitted)
{
  return g_strdup_printf("\n[cellexec: %" G_GUINT64_FORMAT " bytes omitted: the output "
                         "exceeded output-limit]\n", omitted);
}

char *
cx_protocol_cut_text(const char *text, gsize len, guint64 limit, guint64 *omitted)
{
  if (limit == 0 || len <= limit)
    return NULL;
  /* Head and tail as for the streams, moved to character boundaries so
   * that the text stays valid UTF-8. */
  gsize head = (gsize)(limit - limit / 2), tail_start = len - (gsize)(limit / 2);
  while (head > 0 && ((guchar)text[head] & 0xc0) == 0x80)
    head--;
  while (tail_start < len && ((guchar)text[tail_start] & 0xc0) == 0x80)
    tail_start++;
  *omitted = tail_start - head;
  GString *cut = g_string_sized_new(limit + 100);
  g_string_append_len(cut, text, head);
  g_autofree char *line = cx_protocol_omitted_line(*omitted);
  g_string_append(cut, line);
  g_string_append_len(cut, text + tail_start, len - tail_start);
  return g_string_free(cut, FALSE);
}

void
cx_protocol_bound_string(JsonObject *object, const char *key, const char *part, guint64 limit,
                         JsonArray *truncated)
{
  const char *text = cx_protocol_get_string(object, key, NULL);
  if (text == NULL)
    return;
  gsize len = strlen(text);
  guint64 omitted;
  g_autofree char *cut = cx_protocol_cut_text(text, len, limit, &omitted);
  if (cut == NULL)
    return;
  note_cut(truncated, part, len, omitted);
  json_object_set_string_member(object, key, cut);
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

gsize
cx_protocol_json_size(JsonNode *node)
{
  g_autofree char *text = cx_json_to_string(node, FALSE);
  return strlen(text);
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
      cx_protocol_bound_string(data, mime, mime, limit, truncated);
      continue;
    }
    gsize size = text ? strlen(json_node_get_string(value)) : cx_protocol_json_size(value);
    if (size <= limit)
      continue;
    note_cut(truncated, mime, size, size);
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
cx_protocol_bound_event(JsonObject *event, guint64 limit, JsonArray *truncated)
{
  if (limit == 0)
    return;
  const char *kind = cx_protocol_get_string(event, "event", "");
  if (g_str_equal(kind, "error")) {
    cx_protocol_bound_string(event, "evalue", "evalue", limit, truncated);
    cx_protocol_bound_string(event, "traceback", "traceback", limit, truncated);
    return;
  }
  JsonObject *data = cx_protocol_get_object(event, "data");
  if (data != NULL)
    bound_data(data, limit, truncated);
  JsonNode *metadata = json_object_get_member(event, "metadata");
  if (metadata != NULL) {
    gsize size = cx_protocol_json_size(metadata);
    if (size > limit) {
      note_cut(truncated, "metadata", size, size);
      json_object_set_object_member(event, "metadata", json_object_new());
    }
  }
}
