/* The result bundle: its JSON schema, in and out. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

static JsonObject *
parse_object(const char *text)
{
  g_autoptr(JsonNode) node = json_from_string(text, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(node);
  return json_object_ref(json_node_get_object(node));
}

static void
test_result_new_is_an_empty_success(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CU_ASSERT_STRING_EQUAL(json, "{\"stdout\":\"\",\"stderr\":\"\",\"rich_outputs\":[],"
                               "\"success\":true,\"error\":null,\"outputs\":[]}");
}

static void
test_result_json_has_the_ipython_schema(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "hello\n", -1);
  cx_result_append_stderr(result, "warn", 4);
  cx_result_add_output_text(result, "text/plain", "2");
  cx_result_set_error(result, "ZeroDivisionError", "division by zero", "Traceback ...");
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CU_ASSERT_STRING_EQUAL(json,
    "{\"stdout\":\"hello\\n\",\"stderr\":\"warn\",\"rich_outputs\":[{\"text/plain\":\"2\"}],"
    "\"success\":false,\"error\":{\"type\":\"ZeroDivisionError\",\"message\":\"division by zero\","
    "\"traceback\":\"Traceback ...\"},\"outputs\":["
    "{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"hello\\n\"},"
    "{\"output_type\":\"stream\",\"name\":\"stderr\",\"text\":\"warn\"},"
    "{\"output_type\":\"display_data\",\"data\":{\"text/plain\":\"2\"},\"metadata\":{}},"
    "{\"output_type\":\"error\",\"ename\":\"ZeroDivisionError\",\"evalue\":\"division by zero\","
    "\"traceback\":[\"Traceback ...\"]}]}");
}

static void
test_result_outputs_keep_their_order(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_add_output_text(result, "text/plain", "first");
  g_autoptr(JsonObject) bundle = parse_object("{\"text/plain\": \"<img>\", \"image/png\": \"iVBORw0KGgo=\"}");
  CU_ASSERT_TRUE(cx_result_add_output(result, bundle));
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 2);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 0), "text/plain"), "first");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 1), "image/png"), "iVBORw0KGgo=");
  CU_ASSERT_PTR_NULL(cx_result_get_output(result, 2));
}

static void
test_result_rejects_an_empty_bundle(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  g_autoptr(JsonObject) empty = json_object_new();
  CU_ASSERT_FALSE(cx_result_add_output(result, empty));
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
}

static void
test_result_extra_keys_follow_the_standard_ones(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  CU_ASSERT_TRUE(cx_result_set_extra(result, "duration_ms", json_node_init_double(json_node_alloc(), 1.5)));
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CX_ASSERT_CONTAINS(json, "\"error\":null,\"outputs\":[],\"duration_ms\":1.5}");
  CU_ASSERT_DOUBLE_EQUAL(json_node_get_double(cx_result_get_extra(result, "duration_ms")), 1.5, 1e-9);
  cx_result_set_extra(result, "truncated", json_node_init_boolean(json_node_alloc(), TRUE));
  g_auto(GStrv) keys = cx_result_list_extras(result);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(keys), 2);
  CU_ASSERT_STRING_EQUAL(keys[0], "duration_ms");
  CU_ASSERT_STRING_EQUAL(keys[1], "truncated");
}

static void
count_warning(const char *domain, GLogLevelFlags level, const char *message, gpointer count)
{
  (*(int *)count)++;
}

static void
test_result_extra_cannot_replace_a_standard_key(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  int warnings = 0;
  guint handler = g_log_set_handler(NULL, G_LOG_LEVEL_WARNING, count_warning, &warnings);
  CU_ASSERT_FALSE(cx_result_set_extra(result, "stdout", json_node_init_string(json_node_alloc(), "x")));
  g_log_remove_handler(NULL, handler);
  CU_ASSERT_EQUAL(warnings, 1);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(result, NULL), "");
}

static void
test_result_invalid_utf8_is_replaced_in_json_only(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "a\xff" "b", 3);
  gsize length;
  CU_ASSERT_EQUAL(memcmp(cx_result_get_stdout(result, &length), "a\xff" "b", 3), 0);
  CU_ASSERT_EQUAL(length, 3);
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CU_ASSERT_TRUE(g_utf8_validate(json, -1, NULL));
  CX_ASSERT_CONTAINS(json, "\"stdout\":\"a\xef\xbf\xbd" "b\"");
}

static void
test_result_json_round_trips(void)
{
  const char *text =
    "{\"stdout\":\"out\",\"stderr\":\"err\",\"rich_outputs\":[{\"text/html\":\"<b>x</b>\","
    "\"text/plain\":\"x\"},{\"application/json\":{\"a\":[1,2]}}],\"success\":false,"
    "\"error\":{\"type\":\"ValueError\",\"message\":\"bad\",\"traceback\":\"tb\"},\"outputs\":["
    "{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"out\"},"
    "{\"output_type\":\"stream\",\"name\":\"stderr\",\"text\":\"err\"},"
    "{\"output_type\":\"display_data\",\"data\":{\"text/html\":\"<b>x</b>\",\"text/plain\":\"x\"},"
    "\"metadata\":{}},{\"output_type\":\"display_data\",\"data\":{\"application/json\":"
    "{\"a\":[1,2]}},\"metadata\":{}},{\"output_type\":\"error\",\"ename\":\"ValueError\","
    "\"evalue\":\"bad\",\"traceback\":[\"tb\"]}],\"truncated\":true}";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_result_from_json(text, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *again = cx_result_to_json(result, FALSE);
  CU_ASSERT_STRING_EQUAL(again, text);
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), "ValueError");
  CU_ASSERT_TRUE(json_node_get_boolean(cx_result_get_extra(result, "truncated")));
}

static void
test_result_from_json_fills_missing_keys(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) ok = cx_result_from_json("{\"stdout\": \"hi\"}", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_result_get_success(ok));
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(ok), 0);
  g_autoptr(cx_result) failed = cx_result_from_json("{\"error\": {\"type\": \"TimeoutError\"}}", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_FALSE(cx_result_get_success(failed));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(failed), "");
}

static void
test_result_from_json_names_the_bad_key(void)
{
  static const struct { const char *json, *key; } cases[] = {
    { "{\"stdout\": 3}", "\"stdout\"" },
    { "{\"rich_outputs\": {}}", "\"rich_outputs\"" },
    { "{\"rich_outputs\": [{}]}", "\"rich_outputs[0]\"" },
    { "{\"success\": \"yes\"}", "\"success\"" },
    { "{\"error\": {\"message\": \"m\"}}", "\"error.type\"" },
    { "[1, 2]", "JSON object" },
    { "{not json", "result bundle" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_result) result = cx_result_from_json(cases[i].json, &error);
    CU_ASSERT_PTR_NULL(result);
    CX_ASSERT_ERROR(error, CX_ERROR_JSON);
    CX_ASSERT_CONTAINS(error->message, cases[i].key);
  }
}

static void
test_result_copy_is_independent(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "x\xff", 2);
  cx_result_set_error(result, "E", "m", NULL);
  g_autoptr(cx_result) copy = cx_result_copy(result);
  cx_result_append_stdout(result, "more", -1);
  gsize length;
  cx_result_get_stdout(copy, &length);
  CU_ASSERT_EQUAL(length, 2);
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(copy), "E");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_traceback(copy), "");
}

/* Extras set on a copy stay on the copy (json_node_copy() would share
 * the object holding them). */
static void
test_result_copy_has_extras_of_its_own(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_set_extra(result, "nested", cx_json_from_string("{\"list\": [1, {\"a\": \"b\"}]}", -1, NULL));
  g_autoptr(cx_result) copy = cx_result_copy(result);
  cx_result_set_extra(copy, "added", json_node_init_int(json_node_alloc(), 1));
  CU_ASSERT_PTR_NULL(cx_result_get_extra(result, "added"));
  g_autofree char *original = cx_result_to_json(result, FALSE);
  g_autofree char *copied = cx_result_to_json(copy, FALSE);
  CX_ASSERT_CONTAINS(copied, "\"nested\":{\"list\":[1,{\"a\":\"b\"}]},\"added\":1");
  CU_ASSERT_PTR_NULL(strstr(original, "added"));
}

/* Copies of one result made and freed on several threads at once, as a
 * fake backend replays one recorded result to several callers: a copy
 * that shared the original's bundles would race on their (non-atomic)
 * reference counts and free them while in use. */
#define COPYING_THREADS 4
#define COPIES_PER_THREAD 20000

static gint json_complaints;

static void
count_complaint(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data)
{
  g_atomic_int_inc(&json_complaints);
}

static gpointer
copy_many(gpointer data)
{
  const cx_result *shared = data;
  for (guint i = 0; i < COPIES_PER_THREAD; i++)
    cx_result_free(cx_result_copy(shared));
  return NULL;
}

static void
test_result_copies_from_many_threads(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  g_autoptr(JsonNode) bundle = cx_json_from_string("{\"text/plain\": \"x\", \"image/png\": \"AA==\"}", -1, NULL);
  g_autoptr(JsonObject) metadata = json_object_new();
  CU_ASSERT_TRUE(cx_result_add_display(result, json_node_get_object(bundle), metadata, "d"));
  cx_result_set_extra(result, "count", json_node_init_int(json_node_alloc(), 3));
  g_autofree char *before = cx_result_to_json(result, FALSE);
  /* A lost reference shows first as json-glib's "ref_count > 0" complaint. */
  guint handler = g_log_set_handler("Json", G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING,
                                    count_complaint, NULL);
  GThread *threads[COPYING_THREADS];
  for (guint i = 0; i < COPYING_THREADS; i++)
    threads[i] = g_thread_new("copier", copy_many, result);
  for (guint i = 0; i < COPYING_THREADS; i++)
    g_thread_join(threads[i]);
  g_log_remove_handler("Json", handler);
  CU_ASSERT_EQUAL(g_atomic_int_get(&json_complaints), 0);
  g_autofree char *after = cx_result_to_json(result, FALSE);
  CU_ASSERT_STRING_EQUAL(after, before);
}

static void
test_result_set_error_accepts_its_own_strings(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_set_error(result, "A", "message", "tb");
  cx_result_set_error(result, cx_result_get_error_type(result), cx_result_get_error_message(result),
                      cx_result_get_error_traceback(result));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), "message");
}

/* "outputs" of RESULT as compact JSON, for comparing whole. */
static char *
outputs_json(const cx_result *result)
{
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), outputs);
  return cx_json_to_string(node, FALSE);
}

static void
test_result_outputs_are_ordered_nbformat(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "a", -1);
  cx_result_append_stdout(result, "b\n", -1); /* merged with "a" */
  cx_result_append_stderr(result, "e\n", -1);
  g_autoptr(JsonObject) html = parse_object("{\"text/html\": \"<b/>\", \"text/plain\": \"b\"}");
  g_autoptr(JsonObject) width = parse_object("{\"image/png\": {\"width\": 3}}");
  CU_ASSERT_TRUE(cx_result_add_display(result, html, width, NULL));
  cx_result_append_stdout(result, "c\n", -1); /* a new stream output after the display */
  g_autoptr(JsonObject) two = parse_object("{\"text/plain\": \"2\"}");
  CU_ASSERT_TRUE(cx_result_add_execute_result(result, two, NULL, 7));
  g_autofree char *json = outputs_json(result);
  CU_ASSERT_STRING_EQUAL(json,
    "[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"ab\\n\"},"
    "{\"output_type\":\"stream\",\"name\":\"stderr\",\"text\":\"e\\n\"},"
    "{\"output_type\":\"display_data\",\"data\":{\"text/html\":\"<b/>\",\"text/plain\":\"b\"},"
    "\"metadata\":{\"image/png\":{\"width\":3}}},"
    "{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"c\\n\"},"
    "{\"output_type\":\"execute_result\",\"execution_count\":7,\"data\":{\"text/plain\":\"2\"},"
    "\"metadata\":{}}]");
  /* The seed keys keep their meaning. */
  CX_ASSERT_STDOUT(result, "ab\nc\n");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 2);
  CU_ASSERT_FALSE(cx_result_set_extra(result, "outputs", json_node_init_int(json_node_alloc(), 1)));
}

static void
test_result_update_display_replaces_every_output_of_its_id(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  g_autoptr(JsonObject) a = parse_object("{\"text/plain\": \"a\"}");
  g_autoptr(JsonObject) b = parse_object("{\"text/plain\": \"b\"}");
  g_autoptr(JsonObject) empty = json_object_new();
  CU_ASSERT_TRUE(cx_result_add_display(result, a, NULL, "d1"));
  CU_ASSERT_TRUE(cx_result_add_display(result, a, NULL, NULL));
  CU_ASSERT_TRUE(cx_result_add_display(result, a, NULL, "d1"));
  /* An empty placeholder to fill later: in "outputs", not in rich_outputs. */
  CU_ASSERT_TRUE(cx_result_add_display(result, empty, NULL, "d2"));
  CU_ASSERT_FALSE(cx_result_add_display(result, empty, NULL, NULL));
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 3);

  CU_ASSERT_EQUAL(cx_result_update_display(result, "d1", b, NULL), 2);
  CU_ASSERT_EQUAL(cx_result_update_display(result, "nobody", b, NULL), 0);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 0), "text/plain"), "b");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 1), "text/plain"), "a");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 2), "text/plain"), "b");
  CU_ASSERT_EQUAL(cx_result_update_display(result, "d2", a, NULL), 1);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 4);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  CU_ASSERT_EQUAL(json_array_get_length(outputs), 4);
}

static void
test_result_clear_output_clears_now_or_at_the_next_output(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  g_autoptr(JsonObject) a = parse_object("{\"text/plain\": \"a\"}");
  cx_result_append_stdout(result, "one\n", -1);
  cx_result_add_display(result, a, NULL, NULL);
  cx_result_clear_output(result, FALSE);
  CX_ASSERT_STDOUT(result, "");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);

  cx_result_append_stderr(result, "two\n", -1);
  cx_result_clear_output(result, TRUE);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "two\n"); /* kept until something new comes */
  cx_result_append_stdout(result, "three\n", -1);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "");
  CX_ASSERT_STDOUT(result, "three\n");
  g_autofree char *json = outputs_json(result);
  CU_ASSERT_STRING_EQUAL(json, "[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"three\\n\"}]");

  /* An error is an output too. */
  cx_result_clear_output(result, TRUE);
  cx_result_set_error(result, "E", "m", "tb\n");
  CX_ASSERT_STDOUT(result, "");
}

static void
test_result_json_keeps_every_byte_of_the_streams(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "a\0b\x1f" "c\xff", 6);
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CX_ASSERT_CONTAINS(json, "\"stdout\":\"a\\u0000b\\u001fc\xef\xbf\xbd\"");
  CX_ASSERT_CONTAINS(json, "\"text\":\"a\\u0000b\\u001fc\xef\xbf\xbd\"");
  /* A JsonNode cannot hold NUL: there it reads as U+FFFD. */
  g_autoptr(JsonNode) node = cx_result_to_json_node(result);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_node_get_object(node), "stdout"),
                         "a\xef\xbf\xbd" "b\x1f" "c\xef\xbf\xbd");
}

/* RESULT's JSON, after checking that reading it back writes it again the
 * same. */
static char *
assert_json_round_trips(const cx_result *result)
{
  char *text = cx_result_to_json(result, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) again = cx_result_from_json(text, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *text_again = cx_result_to_json(again, FALSE);
  CU_ASSERT_STRING_EQUAL(text_again, text);
  return text;
}

static void
test_result_outputs_round_trip_and_are_made_when_missing(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stderr(result, "warn\n", -1);
  g_autoptr(JsonObject) two = parse_object("{\"text/plain\": \"2\"}");
  cx_result_add_execute_result(result, two, NULL, 3);
  cx_result_append_stdout(result, "after\n", -1);
  cx_result_set_error(result, "ValueError", "bad", "Traceback\nValueError: bad\n");
  g_autofree char *text = assert_json_round_trips(result);
  CX_ASSERT_CONTAINS(text, "\"traceback\":[\"Traceback\",\"ValueError: bad\"]");
  g_autoptr(cx_result) copy = cx_result_copy(result);
  g_autofree char *text_copy = cx_result_to_json(copy, FALSE);
  CU_ASSERT_STRING_EQUAL(text_copy, text);

  /* Without "outputs": streams first, then the bundles. */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) old = cx_result_from_json(
    "{\"stdout\": \"o\", \"rich_outputs\": [{\"text/plain\": \"1\"}]}", &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *made = outputs_json(old);
  CU_ASSERT_STRING_EQUAL(made, "[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"o\"},"
                               "{\"output_type\":\"display_data\",\"data\":{\"text/plain\":\"1\"},"
                               "\"metadata\":{}}]");
  g_autoptr(cx_result) bad = cx_result_from_json("{\"outputs\": [{\"output_type\": \"bogus\"}]}", &error);
  CU_ASSERT_PTR_NULL(bad);
  CX_ASSERT_CONTAINS(error->message, "outputs[0]");
}

static void
test_result_shown_errors_do_not_fail_the_cell(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_add_error_output(result, "RuntimeError", "no html", "Traceback\nRuntimeError: no html\n");
  cx_result_append_stdout(result, "still here\n", -1);
  CU_ASSERT_TRUE(cx_result_get_success(result));
  CU_ASSERT_FALSE(cx_result_has_error(result));
  g_autofree char *json = outputs_json(result);
  CU_ASSERT_STRING_EQUAL(json,
    "[{\"output_type\":\"error\",\"ename\":\"RuntimeError\",\"evalue\":\"no html\","
    "\"traceback\":[\"Traceback\",\"RuntimeError: no html\"]},"
    "{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"still here\\n\"}]");
  /* Read back as a shown error, and the cell's own failure as the last. */
  cx_result_set_error(result, "ValueError", "bad", "tb\n");
  g_autofree char *text = assert_json_round_trips(result);
}

/* IPython's traceback lines (entries holding line breaks and colour codes)
 * stand in the error output while error.traceback stays plain; a failure
 * without an error output (a UsageError) stays so; both survive JSON and
 * a copy, and cx_result_set_error() resets them. */
static void
test_result_error_output_as_ipython_shows_it(void)
{
  static const char *const lines[] = { "\x1b[0;31m----\x1b[0m", "Cell In [2], line 1\n----> 1 f()\n",
                                       "ZeroDivisionError: division by zero", NULL };
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_add_error_output_lines(result, "RuntimeError", "shown", lines);
  cx_result_set_error(result, "ZeroDivisionError", "division by zero",
                      "Traceback (most recent call last):\nZeroDivisionError: division by zero\n");
  CU_ASSERT_PTR_NULL(cx_result_get_error_output_traceback(result));
  cx_result_set_error_output(result, lines, TRUE);
  CU_ASSERT_TRUE(cx_result_get_error_output_shown(result));
  g_autofree char *json = outputs_json(result);
  CX_ASSERT_CONTAINS(json, "\"traceback\":[\"\\u001b[0;31m----\\u001b[0m\",\"Cell In [2], line 1\\n----> 1 f()\\n\"");
  const char *first = strstr(json, "Cell In [2]");
  CU_ASSERT_TRUE(first != NULL && strstr(first + 1, "Cell In [2]") != NULL); /* both errors */
  g_autofree char *text = assert_json_round_trips(result);
  g_autoptr(cx_result) read = cx_result_from_json(text, NULL);
  CU_ASSERT_TRUE(g_strv_equal(cx_result_get_error_output_traceback(read), lines));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_traceback(read),
                         "Traceback (most recent call last):\nZeroDivisionError: division by zero\n");
  g_autoptr(cx_result) copy = cx_result_copy(result);
  CU_ASSERT_TRUE(g_strv_equal(cx_result_get_error_output_traceback(copy), lines));

  /* A NUL (as the marker) is kept, as in the error's own texts; lines
   * that are not UTF-8 are not taken. */
  static const char *const nul[] = { "a" CX_RESULT_NUL "b", NULL };
  cx_result_set_error_output(result, nul, TRUE);
  CU_ASSERT_TRUE(g_strv_equal(cx_result_get_error_output_traceback(result), nul));
  g_autofree char *kept = cx_result_to_json(result, FALSE);
  CX_ASSERT_CONTAINS(kept, "\"a\\u0000b\"");
  static const char *const bad[] = { "a\xff", NULL };
  cx_result_set_error_output(result, bad, TRUE);
  CU_ASSERT_PTR_NULL(cx_result_get_error_output_traceback(result));

  /* No error output: only the stderr line the backend wrote. */
  g_autoptr(cx_result) usage = cx_result_new();
  cx_result_append_stderr(usage, "UsageError: Line magic function `%nope` not found.\n", -1);
  cx_result_set_error(usage, "UsageError", "Line magic function `%nope` not found.",
                      "UsageError: Line magic function `%nope` not found.\n");
  cx_result_set_error_output(usage, NULL, FALSE);
  CU_ASSERT_FALSE(cx_result_get_error_output_shown(usage));
  g_autofree char *usage_json = outputs_json(usage);
  CU_ASSERT_STRING_EQUAL(usage_json, "[{\"output_type\":\"stream\",\"name\":\"stderr\",\"text\":"
                                     "\"UsageError: Line magic function `%nope` not found.\\n\"}]");
  g_autofree char *usage_text = assert_json_round_trips(usage);
  g_autoptr(cx_result) usage_read = cx_result_from_json(usage_text, NULL);
  CU_ASSERT_FALSE(cx_result_get_error_output_shown(usage_read));
  CU_ASSERT_TRUE(cx_result_has_error(usage_read));
  g_autoptr(cx_result) usage_copy = cx_result_copy(usage);
  CU_ASSERT_FALSE(cx_result_get_error_output_shown(usage_copy));
  /* A new error is shown again, with its own lines. */
  cx_result_set_error(usage, "ValueError", "bad", "ValueError: bad\n");
  CU_ASSERT_TRUE(cx_result_get_error_output_shown(usage));
}

/* Timeouts, crashes and dead kernels end a session; a cell's own
 * exception or a stopped flood does not. */
static void
test_result_ends_session_only_for_lost_state(void)
{
  static const struct { const char *type; gboolean ends; } cases[] = {
    { CX_ERROR_TYPE_TIMEOUT, TRUE },          { CX_ERROR_TYPE_WORKER_CRASHED, TRUE },
    { CX_ERROR_TYPE_KERNEL_DIED, TRUE },      { CX_ERROR_TYPE_OUTPUT_LIMIT, FALSE },
    { CX_ERROR_TYPE_CPU_TIME, FALSE },        { "ZeroDivisionError", FALSE },
  };
  g_autoptr(cx_result) ok = cx_result_new();
  CU_ASSERT_FALSE(cx_result_ends_session(ok));
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(cx_result) failed = cx_result_new();
    cx_result_set_error(failed, cases[i].type, "m", NULL);
    CU_ASSERT_EQUAL(cx_result_ends_session(failed), cases[i].ends);
  }
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_result_new_is_an_empty_success", test_result_new_is_an_empty_success },
    { "test_result_json_has_the_ipython_schema", test_result_json_has_the_ipython_schema },
    { "test_result_outputs_keep_their_order", test_result_outputs_keep_their_order },
    { "test_result_rejects_an_empty_bundle", test_result_rejects_an_empty_bundle },
    { "test_result_extra_keys_follow_the_standard_ones", test_result_extra_keys_follow_the_standard_ones },
    { "test_result_extra_cannot_replace_a_standard_key", test_result_extra_cannot_replace_a_standard_key },
    { "test_result_invalid_utf8_is_replaced_in_json_only", test_result_invalid_utf8_is_replaced_in_json_only },
    { "test_result_json_round_trips", test_result_json_round_trips },
    { "test_result_from_json_fills_missing_keys", test_result_from_json_fills_missing_keys },
    { "test_result_from_json_names_the_bad_key", test_result_from_json_names_the_bad_key },
    { "test_result_copy_is_independent", test_result_copy_is_independent },
    { "test_result_copy_has_extras_of_its_own", test_result_copy_has_extras_of_its_own },
    { "test_result_copies_from_many_threads", test_result_copies_from_many_threads },
    { "test_result_set_error_accepts_its_own_strings", test_result_set_error_accepts_its_own_strings },
    { "test_result_outputs_are_ordered_nbformat", test_result_outputs_are_ordered_nbformat },
    { "test_result_update_display_replaces_every_output_of_its_id",
      test_result_update_display_replaces_every_output_of_its_id },
    { "test_result_clear_output_clears_now_or_at_the_next_output",
      test_result_clear_output_clears_now_or_at_the_next_output },
    { "test_result_json_keeps_every_byte_of_the_streams", test_result_json_keeps_every_byte_of_the_streams },
    { "test_result_outputs_round_trip_and_are_made_when_missing",
      test_result_outputs_round_trip_and_are_made_when_missing },
    { "test_result_shown_errors_do_not_fail_the_cell", test_result_shown_errors_do_not_fail_the_cell },
    { "test_result_error_output_as_ipython_shows_it", test_result_error_output_as_ipython_shows_it },
    { "test_result_ends_session_only_for_lost_state", test_result_ends_session_only_for_lost_state },
    { NULL, NULL }
  };
  cx_test_add_suite("result", tests);
}
