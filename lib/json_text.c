/* JSON text leaving and entering the program: the one place that works
 * around what json-glib 1.6 (Debian 12) gets wrong or cannot do.
 *
 *   - Its generator escapes control characters below 0x1f but writes 0x1f
 *     itself raw (an off-by-one in json_strescape), and strict parsers
 *     reject a raw control character in a string.
 *   - It writes a double whose shortest form has an exponent but no point
 *     with ".0" appended anyway: 1e20 as "1e+20.0", which no JSON parser
 *     reads (json-glib's own included).
 *   - It writes every double with 17 significant digits ("%.17g"), so a
 *     duration of 0.0125 s reads 0.012500000000000001; numbers are
 *     rewritten in the shortest form that reads back as the same double,
 *     as Python's repr() does.
 *   - A JsonNode string is a C string: it cannot hold a NUL byte.  Text that
 *     must keep one (a cell's stdout) is put into nodes with every NUL as
 *     the two bytes C0 80 (the "modified UTF-8" form of U+0000), which no
 *     valid UTF-8 text contains, and written out as \u0000.  Read back
 *     (cx_json_from_string), a \u0000 would end the string; it is read as
 *     U+FFFD instead (the C0 80 form is not valid UTF-8, which json-glib's
 *     parser requires).
 *   - Its parser turns a \u escape of a lone surrogate (which Python's json
 *     writes for text holding undecodable bytes) into bytes that are not
 *     UTF-8, eats the character after it, or fails the whole document;
 *     cx_json_from_string reads one as U+FFFD too.
 *   - Its parser recurses once per level of nesting, and crashes (the
 *     stack overflows) where it should fail; it builds the whole tree, at
 *     up to a hundred times the size of the text, and GLib aborts the
 *     program when memory runs out: cx_json_from_string refuses more than
 *     CX_JSON_MAX_DEPTH levels, CX_JSON_MAX_VALUES values or
 *     CX_JSON_MAX_BYTES bytes before it starts (cx__json_check_bounds).
 *   - json_node_copy() does not copy objects, arrays or values: the copy
 *     shares them, and their reference counts (unlike a JsonNode's) are
 *     plain integers.  A tree changed through a copy changes the original,
 *     and one shared by two threads can be freed while in use;
 *     cx__json_deep_copy (at the end) copies everything.
 *
 * Notebooks are written the way Python's json module writes them
 * (cx__json_to_python_text, at the end), not by json-glib's generator:
 * nbformat's layout must come out byte for byte.
 *
 * Outside a JSON string, json-glib writes only ASCII punctuation, digits,
 * letters and whitespace (never 0x1f, never C0), so the repairs can work on
 * the generated text byte by byte, knowing only whether they are inside a
 * string.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"

#define NUL_MARKER CX__JSON_NUL_MARKER

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

/* The length of the infinity or NaN json-glib writes at P ("inf", "-inf",
 * "nan", maybe with ".0"), or 0.  No JSON text can hold one: it becomes
 * null.  The core refuses them on the way in (cx_result_from_json); only a
 * plugin's own extra key can bring one. */
static gsize
non_finite_length(const char *p)
{
  const char *q = p + (*p == '-');
  if (strncmp(q, "inf", 3) != 0 && strncmp(q, "nan", 3) != 0)
    return 0;
  q += 3;
  if (q[0] == '.' && q[1] == '0')
    q += 2;
  return (gsize)(q - p);
}

/* The length of the number token at P (json-glib's doubles may carry a
 * stray ".0" after the exponent, which is taken in and dropped). */
static gsize
number_length(const char *p)
{
  const char *q = p;
  while (g_ascii_isdigit(*q) || *q == '-' || *q == '+' || *q == '.' || *q == 'e' || *q == 'E')
    q++;
  return (gsize)(q - p);
}

/* VALUE (finite) as Python's repr() writes a float, and so json.dumps: the
 * fewest digits that read back as VALUE, positional from 1e-4 up to 1e16
 * (with ".0" when whole), else as D.DDDe+XX. */
static void
append_python_float(GString *text, double value)
{
  char shortest[G_ASCII_DTOSTR_BUF_SIZE];
  for (int precision = 0; precision <= 16; precision++) {
    char format[8];
    g_snprintf(format, sizeof format, "%%.%de", precision);
    g_ascii_formatd(shortest, sizeof shortest, format, value);
    if (g_ascii_strtod(shortest, NULL) == value)
      break;
  }
  /* shortest is [-]D[.DDD]e(+|-)XX: take its digits and exponent apart. */
  const char *p = shortest;
  if (*p == '-')
    g_string_append_c(text, *p++);
  char digits[20];
  gsize n = 0;
  for (; *p != 'e'; p++)
    if (g_ascii_isdigit(*p))
      digits[n++] = *p;
  while (n > 1 && digits[n - 1] == '0')
    n--;
  int exponent = atoi(p + 1);
  if (exponent < -4 || exponent >= 16) {
    g_string_append_c(text, digits[0]);
    if (n > 1) {
      g_string_append_c(text, '.');
      g_string_append_len(text, digits + 1, (gssize)n - 1);
    }
    g_string_append_printf(text, "e%c%02d", exponent < 0 ? '-' : '+', ABS(exponent));
  } else if (exponent < 0) {
    g_string_append(text, "0.");
    for (int i = -1; i > exponent; i--)
      g_string_append_c(text, '0');
    g_string_append_len(text, digits, (gssize)n);
  } else {
    gsize whole = (gsize)exponent + 1;
    for (gsize i = 0; i < whole; i++)
      g_string_append_c(text, i < n ? digits[i] : '0');
    g_string_append_c(text, '.');
    if (n > whole)
      g_string_append_len(text, digits + whole, (gssize)(n - whole));
    else
      g_string_append_c(text, '0');
  }
}

/* Append the double written as TOKEN (LENGTH bytes) in the shortest form
 * that reads back as the same double, still a double (a point or an
 * exponent).  Integers (neither) are copied: an int64 must not pass
 * through a double. */
static void
append_number(GString *text, const char *token, gsize length)
{
  if (memchr(token, '.', length) == NULL && memchr(token, 'e', length) == NULL &&
      memchr(token, 'E', length) == NULL) {
    g_string_append_len(text, token, length);
    return;
  }
  /* The token ends at a character no number has (or a stray ".0"), where
   * strtod stops: no copy needed. */
  append_python_float(text, g_ascii_strtod(token, NULL));
}

/* The length of the number kept as text (json_exact.c) in the string
 * json-glib wrote at P, or 0: P is "<number marker>DIGITS...". */
static gsize
kept_number_length(const char *p)
{
  gsize marker = strlen(CX__JSON_NUMBER_MARKER);
  if (p[0] != '"' || strncmp(p + 1, CX__JSON_NUMBER_MARKER, marker) != 0)
    return 0;
  gsize length = number_length(p + 1 + marker);
  return p[1 + marker + length] == '"' ? length : 0;
}

char *
cx_json_to_string(JsonNode *node, gboolean pretty)
{
  g_return_val_if_fail(node != NULL, NULL);
  g_autofree char *raw = json_to_string(node, pretty);
  /* Every double json-glib writes has a point or a signed exponent. */
  if (strchr(raw, 0x1f) == NULL && strstr(raw, "\xc0") == NULL && strchr(raw, '.') == NULL &&
      strstr(raw, "e+") == NULL && strstr(raw, "e-") == NULL && strstr(raw, "inf") == NULL &&
      strstr(raw, "nan") == NULL)
    return g_steal_pointer(&raw);
  GString *text = g_string_sized_new(strlen(raw) + 16);
  gboolean in_string = FALSE;
  for (const char *p = raw; *p != '\0'; p++) {
    if (!in_string) {
      gsize kept = kept_number_length(p);
      if (kept > 0) {
        g_string_append_len(text, p + 1 + strlen(CX__JSON_NUMBER_MARKER), (gssize)kept);
        p += kept + 1 + strlen(CX__JSON_NUMBER_MARKER); /* its closing quote */
        continue;
      }
      if (*p == '"')
        in_string = TRUE;
      gsize special = non_finite_length(p);
      if (special > 0) {
        g_string_append(text, "null");
        p += special - 1;
      } else if (g_ascii_isdigit(*p) || *p == '-') {
        gsize length = number_length(p);
        append_number(text, p, length);
        p += length - 1;
      } else {
        g_string_append_c(text, *p);
      }
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

int
cx__json_hex4(const char *p)
{
  int value = 0;
  for (int i = 0; i < 4; i++) {
    int digit = g_ascii_xdigit_value(p[i]);
    if (digit < 0)
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

/* TEXT with each \u escape json-glib cannot read into valid UTF-8 as
 * \ufffd: \u0000 (it would end the string), and a surrogate that is not
 * half of a pair (it would become bytes that are not UTF-8, or fail the
 * whole document; Python writes them for a str holding surrogateescape
 * bytes, and nbclient shows them as U+FFFD).  NULL when there is none.
 * Outside strings JSON has no backslash, so escapes are found byte by byte. */
static char *
escapes_replaced(const char *text, gsize len, gsize *out_len)
{
  if (g_strstr_len(text, (gssize)len, "\\u0000") == NULL &&
      g_strstr_len(text, (gssize)len, "\\ud") == NULL &&
      g_strstr_len(text, (gssize)len, "\\uD") == NULL)
    return NULL;
  GString *out = g_string_sized_new(len);
  for (gsize i = 0; i < len; i++) {
    if (text[i] != '\\' || i + 1 >= len) {
      g_string_append_c(out, text[i]);
      continue;
    }
    int code = text[i + 1] == 'u' && i + 6 <= len ? cx__json_hex4(text + i + 2) : -1;
    gboolean high = code >= 0xd800 && code <= 0xdbff;
    int low = high && i + 12 <= len && text[i + 6] == '\\' && text[i + 7] == 'u'
                ? cx__json_hex4(text + i + 8) : -1;
    if (high && low >= 0xdc00 && low <= 0xdfff) {
      g_string_append_len(out, text + i, 12); /* a pair */
      i += 11;
    } else if (code == 0 || (code >= 0xd800 && code <= 0xdfff)) {
      g_string_append(out, "\\ufffd");
      i += 5;
    } else {
      g_string_append_len(out, text + i, 2); /* the rest of a \u escape is plain text */
      i += 1;
    }
  }
  *out_len = out->len;
  return g_string_free(out, FALSE);
}

/* The index of the closing quote of the string whose opening quote is at
 * I, or LEN when it has none: the first quote with an even run of
 * backslashes before it (memchr, as strings are most of a large text). */
static gsize
string_end(const char *text, gsize len, gsize i)
{
  for (i++; i < len; i++) {
    const char *quote = memchr(text + i, '"', len - i);
    if (quote == NULL)
      return len;
    const char *run = quote;
    while (run > text + i && run[-1] == '\\')
      run--;
    i = (gsize)(quote - text);
    if ((quote - run) % 2 == 0)
      return i;
  }
  return len;
}

/* Whether the array or object that opens at I is empty: only whitespace
 * between its brackets. */
static gboolean
container_is_empty(const char *text, gsize len, gsize i)
{
  for (i++; i < len; i++) {
    char c = text[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      return c == ']' || c == '}';
  }
  return FALSE;
}

/* Width is cellexec's own bound, whichever READER the depth is for. */
static gboolean
too_many_values(guint max_values, gsize at, GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_TOO_LARGE,
              "JSON of more than %u values (arrays, objects, strings, numbers) at byte %"
              G_GSIZE_FORMAT ", more than cellexec reads in one piece: send the data in "
              "smaller parts", max_values, at);
  return FALSE;
}

/* The bounds of one parse (CX_JSON_MAX_DEPTH, CX_JSON_MAX_VALUES,
 * CX_JSON_MAX_BYTES), decided before json-glib sees the text.
 *
 * Depth: its parser recurses once per level of arrays and objects, and a
 * document a few tens of thousands of levels deep overflows the stack (a
 * crash, not an error).  Bounding the parse bounds every recursive walk of
 * what it returns too (json-glib's generator and its freeing, the deep
 * copy and the Python-style writer below).
 *
 * Width: it builds the whole tree, from 45 bytes of memory per value
 * (null) to 300 (an empty object), while the text needs 2 or 3 bytes per
 * value: 60 MB of "[]," was 20 million arrays, 2.4 GB, and GLib aborts
 * the process when an allocation fails.  Values are counted as the tree
 * will hold them: the top one, one more after each comma, and the first
 * of each array or object that is not empty.
 *
 * This is no parser: it knows only strings (and their backslash escapes),
 * brackets and commas, and leaves every other fault to json-glib (text
 * that is not JSON may be refused as too wide first: it fails either way).
 * Counting here costs one pass over the text, about a quarter of what
 * json-glib takes to parse it, and stops at the first value too many. */
static gboolean
check_bounds(const char *text, gsize len, guint max_depth, guint max_values, const char *reader,
             GError **error)
{
  if (len > CX_JSON_MAX_BYTES) {
    g_set_error(error, CX_ERROR, CX_ERROR_TOO_LARGE,
                "JSON text of %" G_GSIZE_FORMAT " bytes, more than the %u cellexec reads in "
                "one piece: send the data in smaller parts", len, CX_JSON_MAX_BYTES);
    return FALSE;
  }
  guint depth = 0;
  guint64 values = 1;
  for (gsize i = 0; i < len; i++) {
    char c = text[i];
    if (c == '"') {
      i = string_end(text, len, i);
    } else if (c == ',') {
      if (++values > max_values)
        return too_many_values(max_values, i, error);
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                    "JSON nested deeper than %u levels at byte %" G_GSIZE_FORMAT
                    ", more than %s reads: nest the data less deeply",
                    max_depth, i, reader);
        return FALSE;
      }
      if (!container_is_empty(text, len, i) && ++values > max_values)
        return too_many_values(max_values, i, error);
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return TRUE;
}

gboolean
cx__json_check_bounds(const char *text, gsize len, GError **error)
{
  return check_bounds(text, len, CX_JSON_MAX_DEPTH, CX_JSON_MAX_VALUES, "cellexec", error);
}

gboolean
cx__json_check_bounds_at_depth(const char *text, gsize len, guint max_depth, const char *reader,
                               GError **error)
{
  return check_bounds(text, len, max_depth, CX_JSON_MAX_VALUES, reader, error);
}

JsonNode *
cx_json_from_string(const char *text, gssize length, GError **error)
{
  return cx__json_parse_bounded(text, length, CX_JSON_MAX_VALUES, error);
}

JsonNode *
cx__json_parse_bounded(const char *text, gssize length, guint max_values, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  gsize len = length < 0 ? strlen(text) : (gsize)length;
  if (!check_bounds(text, len, CX_JSON_MAX_DEPTH, MIN(max_values, CX_JSON_MAX_VALUES), "cellexec",
                    error))
    return NULL;
  gsize mapped_len;
  g_autofree char *mapped = escapes_replaced(text, len, &mapped_len);
  if (mapped != NULL) {
    text = mapped;
    len = mapped_len;
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) parse_error = NULL;
  if (!json_parser_load_from_data(parser, text, (gssize)len, &parse_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s", parse_error->message);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_JSON, "empty document");
    return NULL;
  }
  return json_node_ref(root);
}

/* TEXT as a JSON string the way Python's json module escapes it with
 * ensure_ascii=False: the two-character escapes, every other control
 * character as \u00xx, and nothing else (U+007F, U+2028 and "/" raw). */
static void
append_python_json_string(GString *text, const char *string)
{
  g_string_append_c(text, '"');
  for (const char *p = string; *p != '\0'; p++) {
    const char *escape = NULL;
    switch (*p) {
    case '"': escape = "\\\""; break;
    case '\\': escape = "\\\\"; break;
    case '\b': escape = "\\b"; break;
    case '\f': escape = "\\f"; break;
    case '\n': escape = "\\n"; break;
    case '\r': escape = "\\r"; break;
    case '\t': escape = "\\t"; break;
    default: break;
    }
    if (escape != NULL) {
      g_string_append(text, escape);
    } else if ((unsigned char)*p < 0x20) {
      g_string_append_printf(text, "\\u%04x", (unsigned)*p);
    } else if (p[0] == NUL_MARKER[0] && p[1] == NUL_MARKER[1]) {
      g_string_append(text, "\\u0000");
      p++;
    } else {
      g_string_append_c(text, *p);
    }
  }
  g_string_append_c(text, '"');
}

static void
append_line_break(GString *text, guint indent, guint depth)
{
  g_string_append_c(text, '\n');
  for (guint i = 0; i < indent * depth; i++)
    g_string_append_c(text, ' ');
}

/* The code point order of two member names, as Python's sort_keys sorts
 * them: UTF-8's byte order, with the NUL marker as the NUL it stands for. */
static int
compare_names(const char *a, const char *b)
{
  for (;;) {
    gboolean a_nul = a[0] == NUL_MARKER[0] && a[1] == NUL_MARKER[1];
    gboolean b_nul = b[0] == NUL_MARKER[0] && b[1] == NUL_MARKER[1];
    int a_unit = *a == '\0' ? -1 : a_nul ? 0 : (guchar)*a;
    int b_unit = *b == '\0' ? -1 : b_nul ? 0 : (guchar)*b;
    if (a_unit != b_unit || a_unit < 0)
      return a_unit - b_unit;
    a += a_nul ? 2 : 1;
    b += b_nul ? 2 : 1;
  }
}

static void
append_python_json(GString *text, JsonNode *node, guint indent, guint depth)
{
  switch (JSON_NODE_TYPE(node)) {
  case JSON_NODE_NULL:
    g_string_append(text, "null");
    return;
  case JSON_NODE_ARRAY: {
    JsonArray *array = json_node_get_array(node);
    guint length = json_array_get_length(array);
    g_string_append(text, length == 0 ? "[]" : "[");
    if (length == 0)
      return;
    for (guint i = 0; i < length; i++) {
      g_string_append(text, i > 0 ? "," : "");
      append_line_break(text, indent, depth + 1);
      append_python_json(text, json_array_get_element(array, i), indent, depth + 1);
    }
    append_line_break(text, indent, depth);
    g_string_append_c(text, ']');
    return;
  }
  case JSON_NODE_OBJECT: {
    JsonObject *object = json_node_get_object(node);
    /* sort_keys: by code point. */
    GList *names = g_list_sort(json_object_get_members(object), (GCompareFunc)compare_names);
    g_string_append(text, names == NULL ? "{}" : "{");
    for (GList *name = names; name != NULL; name = name->next) {
      g_string_append(text, name != names ? "," : "");
      append_line_break(text, indent, depth + 1);
      append_python_json_string(text, name->data);
      g_string_append(text, ": ");
      append_python_json(text, json_object_get_member(object, name->data), indent, depth + 1);
    }
    if (names != NULL) {
      append_line_break(text, indent, depth);
      g_string_append_c(text, '}');
    }
    g_list_free(names);
    return;
  }
  case JSON_NODE_VALUE:
  default:
    break;
  }
  GType type = json_node_get_value_type(node);
  if (cx__json_kept_number(node) != NULL) {
    g_string_append(text, cx__json_kept_number(node));
  } else if (type == G_TYPE_STRING) {
    append_python_json_string(text, json_node_get_string(node));
  } else if (type == G_TYPE_BOOLEAN) {
    g_string_append(text, json_node_get_boolean(node) ? "true" : "false");
  } else if (type == G_TYPE_DOUBLE) {
    double value = json_node_get_double(node);
    /* No JSON text can hold an infinity or NaN (see non_finite_length). */
    if (isfinite(value))
      append_python_float(text, value);
    else
      g_string_append(text, "null");
  } else {
    g_string_append_printf(text, "%" G_GINT64_FORMAT, json_node_get_int(node));
  }
}

char *
cx__json_to_python_text(JsonNode *node, guint indent)
{
  g_return_val_if_fail(node != NULL, NULL);
  GString *text = g_string_new(NULL);
  append_python_json(text, node, indent, 0);
  return g_string_free(text, FALSE);
}

JsonNode *
cx__json_deep_copy(JsonNode *node)
{
  switch (json_node_get_node_type(node)) {
  case JSON_NODE_OBJECT: {
    JsonNode *copy = json_node_alloc();
    json_node_take_object(json_node_init(copy, JSON_NODE_OBJECT),
                          cx__json_object_deep_copy(json_node_get_object(node)));
    return copy;
  }
  case JSON_NODE_ARRAY: {
    JsonArray *array = json_node_get_array(node);
    JsonArray *elements = json_array_sized_new(json_array_get_length(array));
    for (guint i = 0; i < json_array_get_length(array); i++)
      json_array_add_element(elements, cx__json_deep_copy(json_array_get_element(array, i)));
    JsonNode *copy = json_node_alloc();
    json_node_take_array(json_node_init(copy, JSON_NODE_ARRAY), elements);
    return copy;
  }
  case JSON_NODE_NULL:
    return json_node_init_null(json_node_alloc());
  case JSON_NODE_VALUE:
  default:
    break;
  }
  /* A value of its own: json_node_copy() would share the JsonValue. */
  switch (json_node_get_value_type(node)) {
  case G_TYPE_INT64:
    return json_node_init_int(json_node_alloc(), json_node_get_int(node));
  case G_TYPE_DOUBLE:
    return json_node_init_double(json_node_alloc(), json_node_get_double(node));
  case G_TYPE_BOOLEAN:
    return json_node_init_boolean(json_node_alloc(), json_node_get_boolean(node));
  case G_TYPE_STRING:
  default:
    return json_node_init_string(json_node_alloc(), json_node_get_string(node));
  }
}

JsonObject *
cx__json_object_deep_copy(JsonObject *object)
{
  JsonObject *copy = json_object_new();
  JsonObjectIter iter;
  const char *name;
  JsonNode *member;
  json_object_iter_init_ordered(&iter, object); /* members in the order they were set */
  while (json_object_iter_next_ordered(&iter, &name, &member))
    json_object_set_member(copy, name, cx__json_deep_copy(member));
  return copy;
}
