/* tests/fuzz/fuzz_json_text.c: libFuzzer target for cx_json_from_string,
 * the one way JSON comes in, and the recursive walks of what it returns:
 * json-glib's generator (cx_json_to_string), the deep copy, nbformat's
 * Python-style writer, and json-glib freeing the tree.
 *
 * Input: a nesting byte, a width byte, then JSON text.  With a width byte
 * W from 1 to 21 the text is repeated 2^W times as the elements of an
 * array (32 MiB at most), so that a mutation of one byte reaches past
 * CX_JSON_MAX_VALUES (regressions/json_text/wide-2097152 is that many
 * empty arrays: their tree took 250 MB, and 60 MB of them aborted the
 * host); most widths stay small, as a parse of a million values is slow.  That is put inside (nesting byte >> 1) * 1024
 * levels of arrays (bit 0: of {"k": ...} objects), so that one byte also
 * reaches far past CX_JSON_MAX_DEPTH (up to 130,048 levels;
 * regressions/json_text/nested-100352 is 100,352, which crashed json-glib's
 * parser).  Whatever is accepted must be no deeper and hold no more values
 * than the limits, and every walk of it must return. */
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

/* The values of NODE, as cx_json_from_string counts them: each array,
 * object and member value, and each element. */
static guint64
values_of(JsonNode *node)
{
  guint64 values = 1;
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++)
      values += values_of(json_array_get_element(array, i));
  } else if (JSON_NODE_HOLDS_OBJECT(node)) {
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    json_object_iter_init(&iter, json_node_get_object(node));
    while (json_object_iter_next(&iter, &name, &member))
      values += values_of(member);
  }
  return values;
}

#define WIDEST 21
#define WIDE_TEXT_MAX (32u << 20)

/* ITEM (LEN bytes) as it goes into the text: alone when WIDTH is 0 or
 * more than WIDEST, else 2^WIDTH copies of it in an array, WIDE_TEXT_MAX
 * bytes at most. */
static void
append_wide(GString *text, const char *item, gsize len, guint width)
{
  if (width == 0 || width > WIDEST) {
    g_string_append_len(text, item, (gssize)len);
    return;
  }
  guint copies = MIN(1u << width, WIDE_TEXT_MAX / (len + 1));
  g_string_append_c(text, '[');
  for (guint i = 0; i < copies; i++) {
    if (i > 0)
      g_string_append_c(text, ',');
    g_string_append_len(text, item, (gssize)len);
  }
  g_string_append_c(text, ']');
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  if (size < 2)
    return 0;
  guint levels = (guint)(data[0] >> 1) * 1024;
  gboolean objects = data[0] & 1;
  GString *text = g_string_sized_new(size + levels * 6);
  for (guint i = 0; i < levels; i++)
    g_string_append(text, objects ? "{\"k\":" : "[");
  append_wide(text, (const char *)data + 2, size - 2, data[1]);
  for (guint i = 0; i < levels; i++)
    g_string_append_c(text, objects ? '}' : ']');

  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text->str, (gssize)text->len, &error);
  g_string_free(text, TRUE);
  if (node == NULL)
    return 0;
  if (depth_of(node) > CX_JSON_MAX_DEPTH)
    __builtin_trap(); /* deeper than the limit got through */
  if (values_of(node) > CX_JSON_MAX_VALUES)
    __builtin_trap(); /* wider than the limit got through */
  g_autofree char *again = cx_json_to_string(node, FALSE);
  g_autoptr(JsonNode) copy = cx__json_deep_copy(node);
  /* The Python-style writer indents each level: its output grows with the
   * square of the depth, so only the fuzzer's own nesting goes there. */
  if (levels == 0) {
    g_autofree char *python = cx__json_to_python_text(copy, 1);
  }
  return 0;
}
