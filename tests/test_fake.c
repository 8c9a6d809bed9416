/* The fake backend: recording and scripted replay, loaded as a real plugin. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

/* Open the fake backend with options given as key, value pairs. */
static cx_backend *
open_fake(const char *const *pairs, GError **error)
{
  const char *const path[] = { cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(path);
  const cx_plugin_info *fake = cx_registry_lookup(registry, "fake", error);
  if (fake == NULL)
    return NULL;
  g_autoptr(cx_options) options = cx_options_new("fake", cx_plugin_info_get_options(fake));
  for (const char *const *p = pairs; p != NULL && *p != NULL; p += 2)
    if (!cx_options_set(options, p[0], p[1], error))
      return NULL;
  return cx_backend_open(registry, "fake", g_steal_pointer(&options), error);
}

static char *
query_text(cx_backend *backend, const char *what)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_backend_query(backend, what, &error);
  CX_ASSERT_NO_ERROR(error);
  return json_to_string(node, FALSE);
}

static char *
write_responses(const char *json)
{
  g_autofree char *dir = cx_test_tmpdir();
  return cx_test_write_file(dir, "responses.json", json);
}

/* The classic example of backend injection: the call is recorded, and it
 * succeeds without running anything. */
static void
test_fake_records_print_noop(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('noop')", NULL);
  CU_ASSERT_TRUE(cx_result_get_success(result));
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(result, NULL), "");
  g_autofree char *codes = query_text(backend, "codes");
  CU_ASSERT_STRING_EQUAL(codes, "[\"print('noop')\"]");
}

/* A backend without session_request: unsupported, which a kernel answers
 * as one with nothing to offer. */
static void
test_fake_session_requests_are_unsupported(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "code", "zi");
  g_autoptr(JsonObject) reply = cx_session_request(session, "complete_request", content, &error);
  CU_ASSERT_PTR_NULL(reply);
  CU_ASSERT_TRUE(g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED));
  CU_ASSERT_PTR_NOT_NULL(error != NULL ? strstr(error->message, "complete_request") : NULL);
}

static void
test_fake_records_calls_with_their_options_in_order(void)
{
  g_autoptr(cx_backend) backend = open_fake(NULL, NULL);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_cwd(options, "/tmp");
  cx_run_options_add_env(options, "DATASET_ROOT=/tmp/data");
  g_autoptr(cx_result) first = cx_backend_run_cell(backend, "a", options, NULL);
  g_autoptr(cx_result) second = cx_test_run_cell(backend, "b", NULL);
  g_autofree char *calls = query_text(backend, "calls");
  CU_ASSERT_STRING_EQUAL(calls,
    "[{\"code\":\"a\",\"options\":{\"cwd\":\"/tmp\",\"env\":[\"DATASET_ROOT=/tmp/data\"],"
    "\"timeout\":0.0,\"use_subprocess\":false,\"allowed_mime_types\":null},\"session\":null},"
    "{\"code\":\"b\",\"options\":{\"cwd\":null,\"env\":[],\"timeout\":0.0,"
    "\"use_subprocess\":false,\"allowed_mime_types\":null},\"session\":null}]");
}

static void
test_fake_replays_responses_in_order_then_default(void)
{
  g_autofree char *file = write_responses(
    "[{\"stdout\": \"one\\n\", \"rich_outputs\": [{\"text/plain\": \"1\"}]},"
    " {\"success\": false, \"error\": {\"type\": \"ValueError\", \"message\": \"two\", \"traceback\": \"tb\"}}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) r1 = cx_test_run_cell(backend, "x", NULL);
  g_autoptr(cx_result) r2 = cx_test_run_cell(backend, "y", NULL);
  g_autoptr(cx_result) r3 = cx_test_run_cell(backend, "z", NULL);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(r1, NULL), "one\n");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(r1, 0), "text/plain"), "1");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(r2), "ValueError");
  CU_ASSERT_TRUE(cx_result_get_success(r3));
  CU_ASSERT_FALSE(cx_result_has_error(r3));
}

static void
test_fake_default_error_when_script_runs_out(void)
{
  const char *const pairs[] = { "default", "error", NULL };
  g_autoptr(cx_backend) backend = open_fake(pairs, NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "x", NULL);
  CU_ASSERT_FALSE(cx_result_get_success(result));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), "FakeBackendError");
}

static void
test_fake_rejects_a_bad_default(void)
{
  const char *const pairs[] = { "default", "maybe", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_CONTAINS(error->message, "'success' or 'error', not 'maybe'");
}

static void
test_fake_match_rules_answer_every_matching_cell(void)
{
  g_autofree char *file = write_responses(
    "[{\"match\": \"^import\", \"result\": {\"stdout\": \"imported\"}},"
    " {\"stdout\": \"ordered\"}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(cx_backend) backend = open_fake(pairs, NULL);
  g_autoptr(cx_result) r1 = cx_test_run_cell(backend, "import os", NULL);
  g_autoptr(cx_result) r2 = cx_test_run_cell(backend, "import sys", NULL);
  g_autoptr(cx_result) r3 = cx_test_run_cell(backend, "x = 1", NULL);
  g_autoptr(cx_result) r4 = cx_test_run_cell(backend, "x = 2", NULL);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(r1, NULL), "imported");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(r2, NULL), "imported");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(r3, NULL), "ordered");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(r4, NULL), "");
}

static void
test_fake_fail_with_injects_an_error(void)
{
  const char *const pairs[] = { "fail-with", "TimeoutError", NULL };
  g_autoptr(cx_backend) backend = open_fake(pairs, NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "import time; time.sleep(5)", NULL);
  CU_ASSERT_FALSE(cx_result_get_success(result));
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), "TimeoutError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "fail-with");
}

static void
test_fake_appends_calls_to_the_record_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *record = g_build_filename(dir, "calls.jsonl", NULL);
  const char *const pairs[] = { "record", record, NULL };
  {
    g_autoptr(cx_backend) backend = open_fake(pairs, NULL);
    g_autoptr(cx_result) r1 = cx_test_run_cell(backend, "first", NULL);
    g_autoptr(cx_result) r2 = cx_test_run_cell(backend, "second\nline", NULL);
  }
  g_autofree char *contents = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(record, &contents, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(contents, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 3); /* two lines and the final "" */
  CU_ASSERT_TRUE(g_str_has_prefix(lines[0], "{\"code\":\"first\","));
  CU_ASSERT_TRUE(g_str_has_prefix(lines[1], "{\"code\":\"second\\nline\","));
  CU_ASSERT_STRING_EQUAL(lines[2], "");
}

static void
test_fake_sessions_are_recorded_with_their_id(void)
{
  g_autoptr(cx_backend) backend = open_fake(NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_session_run_cell(session, "value = 41", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_session_interrupt(session, &error));
  g_autofree char *calls = query_text(backend, "calls");
  CX_ASSERT_CONTAINS(calls, "\"session\":1}");
  g_autofree char *info = query_text(backend, "info");
  /* The fake's own counters first (the core may add keys after them). */
  CX_ASSERT_CONTAINS(info, "{\"calls\":1,\"responses_left\":0,\"sessions_opened\":1,\"interrupts\":1");
}

static void
test_fake_bad_responses_file_names_the_entry(void)
{
  g_autofree char *file = write_responses("[{\"stdout\": \"ok\"}, {\"stdout\": 5}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON); /* the plugin's own code (backend.c keeps it) */
  CX_ASSERT_CONTAINS(error->message, file);
  CX_ASSERT_CONTAINS(error->message, "entry 1");
  CX_ASSERT_CONTAINS(error->message, "\"stdout\" must be a string");
}

static void
test_fake_bad_match_rule_is_reported(void)
{
  g_autofree char *file = write_responses("[{\"match\": \"(\", \"result\": {}}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_CONTAINS(error->message, "bad \"match\"");
}

static void
test_fake_unknown_query_is_unsupported(void)
{
  g_autoptr(cx_backend) backend = open_fake(NULL, NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_PTR_NULL(cx_backend_query(backend, "weather", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
}

/* ---- Replaying recordings (cellexec/record.h) ---------------------------- */

/* One record line: CODE at SESSION ("null" or {"id", "cell"}) gave STDOUT. */
static char *
record_line(const char *code, const char *session, const char *out)
{
  return g_strdup_printf("{\"backend\":\"local\",\"session\":%s,\"code\":\"%s\","
                         "\"options\":null,\"result\":{\"stdout\":\"%s\",\"execution_count\":3}}\n",
                         session, code, out);
}

static char *
write_recording(const char *dir, const char *name)
{
  g_autofree char *a = record_line("x", "null", "x1");
  g_autofree char *b = record_line("x", "null", "x2");
  g_autofree char *c = record_line("y", "null", "y");
  g_autofree char *d = record_line("n += 1", "{\"id\":1,\"cell\":2}", "s1c2");
  g_autofree char *e = record_line("n += 1", "{\"id\":1,\"cell\":1}", "s1c1");
  g_autofree char *text = g_strconcat(a, b, c, d, e, NULL);
  return cx_test_write_file(dir, name, text);
}

static const char *
stdout_of(cx_backend *backend, const char *code)
{
  static char *last;
  g_clear_pointer(&last, g_free);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, code, NULL);
  last = g_strdup(cx_result_get_stdout(result, NULL));
  return last;
}

static void
test_fake_replays_a_recording_by_code_position_and_order(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *file = write_recording(dir, "cells.jsonl");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "y"), "y");
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "x"), "x1");
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "y"), "y");  /* the only one, again */
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "x"), "x2");
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "x"), "x2"); /* all used: the last again */
  /* Extra keys come back too. */
  g_autoptr(cx_result) extra = cx_test_run_cell(backend, "y", NULL);
  CU_ASSERT_EQUAL(json_node_get_int(cx_result_get_extra(extra, "execution_count")), 3);

  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) first = cx_session_run_cell(session, "n += 1", NULL, &error);
  g_autoptr(cx_result) second = cx_session_run_cell(session, "n += 1", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(first, NULL), "s1c1");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(second, NULL), "s1c2");
}

static void
test_fake_unrecorded_cell_fails_naming_code_and_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *file = write_recording(dir, "cells.jsonl");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(cx_backend) backend = open_fake(pairs, NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "import pandas\ndf = 1", NULL);
  CX_ASSERT_ERROR_TYPE(result, "UnrecordedCell");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "\"import pandas\"");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), file);
  CU_ASSERT_PTR_NULL(strstr(cx_result_get_error_message(result), "df = 1"));

  const char *const lenient[] = { "responses", file, "unmatched", "default", "default", "error", NULL };
  g_autoptr(cx_backend) other = open_fake(lenient, NULL);
  g_autoptr(cx_result) fallback = cx_test_run_cell(other, "import pandas", NULL);
  CX_ASSERT_ERROR_TYPE(fallback, "FakeBackendError");

  const char *const bad[] = { "unmatched", "ignore", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) none = open_fake(bad, &error);
  CU_ASSERT_PTR_NULL(none);
  CX_ASSERT_CONTAINS(error->message, "'error' or 'default', not 'ignore'");
}

/* Rules first, then the recording, then ordered bundles, then the error. */
static void
test_fake_mixes_rules_bundles_and_a_recording(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *recording = write_recording(dir, "cells.jsonl");
  g_autofree char *file = cx_test_write_file(dir, "responses.json",
    "[{\"match\": \"^y\", \"result\": {\"stdout\": \"rule\"}},"
    " {\"recording\": \"cells.jsonl\"},"
    " {\"stdout\": \"ordered\"}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "y"), "rule");
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "x"), "x1");
  CU_ASSERT_STRING_EQUAL(stdout_of(backend, "z"), "ordered");
  g_autoptr(cx_result) missing = cx_test_run_cell(backend, "z", NULL);
  CX_ASSERT_ERROR_TYPE(missing, "UnrecordedCell");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(missing), recording);
}

static void
test_fake_bad_recording_entry_names_entry_and_line(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *recording = cx_test_write_file(dir, "cells.jsonl", "{\"backend\":\"local\",\"code\":\"x\",\"result\":{}}\n{oops\n");
  g_autofree char *file = cx_test_write_file(dir, "responses.json", "[{\"recording\": \"cells.jsonl\"}]");
  const char *const pairs[] = { "responses", file, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake(pairs, &error);
  CU_ASSERT_PTR_NULL(backend);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, "entry 0");
  CX_ASSERT_CONTAINS(error->message, "cells.jsonl:2: not valid JSON");
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_fake_records_print_noop", test_fake_records_print_noop },
    { "test_fake_session_requests_are_unsupported", test_fake_session_requests_are_unsupported },
    { "test_fake_records_calls_with_their_options_in_order", test_fake_records_calls_with_their_options_in_order },
    { "test_fake_replays_responses_in_order_then_default", test_fake_replays_responses_in_order_then_default },
    { "test_fake_default_error_when_script_runs_out", test_fake_default_error_when_script_runs_out },
    { "test_fake_rejects_a_bad_default", test_fake_rejects_a_bad_default },
    { "test_fake_match_rules_answer_every_matching_cell", test_fake_match_rules_answer_every_matching_cell },
    { "test_fake_fail_with_injects_an_error", test_fake_fail_with_injects_an_error },
    { "test_fake_appends_calls_to_the_record_file", test_fake_appends_calls_to_the_record_file },
    { "test_fake_sessions_are_recorded_with_their_id", test_fake_sessions_are_recorded_with_their_id },
    { "test_fake_bad_responses_file_names_the_entry", test_fake_bad_responses_file_names_the_entry },
    { "test_fake_bad_match_rule_is_reported", test_fake_bad_match_rule_is_reported },
    { "test_fake_unknown_query_is_unsupported", test_fake_unknown_query_is_unsupported },
    { "test_fake_replays_a_recording_by_code_position_and_order", test_fake_replays_a_recording_by_code_position_and_order },
    { "test_fake_unrecorded_cell_fails_naming_code_and_file", test_fake_unrecorded_cell_fails_naming_code_and_file },
    { "test_fake_mixes_rules_bundles_and_a_recording", test_fake_mixes_rules_bundles_and_a_recording },
    { "test_fake_bad_recording_entry_names_entry_and_line", test_fake_bad_recording_entry_names_entry_and_line },
    { NULL, NULL }
  };
  cx_test_add_suite("fake", tests);
}
