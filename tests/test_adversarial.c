/* The adversarial table: hostile cells, each with the outcome it must have,
 * run on the local and subprocess backends through the public API.
 *
 * A case is one entry of CASES below: its name, the backends it runs on
 * (crashes only on subprocess: a segfault on local takes the host down),
 * the code, backend options and a timeout, and what must come of it (an
 * error type, or success; text the error message or stdout must contain;
 * stdout exactly).  Every case is a CUnit test of its own,
 * "NAME@BACKEND", so one can be run alone (in the environment `make check`
 * sets, like every test program here):
 *
 *   tests/test_adversarial 'flood_with_output_limit@subprocess'
 *
 * "MARKER" in a case's code becomes a string unique to that run; after the
 * cell (and the follow-up cell) no process whose command line carries it
 * may remain. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cx_test.h"

/* ---- The table -------------------------------------------------------------------- */

enum {
  ON_LOCAL = 1 << 0,
  ON_SUBPROCESS = 1 << 1,
  ON_BOTH = ON_LOCAL | ON_SUBPROCESS,
};

enum {
  IN_SESSION = 1 << 0, /* SETUP, CODE and THEN run in one session */
  TRUNCATED = 1 << 1,  /* the result must carry the "truncated" extra key */
  MAY_CRASH = 1 << 2,  /* WorkerCrashed is right too (the cell races a death) */
};

typedef struct adversarial_case adversarial_case;
/* A case that needs more than one cell's outcome checks itself. */
typedef void (*case_check)(cx_backend *backend, const char *backend_name, const adversarial_case *c);

struct adversarial_case {
  const char *name;
  guint backends;       /* ON_* */
  guint flags;          /* IN_SESSION, TRUNCATED, MAY_CRASH */
  const char *code;
  const char *options;  /* backend options, "KEY=VALUE;..." (NULL: defaults) */
  double timeout;       /* run option, seconds (0: none) */
  const char *error;    /* the error type; NULL: the cell succeeds */
  const char *contains; /* in the error message, or in stdout on success (may be NULL) */
  const char *stdout_;  /* stdout exactly (NULL: not checked) */
  double max_seconds;   /* the cell must return within this (0: 20 s, a hang guard); more
                         * under valgrind and sanitizers */
  const char *setup;    /* run first, must succeed (may be NULL) */
  const char *then;     /* run after, on the same backend or session: must print "ok\n" */
  case_check check;     /* replaces all of the above but NAME, BACKENDS, FLAGS, OPTIONS */
};

static void check_session_from_threads(cx_backend *, const char *, const adversarial_case *);
static void check_sigint_disposition(cx_backend *, const char *, const adversarial_case *);
static void check_sigint_disposition_first_cell(cx_backend *, const char *, const adversarial_case *);
static void check_stopped_fork_server(cx_backend *, const char *, const adversarial_case *);
static void check_forged_events_of_wrong_types(cx_backend *, const char *, const adversarial_case *);

#define SPIN "while True:\n    pass\n"
/* A cell writing a frame of TYPE (a one-letter string) with PAYLOAD (a
 * Python bytes expression) to its channel, then waiting to be stopped. */
#define FORGE_FRAME(type, payload)                                                  \
  "import os, struct, time\npayload = " payload "\n"                              \
  "frame = struct.pack('>IB', len(payload), ord('" type "')) + payload\n"         \
  "while frame:\n    frame = frame[os.write(3, frame):]\ntime.sleep(5)"
#define THEN_OK "print('ok')"

static const adversarial_case cases[] = {
  /* Timeouts a cell tries to escape. */
  { "timeout_sigint_ignored", ON_SUBPROCESS, 0,
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" SPIN,
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, THEN_OK },
  { "timeout_sigint_masked", ON_SUBPROCESS, 0,
    "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n" SPIN,
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, THEN_OK },
  { "timeout_in_c_sleep", ON_SUBPROCESS, 0,
    "import ctypes\nctypes.CDLL(None).sleep(30)",
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, THEN_OK },
  { "timeout_in_c_busy_loop", ON_SUBPROCESS, 0,
    "sum(range(10**12))",
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, THEN_OK },
  { "timeout_finally_sleeps", ON_SUBPROCESS, 0,
    "import time\ntry:\n    while True:\n        pass\nfinally:\n    time.sleep(60)",
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, THEN_OK },
  { "timeout_busy_loop", ON_BOTH, 0,
    "print('spinning')\n" SPIN,
    NULL, 0.5, "TimeoutError", "0.5 s timeout", "spinning\n", 3, NULL, THEN_OK },
  { "timeout_in_session_keeps_nothing_stuck", ON_BOTH, IN_SESSION,
    "import time\ntime.sleep(30)",
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, "x = 1", THEN_OK },

  /* Crashes: a result, and the next cell runs. */
  { "crash_segfault", ON_SUBPROCESS, 0,
    "print('before')\nimport ctypes\nctypes.string_at(0)",
    NULL, 0, "WorkerCrashed", "SIGSEGV", "before\n", 0, NULL, THEN_OK },
  { "crash_abort", ON_SUBPROCESS, 0,
    "import os\nos.abort()",
    NULL, 0, "WorkerCrashed", "SIGABRT", NULL, 0, NULL, THEN_OK },
  { "crash_exit_status", ON_SUBPROCESS, 0,
    "import os\nos._exit(3)",
    NULL, 0, "WorkerCrashed", "status 3", NULL, 0, NULL, THEN_OK },
  { "crash_sigkill_self", ON_SUBPROCESS, 0,
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    NULL, 0, "WorkerCrashed", "SIGKILL", NULL, 0, NULL, THEN_OK },
  { "crash_segfault_in_session", ON_SUBPROCESS, IN_SESSION,
    "import ctypes\nctypes.string_at(0)",
    NULL, 0, "WorkerCrashed", "SIGSEGV", NULL, 0, "x = 1", THEN_OK },
  /* The host may see its fork server die before the cell's result. */
  { "crash_kills_fork_server", ON_SUBPROCESS, MAY_CRASH,
    "import os\nprint('before')\nos.kill(os.getppid(), 9)\nprint('after')",
    NULL, 5, NULL, NULL, NULL, 10, NULL, THEN_OK },
  { "crash_garbage_on_channel", ON_SUBPROCESS, 0,
    "import os, time\nos.write(3, b'garbage')\ntime.sleep(5)",
    NULL, 0, "WorkerCrashed", "protocol", NULL, 4, NULL, THEN_OK },
  /* Frames a cell forges on its channel, nested past what json-glib's
   * parser survives (it recursed until the host crashed). */
  { "crash_deep_display_frame", ON_SUBPROCESS, 0,
    FORGE_FRAME("P", "b'[' * 100000 + b']' * 100000"),
    NULL, 0, "WorkerCrashed", "nested deeper than", NULL, 4, NULL, THEN_OK },
  { "crash_deep_result_frame", ON_SUBPROCESS, 0,
    FORGE_FRAME("D", "b'{\"x\": ' + b'[{\"y\": ' * 50000 + b'0' + b'}]' * 50000 + b'}'"),
    NULL, 0, "WorkerCrashed", "nested deeper than", NULL, 4, NULL, THEN_OK },
  /* A display of 20 million empty arrays (60 MB) forged on the channel:
   * json-glib's tree of it took 2.4 GB and GLib aborted the host.  It is
   * the cell's output past what the host reads, not a crash. */
  { "huge_wide_display_frame", ON_SUBPROCESS, 0,
    FORGE_FRAME("P", "b'{\"event\": \"display\", \"data\": {\"application/json\": [' + "
                     "b'[],' * (20 * 10**6) + b'[]]}}'"),
    NULL, 0, "OutputLimitExceeded",
    "the cell's DISPLAY message is too large to read: JSON of more than 1000000 values",
    NULL, 10, NULL, THEN_OK },
  /* An ERROR frame is the worker saying it cannot run the cell: one after
   * the cell's output, a malformed ERROR or a malformed LIMIT was forged,
   * and breaks the protocol; the output is kept. */
  { "crash_forged_error_after_output", ON_SUBPROCESS, 0,
    "import sys, time\nprint('before')\nsys.stdout.flush()\ntime.sleep(1)\n"
    FORGE_FRAME("E", "b'{\"message\": \"forged\"}'"),
    NULL, 0, "WorkerCrashed", "an ERROR after the cell's output: forged", "before\n", 6, NULL, THEN_OK },
  { "crash_forged_error_after_output_in_session", ON_SUBPROCESS, IN_SESSION,
    "import sys, time\nprint('before')\nsys.stdout.flush()\ntime.sleep(1)\n"
    FORGE_FRAME("E", "b'{\"message\": \"forged\"}'"),
    NULL, 0, "WorkerCrashed", "an ERROR after the cell's output: forged", "before\n", 6, "x = 1",
    THEN_OK },
  { "crash_malformed_error_frame", ON_SUBPROCESS, 0,
    FORGE_FRAME("E", "b'[1'"),
    NULL, 0, "WorkerCrashed", "protocol", NULL, 4, NULL, THEN_OK },
  { "crash_malformed_limit_frame", ON_SUBPROCESS, 0,
    FORGE_FRAME("L", "b'[1'"),
    NULL, 0, "WorkerCrashed", "protocol", NULL, 4, NULL, THEN_OK },

  /* Processes a cell leaves behind. */
  { "orphan_setsid_child", ON_SUBPROCESS, 0,
    "import subprocess\nsubprocess.Popen(['sleep', 'MARKER'], start_new_session=True)\nprint('started')",
    NULL, 0, NULL, NULL, "started\n", 0, NULL, NULL },
  { "orphan_double_fork_daemon", ON_SUBPROCESS, 0,
    "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
    "        os.execvp('sleep', ['sleep', 'MARKER'])\n    os._exit(0)\nos.wait()\nprint('started')",
    NULL, 0, NULL, NULL, "started\n", 0, NULL, NULL },
  { "orphan_daemon_of_a_timed_out_cell", ON_SUBPROCESS, 0,
    "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
    "        os.execvp('sleep', ['sleep', 'MARKER'])\n    os._exit(0)\ntime.sleep(60)",
    NULL, 0.5, "TimeoutError", NULL, NULL, 3, NULL, NULL },

  /* Floods. */
  { "flood_with_output_limit", ON_SUBPROCESS, TRUNCATED,
    "for i in range(10):\n    print('x' * 10**6)\nprint('TAIL')",
    "output-limit=1M", 0, NULL, "bytes omitted", NULL, 15, NULL, THEN_OK },
  { "flood_forever_with_output_limit", ON_SUBPROCESS, 0,
    "while True:\n    print('x' * 10**6)",
    "output-limit=1M", 0, "OutputLimitExceeded", NULL, NULL, 15, NULL, THEN_OK },
  { "flood_of_megabyte_lines", ON_LOCAL, 0,
    "for i in range(20):\n    print('x' * 10**6)\nprint('TAIL')",
    NULL, 0, NULL, "TAIL\n", NULL, 15, NULL, THEN_OK },
  /* A million switches between stdout and stderr: before, each was an
   * output and an event kept by the worker and the host (6 GB, 27 s). */
  { "flood_of_stream_switches", ON_BOTH, 0,
    "import sys\nfor i in range(500000):\n    sys.stdout.write('a')\n    sys.stderr.write('b')\n"
    "print('END')",
    NULL, 0, NULL, "END\n", NULL, 15, NULL, THEN_OK },
  { "flood_to_fd_1", ON_BOTH, 0,
    "import os\nfor i in range(20):\n    os.write(1, b'y' * 10**6)\nprint('TAIL')",
    NULL, 0, NULL, "TAIL\n", NULL, 15, NULL, THEN_OK },

  /* Bytes a terminal or a JSON encoder might choke on. */
  { "control_characters", ON_BOTH, 0,
    "print('a\\x01\\x07\\x08\\x1b[2J\\x1b]0;title\\x07\\r\\x7f\\u2028\\ufeffz')",
    NULL, 0, NULL, NULL, "a\x01\x07\x08\x1b[2J\x1b]0;title\x07\r\x7f\xe2\x80\xa8\xef\xbb\xbfz\n", 0,
    NULL, THEN_OK },
  { "control_characters_in_error", ON_BOTH, 0,
    "raise ValueError('\\x1b[31mred\\r\\x07\\x1b[0m')",
    NULL, 0, "ValueError", "red", NULL, 0, NULL, THEN_OK },

  /* Exits. */
  { "os_exit_on_local", ON_LOCAL, 0,
    "print('before')\nimport os\nos._exit(3)",
    NULL, 0, "SystemExit", "3", "before\n", 0, NULL, THEN_OK },
  { "os_exit_in_session_on_local", ON_LOCAL, IN_SESSION,
    "import os\nos._exit(0)",
    NULL, 0, "SystemExit", "0", NULL, 0, "x = 41", "print('ok' if x == 41 else x)" },

  /* Limits, stuck servers, bad source, forks, threads and signals.  (The
   * local backend has no output-limit: a 70 MiB value comes back whole.) */
  { "huge_last_value_in_session", ON_SUBPROCESS, IN_SESSION | TRUNCATED,
    "'x' * (70 * 1024**2)",
    NULL, 30, NULL, NULL, NULL, 30, "x = 1", THEN_OK },
  { "stopped_fork_server", ON_SUBPROCESS, 0,
    NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, check_stopped_fork_server },
  { "forged_events_of_wrong_types", ON_SUBPROCESS, 0,
    NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, check_forged_events_of_wrong_types },
  { "non_utf8_source_in_session", ON_BOTH, IN_SESSION,
    "x = '\xff'",
    NULL, 0, "SyntaxError", NULL, NULL, 0, "x = 41", "print('ok' if x == 41 else x)" },
  { "output_limit_of_one_byte", ON_SUBPROCESS, TRUNCATED,
    "print('hello')",
    "output-limit=1", 0, NULL, NULL, NULL, 0, NULL, NULL },
  { "multiprocessing_process_on_local", ON_LOCAL, 0,
    "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()\np.join()\n"
    "print('exitcode', p.exitcode)",
    NULL, 10, NULL, "exitcode 0\n", NULL, 10, NULL, THEN_OK },
  { "deep_recursion", ON_BOTH, 0,
    "import sys\nlimit = sys.getrecursionlimit()\nsys.setrecursionlimit(100000)\n"
    "def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nfinally:\n    sys.setrecursionlimit(limit)",
    NULL, 0, "RecursionError", NULL, NULL, 3, NULL, THEN_OK },
  { "session_from_four_threads", ON_LOCAL, 0,
    NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, check_session_from_threads },
  { "host_sigint_disposition_kept", ON_LOCAL, 0,
    NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, check_sigint_disposition },
  { "host_sigint_disposition_kept_by_first_cell", ON_LOCAL, 0,
    NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, check_sigint_disposition_first_cell },
};

/* ---- Helpers ---------------------------------------------------------------------- */

static char *
unique_marker(void)
{
  static int counter;
  /* Digits only: the cells pass it to sleep(1) as a number of seconds. */
  return g_strdup_printf("%d%d%d", 7000 + g_random_int_range(0, 1000), getpid(), ++counter);
}

/* Backend NAME with the "KEY=VALUE;..." OPTIONS. */
static cx_backend *
open_backend(const char *name, const char *options)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) pairs = g_strsplit(options != NULL ? options : "", ";", -1);
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), name, &error);
  CX_ASSERT_NO_ERROR(error);
  cx_options *values = cx_options_new(name, cx_plugin_info_get_options(info));
  for (char **pair = pairs; *pair != NULL; pair++) {
    if (**pair == '\0')
      continue;
    g_auto(GStrv) kv = g_strsplit(*pair, "=", 2);
    g_assert(kv[1] != NULL);
    cx_options_set(values, kv[0], kv[1], &error);
    CX_ASSERT_NO_ERROR(error);
  }
  cx_backend *backend = cx_backend_open(cx_test_registry(), name, values, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(backend);
  return backend;
}

static cx_result *
run_cell(cx_backend *backend, cx_session *session, const char *code, const cx_run_options *run)
{
  g_autoptr(GError) error = NULL;
  cx_result *result = session != NULL ? cx_session_run_cell(session, code, run, &error)
                                      : cx_backend_run_cell(backend, code, run, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  return result;
}

static void
assert_stdout_is(const cx_result *result, const char *expected)
{
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  gboolean same = len == strlen(expected) && memcmp(out, expected, len) == 0;
  if (!same) {
    g_autofree char *want = g_strescape(expected, NULL);
    g_autofree char *got = g_strescape(len > 200 ? "(long)" : out, NULL);
    fprintf(stderr, "\n  stdout: expected \"%s\", got \"%s\" (%" G_GSIZE_FORMAT " bytes)\n", want,
            got, len);
  }
  CU_ASSERT_TRUE(same);
}

/* ---- The generic runner ----------------------------------------------------------- */

static void
check_outcome(const adversarial_case *c, const cx_result *result, double elapsed)
{
  double limit = (c->max_seconds > 0 ? c->max_seconds : 20) * cx_test_slowdown();
  if (elapsed >= limit)
    fprintf(stderr, "\n  %s took %.2f s (at most %.0f s)\n", c->name, elapsed, limit);
  CU_ASSERT_TRUE(elapsed < limit);

  if ((c->flags & MAY_CRASH) && !cx_result_get_success(result)) {
    CX_ASSERT_ERROR_TYPE(result, "WorkerCrashed");
  } else if (c->error == NULL) {
    CX_ASSERT_CELL_OK(result);
    if (c->contains != NULL)
      CX_ASSERT_CONTAINS(cx_result_get_stdout(result, NULL), c->contains);
  } else {
    CX_ASSERT_ERROR_TYPE(result, c->error);
    if (c->contains != NULL)
      CX_ASSERT_CONTAINS(cx_result_get_error_message(result), c->contains);
  }
  if (c->stdout_ != NULL)
    assert_stdout_is(result, c->stdout_);
  if (c->flags & TRUNCATED) {
    if (cx_result_get_extra(result, "truncated") == NULL)
      fprintf(stderr, "\n  %s: no \"truncated\" key in the result\n", c->name);
    CU_ASSERT_PTR_NOT_NULL(cx_result_get_extra(result, "truncated"));
  }
}

static void
run_case(const adversarial_case *c, const char *backend_name)
{
  g_autoptr(cx_backend) backend = open_backend(backend_name, c->options);
  if (c->check != NULL) {
    c->check(backend, backend_name, c);
    return;
  }
  /* The first cell starts the interpreter or the fork server: not timed. */
  g_autoptr(cx_result) warm = cx_test_run_cell(backend, "pass", NULL);
  CX_ASSERT_CELL_OK(warm);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = NULL;
  if (c->flags & IN_SESSION) {
    session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  if (c->setup != NULL) {
    g_autoptr(cx_result) setup = run_cell(backend, session, c->setup, NULL);
    CX_ASSERT_CELL_OK(setup);
  }

  g_autofree char *marker = unique_marker();
  g_auto(GStrv) parts = g_strsplit(c->code, "MARKER", -1);
  g_autofree char *code = g_strjoinv(marker, parts);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  if (c->timeout > 0)
    cx_run_options_set_timeout(run, c->timeout);

  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = run_cell(backend, session, code, run);
  check_outcome(c, result, cx_test_seconds_since(start));

  if (c->then != NULL) {
    g_autoptr(cx_result) then = run_cell(backend, session, c->then, NULL);
    CX_ASSERT_CELL_OK(then);
    assert_stdout_is(then, "ok\n");
  }
  if (strstr(c->code, "MARKER") != NULL) {
    guint left = cx_test_processes_left_with(marker, 2.0);
    if (left != 0)
      fprintf(stderr, "\n  %u process(es) left behind\n", left);
    CU_ASSERT_EQUAL(left, 0);
    cx_test_kill_processes_with(marker);
  }
}

/* Each registered test is "NAME@BACKEND"; CUnit gives a test no argument,
 * so the one test function finds its case by the running test's name. */
static void
run_current_case(void)
{
  const char *test = CU_get_current_test()->pName;
  const char *at = strrchr(test, '@');
  g_assert(at != NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
    if (strlen(cases[i].name) == (gsize)(at - test) && strncmp(cases[i].name, test, at - test) == 0) {
      run_case(&cases[i], at + 1);
      return;
    }
  g_assert_not_reached();
}

/* ---- Cases that check themselves -------------------------------------------------- */

typedef struct {
  cx_session *session;
  int cells;
  int failures;
} thread_job;

static gpointer
increment_in_session(gpointer data)
{
  thread_job *job = data;
  for (int i = 0; i < job->cells; i++) {
    g_autoptr(cx_result) result =
      cx_session_run_cell(job->session, "v = n\nimport time\ntime.sleep(0.0005)\nn = v + 1", NULL, NULL);
    if (result == NULL || !cx_result_get_success(result))
      g_atomic_int_inc(&job->failures);
  }
  return NULL;
}

/* One local session, four threads incrementing n in it, with a sleep
 * between the read and the write: cells of a session run one at a time, so
 * no update is lost. */
static void
check_session_from_threads(cx_backend *backend, const char *backend_name, const adversarial_case *c)
{
  (void)backend_name;
  (void)c;
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) init = cx_session_run_cell(session, "n = 0", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  thread_job job = { session, 100, 0 };
  GThread *threads[4];
  for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
    threads[i] = g_thread_new("session", increment_in_session, &job);
  for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
    g_thread_join(threads[i]);
  CU_ASSERT_EQUAL(job.failures, 0);
  g_autoptr(cx_result) total = cx_session_run_cell(session, "print(n)", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  assert_stdout_is(total, "400\n");
}

static void
host_sigint_handler(int signal)
{
  (void)signal;
}

/* A local cell that ignores SIGINT must not change what SIGINT does to the
 * host: neither the default action nor a handler of the host's own.  (Set
 * here, not inherited: a job started in the background ignores SIGINT.) */
static void
check_sigint_disposition(cx_backend *backend, const char *backend_name, const adversarial_case *c)
{
  (void)backend_name;
  (void)c;
  struct sigaction original;
  sigaction(SIGINT, NULL, &original);
  void (*const handlers[])(int) = { SIG_DFL, host_sigint_handler };
  for (gsize i = 0; i < G_N_ELEMENTS(handlers); i++) {
    struct sigaction host = { .sa_handler = handlers[i], .sa_flags = SA_RESTART }, after;
    sigemptyset(&host.sa_mask);
    sigaction(SIGINT, &host, NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend,
      "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ok')", NULL);
    sigaction(SIGINT, NULL, &after);
    if (cx_result_has_error(result)) /* allowed: signal.signal off the main thread */
      CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), "ValueError");
    if (after.sa_handler != host.sa_handler)
      fprintf(stderr, "\n  SIGINT: handler %p after the cell, %p before\n", (void *)after.sa_handler,
              (void *)host.sa_handler);
    CU_ASSERT_PTR_EQUAL((void *)after.sa_handler, (void *)host.sa_handler);
    if (handlers[i] != SIG_DFL)
      CU_ASSERT_EQUAL(after.sa_flags & SA_RESTART, SA_RESTART);
  }
  sigaction(SIGINT, &original, NULL);
}

/* The same as the first cell of a process: the one that starts the
 * interpreter.  Run in a new process of this program. */
static void
check_sigint_disposition_first_cell(cx_backend *backend, const char *backend_name,
                                    const adversarial_case *c)
{
  (void)backend;
  (void)backend_name;
  (void)c;
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(self);
  const char *argv[] = { self, "host_sigint_disposition_kept@local", NULL };
  g_autofree char *out = NULL;
  g_autoptr(GError) error = NULL;
  int status;
  CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                                    NULL, &status, &error));
  if (!g_spawn_check_wait_status(status, NULL))
    fprintf(stderr, "\n  in a new process:\n%s", out);
  CU_ASSERT_TRUE(g_spawn_check_wait_status(status, NULL));
}

/* A fork server stopped with SIGSTOP (a debugger, a job-control accident)
 * must not make stateless cells time out: it is replaced. */
static void
check_stopped_fork_server(cx_backend *backend, const char *backend_name, const adversarial_case *c)
{
  (void)backend_name;
  (void)c;
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) warm = cx_test_run_cell(backend, "1", NULL);
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  gint64 server = json_object_get_int_member(json_node_get_object(info), "server_pid");
  CU_ASSERT_TRUE_FATAL(server > 1);
  kill((pid_t)server, SIGSTOP);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 5);
  for (int i = 0; i < 4; i++) { /* past the spares forked before the stop */
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('ok')", run);
    CX_ASSERT_CELL_OK(result);
    assert_stdout_is(result, "ok\n");
  }
  kill((pid_t)server, SIGCONT);
}

/* Display events whose members have the wrong JSON type: json-glib's own
 * getters would log a CRITICAL for them (fatal here) or round a fraction
 * into an execution count; the host reads them as missing. */
static void
check_forged_events_of_wrong_types(cx_backend *backend, const char *backend_name,
                                   const adversarial_case *c)
{
  (void)backend_name;
  (void)c;
  static const char code[] =
    "import json, os, struct\n"
    "def forge(event):\n"
    "    payload = json.dumps(event).encode()\n"
    "    frame = struct.pack('>IB', len(payload), ord('P')) + payload\n"
    "    while frame:\n"
    "        frame = frame[os.write(3, frame):]\n"
    "forge({'event': 'clear', 'wait': {}})\n"
    "forge({'event': 'execute_result', 'data': {'text/plain': 'x'}, 'execution_count': {}})\n"
    "forge({'event': 'execute_result', 'data': {'text/plain': 'y'}, 'execution_count': 2.5})\n"
    "print('ok')";
  GLogLevelFlags was = g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, code, NULL);
  g_log_set_always_fatal(was);
  CX_ASSERT_CELL_OK(result);
  assert_stdout_is(result, "ok\n");
  g_autofree char *json = cx_result_to_json(result, FALSE);
  CU_ASSERT_PTR_NULL(strstr(json, "\"execution_count\":2"));
}

void
cx_test_register(void)
{
  /* The worker must behave the same whatever the host's Python settings. */
  g_setenv("PYTHONDONTWRITEBYTECODE", "1", TRUE);
  g_setenv("PYTHONUNBUFFERED", "1", TRUE);

  static const struct { const char *name; guint mask; } backends[] = {
    { "local", ON_LOCAL }, { "subprocess", ON_SUBPROCESS },
  };
  for (gsize b = 0; b < G_N_ELEMENTS(backends); b++) {
    g_autofree char *suite_name = g_strdup_printf("adversarial cells on %s", backends[b].name);
    CU_pSuite suite = CU_add_suite(suite_name, NULL, NULL);
    g_assert(suite != NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
      if (!(cases[i].backends & backends[b].mask))
        continue;
      g_autofree char *name = g_strdup_printf("%s@%s", cases[i].name, backends[b].name);
      g_assert(CU_add_test(suite, name, run_current_case) != NULL);
    }
  }
}
