/* jupyter_protocol/message.c: the codec of Jupyter messages (message.h). */
#include "config.h"

#include <string.h>

#include <cellexec/cellexec.h>

#include "jupyter_protocol/message.h"
#include "lib/peer_json.h"

const char *const jp_channel_names[JP_N_CHANNELS] = { "shell", "iopub", "stdin", "control", "hb" };

void
jp_message_free(jp_message *message)
{
  if (message == NULL)
    return;
  g_free(message->msg_type);
  g_free(message->msg_id);
  g_free(message->parent_id);
  g_clear_pointer(&message->header, json_object_unref);
  g_clear_pointer(&message->parent, json_object_unref);
  g_clear_pointer(&message->metadata, json_object_unref);
  g_clear_pointer(&message->content, json_object_unref);
  g_clear_pointer(&message->header_json, g_bytes_unref);
  g_clear_pointer(&message->identities, g_ptr_array_unref);
  g_free(message->too_large);
  g_free(message);
}

char *
jp_sign(const char *key, const GBytes *const frames[4])
{
  g_autoptr(GHmac) hmac = g_hmac_new(G_CHECKSUM_SHA256, (const guchar *)key, strlen(key));
  for (int i = 0; i < 4; i++) {
    gsize len;
    const guchar *data = g_bytes_get_data((GBytes *)frames[i], &len);
    g_hmac_update(hmac, data, len);
  }
  return g_strdup(g_hmac_get_string(hmac));
}

gboolean
jp_signature_equal(const char *expected, const char *given, gsize given_len)
{
  gsize len = strlen(expected);
  if (len != given_len)
    return FALSE;
  guint8 diff = 0;
  for (gsize i = 0; i < len; i++)
    diff |= (guint8)expected[i] ^ (guint8)given[i];
  return diff == 0;
}

GBytes *
jp_json_bytes(JsonObject *object)
{
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  char *text = cx_json_to_string(node, FALSE);
  return g_bytes_new_take(text, strlen(text));
}

JsonObject *
jp_header_new(const char *session, const char *username, const char *msg_type, char **msg_id)
{
  *msg_id = g_uuid_string_random();
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format_iso8601(now);
  JsonObject *header = json_object_new();
  json_object_set_string_member(header, "msg_id", *msg_id);
  json_object_set_string_member(header, "session", session);
  json_object_set_string_member(header, "username", username);
  json_object_set_string_member(header, "date", date);
  json_object_set_string_member(header, "msg_type", msg_type);
  json_object_set_string_member(header, "version", JP_PROTOCOL_VERSION);
  return header;
}

GPtrArray *
jp_message_encode(const char *key, GPtrArray *identities, JsonObject *header, GBytes *parent_json,
                  JsonObject *metadata, JsonObject *content)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  for (guint i = 0; identities != NULL && i < identities->len; i++)
    g_ptr_array_add(frames, g_bytes_ref(identities->pdata[i]));
  g_ptr_array_add(frames, g_bytes_new_static(JP_DELIMITER, strlen(JP_DELIMITER)));
  JsonObject *parts[4] = { header, NULL, metadata, content };
  GBytes *json[4];
  for (int i = 0; i < 4; i++) {
    g_autoptr(JsonObject) empty = parts[i] == NULL ? json_object_new() : NULL;
    json[i] = i == 1 && parent_json != NULL ? g_bytes_ref(parent_json)
                                            : jp_json_bytes(parts[i] != NULL ? parts[i] : empty);
  }
  char *signature = *key ? jp_sign(key, (const GBytes *const *)json) : g_strdup("");
  g_ptr_array_add(frames, g_bytes_new_take(signature, strlen(signature)));
  for (int i = 0; i < 4; i++)
    g_ptr_array_add(frames, json[i]);
  return frames;
}

/* A kernel encodes text holding undecodable bytes with surrogateescape,
 * so a message may carry bytes that are not UTF-8; jupyter_client reads
 * them as U+FFFD (decode('utf8', 'replace')), and so do we, instead of
 * dropping the message.  JSON read from DATA, KEEPING_NUL or not, of at
 * most MAX_VALUES values. */
static JsonNode *
parse_text(const char *data, gsize len, gboolean keeping_nul, guint max_values, GError **error)
{
  g_autofree char *valid = g_utf8_validate_len(data, len, NULL) ? NULL
                                                                 : g_utf8_make_valid(data, (gssize)len);
  if (valid != NULL) {
    data = valid;
    len = strlen(valid);
  }
  return cx_json_from_string_bounded(data, (gssize)len, max_values,
                                     keeping_nul ? CX_JSON_READ_KEEP_NUL : CX_JSON_READ_DEFAULT,
                                     error);
}

static JsonObject *
object_of(JsonNode *root)
{
  return root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_object_ref(json_node_get_object(root))
                                                      : NULL;
}

JsonNode *
jp_json_from_file(const char *file, GError **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!cx_file_get_contents(file, &text, &length, error))
    return NULL;
  return cx_json_from_string(text, (gssize)length, error);
}

JsonObject *
jp_json_parse_object(const char *data, gsize len)
{
  g_autoptr(JsonNode) root = parse_text(data, len, FALSE, CX_JSON_MAX_VALUES, NULL);
  return object_of(root);
}

/* The content of M in BYTES.  Refused for its size (CX_ERROR_TOO_LARGE:
 * a display of millions of values) it is {} and M->too_large says why:
 * the request it answers learns what became of its output. */
static JsonObject *
parse_content(jp_message *m, GBytes *bytes)
{
  gsize len;
  const char *data = g_bytes_get_data(bytes, &len);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = parse_text(data, len, FALSE, CX_JSON_MAX_VALUES, &error);
  if (root == NULL && g_error_matches(error, CX_ERROR, CX_ERROR_TOO_LARGE)) {
    m->too_large = g_strdup(error->message);
    return json_object_new();
  }
  return object_of(root);
}

static JsonObject *
parse_object(GBytes *bytes)
{
  gsize len;
  const char *data = g_bytes_get_data(bytes, &len);
  return jp_json_parse_object(data, len);
}

/* Whether NODE holds CX_RESULT_NUL in a string or a member name. */
static gboolean
holds_nul_marker(JsonNode *node)
{
  if (JSON_NODE_HOLDS_OBJECT(node)) {
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    json_object_iter_init(&iter, json_node_get_object(node));
    while (json_object_iter_next(&iter, &name, &member))
      if (strstr(name, CX_RESULT_NUL) != NULL || holds_nul_marker(member))
        return TRUE;
    return FALSE;
  }
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++)
      if (holds_nul_marker(json_array_get_element(array, i)))
        return TRUE;
    return FALSE;
  }
  return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING &&
         strstr(json_node_get_string(node), CX_RESULT_NUL) != NULL;
}

/* A NUL the peer sent in M's content (DATA, or its MEMBER): json-glib
 * cannot hold one, so the first read gave U+FFFD.  A stream's text and an
 * error's name, value and traceback reach the result as the cell wrote
 * them: read again keeping it (as CX_RESULT_NUL; outputs.c gives stream
 * text its NUL byte back).  So does an execute_request's code, which then
 * fails as Python fails such source, where U+FFFD would have run altered
 * code.  In any other content it stays U+FFFD, and M->nul_replaced says so
 * (outputs.c lists it).  Read again only when DATA holds an escaped NUL. */
static void
keep_nul_of_content(jp_message *m, const char *data, gsize len, const char *member)
{
  if (g_strstr_len(data, (gssize)len, "\\u0000") == NULL)
    return;
  g_autoptr(JsonNode) root = parse_text(data, len, TRUE, CX_JSON_MAX_VALUES, NULL);
  JsonNode *content = root != NULL && JSON_NODE_HOLDS_OBJECT(root) && member != NULL
                        ? json_object_get_member(json_node_get_object(root), member)
                        : root;
  if (content == NULL || !JSON_NODE_HOLDS_OBJECT(content))
    return;
  if (g_str_equal(m->msg_type, "stream") || g_str_equal(m->msg_type, "error") ||
      g_str_equal(m->msg_type, "execute_request")) {
    json_object_unref(m->content);
    m->content = json_object_ref(json_node_get_object(content));
  } else {
    m->nul_replaced = holds_nul_marker(content);
  }
}

/* M's type and ids from its header and parent; FALSE (M unusable) when
 * the header has no msg_type or the parent or content is missing. */
static gboolean
message_complete(jp_message *m)
{
  const char *type = m->header ? cx__peer_get_string(m->header, "msg_type", NULL) : NULL;
  if (m->parent == NULL || m->metadata == NULL || m->content == NULL || type == NULL)
    return FALSE;
  m->msg_type = g_strdup(type);
  m->msg_id = g_strdup(cx__peer_get_string(m->header, "msg_id", ""));
  m->parent_id = g_strdup(cx__peer_get_string(m->parent, "msg_id", ""));
  return TRUE;
}

jp_recv_status
jp_message_decode(const char *key, GPtrArray *frames, jp_counters *counters, jp_message **message)
{
  *message = NULL;
  guint delimiter = 0;
  for (; delimiter < frames->len; delimiter++) {
    gsize len;
    const void *data = g_bytes_get_data(frames->pdata[delimiter], &len);
    if (len == strlen(JP_DELIMITER) && memcmp(data, JP_DELIMITER, len) == 0)
      break;
  }
  if (delimiter + 6 > frames->len) {
    g_atomic_int_inc(&counters->malformed);
    return JP_RECV_DROPPED;
  }
  const GBytes *json[4];
  for (int i = 0; i < 4; i++)
    json[i] = frames->pdata[delimiter + 2 + i];
  gsize signature_len;
  const char *signature = g_bytes_get_data(frames->pdata[delimiter + 1], &signature_len);
  g_autofree char *expected = *key ? jp_sign(key, json) : g_strdup("");
  if (!jp_signature_equal(expected, signature ? signature : "", signature_len)) {
    g_atomic_int_inc(&counters->bad_signature);
    return JP_RECV_DROPPED;
  }
  g_autoptr(jp_message) m = g_new0(jp_message, 1);
  m->channel = -1;
  m->identities = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  for (guint i = 0; i < delimiter; i++)
    g_ptr_array_add(m->identities, g_bytes_ref(frames->pdata[i]));
  m->header = parse_object((GBytes *)json[0]);
  m->parent = parse_object((GBytes *)json[1]);
  m->metadata = parse_object((GBytes *)json[2]);
  m->content = parse_content(m, (GBytes *)json[3]);
  if (!message_complete(m)) {
    g_atomic_int_inc(&counters->malformed);
    return JP_RECV_DROPPED;
  }
  m->header_json = g_bytes_ref((GBytes *)json[0]);
  gsize content_len;
  const char *content = g_bytes_get_data((GBytes *)json[3], &content_len);
  if (m->too_large == NULL)
    keep_nul_of_content(m, content, content_len, NULL);
  *message = g_steal_pointer(&m);
  return JP_RECV_OK;
}

static JsonObject *
object_member(JsonObject *object, const char *name)
{
  JsonNode *node = json_object_get_member(object, name);
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_object_ref(json_node_get_object(node)) : NULL;
}

char *
jp_websocket_text_of_parts(int channel, GBytes *const parts[4], const char *msg_id,
                           const char *msg_type)
{
  static const char *const names[4] = { "header", "parent_header", "metadata", "content" };
  GString *text = g_string_new("{");
  /* The ids are JSON strings already made safe by the header's writer;
   * written again here through json-glib's escaping all the same. */
  for (int i = 0; i < 2; i++) {
    g_autoptr(JsonNode) value = json_node_init_string(json_node_alloc(),
                                                      i == 0 ? msg_id : msg_type);
    g_autofree char *json = cx_json_to_string(value, FALSE);
    g_string_append_printf(text, "\"%s\":%s,", i == 0 ? "msg_id" : "msg_type", json);
  }
  for (int i = 0; i < 4; i++) {
    gsize len;
    const char *json = g_bytes_get_data(parts[i], &len);
    g_string_append_printf(text, "\"%s\":", names[i]);
    g_string_append_len(text, json, (gssize)len);
    g_string_append_c(text, ',');
  }
  g_string_append_printf(text, "\"channel\":\"%s\",\"buffers\":[]}", jp_channel_names[channel]);
  return g_string_free(text, FALSE);
}

GBytes *
jp_websocket_v1_of_parts(int channel, GBytes *const parts[4])
{
  const char *name = jp_channel_names[channel];
  const guint64 n = 6; /* offsets: the channel's start, each part's, and the end */
  GByteArray *frame = g_byte_array_new();
  guint64 word = GUINT64_TO_LE(n);
  g_byte_array_append(frame, (const guint8 *)&word, sizeof word);
  guint64 offset = 8 * (n + 1);
  for (int i = -1; i < 4; i++) {
    word = GUINT64_TO_LE(offset);
    g_byte_array_append(frame, (const guint8 *)&word, sizeof word);
    offset += i < 0 ? strlen(name) : g_bytes_get_size(parts[i]);
  }
  word = GUINT64_TO_LE(offset);
  g_byte_array_append(frame, (const guint8 *)&word, sizeof word);
  g_byte_array_append(frame, (const guint8 *)name, strlen(name));
  for (int i = 0; i < 4; i++) {
    gsize len;
    const guint8 *data = g_bytes_get_data(parts[i], &len);
    g_byte_array_append(frame, data, len);
  }
  return g_byte_array_free_to_bytes(frame);
}

/* The four parts of a message as JSON (NULL objects: {}). */
static void
parts_of(JsonObject *header, JsonObject *parent, JsonObject *metadata, JsonObject *content,
         GBytes *parts[4])
{
  JsonObject *objects[4] = { header, parent, metadata, content };
  g_autoptr(JsonObject) empty = json_object_new();
  for (int i = 0; i < 4; i++)
    parts[i] = jp_json_bytes(objects[i] != NULL ? objects[i] : empty);
}

char *
jp_message_to_websocket(int channel, JsonObject *header, JsonObject *parent, JsonObject *metadata,
                        JsonObject *content)
{
  GBytes *parts[4];
  parts_of(header, parent, metadata, content, parts);
  char *text = jp_websocket_text_of_parts(channel, parts,
                                          cx__peer_get_string(header, "msg_id", ""),
                                          cx__peer_get_string(header, "msg_type", ""));
  for (int i = 0; i < 4; i++)
    g_bytes_unref(parts[i]);
  return text;
}

GBytes *
jp_message_to_websocket_v1(int channel, JsonObject *header, JsonObject *parent, JsonObject *metadata,
                           JsonObject *content)
{
  GBytes *parts[4];
  parts_of(header, parent, metadata, content, parts);
  GBytes *frame = jp_websocket_v1_of_parts(channel, parts);
  for (int i = 0; i < 4; i++)
    g_bytes_unref(parts[i]);
  return frame;
}

/* At most this many offsets in a v1 frame: the parts and a few buffers. */
#define V1_MAX_OFFSETS 64

jp_message *
jp_message_from_websocket_v1(const guint8 *data, gsize len, guint max_values,
                             jp_counters *counters)
{
  guint64 n = 0;
  if (len >= 8) {
    memcpy(&n, data, 8);
    n = GUINT64_FROM_LE(n);
  }
  /* The channel and four parts at least, and a table inside the frame. */
  gboolean ok = n >= 6 && n <= V1_MAX_OFFSETS && 8 * (n + 1) <= len;
  guint64 offsets[V1_MAX_OFFSETS];
  for (guint64 i = 0; ok && i < n; i++) {
    memcpy(&offsets[i], data + 8 * (i + 1), 8);
    offsets[i] = GUINT64_FROM_LE(offsets[i]);
    ok = offsets[i] <= len && (i == 0 ? offsets[0] == 8 * (n + 1) : offsets[i] >= offsets[i - 1]);
  }
  g_autoptr(jp_message) m = g_new0(jp_message, 1);
  m->channel = -1;
  if (ok) {
    gsize channel_len = offsets[1] - offsets[0];
    for (int i = 0; i < JP_N_CHANNELS; i++)
      if (channel_len == strlen(jp_channel_names[i]) &&
          memcmp(data + offsets[0], jp_channel_names[i], channel_len) == 0)
        m->channel = i;
    JsonObject **objects[4] = { &m->header, &m->parent, &m->metadata, &m->content };
    for (int i = 0; i < 4; i++) {
      guint64 end = (guint64)i + 2 < n ? offsets[i + 2] : len;
      g_autoptr(JsonNode) part = parse_text((const char *)data + offsets[i + 1],
                                            end - offsets[i + 1], FALSE, max_values, NULL);
      *objects[i] = object_of(part);
    }
  }
  if (!ok || m->channel < 0 || !message_complete(m)) {
    g_atomic_int_inc(&counters->malformed);
    return NULL;
  }
  m->header_json = jp_json_bytes(m->header);
  guint64 content_end = 5 < n ? offsets[5] : len;
  keep_nul_of_content(m, (const char *)data + offsets[4], content_end - offsets[4], NULL);
  return g_steal_pointer(&m);
}

/* A message whose text was too large to read (WHY): of no channel, type
 * or parent, as none could be read. */
static jp_message *
unreadable_message(const char *why)
{
  jp_message *m = g_new0(jp_message, 1);
  m->channel = -1;
  m->msg_type = g_strdup("");
  m->msg_id = g_strdup("");
  m->parent_id = g_strdup("");
  m->header = json_object_new();
  m->parent = json_object_new();
  m->metadata = json_object_new();
  m->content = json_object_new();
  m->header_json = jp_json_bytes(m->header);
  m->too_large = g_strdup(why);
  return m;
}

jp_message *
jp_message_from_websocket(const char *text, gsize len, guint max_values, jp_counters *counters)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = parse_text(text, len, FALSE, max_values, &error);
  if (root == NULL && g_error_matches(error, CX_ERROR, CX_ERROR_TOO_LARGE))
    return unreadable_message(error->message);
  g_autoptr(JsonObject) o = object_of(root);
  g_autoptr(jp_message) m = g_new0(jp_message, 1);
  m->channel = -1;
  if (o != NULL) {
    m->header = object_member(o, "header");
    m->parent = object_member(o, "parent_header");
    m->metadata = object_member(o, "metadata");
    m->content = object_member(o, "content");
    const char *channel = cx__peer_get_string(o, "channel", "");
    for (int i = 0; i < JP_N_CHANNELS; i++)
      if (g_strcmp0(channel, jp_channel_names[i]) == 0)
        m->channel = i;
  }
  /* Servers may leave out an empty metadata. */
  if (o != NULL && m->metadata == NULL)
    m->metadata = json_object_new();
  if (m->channel < 0 || !message_complete(m)) {
    g_atomic_int_inc(&counters->malformed);
    return NULL;
  }
  m->header_json = jp_json_bytes(m->header);
  keep_nul_of_content(m, text, len, "content");
  return g_steal_pointer(&m);
}
