/* Tests of the subprocess backend (plugins/subprocess + cellexec-worker),
 * through the public API: real worker processes, real signals, real
 * crashes.  Timings here are generous upper bounds; bench/ measures. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cx_test.h"
#include "tests/proc_table.h"

/* ---- Helpers ------------------------------------------------------------------- */

/* The subprocess backend with OPTION, VALUE pairs (ending with NULL) set,
 * and isolation = $CELLEXEC_TEST_ISOLATION (default none): the suite runs
 * again inside the sandbox (tests/test_subprocess_sandbox.sh). */
#define open_with(...)                                                                 \
  cx_test_open_backend("subprocess", "isolation", sandboxed() ? "sandbox" : "none",    \
                       sandboxed() ? "writable-paths" : "isolation",                   \
                       sandboxed() ? g_get_tmp_dir() : "none", __VA_ARGS__)

/* In the sandbox the tests' directories under the host's /tmp stay
 * reachable (writable-paths); tests of what the sandbox forbids (a cell
 * stopping its fork server, the host's whole environment) are
 * tests/test_sandbox.c's and are skipped here. */
static gboolean
sandboxed(void)
{
  return g_strcmp0(g_getenv("CELLEXEC_TEST_ISOLATION"), "sandbox") == 0;
}

/* One backend shared by the tests that need no options of their own. */
static cx_backend *
shared_backend(void)
{
  static cx_backend *backend;
  if (backend == NULL)
    backend = open_with(NULL, NULL);
  return backend;
}

static cx_result *
run(const char *code)
{
  return cx_test_run_cell(shared_backend(), code, NULL);
}

static cx_result *
session_run(cx_session *session, const char *code)
{
  g_autoptr(GError) error = NULL;
  cx_result *result = cx_session_run_cell(session, code, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  return result;
}

/* Children of this process, and how many of them are zombies. */
static guint
count_children(guint *zombies)
{
  g_autoptr(GArray) table = proc_table_read();
  guint n = 0;
  *zombies = 0;
  for (guint i = 0; i < table->len; i++) {
    const proc_entry *entry = &g_array_index(table, proc_entry, i);
    if (entry->ppid == getpid()) {
      n++;
      *zombies += entry->state == 'Z';
    }
  }
  return n;
}

static char *
unique_marker(void)
{
  static int counter;
  return g_strdup_printf("%d.%d%d", 1000 + g_random_int_range(0, 1000), getpid(), ++counter);
}

/* ---- Cells ------------------------------------------------------------------------ */

static void
test_subprocess_runs_cells(void)
{
  g_autoptr(cx_result) result = run("print('hello')\nimport sys\nprint('oops', file=sys.stderr)\n1 + 1");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "hello\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "oops\n");
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 0), "text/plain"), "2");

  g_autoptr(cx_result) failed = run("x = 1\n1 / 0");
  CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(failed), "1 / 0");

  /* Stateless: a fresh namespace, a fresh process. */
  g_autoptr(cx_result) fresh = run("'x' in globals()");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(fresh, 0), "text/plain"), "False");
  /* (Not by pid: in the sandbox each is pid 2 of a namespace of its own.) */
  static const char *const mark = "import sys\nprint(hasattr(sys, 'cx_mark'))\nsys.cx_mark = 1";
  g_autoptr(cx_result) marked = run(mark);
  g_autoptr(cx_result) unmarked = run(mark);
  CX_ASSERT_STDOUT(marked, "False\n");
  CX_ASSERT_STDOUT(unmarked, "False\n");
}

static void
test_subprocess_output_bytes_and_rich_outputs(void)
{
  g_autoptr(cx_result) result =
    run("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe raw\\n')\n"
        "display({'a': 1})\nclass H:\n    def _repr_html_(self): return '<b>h</b>'\nH()");
  CX_ASSERT_CELL_OK(result);
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  CU_ASSERT_EQUAL(len, 7);
  CU_ASSERT_EQUAL(memcmp(out, "\xff\xfe raw\n", 7), 0);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 2);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(result, 1), "text/html"),
                         "<b>h</b>");
}

/* A thread or child a session cell left behind writes to fds 1 and 2
 * while no cell runs: none of it goes into the next cell, and none into
 * the host's stdout (the worker's stdout is the host's stderr). */
static void
test_subprocess_output_between_cells_stays_out_of_the_hosts_stdout(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *go = g_build_filename(dir, "go", NULL);
  g_autofree char *written = g_build_filename(dir, "written", NULL);
  /* A worker started now has the redirected descriptors as its own. */
  cx_test_fd_redirect out, err;
  cx_test_redirect_fd(&out, 1);
  cx_test_redirect_fd(&err, 2);
  g_autoptr(cx_backend) backend = open_with(NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  g_autofree char *code = g_strdup_printf(
    "import os, threading, time\n"
    "def late():\n"
    "    while not os.path.exists('%s'):\n"
    "        time.sleep(0.01)\n"
    "    os.write(1, b'late out\\n')\n"
    "    os.write(2, b'late err\\n')\n"
    "    os.system('echo late child')\n"
    "    open('%s', 'w').close()\n"
    "threading.Thread(target=late).start()\n"
    "print('first')", go, written);
  g_autoptr(cx_result) first = session != NULL ? session_run(session, code) : NULL;
  g_file_set_contents(go, "", 0, NULL);
  gboolean wrote = cx_test_wait_for_file(written);
  g_autoptr(cx_result) next = session != NULL ? session_run(session, "print('next')") : NULL;
  g_clear_pointer(&session, cx_session_close);
  g_clear_pointer(&backend, cx_backend_free);
  g_autofree char *host_err = cx_test_restore_fd(&err);
  g_autofree char *host_out = cx_test_restore_fd(&out);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(wrote);
  CX_ASSERT_CELL_OK(first);
  CX_ASSERT_STDOUT(first, "first\n");
  CX_ASSERT_CELL_OK(next);
  CX_ASSERT_STDOUT(next, "next\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(next, NULL), "");
  if (*host_out != '\0')
    fprintf(stderr, "\n  the host's stdout got \"%s\"\n", host_out);
  CU_ASSERT_STRING_EQUAL(host_out, "");
  /* Not lost: it is on the host's stderr, with the worker's diagnostics. */
  CX_ASSERT_CONTAINS(host_err, "late out\n");
  CX_ASSERT_CONTAINS(host_err, "late err\n");
  CX_ASSERT_CONTAINS(host_err, "late child\n");
}

static void
test_subprocess_runs_configured_python(void)
{
  if (sandboxed())
    return; /* inherit-env: refused in the sandbox (tests/test_sandbox.c) */
  /* The host's PYTHON* variables must not change the worker's Python. */
  g_autoptr(cx_backend) backend = open_with("inherit-env", "true", NULL);
  const char *code = "import sys\nprint(sys.executable, sys.flags.dont_write_bytecode, "
                     "sys.flags.ignore_environment)";
  g_autoptr(cx_result) inherited = cx_test_run_cell(backend, code, NULL);
  g_autoptr(cx_result) clean = run(code);
  CX_ASSERT_CELL_OK(inherited);
  g_autofree char *expected = g_strdup_printf("%s 0 1\n", CX_PYTHON_EXECUTABLE);
  CX_ASSERT_STDOUT(inherited, expected);
  CX_ASSERT_STDOUT(clean, expected);
}

/* ---- cwd and env ------------------------------------------------------------------- */

static void
test_subprocess_cwd_and_env_apply_in_the_cell_only(void)
{
  g_autofree char *host_cwd = g_get_current_dir();
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_cwd(options, "/tmp");
  cx_run_options_add_env(options, "DATASET_ROOT=/tmp/data");
  g_autoptr(cx_result) result =
    cx_test_run_cell(shared_backend(), "import os\nprint(os.getcwd())\nprint(os.environ['DATASET_ROOT'])",
           options);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "/tmp\n/tmp/data\n");
  g_autofree char *after = g_get_current_dir();
  CU_ASSERT_STRING_EQUAL(after, host_cwd);
  CU_ASSERT_PTR_NULL(g_getenv("DATASET_ROOT"));

  /* The backend's own cwd option, and a cwd that does not exist. */
  g_autoptr(cx_backend) in_tmp = open_with("cwd", "/tmp", NULL);
  g_autoptr(cx_result) there = cx_test_run_cell(in_tmp, "import os; print(os.getcwd())", NULL);
  CX_ASSERT_STDOUT(there, "/tmp\n");
  g_autoptr(cx_run_options) missing = cx_run_options_new();
  cx_run_options_set_cwd(missing, "/no/such/dir");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) none = cx_backend_run_cell(shared_backend(), "1", missing, &error);
  CU_ASSERT_PTR_NULL(none);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "/no/such/dir");
}

static void
test_subprocess_environment_is_an_allowlist(void)
{
  if (sandboxed())
    return; /* inherit-env: refused in the sandbox (tests/test_sandbox.c) */
  g_setenv("CX_TEST_HOST_SECRET", "hunter2", TRUE);
  g_autoptr(cx_backend) clean = open_with("env", "GIVEN=yes", NULL);
  const char *code = "import os\nprint(os.environ.get('CX_TEST_HOST_SECRET'), "
                     "os.environ.get('GIVEN'), 'PATH' in os.environ)";
  g_autoptr(cx_result) result = cx_test_run_cell(clean, code, NULL);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "None yes True\n");
  g_autoptr(cx_result) names = cx_test_run_cell(clean, "import os\nprint(sorted(k for k in os.environ "
                                      "if k not in ('PATH','HOME','LANG','TZ','TMPDIR','GIVEN') "
                                      "and not k.startswith('LC_')))", NULL);
  CX_ASSERT_STDOUT(names, "[]\n");

  g_autoptr(cx_backend) inheriting = open_with("inherit-env", "true", NULL);
  g_autoptr(cx_result) inherited = cx_test_run_cell(inheriting, code, NULL);
  CX_ASSERT_STDOUT(inherited, "hunter2 None True\n");
  g_unsetenv("CX_TEST_HOST_SECRET");
}

/* ---- Deadlines --------------------------------------------------------------------- */

static void
test_subprocess_timeout_interrupts_sleep(void)
{
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 2.0);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result =
    cx_test_run_cell(shared_backend(), "print('before')\nimport time; time.sleep(5)", options);
  double elapsed = cx_test_seconds_since(start);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "cell exceeded its 2 s timeout");
  /* In words at the end of the traceback too, which text output prints. */
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(result),
                     "\nTimeoutError: cell exceeded its 2 s timeout\n");
  CX_ASSERT_STDOUT(result, "before\n");
  CU_ASSERT_TRUE(elapsed >= 1.9);
  if (elapsed >= 4.0)
    fprintf(stderr, "\n  timeout took %.3f s\n", elapsed);
  CU_ASSERT_TRUE(elapsed < 4.0); /* the cell would sleep 5 s */
}

static void
test_subprocess_timeout_kills_a_cell_ignoring_sigint(void)
{
  g_autoptr(cx_backend) backend = open_with("timeout", "0.5", NULL);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "import time, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('stubborn', flush=True)\nwhile True:\n    pass", NULL);
  double elapsed = cx_test_seconds_since(start);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  /* Printed before the kill: it was streamed. */
  CX_ASSERT_STDOUT(result, "stubborn\n");
  if (elapsed >= 0.5 + 5)
    fprintf(stderr, "\n  kill took %.3f s\n", elapsed);
  CU_ASSERT_TRUE(elapsed < 0.5 + 5); /* the loop never ends: a hang guard */
  g_autoptr(cx_result) next = cx_test_run_cell(backend, "print('next')", NULL);
  CX_ASSERT_STDOUT(next, "next\n");
}

static void
test_subprocess_leaves_no_process_behind(void)
{
  g_autofree char *marker = unique_marker();
  /* A child, a grandchild, and a daemon in a session of its own. */
  g_autofree char *code = g_strdup_printf(
    "import subprocess\n"
    "subprocess.Popen(['sleep', '%s'])\n"
    "subprocess.Popen(['sh', '-c', 'sleep %s & wait'])\n"
    "subprocess.Popen(['sleep', '%s'], start_new_session=True)\n"
    "print('started')", marker, marker, marker);
  g_autoptr(cx_result) finished = run(code);
  CX_ASSERT_CELL_OK(finished);
  CU_ASSERT_EQUAL(cx_test_processes_left_with(marker, 1.0), 0);

  /* The same from a cell killed at its deadline, with a double-forked daemon. */
  g_autofree char *marker2 = unique_marker();
  g_autofree char *stuck = g_strdup_printf(
    "import os, subprocess, signal, time\n"
    "subprocess.Popen(['sleep', '%s'])\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execvp('sleep', ['sleep', '%s'])\n"
    "    os._exit(0)\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "time.sleep(60)", marker2, marker2);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 0.5);
  g_autoptr(cx_result) killed = cx_test_run_cell(shared_backend(), stuck, options);
  CX_ASSERT_ERROR_TYPE(killed, "TimeoutError");
  CU_ASSERT_EQUAL(cx_test_processes_left_with(marker2, 1.0), 0);
}

static void
test_subprocess_no_zombies_no_leaked_fds(void)
{
  cx_backend *backend = shared_backend();
  g_autoptr(cx_result) warm = run("1"); /* the server runs */
  guint zombies;
  guint children_before = count_children(&zombies);
  guint fds_before = cx_test_count_open_fds();
  g_autoptr(cx_run_options) quick = cx_run_options_new();
  cx_run_options_set_timeout(quick, 0.2);
  const char *cells[] = {
    "print('ok')", "1/0", "import os; os._exit(1)", "import ctypes; ctypes.string_at(0)",
    "import time; time.sleep(3)", "import subprocess; subprocess.Popen(['true'])",
  };
  for (guint i = 0; i < G_N_ELEMENTS(cells); i++) {
    g_autoptr(cx_result) result = cx_test_run_cell(backend, cells[i], quick);
    g_autoptr(GError) error = NULL;
    cx_session *session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) in_session = cx_session_run_cell(session, cells[i], quick, &error);
    CX_ASSERT_NO_ERROR(error);
    cx_session_close(session);
  }
  CU_ASSERT_EQUAL(cx_test_count_open_fds(), fds_before);
  CU_ASSERT_EQUAL(count_children(&zombies), children_before);
  CU_ASSERT_EQUAL(zombies, 0);
}

/* ---- Interrupts -------------------------------------------------------------------- */

typedef struct {
  cx_backend *backend;
  cx_session *session;
  gboolean repeat;            /* every 300 ms (at most 200 times) until DONE */
  gint done;                  /* atomic */
} interrupt_target;

static gpointer
interrupt_later(gpointer data)
{
  interrupt_target *target = data;
  for (int i = 0; i < (target->repeat ? 200 : 1) && !g_atomic_int_get(&target->done); i++) {
    g_usleep(300 * 1000);
    g_autoptr(GError) error = NULL;
    if (target->session != NULL)
      cx_session_interrupt(target->session, &error);
    else
      cx_backend_interrupt(target->backend, &error);
  }
  return NULL;
}

static void
test_subprocess_interrupt_session_cell(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) set = session_run(session, "x = 41");
  CX_ASSERT_CELL_OK(set);

  interrupt_target target = { .session = session };
  GThread *thread = g_thread_new("interrupter", interrupt_later, &target);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) interrupted =
    session_run(session, "import time\nprint('waiting')\ntime.sleep(10)");
  g_thread_join(thread);
  CX_ASSERT_ERROR_TYPE(interrupted, "KeyboardInterrupt");
  CX_ASSERT_STDOUT(interrupted, "waiting\n");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 9); /* the cell would sleep 10 s */

  /* The session survived, and an interrupt while idle does nothing. */
  CU_ASSERT_TRUE(cx_session_interrupt(session, &error));
  g_autoptr(cx_result) after = session_run(session, "x + 1");
  CX_ASSERT_CELL_OK(after);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(after, 0), "text/plain"), "42");
  CU_ASSERT_PTR_NULL(cx_result_get_extra(after, "session_restarted"));
}

/* A session cell that ignores SIGINT is killed interrupt-grace (1 s by
 * default) after its interrupt, instead of holding its caller for ever;
 * the session goes on in a fresh process. */
static void
test_subprocess_a_session_cell_that_ignores_its_interrupt_is_killed(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  /* Again and again: the first that finds the cell running counts. */
  interrupt_target target = { .session = session, .repeat = TRUE };
  GThread *thread = g_thread_new("interrupter", interrupt_later, &target);
  g_autoptr(cx_result) killed = session_run(session,
    "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "for _ in range(300): time.sleep(0.1)");
  g_atomic_int_set(&target.done, 1);
  g_thread_join(thread);
  CX_ASSERT_ERROR_TYPE(killed, CX_ERROR_TYPE_WORKER_CRASHED);
  CX_ASSERT_CONTAINS(cx_result_get_error_message(killed), "interrupt-grace");
  g_autoptr(cx_result) after = session_run(session, "print('fresh')");
  CX_ASSERT_STDOUT(after, "fresh\n");
}

static void
test_subprocess_interrupt_stateless_cell(void)
{
  interrupt_target target = { .backend = shared_backend() };
  GThread *thread = g_thread_new("interrupter", interrupt_later, &target);
  g_autoptr(cx_result) result = run("import time; time.sleep(10)");
  g_thread_join(thread);
  CX_ASSERT_ERROR_TYPE(result, "KeyboardInterrupt");
}

/* ---- Sessions ---------------------------------------------------------------------- */

static void
test_subprocess_input_asks_the_callback(void)
{
  cx_test_check_input(shared_backend(), TRUE);
}

/* A NUL byte in the code: Python's own ValueError, nothing run. */
static void
test_subprocess_code_with_nul_fails_as_python_fails(void)
{
  cx_test_check_nul_in_code(shared_backend());
}

/* store_history = FALSE, as a kernel runs a comm's handler. */
static void
test_subprocess_unstored_cell_keeps_the_history(void)
{
  cx_test_check_unstored_cells(shared_backend());
}

/* A cell that crashes its process is numbered by the host as the worker
 * numbers cells: those kept out of the history (a kernel's comm handlers)
 * take no number. */
static void
test_subprocess_crashed_cell_after_unstored_ones_keeps_its_number(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_run_options) unstored = cx_run_options_new();
  cx_run_options_set_store_history(unstored, FALSE);
  for (int i = 0; i < 2; i++) {
    g_autoptr(cx_result) handler = cx_session_run_cell(session, "pass", unstored, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  g_autoptr(cx_result) crashed = session_run(session, "import os; os._exit(3)");
  CX_ASSERT_ERROR_TYPE(crashed, "WorkerCrashed");
  JsonNode *count = cx_result_get_extra(crashed, "execution_count");
  CU_ASSERT_TRUE(count != NULL && json_node_get_int(count) == 1);
}

/* Answered in the session's process, on its namespace (tests/cx_test_main.c). */
static void
test_subprocess_session_answers_jupyter_requests(void)
{
  cx_test_check_session_requests(shared_backend(), TRUE);
}

static void
test_subprocess_session_keeps_state_and_survives_crashes(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) first = session_run(session, "import os\nx = 1\nos.getpid()");
  g_autoptr(cx_result) second = session_run(session, "x += 1\nprint(x)\nos.getpid()");
  CX_ASSERT_CELL_OK(second);
  CX_ASSERT_STDOUT(second, "2\n");
  /* One dedicated process. */
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(first, 0), "text/plain"),
                         json_object_get_string_member(cx_result_get_output(second, 0), "text/plain"));

  g_autoptr(cx_result) crashed = session_run(session, "print('bye')\nimport os; os.abort()");
  CX_ASSERT_ERROR_TYPE(crashed, "WorkerCrashed");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(crashed), "SIGABRT");
  CX_ASSERT_STDOUT(crashed, "bye\n");
  /* What every bundle has, though the process died before sending it:
   * the third cell of this process, and how long it ran. */
  JsonNode *count = cx_result_get_extra(crashed, "execution_count");
  CU_ASSERT_TRUE(count != NULL && json_node_get_int(count) == 3);
  JsonNode *duration = cx_result_get_extra(crashed, "duration_ms");
  CU_ASSERT_TRUE(duration != NULL && json_node_get_double(duration) > 0);

  /* A new process, with a clean namespace, and the result says so. */
  g_autoptr(cx_result) restarted = session_run(session, "'x' in globals()");
  CX_ASSERT_CELL_OK(restarted);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(restarted, 0), "text/plain"), "False");
  CU_ASSERT_PTR_NOT_NULL(cx_result_get_extra(restarted, "session_restarted"));

  /* A request that revives the session between a crash and the next cell
   * (a front end completing as the user types) does not swallow the news. */
  g_autoptr(cx_result) crashed_again = session_run(session, "y = 1\nimport os; os._exit(3)");
  CX_ASSERT_ERROR_TYPE(crashed_again, "WorkerCrashed");
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "code", "1 +");
  g_autoptr(JsonObject) answer = cx_session_request(session, "is_complete_request", content, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) told = session_run(session, "'y' in globals()");
  CX_ASSERT_CELL_OK(told);
  CU_ASSERT_PTR_NOT_NULL(cx_result_get_extra(told, "session_restarted"));
  g_autoptr(cx_result) later = session_run(session, "1");
  CU_ASSERT_PTR_NULL(cx_result_get_extra(later, "session_restarted"));
}

/* ---- Crashes ----------------------------------------------------------------------- */

static void
test_subprocess_crashes_are_results(void)
{
  static const struct { const char *code, *signal_or_status; } crashes[] = {
    { "print('before')\nimport ctypes\nctypes.string_at(0)", "SIGSEGV" },
    { "print('before')\nimport os\nos._exit(3)", "status 3" },
    { "print('before')\nimport os, signal\nos.kill(os.getpid(), signal.SIGTERM)", "SIGTERM" },
    /* SIGKILL cannot be caught: output reaches the host only as it is
     * streamed, every 20 ms. */
    { "print('before')\nimport os, signal, time\ntime.sleep(0.1)\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL" },
    { "print('before')\nimport os\nos.abort()", "SIGABRT" },
  };
  for (guint i = 0; i < G_N_ELEMENTS(crashes); i++) {
    g_autoptr(cx_result) result = run(crashes[i].code);
    CX_ASSERT_ERROR_TYPE(result, "WorkerCrashed");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(result), crashes[i].signal_or_status);
    CX_ASSERT_STDOUT(result, "before\n");
    g_autoptr(cx_result) next = run("print('next')");
    CX_ASSERT_STDOUT(next, "next\n");
  }
}

static void
test_subprocess_fork_in_cell_uses_real_exit(void)
{
  /* The classic fork idiom: the child's os._exit must end the child only. */
  g_autoptr(cx_result) result =
    run("import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
        "_, status = os.waitpid(pid, 0)\nprint(os.waitstatus_to_exitcode(status))");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "7\n");
}

static void
test_subprocess_respawns_dead_server(void)
{
  g_autoptr(cx_backend) backend = open_with(NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  gint64 server = json_object_get_int_member(json_node_get_object(info), "server_pid");
  CU_ASSERT_TRUE_FATAL(server > 1);
  kill((pid_t)server, SIGKILL);
  g_usleep(50 * 1000);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('alive')", NULL);
  CX_ASSERT_STDOUT(result, "alive\n");
  g_autoptr(JsonNode) again = cx_backend_query(backend, "info", &error);
  CU_ASSERT_NOT_EQUAL(json_object_get_int_member(json_node_get_object(again), "server_pid"), server);
}

static void
test_subprocess_malformed_frames_are_contained(void)
{
  /* Garbage, then a frame cut short, on the cell's own channel (fd 3). */
  g_autoptr(cx_result) garbage =
    run("import os\nprint('before', flush=True)\nos.write(3, b'\\xff\\xff\\xff\\xffjunk')\n"
        "import time; time.sleep(5)");
  CX_ASSERT_ERROR_TYPE(garbage, "WorkerCrashed");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(garbage), "protocol");
  g_autoptr(cx_result) truncated =
    run("import os\nos.write(3, b'\\x00\\x00\\x01\\x00Ohalf')\nos._exit(0)");
  CX_ASSERT_ERROR_TYPE(truncated, "WorkerCrashed");
  g_autoptr(cx_result) unknown = run("import os\nos.write(3, b'\\x00\\x00\\x00\\x00?')\nimport time; time.sleep(5)");
  CX_ASSERT_ERROR_TYPE(unknown, "WorkerCrashed");
  g_autoptr(cx_result) next = run("print('fine')");
  CX_ASSERT_STDOUT(next, "fine\n");
}

/* ---- Limits ------------------------------------------------------------------------ */

static void
test_subprocess_memory_limit(void)
{
  /* AddressSanitizer reserves terabytes of address space for its shadow
   * memory: an instrumented worker cannot start under RLIMIT_AS at all.
   * The plain build runs this test. */
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  g_autoptr(cx_backend) backend = open_with("memory-limit", "1G", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "x = bytearray(3 * 1024**3)", NULL);
  CX_ASSERT_ERROR_TYPE(result, "MemoryError");
  g_autoptr(cx_result) fits = cx_test_run_cell(backend, "x = bytearray(64 * 1024**2); print(len(x))", NULL);
  CX_ASSERT_CELL_OK(fits);
}

/* A forged DISPLAY frame of 20 million empty arrays (60 MB): json-glib's
 * tree of it took 2.4 GB, and `cellexec run` aborted (GLib aborts when an
 * allocation fails; here under a 1.5 GB cap).  Now the cell ends with
 * OutputLimitExceeded, in one line, and the host exits as for any failed
 * cell.  (test_adversarial's huge_wide_display_frame runs the next cell.) */
static void
test_subprocess_wide_display_does_not_abort_the_host(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *cell = cx_test_write_file(
    dir, "wide.py",
    "import os, struct, time\n"
    "payload = b'{\"event\": \"display\", \"data\": {\"application/json\": [' + "
    "b'[],' * (20 * 10**6) + b'[]]}}'\n"
    "frame = struct.pack('>IB', len(payload), ord('P')) + payload\n"
    "del payload\n"
    "while frame:\n    frame = frame[os.write(3, frame):]\n"
    "time.sleep(5)\n");
  g_auto(cx_test_cli_run) run =
    cx_test_cellexec_capped(1500u << 20, "run", "-b", "subprocess", cell, NULL);
  CU_ASSERT_EQUAL(run.status, 1);
  CX_ASSERT_CONTAINS(run.err, "\nOutputLimitExceeded: the cell's DISPLAY message is too large "
                              "to read: JSON of more than 1000000 values");
}

static void
test_subprocess_cpu_limit(void)
{
  g_autoptr(cx_backend) backend = open_with("cpu-limit", "1", NULL);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('spinning', flush=True)\nwhile True:\n    pass", NULL);
  CX_ASSERT_ERROR_TYPE(result, "CPUTimeExceeded");
  CX_ASSERT_STDOUT(result, "spinning\n");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 20); /* a hang guard, not a timing */

  /* In a session, each cell gets its own second. */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  for (int i = 0; i < 2; i++) {
    g_autoptr(cx_result) busy =
      session_run(session, "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6:\n    pass");
    CX_ASSERT_CELL_OK(busy);
  }
}

static void
test_subprocess_process_and_file_size_limits(void)
{
  g_autoptr(cx_backend) backend = open_with("max-processes", "1", "file-size-limit", "1K", NULL);
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_cwd(options, dir);
  g_autoptr(cx_result) big_file =
    cx_test_run_cell(backend, "with open('big', 'wb') as f:\n    f.write(b'x' * 10000)", options);
  CX_ASSERT_ERROR_TYPE(big_file, "OSError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(big_file), "File too large");

  if (geteuid() != 0) { /* root is not bound by RLIMIT_NPROC */
    g_autoptr(cx_result) forked = cx_test_run_cell(backend, "import subprocess\nsubprocess.run(['true'])", NULL);
    CX_ASSERT_ERROR_TYPE(forked, "BlockingIOError");
  }
}

static void
test_subprocess_output_limit_keeps_head_and_tail(void)
{
  g_autoptr(cx_backend) backend = open_with("output-limit", "1K", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "print('HEAD')\nfor i in range(3000):\n    print('line', i)\nprint('TAIL')", NULL);
  CX_ASSERT_CELL_OK(result);
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "HEAD\nline 0\n"));
  CU_ASSERT_TRUE(g_str_has_suffix(out, "line 2999\nTAIL\n"));
  CX_ASSERT_CONTAINS(out, "bytes omitted");
  CU_ASSERT_TRUE(len < 1024 + 100);
  JsonNode *truncated = cx_result_get_extra(result, "truncated");
  CU_ASSERT_TRUE_FATAL(truncated != NULL && JSON_NODE_HOLDS_OBJECT(truncated));
  JsonObject *detail = json_object_get_object_member(json_node_get_object(truncated), "stdout");
  CU_ASSERT_TRUE(json_object_get_int_member(detail, "total_bytes") > 20000);
  CU_ASSERT_TRUE(json_object_get_int_member(detail, "omitted_bytes") > 19000);

  /* A cell that prints forever is stopped, its output still bounded. */
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) forever = cx_test_run_cell(backend, "while True:\n    print('x' * 100)", NULL);
  CX_ASSERT_ERROR_TYPE(forever, "OutputLimitExceeded");
  cx_result_get_stdout(forever, &len);
  CU_ASSERT_TRUE(len < 1024 + 100);
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 20); /* a hang guard, not a timing */
}

/* ---- Modes, concurrency, configuration ----------------------------------------------- */

static void
test_subprocess_spawn_mode(void)
{
  g_autoptr(cx_backend) backend = open_with("mode", "spawn", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "import sys\nprint('math' in sys.modules)\n2 * 21", NULL);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "True\n"); /* warmed, as a fork server's */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) set = session_run(session, "y = 5");
  g_autoptr(cx_result) get = session_run(session, "print(y)");
  CX_ASSERT_STDOUT(get, "5\n");
}

static gpointer
run_many(gpointer data)
{
  guint failures = 0;
  for (int i = 0; i < 20; i++) {
    g_autofree char *code = g_strdup_printf("print(%d)", i);
    g_autofree char *expected = g_strdup_printf("%d\n", i);
    g_autoptr(cx_result) result = cx_backend_run_cell(data, code, NULL, NULL);
    if (result == NULL || strcmp(cx_result_get_stdout(result, NULL), expected) != 0)
      failures++;
  }
  return GUINT_TO_POINTER(failures);
}

static void
test_subprocess_concurrent_callers(void)
{
  GThread *threads[3];
  for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
    threads[i] = g_thread_new("caller", run_many, shared_backend());
  for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
    CU_ASSERT_EQUAL(GPOINTER_TO_UINT(g_thread_join(threads[i])), 0);
}

static cx_backend *
open_expecting_error(GError **error, const char *key, const char *value)
{
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), "subprocess", NULL);
  cx_options *options = cx_options_new("subprocess", cx_plugin_info_get_options(info));
  g_assert(cx_options_set(options, key, value, NULL));
  return cx_backend_open(cx_test_registry(), "subprocess", options, error);
}

static void
test_subprocess_bad_configuration(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) missing = open_expecting_error(&error, "worker", "/no/such/cellexec-worker");
  CU_ASSERT_PTR_NULL(missing);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "/no/such/cellexec-worker");
  g_clear_error(&error);

  g_autoptr(cx_backend) not_a_worker = open_expecting_error(&error, "worker", "/bin/true");
  CU_ASSERT_PTR_NULL(not_a_worker);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  g_clear_error(&error);

  g_autoptr(cx_backend) bad_mode = open_expecting_error(&error, "mode", "threads");
  CU_ASSERT_PTR_NULL(bad_mode);
  /* The plugin's own code survives the core's wrapping (it was BACKEND). */
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CX_ASSERT_CONTAINS(error->message, "mode must be");
  g_clear_error(&error);

  /* Module names reach Python's source: nothing else may. */
  g_autoptr(cx_backend) bad_preload = open_expecting_error(&error, "preload", "os');import x#");
  CU_ASSERT_PTR_NULL(bad_preload);
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CX_ASSERT_CONTAINS(error->message, "is not a module name");
}

static void
test_subprocess_preload_imports_before_forking(void)
{
  static const char *const cell =
    "import sys\n'IPython' in sys.modules, 'wave' in sys.modules, 'threading' in sys.modules";
  /* By default nothing more: plain cells fork from a small process.  Not
   * even threading, whose at-fork handler would run in every cell process
   * (bench/README.md); threads are still tagged with their cell once a
   * cell imports it (test_local_thread_output_after_its_cell_goes_nowhere). */
  g_autoptr(cx_result) plain = run(cell);
  CX_ASSERT_CELL_OK(plain);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(plain, 0),
                                                       "text/plain"), "(False, False, False)");
  /* IPython is there before the cell runs, its shell ready; a module that
   * is not installed is skipped. */
  g_autoptr(cx_backend) other = open_with("preload", " IPython, wave , no_such_module_here", NULL);
  g_autoptr(cx_result) chosen = cx_test_run_cell(other, cell, NULL);
  CX_ASSERT_CELL_OK(chosen);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(chosen, 0),
                                                       "text/plain"), "(True, True, True)");
  g_autoptr(cx_result) shell = cx_test_run_cell(other, "get_ipython().__class__.__name__", NULL);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(shell, 0),
                                                       "text/plain"), "'InteractiveShell'");
}

/* ---- The local backend's use_subprocess ------------------------------------------- */

static void
test_local_use_subprocess_runs_on_this_backend(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) local = cx_backend_open(cx_test_registry(), "local", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_use_subprocess(options, TRUE);
  cx_run_options_set_timeout(options, 1.0);

  g_autofree char *host_pid = g_strdup_printf("%d\n", getpid());
  g_autoptr(cx_result) pid = cx_test_run_cell(local, "import os; print(os.getpid())\n1 + 1", options);
  CX_ASSERT_CELL_OK(pid);
  CU_ASSERT_STRING_NOT_EQUAL(cx_result_get_stdout(pid, NULL), host_pid);
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(pid), 1);

  /* A hard timeout, even for a cell that ignores SIGINT, and a crash that
   * costs the host nothing. */
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) stuck = cx_test_run_cell(local,
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", options);
  CX_ASSERT_ERROR_TYPE(stuck, "TimeoutError");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 1.0 + 5); /* a hang guard */
  g_autoptr(cx_result) crashed = cx_test_run_cell(local, "import ctypes; ctypes.string_at(0)", options);
  CX_ASSERT_ERROR_TYPE(crashed, "WorkerCrashed");
}

typedef struct {
  cx_backend *backend;
  cx_result *result;
} stateless_job;

static gpointer
run_stateless_job(gpointer data)
{
  stateless_job *job = data;
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 10);
  job->result = cx_backend_run_cell(job->backend, "import time\nwhile True:\n    time.sleep(0.01)",
                                    run, NULL);
  return NULL;
}

/* An interrupt that comes after the call began but before its process said
 * it started: before, it found no pid and was lost, and the cell ran on
 * to its timeout. */
static void
test_subprocess_interrupt_before_the_cell_starts_is_kept(void)
{
  g_autoptr(cx_backend) backend = open_with(NULL);
  stateless_job job = { backend, NULL };
  GThread *thread = g_thread_new("cell", run_stateless_job, &job);
  for (gint64 running = 0; running == 0;) {
    g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
    running = json_object_get_int_member(json_node_get_object(info), "running_cells");
  }
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_backend_interrupt(backend, &error)); /* once */
  g_thread_join(thread);
  g_autoptr(cx_result) result = job.result;
  CX_ASSERT_ERROR_TYPE(result, "KeyboardInterrupt");
}

/* The core serves use_subprocess for a plugin that does not (echo would
 * print the code): the cell runs on the subprocess backend. */
static void
test_core_routes_use_subprocess_of_any_backend(void)
{
  const char *const search[] = { cx_test_plugins_dir(), cx_test_case_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) echo = cx_backend_open(registry, "echo", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_use_subprocess(options, TRUE);
  g_autoptr(cx_result) result = cx_test_run_cell(echo, "import os; print(os.getpid())", options);
  CX_ASSERT_CELL_OK(result);
  g_autofree char *host_pid = g_strdup_printf("%d\n", getpid());
  const char *out = cx_result_get_stdout(result, NULL);
  CU_ASSERT_TRUE(g_ascii_isdigit(out[0]));
  CU_ASSERT_STRING_NOT_EQUAL(out, host_pid);
}

/* [cellexec] use-subprocess-backend chooses the target, with the config's
 * options for it; a name that cannot be opened is a clear error. */
static void
test_config_chooses_the_use_subprocess_backend(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *text = g_strdup_printf("[cellexec]\nbackend = local\nplugin-path = %s\n"
                                          "use-subprocess-backend = echo\n[echo]\ncount = 7\n",
                                          cx_test_case_plugins_dir());
  g_autofree char *path = cx_test_write_file(dir, "config", text);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) local = cx_backend_open_configured(path, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_use_subprocess(options, TRUE);
  g_autoptr(cx_result) result = cx_test_run_cell(local, "x = 1", options);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_CONTAINS(cx_result_get_stdout(result, NULL), "x = 1\n");
  CX_ASSERT_CONTAINS(cx_result_get_stdout(result, NULL), "\"use_subprocess\":false");
  g_autoptr(JsonNode) json = cx_result_to_json_node(result);
  g_autofree char *text_out = json_to_string(json, FALSE);
  CX_ASSERT_CONTAINS(text_out, "count=7");

  g_autofree char *bad = g_strdup_printf("[cellexec]\nbackend = local\n"
                                         "use-subprocess-backend = nosuch\n");
  g_autofree char *bad_path = cx_test_write_file(dir, "bad", bad);
  g_autoptr(cx_backend) local2 = cx_backend_open_configured(bad_path, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) none = cx_backend_run_cell(local2, "x = 1", options, &error);
  CU_ASSERT_PTR_NULL(none);
  CX_ASSERT_ERROR(error, CX_ERROR_NOT_FOUND);
  CX_ASSERT_CONTAINS(error->message, "use-subprocess-backend");
  CX_ASSERT_CONTAINS(error->message, "'nosuch'");
}

/* ---- Executor operations (the shared cases are in test_executor.c) ------------------- */

static cx_env *
executor_prelude(cx_session *session, const char *code)
{
  g_autoptr(GError) error = NULL;
  cx_env *env = cx_session_execute_prelude(session, code, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(env);
  return env;
}

static void
test_subprocess_executor_envs_live_in_the_session_process(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) cell = session_run(session, "import os\nos.getpid()");
  g_autoptr(cx_env) env = executor_prelude(session, "import os");
  g_autoptr(JsonNode) pid = cx_env_evaluate_inline(env, "os.getpid()", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(pid));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(cell, 0), "text/plain"), text);
  CU_ASSERT_NOT_EQUAL(json_node_get_int(pid), getpid());
}

static void
count_destroyed(gpointer data)
{
  (*(int *)data)++;
}

static JsonNode *
never_called(JsonObject *arguments, gpointer user_data, GError **error)
{
  return NULL;
}

static void
test_subprocess_executor_worker_death_fails_clearly(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  int destroyed = 0;
  cx_env *env = executor_prelude(session, "import os\nx = 1");
  const char *const params[] = { NULL };
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "f", params, NULL, never_called, &destroyed,
                                                count_destroyed, NULL));

  gint64 start = g_get_monotonic_time();
  JsonNode *value = cx_env_evaluate_inline(env, "os._exit(3)", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "the session's worker died");
  CX_ASSERT_CONTAINS(error->message, "exited with status 3");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 20); /* a hang guard, not a timing */
  g_clear_error(&error);

  /* Its environments went with it, and say so. */
  value = cx_env_evaluate_inline(env, "x", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "died");
  g_clear_error(&error);
  cx_env_free(env);
  CU_ASSERT_EQUAL(destroyed, 1);

  /* The session goes on in a new process. */
  g_autoptr(cx_env) fresh = executor_prelude(session, "y = 2");
  g_autoptr(JsonNode) names = cx_env_evaluate_inline(fresh, "['x' in globals(), y]", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *text = json_to_string(names, FALSE);
  CU_ASSERT_STRING_EQUAL(text, "[false,2]");
  g_autoptr(cx_result) cell = session_run(session, "print(1 + 1)");
  CX_ASSERT_STDOUT(cell, "2\n");
}

typedef struct {
  cx_env *env;
  GError *nested_error;
} crash_state;

/* A host function whose call back into the session kills its process. */
static JsonNode *
crash_from_host(JsonObject *arguments, gpointer user_data, GError **error)
{
  crash_state *state = user_data;
  JsonNode *value = cx_env_evaluate_inline(state->env, "os.kill(os.getpid(), 9)", NULL,
                                           &state->nested_error);
  if (value == NULL)
    g_set_error_literal(error, CX_ERROR, CX_ERROR_FAILED, state->nested_error->message);
  return value;
}

static void
test_subprocess_executor_death_in_a_nested_call(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_env) env = executor_prelude(session, "import os");
  crash_state state = { env, NULL };
  const char *const params[] = { NULL };
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "crash", params, NULL, crash_from_host,
                                                &state, NULL, NULL));
  JsonNode *value = cx_env_evaluate_inline(env, "crash()", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "the session's worker died");
  CX_ASSERT_ERROR(state.nested_error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(state.nested_error->message, "SIGKILL");
  g_clear_error(&state.nested_error);
  g_autoptr(cx_result) cell = session_run(session, "print('again')");
  CX_ASSERT_STDOUT(cell, "again\n");
}

/* A host function that runs a cell of the session it was called from. */
static JsonNode *
run_cell_from_host(JsonObject *arguments, gpointer user_data, GError **error)
{
  g_autoptr(cx_result) result = cx_session_run_cell(user_data, "print(40 + 2)", NULL, error);
  if (result == NULL)
    return NULL;
  return json_node_init_string(json_node_alloc(), cx_result_get_stdout(result, NULL));
}

static void
test_subprocess_executor_host_function_may_run_a_cell(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_env) env = executor_prelude(session, "");
  const char *const params[] = { NULL };
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "cell", params, NULL, run_cell_from_host,
                                                session, NULL, NULL));
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "cell().strip() + '!'", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(json_node_get_string(value), "42!");
}

static void
test_subprocess_executor_in_spawn_mode(void)
{
  g_autoptr(cx_backend) backend = open_with("mode", "spawn", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_env) env = executor_prelude(session, "base = 20");
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "base + n", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  g_clear_error(&error);
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_int_member(locals, "n", 22);
  g_autoptr(JsonNode) sum = cx_env_evaluate_inline(env, "base + n", locals, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(json_node_get_int(sum), 42);
}

/* ---- File descriptors 1 and 2 ----------------------------------------------------- */

static void
test_subprocess_captures_fd_output_in_order(void)
{
  g_autoptr(cx_result) result = run(
    "import os, sys, ctypes, subprocess\nlibc = ctypes.CDLL(None)\nprint('a')\n"
    "os.system('echo b')\nprint('c')\nos.write(1, b'd\\n')\nsubprocess.run(['echo', 'e'])\n"
    "libc.printf(b'f\\n')\nlibc.fflush(None)\nprint('g')\n"
    "os.write(2, b'x\\n')\nprint('y', file=sys.stderr)\nos.system('echo z >&2')");
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "a\nb\nc\nd\ne\nf\ng\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "x\ny\nz\n");
}

static void
test_subprocess_fd_floods_do_not_block(void)
{
  /* A child writing a megabyte while the cell waits, and a C write of more
   * than a pipe holds made with the GIL held (ctypes.PyDLL). */
  g_autoptr(cx_backend) backend = open_with("timeout", "20", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "import ctypes, subprocess\nsubprocess.run(['sh', '-c', 'yes | head -c 1048576'])\n"
    "data = b'z' * 300000\nctypes.PyDLL(None).write(1, data, len(data))\nprint('done')", NULL);
  CX_ASSERT_CELL_OK(result);
  gsize length;
  const char *out = cx_result_get_stdout(result, &length);
  CU_ASSERT_EQUAL(length, 1048576 + 300000 + 5);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "y\ny\n"));
  CU_ASSERT_TRUE(length > 1048576 && memcmp(out + 1048576 - 2, "y\nzzz", 5) == 0);
  CU_ASSERT_TRUE(g_str_has_suffix(out, "zzzzdone\n"));
}

static void
test_subprocess_fd_output_streams_before_a_kill(void)
{
  /* Killed at its deadline (SIGINT ignored): what reached fds 1 and 2 was
   * streamed before, as print() output is.  (3 s: on a loaded machine a
   * sandboxed cell has taken over 1 s to reach its first write.) */
  g_autoptr(cx_backend) backend = open_with("timeout", "3", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "import os, signal, subprocess\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "os.write(1, b'early\\n')\nsubprocess.run(['echo', 'child'])\nos.write(2, b'err\\n')\n"
    "while True:\n    pass", NULL);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_STDOUT(result, "early\nchild\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(result, NULL), "err\n");

  /* os._exit() does not lose what was written just before. */
  g_autoptr(cx_result) exited = run("import os\nos.write(1, b'bye\\n')\nos._exit(3)");
  CX_ASSERT_ERROR_TYPE(exited, "WorkerCrashed");
  CX_ASSERT_STDOUT(exited, "bye\n");
}

static void
test_subprocess_fd_output_after_a_session_cell_is_dropped(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *marker = g_build_filename(dir, "written", NULL);
  g_autofree char *code = g_strdup_printf(
    "import os, subprocess\nos.write(1, b'first\\n')\n"
    "p = subprocess.Popen(['sh', '-c', 'sleep 0.1; echo late; touch %s'])", marker);
  g_autoptr(cx_result) first = session_run(session, code);
  CX_ASSERT_STDOUT(first, "first\n");
  /* Wait until "late" has been written, between the cells. */
  CU_ASSERT_TRUE(cx_test_wait_for_file(marker));
  g_autoptr(cx_result) second = session_run(session, "os.write(1, b'second\\n')\np.wait()");
  CX_ASSERT_CELL_OK(second);
  CX_ASSERT_STDOUT(second, "second\n");
}

static void
test_subprocess_fd_output_never_reaches_the_hosts_fds(void)
{
  /* The worker inherits the host's fds 1 and 2: point them at files while
   * it starts and runs cells. */
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "host-output", NULL);
  fflush(NULL);
  int file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int saved_out = dup(1), saved_err = dup(2);
  CU_ASSERT_TRUE_FATAL(file >= 0 && saved_out >= 0 && saved_err >= 0);
  dup2(file, 1);
  dup2(file, 2);
  close(file);
  cx_backend *backend = open_with("timeout", "60", NULL);
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(backend, &error);
  cx_result *stateless = cx_backend_run_cell(backend,
    "import os\nos.system('echo one; echo two >&2')\nos.write(1, b'three\\n')", NULL, &error);
  cx_result *in_session = session != NULL
    ? cx_session_run_cell(session, "import os\nos.write(2, b'four\\n')", NULL, &error) : NULL;
  cx_session_close(session);
  cx_backend_free(backend);
  fflush(NULL);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);

  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(stateless);
  CU_ASSERT_PTR_NOT_NULL_FATAL(in_session);
  CX_ASSERT_STDOUT(stateless, "one\nthree\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(stateless, NULL), "two\n");
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(in_session, NULL), "four\n");
  cx_result_free(stateless);
  cx_result_free(in_session);
  g_autofree char *host_output = NULL;
  g_file_get_contents(path, &host_output, NULL, NULL);
  if (host_output != NULL && host_output[0] != '\0')
    fprintf(stderr, "\n  reached the host's fds: \"%s\"\n", host_output);
  CU_ASSERT_STRING_EQUAL(host_output, "");
}

/* ---- Small output limits, non-UTF-8 code ----------------------------------------------- */

static void
test_subprocess_tiny_output_limits_are_marked(void)
{
  const char *limits[] = { "1", "2", "3" };
  for (guint i = 0; i < G_N_ELEMENTS(limits); i++) {
    g_autoptr(cx_backend) backend = open_with("output-limit", limits[i], NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('hello world')", NULL);
    CX_ASSERT_CELL_OK(result);
    const char *out = cx_result_get_stdout(result, NULL);
    CU_ASSERT_TRUE(g_str_has_prefix(out, "h"));
    CX_ASSERT_CONTAINS(out, "bytes omitted");
    JsonNode *truncated = cx_result_get_extra(result, "truncated");
    CU_ASSERT_TRUE_FATAL(truncated != NULL && JSON_NODE_HOLDS_OBJECT(truncated));
    JsonObject *detail = json_object_get_object_member(json_node_get_object(truncated), "stdout");
    CU_ASSERT_PTR_NOT_NULL_FATAL(detail);
    CU_ASSERT_EQUAL(json_object_get_int_member(detail, "total_bytes"), 12);
    CU_ASSERT_EQUAL(json_object_get_int_member(detail, "omitted_bytes"),
                    12 - (gint64)atoi(limits[i]));
  }
}

static void
test_subprocess_non_utf8_code_fails_as_on_local(void)
{
  const char *code = "x = 1\ny = '\xff'\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) local = cx_backend_open(cx_test_registry(), "local", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) expected = cx_test_run_cell(local, code, NULL);
  CX_ASSERT_ERROR_TYPE(expected, "SyntaxError");

  g_autoptr(cx_result) stateless = run(code);
  CX_ASSERT_ERROR_TYPE(stateless, "SyntaxError");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(stateless),
                         cx_result_get_error_message(expected));
  /* Nothing of the spare's warm-up cell comes with it. */
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(stateless), 0);

  /* In a session, the same error, and the session keeps its state. */
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) set = session_run(session, "kept = 42\ndisplay(kept)");
  CX_ASSERT_CELL_OK(set);
  g_autoptr(cx_result) bad = session_run(session, code);
  CX_ASSERT_ERROR_TYPE(bad, "SyntaxError");
  /* Nor the display of the cell before it. */
  CU_ASSERT_EQUAL(cx_result_get_n_outputs(bad), 0);
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(bad), cx_result_get_error_message(expected));
  g_autoptr(cx_result) after = session_run(session, "print(kept)");
  CX_ASSERT_STDOUT(after, "42\n");
  CU_ASSERT_PTR_NULL(cx_result_get_extra(after, "session_restarted"));
}

static void
test_subprocess_stopped_server_is_replaced(void)
{
  if (sandboxed())
    return; /* no cell reaches the server in the sandbox (tests/test_sandbox.c) */
  g_autoptr(cx_backend) backend = open_with(NULL, NULL);
  g_autoptr(cx_result) stop = cx_test_run_cell(backend,
    "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nprint('stopped it')", NULL);
  CX_ASSERT_STDOUT(stop, "stopped it\n");
  /* No timeout: a hang here is the defect. */
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) next = cx_test_run_cell(backend, "print('next')", NULL);
  CX_ASSERT_STDOUT(next, "next\n");
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 5.0);
  g_autoptr(cx_result) timed = cx_test_run_cell(backend, "print('timed')", options);
  CX_ASSERT_STDOUT(timed, "timed\n");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 10);

  /* Stopped while a cell waits for it (the request already sent). */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) later = session_run(session,
    "import os, signal, threading\n"
    "threading.Timer(0.3, os.kill, (os.getppid(), signal.SIGSTOP)).start()");
  CX_ASSERT_CELL_OK(later);
  g_usleep(600 * 1000);
  start = g_get_monotonic_time();
  g_autoptr(cx_result) after = cx_test_run_cell(backend, "print('after')", NULL);
  CX_ASSERT_STDOUT(after, "after\n");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 10);

  /* A session opened on a stopped server gets a new one. */
  g_autoptr(cx_result) again = cx_test_run_cell(backend,
    "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)", NULL);
  CX_ASSERT_CELL_OK(again);
  start = g_get_monotonic_time();
  g_autoptr(cx_session) second = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(second);
  g_autoptr(cx_result) in_session = session_run(second, "print('session')");
  CX_ASSERT_STDOUT(in_session, "session\n");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 10);
}

/* The entry of the "truncated" extra's list LIST about PART, or NULL. */
static JsonObject *
truncated_part(cx_result *result, const char *list, const char *part)
{
  JsonNode *truncated = cx_result_get_extra(result, "truncated");
  if (truncated == NULL || !JSON_NODE_HOLDS_OBJECT(truncated))
    return NULL;
  JsonNode *cuts = json_object_get_member(json_node_get_object(truncated), list);
  for (guint i = 0; cuts != NULL && JSON_NODE_HOLDS_ARRAY(cuts) &&
                    i < json_array_get_length(json_node_get_array(cuts)); i++) {
    JsonObject *cut = json_array_get_object_element(json_node_get_array(cuts), i);
    if (g_strcmp0(json_object_get_string_member_with_default(cut, "part", NULL), part) == 0)
      return cut;
  }
  return NULL;
}

static const char *
rich_text(cx_result *result, guint index, const char *mime)
{
  JsonObject *bundle = cx_result_get_output(result, index);
  return bundle != NULL ? json_object_get_string_member_with_default(bundle, mime, NULL) : NULL;
}

static void
test_subprocess_huge_results_are_bounded(void)
{
  /* A 70 MiB value: more than a frame carries.  In a session (no hang,
   * state kept), stateless (no crash), with a timeout (no false timeout). */
  const char *huge = "'x' * (70 * 1024 * 1024)";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(shared_backend(), &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) set = session_run(session, "kept = 7");
  g_autoptr(cx_result) value = session_run(session, huge);
  CX_ASSERT_CELL_OK(value);
  const char *text = rich_text(value, 0, "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT_TRUE(g_str_has_prefix(text, "'xxx"));
  CU_ASSERT_TRUE(g_str_has_suffix(text, "xxx'"));
  CX_ASSERT_CONTAINS(text, "bytes omitted");
  CU_ASSERT_TRUE(strlen(text) < 10 * 1024 * 1024 + 100);
  JsonObject *cut = truncated_part(value, "outputs", "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cut);
  CU_ASSERT_EQUAL(json_object_get_int_member(cut, "total_bytes"), 70 * 1024 * 1024 + 2);
  g_autoptr(cx_run_options) session_options = cx_run_options_new();
  cx_run_options_set_timeout(session_options, 60.0);
  g_autoptr(cx_result) timed_value = cx_session_run_cell(session, huge, session_options, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(timed_value);
  /* Code too long for a frame: a clear error, and nothing lost. */
  g_autofree char *long_code = g_strnfill(70 * 1024 * 1024, '#');
  g_autoptr(cx_result) not_sent = cx_session_run_cell(session, long_code, NULL, &error);
  CU_ASSERT_PTR_NULL(not_sent);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CX_ASSERT_CONTAINS(error->message, "too large");
  g_clear_error(&error);
  g_autoptr(cx_result) not_sent_either = cx_backend_run_cell(shared_backend(), long_code, NULL,
                                                             &error);
  CU_ASSERT_PTR_NULL(not_sent_either);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  g_clear_error(&error);
  g_autoptr(cx_result) after = session_run(session, "print(kept)");
  CX_ASSERT_STDOUT(after, "7\n");
  CU_ASSERT_PTR_NULL(cx_result_get_extra(after, "session_restarted"));

  g_autoptr(cx_result) stateless = run(huge);
  CX_ASSERT_CELL_OK(stateless);
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_timeout(options, 60.0);
  g_autoptr(cx_result) timed = cx_test_run_cell(shared_backend(), huge, options);
  CX_ASSERT_CELL_OK(timed);

  /* No limit at all: still not more than a frame carries. */
  g_autoptr(cx_backend) unlimited = open_with("output-limit", "0", NULL);
  g_autoptr(cx_result) whole = cx_test_run_cell(unlimited, huge, NULL);
  CX_ASSERT_CELL_OK(whole);
  CU_ASSERT_PTR_NOT_NULL(truncated_part(whole, "outputs", "text/plain"));
}

static void
test_subprocess_displays_and_errors_obey_output_limit(void)
{
  if (sandboxed() && g_getenv("CELLEXEC_SANITIZED") != NULL) {
    /* Its 70 MB strings, copied by ASan's allocator, pass the sandbox's
     * default 1 GiB; a memory-limit above it is also RLIMIT_AS, which
     * ASan's shadow memory exceeds. */
    cx_test_skip("under the sandbox in a sanitizer build: 1 GiB is too little for ASan here");
    return;
  }
  g_autoptr(cx_backend) backend = open_with("output-limit", "1K", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "from IPython.display import display\n"
    "display({'text/plain': 'head' + 'y' * (70 * 1024 * 1024) + 'tail'}, raw=True)\n"
    "display({'image/png': 'iVBO' * 1000, 'text/plain': '<image>'}, raw=True)\n"
    "display({'text/plain': 'small'}, raw=True)\n"
    "raise ValueError('start' + 'm' * (70 * 1024 * 1024) + 'end')", NULL);
  CX_ASSERT_ERROR_TYPE(result, "ValueError");
  const char *message = cx_result_get_error_message(result);
  CU_ASSERT_TRUE(g_str_has_prefix(message, "start"));
  CU_ASSERT_TRUE(g_str_has_suffix(message, "end"));
  CX_ASSERT_CONTAINS(message, "bytes omitted");
  CU_ASSERT_TRUE(strlen(message) < 1024 + 100);
  CU_ASSERT_TRUE(strlen(cx_result_get_error_traceback(result)) < 1024 + 100);
  CU_ASSERT_PTR_NOT_NULL(truncated_part(result, "error", "message"));
  CU_ASSERT_PTR_NOT_NULL(truncated_part(result, "error", "traceback"));

  const char *text = rich_text(result, 0, "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT_TRUE(g_str_has_prefix(text, "headyyy"));
  CU_ASSERT_TRUE(g_str_has_suffix(text, "yyytail"));
  CU_ASSERT_TRUE(strlen(text) < 1024 + 100);
  /* Base64 is not cut (that would corrupt it) but left out, and said so. */
  CU_ASSERT_PTR_NULL(rich_text(result, 1, "image/png"));
  const char *placeholder = rich_text(result, 1, "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(placeholder);
  CX_ASSERT_CONTAINS(placeholder, "image/png");
  JsonObject *image = truncated_part(result, "outputs", "image/png");
  CU_ASSERT_PTR_NOT_NULL_FATAL(image);
  CU_ASSERT_EQUAL(json_object_get_int_member(image, "omitted_bytes"), 4000);
  CU_ASSERT_STRING_EQUAL(rich_text(result, 2, "text/plain"), "small");

  /* A DISPLAY frame the cell writes to its channel itself is bounded too. */
  g_autoptr(cx_result) forged = cx_test_run_cell(backend,
    "import json, os, struct\n"
    "event = json.dumps({'event': 'display', 'data': {'text/plain': 'a' * 100000}}).encode()\n"
    "os.write(3, struct.pack('>I', len(event)) + b'P' + event)", NULL);
  CX_ASSERT_CELL_OK(forged);
  const char *forged_text = rich_text(forged, 0, "text/plain");
  CU_ASSERT_PTR_NOT_NULL_FATAL(forged_text);
  CX_ASSERT_CONTAINS(forged_text, "bytes omitted");
  CU_ASSERT_TRUE(strlen(forged_text) < 1024 + 400);
  CU_ASSERT_PTR_NOT_NULL(truncated_part(forged, "outputs", "text/plain"));
}

void
cx_test_register(void)
{
  /* The worker must behave the same whatever the host's Python settings. */
  g_setenv("PYTHONDONTWRITEBYTECODE", "1", TRUE);
  g_setenv("PYTHONUNBUFFERED", "1", TRUE);

  static const cx_test_case cells[] = {
    { "test_subprocess_runs_cells", test_subprocess_runs_cells },
    { "test_subprocess_input_asks_the_callback", test_subprocess_input_asks_the_callback },
    { "test_subprocess_unstored_cell_keeps_the_history", test_subprocess_unstored_cell_keeps_the_history },
    { "test_subprocess_code_with_nul_fails_as_python_fails",
      test_subprocess_code_with_nul_fails_as_python_fails },
    { "test_subprocess_crashed_cell_after_unstored_ones_keeps_its_number",
      test_subprocess_crashed_cell_after_unstored_ones_keeps_its_number },
    { "test_subprocess_session_answers_jupyter_requests",
      test_subprocess_session_answers_jupyter_requests },
    { "test_subprocess_output_bytes_and_rich_outputs", test_subprocess_output_bytes_and_rich_outputs },
    { "test_subprocess_output_between_cells_stays_out_of_the_hosts_stdout", test_subprocess_output_between_cells_stays_out_of_the_hosts_stdout },
    { "test_subprocess_runs_configured_python", test_subprocess_runs_configured_python },
    { "test_subprocess_cwd_and_env_apply_in_the_cell_only", test_subprocess_cwd_and_env_apply_in_the_cell_only },
    { "test_subprocess_environment_is_an_allowlist", test_subprocess_environment_is_an_allowlist },
    { NULL }
  };
  static const cx_test_case deadlines[] = {
    { "test_subprocess_timeout_interrupts_sleep", test_subprocess_timeout_interrupts_sleep },
    { "test_subprocess_timeout_kills_a_cell_ignoring_sigint", test_subprocess_timeout_kills_a_cell_ignoring_sigint },
    { "test_subprocess_leaves_no_process_behind", test_subprocess_leaves_no_process_behind },
    { "test_subprocess_no_zombies_no_leaked_fds", test_subprocess_no_zombies_no_leaked_fds },
    { "test_subprocess_interrupt_session_cell", test_subprocess_interrupt_session_cell },
    { "test_subprocess_a_session_cell_that_ignores_its_interrupt_is_killed",
      test_subprocess_a_session_cell_that_ignores_its_interrupt_is_killed },
    { "test_subprocess_interrupt_stateless_cell", test_subprocess_interrupt_stateless_cell },
    { NULL }
  };
  static const cx_test_case isolation[] = {
    { "test_subprocess_session_keeps_state_and_survives_crashes", test_subprocess_session_keeps_state_and_survives_crashes },
    { "test_subprocess_crashes_are_results", test_subprocess_crashes_are_results },
    { "test_subprocess_fork_in_cell_uses_real_exit", test_subprocess_fork_in_cell_uses_real_exit },
    { "test_subprocess_respawns_dead_server", test_subprocess_respawns_dead_server },
    { "test_subprocess_malformed_frames_are_contained", test_subprocess_malformed_frames_are_contained },
    { NULL }
  };
  static const cx_test_case limits[] = {
    { "test_subprocess_memory_limit", test_subprocess_memory_limit },
    { "test_subprocess_wide_display_does_not_abort_the_host",
      test_subprocess_wide_display_does_not_abort_the_host },
    { "test_subprocess_cpu_limit", test_subprocess_cpu_limit },
    { "test_subprocess_process_and_file_size_limits", test_subprocess_process_and_file_size_limits },
    { "test_subprocess_output_limit_keeps_head_and_tail", test_subprocess_output_limit_keeps_head_and_tail },
    { NULL }
  };
  static const cx_test_case modes[] = {
    { "test_subprocess_spawn_mode", test_subprocess_spawn_mode },
    { "test_subprocess_concurrent_callers", test_subprocess_concurrent_callers },
    { "test_subprocess_bad_configuration", test_subprocess_bad_configuration },
    { "test_subprocess_preload_imports_before_forking", test_subprocess_preload_imports_before_forking },
    { "test_local_use_subprocess_runs_on_this_backend", test_local_use_subprocess_runs_on_this_backend },
    { "test_subprocess_interrupt_before_the_cell_starts_is_kept",
      test_subprocess_interrupt_before_the_cell_starts_is_kept },
    { "test_core_routes_use_subprocess_of_any_backend", test_core_routes_use_subprocess_of_any_backend },
    { "test_config_chooses_the_use_subprocess_backend", test_config_chooses_the_use_subprocess_backend },
    { NULL }
  };
  static const cx_test_case executor[] = {
    { "test_subprocess_executor_envs_live_in_the_session_process", test_subprocess_executor_envs_live_in_the_session_process },
    { "test_subprocess_executor_worker_death_fails_clearly", test_subprocess_executor_worker_death_fails_clearly },
    { "test_subprocess_executor_death_in_a_nested_call", test_subprocess_executor_death_in_a_nested_call },
    { "test_subprocess_executor_host_function_may_run_a_cell", test_subprocess_executor_host_function_may_run_a_cell },
    { "test_subprocess_executor_in_spawn_mode", test_subprocess_executor_in_spawn_mode },
    { NULL }
  };
  static const cx_test_case fds[] = {
    { "test_subprocess_captures_fd_output_in_order", test_subprocess_captures_fd_output_in_order },
    { "test_subprocess_fd_floods_do_not_block", test_subprocess_fd_floods_do_not_block },
    { "test_subprocess_fd_output_streams_before_a_kill", test_subprocess_fd_output_streams_before_a_kill },
    { "test_subprocess_fd_output_after_a_session_cell_is_dropped", test_subprocess_fd_output_after_a_session_cell_is_dropped },
    { "test_subprocess_fd_output_never_reaches_the_hosts_fds", test_subprocess_fd_output_never_reaches_the_hosts_fds },
    { NULL }
  };
  static const cx_test_case defects[] = {
    { "test_subprocess_tiny_output_limits_are_marked", test_subprocess_tiny_output_limits_are_marked },
    { "test_subprocess_non_utf8_code_fails_as_on_local", test_subprocess_non_utf8_code_fails_as_on_local },
    { "test_subprocess_stopped_server_is_replaced", test_subprocess_stopped_server_is_replaced },
    { "test_subprocess_huge_results_are_bounded", test_subprocess_huge_results_are_bounded },
    { "test_subprocess_displays_and_errors_obey_output_limit", test_subprocess_displays_and_errors_obey_output_limit },
    { NULL }
  };
  cx_test_add_suite("subprocess cells", cells);
  cx_test_add_suite("subprocess deadlines", deadlines);
  cx_test_add_suite("subprocess isolation", isolation);
  cx_test_add_suite("subprocess limits", limits);
  cx_test_add_suite("subprocess modes", modes);
  cx_test_add_suite("subprocess executor", executor);
  cx_test_add_suite("subprocess file descriptors", fds);
  cx_test_add_suite("subprocess bounds and recovery", defects);
}
