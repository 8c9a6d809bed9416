/* The jupyter backend (plugins/jupyter) against real ipykernel kernels
 * started on loopback by these tests, and a hostile one
 * (tests/hostile_kernel.py) for what a real one never does: forged
 * signatures, replies to someone else's request, malformed JSON, a
 * heartbeat that stops, a flood, a peer that is no kernel at all.
 *
 * Connection files go to a directory of this program's own
 * (JUPYTER_RUNTIME_DIR), so that what is left behind can be counted. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cx_test.h"
#include "tests/test_jupyter_server.h"

static char *runtime_dir;   /* JUPYTER_RUNTIME_DIR of this program */
static char *spec_dir;      /* JUPYTER_PATH: a kernelspec "cxtest" */
static char *mode_file;     /* where "cxtest" notes its connection file's mode */

static const char *
python(void)
{
  const char *p = g_getenv("CELLEXEC_PYTHON");
  return p != NULL ? p : "/usr/bin/python3";
}

/* A kernelspec NAME in spec_dir that launches tests/hostile_kernel.py in MODE. */
static void
add_hostile_spec(const char *name, const char *mode)
{
  g_autofree char *dir = g_build_filename(spec_dir, "kernels", name, NULL);
  g_mkdir_with_parents(dir, 0700);
  g_autofree char *script = g_build_filename(cx_test_srcdir(), "tests", "hostile_kernel.py", NULL);
  g_autofree char *json = g_strdup_printf(
    "{\"argv\": [\"python3\", \"%s\", \"%s\", \"-f\", \"{connection_file}\"],\n"
    " \"display_name\": \"%s\", \"language\": \"python\"}\n", script, mode, name);
  g_autofree char *file = cx_test_write_file(dir, "kernel.json", json);
}

static void
setup_dirs(void)
{
  if (runtime_dir != NULL)
    return;
  runtime_dir = cx_test_tmpdir();
  g_setenv("JUPYTER_RUNTIME_DIR", runtime_dir, TRUE);
  spec_dir = cx_test_tmpdir();
  g_autofree char *kernels = g_build_filename(spec_dir, "kernels", "cxtest", NULL);
  g_mkdir_with_parents(kernels, 0700);
  /* "python3" is resolved to the configured interpreter; the kernel
   * notes the mode of its connection file before it starts. */
  mode_file = g_build_filename(spec_dir, "connection-file-mode", NULL);
  g_autofree char *json = g_strdup_printf(
    "{\"argv\": [\"python3\", \"-c\", \"import os, sys, runpy; "
    "open(os.environ['CX_MODE_FILE'], 'w').write(oct(os.stat(sys.argv[1]).st_mode & 0o777)); "
    "sys.argv = ['ipykernel_launcher', '-f', sys.argv[1]]; "
    "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)\", "
    "\"{connection_file}\"],\n"
    " \"display_name\": \"cellexec test\", \"language\": \"python\",\n"
    " \"env\": {\"CX_SPEC_ENV\": \"from-the-spec\", \"CX_MODE_FILE\": \"%s\"}}\n", mode_file);
  g_autofree char *file = cx_test_write_file(kernels, "kernel.json", json);
  add_hostile_spec("cxflood", "flood");
  add_hostile_spec("cxhang", "hang");
  g_setenv("JUPYTER_PATH", spec_dir, TRUE);
}

/* Connection files in the runtime directory now. */
static guint
connection_files(void)
{
  guint n = 0;
  g_autoptr(GDir) dir = g_dir_open(runtime_dir, 0, NULL);
  const char *name;
  while (dir != NULL && (name = g_dir_read_name(dir)) != NULL)
    n += g_str_has_prefix(name, "kernel-cellexec-");
  return n;
}

static cx_backend *
open_jupyter(const char *first_key, ...) G_GNUC_NULL_TERMINATED;
static cx_backend *
open_jupyter(const char *first_key, ...)
{
  setup_dirs();
  va_list args;
  va_start(args, first_key);
  cx_backend *backend = cx_test_open_backend_valist("jupyter", first_key, args);
  va_end(args);
  return backend;
}

static cx_options *
options_of(const char *first_key, ...) G_GNUC_NULL_TERMINATED;
static cx_options *
options_of(const char *first_key, ...)
{
  va_list args;
  va_start(args, first_key);
  cx_options *options = cx_test_options_valist("jupyter", first_key, args);
  va_end(args);
  return options;
}

/* One backend for the cases that need nothing special. */
static cx_backend *shared_backend;

static cx_backend *
shared(void)
{
  if (shared_backend == NULL)
    shared_backend = open_jupyter("pool-size", "2", NULL);
  return shared_backend;
}

static JsonObject *
info_of(cx_backend *backend)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  return json_object_ref(json_node_get_object(info));
}

static gint64
dropped(cx_backend *backend, const char *what)
{
  g_autoptr(JsonObject) info = info_of(backend);
  return json_object_get_int_member(json_object_get_object_member(info, "dropped"), what);
}

/* Wait until BACKEND starts no kernel (the pool refilled). */
static void
settle(cx_backend *backend)
{
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (g_get_monotonic_time() < deadline) {
    g_autoptr(JsonObject) info = info_of(backend);
    if (json_object_get_int_member(info, "kernels_starting") == 0)
      return;
    g_usleep(20 * 1000);
  }
}

static const char *
plain_of(const cx_result *result, guint index)
{
  JsonObject *bundle = cx_result_get_output(result, index);
  return bundle != NULL ? json_object_get_string_member_with_default(bundle, "text/plain", NULL) : NULL;
}

/* ---- Cells ------------------------------------------------------------------------ */

/* A cell printing a NUL, and what a kernel's stream gives of it. */
#define NUL_CELL "print('a\\x00b\\udcff'); print('after')"
#define NUL_CELL_STDOUT "a\0b\xef\xbf\xbd\nafter\n"

/* RESULT's stdout is NUL_CELL_STDOUT, byte for byte: the NUL kept, the
 * lone surrogate as U+FFFD. */
#define ASSERT_NUL_CELL_STDOUT(result)                                             \
  do {                                                                             \
    gsize len_;                                                                    \
    const char *out_ = cx_result_get_stdout((result), &len_);                      \
    CU_ASSERT_EQUAL(len_, sizeof NUL_CELL_STDOUT - 1);                             \
    CU_ASSERT_TRUE(len_ == sizeof NUL_CELL_STDOUT - 1 &&                           \
                   memcmp(out_, NUL_CELL_STDOUT, len_) == 0);                      \
  } while (0)

/* The error output lists the kernel's traceback as the kernel sent it
 * (IPython's, coloured), while the error's traceback is plain text; a
 * UsageError fails the cell with a stderr line and no error output, as a
 * kernel shows it. */
static void
test_jupyter_error_outputs_are_the_kernels(void)
{
  g_autoptr(cx_result) failed = cx_test_run_cell(shared(), "def f():\n    return 1 / 0\nf()", NULL);
  CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");
  CU_ASSERT_TRUE(cx_result_get_error_output_shown(failed));
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(failed);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(outputs), 1);
  JsonObject *error = json_array_get_object_element(outputs, 0);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(error, "output_type"), "error");
  JsonArray *lines = json_object_get_array_member(error, "traceback");
  g_autoptr(GString) joined = g_string_new(NULL);
  for (guint i = 0; i < json_array_get_length(lines); i++)
    g_string_append(joined, json_array_get_string_element(lines, i));
  CU_ASSERT_PTR_NOT_NULL(strchr(joined->str, '\x1b')); /* the kernel's colours */
  CX_ASSERT_CONTAINS(joined->str, "Cell ");
  CU_ASSERT_PTR_NULL(strchr(cx_result_get_error_traceback(failed), '\x1b'));

  g_autoptr(cx_result) usage = cx_test_run_cell(shared(), "%no_such_magic", NULL);
  CX_ASSERT_ERROR_TYPE(usage, "UsageError");
  CU_ASSERT_FALSE(cx_result_get_error_output_shown(usage));
  CX_ASSERT_CONTAINS(cx_result_get_stderr(usage, NULL),
                     "UsageError: Line magic function `%no_such_magic` not found.");
  g_autoptr(JsonArray) usage_outputs = cx_result_list_outputs(usage);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(usage_outputs), 1);
  CU_ASSERT_STRING_EQUAL(
    json_object_get_string_member(json_array_get_object_element(usage_outputs, 0), "output_type"),
    "stream");
}

static void
test_jupyter_runs_cells(void)
{
  g_autoptr(cx_result) result = cx_test_run_cell(shared(), "print('hello')\n1 + 1", NULL);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "hello\n");
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
  CU_ASSERT_STRING_EQUAL(plain_of(result, 0), "2");
  JsonNode *count = cx_result_get_extra(result, "execution_count");
  CU_ASSERT_TRUE(count != NULL && json_node_get_int(count) >= 1);

  g_autoptr(cx_result) failed = cx_test_run_cell(shared(), "def f():\n    return 1 / 0\nf()", NULL);
  CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(failed), "division by zero");
  const char *traceback = cx_result_get_error_traceback(failed);
  CX_ASSERT_CONTAINS(traceback, "return 1 / 0");
  CU_ASSERT_PTR_NULL(strchr(traceback, '\x1b')); /* ANSI colours stripped */

  g_autoptr(cx_result) stderr_cell = cx_test_run_cell(shared(), "import sys; print('e', file=sys.stderr)", NULL);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stderr(stderr_cell, NULL), "e\n");

  /* A NUL in a stream is kept as the cell wrote it, and what follows it;
   * a lone surrogate (json-glib would drop the whole message) comes as
   * U+FFFD, as nbclient shows it.  An error's message keeps its NUL too. */
  g_autoptr(cx_result) nul = cx_test_run_cell(shared(), NUL_CELL, NULL);
  ASSERT_NUL_CELL_STDOUT(nul);
  g_autoptr(cx_result) nul_error = cx_test_run_cell(shared(), "raise ValueError('a\\x00b')", NULL);
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_message(nul_error), "a" CX_RESULT_NUL "b");
  /* And its traceback's last line (colour codes stripped from bytes). */
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(nul_error), "ValueError: a" CX_RESULT_NUL "b");
  /* One in a display's data cannot be kept: never silently U+FFFD, but
   * listed in "dropped_outputs". */
  g_autoptr(cx_result) nul_display =
    cx_test_run_cell(shared(), "display({'text/plain': 'a\\x00b'}, raw=True)", NULL);
  CX_ASSERT_CELL_OK(nul_display);
  JsonNode *dropped = cx_result_get_extra(nul_display, "dropped_outputs");
  g_autofree char *listed = dropped != NULL ? cx_json_to_string(dropped, FALSE) : g_strdup("");
  CX_ASSERT_CONTAINS(listed, "a NUL character of its data");
  CX_ASSERT_CONTAINS(listed, "display_data");

  /* Help pages come as the extra "payload", as on the other backends,
   * without the kernel's colour codes. */
  g_autoptr(cx_result) help = cx_test_run_cell(shared(), "len?", NULL);
  CX_ASSERT_CELL_OK(help);
  JsonNode *payload = cx_result_get_extra(help, "payload");
  CU_ASSERT_TRUE_FATAL(payload != NULL && JSON_NODE_HOLDS_ARRAY(payload));
  g_autofree char *pages = cx_json_to_string(payload, FALSE);
  CX_ASSERT_CONTAINS(pages, "\"source\":\"page\"");
  CX_ASSERT_CONTAINS(pages, "Return the number of items in a container.");
  CU_ASSERT_PTR_NULL(strstr(pages, "\\u001b"));

  /* A cwd the kernel cannot enter is a wrong run option, as on the other
   * backends: no result, CX_ERROR_OPTION (the CLI's exit 2). */
  g_autoptr(cx_run_options) nowhere = cx_run_options_new();
  cx_run_options_set_cwd(nowhere, "/no/such/cellexec/dir");
  g_autoptr(GError) cwd_error = NULL;
  g_autoptr(cx_result) refused = cx_backend_run_cell(shared(), "1", nowhere, &cwd_error);
  CU_ASSERT_PTR_NULL(refused);
  CX_ASSERT_ERROR(cwd_error, CX_ERROR_OPTION);
  CX_ASSERT_CONTAINS(cwd_error->message, "/no/such/cellexec/dir");

  /* A kernel of ours keeps its history in memory (history = memory). */
  g_autoptr(cx_result) history = cx_test_run_cell(shared(), "print(get_ipython().history_manager.hist_file)", NULL);
  CX_ASSERT_STDOUT(history, ":memory:\n");
}

static void
test_jupyter_input_fails_at_once(void)
{
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(shared(), "input('name? ')", NULL);
  CX_ASSERT_ERROR_TYPE(result, "StdinNotImplementedError");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 10 * cx_test_slowdown());
}

static void
test_jupyter_display_updates_and_clear(void)
{
  g_autoptr(cx_result) result = cx_test_run_cell(shared(),
    "from IPython.display import display, clear_output\n"
    "h = display('first', display_id=True)\n"
    "h.update('second')\n"
    "display('kept')\n"
    "print('gone')\n"
    "clear_output()\n"
    "print('after')\n"
    "display('shown')\n"
    "h2 = display('old', display_id='d2')\n"
    "h2.update('new')\n", NULL);
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "after\n");
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 2);
  CU_ASSERT_STRING_EQUAL(plain_of(result, 0), "'shown'");
  CU_ASSERT_STRING_EQUAL(plain_of(result, 1), "'new'");
}

typedef struct {
  GMutex lock;
  gint64 first_stream_at;
  GString *text;
} streamed;

static void
on_output(JsonObject *output, gpointer data)
{
  streamed *s = data;
  g_mutex_lock(&s->lock);
  if (g_strcmp0(json_object_get_string_member_with_default(output, "output_type", ""), "stream") == 0) {
    if (s->first_stream_at == 0)
      s->first_stream_at = g_get_monotonic_time();
    g_string_append(s->text, json_object_get_string_member_with_default(output, "text", ""));
  }
  g_mutex_unlock(&s->lock);
}

static void
test_jupyter_streams_output_live(void)
{
  streamed s = { .text = g_string_new(NULL) };
  g_mutex_init(&s.lock);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, on_output, &s);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(shared(),
    "import time\nprint('early', flush=True)\ntime.sleep(0.5)\nprint('late')", run);
  gint64 end = g_get_monotonic_time();
  CX_ASSERT_CELL_OK(result);
  CX_ASSERT_STDOUT(result, "early\nlate\n");
  CU_ASSERT_STRING_EQUAL(s.text->str, "early\nlate\n");
  /* The first line came while the cell still slept. */
  CU_ASSERT_TRUE(s.first_stream_at > start && end - s.first_stream_at > 300 * 1000);
  g_string_free(s.text, TRUE);
  g_mutex_clear(&s.lock);
}

static void
test_jupyter_stateless_cells_get_fresh_kernels(void)
{
  g_autoptr(cx_result) a = cx_test_run_cell(shared(), "import os\nleft = 1\nos.getpid()", NULL);
  g_autoptr(cx_result) b = cx_test_run_cell(shared(), "import os\nprint('left' in globals())\nos.getpid()", NULL);
  CX_ASSERT_CELL_OK(a);
  CX_ASSERT_STDOUT(b, "False\n");
  CU_ASSERT_STRING_NOT_EQUAL(plain_of(a, 0), plain_of(b, 0));
  /* The pool refills in the background: a warm kernel answers fast. */
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  gint64 ready = 0;
  while (g_get_monotonic_time() < deadline) {
    g_autoptr(JsonObject) info = info_of(shared());
    ready = json_object_get_int_member(info, "pool_ready");
    if (ready == 2)
      break;
    g_usleep(50 * 1000);
  }
  CU_ASSERT_EQUAL(ready, 2);
  /* The kernel that runs the next cell was started well before the cell
   * was asked for: its process start time (from /proc, within 20 ms) is
   * earlier than the request by at least the time ipykernel takes to
   * import (0.8 s or more), where a kernel started for the cell would
   * start at the request. */
  double asked_at = g_get_real_time() / 1e6;
  g_autoptr(cx_result) warm = cx_test_run_cell(shared(),
    "import os, time\n"
    "ticks = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])\n"
    "booted = time.time() - float(open('/proc/uptime').read().split()[0])\n"
    "print(repr(booted + ticks / os.sysconf('SC_CLK_TCK')))", NULL);
  CX_ASSERT_CELL_OK(warm);
  double started_at = g_ascii_strtod(cx_result_get_stdout(warm, NULL), NULL);
  if (!(started_at > 0 && started_at < asked_at - 0.25))
    fprintf(stderr, "\n  the kernel started %.3f s after the cell was asked for\n",
            started_at - asked_at);
  CU_ASSERT_TRUE(started_at > 0 && started_at < asked_at - 0.25);
}

static void
test_jupyter_run_options(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, dir);
  cx_run_options_add_env(run, "CX_JUPYTER_TEST=it's \"quoted\" \\ here");
  g_autoptr(cx_result) result = cx_test_run_cell(shared(),
    "import os\nprint(os.getcwd())\nprint(os.environ['CX_JUPYTER_TEST'])", run);
  g_autofree char *real = realpath(dir, NULL);
  g_autofree char *expected = g_strdup_printf("%s\nit's \"quoted\" \\ here\n", real);
  CX_ASSERT_STDOUT(result, expected);

  g_autoptr(cx_run_options) mime = cx_run_options_new();
  cx_run_options_add_allowed_mime_type(mime, "text/html");
  g_autoptr(cx_result) html = cx_test_run_cell(shared(),
    "from IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))", mime);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(html), 1);
  JsonObject *bundle = cx_result_get_output(html, 0);
  CU_ASSERT_TRUE(json_object_has_member(bundle, "text/html"));
  CU_ASSERT_FALSE(json_object_has_member(bundle, "text/plain"));
}

/* ---- Kernelspecs, connection files --------------------------------------------------- */

static void
test_jupyter_kernelspec_is_found_and_python_resolved(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("kernel", "cxtest", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "import os, sys\nprint(os.environ.get('CX_SPEC_ENV'))\nprint(sys.executable)", NULL);
  g_autofree char *expected = g_strdup_printf("from-the-spec\n%s\n", python());
  CX_ASSERT_STDOUT(result, expected);
  /* Its connection file was the user's only, and is gone once the kernel
   * has read it. */
  g_autofree char *mode = NULL;
  CU_ASSERT_TRUE(g_file_get_contents(mode_file, &mode, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(mode != NULL ? mode : "", "0o600");
  settle(backend);
  if (shared_backend != NULL)
    settle(shared_backend);
  CU_ASSERT_EQUAL(connection_files(), 0);

  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) missing = cx_backend_open(cx_test_registry(), "jupyter",
                                                  options_of("kernel", "no-such-kernel", NULL), &error);
  CU_ASSERT_PTR_NULL(missing);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, "no kernelspec named \"no-such-kernel\"");
  CX_ASSERT_CONTAINS(error->message, spec_dir);
}

typedef struct {
  cx_backend *backend;
  cx_result *result;
} opener;

/* Open a session (a kernel launch with pool-size 0) and ask its pid. */
static gpointer
open_and_run(gpointer data)
{
  opener *o = data;
  GError *error = NULL;
  cx_session *session = cx_session_open(o->backend, &error);
  if (session != NULL) {
    o->result = cx_session_run_cell(session, "import os\nos.getpid()", NULL, &error);
    cx_session_close(session);
  }
  g_clear_error(&error);
  return NULL;
}

static void
test_jupyter_eight_kernels_at_once(void)
{
  if (cx_test_under_valgrind()) {
    cx_test_skip("under valgrind, eight kernel starts at once outlast its pace");
    return;
  }
  g_autoptr(cx_backend) backend = open_jupyter("pool-size", "0", NULL);
  enum { N = 8 };
  opener openers[N];
  GThread *threads[N];
  for (int i = 0; i < N; i++) {
    openers[i] = (opener){ backend, NULL };
    threads[i] = g_thread_new("open-session", open_and_run, &openers[i]);
  }
  for (int i = 0; i < N; i++)
    g_thread_join(threads[i]);
  g_autoptr(GHashTable) pids = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = 0; i < N; i++) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(openers[i].result);
    CX_ASSERT_CELL_OK(openers[i].result);
    const char *pid = plain_of(openers[i].result, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pid);
    g_hash_table_add(pids, (gpointer)pid);
  }
  CU_ASSERT_EQUAL(g_hash_table_size(pids), N);
  for (int i = 0; i < N; i++)
    cx_result_free(openers[i].result);
}

/* ---- Sessions, death, timeouts ------------------------------------------------------- */

/* A session of BACKEND in which kept = 41 was set and seen by a later
 * cell. */
static cx_session *
session_keeping_state(cx_backend *backend)
{
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) set = cx_session_run_cell(session, "kept = 41", NULL, &error);
  g_autoptr(cx_result) got = cx_session_run_cell(session, "print(kept + 1)", NULL, &error);
  CX_ASSERT_STDOUT(got, "42\n");
  CU_ASSERT_PTR_NULL(cx_result_get_extra(got, "session_restarted"));
  return session;
}

static void
test_jupyter_session_keeps_state_and_survives_a_kill(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("pool-size", "1", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = session_keeping_state(backend);

  /* Killed mid-cell: KernelDied, as soon as the process is gone.  The
   * cell prints when it will kill itself, and gives IOPub time to send
   * that line first. */
  g_autoptr(cx_result) killed = cx_session_run_cell(session,
    "import os, time\nprint('before', flush=True)\ntime.sleep(0.2)\n"
    "print(repr(time.time() + 0.1), flush=True)\ntime.sleep(0.1)\nos.kill(os.getpid(), 9)\n"
    "time.sleep(30)", NULL, &error);
  gint64 seen = g_get_real_time();
  CU_ASSERT_PTR_NOT_NULL_FATAL(killed);
  CX_ASSERT_ERROR_TYPE(killed, "KernelDied");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(killed), "signal 9");
  /* No reply came: the number is the one execute_input announced. */
  CU_ASSERT_PTR_NOT_NULL(cx_result_get_extra(killed, "execution_count"));
  CU_ASSERT_PTR_NOT_NULL(cx_result_get_extra(killed, "duration_ms"));
  const char *out = cx_result_get_stdout(killed, NULL);
  CX_ASSERT_CONTAINS(out, "before\n");
  const char *stamp = strchr(out, '\n');
  double killed_at = stamp != NULL ? g_ascii_strtod(stamp + 1, NULL) : 0;
  double late = seen / 1e6 - killed_at;
  /* "signal 9" shows the process watch saw it, not the heartbeat (which
   * cannot know how the kernel ended); the time is a hang guard. */
  if (late > 5 * cx_test_slowdown())
    fprintf(stderr, "\n  KernelDied came %.3f s after the kill\n", late);
  CU_ASSERT_TRUE(killed_at > 0 && late < 5 * cx_test_slowdown());

  /* The next call gets a new kernel, and says so. */
  g_autoptr(cx_result) after = cx_session_run_cell(session, "print('kept' in globals())", NULL, &error);
  CX_ASSERT_STDOUT(after, "False\n");
  JsonNode *restarted = cx_result_get_extra(after, "session_restarted");
  CU_ASSERT_TRUE(restarted != NULL && json_node_get_boolean(restarted));
  g_autoptr(cx_result) later = cx_session_run_cell(session, "1", NULL, &error);
  CU_ASSERT_PTR_NULL(cx_result_get_extra(later, "session_restarted"));
}

/* complete, inspect, is_complete, history and user_expressions are the
 * kernel's own answers, forwarded. */
/* input_request answered by the callback; a failed answer can only be an
 * empty line in input_reply. */
static void
test_jupyter_input_asks_the_callback(void)
{
  cx_test_check_input(shared(), FALSE);
}

/* A NUL byte in the code: Python's own ValueError, nothing run. */
static void
test_jupyter_code_with_nul_fails_as_python_fails(void)
{
  cx_test_check_nul_in_code(shared());
}

/* store_history = FALSE, as a kernel runs a comm's handler. */
static void
test_jupyter_unstored_cell_keeps_the_history(void)
{
  cx_test_check_unstored_cells(shared());
}

static void
test_jupyter_session_answers_jupyter_requests(void)
{
  /* ipykernel keeps no output in its history unless told to
   * (HistoryManager.db_log_output). */
  cx_test_check_session_requests(shared(), FALSE);
}

static void
test_jupyter_os_exit_is_kernel_died(void)
{
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(shared(), "import os\nos._exit(3)", NULL);
  CX_ASSERT_ERROR_TYPE(result, "KernelDied");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "status 3");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 5 * cx_test_slowdown());
  g_autoptr(cx_result) next = cx_test_run_cell(shared(), "print('fine')", NULL);
  CX_ASSERT_STDOUT(next, "fine\n");
}

static void
test_jupyter_timeout_interrupts_a_busy_loop(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 0.5);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(shared(),
    "print('started', flush=True)\nwhile True:\n    pass", run);
  double seconds = cx_test_seconds_since(start);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_STDOUT(result, "started\n");      /* the output so far */
  /* Interrupted, not killed (a kill leaves no KeyboardInterrupt); the
   * loop never ends by itself, so the time is a hang guard. */
  CX_ASSERT_CONTAINS(cx_result_get_error_traceback(result), "KeyboardInterrupt");
  CU_ASSERT_TRUE(seconds < 0.5 + 10 * cx_test_slowdown());
}

/* The output types of RESULT's outputs, as "stream error stream ...". */
static char *
output_types(const cx_result *result)
{
  g_autoptr(GString) types = g_string_new(NULL);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  for (guint i = 0; i < json_array_get_length(outputs); i++) {
    JsonObject *output = json_array_get_object_element(outputs, i);
    g_string_append_printf(types, "%s%s", i > 0 ? " " : "",
                           json_object_get_string_member(output, "output_type"));
    if (g_str_equal(json_object_get_string_member(output, "output_type"), "error"))
      g_string_append_printf(types, ":%s", json_object_get_string_member(output, "ename"));
  }
  return g_string_free(g_steal_pointer(&types), FALSE);
}

/* A traceback the cell shows and goes on from is an output where it came;
 * the cell succeeds, as the kernel says; and a cell that then times out
 * keeps it and everything after it. */
static void
test_jupyter_shown_error_keeps_its_place(void)
{
  static const char shows[] = "try:\n    1/0\nexcept Exception:\n"
                              "    get_ipython().showtraceback()\nprint('after', flush=True)\n";
  g_autoptr(cx_result) result = cx_test_run_cell(shared(), shows, NULL);
  CX_ASSERT_CELL_OK(result);
  g_autofree char *types = output_types(result);
  CU_ASSERT_STRING_EQUAL(types, "error:ZeroDivisionError stream");

  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 1.0);
  g_autofree char *then_hangs = g_strconcat(shows, "display('shown')\nimport time\n"
                                            "time.sleep(30)", NULL);
  g_autoptr(cx_result) timed_out = cx_test_run_cell(shared(), then_hangs, run);
  CX_ASSERT_ERROR_TYPE(timed_out, "TimeoutError");
  g_autofree char *kept = output_types(timed_out);
  CU_ASSERT_STRING_EQUAL(kept, "error:ZeroDivisionError stream display_data error:TimeoutError");
}

static void
test_jupyter_timeout_kills_a_cell_blocked_in_c(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("interrupt-grace", "0.3", "timeout", "0.5", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  gint64 start = g_get_monotonic_time();
  /* sum() over a range never looks at signals: only the kill stops it.
   * (It holds the GIL too, so ipykernel's IOPub thread sends what was
   * printed only if it gets a moment first.) */
  g_autoptr(cx_result) result = cx_session_run_cell(session,
    "import time\nprint('in C', flush=True)\ntime.sleep(0.2)\nsum(range(10**12))", NULL, &error);
  double seconds = cx_test_seconds_since(start);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "killed");
  CX_ASSERT_STDOUT(result, "in C\n");
  /* The sum would take hours: the time is a hang guard. */
  if (seconds >= 0.8 + 10 * cx_test_slowdown())
    fprintf(stderr, "\n  the blocked cell came back after %.2f s\n", seconds);
  CU_ASSERT_TRUE(seconds < 0.8 + 10 * cx_test_slowdown());
  g_autoptr(cx_result) next = cx_session_run_cell(session, "print('back')", NULL, &error);
  CX_ASSERT_STDOUT(next, "back\n");
  JsonNode *restarted = cx_result_get_extra(next, "session_restarted");
  CU_ASSERT_TRUE(restarted != NULL && json_node_get_boolean(restarted));
}

/* CPU time the calling thread has used, in seconds. */
static double
thread_cpu_seconds(void)
{
  struct rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/* Between the interrupt and the kill the host waits for the kernel; it
 * does not spin: its thread uses a fraction of the 2 s grace. */
static void
test_jupyter_grace_is_waited_not_spun(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("interrupt-grace", "2", "timeout", "0.3", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) warm = cx_session_run_cell(session, "1", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  double cpu_before = thread_cpu_seconds();
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_session_run_cell(session, "sum(range(10**12))", NULL, &error);
  double seconds = cx_test_seconds_since(start), cpu = thread_cpu_seconds() - cpu_before;
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "killed");
  CU_ASSERT_TRUE(seconds >= 2.0);
  if (cpu >= 0.5 * seconds)
    fprintf(stderr, "\n  the host's thread used %.2f s of CPU in %.2f s\n", cpu, seconds);
  CU_ASSERT_TRUE(cpu < 0.5 * seconds);
}

/* output-limit, as on the subprocess backend: a stream keeps its head and
 * tail with a line between them, a display's text is cut the same way,
 * every cut is listed in "truncated", and a cell that prints for ever is
 * stopped with OutputLimitExceeded, its output still bounded. */
static void
test_jupyter_output_limit_keeps_head_and_tail(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("output-limit", "1K", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_session_run_cell(session,
    "print('HEAD')\nfor i in range(3000):\n    print('line', i)\nprint('TAIL')\n"
    "from IPython.display import HTML, display\ndisplay(HTML('<p>' + 'h' * 5000 + '</p>'))",
    NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(result);
  CX_ASSERT_CELL_OK(result);
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "HEAD\nline 0\n"));
  CU_ASSERT_TRUE(g_str_has_suffix(out, "line 2999\nTAIL\n"));
  CU_ASSERT_TRUE(len < 1024 + 100);
  JsonNode *truncated = cx_result_get_extra(result, "truncated");
  CU_ASSERT_TRUE_FATAL(truncated != NULL && JSON_NODE_HOLDS_OBJECT(truncated));
  JsonObject *detail = json_object_get_object_member(json_node_get_object(truncated), "stdout");
  gint64 total = json_object_get_int_member(detail, "total_bytes");
  gint64 omitted = json_object_get_int_member(detail, "omitted_bytes");
  CU_ASSERT_EQUAL(total, 28900); /* HEAD, TAIL and 3000 lines "line N" */
  CU_ASSERT_EQUAL(omitted, total - 1024);
  g_autofree char *line = g_strdup_printf(
    "\n[cellexec: %" G_GINT64_FORMAT " bytes omitted: the output exceeded output-limit]\n", omitted);
  CX_ASSERT_CONTAINS(out, line);
  CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
  const char *html = json_object_get_string_member(cx_result_get_output(result, 0), "text/html");
  CU_ASSERT_TRUE(g_str_has_prefix(html, "<p>hhh") && g_str_has_suffix(html, "hhh</p>"));
  CX_ASSERT_CONTAINS(html, "bytes omitted");
  g_autofree char *cuts = cx_json_to_string(truncated, FALSE);
  CX_ASSERT_CONTAINS(cuts, "\"outputs\":[{\"part\":\"text/html\",\"total_bytes\":5007");

  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) forever = cx_session_run_cell(session, "while True:\n    print('x' * 100)",
                                                     NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(forever);
  CX_ASSERT_ERROR_TYPE(forever, "OutputLimitExceeded");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(forever), "more than 16777216 bytes to stdout");
  cx_result_get_stdout(forever, &len);
  CU_ASSERT_TRUE(len < 1024 + 100);
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 60 * cx_test_slowdown()); /* a hang guard */
}

/* A kernel that floods a cell's output and ignores interrupts, with no
 * timeout: output-limit stops it and its kernel is killed, so the host's
 * memory stays bounded. */
static void
test_jupyter_output_limit_stops_a_flooding_kernel(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("kernel", "cxflood", "pool-size", "0",
                                               "output-limit", "1K", "interrupt-grace", "0.5", NULL);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", NULL);
  CX_ASSERT_ERROR_TYPE(result, "OutputLimitExceeded");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "its kernel was killed");
  gsize len;
  cx_result_get_stdout(result, &len);
  CU_ASSERT_TRUE(len < 1024 + 100);
}

/* A real ipykernel's display of 20 million empty arrays: json-glib's tree
 * of its 80 MB took the host past 2 GB, and `cellexec run -b jupyter`
 * aborted (here under a 1.5 GB cap, which the kernel shares).  Now the
 * cell fails with OutputLimitExceeded in one line, naming the limit, and
 * what it printed after is kept. */
static void
test_jupyter_wide_display_does_not_abort_the_host(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  g_auto(cx_test_cli_run) run = cx_test_cellexec_capped(
    1500u << 20, "run", "-b", "jupyter", "-c",
    "from IPython.display import publish_display_data\n"
    "publish_display_data({'application/json': [[]] * (20 * 10**6)})\nprint('after')", NULL);
  CU_ASSERT_EQUAL(run.status, 1);
  CU_ASSERT_STRING_EQUAL(run.out, "after\n");
  CX_ASSERT_CONTAINS(run.err, "OutputLimitExceeded: the kernel's display_data message is too "
                              "large to read: JSON of more than 1000000 values");
}

/* ---- A kernel of someone else's ---------------------------------------------------- */

/* Start ARGV quietly; wait (30 s at most) until it has written FILE. */
static GPid
spawn_until_file(const char *const *argv, const char *file)
{
  GPid pid = 0;
  g_autoptr(GError) error = NULL;
  g_spawn_async(NULL, (char **)argv, NULL,
                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                NULL, NULL, &pid, &error);
  CX_ASSERT_NO_ERROR(error);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (!g_file_test(file, G_FILE_TEST_EXISTS) && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  return pid;
}

/* A real ipykernel the test starts itself; its connection file. */
static GPid
start_own_kernel(char **connection_file)
{
  g_autofree char *dir = cx_test_tmpdir();
  *connection_file = g_build_filename(dir, "own-kernel.json", NULL);
  const char *argv[] = { python(), "-m", "ipykernel_launcher", "-f", *connection_file, NULL };
  /* ipykernel writes the file once it has bound its ports. */
  GPid pid = spawn_until_file(argv, *connection_file);
  g_usleep(100 * 1000);
  return pid;
}

static gboolean
process_alive(GPid pid)
{
  return waitpid(pid, NULL, WNOHANG) == 0;
}

static void
test_jupyter_attach_by_connection_file(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_own_kernel(&file);
  {
    g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, NULL);
    g_autoptr(cx_result) set = cx_test_run_cell(backend, "shared_state = 'yes'", NULL);
    CX_ASSERT_CELL_OK(set);
    /* One kernel, shared: its state is the owner's too. */
    g_autoptr(cx_result) seen = cx_test_run_cell(backend, "print(shared_state)", NULL);
    CX_ASSERT_STDOUT(seen, "yes\n");
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) in_session = cx_session_run_cell(session, "print(shared_state)", NULL, &error);
    CX_ASSERT_STDOUT(in_session, "yes\n");
    /* Interrupt is a message on control for a kernel we did not start. */
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_timeout(run, 0.5);
    g_autoptr(cx_result) timed = cx_test_run_cell(backend, "import time\ntime.sleep(30)", run);
    CX_ASSERT_ERROR_TYPE(timed, "TimeoutError");
    g_autoptr(JsonObject) info = info_of(backend);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(info, "mode"), "attach");
  }
  /* Never shut down by us. */
  g_usleep(300 * 1000);
  CU_ASSERT_TRUE(process_alive(pid));
  CU_ASSERT_TRUE(g_file_test(file, G_FILE_TEST_EXISTS));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* tests/hostile_kernel.py in MODE (see there), attached: it binds its
 * own ports and writes *CONNECTION_FILE. */
static char *
hostile_kernel_script(void)
{
  return g_build_filename(cx_test_srcdir(), "tests", "hostile_kernel.py", NULL);
}

/* `cellexec run` ends on SIGTERM even when its cell ignores the interrupt
 * (a kernel with SIGINT ignored, no timeout): with 143, in a bounded
 * time. */
static void
test_jupyter_cli_ends_on_sigterm_when_the_kernel_ignores_interrupts(void)
{
  setup_dirs();
  g_autofree char *script = hostile_kernel_script();
  g_autofree char *marker = g_strdup_printf("%s hang -f", script); /* this test's kernel only */
  g_autoptr(GSubprocess) host = cx_test_cellexec_start("run", "-b", "jupyter", "-o", "kernel=cxhang",
                                                       "-o", "pool-size=0", "-c", "anything", NULL);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (cx_test_count_processes_with(marker) == 0 && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  double seconds;
  g_auto(cx_test_cli_run) run = cx_test_cellexec_terminate(host, &seconds);
  CU_ASSERT_EQUAL(run.status, 143);
  CX_ASSERT_CONTAINS(run.err, "still running 5 s after SIGTERM");
  /* The kernel ignores the interrupt for ever: the time is a hang guard. */
  CU_ASSERT_TRUE(seconds < 5 + 20 * cx_test_slowdown());
  CU_ASSERT_EQUAL(cx_test_processes_left_with(marker, 10), 0);
}

static GPid
start_scripted_kernel(const char *mode, char **connection_file);

/* A cell on a flooding kernel, with a timeout of 1 s: it must end as
 * TimeoutError saying HOW, and promptly (the flood never ends: the time
 * is a hang guard). */
static void
assert_flood_times_out(cx_backend *backend, const char *how)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 1);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", run);
  double seconds = cx_test_seconds_since(start);
  CX_ASSERT_ERROR_TYPE(result, "TimeoutError");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), how);
  CU_ASSERT_TRUE(seconds < 1.5 + 20 * cx_test_slowdown());
}

/* A cell's output without end, and SIGINT ignored: past the timeout and
 * the grace the kernel is killed, and the call returns. */
static void
test_jupyter_flooding_kernel_is_killed_at_its_timeout(void)
{
  g_autoptr(cx_backend) backend = open_jupyter("kernel", "cxflood", "pool-size", "0",
                                               "interrupt-grace", "0.5", NULL);
  assert_flood_times_out(backend, "its kernel was killed");
}

/* The same on a kernel someone else started: it is not ours to kill, so
 * the call gives up on it, and says so. */
static void
test_jupyter_flooding_attached_kernel_is_given_up(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("flood", &file);
  {
    g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, "interrupt-grace", "0.5",
                                                 NULL);
    assert_flood_times_out(backend, "not started by cellexec");
  }
  CU_ASSERT_TRUE(process_alive(pid));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* Outputs a notebook cannot hold (an unknown msg_type, display_data
 * without a bundle or with values of the wrong type, a stream whose text
 * is an object, which json-glib's getters answer with a CRITICAL) and a
 * reply whose
 * status is none of ok, error and aborted: what can be kept is, the rest
 * is listed in "dropped_outputs", the cell fails naming the status, and
 * nothing complains on stderr. */
static void
test_jupyter_odd_outputs_and_reply_status_are_reported(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("odd", &file);
  {
    g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, NULL);
    cx_test_fd_redirect redirect;
    cx_test_redirect_fd(&redirect, 2);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", NULL);
    g_autofree char *printed = cx_test_restore_fd(&redirect);
    if (strstr(printed, "CRITICAL") != NULL || strstr(printed, "WARNING") != NULL)
      fprintf(stderr, "\n  printed: %s\n", printed);
    CU_ASSERT_PTR_NULL(strstr(printed, "CRITICAL"));
    CU_ASSERT_PTR_NULL(strstr(printed, "WARNING"));
    CX_ASSERT_ERROR_TYPE(result, "KernelProtocolError");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "status \"bogus\"");
    CX_ASSERT_STDOUT(result, "good\n");
    CU_ASSERT_EQUAL_FATAL(cx_result_get_n_outputs(result), 1);
    JsonObject *kept = cx_result_get_output(result, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(kept, "text/html"), "<b>kept</b>");
    CU_ASSERT_FALSE(json_object_has_member(kept, "text/plain"));
    JsonNode *dropped = cx_result_get_extra(result, "dropped_outputs");
    CU_ASSERT_TRUE_FATAL(dropped != NULL && JSON_NODE_HOLDS_ARRAY(dropped));
    CU_ASSERT_EQUAL(json_array_get_length(json_node_get_array(dropped)), 6);
    g_autofree char *listed = cx_json_to_string(dropped, FALSE);
    CX_ASSERT_CONTAINS(listed, "\"msg_type\":\"weird_type\"");
    CX_ASSERT_CONTAINS(listed, "its \\\"text/plain\\\": not a string");
    CX_ASSERT_CONTAINS(listed, "its \\\"metadata\\\": not an object");
    CX_ASSERT_CONTAINS(listed, "its \\\"text\\\" is not a string");
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* A kernel whose idle status comes long after its reply (ipykernel's,
 * when its flush of a large output timed out): the cell ends without
 * waiting for ever, and the result says output may be missing. */
static void
test_jupyter_output_after_a_lost_idle_is_said_to_be_missing(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("late", &file);
  {
    g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", NULL);
    CX_ASSERT_CELL_OK(result);
    JsonNode *dropped = cx_result_get_extra(result, "dropped_outputs");
    CU_ASSERT_TRUE_FATAL(dropped != NULL && JSON_NODE_HOLDS_ARRAY(dropped));
    g_autofree char *listed = cx_json_to_string(dropped, FALSE);
    CX_ASSERT_CONTAINS(listed, "the cell ended without the output still on its way");
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* A peer that is no kernel (the ports answer with bytes that are not
 * ZMTP): attaching fails within start-timeout, a send never waits for
 * ever. */
static void
test_jupyter_garbage_peer_fails_within_start_timeout(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("garbage", &file);
  g_autofree char *connection = g_strdup_printf("connection-file=%s", file);
  gint64 start = g_get_monotonic_time();
  g_auto(cx_test_cli_run) run = cx_test_cellexec(NULL, "run", "-b", "jupyter", "-o", connection,
                                                 "-o", "start-timeout=1", "-c", "1", NULL);
  CU_ASSERT_EQUAL(run.status, 2);
  CX_ASSERT_CONTAINS(run.err, "did not answer within 1 s");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 1 + 20 * cx_test_slowdown());
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static GPid
start_scripted_kernel(const char *mode, char **connection_file)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *script = hostile_kernel_script();
  *connection_file = g_build_filename(dir, "scripted.json", NULL);
  const char *argv[] = { python(), script, mode, "--write", *connection_file, NULL };
  return spawn_until_file(argv, *connection_file);
}

static void
test_jupyter_drops_forged_misdirected_and_malformed_messages(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("lie", &file);
  {
    g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, NULL);
    gint64 forged = dropped(backend, "bad_signature"), other = dropped(backend, "wrong_parent"),
           malformed = dropped(backend, "malformed");
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", NULL);
    CX_ASSERT_CELL_OK(result);
    CX_ASSERT_STDOUT(result, "good\n");
    CU_ASSERT_EQUAL(dropped(backend, "bad_signature"), forged + 1);
    CU_ASSERT_EQUAL(dropped(backend, "wrong_parent"), other + 1);
    CU_ASSERT_EQUAL(dropped(backend, "malformed"), malformed + 2);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static void
test_jupyter_attached_kernel_death_by_heartbeat(void)
{
  g_autofree char *file = NULL;
  GPid pid = start_scripted_kernel("die", &file);
  g_autoptr(cx_backend) backend = open_jupyter("connection-file", file, NULL);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "anything", NULL);
  double seconds = cx_test_seconds_since(start);
  CX_ASSERT_ERROR_TYPE(result, "KernelDied");
  CX_ASSERT_CONTAINS(cx_result_get_error_message(result), "heartbeat");
  /* The kernel never answers: without the heartbeat this would hang. */
  CU_ASSERT_TRUE(seconds < 1.1 + 10 * cx_test_slowdown());
  waitpid(pid, NULL, 0);
}

/* ---- Gateway mode: a real jupyter_server ---------------------------------------------- */

#define SERVER_TOKEN "cellexec-test-token"

static GPid server_pid;
static int server_port;
static char *server_runtime; /* its kernels' connection files: a marker */

static void
stop_server(void)
{
  if (server_pid <= 0)
    return;
  kill(server_pid, SIGTERM);
  gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
  while (waitpid(server_pid, NULL, WNOHANG) == 0 && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  kill(server_pid, SIGKILL);
  waitpid(server_pid, NULL, 0);
  server_pid = 0;
  cx_test_kill_processes_with(server_runtime);
}

/* The server's URL, started once per program (127.0.0.1, a token). */
static char *
server_url(void)
{
  setup_dirs();
  if (server_pid == 0) {
    g_autofree char *root = cx_test_tmpdir();
    server_runtime = g_build_filename(root, "server-runtime", NULL);
    server_port = jupyter_server_free_port();
    g_autoptr(GError) error = NULL;
    server_pid = jupyter_server_start(python(), server_port, SERVER_TOKEN, root, server_runtime, &error);
    CX_ASSERT_NO_ERROR(error);
    atexit(stop_server);
  }
  return g_strdup_printf("http://127.0.0.1:%d", server_port);
}

static void
test_jupyter_gateway_runs_cells(void)
{
  g_autofree char *url = server_url();
  {
    g_autoptr(cx_backend) backend = open_jupyter("gateway-url", url, "token", SERVER_TOKEN, NULL);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('hello')\n1 + 1", NULL);
    CX_ASSERT_CELL_OK(result);
    CX_ASSERT_STDOUT(result, "hello\n");
    CU_ASSERT_STRING_EQUAL(plain_of(result, 0), "2");
    g_autoptr(cx_result) failed = cx_test_run_cell(backend, "1 / 0", NULL);
    CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");
    g_autoptr(cx_result) fresh = cx_test_run_cell(backend, "print('result' in globals())", NULL);
    CX_ASSERT_STDOUT(fresh, "False\n");
    g_autoptr(cx_result) nul = cx_test_run_cell(backend, NUL_CELL, NULL);
    ASSERT_NUL_CELL_STDOUT(nul);

    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = session_keeping_state(backend);
    /* Timeout: the server interrupts its kernel. */
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_timeout(run, 0.5);
    gint64 start = g_get_monotonic_time();
    g_autoptr(cx_result) timed = cx_session_run_cell(session,
      "import time\nprint('waiting', flush=True)\ntime.sleep(30)", run, &error);
    CX_ASSERT_ERROR_TYPE(timed, "TimeoutError");
    CX_ASSERT_STDOUT(timed, "waiting\n");
    CU_ASSERT_TRUE(cx_test_seconds_since(start) < 0.5 + 10 * cx_test_slowdown()); /* sleeps 30 s */
    g_autoptr(cx_result) still = cx_session_run_cell(session, "print(kept)", NULL, &error);
    CX_ASSERT_STDOUT(still, "41\n");
    /* A kernel that dies behind the server: KernelDied, never a hang. */
    g_autoptr(cx_result) died = cx_session_run_cell(session, "import os\nos._exit(1)", NULL, &error);
    CX_ASSERT_ERROR_TYPE(died, "KernelDied");
    g_autoptr(cx_result) again = cx_session_run_cell(session, "print('again')", NULL, &error);
    CX_ASSERT_STDOUT(again, "again\n");
    g_autoptr(JsonObject) info = info_of(backend);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(info, "mode"), "gateway");
    /* Requests beside execute travel the WebSocket too. */
    cx_test_check_session_requests(backend, FALSE);
  }
  /* Every kernel it started there is deleted again. */
  CU_ASSERT_EQUAL(cx_test_processes_left_with(server_runtime, 10), 0);
}

/* Ctrl-C on `cellexec run` through a gateway: the kernels it started on
 * the server (the cell's and the pool's spare) are shut down. */
static void
test_jupyter_gateway_ctrl_c_leaves_no_kernel_on_the_server(void)
{
  g_autofree char *url = server_url();
  g_autofree char *gateway = g_strdup_printf("gateway-url=%s", url);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *started = g_build_filename(dir, "started", NULL);
  g_autofree char *code = g_strdup_printf("import pathlib, time\npathlib.Path('%s').touch()\n"
                                          "time.sleep(60)", started);
  g_autoptr(GSubprocess) host = cx_test_cellexec_start("run", "-b", "jupyter", "-o", gateway,
                                                       "-o", "token=" SERVER_TOKEN, "-c", code, NULL);
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (!g_file_test(started, G_FILE_TEST_EXISTS) && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  CU_ASSERT_TRUE(cx_test_count_processes_with(server_runtime) > 0);
  g_subprocess_send_signal(host, SIGINT);
  g_auto(cx_test_cli_run) run = cx_test_cellexec_finish(host, NULL);
  CU_ASSERT_EQUAL(run.status, 130);
  g_autofree char *printed = g_strconcat(run.out, run.err, NULL);
  CX_ASSERT_CONTAINS(printed, "KeyboardInterrupt");
  CU_ASSERT_EQUAL(cx_test_processes_left_with(server_runtime, 10), 0);
}

static void
test_jupyter_gateway_wrong_token_and_server_down(void)
{
  g_autofree char *url = server_url();
  g_autofree char *token = g_strdup_printf("token=%s", "not-the-token");
  g_autofree char *gateway = g_strdup_printf("gateway-url=%s", url);
  gint64 start = g_get_monotonic_time();
  g_auto(cx_test_cli_run) wrong = cx_test_cellexec(NULL, "run", "-b", "jupyter", "-o", gateway,
                                                   "-o", token, "-c", "1", NULL);
  CU_ASSERT_EQUAL(wrong.status, 2);
  CX_ASSERT_CONTAINS(wrong.err, "refused the token");
  CU_ASSERT_PTR_NOT_NULL(wrong.err);
  if (wrong.err != NULL)
    CU_ASSERT_PTR_NULL(strchr(wrong.err, '\n') != NULL ? strchr(strchr(wrong.err, '\n') + 1, '\n') : NULL);

  g_autofree char *down = g_strdup_printf("gateway-url=http://127.0.0.1:%d", jupyter_server_free_port());
  g_auto(cx_test_cli_run) nobody = cx_test_cellexec(NULL, "run", "-b", "jupyter", "-o", down,
                                                    "-o", token, "-c", "1", NULL);
  CU_ASSERT_EQUAL(nobody.status, 2);
  CX_ASSERT_CONTAINS(nobody.err, "cannot reach the Jupyter server");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 20 * cx_test_slowdown());
}

/* ---- Shutdown ----------------------------------------------------------------------- */

static void
test_jupyter_shutdown_leaves_nothing(void)
{
  g_clear_pointer(&shared_backend, cx_backend_free);
  {
    g_autoptr(cx_backend) backend = open_jupyter("pool-size", "3", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "1", NULL);
    CX_ASSERT_CELL_OK(result);
    CU_ASSERT_TRUE(cx_test_count_processes_with(runtime_dir) > 0);
  }
  CU_ASSERT_EQUAL(cx_test_processes_left_with(runtime_dir, 5), 0);
  CU_ASSERT_EQUAL(connection_files(), 0);

  /* The CLI: a cell, exit, nothing left. */
  g_auto(cx_test_cli_run) run = cx_test_cellexec(NULL, "run", "-b", "jupyter", "-c", "print(6 * 7)", NULL);
  CU_ASSERT_EQUAL(run.status, 0);
  CU_ASSERT_STRING_EQUAL(run.out, "42\n");
  CU_ASSERT_EQUAL(cx_test_processes_left_with(runtime_dir, 5), 0);
  CU_ASSERT_EQUAL(connection_files(), 0);

  /* The host killed outright (SIGKILL): its kernels die with it, and
   * there is no connection file to leave behind once they have started. */
  g_autoptr(GSubprocess) host = cx_test_cellexec_start("run", "-b", "jupyter", "-o", "pool-size=1",
                                                       "-c", "import time\ntime.sleep(60)", NULL);
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while ((cx_test_count_processes_with(runtime_dir) < 2 || connection_files() > 0) &&
         g_get_monotonic_time() < deadline)
    g_usleep(50 * 1000);
  CU_ASSERT_EQUAL(cx_test_count_processes_with(runtime_dir), 2); /* its cell's, a warm one */
  g_subprocess_force_exit(host);
  g_subprocess_wait(host, NULL, NULL);
  CU_ASSERT_EQUAL(cx_test_processes_left_with(runtime_dir, 5), 0);
  CU_ASSERT_EQUAL(connection_files(), 0);
  cx_test_kill_processes_with(runtime_dir);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_jupyter_runs_cells", test_jupyter_runs_cells },
    { "test_jupyter_error_outputs_are_the_kernels", test_jupyter_error_outputs_are_the_kernels },
    { "test_jupyter_input_fails_at_once", test_jupyter_input_fails_at_once },
    { "test_jupyter_display_updates_and_clear", test_jupyter_display_updates_and_clear },
    { "test_jupyter_streams_output_live", test_jupyter_streams_output_live },
    { "test_jupyter_stateless_cells_get_fresh_kernels", test_jupyter_stateless_cells_get_fresh_kernels },
    { "test_jupyter_run_options", test_jupyter_run_options },
    { "test_jupyter_input_asks_the_callback", test_jupyter_input_asks_the_callback },
    { "test_jupyter_unstored_cell_keeps_the_history", test_jupyter_unstored_cell_keeps_the_history },
    { "test_jupyter_code_with_nul_fails_as_python_fails",
      test_jupyter_code_with_nul_fails_as_python_fails },
    { "test_jupyter_session_answers_jupyter_requests", test_jupyter_session_answers_jupyter_requests },
    { "test_jupyter_os_exit_is_kernel_died", test_jupyter_os_exit_is_kernel_died },
    { "test_jupyter_timeout_interrupts_a_busy_loop", test_jupyter_timeout_interrupts_a_busy_loop },
    { "test_jupyter_shown_error_keeps_its_place", test_jupyter_shown_error_keeps_its_place },
    { "test_jupyter_output_limit_keeps_head_and_tail", test_jupyter_output_limit_keeps_head_and_tail },
    { "test_jupyter_output_limit_stops_a_flooding_kernel",
      test_jupyter_output_limit_stops_a_flooding_kernel },
    { "test_jupyter_wide_display_does_not_abort_the_host",
      test_jupyter_wide_display_does_not_abort_the_host },
    { "test_jupyter_kernelspec_is_found_and_python_resolved", test_jupyter_kernelspec_is_found_and_python_resolved },
    { "test_jupyter_eight_kernels_at_once", test_jupyter_eight_kernels_at_once },
    { "test_jupyter_session_keeps_state_and_survives_a_kill", test_jupyter_session_keeps_state_and_survives_a_kill },
    { "test_jupyter_timeout_kills_a_cell_blocked_in_c", test_jupyter_timeout_kills_a_cell_blocked_in_c },
    { "test_jupyter_grace_is_waited_not_spun", test_jupyter_grace_is_waited_not_spun },
    { "test_jupyter_attach_by_connection_file", test_jupyter_attach_by_connection_file },
    { "test_jupyter_drops_forged_misdirected_and_malformed_messages", test_jupyter_drops_forged_misdirected_and_malformed_messages },
    { "test_jupyter_attached_kernel_death_by_heartbeat", test_jupyter_attached_kernel_death_by_heartbeat },
    { "test_jupyter_flooding_kernel_is_killed_at_its_timeout",
      test_jupyter_flooding_kernel_is_killed_at_its_timeout },
    { "test_jupyter_flooding_attached_kernel_is_given_up",
      test_jupyter_flooding_attached_kernel_is_given_up },
    { "test_jupyter_cli_ends_on_sigterm_when_the_kernel_ignores_interrupts",
      test_jupyter_cli_ends_on_sigterm_when_the_kernel_ignores_interrupts },
    { "test_jupyter_odd_outputs_and_reply_status_are_reported",
      test_jupyter_odd_outputs_and_reply_status_are_reported },
    { "test_jupyter_output_after_a_lost_idle_is_said_to_be_missing",
      test_jupyter_output_after_a_lost_idle_is_said_to_be_missing },
    { "test_jupyter_garbage_peer_fails_within_start_timeout",
      test_jupyter_garbage_peer_fails_within_start_timeout },
    { "test_jupyter_gateway_runs_cells", test_jupyter_gateway_runs_cells },
    { "test_jupyter_gateway_ctrl_c_leaves_no_kernel_on_the_server",
      test_jupyter_gateway_ctrl_c_leaves_no_kernel_on_the_server },
    { "test_jupyter_gateway_wrong_token_and_server_down", test_jupyter_gateway_wrong_token_and_server_down },
    { "test_jupyter_shutdown_leaves_nothing", test_jupyter_shutdown_leaves_nothing },
    { NULL }
  };
  cx_test_add_suite("jupyter", tests);
}
