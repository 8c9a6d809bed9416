/* tests/fuzz/fuzz_json_text.c: libFuzzer target for cx_json_from_string,
 * the one way JSON comes in, and the recursive walks of what it returns:
 * json-glib's generator (cx_json_to_string), the deep copy, nbformat's
 * Python-style writer, and json-glib freeing the tree.
 *
 * Input: a nesting byte, then JSON text.  The text is put inside
 * (byte >> 1) * 1024 levels of arrays (bit 0: of {"k": ...} objects), so
 * that a mutation of one byte reaches far past CX_JSON_MAX_DEPTH (up to
 * 130,048 levels; regressions/json_text/nested-100352 is 100,352, which
 * crashed json-glib's parser).  Whatever is accepted must be no deeper than
 * the limit, and every walk of it must return. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Bounded by the limit the parse enforces (which is what is checked). */
static guint
depth_of(JsonNode *node)
{
  guint deepest = 0, depth;
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++)
      if ((depth = depth_of(json_array_get_element(array, i))) > deepest)
        deepest = depth;
    return deepest + 1;
  }
  if (JSON_NODE_HOLDS_OBJECT(node)) {
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    json_object_iter_init(&iter, json_node_get_object(node));
    while (json_object_iter_next(&iter, &name, &member))
      if ((depth = depth_of(member)) > deepest)
        deepest = depth;
    return deepest + 1;
  }
  return 0;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  if (size < 1)
    return 0;
  guint levels = (guint)(data[0] >> 1) * 1024;
  gboolean objects = data[0] & 1;
  GString *text = g_string_sized_new(size + levels * 6);
  for (guint i = 0; i < levels; i++)
    g_string_append(text, objects ? "{\"k\":" : "[");
  g_string_append_len(text, (const char *)data + 1, (gssize)size - 1);
  for (guint i = 0; i < levels; i++)
    g_string_append_c(text, objects ? '}' : ']');

  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text->str, (gssize)text->len, &error);
  g_string_free(text, TRUE);
  if (node == NULL)
    return 0;
  if (depth_of(node) > CX_JSON_MAX_DEPTH)
    __builtin_trap(); /* deeper than the limit got through */
  g_autofree char *again = cx_json_to_string(node, FALSE);
  g_autoptr(JsonNode) copy = cx__json_deep_copy(node);
  /* The Python-style writer indents each level: its output grows with the
   * square of the depth, so only the fuzzer's own nesting goes there. */
  if (levels == 0) {
    g_autofree char *python = cx__json_to_python_text(copy, 1);
  }
  return 0;
}
