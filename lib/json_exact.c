/* JSON text read with every value kept exactly: what a notebook needs to
 * come back as it was (json_text.c has the other workarounds of json-glib).
 *
 * cx_json_from_string reads \u0000 as U+FFFD (a JsonNode string is a C
 * string), and json-glib reads an integer beyond 64 bits wrapped (2^63 as
 * -2^63, larger ones as -1) and a number beyond a double's range (1e400)
 * as an infinity, which no JSON text can hold.  Python's json module
 * (nbformat's) keeps such integers exactly; it reads 1e400 as inf, which
 * nbformat then writes as Infinity, not JSON.  Here instead:
 *
 *   - a \u0000 in a string (or a member name) becomes the NUL marker,
 *     C0 80, which both writers of json_text.c write as \u0000;
 *   - a number token json-glib cannot hold exactly becomes a string node
 *     of the number marker, C0 81, followed by the token, which both
 *     writers write as that token again.  Keeping the text is the only way
 *     to give the value back unchanged; a number that rounds to a nearby
 *     double (0.1, 1e-400) is read as Python reads it.
 *
 * Neither marker is valid UTF-8, so no text that was read can hold one.
 *
 * Nothing is parsed here: one pass over the text skips its strings and
 * finds number tokens outside them and \u0000 escapes inside them; they are
 * rewritten as a noncharacter (U+FDD0 to U+FDEF) that the text does not
 * hold, json-glib parses the result, and a walk of the tree turns each
 * noncharacter into its marker.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "lib/internal.h"

#define FIRST_SPARE 0xfdd0
#define N_SPARES 32

/* The length of the number token at P (up to END), JSON's number
 * characters. */
static gsize
token_length(const char *p, const char *end)
{
  const char *q = p;
  while (q < end && (g_ascii_isdigit(*q) || *q == '-' || *q == '+' || *q == '.' || *q == 'e' ||
                     *q == 'E'))
    q++;
  return (gsize)(q - p);
}

static gsize
digits_at(const char *p, const char *end)
{
  const char *q = p;
  while (q < end && g_ascii_isdigit(*q))
    q++;
  return (gsize)(q - p);
}

/* Whether TOKEN (LENGTH bytes) is a JSON number json-glib would read as
 * another value: an integer outside the 64-bit range, or a number beyond
 * a double's.  A token that is not a JSON number is left for json-glib to
 * refuse. */
static gboolean
needs_keeping(const char *token, gsize length)
{
  const char *p = token, *end = token + length;
  p += p < end && *p == '-';
  gsize whole = digits_at(p, end);
  if (whole == 0 || (whole > 1 && *p == '0'))
    return FALSE;
  p += whole;
  gboolean integer = p == end;
  if (p < end && *p == '.') {
    gsize fraction = digits_at(p + 1, end);
    if (fraction == 0)
      return FALSE;
    p += 1 + fraction;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    p += p < end && (*p == '+' || *p == '-');
    gsize exponent = digits_at(p, end);
    if (exponent == 0)
      return FALSE;
    p += exponent;
  }
  if (p != end)
    return FALSE;
  /* Most numbers are plainly in range: no copy to look closer. */
  if (integer ? whole <= 18 : memchr(token, 'e', length) == NULL &&
                              memchr(token, 'E', length) == NULL && whole < 300)
    return FALSE;
  g_autofree char *copy = g_strndup(token, length);
  if (integer)
    return !g_ascii_string_to_signed(copy, 10, G_MININT64, G_MAXINT64, NULL, NULL);
  return isinf(g_ascii_strtod(copy, NULL));
}

typedef struct {
  gboolean used[N_SPARES]; /* the noncharacters the text holds */
  guint nuls;              /* how many \u0000 escapes to rewrite */
  guint kept_numbers;      /* how many number tokens to rewrite */
  gboolean numbers;        /* keep numbers too (else NUL only) */
} scan_result;

static void
note_spare(scan_result *scan, gunichar c)
{
  if (c >= FIRST_SPARE && c < FIRST_SPARE + N_SPARES)
    scan->used[c - FIRST_SPARE] = TRUE;
}

/* One pass over TEXT.  Without OUT, fills SCAN; with it, writes TEXT to OUT
 * with \u0000 as \u(NUL_SPARE) and a number to keep as the string
 * "\u(NUMBER_SPARE)TOKEN". */
static void
scan_text(const char *text, gsize len, scan_result *scan, GString *out, gunichar nul_spare,
          gunichar number_spare)
{
  const char *p = text, *end = text + len;
  gboolean in_string = FALSE;
  while (p < end) {
    const char *from = p;
    gsize step = 1;
    if (!in_string && scan->numbers && (g_ascii_isdigit(*p) || *p == '-')) {
      step = token_length(p, end);
      if (needs_keeping(p, step)) {
        scan->kept_numbers++;
        if (out != NULL) {
          g_string_append_printf(out, "\"\\u%04x", number_spare);
          g_string_append_len(out, p, (gssize)step);
          g_string_append_c(out, '"');
          p += step;
          continue;
        }
      }
    } else if (*p == '"') {
      in_string = !in_string;
    } else if (in_string && *p == '\\' && p + 1 < end) {
      step = 2;
      int code = p[1] == 'u' && p + 6 <= end ? cx__json_hex4(p + 2) : -1;
      if (code >= 0) {
        step = 6;
        note_spare(scan, (gunichar)code);
      }
      if (code == 0) {
        scan->nuls++;
        if (out != NULL) {
          g_string_append_printf(out, "\\u%04x", nul_spare);
          p += step;
          continue;
        }
      }
    } else if ((guchar)*p == 0xef && p + 3 <= end) {
      /* U+FDD0 to U+FDEF are EF B7 90 to EF B7 AF. */
      if ((guchar)p[1] == 0xb7 && (guchar)p[2] >= 0x90 && (guchar)p[2] <= 0xaf)
        note_spare(scan, FIRST_SPARE + ((guchar)p[2] - 0x90));
    }
    p += step;
    if (out != NULL)
      g_string_append_len(out, from, (gssize)(p - from));
  }
}

typedef struct {
  char nul[8];    /* the UTF-8 of the spare standing for NUL ("": none) */
  char number[8]; /* the UTF-8 of the spare that begins a kept number ("": none) */
} spares;

/* TEXT with each NUL spare as the NUL marker (g_free it), or NULL when it
 * has none. */
static char *
restore_nul(const char *text, const spares *spare)
{
  if (spare->nul[0] == '\0' || strstr(text, spare->nul) == NULL)
    return NULL;
  g_auto(GStrv) parts = g_strsplit(text, spare->nul, -1);
  return g_strjoinv(CX__JSON_NUL_MARKER, parts);
}

static void restore_node(JsonNode *node, const spares *spare);

static void
restore_object(JsonNode *node, const spares *spare)
{
  JsonObject *object = json_node_get_object(node);
  gboolean renamed = FALSE;
  JsonObjectIter iter;
  const char *name;
  JsonNode *member;
  json_object_iter_init(&iter, object);
  while (json_object_iter_next(&iter, &name, &member)) {
    restore_node(member, spare);
    renamed = renamed || (spare->nul[0] != '\0' && strstr(name, spare->nul) != NULL);
  }
  if (!renamed)
    return;
  /* json-glib cannot rename a member: the same members, in order. */
  g_autoptr(JsonObject) copy = json_object_new();
  json_object_iter_init_ordered(&iter, object);
  while (json_object_iter_next_ordered(&iter, &name, &member)) {
    g_autofree char *restored = restore_nul(name, spare);
    json_object_set_member(copy, restored != NULL ? restored : name, json_node_ref(member));
  }
  json_node_set_object(node, copy);
}

static void
restore_node(JsonNode *node, const spares *spare)
{
  switch (JSON_NODE_TYPE(node)) {
  case JSON_NODE_OBJECT:
    restore_object(node, spare);
    return;
  case JSON_NODE_ARRAY: {
    JsonArray *array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++)
      restore_node(json_array_get_element(array, i), spare);
    return;
  }
  case JSON_NODE_VALUE:
    break;
  case JSON_NODE_NULL:
  default:
    return;
  }
  if (json_node_get_value_type(node) != G_TYPE_STRING)
    return;
  const char *text = json_node_get_string(node);
  if (spare->number[0] != '\0' && g_str_has_prefix(text, spare->number)) {
    g_autofree char *number = g_strconcat(CX__JSON_NUMBER_MARKER, text + strlen(spare->number),
                                          NULL);
    json_node_set_string(node, number);
    return;
  }
  g_autofree char *restored = restore_nul(text, spare);
  if (restored != NULL)
    json_node_set_string(node, restored);
}

/* The first of the spares the scan did not see after AFTER (or from the
 * first when AFTER is 0), or 0 when none is left. */
static gunichar
unused_spare(const scan_result *scan, gunichar after)
{
  for (guint i = after != 0 ? after - FIRST_SPARE + 1 : 0; i < N_SPARES; i++)
    if (!scan->used[i])
      return FIRST_SPARE + i;
  return 0;
}

/* TEXT read with \u0000 as the NUL marker and, with NUMBERS, the numbers
 * json-glib cannot hold as the number marker and their text. */
static JsonNode *
read_keeping(const char *text, gssize length, gboolean numbers, guint max_values, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  gsize len = length < 0 ? strlen(text) : (gsize)length;
  scan_result scan = { { FALSE }, 0, 0, numbers };
  scan_text(text, len, &scan, NULL, 0, 0);
  if (scan.nuls == 0 && scan.kept_numbers == 0)
    return cx__json_parse_bounded(text, (gssize)len, max_values, error);
  /* A spare only for what the text has to rewrite. */
  gunichar nul_spare = scan.nuls > 0 ? unused_spare(&scan, 0) : 0;
  gunichar number_spare = scan.kept_numbers > 0 ? unused_spare(&scan, nul_spare) : 0;
  if ((scan.nuls > 0 && nul_spare == 0) || (scan.kept_numbers > 0 && number_spare == 0)) {
    /* Valid JSON all the same: not CX_ERROR_JSON. */
    g_set_error_literal(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                        "it holds a NUL character or a number beyond 64 bits, and every "
                        "character from U+FDD0 to U+FDEF, so cellexec cannot keep it exactly; "
                        "remove one of them");
    return NULL;
  }
  g_autoptr(GString) rewritten = g_string_sized_new(len + 16 * (scan.nuls + scan.kept_numbers));
  scan_text(text, len, &scan, rewritten, nul_spare, number_spare);
  JsonNode *root = cx__json_parse_bounded(rewritten->str, (gssize)rewritten->len, max_values, error);
  if (root == NULL)
    return NULL;
  spares spare = { "", "" };
  if (nul_spare != 0)
    spare.nul[g_unichar_to_utf8(nul_spare, spare.nul)] = '\0';
  if (number_spare != 0)
    spare.number[g_unichar_to_utf8(number_spare, spare.number)] = '\0';
  restore_node(root, &spare);
  return root;
}

JsonNode *
cx__json_from_string_exact(const char *text, gssize length, GError **error)
{
  return read_keeping(text, length, TRUE, CX_JSON_MAX_VALUES, error);
}

JsonNode *
cx_json_from_string_keeping_nul(const char *text, gssize length, GError **error)
{
  return read_keeping(text, length, FALSE, CX_JSON_MAX_VALUES, error);
}

JsonNode *
cx_json_from_string_bounded(const char *text, gssize length, guint max_values,
                            cx_json_read_flags flags, GError **error)
{
  if (flags & CX_JSON_READ_KEEP_NUL)
    return read_keeping(text, length, FALSE, max_values, error);
  return cx__json_parse_bounded(text, length, max_values, error);
}

const char *
cx__json_kept_number(JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
    return NULL;
  const char *text = json_node_get_string(node);
  return g_str_has_prefix(text, CX__JSON_NUMBER_MARKER) ? text + strlen(CX__JSON_NUMBER_MARKER)
                                                       : NULL;
}

gboolean
cx__json_node_is_text(JsonNode *node)
{
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
         json_node_get_value_type(node) == G_TYPE_STRING && cx__json_kept_number(node) == NULL;
}
