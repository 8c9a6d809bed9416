/* A result bundle read from its JSON form (cx_result_from_json): every
 * member checked, so a bundle from a file or another process builds the
 * same result its writer had, or fails saying which member is wrong. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "lib/result_private.h"

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
  output_item *item = cx__result_add_bundle_item(result, kind, data, metadata);
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
    cx__result_append_stream(result, 1, out->str, out->len);
    cx__result_append_stream(result, 2, err->str, err->len);
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
        !cx__result_text_is_valid(json_node_get_string(node), place == NUL_HERE)) {
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
    g_autofree char *plain_text = cx__result_error_text(result->error_traceback, FALSE);
    g_auto(GStrv) plain = cx__result_traceback_lines(plain_text);
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
    if (!cx__result_key_is_reserved(key))
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
