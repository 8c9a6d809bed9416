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
