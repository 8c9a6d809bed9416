/* jupyter_protocol: what cellexec's outputs are as Jupyter messages
 * (outputs.h). */
#include "config.h"

#include "jupyter_protocol/outputs.h"
#include "lib/peer_json.h"

const char *const jp_session_requests[] = {
  "complete_request", "inspect_request", "is_complete_request", "history_request",
  "comm_info_request", NULL,
};

JsonObject *
jp_object_copy_without(JsonObject *object, const char *skip)
{
  JsonObject *copy = json_object_new();
  JsonObjectIter iter;
  const char *name;
  JsonNode *member;
  json_object_iter_init(&iter, object);
  while (json_object_iter_next(&iter, &name, &member))
    if (skip == NULL || !g_str_equal(name, skip))
      json_object_set_member(copy, name, json_node_copy(member));
  return copy;
}

JsonObject *
jp_iopub_of_output(JsonObject *output, const char **msg_type)
{
  static const char *const sent[] = { "stream", "display_data", "update_display_data",
                                      "execute_result", "clear_output", "error",
                                      "comm_open", "comm_msg", "comm_close", NULL };
  const char *type = cx__peer_get_string(output, "output_type", "");
  if (!g_strv_contains(sent, type))
    return NULL;
  *msg_type = g_intern_string(type);
  return jp_object_copy_without(output, "output_type");
}
