/* bench_local: cost per cell of the local backend through the public API,
 * next to plain Python and IPython running the same cells.
 *
 *   make bench-local                     # or: bench/bench_local [-n N] ...
 *
 * Two runs, each timed one cell at a time with cx_backend_run_cell (no run
 * options), freeing each result:
 *
 *   repeated  `print('hello')\n1 + 1`, the same text every time: what the
 *             compile cache makes cheap;
 *   distinct  `print('hello')\nN + 1` with N the cell's number, a text never
 *             seen before every time (warm-up and check cells included),
 *             so no cache can reuse anything.
 *
 * The baselines run the same cells in CX_PYTHON_EXECUTABLE, by
 * bench/baseline_local.py, in the same invocation.  Reports median and
 * 99th percentile per cell, the ratios, and the load average.  The backend
 * is opened with its defaults, or with the options given by -o KEY=VALUE.
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
#define CELL_DISPLAY "print('hello')\\n1 + 1"
/* A printf format of one int, N; bench/baseline_local.py formats it with
 * Python's `%`, which reads it the same way. */
#define DISTINCT_CELL "print('hello')\n%d + 1"
#define DISTINCT_CELL_DISPLAY "print('hello')\\nN + 1"
#define TARGET_MEDIAN_NS 10000.0
#define TARGET_SPEEDUP_OVER_IPYTHON 30.0
#define TARGET_DISTINCT_SPEEDUP_OVER_IPYTHON 15.0

/* Cell N of the distinct run, into BUFFER. */
static const char *
distinct_cell(char *buffer, gsize size, int n)
{
  g_snprintf(buffer, size, DISTINCT_CELL, n);
  return buffer;
}

/* ITERATIONS cells after WARMUP untimed ones.  With DISTINCT, cell i is
 * DISTINCT_CELL with N = FIRST + i; otherwise always CELL. */
static gboolean
time_local(cx_backend *backend, gboolean distinct, int first, int iterations, int warmup,
           timing *result, GError **error)
{
  g_autofree double *samples = g_new(double, iterations);
  char buffer[64];
  for (int i = 0; i < warmup + iterations; i++) {
    const char *source = distinct ? distinct_cell(buffer, sizeof buffer, first + i) : CELL;
    gint64 start = now_ns();
    cx_result *cell = cx_backend_run_cell(backend, source, NULL, error);
    if (cell == NULL)
      return FALSE;
    cx_result_free(cell);
    gint64 elapsed = now_ns() - start;
    if (i >= warmup)
      samples[i - warmup] = (double)elapsed;
  }
  *result = summarise(samples, iterations);
  return TRUE;
}

/* The result of SOURCE, checked once before timing: `hello\n` on stdout
 * and EXPECTED displayed.  A benchmark of a wrong answer is worth nothing. */
static gboolean
check_local(cx_backend *backend, const char *source, const char *expected, GError **error)
{
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, source, NULL, error);
  if (result == NULL)
    return FALSE;
  JsonObject *bundle = cx_result_get_n_outputs(result) == 1 ? cx_result_get_output(result, 0) : NULL;
  if (!cx_result_get_success(result) || strcmp(cx_result_get_stdout(result, NULL), "hello\n") != 0 ||
      bundle == NULL || g_strcmp0(json_object_get_string_member(bundle, "text/plain"), expected) != 0) {
    g_autofree char *json = cx_result_to_json(result, FALSE);
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "unexpected result: %s", json);
    return FALSE;
  }
  return TRUE;
}

static gboolean
timing_from_json(JsonObject *object, const char *member, timing *result)
{
  JsonArray *array = json_object_has_member(object, member)
                       ? json_object_get_array_member(object, member) : NULL;
  guint n = array != NULL ? json_array_get_length(array) : 0;
  if (n == 0)
    return FALSE;
  g_autofree double *samples = g_new(double, n);
  for (guint i = 0; i < n; i++)
    samples[i] = json_array_get_double_element(array, i);
  *result = summarise(samples, n);
  return TRUE;
}

static JsonNode *
run_baselines(const char *script, int iterations, int distinct_iterations,
              int ipython_iterations, GError **error)
{
  g_autofree char *n = g_strdup_printf("%d", iterations);
  g_autofree char *n_distinct = g_strdup_printf("%d", distinct_iterations);
  g_autofree char *n_ipython = g_strdup_printf("%d", ipython_iterations);
  const char *argv[] = { CX_PYTHON_EXECUTABLE, script, "--cell", CELL, "--iterations", n,
                         "--distinct-cell", DISTINCT_CELL, "--distinct-iterations", n_distinct,
                         "--ipython-iterations", n_ipython, NULL };
  g_autofree char *out = NULL;
  int status;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                    &status, error) ||
      !g_spawn_check_wait_status(status, error))
    return NULL;
  return cx_json_from_string(out, -1, error);
}

typedef struct {
  timing local, exec_loop, ipython;
  gboolean have_exec_loop, have_ipython;
} run_timings;

static void
print_row(const char *name, const timing *t)
{
  printf("  %-38s %10.2f µs %10.2f µs\n", name, t->median_ns / 1000, t->p99_ns / 1000);
}

static void
print_table(const char *title, const run_timings *run, JsonObject *baselines)
{
  printf("%s\n", title);
  printf("  %-38s %13s %13s\n", "per cell", "median", "p99");
  print_row("cellexec local (cx_backend_run_cell)", &run->local);
  if (run->have_exec_loop)
    print_row("python3 exec(compile()) + StringIO", &run->exec_loop);
  if (run->have_ipython)
    print_row("IPython run_cell + capture_output", &run->ipython);
  else
    printf("  IPython: not measured (%s)\n",
           json_object_get_string_member_with_default(baselines, "ipython_missing", "?"));
}

/* "IPython / local" and "exec loop / local" for one run; FALSE if the
 * speed-up over IPython misses TARGET. */
static gboolean
print_ratios(const char *run_name, const run_timings *run, double target)
{
  if (run->have_exec_loop)
    printf("  %-8s exec loop / local:  %6.1fx\n", run_name,
           run->exec_loop.median_ns / run->local.median_ns);
  if (!run->have_ipython)
    return FALSE;
  double speedup = run->ipython.median_ns / run->local.median_ns;
  gboolean met = speedup >= target;
  printf("  %-8s IPython / local:    %6.1fx (target >= %.0fx: %s)\n", run_name, speedup, target,
         met ? "met" : "MISSED");
  return met;
}

static void
print_load_average(void)
{
  g_autofree char *contents = NULL;
  if (!g_file_get_contents("/proc/loadavg", &contents, NULL, NULL))
    return;
  g_auto(GStrv) fields = g_strsplit(contents, " ", 4);
  if (g_strv_length(fields) >= 3)
    printf("load average %s %s %s (1, 5, 15 min) on %u CPUs\n", fields[0], fields[1], fields[2],
           g_get_num_processors());
}

int
main(int argc, char **argv)
{
  int iterations = 20000, distinct_iterations = 20000, warmup = 2000, ipython_iterations = 2000;
  const char *plugins_dir = CX_BENCH_PLUGINS_DIR;
  const char *baseline_script = CX_BENCH_BASELINE;
  g_auto(GStrv) backend_options = NULL;
  GOptionEntry entries[] = {
    { "iterations", 'n', 0, G_OPTION_ARG_INT, &iterations,
      "repeated cells timed (default 20000)", "N" },
    { "distinct-iterations", 'd', 0, G_OPTION_ARG_INT, &distinct_iterations,
      "distinct cells timed (default 20000)", "N" },
    { "warmup", 'w', 0, G_OPTION_ARG_INT, &warmup,
      "cells run first in each run, untimed (default 2000)", "N" },
    { "ipython-iterations", 0, 0, G_OPTION_ARG_INT, &ipython_iterations,
      "cells timed for IPython in each run, which is slow (default 2000)", "N" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &backend_options,
      "open the local backend with option KEY set to VALUE (repeatable)", "KEY=VALUE" },
    { "plugins", 0, 0, G_OPTION_ARG_FILENAME, &plugins_dir, "plugin directory", "DIR" },
    { "baseline", 0, 0, G_OPTION_ARG_FILENAME, &baseline_script, "baseline script", "FILE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- time the local backend");
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || iterations < 1 ||
      distinct_iterations < 1 || ipython_iterations < 1 || warmup < 0) {
    fprintf(stderr, "bench_local: %s\n", error ? error->message : "iterations must be >= 1");
    return 2;
  }

  const char *dirs[] = { plugins_dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  g_autoptr(cx_backend) backend = bench_open_backend(registry, "local", backend_options, NULL, &error);
  run_timings repeated = { 0 }, distinct = { 0 };
  char first_cell[64];
  /* The distinct run's check cell is N = 0, its warm-up and timed cells
   * N = 1, 2, ... */
  if (backend == NULL || !check_local(backend, CELL, "2", &error) ||
      !time_local(backend, FALSE, 0, iterations, warmup, &repeated.local, &error) ||
      !check_local(backend, distinct_cell(first_cell, sizeof first_cell, 0), "1", &error) ||
      !time_local(backend, TRUE, 1, distinct_iterations, warmup, &distinct.local, &error)) {
    fprintf(stderr, "bench_local: %s\n", error->message);
    return 1;
  }
  g_autoptr(JsonNode) baselines =
    run_baselines(baseline_script, iterations, distinct_iterations, ipython_iterations, &error);
  if (baselines == NULL) {
    fprintf(stderr, "bench_local: the Python baselines failed: %s\n", error->message);
    return 1;
  }
  JsonObject *object = json_node_get_object(baselines);
  repeated.have_exec_loop = timing_from_json(object, "exec_loop", &repeated.exec_loop);
  repeated.have_ipython = timing_from_json(object, "ipython", &repeated.ipython);
  distinct.have_exec_loop = timing_from_json(object, "distinct_exec_loop", &distinct.exec_loop);
  distinct.have_ipython = timing_from_json(object, "distinct_ipython", &distinct.ipython);

  g_autofree char *repeated_title =
    g_strdup_printf("repeated cell %s: %d cells after %d warm-up (IPython: %d)", CELL_DISPLAY,
                    iterations, warmup, ipython_iterations);
  g_autofree char *distinct_title =
    g_strdup_printf("distinct cells %s, N = 0, 1, 2, ...: %d cells after %d warm-up (IPython: %d)",
                    DISTINCT_CELL_DISPLAY, distinct_iterations, warmup, ipython_iterations);
  if (backend_options != NULL) {
    g_autofree char *joined = g_strjoinv(", ", backend_options);
    printf("local backend options: %s\n", joined);
  }
  print_table(repeated_title, &repeated, object);
  printf("\n");
  print_table(distinct_title, &distinct, object);

  printf("\n");
  gboolean met = repeated.local.median_ns <= TARGET_MEDIAN_NS;
  printf("  repeated median <= %.0f µs:     %s (%.2f µs)\n", TARGET_MEDIAN_NS / 1000,
         met ? "met" : "MISSED", repeated.local.median_ns / 1000);
  print_ratios("repeated", &repeated, TARGET_SPEEDUP_OVER_IPYTHON);
  print_ratios("distinct", &distinct, TARGET_DISTINCT_SPEEDUP_OVER_IPYTHON);
  print_load_average();
  return 0;
}
