/* The main() of every CUnit test program: see cx_test.h. */
#include "config.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "cx_test.h"
#include "tests/proc_table.h"

static GPtrArray *tmpdirs;
static guint skipped;

void
cx_test_add_suite(const char *suite, const cx_test_case *tests)
{
  CU_pSuite s = CU_add_suite(suite, NULL, NULL);
  g_assert(s != NULL);
  for (const cx_test_case *t = tests; t->name != NULL; t++)
    g_assert(CU_add_test(s, t->name, t->func) != NULL);
}

void
cx_test_skip(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *reason = g_strdup_vprintf(format, args);
  va_end(args);
  fprintf(stderr, "\n  skipped: %s\n", reason);
  skipped++;
}

static const char *
env_or_die(const char *name)
{
  const char *value = g_getenv(name);
  if (value == NULL) {
    fprintf(stderr, "%s is not set: run the tests with `make check`\n", name);
    exit(99);
  }
  return value;
}

const char *cx_test_builddir(void) { return env_or_die("CELLEXEC_BUILDDIR"); }
const char *cx_test_srcdir(void) { return env_or_die("CELLEXEC_SRCDIR"); }

const char *
cx_test_plugins_dir(void)
{
  static char *dir;
  if (dir == NULL)
    dir = g_build_filename(cx_test_builddir(), "plugins", ".libs", NULL);
  return dir;
}

const char *
cx_test_case_plugins_dir(void)
{
  static char *dir;
  if (dir == NULL)
    dir = g_build_filename(cx_test_builddir(), "tests", "plugins", ".libs", NULL);
  return dir;
}

char *
cx_test_dir_with_plugins(const char *const *names)
{
  char *dir = cx_test_tmpdir();
  for (const char *const *name = names; *name != NULL; name++) {
    g_autofree char *file = g_strconcat(*name, ".so", NULL);
    g_autofree char *target = g_build_filename(cx_test_case_plugins_dir(), file, NULL);
    g_autofree char *link = g_build_filename(dir, file, NULL);
    g_assert(g_file_test(target, G_FILE_TEST_EXISTS));
    g_assert(symlink(target, link) == 0);
  }
  return dir;
}

cx_registry *
cx_test_registry_with(const char *const *names)
{
  g_autofree char *dir = cx_test_dir_with_plugins(names);
  const char *const path[] = { dir, NULL };
  return cx_registry_new_for_path(path);
}

cx_registry *
cx_test_registry(void)
{
  static cx_registry *registry;
  if (registry == NULL) {
    const char *dirs[] = { cx_test_plugins_dir(), NULL };
    registry = cx_registry_new_for_path(dirs);
  }
  return registry;
}

cx_options *
cx_test_options_valist(const char *name, const char *first_key, va_list args)
{
  g_autoptr(GError) error = NULL;
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), name, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_options *options = cx_options_new(name, cx_plugin_info_get_options(info));
  for (const char *key = first_key; key != NULL; key = va_arg(args, const char *)) {
    const char *value = va_arg(args, const char *);
    cx_options_set(options, key, value, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  return options;
}

cx_backend *
cx_test_open_backend_valist(const char *name, const char *first_key, va_list args)
{
  cx_options *options = cx_test_options_valist(name, first_key, args);
  g_autoptr(GError) error = NULL;
  cx_backend *backend = cx_backend_open(cx_test_registry(), name, options, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(backend);
  return backend;
}

cx_backend *
cx_test_open_backend(const char *name, const char *first_key, ...)
{
  va_list args;
  va_start(args, first_key);
  cx_backend *backend = cx_test_open_backend_valist(name, first_key, args);
  va_end(args);
  return backend;
}

cx_result *
cx_test_run_cell(cx_backend *backend, const char *code, const cx_run_options *run)
{
  g_autoptr(GError) error = NULL;
  cx_result *result = cx_backend_run_cell(backend, code, run, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  return result;
}

/* SESSION's answer to TYPE with CONTENT (a JSON object's text). */
static JsonObject *
session_request(cx_session *session, const char *type, const char *content)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = json_from_string(content, &error);
  CX_ASSERT_NO_ERROR(error);
  JsonObject *reply = cx_session_request(session, type, json_node_get_object(node), &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(reply);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member_with_default(reply, "status", ""), "ok");
  return reply;
}

/* Entry I of REPLY's "history": [session, line, input]. */
static JsonArray *
history_entry(JsonObject *reply, guint i)
{
  JsonArray *history = json_object_get_array_member(reply, "history");
  CU_ASSERT_FATAL(history != NULL && json_array_get_length(history) > i);
  return json_array_get_array_element(history, i);
}

void
cx_test_check_session_requests(cx_backend *backend, gboolean output_in_history)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) first = cx_test_run_session_cell(session, "zebra_count = 41", NULL);
  g_autoptr(cx_result) second = cx_test_run_session_cell(session, "zebra_count + 1", NULL);
  CU_ASSERT_TRUE(cx_result_get_success(second));

  g_autoptr(JsonObject) completed =
    session_request(session, "complete_request", "{\"code\": \"x = zebra_c\", \"cursor_pos\": 11}");
  JsonArray *matches = json_object_get_array_member(completed, "matches");
  CU_ASSERT_FATAL(matches != NULL && json_array_get_length(matches) == 1);
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(matches, 0), "zebra_count");
  CU_ASSERT_EQUAL(json_object_get_int_member(completed, "cursor_start"), 4);
  CU_ASSERT_EQUAL(json_object_get_int_member(completed, "cursor_end"), 11);

  g_autoptr(JsonObject) inspected =
    session_request(session, "inspect_request", "{\"code\": \"zebra_count\", \"cursor_pos\": 3}");
  CU_ASSERT_TRUE(json_object_get_boolean_member(inspected, "found"));
  JsonObject *data = json_object_get_object_member(inspected, "data");
  CU_ASSERT_FATAL(data != NULL && json_object_has_member(data, "text/plain"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string_member(data, "text/plain"), "41"));
  g_autoptr(JsonObject) unknown =
    session_request(session, "inspect_request", "{\"code\": \"no_such_name\", \"cursor_pos\": 2}");
  CU_ASSERT_FALSE(json_object_get_boolean_member(unknown, "found"));

  g_autoptr(JsonNode) open_block = json_from_string("{\"code\": \"for i in range(3):\"}", NULL);
  g_autoptr(JsonObject) incomplete =
    cx_session_request(session, "is_complete_request", json_node_get_object(open_block), &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_FATAL(incomplete != NULL);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(incomplete, "status"), "incomplete");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(incomplete, "indent"), "    ");

  g_autoptr(JsonObject) tail = session_request(
    session, "history_request",
    "{\"hist_access_type\": \"tail\", \"n\": 1, \"raw\": true, \"output\": true}");
  JsonArray *last = history_entry(tail, 0);
  CU_ASSERT_EQUAL(json_array_get_int_element(last, 1), 2);
  JsonArray *in_out = json_array_get_array_element(last, 2);
  CU_ASSERT_FATAL(in_out != NULL && json_array_get_length(in_out) == 2);
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(in_out, 0), "zebra_count + 1");
  if (output_in_history) {
    CU_ASSERT_STRING_EQUAL(json_array_get_string_element(in_out, 1), "42");
  } else {
    CU_ASSERT_TRUE(JSON_NODE_HOLDS_NULL(json_array_get_element(in_out, 1)));
  }
  g_autoptr(JsonObject) range = session_request(
    session, "history_request",
    "{\"hist_access_type\": \"range\", \"session\": 0, \"start\": 1, \"stop\": 2}");
  CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(range, "history")), 1);
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(history_entry(range, 0), 2),
                         "zebra_count = 41");
  /* Unique: a kernel whose history is a file (one a Jupyter Server
   * started) finds the same cell of earlier sessions too. */
  g_autoptr(JsonObject) search = session_request(
    session, "history_request",
    "{\"hist_access_type\": \"search\", \"pattern\": \"zebra_count +*\", \"unique\": true}");
  CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(search, "history")), 1);

  /* execute_request's user_expressions: each one's display data, or its
   * error, as ipykernel gives them. */
  g_autoptr(JsonObject) evaluated = session_request(
    session, CX_REQUEST_USER_EXPRESSIONS,
    "{\"user_expressions\": {\"next\": \"zebra_count + 2\", \"bad\": \"1/0\"}}");
  JsonObject *values = json_object_get_object_member(evaluated, "user_expressions");
  CU_ASSERT_FATAL(values != NULL && json_object_get_size(values) == 2);
  JsonObject *next = json_object_get_object_member(values, "next");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(next, "status"), "ok");
  CU_ASSERT_STRING_EQUAL(
    json_object_get_string_member(json_object_get_object_member(next, "data"), "text/plain"), "43");
  JsonObject *bad = json_object_get_object_member(values, "bad");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(bad, "status"), "error");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(bad, "ename"), "ZeroDivisionError");

  g_autoptr(JsonObject) none = cx_session_request(session, "comm_open",
                                                  json_node_get_object(open_block), &error);
  CU_ASSERT_PTR_NULL(none);
  CU_ASSERT_TRUE(g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED));
}

/* What the input test's callbacks saw, in order: "out:TEXT|" for output
 * (a run of stream chunks as one), "ask:PROMPT|" or "password:PROMPT|"
 * for input requests. */
typedef struct {
  GString *seen;
  gboolean in_output; /* the last entry is output: more joins it */
} input_trace;

static void
trace_output(JsonObject *output, gpointer data)
{
  input_trace *trace = data;
  if (g_strcmp0(json_object_get_string_member_with_default(output, "output_type", ""), "stream") != 0)
    return;
  if (trace->in_output)
    g_string_truncate(trace->seen, trace->seen->len - 1); /* its "|" */
  else
    g_string_append(trace->seen, "out:");
  g_string_append_printf(trace->seen, "%s|",
                         json_object_get_string_member_with_default(output, "text", ""));
  trace->in_output = TRUE;
}

static char *
answer_input(const char *prompt, gboolean password, gpointer data, GError **error)
{
  input_trace *trace = data;
  g_string_append_printf(trace->seen, "%s:%s|", password ? "password" : "ask", prompt);
  trace->in_output = FALSE;
  if (g_str_equal(prompt, "stop? ")) {
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "interrupted");
    return NULL;
  }
  if (g_str_equal(prompt, "eof? ")) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_FAILED, "nobody is there");
    return NULL;
  }
  return g_strdup(password ? "s3cret" : "world");
}

void
cx_test_check_input(cx_backend *backend, gboolean answers_failures)
{
  input_trace trace = { g_string_new(NULL), FALSE };
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, trace_output, &trace);
  cx_run_options_set_input_callback(run, answer_input, &trace);
  g_autoptr(cx_result) answered = cx_test_run_cell(
    backend,
    "print('before', flush=True)\nname = input('name? ')\nimport getpass\n"
    "word = getpass.getpass('word? ')\nprint('hello', name, word)",
    run);
  CX_ASSERT_CELL_OK(answered);
  CX_ASSERT_STDOUT(answered, "before\nhello world s3cret\n");
  /* What the cell wrote before it asked reached the callback first. */
  CU_ASSERT_STRING_EQUAL(trace.seen->str,
                         "out:before\n|ask:name? |password:word? |out:hello world s3cret\n|");
  if (answers_failures) {
    g_autoptr(cx_result) stopped = cx_test_run_cell(backend, "input('stop? ')", run);
    CX_ASSERT_ERROR_TYPE(stopped, "KeyboardInterrupt");
    g_autoptr(cx_result) ended = cx_test_run_cell(backend, "input('eof? ')", run);
    CX_ASSERT_ERROR_TYPE(ended, "EOFError");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(ended), "nobody is there");
  }
  /* Without a callback, input() fails at once, as in a kernel whose front
   * end does not allow stdin. */
  g_autoptr(cx_result) refused = cx_test_run_cell(backend, "input('name? ')", NULL);
  CX_ASSERT_ERROR_TYPE(refused, "StdinNotImplementedError");
  g_string_free(trace.seen, TRUE);
}

static gint64
execution_count_of(cx_result *result)
{
  JsonNode *count = cx_result_get_extra(result, "execution_count");
  return count != NULL && JSON_NODE_HOLDS_VALUE(count) ? json_node_get_int(count) : -1;
}

void
cx_test_check_unstored_cells(cx_backend *backend)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) first = cx_test_run_session_cell(session, "x = 41\nx", NULL);
  CU_ASSERT_EQUAL(execution_count_of(first), 1);
  g_autoptr(cx_run_options) unstored = cx_run_options_new();
  cx_run_options_set_store_history(unstored, FALSE);
  CU_ASSERT_FALSE(cx_run_options_get_store_history(unstored));
  g_autoptr(cx_result) aside = cx_test_run_session_cell(session, "y = x + 1\ny", unstored);
  CX_ASSERT_CELL_OK(aside);
  CU_ASSERT_EQUAL(execution_count_of(aside), 1);
  g_autoptr(cx_result) next = cx_test_run_session_cell(
    session, "print(y, _, len(In), repr(_i), _i1, any(c.startswith('y') for c in In))", NULL);
  CX_ASSERT_STDOUT(next, "42 42 3 'x = 41\\nx' x = 41\nx False\n");
  CU_ASSERT_EQUAL(execution_count_of(next), 2);
}

/* "Type: message" of what the configured Python raises compiling source
 * that holds a NUL byte, and exec() of a file's text holding one: the two
 * must agree, since both are what a cell is. */
static char *
python_refusal_of_nul(void)
{
  const char *python = g_getenv("CELLEXEC_PYTHON");
  const char *argv[] = {
    python != NULL ? python : "/usr/bin/python3", "-c",
    "import sys, tempfile\n"
    "def refusal(run):\n"
    "    try:\n"
    "        run()\n"
    "    except Exception as e:\n"
    "        return f'{type(e).__name__}: {e}'\n"
    "with tempfile.TemporaryFile('w+') as f:\n"
    "    f.write('x = 1\\0\\n'); f.seek(0)\n"
    "    of_file = refusal(lambda: exec(f.read()))\n"
    "of_string = refusal(lambda: compile('x = 1\\0\\n', '<cell>', 'exec'))\n"
    "sys.stdout.write(of_string if of_string == of_file else 'they differ')\n",
    NULL
  };
  char *out = NULL;
  g_autoptr(GError) error = NULL;
  g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  return out;
}

const char *
cx_test_python_refusal_of_nul(void)
{
  static char *refusal;
  if (refusal == NULL)
    refusal = python_refusal_of_nul(); /* one spawn per test program, kept */
  CX_ASSERT_CONTAINS(refusal, "null bytes");
  return refusal;
}

void
cx_test_assert_refused_as_python_refuses_nul(const cx_result *result)
{
  const char *expected = cx_test_python_refusal_of_nul();
  CU_ASSERT_FALSE(cx_result_get_success(result));
  CU_ASSERT_TRUE_FATAL(cx_result_has_error(result));
  g_autofree char *got = g_strdup_printf("%s: %s", cx_result_get_error_type(result),
                                         cx_result_get_error_message(result));
  CU_ASSERT_STRING_EQUAL(got, expected);
}

void
cx_test_check_nul_in_code(cx_backend *backend)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *ran = g_build_filename(dir, "ran", NULL);
  /* The control: a backslash and a zero in a string literal is valid
   * Python, and the probe (a file the cell makes) works. */
  g_autofree char *literal = g_strdup_printf("open('%s', 'w').close(); print('a\\0b')", ran);
  g_autoptr(cx_result) control = cx_test_run_cell(backend, literal, NULL);
  CX_ASSERT_CELL_OK(control);
  gsize len = 0;
  const char *out = cx_result_get_stdout(control, &len);
  CU_ASSERT_TRUE(len == 4 && memcmp(out, "a\0b\n", 4) == 0);
  CU_ASSERT_TRUE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_unlink(ran);
  /* The same with a NUL byte between a and b. */
  g_autofree char *nul = g_strdup_printf("open('%s', 'w').close(); print('a" CX_RESULT_NUL "b')",
                                         ran);
  g_autoptr(cx_result) stateless = cx_test_run_cell(backend, nul, NULL);
  cx_test_assert_refused_as_python_refuses_nul(stateless);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) in_session = cx_test_run_session_cell(session, nul, NULL);
  cx_test_assert_refused_as_python_refuses_nul(in_session);
  CU_ASSERT_FALSE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_autoptr(cx_result) after = cx_test_run_session_cell(session, "print('goes on')", NULL);
  CX_ASSERT_STDOUT(after, "goes on\n");
}

cx_result *
cx_test_run_session_cell(cx_session *session, const char *code, const cx_run_options *run)
{
  g_autoptr(GError) error = NULL;
  cx_result *result = cx_session_run_cell(session, code, run, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  return result;
}

char *
cx_test_tmpdir(void)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp("cellexec-test-XXXXXX", &error);
  g_assert_no_error(error);
  /* A sandbox's cells run as nobody when the tests run as root: they may
   * write the tests' directories, as in /tmp (sticky: a file is removed
   * or renamed only by its owner).  Otherwise cells are the tests' user. */
  if (geteuid() == 0)
    g_assert(chmod(dir, 01777) == 0);
  g_ptr_array_add(tmpdirs, g_strdup(dir));
  return dir;
}

char *
cx_test_write_file(const char *dir, const char *name, const char *contents)
{
  char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GError) error = NULL;
  g_file_set_contents(path, contents, -1, &error);
  g_assert_no_error(error);
  return path;
}

char *
cx_test_nested_json(guint levels, const char *value)
{
  GString *text = g_string_sized_new(2 * levels + strlen(value) + 1);
  for (guint i = 0; i < levels; i++)
    g_string_append_c(text, '[');
  g_string_append(text, value);
  for (guint i = 0; i < levels; i++)
    g_string_append_c(text, ']');
  return g_string_free(text, FALSE);
}

gboolean
cx_test_wait_for_file(const char *path)
{
  for (int i = 0; i < 1000 && !g_file_test(path, G_FILE_TEST_EXISTS); i++)
    g_usleep(10000);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

void
cx_test_redirect_fd(cx_test_fd_redirect *redirect, int fd)
{
  fflush(NULL);
  g_autofree char *dir = cx_test_tmpdir();
  redirect->fd = fd;
  redirect->path = g_build_filename(dir, fd == 1 ? "stdout" : "stderr", NULL);
  int file = open(redirect->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  redirect->saved = dup(fd);
  CU_ASSERT_TRUE_FATAL(file >= 0 && redirect->saved >= 0);
  dup2(file, fd);
  close(file);
}

char *
cx_test_restore_fd(cx_test_fd_redirect *redirect)
{
  fflush(NULL);
  dup2(redirect->saved, redirect->fd);
  close(redirect->saved);
  char *contents = NULL;
  g_file_get_contents(redirect->path, &contents, NULL, NULL);
  g_free(redirect->path);
  return contents != NULL ? contents : g_strdup("(unreadable)");
}

void
cx_test_print_unexpected_error(const cx_result *result)
{
  if (cx_result_has_error(result))
    fprintf(stderr, "\n  cell failed: %s: %s\n%s", cx_result_get_error_type(result),
            cx_result_get_error_message(result), cx_result_get_error_traceback(result));
}

static void
remove_tree(const char *path)
{
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      remove_tree(child);
    }
    if (dir != NULL)
      g_dir_close(dir);
  }
  g_remove(path);
}

int
main(int argc, char **argv)
{
  /* Line by line, so the log of a test killed at its time limit still
   * names the test it was in. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  tmpdirs = g_ptr_array_new_with_free_func(g_free);
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 99;
  cx_test_register();
  CU_basic_set_mode(CU_BRM_VERBOSE);
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    /* The built-in plugins, and the libraries with thread-local storage
     * they bring (libpython), loaded before any test starts a thread, as
     * when the registry loaded every plugin at once: since plugins load
     * lazily, LeakSanitizer's tracer has crashed at exit now and then
     * (see tests/sanitized_run.sh), and a library's TLS added after
     * threads exist is the likeliest cause. */
    cx_registry *registry = cx_test_registry();
    for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++)
      cx_registry_get_plugin(registry, i);
  }

  if (argc > 1) {
    /* Run only the named tests, whatever suite they are in. */
    for (CU_pSuite s = CU_get_registry()->pSuite; s != NULL; s = s->pNext)
      for (int i = 1; i < argc; i++) {
        CU_pTest t = CU_get_test(s, argv[i]);
        if (t != NULL)
          CU_basic_run_test(s, t);
      }
  } else {
    CU_basic_run_tests();
  }

  unsigned run = CU_get_number_of_tests_run();
  unsigned failed = CU_get_number_of_tests_failed();
  /* A test that skipped itself and then failed counts as failed. */
  unsigned passed = run - failed > skipped ? run - failed - skipped : 0;
  g_autofree char *program = g_path_get_basename(argv[0]);
  printf("\n%s: %u passed, %u failed\n", program, passed, failed);
  if (skipped > 0)
    printf("%s: %u skipped\n", program, run - failed - passed);
  CU_cleanup_registry();

  for (guint i = 0; i < tmpdirs->len; i++)
    remove_tree(g_ptr_array_index(tmpdirs, i));
  g_ptr_array_free(tmpdirs, TRUE);
  if (failed > 0)
    return 1;
  return passed == 0 ? 77 : 0;
}

guint
cx_test_count_open_fds(void)
{
  return proc_count_open_fds();
}

char **
cx_test_cellexec_argv_valist(const char *first, va_list args)
{
  g_autoptr(GStrvBuilder) argv = g_strv_builder_new();
  g_autofree char *program = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
  g_strv_builder_add(argv, program);
  for (const char *arg = first; arg != NULL; arg = va_arg(args, const char *))
    g_strv_builder_add(argv, arg);
  return g_strv_builder_end(argv);
}

void
cx_test_cli_run_clear(cx_test_cli_run *run)
{
  g_free(run->out);
  g_free(run->err);
}

static GSubprocess *
cellexec_start_valist(const char *first, va_list args)
{
  g_auto(GStrv) argv = cx_test_cellexec_argv_valist(first, args);
  g_autoptr(GError) error = NULL;
  GSubprocess *process = g_subprocess_newv(
    (const char *const *)argv,
    G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
    &error);
  g_assert_no_error(error);
  return process;
}

GSubprocess *
cx_test_cellexec_start(const char *first, ...)
{
  va_list args;
  va_start(args, first);
  GSubprocess *process = cellexec_start_valist(first, args);
  va_end(args);
  return process;
}

cx_test_cli_run
cx_test_cellexec_finish(GSubprocess *process, const char *input)
{
  cx_test_cli_run run = { 0 };
  g_autoptr(GError) error = NULL;
  g_subprocess_communicate_utf8(process, input, NULL, &run.out, &run.err, &error);
  g_assert_no_error(error);
  run.status = g_subprocess_get_if_exited(process) ? g_subprocess_get_exit_status(process)
                                                   : 128 + g_subprocess_get_term_sig(process);
  return run;
}

cx_test_cli_run
cx_test_cellexec_terminate(GSubprocess *process, double *seconds)
{
  g_subprocess_send_signal(process, SIGTERM);
  gint64 start = g_get_monotonic_time();
  while (g_subprocess_get_identifier(process) != NULL && cx_test_seconds_since(start) < 60)
    g_usleep(50 * 1000);
  *seconds = cx_test_seconds_since(start);
  if (g_subprocess_get_identifier(process) != NULL)
    g_subprocess_force_exit(process);
  return cx_test_cellexec_finish(process, NULL);
}

cx_test_cli_run
cx_test_cellexec(const char *input, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  g_autoptr(GSubprocess) process = cellexec_start_valist(first, args);
  va_end(args);
  return cx_test_cellexec_finish(process, input);
}

cx_test_cli_run
cx_test_cellexec_capped(guint64 address_space, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  g_auto(GStrv) command = cx_test_cellexec_argv_valist(first, args);
  va_end(args);
  g_autoptr(GStrvBuilder) argv = g_strv_builder_new();
  g_autofree char *cap = g_strdup_printf("--as=%" G_GUINT64_FORMAT, address_space);
  g_strv_builder_add_many(argv, "prlimit", cap, "--", NULL);
  g_strv_builder_addv(argv, (const char **)command);
  g_auto(GStrv) capped = g_strv_builder_end(argv);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process = g_subprocess_newv(
    (const char *const *)capped, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
    &error);
  g_assert_no_error(error);
  return cx_test_cellexec_finish(process, NULL);
}

double
cx_test_seconds_since(gint64 start)
{
  return (g_get_monotonic_time() - start) / (double)G_USEC_PER_SEC;
}

gboolean
cx_test_under_valgrind(void)
{
  const char *preload = g_getenv("LD_PRELOAD");
  return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

double
cx_test_slowdown(void)
{
  return cx_test_under_valgrind() ? 10 : g_getenv("CELLEXEC_SANITIZED") != NULL ? 3 : 1;
}

/* Calls FUNC(pid) for each process whose command line contains MARKER;
 * returns how many there were. */
static guint
for_processes_with(const char *marker, void (*func)(pid_t pid))
{
  guint n = 0;
  g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
  const char *name;
  while (proc != NULL && (name = g_dir_read_name(proc)) != NULL) {
    if (!g_ascii_isdigit(name[0]))
      continue;
    g_autofree char *path = g_strdup_printf("/proc/%s/cmdline", name);
    g_autofree char *cmdline = NULL;
    gsize len;
    if (!g_file_get_contents(path, &cmdline, &len, NULL))
      continue;
    for (gsize i = 0; i + 1 < len; i++)
      if (cmdline[i] == '\0')
        cmdline[i] = ' ';
    if (strstr(cmdline, marker) == NULL)
      continue;
    n++;
    if (func != NULL)
      func((pid_t)atoi(name));
  }
  return n;
}

guint
cx_test_count_processes_with(const char *marker)
{
  return for_processes_with(marker, NULL);
}

guint
cx_test_processes_left_with(const char *marker, double seconds)
{
  gint64 deadline = g_get_monotonic_time() + (gint64)(seconds * G_USEC_PER_SEC);
  guint n;
  while ((n = cx_test_count_processes_with(marker)) > 0 && g_get_monotonic_time() < deadline)
    g_usleep(10 * 1000);
  return n;
}

static void
kill_process(pid_t pid)
{
  kill(pid, SIGKILL);
}

void
cx_test_kill_processes_with(const char *marker)
{
  for_processes_with(marker, kill_process);
}
