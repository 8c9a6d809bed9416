/* Notebooks (cellexec/notebook.h) and `cellexec notebook run`: reading,
 * writing, parameters, tags, failures, fresh sessions, the per-cell
 * callback and the command's exit statuses.  Outputs compared with nbclient
 * are tests/check_notebooks.sh's. */
#define _GNU_SOURCE /* posix_openpt, grantpt, unlockpt, ptsname, cfmakeraw */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "cx_test.h"

/* A minimal nbformat 4.5 notebook of code cells SOURCES (NULL-terminated);
 * TAGS[i] (may be NULL) tags cell i. */
static char *
notebook_text(const char *const *sources, const char *const *tags)
{
  g_autoptr(JsonBuilder) builder = json_builder_new();
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "nbformat");
  json_builder_add_int_value(builder, 4);
  json_builder_set_member_name(builder, "nbformat_minor");
  json_builder_add_int_value(builder, 5);
  json_builder_set_member_name(builder, "metadata");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "custom");
  json_builder_add_string_value(builder, "kept");
  json_builder_end_object(builder);
  json_builder_set_member_name(builder, "cells");
  json_builder_begin_array(builder);
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "id");
  json_builder_add_string_value(builder, "md");
  json_builder_set_member_name(builder, "cell_type");
  json_builder_add_string_value(builder, "markdown");
  json_builder_set_member_name(builder, "metadata");
  json_builder_begin_object(builder);
  json_builder_end_object(builder);
  json_builder_set_member_name(builder, "source");
  json_builder_begin_array(builder);
  json_builder_add_string_value(builder, "# Title é\n");
  json_builder_add_string_value(builder, "text");
  json_builder_end_array(builder);
  json_builder_end_object(builder);
  for (guint i = 0; sources[i] != NULL; i++) {
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "id");
    g_autofree char *id = g_strdup_printf("c%u", i);
    json_builder_add_string_value(builder, id);
    json_builder_set_member_name(builder, "cell_type");
    json_builder_add_string_value(builder, "code");
    json_builder_set_member_name(builder, "metadata");
    json_builder_begin_object(builder);
    if (tags != NULL && tags[i] != NULL) {
      json_builder_set_member_name(builder, "tags");
      json_builder_begin_array(builder);
      json_builder_add_string_value(builder, tags[i]);
      json_builder_end_array(builder);
    }
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "execution_count");
    json_builder_add_null_value(builder);
    json_builder_set_member_name(builder, "outputs");
    json_builder_begin_array(builder);
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "source");
    json_builder_add_string_value(builder, sources[i]);
    json_builder_end_object(builder);
  }
  json_builder_end_array(builder);
  json_builder_end_object(builder);
  g_autoptr(JsonNode) root = json_builder_get_root(builder);
  return json_to_string(root, TRUE);
}

static cx_notebook *
notebook_of(const char *const *sources, const char *const *tags)
{
  g_autofree char *text = notebook_text(sources, tags);
  g_autoptr(GError) error = NULL;
  cx_notebook *notebook = cx_notebook_load_data(text, -1, "test.ipynb", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  return notebook;
}

/* The outputs of cell INDEX as compact JSON text. */
static char *
outputs_of(const cx_notebook *notebook, guint index)
{
  JsonObject *cell = cx_notebook_get_cell(notebook, index);
  return json_to_string(json_object_get_member(cell, "outputs"), FALSE);
}

static gint64
count_of(const cx_notebook *notebook, guint index)
{
  JsonNode *count = json_object_get_member(cx_notebook_get_cell(notebook, index), "execution_count");
  return JSON_NODE_HOLDS_NULL(count) ? -1 : json_node_get_int(count);
}

/* ---- Reading ------------------------------------------------------------ */

static void
assert_load_fails(const char *text, const char *needle)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "bad.ipynb", &error);
  CU_ASSERT_PTR_NULL(notebook);
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  CX_ASSERT_CONTAINS(error->message, "bad.ipynb: ");
  CX_ASSERT_CONTAINS(error->message, needle);
  CU_ASSERT_PTR_NULL(strchr(error->message, '\n'));
}

static void
test_notebook_rejects_what_is_not_an_nbformat_4_notebook(void)
{
  assert_load_fails("{\"cells\": [", "not valid JSON");
  assert_load_fails("[1, 2]", "not a Jupyter notebook");
  assert_load_fails("{\"cells\": []}", "no integer \"nbformat\"");
  assert_load_fails("{\"nbformat\": 3, \"nbformat_minor\": 0, \"worksheets\": []}",
                    "jupyter nbconvert --to notebook --nbformat 4");
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 9, \"cells\": []}",
                    "nbformat 4.9 is not supported");
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}}", "no \"cells\" list");
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, "
                    "\"cells\": [{\"cell_type\": \"code\", \"source\": 5}]}",
                    "cell 1 has no \"source\"");
  /* Numbers a double cannot hold are kept as text inside; still numbers. */
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, "
                    "\"cells\": [{\"cell_type\": \"code\", \"source\": 1e400}]}",
                    "cell 1 has no \"source\"");
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, "
                    "\"cells\": [{\"cell_type\": \"code\", \"source\": [\"a\", 1e400]}]}",
                    "cell 1 has no \"source\"");
  assert_load_fails("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, "
                    "\"cells\": [{\"cell_type\": 123456789012345678901234567890, "
                    "\"source\": \"\"}]}",
                    "cell 1 has no \"cell_type\"");
  assert_load_fails("\xff\xfe", "not UTF-8");
  assert_load_fails("", "empty file");
}

static void
test_notebook_reads_sources_as_strings_or_lists(void)
{
  const char *const sources[] = { "x = 1", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  CU_ASSERT_EQUAL(cx_notebook_get_n_cells(notebook), 2);
  CU_ASSERT_STRING_EQUAL(cx_notebook_get_cell_type(notebook, 0), "markdown");
  g_autofree char *markdown = cx_notebook_get_cell_source(notebook, 0);
  CU_ASSERT_STRING_EQUAL(markdown, "# Title é\ntext");
  g_autofree char *code = cx_notebook_get_cell_source(notebook, 1);
  CU_ASSERT_STRING_EQUAL(code, "x = 1");
}

/* ---- Running ------------------------------------------------------------ */

static cx_backend *
local(void)
{
  return cx_test_open_backend("local", NULL, NULL);
}

static void
test_notebook_runs_cells_in_one_session(void)
{
  const char *const sources[] = { "x = 20", "print('x', x)\nx + 1", "  \n", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autoptr(cx_backend) backend = local();
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *second = outputs_of(notebook, 2);
  CU_ASSERT_STRING_EQUAL(second,
    "[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"x 20\\n\"},"
    "{\"output_type\":\"execute_result\",\"execution_count\":2,"
    "\"data\":{\"text/plain\":\"21\"},\"metadata\":{}}]");
  CU_ASSERT_EQUAL(count_of(notebook, 1), 1);
  CU_ASSERT_EQUAL(count_of(notebook, 2), 2);
  CU_ASSERT_EQUAL(count_of(notebook, 3), -1); /* blank: not run */
  JsonObject *execution = json_object_get_object_member(
    json_object_get_object_member(cx_notebook_get_cell(notebook, 2), "metadata"), "execution");
  CU_ASSERT_PTR_NOT_NULL_FATAL(execution);
  CU_ASSERT_TRUE(g_str_has_suffix(json_object_get_string_member(execution, "shell.execute_reply"), "Z"));
  /* The markdown cell and the notebook's metadata are as they were. */
  g_autofree char *text = cx_notebook_to_json(notebook);
  CX_ASSERT_CONTAINS(text, "\"# Title é\\n\"");
  CX_ASSERT_CONTAINS(text, "\"custom\": \"kept\"");
  CU_ASSERT_TRUE(g_str_has_suffix(text, "}\n"));
}

typedef struct {
  GString *log;
} trace;

static void
record_report(const cx_notebook_cell_report *report, gpointer data)
{
  trace *t = data;
  static const char *const names[] = { "started", "ok", "failed", "skipped" };
  g_string_append_printf(t->log, "%u/%u:%s%s ", report->code_index + 1, report->n_code_cells,
                         names[report->status], report->allowed_failure ? "(allowed)" : "");
  CU_ASSERT_EQUAL(report->struct_size, sizeof(cx_notebook_cell_report));
  CU_ASSERT_EQUAL(report->result == NULL, report->status == CX_NOTEBOOK_CELL_STARTED ||
                                          report->status == CX_NOTEBOOK_CELL_SKIPPED);
}

static void
test_notebook_stops_at_the_first_failure_unless_allowed(void)
{
  const char *const sources[] = { "a = 1", "raise KeyError('k')", "1 / 0", "print('later')", NULL };
  const char *const tags[] = { NULL, "raises-exception", NULL, NULL };
  g_autoptr(cx_backend) backend = local();

  g_autoptr(cx_notebook) stopped = notebook_of(sources, tags);
  trace t = { g_string_new(NULL) };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_notebook_run(stopped, backend, NULL, CX_NOTEBOOK_DEFAULT, record_report, &t,
                                  &error));
  CX_ASSERT_ERROR(error, CX_ERROR_CELL);
  CX_ASSERT_CONTAINS(error->message, "code cell 3 (cell 4 of the file) failed");
  CX_ASSERT_CONTAINS(error->message, "ZeroDivisionError: division by zero");
  CU_ASSERT_STRING_EQUAL(t.log->str, "1/4:started 1/4:ok 2/4:started 2/4:failed(allowed) "
                                     "3/4:started 3/4:failed ");
  g_autofree char *failed = outputs_of(stopped, 3);
  CX_ASSERT_CONTAINS(failed, "\"output_type\":\"error\",\"ename\":\"ZeroDivisionError\"");
  g_autofree char *untouched = outputs_of(stopped, 4);
  CU_ASSERT_STRING_EQUAL(untouched, "[]");
  CU_ASSERT_EQUAL(count_of(stopped, 4), -1);

  g_autoptr(cx_notebook) allowed = notebook_of(sources, tags);
  g_string_truncate(t.log, 0);
  g_clear_error(&error);
  CU_ASSERT_TRUE(cx_notebook_run(allowed, backend, NULL, CX_NOTEBOOK_ALLOW_ERRORS, record_report,
                                 &t, &error));
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CONTAINS(t.log->str, "3/4:failed(allowed) 4/4:started 4/4:ok");
  g_autofree char *later = outputs_of(allowed, 4);
  CX_ASSERT_CONTAINS(later, "later");
  g_string_free(t.log, TRUE);
}

/* A code cell whose source holds a NUL fails as Python's compile() refuses
 * it, naming the cell, and nothing of it runs.  (Read as U+FFFD, the NUL
 * inside a string literal below made other code that ran.) */
static void
test_notebook_code_cell_with_nul_fails_without_running(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *ran = g_build_filename(dir, "ran", NULL);
  g_autofree char *text = g_strdup_printf(
    "{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, "
    "\"outputs\": [], \"source\": \"x = 1\"}, "
    "{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, \"outputs\": [], "
    "\"source\": [\"x = 2\\n\", \"n = open('%s', 'w').write('a\\u0000b')\"]}, "
    "{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, \"outputs\": [], "
    "\"source\": \"print(x)\"}], "
    "\"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 4}", ran);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "nul.ipynb", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autoptr(cx_backend) backend = local();
  CU_ASSERT_FALSE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_CELL);
  CX_ASSERT_CONTAINS(error->message, "(cell 2 of the file) failed");
  CX_ASSERT_CONTAINS(error->message,
                     "failed, so the run stopped there: ValueError: source code string cannot "
                     "contain null bytes");
  CU_ASSERT_FALSE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_autofree char *outputs = outputs_of(notebook, 1);
  CX_ASSERT_CONTAINS(outputs, "\"output_type\":\"error\",\"ename\":\"ValueError\"");
  g_autofree char *untouched = outputs_of(notebook, 2);
  CU_ASSERT_STRING_EQUAL(untouched, "[]");

  /* --allow-errors: the next cell runs, in the same session. */
  g_clear_error(&error);
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_ALLOW_ERRORS, NULL, NULL,
                                 &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_FALSE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_autofree char *printed = outputs_of(notebook, 2);
  CX_ASSERT_CONTAINS(printed, "\"text\":\"1\\n\"");

  /* The message of a cell that raised with a NUL in it: text, the NUL
   * escaped (it was cut there, then the bytes C0 80 reached the terminal). */
  const char *const raising[] = { "raise ValueError('a\\x00b')", NULL };
  g_autoptr(cx_notebook) raises = notebook_of(raising, NULL);
  g_clear_error(&error);
  CU_ASSERT_FALSE(cx_notebook_run(raises, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_CELL);
  CX_ASSERT_CONTAINS(error->message, "failed, so the run stopped there: ValueError: a\\u0000b");
  CU_ASSERT_TRUE(g_utf8_validate(error->message, -1, NULL));
}

static void
test_notebook_skips_cells_tagged_skip_execution(void)
{
  const char *const sources[] = { "ran = []", "ran.append('no')", "ran", NULL };
  const char *const tags[] = { NULL, "skip-execution", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, tags);
  g_autoptr(cx_backend) backend = local();
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  g_autofree char *last = outputs_of(notebook, 3);
  CX_ASSERT_CONTAINS(last, "\"text/plain\":\"[]\"");
  CU_ASSERT_EQUAL(count_of(notebook, 2), -1);
}

static void
test_notebook_continues_in_a_fresh_session_after_a_crash(void)
{
  /* The worker dies in cell 2: with --allow-errors cell 3 runs in a new
   * session, where `kept` no longer exists. */
  const char *const sources[] = { "kept = 1", "import os; os.abort()", "print('kept' in dir())",
                                  NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", NULL, NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_ALLOW_ERRORS, NULL, NULL,
                                 &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *crashed = outputs_of(notebook, 2);
  CX_ASSERT_CONTAINS(crashed, "WorkerCrashed");
  g_autofree char *after = outputs_of(notebook, 3);
  CX_ASSERT_CONTAINS(after, "False\\n");
  CU_ASSERT_EQUAL(count_of(notebook, 3), 1);
  /* The fresh session is noted first in the cell that runs in it. */
  CX_ASSERT_CONTAINS(after, "{\"output_type\":\"stream\",\"name\":\"stderr\",\"text\":"
                            "\"cellexec: a fresh session runs this cell and the ones after it: "
                            "code cell 2 ended its session (WorkerCrashed)\\n\"}");
  CU_ASSERT_PTR_NULL(strstr(crashed, "fresh session"));
}

static void
note_session_replaced(const cx_notebook_cell_report *report, gpointer data)
{
  if (report->status == CX_NOTEBOOK_CELL_FAILED && report->session_replaced)
    *(guint *)data = report->code_index + 1;
}

/* The report says which cell ended its session (a timeout here), and
 * the notebook says so in the next cell that runs. */
static void
test_notebook_reports_a_replaced_session(void)
{
  const char *const sources[] = { "import time; time.sleep(30)", "", "1/0", "print('next')",
                                  NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", NULL, NULL);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 0.5);
  g_autoptr(GError) error = NULL;
  guint replaced = 0;
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, run, CX_NOTEBOOK_ALLOW_ERRORS,
                                 note_session_replaced, &replaced, &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(replaced, 1); /* not 3: a ZeroDivisionError keeps its session */
  /* Cell 2 is blank (not run): the note is in cell 3, and only there. */
  g_autofree char *blank = outputs_of(notebook, 2);
  CU_ASSERT_PTR_NULL(strstr(blank, "fresh session"));
  g_autofree char *third = outputs_of(notebook, 3);
  CX_ASSERT_CONTAINS(third, "code cell 1 ended its session (TimeoutError)");
  g_autofree char *fourth = outputs_of(notebook, 4);
  CU_ASSERT_PTR_NULL(strstr(fourth, "fresh session"));
}

/* In a session the caller opened and prepared: its state is there, and
 * the session is still the caller's afterwards. */
static void
test_notebook_runs_in_the_callers_session(void)
{
  const char *const sources[] = { "print(prepared * 2)", "later = 1", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autoptr(cx_backend) backend = local();
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(backend, &error);
  g_autoptr(cx_result) setup = cx_session_run_cell(session, "prepared = 21", NULL, &error);
  CX_ASSERT_CELL_OK(setup);
  CU_ASSERT_TRUE(cx_notebook_run_in_session(notebook, session, NULL, CX_NOTEBOOK_DEFAULT, NULL,
                                            NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *printed = outputs_of(notebook, 1);
  CX_ASSERT_CONTAINS(printed, "42\\n");
  g_autoptr(cx_result) after = cx_session_run_cell(session, "later", NULL, &error);
  CX_ASSERT_CELL_OK(after);
  cx_session_close(session);
}

static void
test_notebook_timeout_is_recorded_in_the_cell(void)
{
  const char *const sources[] = { "import time; time.sleep(30)", "print('next')", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", NULL, NULL);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 0.5);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, run, CX_NOTEBOOK_ALLOW_ERRORS, NULL, NULL,
                                 &error));
  g_autofree char *timed_out = outputs_of(notebook, 1);
  CX_ASSERT_CONTAINS(timed_out, "\"ename\":\"TimeoutError\"");
  g_autofree char *next = outputs_of(notebook, 2);
  CX_ASSERT_CONTAINS(next, "next");
}

static void
test_notebook_needs_a_backend_with_sessions(void)
{
  const char *const names[] = { "echo", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) echo = cx_backend_open(registry, "echo", NULL, &error);
  const char *const sources[] = { "x", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  CU_ASSERT_FALSE(cx_notebook_run(notebook, echo, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
  CX_ASSERT_CONTAINS(error->message, "a notebook runs in a session");
}

/* ---- Parameters --------------------------------------------------------- */

static void
test_notebook_injects_typed_parameters_after_the_tagged_cell(void)
{
  const char *const sources[] = { "n = 1\ns = 'x'", "print(repr(n), repr(s), repr(v), repr(d))", NULL };
  const char *const tags[] = { "parameters", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, tags);
  const char *const assignments[] = { "n=5", "s=hello world", "v=[1, true, null, 2.5]",
                                      "d={\"k\": \"é\\u0001\"}", NULL };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_inject_parameters(notebook, assignments, &error));
  CX_ASSERT_NO_ERROR(error);
  /* Injected again (a second run of the same file): replaced, not added. */
  CU_ASSERT_TRUE(cx_notebook_inject_parameters(notebook, assignments, &error));
  CU_ASSERT_EQUAL(cx_notebook_get_n_cells(notebook), 4);
  JsonObject *injected = cx_notebook_get_cell(notebook, 2);
  g_autofree char *metadata = json_to_string(json_object_get_member(injected, "metadata"), FALSE);
  CX_ASSERT_CONTAINS(metadata, "injected-parameters");
  CU_ASSERT_TRUE(json_object_has_member(injected, "id"));
  g_autoptr(cx_backend) backend = local();
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *printed = outputs_of(notebook, 3);
  CX_ASSERT_CONTAINS(printed, "5 'hello world' [1, True, None, 2.5] {'k': 'é\\\\x01'}");

  /* A name given twice: one line, its last value. */
  const char *const twice[] = { "year=2024", "year=2025", NULL };
  CU_ASSERT_TRUE(cx_notebook_inject_parameters(notebook, twice, &error));
  g_autofree char *source = cx_notebook_get_cell_source(notebook, 2);
  CU_ASSERT_STRING_EQUAL(source, "# Parameters\nyear = 2025\n");

  const char *const bad[] = { "2x=1", NULL };
  CU_ASSERT_FALSE(cx_notebook_inject_parameters(notebook, bad, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
}

/* Values json-glib cannot hold reach Python exactly (they became -1, -2^63
 * and a cut string), and a number beyond a double, which Python would read
 * as inf, is refused (it became None). */
static void
test_notebook_parameters_keep_their_values_exactly(void)
{
  const char *const sources[] = { "print(repr(big), repr(listed), repr(s), type(big).__name__)",
                                  NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  const char *const assignments[] = { "big=99999999999999999999999",
                                      "listed=[9223372036854775808, -9223372036854775809]",
                                      "s=\"a\\u0000b\"", NULL };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_notebook_inject_parameters(notebook, assignments, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *source = cx_notebook_get_cell_source(notebook, 0);
  CU_ASSERT_STRING_EQUAL(source, "# Parameters\nbig = 99999999999999999999999\n"
                                 "listed = [9223372036854775808, -9223372036854775809]\n"
                                 "s = \"a\\u0000b\"\n");
  g_autoptr(cx_backend) backend = local();
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *printed = outputs_of(notebook, 2);
  CX_ASSERT_CONTAINS(printed, "99999999999999999999999 [9223372036854775808, "
                              "-9223372036854775809] 'a\\\\x00b' int");

  static const char *const huge[] = { "x=1e999", "x=[1, {\"k\": -1E400}]" };
  for (guint i = 0; i < G_N_ELEMENTS(huge); i++) {
    const char *const one[] = { huge[i], NULL };
    g_clear_error(&error);
    CU_ASSERT_FALSE(cx_notebook_inject_parameters(notebook, one, &error));
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    CX_ASSERT_CONTAINS(error->message, huge[i]);
    CX_ASSERT_CONTAINS(error->message, "beyond the range of a double");
  }

  /* Valid JSON that cannot be kept exactly is refused, not passed on as
   * the string of its text. */
  GString *all = g_string_new("x=\"\\u0000");
  for (gunichar c = 0xfdd0; c <= 0xfdef; c++)
    g_string_append_unichar(all, c);
  g_string_append_c(all, '"');
  const char *const unkeepable[] = { all->str, NULL };
  g_clear_error(&error);
  CU_ASSERT_FALSE(cx_notebook_inject_parameters(notebook, unkeepable, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CX_ASSERT_CONTAINS(error->message, "parameter 'x': it holds a NUL character");
  g_string_free(all, TRUE);

  /* As deep as Python reads, and one level more. */
  for (int depth = 200; depth <= 201; depth++) {
    GString *nested = g_string_new("x=");
    for (int i = 0; i < depth; i++)
      g_string_append_c(nested, '[');
    for (int i = 0; i < depth; i++)
      g_string_append_c(nested, ']');
    const char *const one[] = { nested->str, NULL };
    g_autoptr(cx_notebook) deep = notebook_of(sources, NULL);
    g_clear_error(&error);
    gboolean injected = cx_notebook_inject_parameters(deep, one, &error);
    if (depth == 200) {
      CX_ASSERT_NO_ERROR(error);
      CU_ASSERT_TRUE(injected);
      g_autofree char *code = cx_notebook_get_cell_source(deep, 0);
      g_autoptr(cx_result) ran = cx_backend_run_cell(backend, code, NULL, &error);
      CX_ASSERT_NO_ERROR(error);
      CU_ASSERT_TRUE(ran != NULL && cx_result_get_success(ran));
    } else {
      CU_ASSERT_FALSE(injected);
      CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
      CX_ASSERT_CONTAINS(error->message, "parameter 'x': nested more than 200 levels deep");
    }
    g_string_free(nested, TRUE);
  }
}

/* ---- Writing and the command -------------------------------------------- */

/* The committed notebooks were written by nbformat: read and written
 * again, each comes out byte for byte. */
static void
test_notebook_writes_nbformat_layout(void)
{
  g_autofree char *dir = g_build_filename(cx_test_srcdir(), "tests", "notebooks", NULL);
  g_autoptr(GDir) listing = g_dir_open(dir, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(listing);
  guint checked = 0;
  for (const char *name; (name = g_dir_read_name(listing)) != NULL;) {
    if (!g_str_has_suffix(name, ".ipynb"))
      continue;
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *original = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(path, &original, NULL, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_notebook) notebook = cx_notebook_load(path, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *written = cx_notebook_to_json(notebook);
    CU_ASSERT_STRING_EQUAL(written, original);
    checked++;
  }
  CU_ASSERT_TRUE(checked >= 6);

  /* What json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False)
   * writes, multiline strings split as nbformat splits them. */
  const char *text =
    "{\"nbformat\": 4, \"nbformat_minor\": 4, \"metadata\": {\"z\": [], \"a\": {},"
    " \"f\": [1e16, 1e15, 0.0001, 1e-05, 2.5, -0.0, 1.0, 12345678901234567890.0, 7],"
    " \"s\": \"\\u0001\\u001f\\b\\f\\t\\r\\\"\\\\/\\u007f\\u2028é\"},"
    " \"cells\": [{\"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null,"
    " \"source\": \"a\\r\\nb\\rc\\u2028d\\n\", \"outputs\": [{\"output_type\": \"stream\","
    " \"name\": \"stdout\", \"text\": \"\"}]}]}";
  const char *expected =
    "{\n"
    " \"cells\": [\n"
    "  {\n"
    "   \"cell_type\": \"code\",\n"
    "   \"execution_count\": null,\n"
    "   \"metadata\": {},\n"
    "   \"outputs\": [\n"
    "    {\n"
    "     \"name\": \"stdout\",\n"
    "     \"output_type\": \"stream\",\n"
    "     \"text\": []\n"
    "    }\n"
    "   ],\n"
    "   \"source\": [\n"
    "    \"a\\r\\n\",\n"
    "    \"b\\r\",\n"
    "    \"c\u2028\",\n"
    "    \"d\\n\"\n"
    "   ]\n"
    "  }\n"
    " ],\n"
    " \"metadata\": {\n"
    "  \"a\": {},\n"
    "  \"f\": [\n"
    "   1e+16,\n"
    "   1000000000000000.0,\n"
    "   0.0001,\n"
    "   1e-05,\n"
    "   2.5,\n"
    "   -0.0,\n"
    "   1.0,\n"
    "   1.2345678901234567e+19,\n"
    "   7\n"
    "  ],\n"
    "  \"s\": \"\\u0001\\u001f\\b\\f\\t\\r\\\"\\\\/\x7f\u2028é\",\n"
    "  \"z\": []\n"
    " },\n"
    " \"nbformat\": 4,\n"
    " \"nbformat_minor\": 4\n"
    "}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "layout.ipynb", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autofree char *written = cx_notebook_to_json(notebook);
  CU_ASSERT_STRING_EQUAL(written, expected);
  /* Split only in what is written: the cell keeps its string. */
  JsonNode *source = json_object_get_member(cx_notebook_get_cell(notebook, 0), "source");
  CU_ASSERT_TRUE(JSON_NODE_HOLDS_VALUE(source));
}

/* A notebook for another language is refused before any cell runs; one
 * for Python, or that names no language, runs and gets language_info. */
static void
test_notebook_runs_python_notebooks_only(void)
{
  g_autoptr(cx_backend) backend = local();
  const char *julia =
    "{\"nbformat\": 4, \"nbformat_minor\": 4, \"metadata\": {\"kernelspec\":"
    " {\"name\": \"julia-1.9\", \"language\": \"julia\", \"display_name\": \"Julia\"}},"
    " \"cells\": [{\"cell_type\": \"code\", \"metadata\": {}, \"execution_count\": null,"
    " \"source\": \"println(1)\", \"outputs\": []}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) refused = cx_notebook_load_data(julia, -1, "julia.ipynb", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(refused);
  CU_ASSERT_FALSE(cx_notebook_run(refused, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  CU_ASSERT_STRING_EQUAL(error->message, "julia.ipynb: its kernel is julia-1.9 (language "
                                         "julia); cellexec runs Python notebooks only");
  CU_ASSERT_EQUAL(count_of(refused, 0), -1);
  g_clear_error(&error);

  const char *const sources[] = { "1 + 1", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  CU_ASSERT_TRUE(cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_DEFAULT, NULL, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(count_of(notebook, 1), 1); /* asking the version ran no cell */
  g_autofree char *text = cx_notebook_to_json(notebook);
  CX_ASSERT_CONTAINS(text, "\"language_info\": {\n   \"codemirror_mode\": {\n");
  CX_ASSERT_CONTAINS(text, "\"pygments_lexer\": \"ipython3\",\n");
  CX_ASSERT_CONTAINS(text, "\"version\": \"3.");
}

static void
test_notebook_command_exit_statuses_and_files(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  const char *const sources[] = { "print('hi')", NULL };
  g_autofree char *text = notebook_text(sources, NULL);
  g_autofree char *input = cx_test_write_file(dir, "in.ipynb", text);
  g_autofree char *output = g_build_filename(dir, "out.ipynb", NULL);

  g_auto(cx_test_cli_run) ok = cx_test_cellexec(NULL, "notebook", "run", "-q", input, "-o", output, NULL);
  CU_ASSERT_EQUAL(ok.status, 0);
  CU_ASSERT_STRING_EQUAL(ok.err, "");
  g_autofree char *written = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(output, &written, NULL, NULL));
  CX_ASSERT_CONTAINS(written, "\"text\": [\n      \"hi\\n\"\n");
  /* -p without a cell tagged parameters: papermill's warning, one line. */
  g_auto(cx_test_cli_run) warned = cx_test_cellexec(NULL, "notebook", "run", input, "-p", "x=1", NULL);
  CU_ASSERT_EQUAL(warned.status, 0);
  CX_ASSERT_CONTAINS(warned.err, "warning: ");
  CX_ASSERT_CONTAINS(warned.err, "no cell is tagged 'parameters'");
  g_autofree char *after = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(input, &after, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(after, text); /* the input is untouched without --inplace */

  g_auto(cx_test_cli_run) inplace = cx_test_cellexec(NULL, "notebook", "run", "-q", "--inplace", input, NULL);
  CU_ASSERT_EQUAL(inplace.status, 0);
  g_free(after);
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(input, &after, NULL, NULL));
  CX_ASSERT_CONTAINS(after, "\"text\": [\n      \"hi\\n\"\n");
  /* Written through a temporary file renamed over it: none is left. */
  g_autoptr(GDir) listing = g_dir_open(dir, 0, NULL);
  guint files = 0;
  while (g_dir_read_name(listing) != NULL)
    files++;
  CU_ASSERT_EQUAL(files, 2);

  g_autofree char *v3 = cx_test_write_file(dir, "old.ipynb",
                                           "{\"nbformat\": 3, \"nbformat_minor\": 0, \"worksheets\": []}");
  g_auto(cx_test_cli_run) old = cx_test_cellexec(NULL, "notebook", "run", v3, NULL);
  CU_ASSERT_EQUAL(old.status, 2);
  CX_ASSERT_CONTAINS(old.err, "old.ipynb: an nbformat 3 notebook");
  g_autofree char *missing = g_build_filename(dir, "missing.ipynb", NULL);
  g_auto(cx_test_cli_run) absent = cx_test_cellexec(NULL, "notebook", "run", missing, NULL);
  CU_ASSERT_EQUAL(absent.status, 2);
  g_autofree char *unreadable = g_strdup_printf("cannot read %s: ", missing);
  CX_ASSERT_CONTAINS(absent.err, unreadable);

  const char *const failing[] = { "1 / 0", NULL };
  g_autofree char *failing_text = notebook_text(failing, NULL);
  g_autofree char *bad = cx_test_write_file(dir, "bad.ipynb", failing_text);
  g_auto(cx_test_cli_run) failed = cx_test_cellexec(NULL, "notebook", "run", "--json", bad, NULL);
  CU_ASSERT_EQUAL(failed.status, 1);
  CX_ASSERT_CONTAINS(failed.out, "\"status\":\"failed\"");
  CX_ASSERT_CONTAINS(failed.out, "\"error\":\"ZeroDivisionError\"");
  CX_ASSERT_CONTAINS(failed.err, "cell 1/1 failed");
  g_auto(cx_test_cli_run) allowed = cx_test_cellexec(NULL, "notebook", "run", "-q", "--allow-errors", bad, NULL);
  CU_ASSERT_EQUAL(allowed.status, 0);

  /* A timeout fails the run even with --allow-errors (as nbclient's
   * CellTimeoutError does), after the later cells ran in a fresh session;
   * the progress line shows a cell's first line of code, not its comment. */
  const char *const timing_out[] = { "# wait\n\nimport time; time.sleep(30)", "print('later')",
                                     NULL };
  g_autofree char *timing_out_text = notebook_text(timing_out, NULL);
  g_autofree char *slow = cx_test_write_file(dir, "slow.ipynb", timing_out_text);
  g_auto(cx_test_cli_run) timed = cx_test_cellexec(NULL, "notebook", "run", "-b", "subprocess",
                                                   "--timeout", "0.5", "--allow-errors", slow,
                                                   NULL);
  CU_ASSERT_EQUAL(timed.status, 1);
  CX_ASSERT_CONTAINS(timed.err, "cell 1/2 failed (");
  CX_ASSERT_CONTAINS(timed.err, "TimeoutError: import time; time.sleep(30) [allowed]\n"
                                "cellexec: code cell 1 ended its session (TimeoutError); the "
                                "cells after it run in a fresh one\ncell 2/2 ok");
  CX_ASSERT_CONTAINS(timed.err, "slow.ipynb: 1 code cell timed out or crashed its session "
                                "(the first: code cell 1, TimeoutError)\n");

  /* -o is the output file here, a backend option in `cellexec run`: the
   * mix-up is refused, and no file named after an option appears. */
  g_autofree char *here = g_get_current_dir();
  CU_ASSERT_EQUAL(g_chdir(dir), 0);
  g_auto(cx_test_cli_run) option = cx_test_cellexec(NULL, "notebook", "run", "-q", input,
                                                    "-o", "token=secret", NULL);
  CU_ASSERT_EQUAL(option.status, 2);
  CX_ASSERT_CONTAINS(option.err, "set backend options with --option KEY=VALUE");
  g_auto(cx_test_cli_run) twice = cx_test_cellexec(NULL, "notebook", "run", "-q", input,
                                                   "-o", "a.ipynb", "-o", "b.ipynb", NULL);
  CU_ASSERT_EQUAL(twice.status, 2);
  CX_ASSERT_CONTAINS(twice.err, "-o given 2 times");
  CU_ASSERT_FALSE(g_file_test("token=secret", G_FILE_TEST_EXISTS));
  CU_ASSERT_FALSE(g_file_test("a.ipynb", G_FILE_TEST_EXISTS));
  CU_ASSERT_EQUAL(g_chdir(here), 0);
}

/* Saving replaces a regular file, keeping its permissions, and writes into
 * a character device (a rename would replace /dev/null with a plain file);
 * it never writes through a symbolic link, at the path or among its
 * directories, and refuses a named pipe without blocking: each refusal is
 * one sentence, and what was there is as it was. */
static void
test_notebook_save_keeps_modes_and_follows_no_link(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  const char *const sources[] = { "1", NULL };
  g_autofree char *text = notebook_text(sources, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "nb", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(notebook);
  g_autofree char *expected = cx_notebook_to_json(notebook);

  g_autofree char *real = cx_test_write_file(dir, "real.ipynb", "old");
  CU_ASSERT_EQUAL(chmod(real, 0640), 0);
  CU_ASSERT_TRUE(cx_notebook_save(notebook, real, &error));
  CX_ASSERT_NO_ERROR(error);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(real, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
  g_autofree char *saved = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(real, &saved, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(saved, expected);
  /* Not a set-user-id bit, which a cell's file may carry. */
  CU_ASSERT_EQUAL(chmod(real, 04755), 0);
  CU_ASSERT_TRUE(cx_notebook_save(notebook, real, &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL_FATAL(stat(real, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 07777, 0755);
  CU_ASSERT_TRUE(g_file_set_contents(real, "old", -1, NULL));

  static const struct { const char *name, *target, *expected; } links[] = {
    { "link.ipynb", "real.ipynb",
      "link.ipynb: it is a symbolic link that is not the system's, so never followed" },
    { "dangling.ipynb", "nowhere.ipynb", "dangling.ipynb: it is a symbolic link" },
    { "sub", ".", "sub, a directory on its path, is a symbolic link that is not the system's" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(links); i++) {
    g_autofree char *link = g_build_filename(dir, links[i].name, NULL);
    CU_ASSERT_EQUAL(symlink(links[i].target, link), 0);
    g_autofree char *path = i == 2 ? g_build_filename(link, "real.ipynb", NULL) : g_strdup(link);
    CU_ASSERT_FALSE(cx_notebook_save(notebook, path, &error));
    CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
    CX_ASSERT_CONTAINS(error->message, "cannot write the notebook ");
    CX_ASSERT_CONTAINS(error->message, links[i].expected);
    g_clear_error(&error);
    CU_ASSERT_EQUAL_FATAL(lstat(link, &st), 0);
    CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
  }
  g_autofree char *untouched = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(real, &untouched, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(untouched, "old");
  g_autofree char *nowhere = g_build_filename(dir, "nowhere.ipynb", NULL);
  CU_ASSERT_FALSE(g_file_test(nowhere, G_FILE_TEST_EXISTS));

  /* A named pipe is refused, with or without a reader, and stays. */
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
  CU_ASSERT_FALSE(cx_notebook_save(notebook, fifo, &error));
  CX_ASSERT_CONTAINS(error->message, "fifo: it is a named pipe, not a regular file");
  g_clear_error(&error);
  CU_ASSERT_EQUAL_FATAL(lstat(fifo, &st), 0);
  CU_ASSERT_TRUE(S_ISFIFO(st.st_mode));

  CU_ASSERT_TRUE(cx_notebook_save(notebook, "/dev/null", &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL_FATAL(lstat("/dev/null", &st), 0);
  CU_ASSERT_TRUE(S_ISCHR(st.st_mode));

  CU_ASSERT_FALSE(cx_notebook_save(notebook, dir, &error));
  CX_ASSERT_CONTAINS(error->message, "is a directory");
}

/* TRUE when PATH is a symbolic link of root's in a directory only root may
 * change: one of the system's, which saving follows. */
static gboolean
is_system_link(const char *path)
{
  struct stat link, parent;
  g_autofree char *dir = g_path_get_dirname(path);
  return lstat(path, &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid == 0 &&
         stat(dir, &parent) == 0 && parent.st_uid == 0 &&
         (parent.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* The system's links are followed (/dev/stdout, and as root one made in a
 * directory only root may change); a link of anyone else's met on the way
 * through them is still refused. */
static void
test_notebook_save_follows_the_system_links(void)
{
  const char *const sources[] = { "1", NULL };
  g_autoptr(cx_notebook) notebook = notebook_of(sources, NULL);
  g_autofree char *expected = cx_notebook_to_json(notebook);
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = cx_test_tmpdir();

  if (is_system_link("/dev/stdout")) {
    g_autofree char *captured = cx_test_write_file(dir, "stdout.ipynb", "old and longer text");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int file = open(captured, O_WRONLY | O_CLOEXEC);
    CU_ASSERT_TRUE_FATAL(saved >= 0 && file >= 0);
    dup2(file, STDOUT_FILENO);
    close(file);
    gboolean ok = cx_notebook_save(notebook, "/dev/stdout", &error);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_TRUE(ok);
    g_autofree char *written = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(captured, &written, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(written, expected);
  } else {
    fprintf(stderr, "\n  (/dev/stdout is not a root's link in a root's directory here) ");
  }

  if (geteuid() != 0) {
    fprintf(stderr, "\n  (the system's links are not checked: only root makes them) ");
    return;
  }
  /* SYSTEM (0755, root's) holds run -> real and via -> ../planted, where
   * planted is a link in the test's directory, which anyone may write. */
  g_autofree char *system = g_build_filename(dir, "system", NULL);
  g_autofree char *real = g_build_filename(system, "real", NULL);
  CU_ASSERT_EQUAL_FATAL(g_mkdir_with_parents(real, 0755), 0);
  CU_ASSERT_EQUAL(chmod(system, 0755), 0);
  g_autofree char *run = g_build_filename(system, "run", NULL);
  g_autofree char *via = g_build_filename(system, "via", NULL);
  g_autofree char *planted = g_build_filename(dir, "planted", NULL);
  CU_ASSERT_EQUAL(symlink("real", run), 0);
  CU_ASSERT_EQUAL(symlink("../planted", via), 0);
  CU_ASSERT_EQUAL(symlink("system/real", planted), 0);
  g_autofree char *through = g_build_filename(run, "out.ipynb", NULL);
  CU_ASSERT_TRUE(cx_notebook_save(notebook, through, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *landed = g_build_filename(real, "out.ipynb", NULL);
  g_autofree char *written = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(landed, &written, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(written, expected);
  g_autofree char *refused = g_build_filename(via, "other.ipynb", NULL);
  CU_ASSERT_FALSE(cx_notebook_save(notebook, refused, &error));
  CX_ASSERT_CONTAINS(error ? error->message : "", "is a symbolic link that is not the system's");
  g_autofree char *other = g_build_filename(real, "other.ipynb", NULL);
  CU_ASSERT_FALSE(g_file_test(other, G_FILE_TEST_EXISTS));
}

/* A cell that plants a symbolic link or a named pipe where `notebook run`
 * writes (-o, or the input itself with --inplace) gains nothing: the run
 * is refused with one sentence naming the file, the file outside is
 * unchanged, and nothing blocks. */
static void
test_notebook_command_writes_through_no_planted_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *outside = cx_test_write_file(dir, "outside.txt", "keep\n");
  g_autofree char *output = g_build_filename(dir, "out.ipynb", NULL);
  g_autofree char *fifo = g_build_filename(dir, "fifo.ipynb", NULL);
  g_autofree char *input = g_build_filename(dir, "in.ipynb", NULL);
  g_autofree char *plant = g_strdup_printf(
    "import os\nos.symlink('%s', '%s')\nos.mkfifo('%s')\nos.remove('%s')\nos.symlink('%s', '%s')",
    outside, output, fifo, input, outside, input);
  const char *const sources[] = { plant, NULL };
  g_autofree char *text = notebook_text(sources, NULL);
  static const char *const targets[] = { "-o out", "-o fifo", "--inplace" };
  for (gsize i = 0; i < G_N_ELEMENTS(targets); i++) {
    g_remove(output);
    g_remove(fifo);
    CU_ASSERT_TRUE(g_file_set_contents(input, text, -1, NULL));
    g_auto(cx_test_cli_run) r =
      i == 2 ? cx_test_cellexec(NULL, "notebook", "run", "-q", "--inplace", input, NULL)
             : cx_test_cellexec(NULL, "notebook", "run", "-q", input, "-o", i == 0 ? output : fifo,
                                NULL);
    CU_ASSERT_EQUAL(r.status, 2);
    g_autofree char *expected = g_strdup_printf(
      "cellexec: cannot write the notebook %s: it is %s", i == 0 ? output : i == 1 ? fifo : input,
      i == 1 ? "a named pipe, not a regular file"
             : "a symbolic link that is not the system's, so never followed");
    CX_ASSERT_CONTAINS(r.err, expected);
    g_autofree char *after = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(outside, &after, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(after, "keep\n");
  }
}

/* `cellexec ARGS...` with its standard error on a pseudo-terminal (raw:
 * no newline translation); what it wrote there, and its exit status in
 * *STATUS. */
static char *
cellexec_on_a_terminal(int *status, const char *first, ...)
{
  int terminal = posix_openpt(O_RDWR | O_NOCTTY);
  CU_ASSERT_TRUE_FATAL(terminal >= 0 && grantpt(terminal) == 0 && unlockpt(terminal) == 0);
  int side = open(ptsname(terminal), O_RDWR | O_NOCTTY);
  CU_ASSERT_TRUE_FATAL(side >= 0);
  struct termios mode;
  CU_ASSERT_EQUAL(tcgetattr(side, &mode), 0);
  cfmakeraw(&mode);
  CU_ASSERT_EQUAL(tcsetattr(side, TCSANOW, &mode), 0);
  va_list args;
  va_start(args, first);
  g_auto(GStrv) argv = cx_test_cellexec_argv_valist(first, args);
  va_end(args);
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_subprocess_launcher_take_stderr_fd(launcher, side);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process = g_subprocess_launcher_spawnv(launcher, (const char *const *)argv, &error);
  g_assert_no_error(error);
  g_subprocess_launcher_close(launcher); /* our copy of the terminal's side */
  /* Read as it comes, so that a full terminal buffer never stops it. */
  GString *text = g_string_new(NULL);
  for (;;) {
    char buffer[4096];
    ssize_t got = read(terminal, buffer, sizeof buffer);
    if (got > 0)
      g_string_append_len(text, buffer, got);
    else if (got < 0 && errno == EINTR)
      continue;
    else
      break; /* EIO: every writer has closed its side */
  }
  close(terminal);
  g_subprocess_wait(process, NULL, NULL);
  *status = g_subprocess_get_exit_status(process);
  return g_string_free(text, FALSE);
}

/* On a terminal, progress is one line redrawn in place: a bar, cell i/N,
 * the time so far (kept moving during a long cell) and the cell's first
 * line of code; at the end it becomes a one-line summary. */
static void
test_notebook_progress_bar_on_a_terminal(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  const char *const sources[] = { "x = 1  # first", "\n# wait a little\nimport time\n"
                                  "time.sleep(2.5)\nx", NULL };
  g_autofree char *text = notebook_text(sources, NULL);
  g_autofree char *input = cx_test_write_file(dir, "in.ipynb", text);
  g_autofree char *output = g_build_filename(dir, "out.ipynb", NULL);
  int status;
  g_autofree char *drawn = cellexec_on_a_terminal(&status, "notebook", "run", input, "-o", output, NULL);
  CU_ASSERT_EQUAL(status, 0);
  CX_ASSERT_CONTAINS(drawn, "\r\033[K[........................] cell 1/2  ");
  CX_ASSERT_CONTAINS(drawn, "s  x = 1  # first");
  CX_ASSERT_CONTAINS(drawn, "\r\033[K[############............] cell 2/2  ");
  CX_ASSERT_CONTAINS(drawn, "s  import time");
  /* Redrawn while the cell sleeps: the clock passed 2 s. */
  CX_ASSERT_CONTAINS(drawn, "] cell 2/2  2s  import time");
  CU_ASSERT_TRUE(g_str_has_suffix(drawn, " code cells run: 0 failed, 0 timed out or crashed, ") ||
                 strstr(drawn, "\r\033[K2 of 2 code cells run: 0 failed, 0 timed out or "
                               "crashed, ") != NULL);
  CU_ASSERT_TRUE(g_str_has_suffix(drawn, "s\r\n") || g_str_has_suffix(drawn, "s\n"));
  /* One line in all: the summary's. */
  const char *newline = strchr(drawn, '\n');
  CU_ASSERT_TRUE(newline != NULL && newline[1] == '\0');
  /* Drawn on the terminal, not into the cell's captured stderr. */
  g_autofree char *written = NULL;
  CU_ASSERT_TRUE(g_file_get_contents(output, &written, NULL, NULL));
  CU_ASSERT_PTR_NULL(written != NULL ? strstr(written, "cell 2/2") : NULL);
  /* --quiet: nothing at all. */
  g_autofree char *quiet = cellexec_on_a_terminal(&status, "notebook", "run", "-q", input, "-o", output, NULL);
  CU_ASSERT_EQUAL(status, 0);
  CU_ASSERT_STRING_EQUAL(quiet, "");
}

/* SIGINT (Ctrl-C) interrupts the running cell: the notebook is written
 * with what ran, the interrupted cell's KeyboardInterrupt in its outputs
 * and no later cell run, and the exit status is 130, as a shell reports
 * SIGINT. */
static void
test_notebook_ctrl_c_saves_what_ran_and_exits_130(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *started = g_build_filename(dir, "started", NULL);
  g_autofree char *slow = g_strdup_printf("import pathlib, time\npathlib.Path(%s).touch()\ntime.sleep(60)",
                                          "'started'");
  const char *const sources[] = { "print('first')", slow, "print('third')", NULL };
  g_autofree char *text = notebook_text(sources, NULL);
  g_autofree char *input = cx_test_write_file(dir, "in.ipynb", text);
  g_autofree char *output = g_build_filename(dir, "out.ipynb", NULL);
  const char *const backends[] = { "local", "subprocess" };
  for (gsize i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_remove(started);
    g_remove(output);
    g_autoptr(GSubprocess) host = cx_test_cellexec_start("notebook", "run", "-q", "-b", backends[i],
                                                         "--cwd", dir, input, "-o", output, NULL);
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (!g_file_test(started, G_FILE_TEST_EXISTS) && g_get_monotonic_time() < deadline)
      g_usleep(20 * 1000);
    g_subprocess_send_signal(host, SIGINT);
    g_auto(cx_test_cli_run) run = cx_test_cellexec_finish(host, NULL);
    CU_ASSERT_EQUAL(run.status, 130);
    g_autofree char *written = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(output, &written, NULL, NULL));
    CX_ASSERT_CONTAINS(written, "\"first\\n\"");
    CX_ASSERT_CONTAINS(written, "\"ename\": \"KeyboardInterrupt\"");
    CU_ASSERT_PTR_NULL(strstr(written, "\"third\\n\""));
  }
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_notebook_save_keeps_modes_and_follows_no_link",
      test_notebook_save_keeps_modes_and_follows_no_link },
    { "test_notebook_save_follows_the_system_links", test_notebook_save_follows_the_system_links },
    { "test_notebook_command_writes_through_no_planted_file",
      test_notebook_command_writes_through_no_planted_file },
    { "test_notebook_rejects_what_is_not_an_nbformat_4_notebook",
      test_notebook_rejects_what_is_not_an_nbformat_4_notebook },
    { "test_notebook_reads_sources_as_strings_or_lists", test_notebook_reads_sources_as_strings_or_lists },
    { "test_notebook_runs_cells_in_one_session", test_notebook_runs_cells_in_one_session },
    { "test_notebook_stops_at_the_first_failure_unless_allowed",
      test_notebook_stops_at_the_first_failure_unless_allowed },
    { "test_notebook_code_cell_with_nul_fails_without_running",
      test_notebook_code_cell_with_nul_fails_without_running },
    { "test_notebook_skips_cells_tagged_skip_execution", test_notebook_skips_cells_tagged_skip_execution },
    { "test_notebook_continues_in_a_fresh_session_after_a_crash",
      test_notebook_continues_in_a_fresh_session_after_a_crash },
    { "test_notebook_runs_in_the_callers_session", test_notebook_runs_in_the_callers_session },
    { "test_notebook_timeout_is_recorded_in_the_cell", test_notebook_timeout_is_recorded_in_the_cell },
    { "test_notebook_reports_a_replaced_session", test_notebook_reports_a_replaced_session },
    { "test_notebook_needs_a_backend_with_sessions", test_notebook_needs_a_backend_with_sessions },
    { "test_notebook_injects_typed_parameters_after_the_tagged_cell",
      test_notebook_injects_typed_parameters_after_the_tagged_cell },
    { "test_notebook_parameters_keep_their_values_exactly",
      test_notebook_parameters_keep_their_values_exactly },
    { "test_notebook_command_exit_statuses_and_files", test_notebook_command_exit_statuses_and_files },
    { "test_notebook_writes_nbformat_layout", test_notebook_writes_nbformat_layout },
    { "test_notebook_runs_python_notebooks_only", test_notebook_runs_python_notebooks_only },
    { "test_notebook_progress_bar_on_a_terminal", test_notebook_progress_bar_on_a_terminal },
    { "test_notebook_ctrl_c_saves_what_ran_and_exits_130", test_notebook_ctrl_c_saves_what_ran_and_exits_130 },
    { NULL, NULL }
  };
  cx_test_add_suite("notebook", tests);
}
