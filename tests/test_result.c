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
                               "\"success\":true,\"error\":null}");
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
    "\"traceback\":\"Traceback ...\"}}");
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
  CX_ASSERT_CONTAINS(json, "\"error\":null,\"duration_ms\":1.5}");
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
    "\"error\":{\"type\":\"ValueError\",\"message\":\"bad\",\"traceback\":\"tb\"},\"truncated\":true}";
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

static void
test_result_set_error_accepts_its_own_strings(void)
{
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_set_error(result, "A", "message", "tb");
  cx_result_set_error(result, cx_result_get_error_type(result), cx_result_get_error_message(result),
                      cx_result_get_error_traceback(result));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), "message");
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
    { "test_result_set_error_accepts_its_own_strings", test_result_set_error_accepts_its_own_strings },
    { NULL, NULL }
  };
  cx_test_add_suite("result", tests);
}
