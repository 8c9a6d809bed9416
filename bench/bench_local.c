/* bench_local: cost per cell of the local backend through the public API,
 * next to plain Python and IPython running the same cell.
 *
 *   make bench-local                     # or: bench/bench_local [-n N] ...
 *
 * The local backend runs `print('hello')\n1 + 1` N times with
 * cx_backend_run_cell, freeing each result; the baselines run in
 * CX_PYTHON_EXECUTABLE by bench/baseline_local.py in the same invocation.
 * Reports median and 99th percentile per cell, and the ratios.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cellexec/cellexec.h>

#include "bench/timing.h"

#define CELL "print('hello')\n1 + 1"
#define TARGET_MEDIAN_NS 10000.0
#define TARGET_SPEEDUP_OVER_IPYTHON 30.0

static gboolean
time_local(cx_backend *backend, int iterations, int warmup, timing *result, GError **error)
{
  g_autofree double *samples = g_new(double, iterations);
  for (int i = 0; i < warmup + iterations; i++) {
    gint64 start = now_ns();
    cx_result *cell = cx_backend_run_cell(backend, CELL, NULL, error);
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

/* The result of the cell, checked once: a benchmark of a wrong answer is
 * worth nothing. */
static gboolean
check_local(cx_backend *backend, GError **error)
{
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, CELL, NULL, error);
  if (result == NULL)
    return FALSE;
  JsonObject *bundle = cx_result_get_n_outputs(result) == 1 ? cx_result_get_output(result, 0) : NULL;
  if (!cx_result_get_success(result) || strcmp(cx_result_get_stdout(result, NULL), "hello\n") != 0 ||
      bundle == NULL || g_strcmp0(json_object_get_string_member(bundle, "text/plain"), "2") != 0) {
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
run_baselines(const char *script, int iterations, int ipython_iterations, GError **error)
{
  g_autofree char *n = g_strdup_printf("%d", iterations);
  g_autofree char *n_ipython = g_strdup_printf("%d", ipython_iterations);
  const char *argv[] = { CX_PYTHON_EXECUTABLE, script, "--cell", CELL, "--iterations", n,
                         "--ipython-iterations", n_ipython, NULL };
  g_autofree char *out = NULL;
  int status;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                    &status, error) ||
      !g_spawn_check_wait_status(status, error))
    return NULL;
  return json_from_string(out, error);
}

static void
print_row(const char *name, const timing *t)
{
  printf("  %-34s %10.2f µs %10.2f µs\n", name, t->median_ns / 1000, t->p99_ns / 1000);
}

int
main(int argc, char **argv)
{
  int iterations = 20000, warmup = 2000, ipython_iterations = 2000;
  const char *plugins_dir = CX_BENCH_PLUGINS_DIR;
  const char *baseline_script = CX_BENCH_BASELINE;
  GOptionEntry entries[] = {
    { "iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "cells timed (default 20000)", "N" },
    { "warmup", 'w', 0, G_OPTION_ARG_INT, &warmup, "cells run first, untimed (default 2000)", "N" },
    { "ipython-iterations", 0, 0, G_OPTION_ARG_INT, &ipython_iterations,
      "cells timed for IPython, which is slow (default 2000)", "N" },
    { "plugins", 0, 0, G_OPTION_ARG_FILENAME, &plugins_dir, "plugin directory", "DIR" },
    { "baseline", 0, 0, G_OPTION_ARG_FILENAME, &baseline_script, "baseline script", "FILE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- time the local backend");
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || iterations < 1 || warmup < 0) {
    fprintf(stderr, "bench_local: %s\n", error ? error->message : "iterations must be >= 1");
    return 2;
  }

  const char *dirs[] = { plugins_dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "local", NULL, &error);
  timing local;
  if (backend == NULL || !check_local(backend, &error) ||
      !time_local(backend, iterations, warmup, &local, &error)) {
    fprintf(stderr, "bench_local: %s\n", error->message);
    return 1;
  }
  g_autoptr(JsonNode) baselines = run_baselines(baseline_script, iterations, ipython_iterations, &error);
  if (baselines == NULL) {
    fprintf(stderr, "bench_local: the Python baselines failed: %s\n", error->message);
    return 1;
  }
  JsonObject *object = json_node_get_object(baselines);
  timing exec_loop, ipython;
  gboolean have_exec_loop = timing_from_json(object, "exec_loop", &exec_loop);
  gboolean have_ipython = timing_from_json(object, "ipython", &ipython);

  printf("cell %s, %d cells after %d warm-up (IPython: %d)\n", "print('hello')\\n1 + 1",
         iterations, warmup, ipython_iterations);
  printf("  %-34s %13s %13s\n", "per cell", "median", "p99");
  print_row("cellexec local (cx_backend_run_cell)", &local);
  if (have_exec_loop)
    print_row("python3 exec(compile()) + StringIO", &exec_loop);
  if (have_ipython)
    print_row("IPython run_cell + capture_output", &ipython);
  else
    printf("  IPython: not measured (%s)\n",
           json_object_get_string_member_with_default(object, "ipython_missing", "?"));

  printf("\n");
  if (have_exec_loop)
    printf("  exec loop / local:   %6.1fx\n", exec_loop.median_ns / local.median_ns);
  gboolean met = local.median_ns <= TARGET_MEDIAN_NS;
  printf("  median <= %.0f µs:    %s (%.2f µs)\n", TARGET_MEDIAN_NS / 1000, met ? "met" : "MISSED",
         local.median_ns / 1000);
  if (have_ipython) {
    double speedup = ipython.median_ns / local.median_ns;
    printf("  IPython / local:     %6.1fx (target >= %.0fx: %s)\n", speedup,
           TARGET_SPEEDUP_OVER_IPYTHON, speedup >= TARGET_SPEEDUP_OVER_IPYTHON ? "met" : "MISSED");
  }
  return 0;
}
