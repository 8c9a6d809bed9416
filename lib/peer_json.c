/* Members of a peer's JSON, read only when they are of the kind asked for
 * (lib/peer_json.h). */
#include "config.h"

#include "lib/peer_json.h"

JsonArray *
cx__peer_get_array(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

JsonObject *
cx__peer_get_object(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

/* Member KEY of OBJECT when it is a value of TYPE, else NULL. */
static JsonNode *
get_value_of_type(JsonObject *object, const char *key, GType type)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == type
           ? node
           : NULL;
}

const char *
cx__peer_get_string(JsonObject *object, const char *key, const char *fallback)
{
  JsonNode *node = get_value_of_type(object, key, G_TYPE_STRING);
  return node != NULL ? json_node_get_string(node) : fallback;
}

gint64
cx__peer_get_int(JsonObject *object, const char *key, gint64 fallback)
{
  JsonNode *node = get_value_of_type(object, key, G_TYPE_INT64);
  return node != NULL ? json_node_get_int(node) : fallback;
}

gboolean
cx__peer_get_boolean(JsonObject *object, const char *key, gboolean fallback)
{
  JsonNode *node = get_value_of_type(object, key, G_TYPE_BOOLEAN);
  return node != NULL ? json_node_get_boolean(node) : fallback;
}

JsonObject *
cx__peer_reply_new(JsonNode *value, const GError *error, gboolean python_details)
{
  JsonObject *reply = json_object_new();
  if (error == NULL) {
    json_object_set_member(reply, "value", value != NULL ? value : json_node_new(JSON_NODE_NULL));
    return reply;
  }
  if (value != NULL)
    json_node_unref(value);
  const cx_python_error *python = python_details ? cx_error_get_python(error) : NULL;
  if (python != NULL) {
    JsonObject *details = json_object_new();
    json_object_set_string_member(details, "type", python->type);
    json_object_set_string_member(details, "message", python->message);
    json_object_set_string_member(details, "traceback", python->traceback);
    json_object_set_int_member(details, "line", python->line);
    json_object_set_object_member(reply, "python_error", details);
  } else {
    json_object_set_string_member(reply, "error", error->message);
  }
  return reply;
}

gboolean
cx__peer_reply_check(JsonObject *reply, const char *who, GError **error)
{
  JsonObject *python = cx__peer_get_object(reply, "python_error");
  if (python != NULL) {
    /* A member of the wrong type must not become NULL: that would leave
     * ERROR unset, and a failure would pass for success. */
    cx_set_python_error(error, cx__peer_get_string(python, "type", "Exception"),
                        cx__peer_get_string(python, "message", ""),
                        cx__peer_get_string(python, "traceback", ""),
                        (int)cx__peer_get_int(python, "line", 0));
    return FALSE;
  }
  if (!json_object_has_member(reply, "error"))
    return TRUE;
  const char *message = cx__peer_get_string(reply, "error", "unknown error");
  if (who != NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s: %s", who, message);
  else
    g_set_error_literal(error, CX_ERROR, CX_ERROR_FAILED, message);
  return FALSE;
}

JsonNode *
cx__peer_reply_value(JsonObject *reply)
{
  JsonNode *value = reply != NULL ? json_object_get_member(reply, "value") : NULL;
  return value != NULL ? json_node_copy(value) : json_node_new(JSON_NODE_NULL);
}
