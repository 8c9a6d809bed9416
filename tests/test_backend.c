/* The backend facade: run options, defaults, unsupported operations. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

static cx_backend *
open_echo(const char *const *option_pairs)
{
  const char *const names[] = { "echo", "no_result", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  g_autoptr(cx_options) options = cx_options_new("echo", cx_plugin_info_get_options(echo));
  for (const char *const *p = option_pairs; p != NULL && *p != NULL; p += 2)
    CU_ASSERT_TRUE(cx_options_set(options, p[0], p[1], NULL));
  g_autoptr(GError) error = NULL;
  cx_backend *backend = cx_backend_open(registry, "echo", g_steal_pointer(&options), &error);
  CX_ASSERT_NO_ERROR(error);
  return backend;
}

/* The run options the echo plugin received, as JSON text. */
static char *
received_options(cx_backend *backend, const cx_run_options *run)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "code", run, &error);
  CX_ASSERT_NO_ERROR(error);
  const char *out = cx_result_get_stdout(result, NULL);
  CU_ASSERT_TRUE_FATAL(g_str_has_prefix(out, "code\n"));
  return g_strdup(out + strlen("code\n"));
}

static void
test_backend_passes_run_options_through(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, "/tmp");
  cx_run_options_add_env(run, "A=1");
  cx_run_options_set_timeout(run, 1.5);
  cx_run_options_add_allowed_mime_type(run, "text/plain");
  g_autofree char *seen = received_options(backend, run);
  CU_ASSERT_STRING_EQUAL(seen, "{\"cwd\":\"/tmp\",\"env\":[\"A=1\"],\"timeout\":1.5,"
                               "\"use_subprocess\":false,\"allowed_mime_types\":[\"text/plain\"]}");
}

/* --mime is the core's to apply: a plugin that ignores it (echo always adds
 * text/plain) still returns only the allowed types. */
static void
test_backend_core_applies_the_mime_filter(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_add_allowed_mime_type(run, "image/png");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) filtered = cx_backend_run_cell(backend, "x", run, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(filtered), 0);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(filtered);
  for (guint i = 0; i < json_array_get_length(outputs); i++)
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_array_get_object_element(outputs, i),
                                                         "output_type"), "stream");

  g_autoptr(cx_run_options) text = cx_run_options_new();
  cx_run_options_add_allowed_mime_type(text, "text/plain");
  g_autoptr(cx_result) kept = cx_backend_run_cell(backend, "x", text, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(kept), 1);
}

/* query("info") names the backend and its version whatever the plugin
 * says; an answer that is not an object is the plugin's bug. */
static void
test_backend_info_always_names_the_backend(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) fake = cx_backend_open(cx_test_registry(), "fake", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) info = cx_backend_query(fake, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE_FATAL(JSON_NODE_HOLDS_OBJECT(info));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_node_get_object(info), "backend"),
                         "fake");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_node_get_object(info), "version"),
                         PACKAGE_VERSION);
}

static void
test_backend_null_run_options_are_empty(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL);
  g_autofree char *seen = received_options(backend, NULL);
  CU_ASSERT_STRING_EQUAL(seen, "{\"cwd\":null,\"env\":[],\"timeout\":0.0,"
                               "\"use_subprocess\":false,\"allowed_mime_types\":null}");
}

static void
test_backend_options_are_defaults_of_run_options(void)
{
  const char *const pairs[] = { "cwd", "/srv", "env", "A=1;B=2", "timeout", "9", NULL };
  g_autoptr(cx_backend) backend = open_echo(pairs);
  g_autofree char *defaults = received_options(backend, NULL);
  CU_ASSERT_STRING_EQUAL(defaults, "{\"cwd\":\"/srv\",\"env\":[\"A=1\",\"B=2\"],\"timeout\":9.0,"
                                   "\"use_subprocess\":false,\"allowed_mime_types\":null}");

  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, "/tmp");
  cx_run_options_add_env(run, "B=3");
  g_autofree char *merged = received_options(backend, run);
  CU_ASSERT_STRING_EQUAL(merged, "{\"cwd\":\"/tmp\",\"env\":[\"A=1\",\"B=3\"],\"timeout\":9.0,"
                                 "\"use_subprocess\":false,\"allowed_mime_types\":null}");
}

static void
test_backend_without_sessions_reports_unsupported(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_PTR_NULL(cx_session_open(backend, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
  CX_ASSERT_CONTAINS(error->message, "backend 'echo' does not support sessions");
}

static void
test_backend_without_interrupt_or_query_reports_unsupported(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_backend_interrupt(backend, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
  g_clear_error(&error);
  CU_ASSERT_PTR_NULL(cx_backend_query(backend, "info", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
}

static void
test_backend_result_without_error_is_a_plugin_bug(void)
{
  const char *const names[] = { "no_result", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "no_result", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "x", NULL, &error);
  CU_ASSERT_PTR_NULL(result);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "bug in the plugin");
  CX_ASSERT_CONTAINS(error->message, "run_cell failed");
  g_clear_error(&error);

  /* Every method that fails without a reason gets one naming it: before,
   * callers saw a failure with a NULL error. */
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CU_ASSERT_PTR_NULL(session);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "session_open failed and gave no error");
  g_clear_error(&error);
  CU_ASSERT_FALSE(cx_backend_interrupt(backend, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "interrupt failed and gave no error");
  g_clear_error(&error);
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CU_ASSERT_PTR_NULL(info);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "query failed and gave no error");
}

static void
test_backend_outlives_its_caller_while_a_session_is_open(void)
{
  /* Before, freeing the backend destroyed the plugin's backend under the
   * open session, and the session then used freed memory. */
  g_autoptr(GError) error = NULL;
  cx_backend *backend = cx_backend_open(cx_test_registry(), "fake", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_session *session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_backend_free(backend);
  g_autoptr(cx_result) result = cx_session_run_cell(session, "x = 1", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_result_get_success(result));
  cx_session_close(session); /* the backend goes with it */
}

static void
test_backend_rejects_options_of_another_plugin(void)
{
  const char *const names[] = { "echo", "no_result", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  cx_options *options = cx_options_new("echo", cx_plugin_info_get_options(echo));
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "no_result", options, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
}

static void
test_backend_open_unknown_name_fails(void)
{
  const char *const names[] = { "echo", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "nope", NULL, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_NOT_FOUND);
}

static void
test_backend_outlives_its_registry_reference(void)
{
  g_autoptr(cx_backend) backend = open_echo(NULL); /* the registry was unreffed inside */
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(cx_backend_get_plugin(backend)), "echo");
  g_autofree char *seen = received_options(backend, NULL);
  CU_ASSERT_PTR_NOT_NULL(seen);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_backend_passes_run_options_through", test_backend_passes_run_options_through },
    { "test_backend_core_applies_the_mime_filter", test_backend_core_applies_the_mime_filter },
    { "test_backend_info_always_names_the_backend", test_backend_info_always_names_the_backend },
    { "test_backend_null_run_options_are_empty", test_backend_null_run_options_are_empty },
    { "test_backend_options_are_defaults_of_run_options", test_backend_options_are_defaults_of_run_options },
    { "test_backend_without_sessions_reports_unsupported", test_backend_without_sessions_reports_unsupported },
    { "test_backend_without_interrupt_or_query_reports_unsupported", test_backend_without_interrupt_or_query_reports_unsupported },
    { "test_backend_result_without_error_is_a_plugin_bug", test_backend_result_without_error_is_a_plugin_bug },
    { "test_backend_outlives_its_caller_while_a_session_is_open",
      test_backend_outlives_its_caller_while_a_session_is_open },
    { "test_backend_rejects_options_of_another_plugin", test_backend_rejects_options_of_another_plugin },
    { "test_backend_open_unknown_name_fails", test_backend_open_unknown_name_fails },
    { "test_backend_outlives_its_registry_reference", test_backend_outlives_its_registry_reference },
    { NULL, NULL }
  };
  cx_test_add_suite("backend", tests);
}
