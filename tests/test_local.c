/* Tests of the local backend (plugins/local + pyembed), through the public
 * API: the real plugin, loaded by the registry with dlopen. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cx_test.h"

/* ---- Helpers ---------------------------------------------------------------- */

/* The local backend with OPTION, VALUE pairs (ending with NULL) set. */
#define open_local_with(...) cx_test_open_backend("local", __VA_ARGS__)

static cx_backend *
open_local(void)
{
  return cx_test_open_backend("local", NULL, NULL);
}

/* A session of a local backend of its own (the session keeps it alive). */
static cx_session *
open_local_session(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  return session;
}

/* Run CODE on a new local backend; the result must exist. */
static cx_result *
run_with(const char *code, const cx_run_options *run)
{
  g_autoptr(cx_backend) backend = open_local();
  return cx_test_run_cell(backend, code, run);
}

static cx_result *
run(const char *code)
{
  return run_with(code, NULL);
}

/* The text of MIME in output INDEX, or NULL. */
static const char *
output_text(const cx_result *result, guint index, const char *mime)
{
  JsonObject *bundle = cx_result_get_output(result, index);
  if (bundle == NULL || !json_object_has_member(bundle, mime))
    return NULL;
  return json_object_get_string_member(bundle, mime);
}

static void
assert_output_text(const cx_result *result, guint index, const char *mime, const char *expected)
{
  const char *text = output_text(result, index, mime);
  if (g_strcmp0(text, expected) != 0)
    fprintf(stderr, "\n  output %u %s: expected \"%s\", got \"%s\"\n", index, mime, expected,
            text ? text : "(none)");
  CU_ASSERT_STRING_EQUAL(text ? text : "(none)", expected);
}

/* ---- The last expression ------------------------------------------------------- */

static void
test_local_prints_and_displays_last_value(void)
{
  g_autoptr(cx_result) result = run("print('hello')\n1 + 1");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "hello\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 1);
  assert_output_text(result, 0, "text/plain", "2");
  CU_ASSERT_FALSE(cx_result_has_error(result));
}

static void
test_local_value_follows_statements(void)
{
  g_autoptr(cx_result) result = run("a = 3\nif a:\n    a += 1\na * 2  # comment\n");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 1);
  assert_output_text(result, 0, "text/plain", "8");
}

static void
test_local_none_value_is_not_displayed(void)
{
  g_autoptr(cx_result) result = run("x = None\nx");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
  g_autoptr(cx_result) printed = run("print('a')");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(printed), 0);
}

static void
test_local_semicolon_suppresses_value(void)
{
  g_autoptr(cx_result) result = run("1 + 1;");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
  g_autoptr(cx_result) commented = run("print('side effect');  # the value is not shown\n");
  CX_ASSERT_STDOUT(commented, "side effect\n");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(commented), 0);
  g_autoptr(cx_result) in_string = run("'a;'");
  assert_output_text(in_string, 0, "text/plain", "'a;'");
}

static void
test_local_last_statement_not_expression(void)
{
  g_autoptr(cx_result) result = run("x = 5");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
  g_autoptr(cx_result) empty = run("# nothing but a comment\n");
  CX_ASSERT_CELL_OK(empty);
  g_autoptr(cx_result) nothing = run("");
  CX_ASSERT_CELL_OK(nothing);
}

/* ---- Output ------------------------------------------------------------------------ */

static void
test_local_captures_stderr_in_order(void)
{
  g_autoptr(cx_result) result =
    run("import sys\nprint('one')\nprint('err1', file=sys.stderr)\nsys.stdout.write('two\\n')\n"
        "sys.stderr.write('err2\\n')\nimport warnings\nwarnings.warn('careful')");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "one\ntwo\n");
  const char *err = cx_result_get_stderr(result, NULL);
  CU_ASSERT_TRUE(g_str_has_prefix(err, "err1\nerr2\n"));
  CX_ASSERT_CONTAINS(err, "UserWarning: careful");
}

static void
test_local_captures_megabytes_of_output(void)
{
  g_autoptr(cx_result) result =
    run("for i in range(200000):\n    print('%09d' % i)\nprint('x' * 3000000, end='')");
  CX_ASSERT_CELL_OK(result);
  gsize length;
  const char *out = cx_result_get_stdout(result, &length);
  CU_ASSERT_EQUAL(length, 200000 * 10 + 3000000);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "000000000\n000000001\n"));
  CU_ASSERT_TRUE(strncmp(out + 199999 * 10, "000199999\nxxx", 13) == 0);
}

static void
test_local_keeps_bytes_written_to_buffer(void)
{
  g_autoptr(cx_result) result =
    run("import sys\nsys.stdout.buffer.write(b'raw\\xff\\n')\nprint('\\u00e9')");
  CX_ASSERT_CELL_OK(result);
  gsize length;
  const char *out = cx_result_get_stdout(result, &length);
  CU_ASSERT_EQUAL(length, 5 + 3);
  CU_ASSERT_TRUE(memcmp(out, "raw\xff\n\xc3\xa9\n", 8) == 0);
}

static void
test_local_captures_output_of_threads_the_cell_starts(void)
{
  g_autoptr(cx_result) result =
    run("import threading\nt = threading.Thread(target=print, args=('from a thread',))\n"
        "t.start(); t.join()");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "from a thread\n");
}

static void
test_local_restores_streams_after_cell(void)
{
  g_autoptr(cx_result) result = run("import sys\nsys.stdout is sys.__stdout__");
  assert_output_text(result, 0, "text/plain", "False");
  /* A cell that replaces sys.stdout does not break the next one. */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) replaced =
    cx_session_run_cell(session, "import io, sys\nsys.stdout = io.StringIO()", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) next = cx_session_run_cell(session, "print('seen')", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_STDOUT(next, "seen\n");
}

/* ---- Rich display ----------------------------------------------------------------- */

static void
test_local_displays_rich_reprs(void)
{
  g_autoptr(cx_result) result =
    run("class Rich:\n"
        "    def _repr_html_(self): return '<b>rich</b>'\n"
        "    def _repr_markdown_(self): return '**rich**'\n"
        "    def _repr_latex_(self): return '$r$'\n"
        "    def _repr_svg_(self): return '<svg/>'\n"
        "    def __repr__(self): return 'Rich()'\n"
        "Rich()");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
  assert_output_text(result, 0, "text/plain", "Rich()");
  assert_output_text(result, 0, "text/html", "<b>rich</b>");
  assert_output_text(result, 0, "text/markdown", "**rich**");
  assert_output_text(result, 0, "text/latex", "$r$");
  assert_output_text(result, 0, "image/svg+xml", "<svg/>");
}

static void
test_local_encodes_binary_reprs_as_base64(void)
{
  g_autoptr(cx_result) result =
    run("class Picture:\n"
        "    def _repr_png_(self): return b'\\x89PNG'\n"
        "    def _repr_jpeg_(self): return (b'\\xff\\xd8', {'width': 1})\n"
        "Picture()");
  CX_ASSERT_CELL_OK(result);
  assert_output_text(result, 0, "image/png", "iVBORw==\n"); /* as ipykernel writes it */
  assert_output_text(result, 0, "image/jpeg", "/9g=\n");
  CU_ASSERT_PTR_NOT_NULL(output_text(result, 0, "text/plain"));
}

static void
test_local_honours_repr_json_and_mimebundle(void)
{
  g_autoptr(cx_result) result =
    run("class Data:\n"
        "    def _repr_json_(self): return {'a': [1, 2.5, None, True]}\n"
        "class Bundle:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/plain': 'plain', 'application/vnd.custom+json': {'k': 'v'}}\n"
        "    def _repr_html_(self): return '<i>html</i>'\n"
        "display(Data())\nBundle()");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 2);
  JsonObject *data = json_object_get_object_member(cx_result_get_output(result, 0),
                                                   "application/json");
  CU_ASSERT_PTR_NOT_NULL_FATAL(data);
  JsonArray *array = json_object_get_array_member(data, "a");
  CU_ASSERT_EQUAL(json_array_get_length(array), 4);
  CU_ASSERT_EQUAL(json_array_get_int_element(array, 0), 1);
  CU_ASSERT_DOUBLE_EQUAL(json_array_get_double_element(array, 1), 2.5, 1e-9);
  assert_output_text(result, 1, "text/plain", "plain");
  assert_output_text(result, 1, "text/html", "<i>html</i>");
  JsonObject *custom = json_object_get_object_member(cx_result_get_output(result, 1),
                                                     "application/vnd.custom+json");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(custom, "k"), "v");
}

static void
test_local_display_appends_outputs_in_order(void)
{
  g_autoptr(cx_result) result = run("display(1)\ndisplay('a', [2])\nprint('p')\n3");
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 4);
  assert_output_text(result, 0, "text/plain", "1");
  assert_output_text(result, 1, "text/plain", "'a'");
  assert_output_text(result, 2, "text/plain", "[2]");
  assert_output_text(result, 3, "text/plain", "3");
  CX_ASSERT_STDOUT(result, "p\n");
}

static void
test_local_allowed_mime_types_filter_bundles(void)
{
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_add_allowed_mime_type(options, "text/html");
  g_autoptr(cx_result) result =
    run_with("class H:\n    def _repr_html_(self): return '<p/>'\ndisplay(H())\n42", options);
  CX_ASSERT_CELL_OK(result);
  /* 42 has text/plain only, which is filtered out: no bundle at all. */
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
  assert_output_text(result, 0, "text/html", "<p/>");
  CU_ASSERT_PTR_NULL(output_text(result, 0, "text/plain"));
}

/* As ipykernel (tests/ipython's value_repr_raises has its outputs): the
 * formatter's traceback is an error output, the value is not shown, and
 * the cell succeeds. */
static void
test_local_raising_repr_is_shown_not_a_failure(void)
{
  g_autoptr(cx_result) result =
    run("class Bad:\n    def __repr__(self):\n        raise ValueError('no repr')\n"
        "print('before')\nBad()");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "before\n");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(outputs), 2);
  JsonObject *shown = json_array_get_object_element(outputs, 1);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(shown, "output_type"), "error");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(shown, "ename"), "ValueError");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(shown, "evalue"), "no repr");
}

static void
test_local_non_json_repr_json_is_cell_error(void)
{
  g_autoptr(cx_result) result =
    run("class J:\n    def _repr_json_(self): return {'s': {1, 2}}\nJ()");
  CX_ASSERT_ERROR_TYPE(result, "TypeError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "set");
}

/* ---- Errors ------------------------------------------------------------------------- */

static void
test_local_exception_becomes_error(void)
{
  g_autoptr(cx_result) result = run("print('partial')\nx = 1\n1 / 0");
  CX_ASSERT_ERROR_TYPE(result, "ZeroDivisionError");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), "division by zero");
  const char *traceback = cx_result_get_error_traceback(result);
  CU_ASSERT_TRUE(g_str_has_prefix(traceback, "Traceback (most recent call last):\n"));
  CX_ASSERT_CONTAINS(traceback, "File \"<cell>\", line 3, in <module>\n    1 / 0\n");
  CU_ASSERT_TRUE(g_str_has_suffix(traceback, "ZeroDivisionError: division by zero\n"));
  CU_ASSERT_PTR_NULL(strstr(traceback, "cellexec-helper"));
  CX_ASSERT_STDOUT(result, "partial\n");
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(result), 0);
}

static void
test_local_traceback_shows_cell_functions(void)
{
  g_autoptr(cx_result) result =
    run("def inner():\n    raise KeyError('k')\n\ndef outer():\n    inner()\n\nouter()");
  CX_ASSERT_ERROR_TYPE(result, "KeyError");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), "'k'");
  const char *traceback = cx_result_get_error_traceback(result);
  CX_ASSERT_CONTAINS(traceback, "line 7, in <module>\n    outer()\n");
  CX_ASSERT_CONTAINS(traceback, "line 5, in outer\n    inner()\n");
  CX_ASSERT_CONTAINS(traceback, "line 2, in inner\n    raise KeyError('k')\n");
}

static void
test_local_syntax_error_reports_line(void)
{
  g_autoptr(cx_result) result = run("x = 1\ny = x +\nprint(y)");
  CX_ASSERT_ERROR_TYPE(result, "SyntaxError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "line 2");
  const char *traceback = cx_result_get_error_traceback(result);
  CX_ASSERT_CONTAINS(traceback, "File \"<cell>\", line 2\n");
  CX_ASSERT_CONTAINS(traceback, "y = x +");
  CU_ASSERT_PTR_NULL(strstr(traceback, "cellexec-helper"));

  g_autoptr(cx_result) indented = run("if True:\nprint('no indent')");
  CX_ASSERT_ERROR_TYPE(indented, "IndentationError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(indented), "line 2");
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(indented), "print('no indent')");
}

static void
test_local_invalid_utf8_is_syntax_error(void)
{
  g_autoptr(cx_result) result = run("x = '\xff'");
  CX_ASSERT_ERROR_TYPE(result, "SyntaxError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "utf-8");
}

static void
test_local_exits_end_the_cell_not_the_process(void)
{
  static const struct { const char *code, *message; } exits[] = {
    { "import sys\nsys.exit(3)", "3" },
    { "exit()", "None" },
    { "quit(5)", "5" },
    { "raise SystemExit('bye')", "bye" },
    { "import os\nos._exit(4)", "4" },
    { "from os import _exit\n_exit(0)", "0" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(exits); i++) {
    g_autoptr(cx_result) result = run(exits[i].code);
    CX_ASSERT_ERROR_TYPE(result, "SystemExit");
    CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(result), exits[i].message);
    /* The runtime's own frames (the os._exit guard) are left out. */
    CU_ASSERT_PTR_NULL(strstr(cx_result_get_error_traceback(result), "cellexec-helper"));
  }
  /* Still alive, and stdin was not closed by exit(). */
  g_autoptr(cx_result) after = run("import sys\nsys.stdin is None or not sys.stdin.closed");
  CX_ASSERT_CELL_OK(after);
  assert_output_text(after, 0, "text/plain", "True");
}

static void
test_local_cells_never_read_the_hosts_stdin(void)
{
  /* A pipe with a line waiting stands in for the host's stdin. */
  int ends[2];
  CU_ASSERT_EQUAL_FATAL(pipe(ends), 0);
  CU_ASSERT_EQUAL(write(ends[1], "host line\n", 10), 10);
  int saved = dup(STDIN_FILENO);
  dup2(ends[0], STDIN_FILENO);
  static const char *const reads[] = {
    "input()", "input('prompt? ')", "import sys\nsys.stdin.readline()",
    "import sys\nsys.stdin.read()", "import getpass\ngetpass.getpass()",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(reads); i++) {
    g_autoptr(cx_result) result = run(reads[i]);
    CX_ASSERT_ERROR_TYPE(result, "StdinNotImplementedError");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "does not support input requests");
    CX_ASSERT_STDOUT(result, ""); /* not even the prompt */
  }
  dup2(saved, STDIN_FILENO);
  close(saved);
  char line[16] = { 0 };
  CU_ASSERT_EQUAL(read(ends[0], line, sizeof line - 1), 10); /* still all there */
  CU_ASSERT_STRING_EQUAL(line, "host line\n");
  close(ends[0]);
  close(ends[1]);
}

static void
test_local_traceback_carets_line_up_as_in_python(void)
{
  g_autoptr(cx_result) result = run("x = 0\n1/x");
  CX_ASSERT_ERROR_TYPE(result, "ZeroDivisionError");
  /* As python3 prints it: the source line and its carets, both indented by
   * four spaces. */
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(result), "\n    1/x\n    ~^~\n");
}

static void
test_local_keyboard_interrupt_is_cell_error(void)
{
  g_autoptr(cx_result) result = run("raise KeyboardInterrupt");
  CX_ASSERT_ERROR_TYPE(result, "KeyboardInterrupt");
  g_autoptr(cx_result) after = run("1");
  CX_ASSERT_CELL_OK(after);
}

/* ---- Async ---------------------------------------------------------------------------- */

static void
test_local_top_level_await(void)
{
  g_autoptr(cx_result) result =
    run("import asyncio\nasync def answer():\n    await asyncio.sleep(0.01)\n    return 42\n"
        "print(await answer())\nawait answer()");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "42\n");
  assert_output_text(result, 0, "text/plain", "42");
}

static void
test_local_session_keeps_event_loop(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) first =
    cx_session_run_cell(session, "import asyncio\nawait asyncio.sleep(0)\n"
                        "future = asyncio.get_running_loop().create_future()\n"
                        "asyncio.get_running_loop().call_soon(future.set_result, 7);", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(first);
  g_autoptr(cx_result) second = cx_session_run_cell(session, "await future", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(second);
  assert_output_text(second, 0, "text/plain", "7");
}

/* ---- State ----------------------------------------------------------------------------- */

static void
test_local_stateless_cells_do_not_share_names(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) first = cx_backend_run_cell(backend, "value = 41", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) second = cx_backend_run_cell(backend, "value", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_ERROR_TYPE(second, "NameError");
  g_autoptr(cx_result) name = cx_backend_run_cell(backend, "__name__", NULL, &error);
  assert_output_text(name, 0, "text/plain", "'__main__'");
}

static void
test_local_session_keeps_namespace(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) first = cx_session_run_cell(session, "value = 41", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) failing = cx_session_run_cell(session, "undefined_name", NULL, &error);
  CX_ASSERT_ERROR_TYPE(failing, "NameError");
  g_autoptr(cx_result) second =
    cx_session_run_cell(session, "value += 1; print(value)", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(second);
  CX_ASSERT_STDOUT(second, "42\n");
  /* Another session starts empty. */
  g_autoptr(cx_session) other = cx_session_open(backend, &error);
  g_autoptr(cx_result) unseen = cx_session_run_cell(other, "value", NULL, &error);
  CX_ASSERT_ERROR_TYPE(unseen, "NameError");
}

static void
test_local_same_cell_twice_runs_twice(void)
{
  /* The compile cache must not cache effects. */
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  const char *code = "n = globals().get('n', 0) + 1\nn";
  g_autoptr(cx_result) first = cx_session_run_cell(session, code, NULL, &error);
  g_autoptr(cx_result) second = cx_session_run_cell(session, code, NULL, &error);
  assert_output_text(first, 0, "text/plain", "1");
  assert_output_text(second, 0, "text/plain", "2");
}

/* ---- cwd and env ------------------------------------------------------------------------- */

static void
test_local_cwd_applies_and_is_restored(void)
{
  g_autofree char *before = g_get_current_dir();
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *canonical = realpath(dir, NULL);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_cwd(options, dir);

  g_autoptr(cx_result) result = run_with("import os\nprint(os.getcwd())", options);
  CX_ASSERT_CELL_OK(result);
  g_autofree char *expected = g_strdup_printf("%s\n", canonical);
  CX_ASSERT_STDOUT(result, expected);
  g_autofree char *after = g_get_current_dir();
  CU_ASSERT_STRING_EQUAL(after, before);

  g_autoptr(cx_result) failed = run_with("import os\nos.chdir('/')\nraise RuntimeError", options);
  CX_ASSERT_ERROR_TYPE(failed, "RuntimeError");
  g_autofree char *after_failure = g_get_current_dir();
  CU_ASSERT_STRING_EQUAL(after_failure, before);
}

static void
test_local_missing_cwd_is_backend_error(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_cwd(options, "/no/such/directory");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "1", options, &error);
  CU_ASSERT_PTR_NULL(result);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "/no/such/directory");
  CX_ASSERT_CONTAINS(error->message, "cwd");
}

static void
test_local_env_applies_and_is_restored(void)
{
  g_setenv("CX_TEST_KEPT", "original", TRUE);
  g_unsetenv("CX_TEST_ADDED");
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_add_env(options, "CX_TEST_KEPT=changed");
  cx_run_options_add_env(options, "CX_TEST_ADDED=/tmp/data");

  const char *python_view =
    "import os\nprint(os.environ.get('CX_TEST_KEPT'), os.environ.get('CX_TEST_ADDED'))";
  g_autoptr(cx_result) earlier = run(python_view);
  g_autoptr(cx_result) result =
    run_with("import os, subprocess\n"
             "print(os.environ['CX_TEST_KEPT'], os.environ['CX_TEST_ADDED'])\n"
             "print(subprocess.run(['sh', '-c', 'echo $CX_TEST_ADDED'], capture_output=True,"
             " text=True).stdout, end='')\n"
             "raise RuntimeError('restored anyway')",
             options);
  CX_ASSERT_ERROR_TYPE(result, "RuntimeError");
  CX_ASSERT_STDOUT(result, "changed /tmp/data\n/tmp/data\n");
  CU_ASSERT_STRING_EQUAL(g_getenv("CX_TEST_KEPT"), "original");
  CU_ASSERT_PTR_NULL(g_getenv("CX_TEST_ADDED"));
  g_autoptr(cx_result) later = run(python_view);
  /* Python's view (os.environ, a copy taken when Python started) is
   * restored to what it was, too. */
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(later, NULL), cx_result_get_stdout(earlier, NULL));
}

static void
test_local_backend_options_are_defaults(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *canonical = realpath(dir, NULL);
  g_autoptr(cx_backend) backend =
    open_local_with("cwd", dir, "env", "DATASET_ROOT=/tmp/data", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_backend_run_cell(
    backend, "import os; print(os.getcwd()); print(os.environ['DATASET_ROOT'])", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(result);
  g_autofree char *expected = g_strdup_printf("%s\n/tmp/data\n", canonical);
  CX_ASSERT_STDOUT(result, expected);
}

/* ---- Timeouts and interrupts ------------------------------------------------------------------ */

static void
test_local_timeout_raises_timeout_error(void)
{
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 0.3);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) busy = run_with("print('started')\nwhile True:\n    pass", options);
  CX_ASSERT_ERROR_TYPE(busy, "TimeoutError");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(busy), "cell exceeded its 0.3 s timeout");
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(busy), "line 2");
  CX_ASSERT_STDOUT(busy, "started\n");

  g_autoptr(cx_result) sleeping = run_with("import time\ntime.sleep(30)", options);
  CX_ASSERT_ERROR_TYPE(sleeping, "TimeoutError");
  g_autoptr(cx_result) awaiting = run_with("import asyncio\nawait asyncio.sleep(30)", options);
  CX_ASSERT_ERROR_TYPE(awaiting, "TimeoutError");
  /* Far less than the 30 s the cells asked for, with room for a slow machine. */
  CU_ASSERT_TRUE(g_get_monotonic_time() - start < 15 * G_USEC_PER_SEC);

  /* A cell that ends in time is not disturbed, and neither is the next one. */
  g_autoptr(cx_result) quick = run_with("import time\ntime.sleep(0.01)\n'done'", options);
  CX_ASSERT_CELL_OK(quick);
  g_usleep(400000);
  g_autoptr(cx_result) after = run("sum(range(100000))");
  CX_ASSERT_CELL_OK(after);
}

/* A trace or profile function a cell leaves set (pdb, coverage, cProfile)
 * traces the session's later cells, as in a kernel, but never cellexec's
 * own code after the cell, never another session or a stateless cell, and
 * it cannot keep a timeout from stopping a cell. */
/* A cell's source is in linecache while its code lives, as a kernel keeps
 * it: a function from a cell long gone from the compile cache still shows
 * its lines (plain traceback, inspect.getsource), whatever cells of equal
 * code came since; the entries of cells whose code is gone go too, so
 * distinct stateless cells leave nothing behind. */
static void
test_local_cells_are_in_linecache_while_their_code_lives(void)
{
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) defined = cx_test_run_session_cell(session,
    "def f():\n    return 1 / 0", NULL);
  CX_ASSERT_CELL_OK(defined);
  g_autoptr(cx_backend) backend = open_local();
  /* The same code but for a comment: code objects that compare equal,
   * which must not take the first cell's lines with them. */
  g_autoptr(cx_result) twin = cx_test_run_cell(backend, "def f():\n    return 1 / 0  # twin", NULL);
  CX_ASSERT_CELL_OK(twin);
  for (int i = 0; i < 400; i++) { /* more than the compile cache holds */
    g_autofree char *code = g_strdup_printf("%d + 1", i);
    g_autoptr(cx_result) plain = cx_test_run_cell(backend, code, NULL);
    CX_ASSERT_CELL_OK(plain);
  }
  g_autoptr(cx_result) failed = cx_test_run_session_cell(session, "f()", NULL);
  CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(failed),
                     "  File \"<cell>\", line 2, in f\n    return 1 / 0\n");
  g_autoptr(cx_result) source = cx_test_run_session_cell(session,
    "import inspect, linecache\n"
    "cells = [name for name in list(linecache.cache) if name.startswith('<cell-')]\n"
    "print(inspect.getsource(f), end='')\n"
    "len(cells) < 300", NULL);
  CX_ASSERT_CELL_OK(source);
  CX_ASSERT_STDOUT(source, "def f():\n    return 1 / 0\n");
  assert_output_text(source, 0, "text/plain", "True");

  /* A cell that breaks linecache breaks tracebacks, not later cells. */
  g_autoptr(cx_result) broken = cx_test_run_session_cell(session,
    "import linecache\nsaved, linecache.cache = linecache.cache, None", NULL);
  CX_ASSERT_CELL_OK(broken);
  g_autoptr(cx_result) still = cx_test_run_session_cell(session, "def h():\n    return 2\nh()", NULL);
  CX_ASSERT_CELL_OK(still);
  assert_output_text(still, 0, "text/plain", "2");
  g_autoptr(cx_result) mended = cx_test_run_session_cell(session, "linecache.cache = saved", NULL);
  CX_ASSERT_CELL_OK(mended);
}

static void
test_local_trace_functions_stay_with_their_session(void)
{
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) set = cx_test_run_session_cell(session,
    "import sys\ncalls = []\nsys.setprofile(lambda frame, event, arg: calls.append(event))",
    NULL);
  CX_ASSERT_CELL_OK(set);
  /* The error is described and the session goes on. */
  g_autoptr(cx_result) failing = cx_test_run_session_cell(session, "1/0", NULL);
  CX_ASSERT_ERROR_TYPE(failing, "ZeroDivisionError");
  g_autoptr(cx_result) traced = cx_test_run_session_cell(session,
    "len(calls) > 0, sys.getprofile() is not None", NULL);
  CX_ASSERT_CELL_OK(traced);
  assert_output_text(traced, 0, "text/plain", "(True, True)");

  /* The same thread, another cell: nothing of the session's. */
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(cx_result) other = cx_test_run_cell(backend,
    "import sys\n(sys.gettrace(), sys.getprofile())", NULL);
  assert_output_text(other, 0, "text/plain", "(None, None)");
  g_autoptr(cx_result) leaves = cx_test_run_cell(backend,
    "import sys\nsys.settrace(lambda *args: None)", NULL);
  CX_ASSERT_CELL_OK(leaves);
  g_autoptr(cx_result) next = cx_test_run_cell(backend, "import sys\nsys.gettrace()", NULL);
  CX_ASSERT_CELL_OK(next);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(next), 0);

  /* Traced, a busy cell still ends at its deadline. */
  g_autoptr(cx_result) trace = cx_test_run_session_cell(session,
    "sys.setprofile(None)\nsys.settrace(lambda *args: None)", NULL);
  CX_ASSERT_CELL_OK(trace);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 0.3);
  g_autoptr(cx_result) busy = cx_test_run_session_cell(session, "while True:\n    pass", options);
  CX_ASSERT_ERROR_TYPE(busy, "TimeoutError");
  g_autoptr(cx_result) after = cx_test_run_session_cell(session, "print('after')", NULL);
  CX_ASSERT_STDOUT(after, "after\n");
}

/* use_subprocess is served by the subprocess backend (tests/test_subprocess.c
 * covers it further): a hard timeout, the host's process untouched. */
static void
test_local_use_subprocess_uses_the_subprocess_backend(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_use_subprocess(options, TRUE);
  cx_run_options_set_timeout(options, 2.0);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result =
    cx_backend_run_cell(backend, "import time; time.sleep(5)", options, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
}

typedef struct {
  cx_backend *backend;
  cx_session *session;
  const char *code;
  cx_result *result;
} cell_job;

static gpointer
run_job(gpointer data)
{
  cell_job *job = data;
  g_autoptr(GError) error = NULL;
  job->result = job->session != NULL
                  ? cx_session_run_cell(job->session, job->code, NULL, &error)
                  : cx_backend_run_cell(job->backend, job->code, NULL, &error);
  g_assert_no_error(error);
  return NULL;
}

/* Runs LOOP (a cell that never ends by itself) in a thread, interrupts it
 * once it runs, and checks it ended with KeyboardInterrupt. */
static void
interrupt_running_cell(gboolean in_session, const char *loop)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = in_session ? cx_session_open(backend, &error) : NULL;
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "running", NULL);
  g_autofree char *cell = g_strdup_printf("open('%s', 'w').close()\n%s", marker, loop);
  cell_job job = { backend, session, cell, NULL };

  GThread *thread = g_thread_new("cell", run_job, &job);
  CU_ASSERT_TRUE(cx_test_wait_for_file(marker));
  gboolean delivered = in_session ? cx_session_interrupt(session, &error)
                                  : cx_backend_interrupt(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(delivered);
  g_thread_join(thread);

  CU_ASSERT_PTR_NOT_NULL_FATAL(job.result);
  CX_ASSERT_ERROR_TYPE(job.result, "KeyboardInterrupt");
  cx_result_free(job.result);
  if (session != NULL) {
    /* The session survives its interrupted cell. */
    g_autoptr(cx_result) after = cx_session_run_cell(session, "'alive'", NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    assert_output_text(after, 0, "text/plain", "'alive'");
  }
}

static void
test_local_interrupt_stops_stateless_cell(void)
{
  interrupt_running_cell(FALSE, "while True:\n    pass");
}

static void
test_local_interrupt_stops_session_cell(void)
{
  interrupt_running_cell(TRUE, "import time\ntime.sleep(60)");
}

static void
test_local_interrupt_spares_other_sessions(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) busy = cx_session_open(backend, &error);
  g_autoptr(cx_session) idle = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "running", NULL);
  g_autofree char *cell =
    g_strdup_printf("import time\nopen('%s', 'w').close()\ntime.sleep(0.5)\n'finished'", marker);
  cell_job job = { backend, busy, cell, NULL };
  GThread *thread = g_thread_new("cell", run_job, &job);
  CU_ASSERT_TRUE(cx_test_wait_for_file(marker));
  CU_ASSERT_TRUE(cx_session_interrupt(idle, &error));
  CU_ASSERT_TRUE(cx_backend_interrupt(backend, &error)); /* stateless cells only */
  g_thread_join(thread);
  CX_ASSERT_CELL_OK(job.result);
  assert_output_text(job.result, 0, "text/plain", "'finished'");
  cx_result_free(job.result);
}

static void
test_local_interrupt_when_idle_is_harmless(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_backend_interrupt(backend, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "sum(range(10000))", NULL, &error);
  CX_ASSERT_CELL_OK(result);
}

/* ---- Threads ------------------------------------------------------------------------------------ */

typedef struct {
  cx_backend *backend;
  int index;
  gboolean ok;
} session_worker;

static gpointer
run_session_worker(gpointer data)
{
  session_worker *worker = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(worker->backend, &error);
  worker->ok = session != NULL;
  g_autofree char *init = g_strdup_printf("me = %d\ncount = 0", worker->index);
  g_autoptr(cx_result) first = worker->ok ? cx_session_run_cell(session, init, NULL, &error) : NULL;
  for (int i = 1; worker->ok && i <= 200; i++) {
    g_autoptr(cx_result) result =
      cx_session_run_cell(session, "count += 1\nprint(me, count)\nsum(range(200))", NULL, &error);
    g_autofree char *expected = g_strdup_printf("%d %d\n", worker->index, i);
    worker->ok = result != NULL && cx_result_get_success(result) &&
                 strcmp(cx_result_get_stdout(result, NULL), expected) == 0 &&
                 cx_result_get_n_outputs(result) == 1;
  }
  return NULL;
}

static void
test_local_sessions_on_several_threads(void)
{
  g_autoptr(cx_backend) backend = open_local();
  session_worker workers[4];
  GThread *threads[4];
  for (int i = 0; i < 4; i++) {
    workers[i] = (session_worker){ backend, i, FALSE };
    threads[i] = g_thread_new("session", run_session_worker, &workers[i]);
  }
  for (int i = 0; i < 4; i++) {
    g_thread_join(threads[i]);
    CU_ASSERT_TRUE(workers[i].ok);
  }
}

/* ---- The interpreter ----------------------------------------------------------------------------- */

static void
test_local_runs_the_configured_python(void)
{
  g_autoptr(cx_result) result =
    run("import sys, ctypes, decimal, json\nprint(sys.executable)\nprint(sys.flags.isolated)\n"
        "print(any(p.endswith('dist-packages') for p in sys.path))\n"
        "print(ctypes.c_int(7).value, decimal.Decimal('1.5') * 2)");
  CX_ASSERT_CELL_OK(result);
  g_autofree char *expected = g_strdup_printf("%s\n0\nTrue\n7 3.0\n", CX_PYTHON_EXECUTABLE);
  CX_ASSERT_STDOUT(result, expected);
}

static void
test_local_imports_extension_modules(void)
{
  /* Extension modules resolve libpython's symbols globally: this fails with
   * "undefined symbol: PyTuple_Type" unless the plugin made libpython global. */
  g_autoptr(cx_result) result =
    run("import importlib.util, _ctypes, _decimal\n"
        "importlib.util.find_spec('numpy') is None or int(__import__('numpy').arange(4).sum())");
  CX_ASSERT_CELL_OK(result);
  const char *value = output_text(result, 0, "text/plain");
  CU_ASSERT_TRUE(g_strcmp0(value, "6") == 0 || g_strcmp0(value, "True") == 0);
}

static void
test_local_ignores_python_environment_variables(void)
{
  /* cx_test_register() set PYTHONDONTWRITEBYTECODE, PYTHONUNBUFFERED and
   * PYTHONPATH before the interpreter started. */
  g_autoptr(cx_result) result =
    run("import sys\nprint(sys.flags.ignore_environment, sys.dont_write_bytecode,"
        " sys.__stdout__.write_through, '/cx-test-pythonpath' in sys.path)");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "1 False False False\n");
}

static void
test_local_query_info(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE_FATAL(JSON_NODE_HOLDS_OBJECT(info));
  JsonObject *object = json_node_get_object(info);
  CU_ASSERT_TRUE(g_str_has_prefix(json_object_get_string_member(object, "python_version"), "3."));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "executable"), CX_PYTHON_EXECUTABLE);
  CU_ASSERT_FALSE(json_object_get_boolean_member(object, "isolated"));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "libpython"), CX_LIBPYTHON_SONAME);

  g_autoptr(JsonNode) unknown = cx_backend_query(backend, "weather", &error);
  CU_ASSERT_PTR_NULL(unknown);
  CX_ASSERT_ERROR(error, CX_ERROR_UNSUPPORTED);
}

static void
test_local_isolated_conflicts_with_running_interpreter(void)
{
  g_autoptr(cx_result) started = run("1"); /* the interpreter now runs, not isolated */
  CX_ASSERT_CELL_OK(started);
  const char *dirs[] = { cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  const cx_plugin_info *info = cx_registry_lookup(registry, "local", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(info);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_options) options = cx_options_new("local", cx_plugin_info_get_options(info));
  cx_options_set(options, "isolated", "true", &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_backend) backend =
    cx_backend_open(registry, "local", g_steal_pointer(&options), &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "isolated");
}

static void
test_local_declares_its_options(void)
{
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), "local", NULL);
  CU_ASSERT_TRUE_FATAL(info != NULL && cx_plugin_info_is_usable(info));
  static const struct { const char *name; cx_option_type type; } expected[] = {
    { "isolated", CX_OPTION_BOOL }, { "cwd", CX_OPTION_PATH },
    { "env", CX_OPTION_ENV }, { "timeout", CX_OPTION_DOUBLE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(expected); i++) {
    const cx_option_spec *spec = cx_plugin_info_get_options(info);
    while (spec->name != NULL && strcmp(spec->name, expected[i].name) != 0)
      spec++;
    CU_ASSERT_PTR_NOT_NULL(spec->name);
    CU_ASSERT_EQUAL(spec->type, expected[i].type);
  }
}

/* ---- File descriptors 1 and 2 (capture-fds) ------------------------------------------------- */

static gboolean
same_file(const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode;
}

static void
assert_stderr(const cx_result *result, const char *expected)
{
  const char *err = cx_result_get_stderr(result, NULL);
  if (strcmp(err, expected) != 0)
    fprintf(stderr, "\n  stderr: expected \"%s\", got \"%s\"\n", expected, err);
  CU_ASSERT_STRING_EQUAL(err, expected);
}

static void
test_local_captures_fd_writes(void)
{
  cx_test_fd_redirect out, err;
  cx_test_redirect_fd(&out, 1);
  cx_test_redirect_fd(&err, 2);
  g_autoptr(cx_result) result =
    run("import os, sys\nos.write(1, b'one\\n')\nos.write(2, b'two\\n')\n"
        "sys.__stdout__.write('three\\n')\nsys.__stderr__.write('four\\n')");
  g_autofree char *host_err = cx_test_restore_fd(&err);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "one\nthree\n");
  assert_stderr(result, "two\nfour\n");
  CU_ASSERT_STRING_EQUAL(host_out, "");
  CU_ASSERT_STRING_EQUAL(host_err, "");
}

static void
test_local_fd_output_keeps_order_with_print(void)
{
  for (int i = 0; i < 20; i++) {
    g_autoptr(cx_result) result =
      run("import os, sys, subprocess\nprint('a')\nos.system('echo b')\nprint('c')\n"
          "os.write(1, b'd\\n')\nsys.stdout.write('e\\n')\nsubprocess.run(['echo', 'f'])\nprint('g')\n"
          "print('x', file=sys.stderr)\nos.system('echo y >&2')\nprint('z', file=sys.stderr)");
    CX_ASSERT_CELL_OK(result);
    CX_ASSERT_STDOUT(result, "a\nb\nc\nd\ne\nf\ng\n");
    assert_stderr(result, "x\ny\nz\n");
  }
}

static void
test_local_captures_c_stdio(void)
{
  g_autoptr(cx_result) result =
    run("import ctypes\nlibc = ctypes.CDLL(None)\nprint('a')\nlibc.printf(b'C %d\\n', 7)\n"
        "libc.fflush(None)\nprint('b')\nlibc.printf(b'unflushed\\n');");
  CX_ASSERT_CELL_OK(result);
  /* C stdio's buffer is flushed when the cell ends, into the cell. */
  CX_ASSERT_STDOUT(result, "a\nC 7\nb\nunflushed\n");
}

static void
test_local_child_writing_a_megabyte_does_not_block(void)
{
  /* The child blocks on a full pipe unless something drains it while the
   * cell waits; `timeout` turns a hang into a failure. */
  g_autoptr(cx_result) result =
    run("import subprocess\n"
        "r = subprocess.run(['timeout', '20', 'sh', '-c', 'yes | head -c 1048576'])\n"
        "print(r.returncode)");
  CX_ASSERT_CELL_OK(result);
  gsize length;
  const char *out = cx_result_get_stdout(result, &length);
  CU_ASSERT_EQUAL(length, 1048576 + 2);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "y\ny\n"));
  CU_ASSERT_TRUE(g_str_has_suffix(out, "y\n0\n"));
}

static void
test_local_c_write_holding_the_gil_does_not_block(void)
{
  /* ctypes.PyDLL keeps the GIL through the call: only a reader that never
   * waits for the GIL lets write() finish.  alarm() turns a hang into a
   * failure (SIGALRM ends the test program). */
  g_autoptr(cx_result) result =
    run("import ctypes\nlibc = ctypes.PyDLL(None)\nlibc.alarm(20)\n"
        "data = b'z' * 300000\nwritten = libc.write(1, data, len(data))\nlibc.alarm(0)\n"
        "print('', written)");
  CX_ASSERT_CELL_OK(result);
  gsize length;
  const char *out = cx_result_get_stdout(result, &length);
  CU_ASSERT_EQUAL(length, 300000 + 8);
  CU_ASSERT_TRUE(g_str_has_suffix(out, "zz 300000\n"));
}

static void
test_local_concurrent_cells_capture_fds(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autofree char *dir = cx_test_tmpdir();
  /* Each cell waits until the other runs too, then writes 20 lines. */
  char *code[2];
  for (int i = 0; i < 2; i++)
    code[i] = g_strdup_printf(
      "import os, time\nopen(os.path.join('%s', '%d'), 'w').close()\n"
      "while not os.path.exists(os.path.join('%s', '%d')):\n    time.sleep(0.001)\n"
      "for n in range(20):\n    os.write(1, b'%d-%%d\\n' %% n)\n    time.sleep(0.001)\n",
      dir, i, dir, 1 - i, i);
  cx_test_fd_redirect out;
  struct stat before, after;
  fstat(1, &before);
  cx_test_redirect_fd(&out, 1);
  struct stat redirected;
  fstat(1, &redirected);
  cell_job jobs[2];
  GThread *threads[2];
  for (int i = 0; i < 2; i++) {
    jobs[i] = (cell_job){ backend, NULL, code[i], NULL };
    threads[i] = g_thread_new("cell", run_job, &jobs[i]);
  }
  for (int i = 0; i < 2; i++)
    g_thread_join(threads[i]);
  struct stat during_test;
  fstat(1, &during_test);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  fstat(1, &after);

  /* Every line reached one of the two cells, in the order written; none
   * reached the host, whose fd 1 is the same file before and after. */
  CU_ASSERT_STRING_EQUAL(host_out, "");
  CU_ASSERT_TRUE(same_file(&redirected, &during_test));
  CU_ASSERT_TRUE(same_file(&before, &after));
  gboolean seen[2][20] = { { FALSE } };
  guint lines_seen = 0;
  for (int i = 0; i < 2; i++) {
    g_auto(GStrv) lines = g_strsplit(cx_result_get_stdout(jobs[i].result, NULL), "\n", -1);
    int next[2] = { 0, 0 };
    for (guint l = 0; lines[l] != NULL && lines[l][0] != '\0'; l++) {
      int writer, n;
      CU_ASSERT_TRUE_FATAL(sscanf(lines[l], "%d-%d", &writer, &n) == 2 && writer >= 0 &&
                           writer <= 1 && n >= 0 && n < 20);
      CU_ASSERT_TRUE(n >= next[writer]); /* in the order written */
      next[writer] = n + 1;
      CU_ASSERT_FALSE(seen[writer][n]);
      seen[writer][n] = TRUE;
      lines_seen++;
    }
  }
  CU_ASSERT_EQUAL(lines_seen, 40);
  for (int i = 0; i < 2; i++) {
    CX_ASSERT_CELL_OK(jobs[i].result);
    cx_result_free(jobs[i].result);
    g_free(code[i]);
  }
}

static void
test_local_capture_fds_false_leaves_fds_alone(void)
{
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), "local", NULL);
  const cx_option_spec *spec = cx_plugin_info_get_options(info);
  while (spec->name != NULL && strcmp(spec->name, "capture-fds") != 0)
    spec++;
  CU_ASSERT_PTR_NOT_NULL_FATAL(spec->name);
  CU_ASSERT_EQUAL(spec->type, CX_OPTION_BOOL);
  CU_ASSERT_STRING_EQUAL(spec->default_value, "true");

  g_autoptr(cx_backend) backend = open_local_with("capture-fds", "false", NULL);
  cx_test_fd_redirect out;
  cx_test_redirect_fd(&out, 1);
  g_autoptr(cx_result) result =
    cx_test_run_cell(backend, "import os\nos.write(1, b'raw\\n')\nprint('python')", NULL);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "python\n");
  CU_ASSERT_STRING_EQUAL(host_out, "raw\n");
}

static void
test_local_host_output_before_a_cell_stays_the_hosts(void)
{
  cx_test_fd_redirect out;
  cx_test_redirect_fd(&out, 1);
  /* Buffered in C stdio (fd 1 is a file) when the cell starts. */
  printf("host before\n");
  g_autoptr(cx_result) result = run("import os\nprint('cell')\nos.write(1, b'fd\\n')");
  printf("host after\n");
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "cell\nfd\n");
  CU_ASSERT_STRING_EQUAL(host_out, "host before\nhost after\n");
}

static void
test_local_restores_fds_exactly(void)
{
  static const char *const cells[] = {
    "print('fine')",
    "import os\nos.write(1, b'x')\n1 / 0",
    "import sys\nsys.exit(2)",
    /* A cell that closes or replaces fds 1 and 2 itself. */
    "import os\nos.close(1)\nos.close(2)",
    "import os\nfd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)\nos.dup2(fd, 2)\nos.close(fd)",
  };
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(cx_result) first = cx_test_run_cell(backend, "1", NULL); /* pipes made */
  guint fds = cx_test_count_open_fds();
  struct stat out_before, err_before;
  CU_ASSERT_TRUE_FATAL(fstat(1, &out_before) == 0 && fstat(2, &err_before) == 0);
  int out_flags = fcntl(1, F_GETFL), err_flags = fcntl(2, F_GETFL);
  for (gsize i = 0; i < G_N_ELEMENTS(cells); i++) {
    fflush(NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, cells[i], NULL);
    struct stat out_after, err_after;
    CU_ASSERT_TRUE_FATAL(fstat(1, &out_after) == 0 && fstat(2, &err_after) == 0);
    CU_ASSERT_TRUE(same_file(&out_before, &out_after));
    CU_ASSERT_TRUE(same_file(&err_before, &err_after));
    CU_ASSERT_EQUAL(fcntl(1, F_GETFL), out_flags);
    CU_ASSERT_EQUAL(fcntl(2, F_GETFL), err_flags);
    CU_ASSERT_EQUAL(fcntl(1, F_GETFD), 0); /* not close-on-exec */
    CU_ASSERT_EQUAL(cx_test_count_open_fds(), fds);
  }
}

static void
test_local_closed_fds_degrade_gracefully(void)
{
  fflush(NULL);
  int saved_out = dup(1), saved_err = dup(2);
  close(1);
  close(2);
  g_autoptr(cx_result) result =
    run("import os\nprint('python')\ntry:\n    os.write(1, b'x')\nexcept OSError as e:\n"
        "    print(e.errno)");
  gboolean still_closed = fcntl(1, F_GETFD) < 0 && fcntl(2, F_GETFD) < 0;
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  CX_ASSERT_CELL_OK(result);
  g_autofree char *expected = g_strdup_printf("python\n%d\n", EBADF);
  CX_ASSERT_STDOUT(result, expected);
  CU_ASSERT_TRUE(still_closed);
}

static void
test_local_fd_output_after_the_cell_is_dropped(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "written", NULL);
  g_autofree char *code = g_strdup_printf(
    "import subprocess\np = subprocess.Popen(['sh', '-c', 'sleep 0.1; echo late; touch %s'])",
    marker);
  cx_test_fd_redirect out;
  cx_test_redirect_fd(&out, 1);
  g_autoptr(cx_result) started = cx_session_run_cell(session, code, NULL, &error);
  CU_ASSERT_TRUE(cx_test_wait_for_file(marker)); /* "late" was written while no cell ran */
  g_autoptr(cx_result) next =
    cx_session_run_cell(session, "print(p.wait())", NULL, &error);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(started);
  CX_ASSERT_STDOUT(started, "");
  CX_ASSERT_STDOUT(next, "0\n");
  CU_ASSERT_STRING_EQUAL(host_out, "");
}

/* ---- Deep recursion, forks, sessions on threads, late output, signals ------- */

/* Runs CODE statelessly; the seconds it took. */
static double
timed_run(cx_backend *backend, const char *code, cx_result **result)
{
  gint64 start = g_get_monotonic_time();
  *result = cx_test_run_cell(backend, code, NULL);
  return (g_get_monotonic_time() - start) / (double)G_USEC_PER_SEC;
}

static void
test_local_deep_recursion_error_is_formatted_in_linear_time(void)
{
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(cx_result) limit = cx_test_run_cell(backend, "import sys\nsys.getrecursionlimit()", NULL);
  const char *old_limit = output_text(limit, 0, "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(old_limit);
  /* The same recursion, caught in the cell, is the baseline: what the error
   * costs beyond it is formatting (quadratic, it took seconds). */
  static const char recursion[] = "import sys\nsys.setrecursionlimit(50000)\n"
                                  "def f(n):\n    return f(n + 1)\n";
  g_autofree char *caught_code =
    g_strdup_printf("%stry:\n    f(0)\nexcept RecursionError:\n    pass", recursion);
  g_autofree char *failing_code = g_strdup_printf("%sf(0)", recursion);
  cx_result *caught, *failing;
  double baseline = timed_run(backend, caught_code, &caught);
  double elapsed = timed_run(backend, failing_code, &failing);
  g_autofree char *reset = g_strdup_printf("import sys\nsys.setrecursionlimit(%s)", old_limit);
  g_autoptr(cx_result) reset_result = cx_test_run_cell(backend, reset, NULL);
  CX_ASSERT_CELL_OK(caught);
  CX_ASSERT_ERROR_TYPE(failing, "RecursionError");
  /* Instrumented builds slow the formatting (much C and allocation) more
   * than the bare recursion: under valgrind it took 7 times the baseline. */
  double bound = cx_test_slowdown() * (5 * baseline + 1.0);
  if (elapsed > bound)
    fprintf(stderr, "\n  recursion: %.2f s caught, %.2f s with the error\n", baseline, elapsed);
  CU_ASSERT_TRUE(elapsed <= bound);
  /* First and last frames, and how many are left out between. */
  const char *traceback = cx_result_get_error_traceback(failing);
  CX_ASSERT_CONTAINS(traceback, "line 5, in <module>\n    f(0)\n");
  CX_ASSERT_CONTAINS(traceback, " frames omitted ...\n");
  CU_ASSERT_TRUE(g_str_has_suffix(traceback, "RecursionError: maximum recursion depth exceeded\n"));
  CU_ASSERT_TRUE(strlen(traceback) < 64 * 1024);
  cx_result_free(caught);
  cx_result_free(failing);
}

static void
test_local_forked_child_exits_for_real(void)
{
  /* os._exit() in a process the cell forked is the real one: the child
   * never returns into the host's code. */
  g_autoptr(cx_result) forked =
    run("import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))");
  CX_ASSERT_CELL_OK(forked);
  CX_ASSERT_STDOUT(forked, "7\n");
  /* multiprocessing's child prints (into the cell, through fd 1) and ends
   * with status 0. */
  g_autoptr(cx_result) process =
    run("import multiprocessing\n"
        "p = multiprocessing.get_context('fork').Process(target=print, args=('child',))\n"
        "p.start(); p.join()\nprint(p.exitcode)");
  CX_ASSERT_CELL_OK(process);
  CX_ASSERT_STDOUT(process, "child\n0\n");
  /* The cell's own os._exit still ends only the cell. */
  g_autoptr(cx_result) own = run("import os\nos._exit(3)");
  CX_ASSERT_ERROR_TYPE(own, "SystemExit");
}

typedef struct {
  cx_session *session;
  gboolean ok;
} counter_worker;

static gpointer
run_counter_worker(gpointer data)
{
  counter_worker *worker = data;
  worker->ok = TRUE;
  for (int i = 0; i < 100 && worker->ok; i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_result) result = cx_session_run_cell(
      worker->session,
      "active += 1\noverlaps += active > 1\nseen = count\ntime.sleep(0.0002)\n"
      "count = seen + 1\nactive -= 1", NULL, &error);
    worker->ok = result != NULL && cx_result_get_success(result);
  }
  return NULL;
}

static void
test_local_executor_steps_wait_for_a_running_cell(void)
{
  /* An executor step on a session waits for the session's running cell. */
  g_autoptr(cx_backend) backend = open_local();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_env *env = cx_session_execute_prelude(session, "import builtins", &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "running", NULL);
  g_autofree char *cell = g_strdup_printf(
    "import builtins, time\nbuiltins.cellexec_test_busy = True\nopen('%s', 'w').close()\n"
    "time.sleep(0.3)\nbuiltins.cellexec_test_busy = False", marker);
  cell_job job = { backend, session, cell, NULL };
  GThread *thread = g_thread_new("cell", run_job, &job);
  CU_ASSERT_TRUE(cx_test_wait_for_file(marker));
  g_autoptr(JsonNode) busy = cx_env_evaluate_inline(env, "builtins.cellexec_test_busy", NULL, &error);
  g_thread_join(thread);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_FALSE(json_node_get_boolean(busy));
  CX_ASSERT_CELL_OK(job.result);
  cx_result_free(job.result);
  cx_env_free(env);
}

static void
test_local_input_asks_the_callback(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  cx_test_check_input(backend, TRUE);
}

/* A NUL byte in the code: Python's own ValueError, nothing run. */
static void
test_local_code_with_nul_fails_as_python_fails(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  cx_test_check_nul_in_code(backend);
}

/* store_history = FALSE, as a kernel runs a comm's handler. */
static void
test_local_unstored_cell_keeps_the_history(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  cx_test_check_unstored_cells(backend);
}

/* A backend option that is a run option's default (timeout, cwd, env)
 * leaves the call's other run options as they were. */
static void
test_local_input_asks_the_callback_with_a_default_timeout(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", "timeout", "30", NULL);
  cx_test_check_input(backend, TRUE);
}

static void
test_local_unstored_cell_keeps_the_history_with_a_default_timeout(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", "timeout", "30", NULL);
  cx_test_check_unstored_cells(backend);
}

/* Answered by IPython on the session's namespace (tests/cx_test_main.c). */
static void
test_local_session_answers_jupyter_requests(void)
{
  g_autoptr(cx_backend) backend = open_local();
  cx_test_check_session_requests(backend, TRUE);
}

static void
test_local_session_runs_one_cell_at_a_time(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) init =
    cx_session_run_cell(session, "import time\ncount = active = overlaps = 0", NULL, &error);
  CX_ASSERT_CELL_OK(init);
  counter_worker workers[4];
  GThread *threads[4];
  for (int i = 0; i < 4; i++) {
    workers[i] = (counter_worker){ session, FALSE };
    threads[i] = g_thread_new("counter", run_counter_worker, &workers[i]);
  }
  for (int i = 0; i < 4; i++) {
    g_thread_join(threads[i]);
    CU_ASSERT_TRUE(workers[i].ok);
  }
  g_autoptr(cx_result) total = cx_session_run_cell(session, "count, overlaps", NULL, &error);
  assert_output_text(total, 0, "text/plain", "(400, 0)");
}

typedef struct {
  cx_session *session;
  char *stdout_text;
} inner_cell;

/* A host function that runs a cell in the session whose cell called it. */
static JsonNode *
run_inner_cell(JsonObject *arguments, gpointer user_data, GError **error)
{
  inner_cell *inner = user_data;
  g_autoptr(cx_result) result = cx_session_run_cell(inner->session, "inner = 2\nprint('inner')",
                                                    NULL, error);
  if (result == NULL)
    return NULL;
  inner->stdout_text = g_strdup(cx_result_get_stdout(result, NULL));
  return json_node_init_int(json_node_alloc(), 1);
}

static void
test_local_session_cell_may_run_a_cell_of_its_session(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  inner_cell inner = { session, NULL };
  g_autoptr(cx_env) env = cx_session_execute_prelude(session, "", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "run_inner", NULL, NULL, run_inner_cell,
                                                &inner, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  /* Handed to the session's cells through builtins. */
  CU_ASSERT_TRUE(cx_env_execute_side_effects(env, "import builtins\nbuiltins._cx_run_inner = run_inner",
                                             NULL, 0, &error));
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) outer =
    cx_session_run_cell(session, "print('outer')\n_cx_run_inner() + inner", NULL, &error);
  g_autoptr(cx_result) cleanup =
    cx_session_run_cell(session, "import builtins\ndel builtins._cx_run_inner", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(outer);
  CX_ASSERT_STDOUT(outer, "outer\n");
  assert_output_text(outer, 0, "text/plain", "3");
  CU_ASSERT_STRING_EQUAL(inner.stdout_text ? inner.stdout_text : "(none)", "inner\n");
  g_free(inner.stdout_text);
}

static void
test_local_thread_output_after_its_cell_goes_nowhere(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "written", NULL);
  /* One thread writes while its cell runs, again during the next cell; one
   * it started writes while no cell runs. */
  g_autofree char *code = g_strdup_printf(
    "import sys, threading, time\ngo, done, early = threading.Event(), threading.Event(), threading.Event()\n"
    "def idle_writer():\n"
    "    time.sleep(0.1)\n"
    "    print('late, no cell running')\n"
    "    sys.stderr.write('late error\\n')\n"
    "    sys.stdout.buffer.write(b'late bytes\\n')\n"
    "    open('%s', 'w').close()\n"
    "def writer():\n"
    "    print('early')\n"
    "    early.set()\n"
    "    go.wait()\n"
    "    print('late, next cell running')\n"
    "    done.set()\n"
    "threading.Thread(target=writer).start()\n"
    "threading.Thread(target=lambda: threading.Thread(target=idle_writer).start()).start()\n"
    "early.wait()", marker);
  cx_test_fd_redirect out, err;
  cx_test_redirect_fd(&out, 1);
  cx_test_redirect_fd(&err, 2);
  g_autoptr(cx_result) first = cx_session_run_cell(session, code, NULL, &error);
  gboolean written = cx_test_wait_for_file(marker);
  g_autoptr(cx_result) next =
    cx_session_run_cell(session, "go.set()\ndone.wait(10)\nprint('next')", NULL, &error);
  g_autofree char *host_err = cx_test_restore_fd(&err);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(written);
  CX_ASSERT_CELL_OK(first);
  CX_ASSERT_STDOUT(first, "early\n");
  CX_ASSERT_CELL_OK(next);
  CX_ASSERT_STDOUT(next, "next\n");
  if (*host_out != '\0' || *host_err != '\0')
    fprintf(stderr, "\n  the host got \"%s\" and \"%s\"\n", host_out, host_err);
  CU_ASSERT_STRING_EQUAL(host_out, "");
  CU_ASSERT_STRING_EQUAL(host_err, "");
}

static int host_signal_calls;

static void
host_signal_handler(int signum)
{
  host_signal_calls++;
}

static void
test_local_cells_leave_the_hosts_signals_alone(void)
{
  struct sigaction host = { .sa_handler = host_signal_handler }, before_int, before_usr1,
                   before_usr2, after;
  sigemptyset(&host.sa_mask);
  sigaction(SIGUSR1, &host, &before_usr1);
  sigaction(SIGINT, NULL, &before_int);
  sigaction(SIGUSR2, NULL, &before_usr2);

  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = open_local_session();
  g_autoptr(cx_result) changed = cx_session_run_cell(
    session,
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGUSR1, lambda *args: None)\n"
    "signal.siginterrupt(signal.SIGUSR2, False)\n"
    "print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)", NULL, &error);
  CX_ASSERT_CELL_OK(changed);
  CX_ASSERT_STDOUT(changed, "True\n");

  sigaction(SIGINT, NULL, &after);
  CU_ASSERT_TRUE(after.sa_handler == before_int.sa_handler);
  sigaction(SIGUSR1, NULL, &after);
  CU_ASSERT_TRUE(after.sa_handler == host_signal_handler);
  raise(SIGUSR1);
  CU_ASSERT_EQUAL(host_signal_calls, 1);
  sigaction(SIGUSR2, NULL, &after);
  CU_ASSERT_TRUE(after.sa_handler == before_usr2.sa_handler);
  CU_ASSERT_EQUAL(after.sa_flags & SA_RESTART, before_usr2.sa_flags & SA_RESTART);
  /* Python's idea of SIGINT is back too. */
  g_autoptr(cx_result) seen = cx_session_run_cell(
    session, "signal.getsignal(signal.SIGINT) == signal.SIG_DFL", NULL, &error);
  if (before_int.sa_handler == SIG_DFL)
    assert_output_text(seen, 0, "text/plain", "True");
  sigaction(SIGUSR1, &before_usr1, NULL);
}

void
cx_test_register(void)
{
  /* Set before the interpreter starts: it must not care. */
  g_setenv("PYTHONDONTWRITEBYTECODE", "1", TRUE);
  g_setenv("PYTHONUNBUFFERED", "1", TRUE);
  g_setenv("PYTHONPATH", "/cx-test-pythonpath", TRUE);

  static const cx_test_case cells[] = {
    { "test_local_prints_and_displays_last_value", test_local_prints_and_displays_last_value },
    { "test_local_value_follows_statements", test_local_value_follows_statements },
    { "test_local_none_value_is_not_displayed", test_local_none_value_is_not_displayed },
    { "test_local_semicolon_suppresses_value", test_local_semicolon_suppresses_value },
    { "test_local_last_statement_not_expression", test_local_last_statement_not_expression },
    { NULL }
  };
  static const cx_test_case output[] = {
    { "test_local_captures_stderr_in_order", test_local_captures_stderr_in_order },
    { "test_local_captures_megabytes_of_output", test_local_captures_megabytes_of_output },
    { "test_local_keeps_bytes_written_to_buffer", test_local_keeps_bytes_written_to_buffer },
    { "test_local_captures_output_of_threads_the_cell_starts",
      test_local_captures_output_of_threads_the_cell_starts },
    { "test_local_restores_streams_after_cell", test_local_restores_streams_after_cell },
    { NULL }
  };
  static const cx_test_case display[] = {
    { "test_local_displays_rich_reprs", test_local_displays_rich_reprs },
    { "test_local_encodes_binary_reprs_as_base64", test_local_encodes_binary_reprs_as_base64 },
    { "test_local_honours_repr_json_and_mimebundle", test_local_honours_repr_json_and_mimebundle },
    { "test_local_display_appends_outputs_in_order", test_local_display_appends_outputs_in_order },
    { "test_local_allowed_mime_types_filter_bundles", test_local_allowed_mime_types_filter_bundles },
    { "test_local_raising_repr_is_shown_not_a_failure",
      test_local_raising_repr_is_shown_not_a_failure },
    { "test_local_non_json_repr_json_is_cell_error", test_local_non_json_repr_json_is_cell_error },
    { NULL }
  };
  static const cx_test_case errors[] = {
    { "test_local_exception_becomes_error", test_local_exception_becomes_error },
    { "test_local_traceback_shows_cell_functions", test_local_traceback_shows_cell_functions },
    { "test_local_syntax_error_reports_line", test_local_syntax_error_reports_line },
    { "test_local_invalid_utf8_is_syntax_error", test_local_invalid_utf8_is_syntax_error },
    { "test_local_exits_end_the_cell_not_the_process",
      test_local_exits_end_the_cell_not_the_process },
    { "test_local_cells_never_read_the_hosts_stdin", test_local_cells_never_read_the_hosts_stdin },
    { "test_local_traceback_carets_line_up_as_in_python",
      test_local_traceback_carets_line_up_as_in_python },
    { "test_local_keyboard_interrupt_is_cell_error", test_local_keyboard_interrupt_is_cell_error },
    { NULL }
  };
  static const cx_test_case async[] = {
    { "test_local_top_level_await", test_local_top_level_await },
    { "test_local_session_keeps_event_loop", test_local_session_keeps_event_loop },
    { NULL }
  };
  static const cx_test_case state[] = {
    { "test_local_stateless_cells_do_not_share_names",
      test_local_stateless_cells_do_not_share_names },
    { "test_local_session_keeps_namespace", test_local_session_keeps_namespace },
    { "test_local_same_cell_twice_runs_twice", test_local_same_cell_twice_runs_twice },
    { "test_local_cwd_applies_and_is_restored", test_local_cwd_applies_and_is_restored },
    { "test_local_missing_cwd_is_backend_error", test_local_missing_cwd_is_backend_error },
    { "test_local_env_applies_and_is_restored", test_local_env_applies_and_is_restored },
    { "test_local_backend_options_are_defaults", test_local_backend_options_are_defaults },
    { NULL }
  };
  static const cx_test_case control[] = {
    { "test_local_timeout_raises_timeout_error", test_local_timeout_raises_timeout_error },
    { "test_local_trace_functions_stay_with_their_session", test_local_trace_functions_stay_with_their_session },
    { "test_local_cells_are_in_linecache_while_their_code_lives",
      test_local_cells_are_in_linecache_while_their_code_lives },
    { "test_local_use_subprocess_uses_the_subprocess_backend", test_local_use_subprocess_uses_the_subprocess_backend },
    { "test_local_interrupt_stops_stateless_cell", test_local_interrupt_stops_stateless_cell },
    { "test_local_interrupt_stops_session_cell", test_local_interrupt_stops_session_cell },
    { "test_local_interrupt_spares_other_sessions", test_local_interrupt_spares_other_sessions },
    { "test_local_interrupt_when_idle_is_harmless", test_local_interrupt_when_idle_is_harmless },
    { "test_local_sessions_on_several_threads", test_local_sessions_on_several_threads },
    { NULL }
  };
  static const cx_test_case interpreter[] = {
    { "test_local_runs_the_configured_python", test_local_runs_the_configured_python },
    { "test_local_imports_extension_modules", test_local_imports_extension_modules },
    { "test_local_ignores_python_environment_variables",
      test_local_ignores_python_environment_variables },
    { "test_local_query_info", test_local_query_info },
    { "test_local_isolated_conflicts_with_running_interpreter",
      test_local_isolated_conflicts_with_running_interpreter },
    { "test_local_declares_its_options", test_local_declares_its_options },
    { NULL }
  };
  static const cx_test_case fds[] = {
    { "test_local_captures_fd_writes", test_local_captures_fd_writes },
    { "test_local_fd_output_keeps_order_with_print", test_local_fd_output_keeps_order_with_print },
    { "test_local_captures_c_stdio", test_local_captures_c_stdio },
    { "test_local_child_writing_a_megabyte_does_not_block",
      test_local_child_writing_a_megabyte_does_not_block },
    { "test_local_c_write_holding_the_gil_does_not_block",
      test_local_c_write_holding_the_gil_does_not_block },
    { "test_local_concurrent_cells_capture_fds", test_local_concurrent_cells_capture_fds },
    { "test_local_capture_fds_false_leaves_fds_alone", test_local_capture_fds_false_leaves_fds_alone },
    { "test_local_host_output_before_a_cell_stays_the_hosts",
      test_local_host_output_before_a_cell_stays_the_hosts },
    { "test_local_restores_fds_exactly", test_local_restores_fds_exactly },
    { "test_local_closed_fds_degrade_gracefully", test_local_closed_fds_degrade_gracefully },
    { "test_local_fd_output_after_the_cell_is_dropped",
      test_local_fd_output_after_the_cell_is_dropped },
    { NULL }
  };
  cx_test_add_suite("local: cells", cells);
  cx_test_add_suite("local: output", output);
  cx_test_add_suite("local: display", display);
  cx_test_add_suite("local: errors", errors);
  cx_test_add_suite("local: async", async);
  cx_test_add_suite("local: state", state);
  cx_test_add_suite("local: control", control);
  cx_test_add_suite("local: interpreter", interpreter);
  cx_test_add_suite("local: file descriptors", fds);
  static const cx_test_case process[] = {
    { "test_local_deep_recursion_error_is_formatted_in_linear_time",
      test_local_deep_recursion_error_is_formatted_in_linear_time },
    { "test_local_forked_child_exits_for_real", test_local_forked_child_exits_for_real },
    { "test_local_session_runs_one_cell_at_a_time", test_local_session_runs_one_cell_at_a_time },
    { "test_local_input_asks_the_callback", test_local_input_asks_the_callback },
    { "test_local_unstored_cell_keeps_the_history", test_local_unstored_cell_keeps_the_history },
    { "test_local_input_asks_the_callback_with_a_default_timeout",
      test_local_input_asks_the_callback_with_a_default_timeout },
    { "test_local_unstored_cell_keeps_the_history_with_a_default_timeout",
      test_local_unstored_cell_keeps_the_history_with_a_default_timeout },
    { "test_local_code_with_nul_fails_as_python_fails",
      test_local_code_with_nul_fails_as_python_fails },
    { "test_local_session_answers_jupyter_requests", test_local_session_answers_jupyter_requests },
    { "test_local_executor_steps_wait_for_a_running_cell",
      test_local_executor_steps_wait_for_a_running_cell },
    { "test_local_session_cell_may_run_a_cell_of_its_session",
      test_local_session_cell_may_run_a_cell_of_its_session },
    { "test_local_thread_output_after_its_cell_goes_nowhere",
      test_local_thread_output_after_its_cell_goes_nowhere },
    { "test_local_cells_leave_the_hosts_signals_alone",
      test_local_cells_leave_the_hosts_signals_alone },
    { NULL }
  };
  cx_test_add_suite("local: the process", process);
}
