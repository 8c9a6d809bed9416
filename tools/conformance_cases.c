/* The conformance cases of the backend vtable: run_cell, sessions,
 * interrupt, query.
 *
 * Every result a case gets must be a well-formed bundle (conformance.c
 * checks that on each): this is the whole contract of a plugin that does
 * not run Python, such as examples/hello-plugin.  A plugin that runs
 * Python must also behave as the plugin.h contract says a Python backend
 * does: captured streams, rich outputs, errors with a traceback, the run
 * options honoured, a fresh namespace per stateless call. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/conformance.h"

static void
run_cell_returns_a_bundle(conformance_check *c)
{
  g_autoptr(cx_result) result = conformance_run_cell(c, NULL, "print(6 * 7)", NULL);
}

static void
odd_cells_return_bundles(conformance_check *c)
{
  g_autoptr(GString) long_cell = g_string_new("x = 1\n");
  for (int i = 0; i < 2000; i++)
    g_string_append(long_cell, "# a long cell, 64 kilobytes or so, to see it arrives whole....\n");
  const char *const cells[] = { "", "\n\n", "s = 'h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80'",
                                long_cell->str };
  for (gsize i = 0; i < G_N_ELEMENTS(cells); i++) {
    g_autoptr(cx_result) result = conformance_run_cell(c, NULL, cells[i], NULL);
    CONFORMANCE_RETURN_IF_DONE(c);
  }
}

static void
failed_cell_has_error_type_message_and_traceback(conformance_check *c)
{
  g_autoptr(cx_result) result =
    conformance_run_cell(c, NULL, "def conformance():\n    raise ValueError('conformance')\nconformance()", NULL);
  CONFORMANCE_RETURN_IF_DONE(c);
  if (!c->python)
    return; /* the shape of whatever it returned is all a non-Python plugin owes */
  conformance_expect_error_type(c, result, "ValueError");
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, strcmp(cx_result_get_error_message(result), "conformance") == 0,
                    "the error message is \"%s\", expected \"conformance\"",
                    cx_result_get_error_message(result));
  const char *traceback = cx_result_get_error_traceback(result);
  CONFORMANCE_CHECK(c, strstr(traceback, "ValueError") != NULL && strstr(traceback, "conformance") != NULL,
                    "the traceback does not name the exception: \"%s\"", traceback);
}

/* Run options: the cwd a new temporary directory (in *DIR), the variable
 * CELLEXEC_CONFORMANCE=honoured, a timeout of SECONDS.  NULL with the case
 * failed when no directory can be made. */
static cx_run_options *
run_options(conformance_check *c, const char **dir, double seconds)
{
  *dir = conformance_tmpdir(c);
  if (*dir == NULL)
    return NULL;
  cx_run_options *run = cx_run_options_new();
  cx_run_options_set_cwd(run, *dir);
  cx_run_options_add_env(run, "CELLEXEC_CONFORMANCE=honoured");
  cx_run_options_set_timeout(run, seconds);
  return run;
}

static void
run_options_are_accepted(conformance_check *c)
{
  const char *dir;
  g_autoptr(cx_run_options) run = run_options(c, &dir, 60);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) result = conformance_run_cell(c, NULL, "x = 1", run);
}

static void
stdout_and_stderr_are_captured(conformance_check *c)
{
  g_autoptr(cx_result) result =
    conformance_run_cell(c, NULL, "import sys\nprint('out')\nprint('err', file=sys.stderr)", NULL);
  conformance_expect_stdout(c, result, "out\n");
  CONFORMANCE_RETURN_IF_DONE(c);
  const char *err = cx_result_get_stderr(result, NULL);
  CONFORMANCE_CHECK(c, strcmp(err, "err\n") == 0, "stderr is \"%s\", expected \"err\\n\"", err);
}

/* The text/plain of RESULT's last rich output, or NULL. */
static const char *
last_plain(const cx_result *result)
{
  guint n = cx_result_get_n_outputs(result);
  JsonObject *bundle = n > 0 ? cx_result_get_output(result, n - 1) : NULL;
  return bundle != NULL ? json_object_get_string_member_with_default(bundle, "text/plain", NULL) : NULL;
}

static void
last_expression_is_a_rich_output(conformance_check *c)
{
  g_autoptr(cx_result) result = conformance_run_cell(c, NULL, "x = 20\nx * 2 + 2", NULL);
  conformance_expect_stdout(c, result, "");
  CONFORMANCE_RETURN_IF_DONE(c);
  const char *plain = last_plain(result);
  CONFORMANCE_CHECK(c, g_strcmp0(plain, "42") == 0,
                    "the last rich output's text/plain is %s%s%s, expected \"42\"",
                    plain != NULL ? "\"" : "", plain != NULL ? plain : "missing",
                    plain != NULL ? "\"" : "");
}

static void
display_gives_a_rich_output(conformance_check *c)
{
  g_autoptr(cx_result) result = conformance_run_cell(c, NULL,
    "try:\n    display\nexcept NameError:\n    from IPython.display import display\n"
    "class Shown:\n    def _repr_markdown_(self):\n        return '**shown**'\n"
    "    def __repr__(self):\n        return 'Shown()'\n"
    "display(Shown())\nNone", NULL);
  conformance_expect_stdout(c, result, "");
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, cx_result_get_n_outputs(result) == 1, "display() gave %u rich outputs, expected 1",
                    cx_result_get_n_outputs(result));
  JsonObject *bundle = cx_result_get_output(result, 0);
  const char *markdown = json_object_get_string_member_with_default(bundle, "text/markdown", NULL);
  CONFORMANCE_CHECK(c, g_strcmp0(markdown, "**shown**") == 0,
                    "the displayed object's text/markdown is %s, expected \"**shown**\"",
                    markdown != NULL ? markdown : "missing");
}

static void
cwd_is_honoured(conformance_check *c)
{
  const char *dir;
  g_autoptr(cx_run_options) run = run_options(c, &dir, 60);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) result = conformance_run_cell(c, NULL, "import os\nprint(os.path.realpath(os.getcwd()))", run);
  g_autofree char *real = realpath(dir, NULL);
  g_autofree char *expected = g_strconcat(real, "\n", NULL);
  conformance_expect_stdout(c, result, expected);
}

static void
env_is_honoured(conformance_check *c)
{
  const char *dir;
  g_autoptr(cx_run_options) run = run_options(c, &dir, 60);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) result =
    conformance_run_cell(c, NULL, "import os\nprint(os.environ.get('CELLEXEC_CONFORMANCE'))", run);
  conformance_expect_stdout(c, result, "honoured\n");
}

static void
timeout_is_honoured(conformance_check *c)
{
  const char *dir;
  g_autoptr(cx_run_options) run = run_options(c, &dir, 0.5);
  CONFORMANCE_RETURN_IF_DONE(c);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result =
    conformance_run_cell(c, NULL, "import time\nfor _ in range(600):\n    time.sleep(0.05)", run);
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  conformance_expect_error_type(c, result, CX_ERROR_TYPE_TIMEOUT);
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, seconds < 10, "a timeout of 0.5 s ended the cell only after %.1f s", seconds);
}

static void
each_call_gets_a_fresh_namespace(conformance_check *c)
{
  g_autoptr(cx_result) first = conformance_run_cell(c, NULL, "conformance_left_behind = 1", NULL);
  conformance_expect_stdout(c, first, "");
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) second =
    conformance_run_cell(c, NULL, "print('conformance_left_behind' in globals())", NULL);
  conformance_expect_stdout(c, second, "False\n");
}

/* The extra "execution_count" of RESULT, or -1 when it has none. */
static gint64
execution_count(const cx_result *result)
{
  JsonNode *count = cx_result_get_extra(result, "execution_count");
  return count != NULL && json_node_get_value_type(count) == G_TYPE_INT64 ? json_node_get_int(count) : -1;
}

static void
session_keeps_state_across_cells(conformance_check *c)
{
  g_autoptr(cx_session) session = conformance_open_session(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) first = conformance_run_cell(c, session, "kept = 41", NULL);
  g_autoptr(cx_result) second = conformance_run_cell(c, session, "print(kept + 1)", NULL);
  CONFORMANCE_RETURN_IF_DONE(c);
  /* A backend that numbers cells numbers them as a kernel does. */
  gint64 a = execution_count(first), b = execution_count(second);
  CONFORMANCE_CHECK(c, a < 0 || b < 0 || b > a,
                    "the session's second cell has execution_count %" G_GINT64_FORMAT
                    ", not more than the first's %" G_GINT64_FORMAT, b, a);
  if (c->python)
    conformance_expect_stdout(c, second, "42\n");
}

/* ABI 1.2's store_history, optional: a backend that numbers its cells and
 * honours it leaves a cell kept out of history unnumbered (it carries the
 * last number, as IPython's reply does), so the next cell is the next
 * number. */
static void
unstored_cells_take_no_number(conformance_check *c)
{
  g_autoptr(cx_session) session = conformance_open_session(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_run_options) unstored = cx_run_options_new();
  cx_run_options_set_store_history(unstored, FALSE);
  g_autoptr(cx_result) first = conformance_run_cell(c, session, "kept = 1", NULL);
  g_autoptr(cx_result) aside = conformance_run_cell(c, session, "aside = 2", unstored);
  g_autoptr(cx_result) next = conformance_run_cell(c, session, "kept = 3", NULL);
  CONFORMANCE_RETURN_IF_DONE(c);
  gint64 a = execution_count(first), b = execution_count(aside), n = execution_count(next);
  if (a < 0 || n < 0) {
    conformance_skip(c, "the plugin numbers no cells (no \"execution_count\" extra)");
    return;
  }
  if (n == a + 2) {
    conformance_skip(c, "the plugin numbers a cell run with store_history FALSE as any other "
                        "(optional, ABI 1.2)");
    return;
  }
  CONFORMANCE_CHECK(c, n == a + 1 && (b < 0 || b == a),
                    "cells numbered %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " (store_history "
                    "FALSE), %" G_GINT64_FORMAT ": expected %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                    " or none, %" G_GINT64_FORMAT, a, b, n, a, a, a + 1);
}

static void
sessions_are_isolated(conformance_check *c)
{
  g_autoptr(cx_session) a = conformance_open_session(c);
  g_autoptr(cx_session) b = conformance_open_session(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autoptr(cx_result) set = conformance_run_cell(c, a, "only_in_a = 1", NULL);
  g_autoptr(cx_result) seen = conformance_run_cell(c, b, "print('only_in_a' in globals())", NULL);
  CONFORMANCE_RETURN_IF_DONE(c);
  if (c->python)
    conformance_expect_stdout(c, seen, "False\n");
}

static void
interrupt_with_nothing_running_is_harmless(conformance_check *c)
{
  g_autoptr(GError) error = NULL;
  CONFORMANCE_CHECK(c, cx_backend_interrupt(c->backend, &error),
                    "interrupt with nothing running failed: %s", error->message);
  g_autoptr(cx_result) after = conformance_run_cell(c, NULL, "print('after')", NULL);
  if (c->python)
    conformance_expect_stdout(c, after, "after\n");
  CONFORMANCE_RETURN_IF_DONE(c);
  if (!c->methods->sessions)
    return;
  g_autoptr(cx_session) session = conformance_open_session(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, cx_session_interrupt(session, &error),
                    "interrupting an idle session failed: %s", error->message);
  g_autoptr(cx_result) in_session = conformance_run_cell(c, session, "print('after')", NULL);
  if (c->python)
    conformance_expect_stdout(c, in_session, "after\n");
}

/* A cell running on another thread, for the interrupt cases.  The main
 * thread leaves the check alone until it has joined this one. */
typedef struct {
  conformance_check *check;
  cx_session *session; /* NULL: stateless */
  const char *code;
  cx_result *result;
} running_cell;

static gpointer
run_in_thread(gpointer data)
{
  running_cell *cell = data;
  cell->result = conformance_run_cell(cell->check, cell->session, cell->code, NULL);
  return NULL;
}

/* Start a cell that writes a file once it runs, then loops; interrupt it
 * (in SESSION, or every stateless cell) once the file is there: it must
 * end with KeyboardInterrupt. */
static void
interrupt_a_running_cell(conformance_check *c, cx_session *session)
{
  const char *dir = conformance_tmpdir(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  g_autofree char *marker = g_build_filename(dir, "running", NULL);
  /* MARKER as a Python string literal: a temporary path has no quotes. */
  g_autofree char *code = g_strdup_printf(
    "import time\nopen('%s', 'w').close()\nfor _ in range(600):\n    time.sleep(0.05)", marker);
  running_cell cell = { c, session, code, NULL };
  GThread *thread = g_thread_new("conformance-cell", run_in_thread, &cell);
  gint64 start = g_get_monotonic_time();
  while (!g_file_test(marker, G_FILE_TEST_EXISTS) && g_get_monotonic_time() - start < 20 * G_USEC_PER_SEC)
    g_usleep(10000);
  /* At once: a backend whose host side learns of the cell a moment after
   * its code starts must not lose an interrupt sent in between. */
  g_autoptr(GError) error = NULL;
  gboolean delivered = g_file_test(marker, G_FILE_TEST_EXISTS) &&
                       (session != NULL ? cx_session_interrupt(session, &error)
                                        : cx_backend_interrupt(c->backend, &error));
  gint64 interrupted = g_get_monotonic_time();
  g_thread_join(thread); /* the cell ends by itself after 30 s at most */
  double seconds = (g_get_monotonic_time() - interrupted) / 1e6;
  g_autoptr(cx_result) result = cell.result;
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, g_file_test(marker, G_FILE_TEST_EXISTS), "the cell to interrupt did not start in 20 s");
  CONFORMANCE_CHECK(c, delivered, "interrupt failed: %s", error != NULL ? error->message : "no error");
  conformance_expect_error_type(c, result, "KeyboardInterrupt");
  CONFORMANCE_RETURN_IF_DONE(c);
  CONFORMANCE_CHECK(c, seconds < 10, "the cell ended %.1f s after the interrupt", seconds);
}

static void
interrupt_stops_a_running_cell(conformance_check *c)
{
  interrupt_a_running_cell(c, NULL);
}

static void
interrupt_stops_a_running_session_cell(conformance_check *c)
{
  g_autoptr(cx_session) session = conformance_open_session(c);
  CONFORMANCE_RETURN_IF_DONE(c);
  interrupt_a_running_cell(c, session);
}

static void
query_info_is_a_json_object(conformance_check *c)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) info = cx_backend_query(c->backend, "info", &error);
  CONFORMANCE_CHECK(c, info != NULL, "query(\"info\") failed: %s", error->message);
  g_autofree char *text = cx_json_to_string(info, FALSE);
  CONFORMANCE_CHECK(c, JSON_NODE_HOLDS_OBJECT(info), "query(\"info\") returned %s, not a JSON object", text);
}

static void
query_of_an_unknown_name_is_unsupported(conformance_check *c)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) answer = cx_backend_query(c->backend, "cellexec-conformance-no-such-query", &error);
  CONFORMANCE_CHECK(c, answer == NULL, "query of an unknown name returned a value instead of failing");
  CONFORMANCE_CHECK(c, g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED),
                    "query of an unknown name failed with code %d, expected CX_ERROR_UNSUPPORTED: %s",
                    error->code, error->message);
}

const conformance_case conformance_backend_cases[] = {
  { "run_cell_returns_a_bundle", CONFORMANCE_NEEDS_NOTHING, run_cell_returns_a_bundle },
  { "odd_cells_return_bundles", CONFORMANCE_NEEDS_NOTHING, odd_cells_return_bundles },
  { "failed_cell_has_error_type_message_and_traceback", CONFORMANCE_NEEDS_NOTHING,
    failed_cell_has_error_type_message_and_traceback },
  { "run_options_are_accepted", CONFORMANCE_NEEDS_NOTHING, run_options_are_accepted },
  { "stdout_and_stderr_are_captured", CONFORMANCE_NEEDS_PYTHON, stdout_and_stderr_are_captured },
  { "last_expression_is_a_rich_output", CONFORMANCE_NEEDS_PYTHON, last_expression_is_a_rich_output },
  { "display_gives_a_rich_output", CONFORMANCE_NEEDS_PYTHON, display_gives_a_rich_output },
  { "cwd_is_honoured", CONFORMANCE_NEEDS_PYTHON, cwd_is_honoured },
  { "env_is_honoured", CONFORMANCE_NEEDS_PYTHON, env_is_honoured },
  { "timeout_is_honoured", CONFORMANCE_NEEDS_PYTHON, timeout_is_honoured },
  { "each_call_gets_a_fresh_namespace", CONFORMANCE_NEEDS_PYTHON, each_call_gets_a_fresh_namespace },
  { "session_keeps_state_across_cells", CONFORMANCE_NEEDS_SESSIONS, session_keeps_state_across_cells },
  { "sessions_are_isolated", CONFORMANCE_NEEDS_SESSIONS, sessions_are_isolated },
  { "unstored_cells_take_no_number", CONFORMANCE_NEEDS_SESSIONS, unstored_cells_take_no_number },
  { "interrupt_with_nothing_running_is_harmless", CONFORMANCE_NEEDS_INTERRUPT,
    interrupt_with_nothing_running_is_harmless },
  { "interrupt_stops_a_running_cell", CONFORMANCE_NEEDS_INTERRUPT | CONFORMANCE_NEEDS_PYTHON,
    interrupt_stops_a_running_cell },
  { "interrupt_stops_a_running_session_cell",
    CONFORMANCE_NEEDS_INTERRUPT | CONFORMANCE_NEEDS_SESSIONS | CONFORMANCE_NEEDS_PYTHON,
    interrupt_stops_a_running_session_cell },
  { "query_info_is_a_json_object", CONFORMANCE_NEEDS_QUERY, query_info_is_a_json_object },
  { "query_of_an_unknown_name_is_unsupported", CONFORMANCE_NEEDS_QUERY,
    query_of_an_unknown_name_is_unsupported },
  { NULL, 0, NULL }
};
