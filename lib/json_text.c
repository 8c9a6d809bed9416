/* JSON text leaving the program: the one place that works around what
 * json-glib 1.6 (Debian 12) gets wrong or cannot do.
 *
 *   - Its generator escapes control characters below 0x1f but writes 0x1f
 *     itself raw (an off-by-one in json_strescape), and strict parsers
 *     reject a raw control character in a string.
 *   - It writes a double whose shortest form has an exponent but no point
 *     with ".0" appended anyway: 1e20 as "1e+20.0", which no JSON parser
 *     reads (json-glib's own included).
 *   - A JsonNode string is a C string: it cannot hold a NUL byte.  Text that
 *     must keep one (a cell's stdout) is put into nodes with every NUL as
 *     the two bytes C0 80 (the "modified UTF-8" form of U+0000), which no
 *     valid UTF-8 text contains, and written out as \u0000.
 *
 * Outside a JSON string, json-glib writes only ASCII punctuation, digits,
 * letters and whitespace (never 0x1f, never C0), so the repairs can work on
 * the generated text byte by byte, knowing only whether they are inside a
 * string.
 */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

#define NUL_MARKER "\xc0\x80"

char *
cx__json_text_from_bytes(const char *data, gsize len, gboolean keep_nul)
{
  GString *text = g_string_sized_new(len + 1);
  const char *end = data + len;
  while (data < end) {
    const char *nul = memchr(data, '\0', (gsize)(end - data));
    const char *stop = nul != NULL ? nul : end;
    if (g_utf8_validate_len(data, (gsize)(stop - data), NULL)) {
      g_string_append_len(text, data, stop - data);
    } else {
      g_autofree char *valid = g_utf8_make_valid(data, stop - data);
      g_string_append(text, valid);
    }
    if (nul == NULL)
      break;
    g_string_append(text, keep_nul ? NUL_MARKER : "\xef\xbf\xbd"); /* U+FFFD */
    data = nul + 1;
  }
  return g_string_free(text, FALSE);
}

/* At P, outside strings: the ".0" json-glib put after an exponent. */
static gboolean
is_point_zero_after_exponent(const char *start, const char *p)
{
  if (p[0] != '.' || p[1] != '0' || g_ascii_isdigit(p[2]) || p == start)
    return FALSE;
  const char *q = p;
  while (q > start && g_ascii_isdigit(q[-1]))
    q--;
  if (q == p)
    return FALSE;
  if (q > start && (q[-1] == '+' || q[-1] == '-'))
    q--;
  return q > start && (q[-1] == 'e' || q[-1] == 'E');
}

char *
cx_json_to_string(JsonNode *node, gboolean pretty)
{
  g_return_val_if_fail(node != NULL, NULL);
  g_autofree char *raw = json_to_string(node, pretty);
  if (strchr(raw, 0x1f) == NULL && strstr(raw, NUL_MARKER) == NULL && strstr(raw, ".0") == NULL)
    return g_steal_pointer(&raw);
  GString *text = g_string_sized_new(strlen(raw) + 16);
  gboolean in_string = FALSE;
  for (const char *p = raw; *p != '\0'; p++) {
    if (!in_string) {
      if (*p == '"')
        in_string = TRUE;
      if (is_point_zero_after_exponent(raw, p))
        p++; /* and the '0' */
      else
        g_string_append_c(text, *p);
    } else if (*p == '\\' && p[1] != '\0') {
      g_string_append_c(text, *p++); /* the escaped character follows */
      g_string_append_c(text, *p);
    } else if (*p == '"') {
      in_string = FALSE;
      g_string_append_c(text, *p);
    } else if (*p == 0x1f) {
      g_string_append(text, "\\u001f");
    } else if (p[0] == NUL_MARKER[0] && p[1] == NUL_MARKER[1]) {
      g_string_append(text, "\\u0000");
      p++;
    } else {
      g_string_append_c(text, *p);
    }
  }
  return g_string_free(text, FALSE);
}
