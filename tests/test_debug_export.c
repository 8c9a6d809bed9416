/* Debug exporters, Python error details, and executor operations on a
 * backend without them. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

static cx_backend *
open_fake(void)
{
  const char *const path[] = { cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(path);
  g_autoptr(GError) error = NULL;
  cx_backend *backend = cx_backend_open(registry, "fake", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  return backend;
}

static char *
read_file(const char *path)
{
  char *contents = NULL;
  CU_ASSERT_TRUE(g_file_get_contents(path, &contents, NULL, NULL));
  return contents;
}

/* Run CODE with ENV_ITEM in the run options through a fake backend that
 * exports to PATH with OPTIONS; returns the export's text. */
static char *
export_one_run(const char *path, const cx_debug_export_options *options, const char *code,
               const char *env_item)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_fake();
  cx_debug_exporter *exporter = cx_debug_exporter_new_for_path(path, options, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_backend_set_debug_exporter(backend, exporter);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  if (env_item != NULL)
    cx_run_options_add_env(run, env_item);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, code, run, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_debug_exporter_free(exporter);
  return read_file(path);
}

static void
test_debug_markdown_records_a_run_cell(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.md", NULL);
  g_autofree char *text = export_one_run(path, NULL, "print('noop')", "MODE=test");
  CX_ASSERT_CONTAINS(text, "# cellexec debug export");
  CX_ASSERT_CONTAINS(text, "## 1. run_cell");
  CX_ASSERT_CONTAINS(text, "- executor: fake");
  CX_ASSERT_CONTAINS(text, "- status: ok");
  CX_ASSERT_CONTAINS(text, "**Code**\n\n```python\nprint('noop')\n```");
  CX_ASSERT_CONTAINS(text, "\"MODE=test\"");
  CX_ASSERT_CONTAINS(text, "**Outputs**");
  CX_ASSERT_CONTAINS(text, "\"success\" : true");
  g_autoptr(GRegex) utc = g_regex_new("- time: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z", 0, 0, NULL);
  CU_ASSERT_TRUE(g_regex_match(utc, text, 0, NULL));
}

static void
test_debug_jsonl_writes_one_event_per_line(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.jsonl", NULL);
  g_autofree char *text = export_one_run(path, NULL, "x = 1\ny = 2", NULL);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 2);
  g_autoptr(JsonNode) event = json_from_string(lines[0], NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(event);
  JsonObject *o = json_node_get_object(event);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "step"), "run_cell");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "executor"), "fake");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "code"), "x = 1\ny = 2");
  CU_ASSERT_TRUE(json_object_has_member(o, "timestamp"));
  CU_ASSERT_TRUE(json_object_has_member(o, "inputs"));
  CU_ASSERT_TRUE(json_object_has_member(o, "environment"));
  CU_ASSERT_TRUE(json_object_get_boolean_member(json_object_get_object_member(o, "outputs"), "success"));
  CU_ASSERT_TRUE(json_object_get_null_member(o, "error"));
}

static void
test_debug_redacts_secrets_by_default(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.jsonl", NULL);
  g_autofree char *text = export_one_run(path, NULL, "x", "GITHUB_TOKEN=ghp_secret");
  CX_ASSERT_CONTAINS(text, "GITHUB_TOKEN=[redacted]");
  CU_ASSERT_PTR_NULL(strstr(text, "ghp_secret"));
}

static void
test_debug_redacts_configured_patterns(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.jsonl", NULL);
  const char *const redact[] = { "dataset_*", NULL };
  cx_debug_export_options options = { sizeof(options), redact, 0 };
  g_autofree char *text = export_one_run(path, &options, "x", "DATASET_ROOT=/private/data");
  CX_ASSERT_CONTAINS(text, "DATASET_ROOT=[redacted]");
  CU_ASSERT_PTR_NULL(strstr(text, "/private/data"));
}

static void
test_debug_caps_long_values_and_says_so(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.md", NULL);
  cx_debug_export_options options = { sizeof(options), NULL, 16 };
  g_autofree char *code = g_strnfill(100, 'a');
  g_autofree char *text = export_one_run(path, &options, code, NULL);
  CX_ASSERT_CONTAINS(text, "aaaaaaaaaaaaaaaa... [84 more bytes]");
}

static void
test_debug_markdown_fences_survive_backticks(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "run.md", NULL);
  g_autofree char *text = export_one_run(path, NULL, "s = '```'", NULL);
  CX_ASSERT_CONTAINS(text, "````python\ns = '```'\n````");
}

typedef struct {
  cx_debug_exporter base;
  GPtrArray *steps;
} recording_exporter;

static void
record_event(cx_debug_exporter *base, const cx_debug_event *event)
{
  recording_exporter *self = (recording_exporter *)base;
  CU_ASSERT_TRUE(event->struct_size >= sizeof(cx_debug_event));
  CU_ASSERT_TRUE(event->timestamp_us > 0);
  g_ptr_array_add(self->steps, g_strdup_printf("%s:%s:%s", event->executor, event->step,
                                               event->error_type ? event->error_type : "ok"));
}

static void
test_debug_host_exporter_sees_session_and_backend_events(void)
{
  recording_exporter exporter = { { sizeof(cx_debug_exporter), record_event, NULL, NULL },
                                  g_ptr_array_new_with_free_func(g_free) };
  g_autoptr(cx_backend) backend = open_fake();
  cx_backend_set_debug_exporter(backend, &exporter.base);
  g_autoptr(cx_result) r1 = cx_backend_run_cell(backend, "a", NULL, NULL);
  g_autoptr(cx_session) session = cx_session_open(backend, NULL);
  g_autoptr(cx_result) r2 = cx_session_run_cell(session, "b", NULL, NULL);
  cx_session_set_debug_exporter(session, NULL);
  g_autoptr(cx_result) r3 = cx_session_run_cell(session, "c", NULL, NULL);
  CU_ASSERT_EQUAL_FATAL(exporter.steps->len, 2);
  CU_ASSERT_STRING_EQUAL(g_ptr_array_index(exporter.steps, 0), "fake:run_cell:ok");
  CU_ASSERT_STRING_EQUAL(g_ptr_array_index(exporter.steps, 1), "fake:session_run_cell:ok");
  g_ptr_array_unref(exporter.steps);
}

static void
test_debug_failed_cell_is_an_error_event(void)
{
  recording_exporter exporter = { { sizeof(cx_debug_exporter), record_event, NULL, NULL },
                                  g_ptr_array_new_with_free_func(g_free) };
  const char *const path[] = { cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(path);
  const cx_plugin_info *fake = cx_registry_lookup(registry, "fake", NULL);
  cx_options *options = cx_options_new("fake", cx_plugin_info_get_options(fake));
  cx_options_set(options, "fail-with", "TimeoutError", NULL);
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "fake", options, NULL);
  cx_backend_set_debug_exporter(backend, &exporter.base);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "x", NULL, NULL);
  CU_ASSERT_STRING_EQUAL(g_ptr_array_index(exporter.steps, 0), "fake:run_cell:TimeoutError");
  g_ptr_array_unref(exporter.steps);
}

static void
test_debug_backend_failure_is_an_error_event_even_without_gerror(void)
{
  recording_exporter exporter = { { sizeof(cx_debug_exporter), record_event, NULL, NULL },
                                  g_ptr_array_new_with_free_func(g_free) };
  const char *const names[] = { "no_result", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "no_result", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(backend);
  cx_backend_set_debug_exporter(backend, &exporter.base);
  CU_ASSERT_PTR_NULL(cx_backend_run_cell(backend, "x", NULL, NULL)); /* the caller ignores errors */
  CU_ASSERT_EQUAL_FATAL(exporter.steps->len, 1);
  CU_ASSERT_STRING_EQUAL(g_ptr_array_index(exporter.steps, 0), "no_result:run_cell:CellexecError");
  g_ptr_array_unref(exporter.steps);
}

static void
test_debug_default_export_path(void)
{
  g_autofree char *path = cx_default_debug_export_path("some/dir/program.kedi");
  g_autofree char *cwd = g_get_current_dir();
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  CU_ASSERT_STRING_EQUAL(dir, cwd);
  g_autoptr(GRegex) shape = g_regex_new("^program_debug_export_\\d{8}T\\d{6}Z\\.md$", 0, 0, NULL);
  CU_ASSERT_TRUE(g_regex_match(shape, base, 0, NULL));
}

static void
test_debug_unwritable_path_is_an_error(void)
{
  g_autoptr(GError) error = NULL;
  cx_debug_exporter *exporter = cx_debug_exporter_new_markdown("/nonexistent/dir/x.md", NULL, &error);
  CU_ASSERT_PTR_NULL(exporter);
  CX_ASSERT_CONTAINS(error->message, "/nonexistent/dir/x.md");
}

static void
test_debug_config_debug_export_is_written(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *export = g_build_filename(dir, "from-config.jsonl", NULL);
  g_autofree char *text = g_strdup_printf("[cellexec]\nbackend = fake\nplugin-path = %s\ndebug-export = %s\n",
                                          cx_test_plugins_dir(), export);
  g_autofree char *config = cx_test_write_file(dir, "config", text);
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_backend_open_configured(config, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) result = cx_backend_run_cell(backend, "configured = 1", NULL, NULL);
  }
  g_autofree char *contents = read_file(export);
  CX_ASSERT_CONTAINS(contents, "\"code\":\"configured = 1\"");
}

static void
test_debug_cli_debug_export_writes_the_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *export = g_build_filename(dir, "cli.md", NULL);
  g_autofree char *program = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
  const char *argv[] = { program, "run", "-b", "fake", "--debug-export", export, "-c", "from_cli = 1", NULL };
  int status = -1;
  g_autoptr(GError) error = NULL;
  g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(g_spawn_check_wait_status(status, NULL));
  g_autofree char *contents = read_file(export);
  CX_ASSERT_CONTAINS(contents, "from_cli = 1");
  CX_ASSERT_CONTAINS(contents, "## 1. run_cell");
}

static void
test_python_error_details_survive_copy(void)
{
  g_autoptr(GError) error = NULL;
  cx_set_python_error(&error, "ZeroDivisionError", "division by zero", "Traceback ...", 3);
  CX_ASSERT_ERROR(error, CX_ERROR_PYTHON);
  CU_ASSERT_STRING_EQUAL(error->message, "ZeroDivisionError: division by zero");
  g_autoptr(GError) copy = g_error_copy(error);
  const cx_python_error *python = cx_error_get_python(copy);
  CU_ASSERT_PTR_NOT_NULL_FATAL(python);
  CU_ASSERT_STRING_EQUAL(python->type, "ZeroDivisionError");
  CU_ASSERT_STRING_EQUAL(python->message, "division by zero");
  CU_ASSERT_STRING_EQUAL(python->traceback, "Traceback ...");
  CU_ASSERT_EQUAL(python->line, 3);
  g_autoptr(GError) other = g_error_new(CX_ERROR, CX_ERROR_FAILED, "x");
  CU_ASSERT_PTR_NULL(cx_error_get_python(other));
}

static void
test_executor_operations_unsupported_without_executor(void)
{
  g_autoptr(cx_backend) backend = open_fake();
  g_autoptr(cx_session) session = cx_session_open(backend, NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_PTR_NULL(cx_session_execute_prelude(session, "x = 1", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
  CX_ASSERT_CONTAINS(error->message, "execute_prelude");
  g_clear_error(&error);
  CU_ASSERT_PTR_NULL(cx_session_execute_prelude_incremental(session, NULL, "x = 1", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
  CX_ASSERT_CONTAINS(error->message, "execute_prelude_incremental");
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_debug_markdown_records_a_run_cell", test_debug_markdown_records_a_run_cell },
    { "test_debug_jsonl_writes_one_event_per_line", test_debug_jsonl_writes_one_event_per_line },
    { "test_debug_redacts_secrets_by_default", test_debug_redacts_secrets_by_default },
    { "test_debug_redacts_configured_patterns", test_debug_redacts_configured_patterns },
    { "test_debug_caps_long_values_and_says_so", test_debug_caps_long_values_and_says_so },
    { "test_debug_markdown_fences_survive_backticks", test_debug_markdown_fences_survive_backticks },
    { "test_debug_host_exporter_sees_session_and_backend_events", test_debug_host_exporter_sees_session_and_backend_events },
    { "test_debug_failed_cell_is_an_error_event", test_debug_failed_cell_is_an_error_event },
    { "test_debug_backend_failure_is_an_error_event_even_without_gerror", test_debug_backend_failure_is_an_error_event_even_without_gerror },
    { "test_debug_default_export_path", test_debug_default_export_path },
    { "test_debug_unwritable_path_is_an_error", test_debug_unwritable_path_is_an_error },
    { "test_debug_config_debug_export_is_written", test_debug_config_debug_export_is_written },
    { "test_debug_cli_debug_export_writes_the_file", test_debug_cli_debug_export_writes_the_file },
    { "test_python_error_details_survive_copy", test_python_error_details_survive_copy },
    { "test_executor_operations_unsupported_without_executor", test_executor_operations_unsupported_without_executor },
    { NULL, NULL }
  };
  cx_test_add_suite("debug_export", tests);
}
