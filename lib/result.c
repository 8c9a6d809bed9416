/* The result bundle of one cell: building, reading, JSON in and out. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

struct cx_result {
  GString *out;
  GString *err;
  GPtrArray *outputs; /* JsonObject*, one reference each */
  gboolean success;
  char *error_type; /* NULL when no error */
  char *error_message;
  char *error_traceback;
  JsonObject *extras; /* extra top-level keys, in insertion order */
};

static const char *const standard_keys[] = {
  "stdout", "stderr", "rich_outputs", "success", "error", NULL
};

cx_result *
cx_result_new(void)
{
  cx_result *result = g_new0(cx_result, 1);
  result->out = g_string_new(NULL);
  result->err = g_string_new(NULL);
  result->outputs = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
  result->success = TRUE;
  result->extras = json_object_new();
  return result;
}

static void
clear_error(cx_result *result)
{
  g_clear_pointer(&result->error_type, g_free);
  g_clear_pointer(&result->error_message, g_free);
  g_clear_pointer(&result->error_traceback, g_free);
}

void
cx_result_free(cx_result *result)
{
  if (result == NULL)
    return;
  g_string_free(result->out, TRUE);
  g_string_free(result->err, TRUE);
  g_ptr_array_unref(result->outputs);
  clear_error(result);
  json_object_unref(result->extras);
  g_free(result);
}

void
cx_result_append_stdout(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  g_string_append_len(result->out, data, len < 0 ? (gssize)strlen(data) : len);
}

void
cx_result_append_stderr(cx_result *result, const char *data, gssize len)
{
  g_return_if_fail(result != NULL && (data != NULL || len == 0));
  g_string_append_len(result->err, data, len < 0 ? (gssize)strlen(data) : len);
}

gboolean
cx_result_add_output(cx_result *result, JsonObject *bundle)
{
  g_return_val_if_fail(result != NULL && bundle != NULL, FALSE);
  if (json_object_get_size(bundle) == 0)
    return FALSE;
  g_ptr_array_add(result->outputs, json_object_ref(bundle));
  return TRUE;
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
  clear_error(result); /* after copying: the arguments may be our own strings */
  result->error_type = new_type;
  result->error_message = new_message;
  result->error_traceback = new_traceback;
  result->success = FALSE;
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
  if (g_strv_contains(standard_keys, key)) {
    g_warning("cx_result_set_extra: '%s' is a standard key of the result bundle", key);
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

/* Cell output is bytes; JSON strings are UTF-8. */
static void
set_text_member(JsonObject *object, const char *key, const GString *text)
{
  if (g_utf8_validate_len(text->str, text->len, NULL)) {
    json_object_set_string_member(object, key, text->str);
  } else {
    g_autofree char *valid = g_utf8_make_valid(text->str, text->len);
    json_object_set_string_member(object, key, valid);
  }
}

JsonNode *
cx_result_to_json_node(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  JsonObject *object = json_object_new();
  set_text_member(object, "stdout", result->out);
  set_text_member(object, "stderr", result->err);

  JsonArray *outputs = json_array_sized_new(result->outputs->len);
  /* Bundles are never modified once added, so the document shares them. */
  for (guint i = 0; i < result->outputs->len; i++)
    json_array_add_object_element(outputs, json_object_ref(g_ptr_array_index(result->outputs, i)));
  json_object_set_array_member(object, "rich_outputs", outputs);
  json_object_set_boolean_member(object, "success", result->success);

  if (result->error_type != NULL) {
    JsonObject *error = json_object_new();
    json_object_set_string_member(error, "type", result->error_type);
    json_object_set_string_member(error, "message", result->error_message);
    json_object_set_string_member(error, "traceback", result->error_traceback);
    json_object_set_object_member(object, "error", error);
  } else {
    json_object_set_null_member(object, "error");
  }

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

char *
cx_result_to_json(const cx_result *result, gboolean pretty)
{
  g_autoptr(JsonNode) node = cx_result_to_json_node(result);
  return json_to_string(node, pretty);
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

static gboolean
read_outputs(JsonObject *object, cx_result *result, GError **error)
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

cx_result *
cx_result_from_json_node(JsonNode *node, GError **error)
{
  g_return_val_if_fail(node != NULL, NULL);
  if (!JSON_NODE_HOLDS_OBJECT(node)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "result bundle: expected a JSON object");
    return NULL;
  }
  JsonObject *object = json_node_get_object(node);
  g_autoptr(cx_result) result = cx_result_new();
  if (!read_text(object, "stdout", result, result->out, error) ||
      !read_text(object, "stderr", result, result->err, error) ||
      !read_outputs(object, result, error) || !read_error(object, result, error))
    return NULL;

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
    if (!g_strv_contains(standard_keys, key))
      json_object_set_member(result->extras, key, json_node_copy(value));
  return g_steal_pointer(&result);
}

cx_result *
cx_result_from_json(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(GError) parse_error = NULL;
  g_autoptr(JsonNode) node = json_from_string(text, &parse_error);
  if (node == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "result bundle: %s",
                parse_error != NULL ? parse_error->message : "empty document");
    return NULL;
  }
  return cx_result_from_json_node(node, error);
}

cx_result *
cx_result_copy(const cx_result *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  g_autoptr(JsonNode) node = cx_result_to_json_node(result);
  cx_result *copy = cx_result_from_json_node(node, NULL);
  /* Bytes that were not UTF-8 were replaced in JSON; keep the originals. */
  g_string_assign(copy->out, "");
  g_string_append_len(copy->out, result->out->str, result->out->len);
  g_string_assign(copy->err, "");
  g_string_append_len(copy->err, result->err->str, result->err->len);
  copy->success = result->success;
  return copy;
}
