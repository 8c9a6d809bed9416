/* Lossless output and strict JSON.
 *
 * What a cell writes reaches the client byte for byte, and every JSON text
 * cellexec writes is strict JSON: the judge is the system Python's json
 * module (CX_PYTHON_EXECUTABLE, never a python3 from PATH), run as a child
 * process.  The first suite pins down what json-glib gets wrong: the day a
 * json-glib fixes one, its test is skipped, naming the workaround that can
 * go (the workarounds' own tests keep passing either way).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cx_test.h"

/* Every control character JSON requires escaped, and DEL. */
static GBytes *
control_characters(void)
{
  GByteArray *bytes = g_byte_array_new();
  for (guint8 c = 0; c < 0x20; c++)
    g_byte_array_append(bytes, &c, 1);
  g_byte_array_append(bytes, (const guint8 *)"\x7f", 1);
  return g_byte_array_free_to_bytes(bytes);
}

/* BYTES followed by BYTES again. */
static GBytes *
twice(GBytes *bytes)
{
  gsize len;
  const guint8 *data = g_bytes_get_data(bytes, &len);
  GByteArray *both = g_byte_array_sized_new((guint)(2 * len));
  g_byte_array_append(both, data, (guint)len);
  g_byte_array_append(both, data, (guint)len);
  return g_byte_array_free_to_bytes(both);
}

static char *
to_hex(GBytes *bytes)
{
  gsize len;
  const guint8 *data = g_bytes_get_data(bytes, &len);
  GString *hex = g_string_sized_new(2 * len + 1);
  for (gsize i = 0; i < len; i++)
    g_string_append_printf(hex, "%02x", data[i]);
  return g_string_free(hex, FALSE);
}

/* ---- Python's json as the judge ---------------------------------------- */

/* Reads each file named on the command line with json.loads (NaN and
 * Infinity refused too: they are not JSON) and prints "ok " and the UTF-8
 * of EXPRESSION (a str computed from the value v) in hex, or "error " and
 * why. */
static const char strict_decode_script[] =
  "import json, sys\n"
  "def refuse(name):\n"
  "    raise ValueError(name + ' is not JSON')\n"
  "expression = compile(sys.argv[1], '<expression>', 'eval')\n"
  "for path in sys.argv[2:]:\n"
  "    try:\n"
  "        with open(path, 'rb') as f:\n"
  "            value = json.loads(f.read().decode('utf-8'), parse_constant=refuse)\n"
  "        text = eval(expression, {'v': value})\n"
  "        print('ok', text.encode('utf-8', 'surrogatepass').hex())\n"
  "    except Exception as e:\n"
  "        print('error', ascii(type(e).__name__ + ': ' + str(e)))\n";

/* DOCUMENTS (GBytes of JSON text) read by Python's json.loads; for each, a
 * GBytes of EXPRESSION's UTF-8 (see strict_decode_script), or NULL when
 * the document is not strict JSON (the reason is printed unless QUIET). */
static GPtrArray *
strict_decode_full(GPtrArray *documents, const char *expression, gboolean quiet)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(argv, g_strdup(CX_PYTHON_EXECUTABLE));
  g_ptr_array_add(argv, g_strdup("-I"));
  g_ptr_array_add(argv, g_strdup("-c"));
  g_ptr_array_add(argv, g_strdup(strict_decode_script));
  g_ptr_array_add(argv, g_strdup(expression));
  for (guint i = 0; i < documents->len; i++) {
    g_autofree char *name = g_strdup_printf("document-%u.json", i);
    char *path = g_build_filename(dir, name, NULL);
    gsize len;
    const char *data = g_bytes_get_data(g_ptr_array_index(documents, i), &len);
    g_assert(g_file_set_contents(path, data, (gssize)len, NULL));
    g_ptr_array_add(argv, path);
  }
  g_ptr_array_add(argv, NULL);

  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) python = g_subprocess_newv((const char *const *)argv->pdata,
                                                    G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  g_assert_no_error(error);
  g_autofree char *out = NULL;
  g_subprocess_communicate_utf8(python, NULL, NULL, &out, NULL, &error);
  g_assert_no_error(error);
  CU_ASSERT_EQUAL_FATAL(g_subprocess_get_exit_status(python), 0);

  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), documents->len + 1);
  GPtrArray *decoded = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  for (guint i = 0; i < documents->len; i++) {
    if (!g_str_has_prefix(lines[i], "ok ")) {
      gsize len;
      const char *data = g_bytes_get_data(g_ptr_array_index(documents, i), &len);
      if (!quiet)
        fprintf(stderr, "\n  not strict JSON (%s): %.*s%s\n", lines[i], (int)MIN(len, 400), data,
                len > 400 ? "..." : "");
      g_ptr_array_add(decoded, NULL);
      continue;
    }
    const char *hex = lines[i] + 3;
    gsize len = strlen(hex) / 2;
    guint8 *bytes = g_malloc(len + 1);
    for (gsize j = 0; j < len; j++)
      bytes[j] = (guint8)(g_ascii_xdigit_value(hex[2 * j]) << 4 | g_ascii_xdigit_value(hex[2 * j + 1]));
    g_ptr_array_add(decoded, g_bytes_new_take(bytes, len));
  }
  return decoded;
}

static GPtrArray *
strict_decode(GPtrArray *documents, const char *expression)
{
  return strict_decode_full(documents, expression, FALSE);
}

/* One document: EXPRESSION's UTF-8, or NULL. */
static GBytes *
strict_decode_one_full(GBytes *document, const char *expression, gboolean quiet)
{
  g_autoptr(GPtrArray) documents = g_ptr_array_new();
  g_ptr_array_add(documents, document);
  g_autoptr(GPtrArray) decoded = strict_decode_full(documents, expression, quiet);
  GBytes *text = g_ptr_array_index(decoded, 0);
  return text != NULL ? g_bytes_ref(text) : NULL;
}

static GBytes *
strict_decode_one(GBytes *document, const char *expression)
{
  return strict_decode_one_full(document, expression, FALSE);
}

/* ACTUAL (may be NULL: not decoded) equals EXPECTED; WHAT names it. */
static void
assert_bytes_equal(const char *what, GBytes *actual, GBytes *expected)
{
  gboolean same = actual != NULL && g_bytes_equal(actual, expected);
  if (!same) {
    g_autofree char *want = to_hex(expected);
    g_autofree char *got = actual != NULL ? to_hex(actual) : g_strdup("(not decoded)");
    fprintf(stderr, "\n  %s:\n    expected %s\n    got      %s\n", what, want, got);
  }
  CU_ASSERT_TRUE(same);
}

static GBytes *
bytes_of_string(const char *text)
{
  return g_bytes_new(text, strlen(text));
}

/* Python's json reads TEXT (taken: g_free'd) and EXPRESSION of it gives the
 * LENGTH bytes of WANT (which may hold NUL); WHAT names it. */
static void
assert_python_gives(const char *what, char *text, const char *expression, const char *want,
                    gsize length)
{
  g_autoptr(GBytes) document = g_bytes_new_take(text, strlen(text));
  g_autoptr(GBytes) decoded = strict_decode_one(document, expression);
  g_autoptr(GBytes) expected = g_bytes_new(want, length);
  assert_bytes_equal(what, decoded, expected);
}

/* ---- json-glib, as Debian 12 ships it (1.6) ----------------------------- */

static void
test_jsonglib_writes_u001f_raw(void)
{
  g_autoptr(JsonNode) node = json_node_init_string(json_node_alloc(), "x\x1fy");
  g_autofree char *text = json_to_string(node, FALSE);
  if (strchr(text, 0x1f) == NULL) {
    cx_test_skip("json-glib %s escapes U+001F now: the workaround can go "
                 "(cx_json_to_string(), lib/json_text.c)", JSON_VERSION_S);
    return;
  }
  /* What strict parsers make of it. */
  g_autoptr(GBytes) document = bytes_of_string(text);
  g_autoptr(GBytes) decoded = strict_decode_one_full(document, "v", TRUE);
  CU_ASSERT_PTR_NULL(decoded);
}

static void
test_jsonglib_cuts_strings_at_nul(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = json_from_string("\"x\\u0000y\"", &error);
  g_assert_no_error(error);
  if (strcmp(json_node_get_string(node), "x") != 0)
    cx_test_skip("json-glib %s reads \"x\\u0000y\" as \"%s\" now: the workaround can go "
                 "(NUL in lib/json_text.c)", JSON_VERSION_S, json_node_get_string(node));
}

/* cx_json_from_string: the reading side of that workaround.  Only the NUL
 * changes; an escaped backslash before "u0000" is text, not an escape. */
static void
test_json_from_string_reads_a_nul_as_replacement(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string("{\"s\": \"x\\u0000y\", \"t\": \"\\\\u0000\"}", -1, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  JsonObject *object = json_node_get_object(node);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "s"), "x\xef\xbf\xbdy");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "t"), "\\u0000");

  /* Lone surrogates (json-glib: bytes that are not UTF-8, a character
   * eaten, or a failed document) are U+FFFD; a pair stays itself. */
  g_autoptr(JsonNode) surrogates = cx_json_from_string(
    "[\"a\\udcffb\", \"a\\ud83db\", \"\\udcff\\udcff\", \"\\ud83d\\ude00\"]", -1, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(surrogates);
  JsonArray *texts = json_node_get_array(surrogates);
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(texts, 0), "a\xef\xbf\xbd" "b");
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(texts, 1), "a\xef\xbf\xbd" "b");
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(texts, 2), "\xef\xbf\xbd\xef\xbf\xbd");
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(texts, 3), "\xf0\x9f\x98\x80");

  g_autoptr(JsonNode) sized = cx_json_from_string("[1] trailing", 3, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(sized != NULL && JSON_NODE_HOLDS_ARRAY(sized));
  CU_ASSERT_PTR_NULL(cx_json_from_string("{\"a\": ", -1, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  g_clear_error(&error);
  CU_ASSERT_PTR_NULL(cx_json_from_string("", -1, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
}

/* Why executor values beyond 64 bits cross as references and never
 * through json-glib's parser: it wraps them without a word. */
static void
test_jsonglib_wraps_integers_beyond_64_bits(void)
{
  static const struct { const char *text; gint64 read_as; } cases[] = {
    { "18446744073709551616", -1 },                      /* 2**64 */
    { "1180591620717411303424", -1 },                    /* 2**70 */
    { "9223372036854775808", G_MININT64 },               /* 2**63 */
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node = json_from_string(cases[i].text, &error);
    gboolean wrapped = node != NULL && json_node_get_value_type(node) == G_TYPE_INT64 &&
                       json_node_get_int(node) == cases[i].read_as;
    if (!wrapped) {
      cx_test_skip("json-glib %s no longer reads %s as %" G_GINT64_FORMAT " (%s): executor "
                   "integers beyond 64 bits could cross as JSON", JSON_VERSION_S, cases[i].text,
                   cases[i].read_as, error != NULL ? error->message : "another value");
      return;
    }
  }
}

static void
test_jsonglib_writes_exponent_doubles_invalid(void)
{
  g_autoptr(JsonNode) node = json_node_init_double(json_node_alloc(), 1e20);
  g_autofree char *text = json_to_string(node, FALSE);
  if (strcmp(text, "1e+20.0") != 0)
    cx_test_skip("json-glib %s writes 1e20 as %s now: the workaround can go "
                 "(doubles in cx_json_to_string(), lib/json_text.c)", JSON_VERSION_S, text);
}

/* ---- cx_json_to_string() -------------------------------------------------- */

/* A node's text, compact or PRETTY, has no raw control character but the
 * whitespace between tokens. */
static void
assert_no_raw_control_characters(const char *text, gboolean pretty)
{
  for (const char *p = text; *p != '\0'; p++) {
    gboolean whitespace = pretty && (*p == '\n' || *p == ' ');
    if ((guchar)*p < 0x20 && !whitespace) {
      fprintf(stderr, "\n  raw control character 0x%02x at %d of %s\n", (guchar)*p,
              (int)(p - text), text);
      CU_FAIL("raw control character");
      return;
    }
  }
}

static void
test_json_text_escapes_every_control_character(void)
{
  /* "a<c>b" for each control character but NUL (a JsonNode string cannot
   * hold one), and all of them in one string. */
  g_autoptr(JsonArray) array = json_array_new();
  GString *all = g_string_new(NULL);
  GString *expected = g_string_new(NULL);
  for (int c = 1; c <= 0x7f; c = c == 0x1f ? 0x7f : c + 1) {
    char text[] = { 'a', (char)c, 'b', '\0' };
    json_array_add_string_element(array, text);
    g_string_append(expected, text);
    g_string_append_c(all, (char)c);
  }
  json_array_add_string_element(array, all->str);
  g_string_append(expected, all->str);
  g_string_free(all, TRUE);
  g_autoptr(GBytes) want = g_string_free_to_bytes(expected);

  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), array);
  for (int pretty = 0; pretty <= 1; pretty++) {
    char *text = cx_json_to_string(node, pretty);
    assert_no_raw_control_characters(text, pretty);
    g_autoptr(GBytes) document = g_bytes_new_take(text, strlen(text));
    g_autoptr(GBytes) decoded = strict_decode_one(document, "''.join(v)");
    assert_bytes_equal(pretty ? "pretty" : "compact", decoded, want);
  }
}

/* NUL too, through the public path that keeps it: a result's streams. */
static void
test_json_text_keeps_nul_and_every_control_character_of_streams(void)
{
  g_autoptr(GBytes) controls = control_characters();
  gsize len;
  const char *data = g_bytes_get_data(controls, &len);
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, data, (gssize)len);
  cx_result_append_stderr(result, data, (gssize)len);
  for (int pretty = 0; pretty <= 1; pretty++) {
    char *text = cx_result_to_json(result, pretty);
    assert_no_raw_control_characters(text, pretty);
    g_autoptr(GBytes) document = g_bytes_new_take(text, strlen(text));
    g_autoptr(GBytes) decoded = strict_decode_one(document, "v['stdout'] + v['stderr']");
    g_autoptr(GBytes) want = twice(controls);
    assert_bytes_equal(pretty ? "pretty" : "compact", decoded, want);
  }
}

/* json-glib 1.6 writes a double with an exponent and no point as
 * "1e+20.0", which no JSON parser reads. */
static void
test_json_text_writes_doubles_as_json_numbers(void)
{
  static const struct { double value; const char *python; } cases[] = {
    { 1e17, "1e+17" }, { 1e20, "1e+20" }, { 1e21, "1e+21" }, { 1e300, "1e+300" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" }, { 5e-324, "5e-324" },
    { 1e-7, "1e-07" }, { 2.0, "2.0" }, { 0.1, "0.1" }, { -0.0, "-0.0" }, { -1e100, "-1e+100" },
  };
  g_autoptr(JsonArray) array = json_array_new();
  GString *expected = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    json_array_add_double_element(array, cases[i].value);
    g_string_append_printf(expected, "%s%s", i > 0 ? " " : "", cases[i].python);
  }
  g_autoptr(GBytes) want = g_string_free_to_bytes(expected);
  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), array);
  for (int pretty = 0; pretty <= 1; pretty++) {
    char *text = cx_json_to_string(node, pretty);
    g_autoptr(GBytes) document = g_bytes_new_take(text, strlen(text));
    /* repr() of each, which also tells a float from an int. */
    g_autoptr(GBytes) decoded = strict_decode_one(document, "' '.join(repr(x) for x in v)");
    assert_bytes_equal(pretty ? "pretty" : "compact", decoded, want);
  }
}

/* json-glib reads 1e999 as infinity, and writes it as "inf.0", which is
 * not JSON: a bundle holding one is refused on the way in, and a plugin's
 * own non-finite extra is written as null. */
static void
test_json_text_has_no_infinity(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) big = cx_result_from_json("{\"stdout\": \"\", \"x\": [1e999]}", &error);
  CU_ASSERT_PTR_NULL(big);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  CX_ASSERT_CONTAINS(error->message, "too large for a double");
  /* json-glib lets a malformed \u escape through as bytes that are not
   * UTF-8 (found by fuzzing): refused too, or the bundle could not be
   * written back as JSON. */
  g_clear_error(&error);
  g_autoptr(cx_result) broken = cx_result_from_json("{\"x\": \"\\u323\xd0\xab\"}", &error);
  CU_ASSERT_PTR_NULL(broken);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  CX_ASSERT_CONTAINS(error->message, "not valid UTF-8");
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_set_extra(result, "ratio", json_node_init_double(json_node_alloc(), INFINITY));
  cx_result_set_extra(result, "less", json_node_init_double(json_node_alloc(), -INFINITY));
  g_autofree char *text = cx_result_to_json(result, FALSE);
  CX_ASSERT_CONTAINS(text, "\"ratio\":null,\"less\":null");
}

/* json-glib writes every double with 17 digits (a duration of 0.0125 s as
 * 0.012500000000000001); the shortest text that reads back the same is
 * written instead, as Python's repr() would. */
static void
test_json_text_writes_the_shortest_double(void)
{
  g_autoptr(JsonArray) array = json_array_new();
  json_array_add_double_element(array, 0.0125);
  json_array_add_double_element(array, 0.1 + 0.2);
  json_array_add_double_element(array, 464.387);
  json_array_add_int_element(array, G_MAXINT64);
  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), array);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  CU_ASSERT_STRING_EQUAL(text, "[0.0125,0.30000000000000004,464.387,9223372036854775807]");
}

/* ---- Notebooks: read and written back with every value kept ------------- */

/* TEXT read as a notebook and written back; NULL (with the error printed)
 * when it is refused. */
static GBytes *
notebook_round_trip(const char *text)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "test.ipynb", &error);
  CX_ASSERT_NO_ERROR(error);
  if (notebook == NULL)
    return NULL;
  char *written = cx_notebook_to_json(notebook);
  return g_bytes_new_take(written, strlen(written));
}

/* Python's json (nbformat's) reads the notebook written back as the same
 * value as the original: each is dumped again, keys sorted, and compared. */
static void
assert_python_reads_the_same(const char *what, const char *original, GBytes *written)
{
  g_autoptr(GBytes) input = bytes_of_string(original);
  g_autoptr(GPtrArray) documents = g_ptr_array_new();
  g_ptr_array_add(documents, input);
  g_ptr_array_add(documents, written);
  g_autoptr(GPtrArray) decoded = strict_decode(documents, "__import__('json').dumps(v, sort_keys=True)");
  CU_ASSERT_PTR_NOT_NULL_FATAL(g_ptr_array_index(decoded, 0));
  assert_bytes_equal(what, g_ptr_array_index(decoded, 1), g_ptr_array_index(decoded, 0));
}

/* json-glib reads 2^63 as -2^63, larger integers as -1 and 1e400 as an
 * infinity (written as null): each is written back as its own text, which
 * Python reads as the same value (nbformat itself would write Infinity,
 * which is not JSON). */
static void
test_notebook_keeps_numbers_json_glib_cannot_hold(void)
{
  static const char *const tokens[] = {
    "12345678901234567890123", "9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "1e400", "-1E+999", "9223372036854775807", "2.5",
  };
  GString *text = g_string_new("{\"cells\": [{\"cell_type\": \"raw\", \"source\": [], "
                               "\"metadata\": {\"n\": [-12345678901234567890123, 1e400]}}], "
                               "\"metadata\": {\"numbers\": [");
  for (guint i = 0; i < G_N_ELEMENTS(tokens); i++)
    g_string_append_printf(text, "%s%s", i > 0 ? ", " : "", tokens[i]);
  g_string_append(text, "], \"big\": 12345678901234567890123, \"nested\": {\"x\": [1e400]}}, "
                        "\"nbformat\": 4, \"nbformat_minor\": 4}");
  g_autoptr(GBytes) written = notebook_round_trip(text->str);
  CU_ASSERT_PTR_NOT_NULL_FATAL(written);
  const char *out = g_bytes_get_data(written, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(tokens); i++) {
    g_autofree char *line = g_strdup_printf("   %s%s\n", tokens[i],
                                            i + 1 < G_N_ELEMENTS(tokens) ? "," : "");
    CX_ASSERT_CONTAINS(out, line);
  }
  CX_ASSERT_CONTAINS(out, "\"big\": 12345678901234567890123,\n");
  CX_ASSERT_CONTAINS(out, "\"x\": [\n    1e400\n   ]");
  assert_python_reads_the_same("numbers of the notebook's metadata", text->str, written);

  /* cx_json_to_string() writes them back as the numbers they were too. */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text->str, -1, "test.ipynb", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autofree char *metadata = cx_json_to_string(
    json_object_get_member(cx_notebook_get_cell(notebook, 0), "metadata"), FALSE);
  CU_ASSERT_STRING_EQUAL(metadata, "{\"n\":[-12345678901234567890123,1e400]}");
  g_string_free(text, TRUE);

  /* Not JSON numbers: still refused, not kept as text. */
  const char *bad = "{\"cells\": [], \"metadata\": {\"x\": 012345678901234567890123}, "
                    "\"nbformat\": 4, \"nbformat_minor\": 4}";
  CU_ASSERT_PTR_NULL(cx_notebook_load_data(bad, -1, "bad.ipynb", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
}

/* A NUL in a raw or markdown cell, in metadata and in a member name comes
 * back as \u0000 (cx_json_from_string reads it as U+FFFD); the
 * noncharacters the reading uses as stand-ins, when the text holds them
 * itself, stay what they were. */
static void
test_notebook_keeps_nul_characters(void)
{
  const char *text =
    "{\"cells\": [{\"cell_type\": \"raw\", \"metadata\": {}, \"source\": [\"r\\u0000s\"]}, "
    "{\"cell_type\": \"markdown\", \"metadata\": {\"k\\u0001\": 1, \"k\\u0000\": \"v\\u0000\", "
    "\"k\": 2}, "
    "\"source\": [\"a\\u0000\\n\", \"\\ufdd0\\u0000\\ufdd1\xef\xb7\x92\"]}], "
    "\"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 4}";
  g_autoptr(GBytes) written = notebook_round_trip(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(written);
  CX_ASSERT_CONTAINS(g_bytes_get_data(written, NULL), "\"r\\u0000s\"");
  assert_python_reads_the_same("NUL in cells and metadata", text, written);
  /* Byte for byte as nbformat writes it (its sources are lists already):
   * "k\u0000" sorts between "k" and "k\u0001". */
  g_autoptr(GBytes) original = bytes_of_string(text);
  g_autoptr(GBytes) nbformat = strict_decode_one(
    original, "__import__('json').dumps(v, sort_keys=True, indent=1, ensure_ascii=False) + '\\n'");
  assert_bytes_equal("the layout nbformat writes", written, nbformat);

  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "test.ipynb", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autofree char *source = cx_notebook_get_cell_source(notebook, 0);
  CU_ASSERT_STRING_EQUAL(source, "r\xc0\x80s"); /* the NUL marker */

  /* A text holding every stand-in and a NUL: refused, not changed. */
  GString *all = g_string_new("{\"cells\": [], \"metadata\": {\"s\": \"\\u0000");
  for (gunichar c = 0xfdd0; c <= 0xfdef; c++)
    g_string_append_unichar(all, c);
  g_string_append(all, "\"}, \"nbformat\": 4, \"nbformat_minor\": 4}");
  g_autoptr(cx_notebook) refused = cx_notebook_load_data(all->str, -1, "all.ipynb", &error);
  CU_ASSERT_PTR_NULL(refused);
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  CX_ASSERT_CONTAINS(error->message, "all.ipynb: it holds a NUL character");
  CU_ASSERT_PTR_NULL(strstr(error->message, "not valid JSON"));
  g_clear_error(&error);
  g_string_free(all, TRUE);

  /* One stand-in left is enough for a text with NULs and no number to
   * keep (or numbers and no NUL). */
  for (int kind = 0; kind < 2; kind++) {
    GString *most = g_string_new("{\"cells\": [], \"metadata\": {\"s\": \"");
    g_string_append(most, kind == 0 ? "\\u0000" : "\", \"n\": 1e400, \"t\": \"");
    for (gunichar c = 0xfdd0; c < 0xfdef; c++)
      g_string_append_unichar(most, c);
    g_string_append(most, "\"}, \"nbformat\": 4, \"nbformat_minor\": 4}");
    g_autoptr(cx_notebook) kept = cx_notebook_load_data(most->str, -1, "most.ipynb", &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_PTR_NOT_NULL(kept);
    if (kept != NULL) {
      g_autofree char *again = cx_notebook_to_json(kept);
      CX_ASSERT_CONTAINS(again, kind == 0 ? "\"\\u0000\xef\xb7\x90" : "\"n\": 1e400");
    }
    g_string_free(most, TRUE);
  }
}

/* What a cell writes, NUL included, is what the executed notebook holds
 * (as a kernel sends it): its outputs read U+FFFD before. */
static void
test_notebook_outputs_keep_nul(void)
{
  const char *text =
    "{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, "
    "\"outputs\": [], \"source\": \"print('a\\\\x00b'); raise ValueError('c\\\\x00d')\"}], "
    "\"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 4}";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "test.ipynb", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_ALLOW_ERRORS, NULL, NULL,
                                 &error));
  CX_ASSERT_NO_ERROR(error);
  static const char want[] = "a\0b\n|c\0d";
  assert_python_gives("the outputs of the executed notebook", cx_notebook_to_json(notebook),
                      "'|'.join([''.join(v['cells'][0]['outputs'][0]['text']), "
                      "v['cells'][0]['outputs'][1]['evalue']])", want, sizeof want - 1);
}

/* ---- The cellexec program --------------------------------------------------- */

/* Run `cellexec ARGV...` (NULL-terminated); its stdout, byte for byte
 * (stderr is dropped: the cells under test write to it too). */
static GBytes *
cellexec(const char *first, ...)
{
  va_list args;
  va_start(args, first);
  g_auto(GStrv) argv = cx_test_cellexec_argv_valist(first, args);
  va_end(args);

  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process = g_subprocess_newv((const char *const *)argv,
                                                     G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                       G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                                                     &error);
  g_assert_no_error(error);
  GBytes *out = NULL;
  g_subprocess_communicate(process, NULL, NULL, &out, NULL, &error);
  g_assert_no_error(error);
  if (g_subprocess_get_exit_status(process) != 0)
    fprintf(stderr, "\n  %s exited with status %d\n", argv[1],
            g_subprocess_get_exit_status(process));
  CU_ASSERT_EQUAL(g_subprocess_get_exit_status(process), 0);
  return out;
}

static const char *const real_backends[] = { "local", "subprocess", NULL };

/* The cell prints every control character, NUL included, on stdout and
 * stderr; --json carries them all, and so do the debug exports. */
static void
test_cli_json_carries_every_control_character(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(GBytes) controls = control_characters();
  for (const char *const *backend = real_backends; *backend != NULL; backend++) {
    g_autofree char *jsonl = g_build_filename(dir, "export.jsonl", NULL);
    g_autofree char *markdown = g_build_filename(dir, "export.md", NULL);
    const char *code = "import sys; s = ''.join(map(chr, [*range(32), 127])); "
                       "print(s, end=''); print(s, end='', file=sys.stderr)";
    g_autoptr(GBytes) out = cellexec("run", "-b", *backend, "--json", "--debug-export", jsonl,
                                     "-c", code, NULL);
    g_autoptr(GBytes) human = cellexec("run", "-b", *backend, "--debug-export", markdown,
                                       "-c", code, NULL);
    g_autoptr(GBytes) decoded = strict_decode_one(out, "v['stdout'] + v['stderr']");
    g_autoptr(GBytes) want = twice(controls);
    g_autofree char *what = g_strdup_printf("%s: stdout and stderr of --json", *backend);
    assert_bytes_equal(what, decoded, want);

    /* Every line of the JSON Lines export is strict JSON. */
    g_autofree char *lines = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(jsonl, &lines, NULL, NULL));
    g_auto(GStrv) split = g_strsplit(lines, "\n", -1);
    g_autoptr(GPtrArray) events = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (char **line = split; *line != NULL; line++)
      if (**line != '\0')
        g_ptr_array_add(events, bytes_of_string(*line));
    CU_ASSERT_TRUE(events->len > 0);
    g_autoptr(GPtrArray) parsed = strict_decode(events, "''");
    for (guint i = 0; i < parsed->len; i++)
      CU_ASSERT_PTR_NOT_NULL(g_ptr_array_index(parsed, i));

    /* The code has no control character, so any in the Markdown export
     * would come from a JSON block written raw. */
    g_autofree char *text = NULL;
    gsize len;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(markdown, &text, &len, NULL));
    CU_ASSERT_EQUAL(strlen(text), len);
    for (const char *p = text; *p != '\0'; p++)
      if ((guchar)*p < 0x20 && *p != '\n') {
        fprintf(stderr, "\n  %s: raw control character 0x%02x in the Markdown export\n", *backend,
                (guchar)*p);
        CU_FAIL("raw control character in the Markdown export");
        break;
      }
  }
}

/* An exception's message holding NUL: kept whole in the error and its
 * error output (a C string ended it at the NUL: the message was 'a'), on
 * the local backend and through the subprocess backend's worker. */
static void
test_error_message_keeps_nul(void)
{
  static const char *const backends[][3] = {
    { "local", NULL, NULL }, { "subprocess", NULL, NULL }, { "subprocess", "mode", "spawn" }
  };
  for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_autoptr(cx_backend) backend =
      cx_test_open_backend(backends[i][0], backends[i][1], backends[i][2], NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "raise ValueError('a\\x00b')", NULL);
    CX_ASSERT_ERROR_TYPE(result, "ValueError");
    CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), "a" CX_RESULT_NUL "b");
    static const char want[] = "a\0b|a\0b|ValueError: a\0b|ValueError: a\0b";
    g_autofree char *what = g_strdup_printf("the error of %s", backends[i][0]);
    assert_python_gives(what, cx_result_to_json(result, FALSE),
                        "'|'.join([v['error']['message'], v['outputs'][-1]['evalue'], "
                        "v['error']['traceback'].splitlines()[-1], "
                        "v['outputs'][-1]['traceback'][-1]])", want, sizeof want - 1);

    /* The JsonNode forms hold no NUL: U+FFFD there, as for stdout. */
    g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
    JsonObject *error = json_array_get_object_element(outputs, json_array_get_length(outputs) - 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(error, "evalue"), "a\xef\xbf\xbd" "b");
  }
}

/* ---- Random bytes ------------------------------------------------------------ */

#define RANDOM_SEED 20240611
#define RANDOM_STRINGS 50
#define RANDOM_MAX_LEN 300

/* Pieces random strings are made of, besides single random bytes: UTF-8
 * and the near misses a decoder must not confuse with it. */
static const char *const fragments[] = {
  "\xe2\x82\xac",         /* U+20AC */
  "\xf0\x9f\x98\x80",     /* U+1F600 */
  "\xef\xbf\xbd",         /* U+FFFD itself */
  "\xe2\x82",             /* cut short */
  "\xed\xa0\x80",         /* a surrogate */
  "\xc0\x80",             /* NUL in "modified UTF-8" */
  "\xc1\xbf",             /* overlong */
  "\xf4\x90\x80\x80",     /* beyond U+10FFFF */
  "\x00",
  "\x1f",
  "\x7f",
};
static const gsize fragment_lengths[] = { 3, 4, 3, 2, 3, 2, 2, 4, 1, 1, 1 };

/* RANDOM_STRINGS byte strings, the same every run: the first holds every
 * byte value in turn, the second is empty, the others have random lengths
 * up to RANDOM_MAX_LEN. */
static GPtrArray *
random_strings(void)
{
  G_STATIC_ASSERT(G_N_ELEMENTS(fragments) == G_N_ELEMENTS(fragment_lengths));
  GPtrArray *strings = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  GByteArray *all = g_byte_array_new();
  for (guint b = 0; b < 256; b++) {
    guint8 byte = (guint8)b;
    g_byte_array_append(all, &byte, 1);
  }
  g_ptr_array_add(strings, g_byte_array_free_to_bytes(all));
  g_ptr_array_add(strings, g_bytes_new(NULL, 0));

  g_autoptr(GRand) rand = g_rand_new_with_seed(RANDOM_SEED);
  while (strings->len < RANDOM_STRINGS) {
    guint len = (guint)g_rand_int_range(rand, 0, RANDOM_MAX_LEN + 1);
    GByteArray *bytes = g_byte_array_sized_new(len);
    while (bytes->len < len) {
      if (g_rand_int_range(rand, 0, 10) < 7) {
        guint8 byte = (guint8)g_rand_int_range(rand, 0, 256);
        g_byte_array_append(bytes, &byte, 1);
      } else {
        guint f = (guint)g_rand_int_range(rand, 0, G_N_ELEMENTS(fragments));
        g_byte_array_append(bytes, (const guint8 *)fragments[f],
                            (guint)MIN(fragment_lengths[f], len - bytes->len));
      }
    }
    g_ptr_array_add(strings, g_byte_array_free_to_bytes(bytes));
  }
  return strings;
}

/* The cell writing BYTES to its stdout as they are. */
static char *
cell_writing(GBytes *bytes)
{
  g_autofree char *hex = to_hex(bytes);
  return g_strdup_printf("import sys; n = sys.stdout.buffer.write(bytes.fromhex('%s'))", hex);
}

/* The text JSON gives for BYTES: each NUL-free run made valid UTF-8 the way
 * g_utf8_make_valid() does it (one U+FFFD per byte that does not begin a
 * valid sequence), NUL kept as U+0000. */
static GBytes *
json_text_of(GBytes *bytes)
{
  gsize len;
  const char *data = g_bytes_get_data(bytes, &len);
  GString *text = g_string_new(NULL);
  const char *end = data + len;
  while (data < end) {
    const char *nul = memchr(data, '\0', (gsize)(end - data));
    const char *stop = nul != NULL ? nul : end;
    g_autofree char *valid = g_utf8_make_valid(data, stop - data);
    g_string_append(text, valid);
    if (nul == NULL)
      break;
    g_string_append_c(text, '\0');
    data = nul + 1;
  }
  return g_string_free_to_bytes(text);
}

static void
test_random_bytes_arrive_unchanged(void)
{
  g_autoptr(GPtrArray) strings = random_strings();
  for (const char *const *name = real_backends; *name != NULL; name++) {
    g_autoptr(cx_backend) backend = cx_test_open_backend(*name, NULL, NULL);
    g_autoptr(GPtrArray) documents = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (guint i = 0; i < strings->len; i++) {
      GBytes *expected = g_ptr_array_index(strings, i);
      g_autofree char *code = cell_writing(expected);
      g_autoptr(cx_result) result = cx_test_run_cell(backend, code, NULL);
      CX_ASSERT_CELL_OK(result);
      gsize len;
      const char *out = cx_result_get_stdout(result, &len);
      g_autoptr(GBytes) actual = g_bytes_new(out, len);
      g_autofree char *what = g_strdup_printf("%s: stdout of string %u (seed %d)", *name, i, RANDOM_SEED);
      assert_bytes_equal(what, actual, expected);
      char *json = cx_result_to_json(result, FALSE);
      g_ptr_array_add(documents, g_bytes_new_take(json, strlen(json)));
    }
    g_autoptr(GPtrArray) decoded = strict_decode(documents, "v['stdout']");
    for (guint i = 0; i < strings->len; i++) {
      g_autoptr(GBytes) want = json_text_of(g_ptr_array_index(strings, i));
      g_autofree char *what = g_strdup_printf("%s: stdout of string %u in cx_result_to_json (seed %d)",
                                              *name, i, RANDOM_SEED);
      assert_bytes_equal(what, g_ptr_array_index(decoded, i), want);
    }
  }
}

/* The same strings through `cellexec run --json`: one cell per backend
 * writes them all in turn (a process per string would take seconds). */
static void
test_random_bytes_in_cli_json(void)
{
  g_autoptr(GPtrArray) strings = random_strings();
  GString *code = g_string_new("import sys\nfor h in [");
  g_autoptr(GByteArray) all = g_byte_array_new();
  for (guint i = 0; i < strings->len; i++) {
    GBytes *bytes = g_ptr_array_index(strings, i);
    g_autofree char *hex = to_hex(bytes);
    g_string_append_printf(code, "'%s', ", hex);
    gsize len;
    const guint8 *data = g_bytes_get_data(bytes, &len);
    g_byte_array_append(all, data, (guint)len);
  }
  g_string_append(code, "]:\n    n = sys.stdout.buffer.write(bytes.fromhex(h))");
  g_autoptr(GBytes) expected = g_bytes_new(all->data, all->len);
  g_autoptr(GBytes) want = json_text_of(expected);
  for (const char *const *backend = real_backends; *backend != NULL; backend++) {
    g_autoptr(GBytes) out = cellexec("run", "-b", *backend, "--json", "-c", code->str, NULL);
    g_autoptr(GBytes) decoded = strict_decode_one(out, "v['stdout']");
    g_autofree char *what = g_strdup_printf("%s: stdout in --json (seed %d)", *backend, RANDOM_SEED);
    assert_bytes_equal(what, decoded, want);
  }
  g_string_free(code, TRUE);
}

void
cx_test_register(void)
{
  /* The plugins are loaded before any child process runs: loaded after a
   * GSubprocess, valgrind reports a block of the dynamic loader's
   * (_dl_map_object_deps) as definitely lost. */
  cx_test_registry();
  static const cx_test_case jsonglib[] = {
    { "test_jsonglib_writes_u001f_raw", test_jsonglib_writes_u001f_raw },
    { "test_json_from_string_reads_a_nul_as_replacement",
      test_json_from_string_reads_a_nul_as_replacement },
    { "test_jsonglib_cuts_strings_at_nul", test_jsonglib_cuts_strings_at_nul },
    { "test_jsonglib_wraps_integers_beyond_64_bits", test_jsonglib_wraps_integers_beyond_64_bits },
    { "test_jsonglib_writes_exponent_doubles_invalid", test_jsonglib_writes_exponent_doubles_invalid },
    { NULL, NULL }
  };
  cx_test_add_suite("json-glib", jsonglib);
  static const cx_test_case strict[] = {
    { "test_json_text_escapes_every_control_character", test_json_text_escapes_every_control_character },
    { "test_json_text_keeps_nul_and_every_control_character_of_streams", test_json_text_keeps_nul_and_every_control_character_of_streams },
    { "test_json_text_writes_the_shortest_double", test_json_text_writes_the_shortest_double },
    { "test_json_text_has_no_infinity", test_json_text_has_no_infinity },
    { "test_json_text_writes_doubles_as_json_numbers", test_json_text_writes_doubles_as_json_numbers },
    { "test_cli_json_carries_every_control_character", test_cli_json_carries_every_control_character },
    { "test_notebook_keeps_numbers_json_glib_cannot_hold",
      test_notebook_keeps_numbers_json_glib_cannot_hold },
    { "test_notebook_keeps_nul_characters", test_notebook_keeps_nul_characters },
    { "test_notebook_outputs_keep_nul", test_notebook_outputs_keep_nul },
    { NULL, NULL }
  };
  cx_test_add_suite("strict JSON", strict);
  static const cx_test_case lossless[] = {
    { "test_random_bytes_arrive_unchanged", test_random_bytes_arrive_unchanged },
    { "test_random_bytes_in_cli_json", test_random_bytes_in_cli_json },
    { "test_error_message_keeps_nul", test_error_message_keeps_nul },
    { NULL, NULL }
  };
  cx_test_add_suite("lossless", lossless);
}
