/* bench_subprocess: cost per cell of the subprocess backend through the
 * public API, next to two ways of giving each cell a process of its own.
 *
 *   make bench-subprocess                # or: bench/bench_subprocess [-n N] ...
 *
 * Measured, all with the cell `print('hello')\n1 + 1`:
 *   - stateless cells (fork server: a fresh process per cell), one caller;
 *   - session round trips (one dedicated process);
 *   - throughput of stateless cells with two callers at once;
 *   - mode = spawn (a new interpreter per cell), for reference;
 * and, in the same invocation, the baselines:
 *   - `python3 -c CELL` started per cell (fork/exec, stdout captured);
 *   - a multiprocessing "spawn" process per cell running IPython's
 *     run_cell under capture_output() (bench/baseline_subprocess.py).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cellexec/cellexec.h>

#include "bench/backend_options.h"
#include "bench/timing.h"

#define CELL "print('hello')\n1 + 1"
#define TARGET_STATELESS_MEDIAN_NS 1500000.0
#define TARGET_SPEEDUP_OVER_PYTHON_C 8.0
#define TARGET_SESSION_MEDIAN_NS 100000.0
#define TARGET_THROUGHPUT 1000.0

static gboolean
check_result(cx_result *result, GError **error)
{
  if (result == NULL)
    return FALSE;
  gboolean ok = cx_result_get_success(result) &&
                g_str_equal(cx_result_get_stdout(result, NULL), "hello\n") &&
                cx_result_get_n_outputs(result) == 1;
  if (!ok)
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "unexpected result: %s",
                cx_result_to_json(result, FALSE));
  cx_result_free(result);
  return ok;
}

/* Time ITERATIONS calls of RUN_ONE after WARMUP untimed ones. */
typedef cx_result *(*cell_runner)(gpointer target, GError **error);

static cx_result *
run_stateless(gpointer backend, GError **error)
{
  return cx_backend_run_cell(backend, CELL, NULL, error);
}

static cx_result *
run_in_session(gpointer session, GError **error)
{
  return cx_session_run_cell(session, CELL, NULL, error);
}

static gboolean
time_cells(cell_runner run_one, gpointer target, int iterations, int warmup, timing *result,
           GError **error)
{
  g_autofree double *samples = g_new(double, iterations);
  for (int i = 0; i < warmup + iterations; i++) {
    gint64 start = now_ns();
    cx_result *cell = run_one(target, error);
    gint64 elapsed = now_ns() - start;
    if (!check_result(cell, error))
      return FALSE;
    if (i >= warmup)
      samples[i - warmup] = (double)elapsed;
  }
  *result = summarise(samples, iterations);
  return TRUE;
}

typedef struct {
  cx_backend *backend;
  gint64 until_ns;
  guint cells;
  guint failures;
} caller;

static gpointer
call_until(gpointer data)
{
  caller *c = data;
  while (now_ns() < c->until_ns) {
    if (check_result(cx_backend_run_cell(c->backend, CELL, NULL, NULL), NULL))
      c->cells++;
    else
      c->failures++;
  }
  return NULL;
}

static double
measure_throughput(cx_backend *backend, int callers, double seconds, guint *failures)
{
  caller state[8] = { 0 };
  GThread *threads[8];
  gint64 start = now_ns();
  for (int i = 0; i < callers; i++) {
    state[i] = (caller){ .backend = backend, .until_ns = start + (gint64)(seconds * 1e9) };
    threads[i] = g_thread_new("caller", call_until, &state[i]);
  }
  guint cells = 0;
  *failures = 0;
  for (int i = 0; i < callers; i++) {
    g_thread_join(threads[i]);
    cells += state[i].cells;
    *failures += state[i].failures;
  }
  return cells / ((now_ns() - start) / 1e9);
}

static gboolean
time_python_c(int iterations, timing *result, GError **error)
{
  g_autofree double *samples = g_new(double, iterations);
  const char *argv[] = { CX_PYTHON_EXECUTABLE, "-c", CELL, NULL };
  for (int i = 0; i < iterations; i++) {
    g_autofree char *out = NULL;
    int status;
    gint64 start = now_ns();
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                      &status, error) ||
        !g_spawn_check_wait_status(status, error))
      return FALSE;
    samples[i] = (double)(now_ns() - start);
  }
  *result = summarise(samples, iterations);
  return TRUE;
}

static gboolean
time_mp_ipython(const char *script, int iterations, timing *result, char **missing,
                GError **error)
{
  g_autofree char *n = g_strdup_printf("%d", iterations);
  const char *argv[] = { CX_PYTHON_EXECUTABLE, script, "--cell", CELL, "--iterations", n, NULL };
  g_autofree char *out = NULL;
  int status;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                    &status, error) ||
      !g_spawn_check_wait_status(status, error))
    return FALSE;
  g_autoptr(JsonNode) node = json_from_string(out, error);
  if (node == NULL)
    return FALSE;
  JsonObject *object = json_node_get_object(node);
  JsonArray *array = json_object_has_member(object, "mp_ipython")
                       ? json_object_get_array_member(object, "mp_ipython") : NULL;
  if (array == NULL || json_array_get_length(array) == 0) {
    *missing = g_strdup(json_object_get_string_member_with_default(object, "mp_ipython_missing", "?"));
    return TRUE;
  }
  gsize count = json_array_get_length(array);
  g_autofree double *samples = g_new(double, count);
  for (gsize i = 0; i < count; i++)
    samples[i] = (double)json_array_get_int_element(array, i);
  *result = summarise(samples, count);
  return TRUE;
}

static void
print_row(const char *name, const timing *t)
{
  printf("  %-44s %10.1f µs %10.1f µs\n", name, t->median_ns / 1000, t->p99_ns / 1000);
}

static const char *
verdict(gboolean met)
{
  return met ? "met" : "MISSED";
}

int
main(int argc, char **argv)
{
  int iterations = 2000, session_iterations = 20000, spawn_iterations = 20;
  int python_c_iterations = 100, mp_iterations = 20;
  double throughput_seconds = 3.0;
  const char *plugins_dir = CX_BENCH_PLUGINS_DIR;
  const char *baseline_script = CX_BENCH_BASELINE;
  g_auto(GStrv) backend_options = NULL;
  GOptionEntry entries[] = {
    { "iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "stateless cells timed (2000)", "N" },
    { "session-iterations", 0, 0, G_OPTION_ARG_INT, &session_iterations,
      "session round trips timed (20000)", "N" },
    { "spawn-iterations", 0, 0, G_OPTION_ARG_INT, &spawn_iterations, "mode=spawn cells (20)", "N" },
    { "python-c-iterations", 0, 0, G_OPTION_ARG_INT, &python_c_iterations,
      "python3 -c runs (100)", "N" },
    { "mp-iterations", 0, 0, G_OPTION_ARG_INT, &mp_iterations,
      "multiprocessing + IPython cells (20)", "N" },
    { "throughput-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &throughput_seconds,
      "length of the two-caller run (3)", "S" },
    { "plugins", 0, 0, G_OPTION_ARG_FILENAME, &plugins_dir, "plugin directory", "DIR" },
    { "baseline", 0, 0, G_OPTION_ARG_FILENAME, &baseline_script, "baseline script", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &backend_options,
      "set a subprocess backend option (repeatable), e.g. -o preload=", "KEY=VALUE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- time the subprocess backend");
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || iterations < 1 ||
      session_iterations < 1 || spawn_iterations < 1 || python_c_iterations < 1) {
    fprintf(stderr, "bench_subprocess: %s\n", error ? error->message : "iterations must be >= 1");
    return 2;
  }

  const char *dirs[] = { plugins_dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  static const char *const forkserver[] = { "mode=forkserver", NULL };
  static const char *const spawn[] = { "mode=spawn", NULL };
  g_autoptr(cx_backend) backend = bench_open_backend(registry, "subprocess", backend_options,
                                                     forkserver, &error);
  g_autoptr(cx_backend) spawner = backend != NULL
    ? bench_open_backend(registry, "subprocess", backend_options, spawn, &error) : NULL;
  g_autoptr(cx_session) session = spawner != NULL ? cx_session_open(backend, &error) : NULL;
  timing stateless, in_session, spawned, python_c, mp_ipython = { 0 };
  if (session == NULL ||
      !time_cells(run_stateless, backend, iterations, iterations / 10, &stateless, &error) ||
      !time_cells(run_in_session, session, session_iterations, session_iterations / 10,
                  &in_session, &error) ||
      !time_cells(run_stateless, spawner, spawn_iterations, 2, &spawned, &error)) {
    fprintf(stderr, "bench_subprocess: %s\n", error->message);
    return 1;
  }
  guint failures;
  double throughput = measure_throughput(backend, 2, throughput_seconds, &failures);
  g_autofree char *mp_missing = NULL;
  if (!time_python_c(python_c_iterations, &python_c, &error) ||
      !time_mp_ipython(baseline_script, mp_iterations, &mp_ipython, &mp_missing, &error)) {
    fprintf(stderr, "bench_subprocess: a baseline failed: %s\n", error->message);
    return 1;
  }

  printf("cell %s; %d stateless cells, %d session round trips, %d spawn-mode cells,\n"
         "%d python3 -c runs, %d multiprocessing + IPython cells\n",
         "print('hello')\\n1 + 1", iterations, session_iterations, spawn_iterations,
         python_c_iterations, mp_iterations);
  printf("  %-44s %13s %13s\n", "per cell", "median", "p99");
  print_row("subprocess, stateless (fork server)", &stateless);
  print_row("subprocess, session round trip", &in_session);
  print_row("subprocess, stateless, mode = spawn", &spawned);
  print_row("python3 -c CELL, a process per cell", &python_c);
  if (mp_missing == NULL)
    print_row("multiprocessing spawn + IPython run_cell", &mp_ipython);
  else
    printf("  multiprocessing + IPython: not measured (%s)\n", mp_missing);
  printf("  %-44s %10.0f cells/s (%u failed)\n", "stateless throughput, 2 callers", throughput,
         failures);

  double speedup = python_c.median_ns / stateless.median_ns;
  printf("\n");
  printf("  stateless median <= 1.5 ms:     %s (%.0f µs)\n",
         verdict(stateless.median_ns <= TARGET_STATELESS_MEDIAN_NS), stateless.median_ns / 1000);
  printf("  python3 -c / stateless >= 8x:   %s (%.1fx)\n",
         verdict(speedup >= TARGET_SPEEDUP_OVER_PYTHON_C), speedup);
  printf("  session round trip <= 100 µs:   %s (%.0f µs)\n",
         verdict(in_session.median_ns <= TARGET_SESSION_MEDIAN_NS), in_session.median_ns / 1000);
  printf("  2-caller throughput >= 1000/s:  %s (%.0f cells/s)\n",
         verdict(throughput >= TARGET_THROUGHPUT), throughput);
  if (mp_missing == NULL)
    printf("  multiprocessing+IPython / stateless: %.0fx\n", mp_ipython.median_ns / stateless.median_ns);
  return 0;
}
