/* bench/bench_jupyter: the jupyter backend against jupyter_client driving
 * the same kind of kernel (ipykernel, kernelspec python3) in the same
 * invocation (bench/baseline_jupyter.py).  See bench/README.md.
 *
 *   bench_jupyter [-n CELLS] [--no-gateway] [--no-baseline]
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cellexec/cellexec.h>

#include "bench/backend_options.h"
#include "bench/timing.h"
#include "tests/test_jupyter_server.h"

#define CELL "print('hello')\n1 + 1"

static cx_registry *registry;

/* The jupyter backend with the KEY=VALUE options MORE (may be NULL). */
static cx_backend *
open_jupyter(const char *const *more)
{
  g_autoptr(GError) error = NULL;
  cx_backend *backend = bench_open_backend(registry, "jupyter", NULL, more, &error);
  if (backend == NULL)
    g_error("cannot open the jupyter backend: %s", error->message);
  return backend;
}

static void
check(cx_result *result)
{
  if (result == NULL || !cx_result_get_success(result) ||
      strcmp(cx_result_get_stdout(result, NULL), "hello\n") != 0)
    g_error("a cell went wrong: %s", result ? cx_result_to_json(result, FALSE) : "no result");
}

static double
cpu_seconds(void)
{
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static gint64
info_int(cx_backend *backend, const char *key)
{
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  return json_object_get_int_member_with_default(json_node_get_object(info), key, 0);
}

static gint64
pool_ready(cx_backend *backend)
{
  return info_int(backend, "pool_ready");
}

/* Wait until BACKEND starts no kernel: a replacement starting in the
 * background (~1 s of CPU) would be measured with the cells. */
static void
settle(cx_backend *backend)
{
  while (info_int(backend, "kernels_starting") > 0)
    g_usleep(20 * 1000);
  g_usleep(100 * 1000);
}

typedef struct {
  double median_ms, p99_ms, cells_per_s, cpu_ms;
} sequential;

static sequential
run_sequential(cx_session *session, int n)
{
  for (int i = 0; i < 20; i++) {
    g_autoptr(cx_result) r = cx_session_run_cell(session, CELL, NULL, NULL);
    check(r);
  }
  double *samples = g_new(double, n);
  double cpu0 = cpu_seconds();
  gint64 t0 = now_ns();
  for (int i = 0; i < n; i++) {
    gint64 s = now_ns();
    cx_result *r = cx_session_run_cell(session, CELL, NULL, NULL);
    samples[i] = now_ns() - s;
    check(r);
    cx_result_free(r);
  }
  double wall = (now_ns() - t0) / 1e9;
  sequential out = { 0 };
  out.cpu_ms = (cpu_seconds() - cpu0) * 1e3 / n;
  timing t = summarise(samples, n);
  out.median_ms = t.median_ns / 1e6;
  out.p99_ms = t.p99_ns / 1e6;
  out.cells_per_s = n / wall;
  g_free(samples);
  return out;
}

typedef struct {
  cx_session *session;
  int n;
} pool_worker;

static gpointer
pool_run(gpointer data)
{
  pool_worker *w = data;
  for (int i = 0; i < w->n; i++) {
    cx_result *r = cx_session_run_cell(w->session, CELL, NULL, NULL);
    check(r);
    cx_result_free(r);
  }
  return NULL;
}

static double
run_pool4(int n)
{
  const char *pairs[] = { "pool-size=4", NULL };
  cx_backend *backend = open_jupyter(pairs);
  pool_worker workers[4];
  GThread *threads[4];
  for (int i = 0; i < 4; i++) {
    workers[i] = (pool_worker){ cx_session_open(backend, NULL), MAX(1, n / 4) };
    for (int j = 0; j < 10; j++)
      cx_result_free(cx_session_run_cell(workers[i].session, CELL, NULL, NULL));
  }
  settle(backend);
  gint64 t0 = now_ns();
  for (int i = 0; i < 4; i++)
    threads[i] = g_thread_new("pool", pool_run, &workers[i]);
  for (int i = 0; i < 4; i++)
    g_thread_join(threads[i]);
  double rate = workers[0].n * 4 / ((now_ns() - t0) / 1e9);
  for (int i = 0; i < 4; i++)
    cx_session_close(workers[i].session);
  cx_backend_free(backend);
  return rate;
}


/* Median ms of a stateless cell served by a warm pool of one. */
static double
warm_first_result(void)
{
  cx_backend *backend = open_jupyter(NULL);
  double samples[5];
  for (int i = 0; i < 5; i++) {
    while (pool_ready(backend) < 1)
      g_usleep(20 * 1000);
    g_usleep(200 * 1000); /* the replacement's start is not measured */
    gint64 s = now_ns();
    cx_result *r = cx_backend_run_cell(backend, CELL, NULL, NULL);
    samples[i] = now_ns() - s;
    check(r);
    cx_result_free(r);
  }
  cx_backend_free(backend);
  return summarise(samples, 5).median_ns / 1e6;
}

static double
cold_first_result(void)
{
  const char *pairs[] = { "pool-size=0", NULL };
  gint64 s = now_ns();
  cx_backend *backend = open_jupyter(pairs);
  cx_result *r = cx_backend_run_cell(backend, CELL, NULL, NULL);
  double ms = (now_ns() - s) / 1e6;
  check(r);
  cx_result_free(r);
  cx_backend_free(backend);
  return ms;
}

typedef struct {
  cx_session *session;
  cx_result *result;
} sleeper;

static gpointer
sleep_cell(gpointer data)
{
  sleeper *s = data;
  s->result = cx_session_run_cell(s->session, "import time\ntime.sleep(30)", NULL, NULL);
  return NULL;
}

static double
interrupt_latency(cx_session *session)
{
  double samples[5];
  for (int i = 0; i < 5; i++) {
    sleeper s = { session, NULL };
    GThread *thread = g_thread_new("sleep", sleep_cell, &s);
    g_usleep(300 * 1000);
    gint64 t = now_ns();
    cx_session_interrupt(session, NULL);
    g_thread_join(thread);
    samples[i] = now_ns() - t;
    if (s.result == NULL || strcmp(cx_result_get_error_type(s.result), "KeyboardInterrupt") != 0)
      g_error("the interrupted cell did not end with KeyboardInterrupt");
    cx_result_free(s.result);
  }
  return summarise(samples, 5).median_ns / 1e6;
}

int
main(int argc, char **argv)
{
  int n = 300;
  gboolean gateway = TRUE, baseline = TRUE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
      n = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-gateway") == 0)
      gateway = FALSE;
    else if (strcmp(argv[i], "--no-baseline") == 0)
      baseline = FALSE;
  }
  g_setenv("CELLEXEC_PLUGIN_PATH", CX_BENCH_PLUGINS_DIR, FALSE);
  g_setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1", TRUE);
  g_autoptr(GError) error = NULL;
  const char *dirs[] = { CX_BENCH_PLUGINS_DIR, NULL };
  registry = cx_registry_new_for_path(dirs);

  printf("bench_jupyter: %d sequential cells of %s\n", n, "print('hello')\\n1 + 1");
  double cold = cold_first_result();
  double warm = warm_first_result();

  cx_backend *backend = open_jupyter(NULL);
  cx_session *session = cx_session_open(backend, NULL);
  settle(backend);
  sequential seq = run_sequential(session, n);
  double interrupt_ms = interrupt_latency(session);
  cx_session_close(session);
  cx_backend_free(backend);
  double pool4 = run_pool4(n);

  sequential gw = { 0 }, gw_naive = { 0 };
  if (gateway) {
    g_autofree char *root = g_dir_make_tmp("bench-jupyter-XXXXXX", NULL);
    int port = jupyter_server_free_port();
    GPid server = jupyter_server_start(CX_PYTHON_EXECUTABLE, port, "bench", root, NULL, &error);
    if (server == 0)
      g_error("cannot start jupyter_server: %s", error->message);
    g_autofree char *url = g_strdup_printf("gateway-url=http://127.0.0.1:%d", port);
    const char *pairs[] = { url, "token=bench", NULL };
    cx_backend *gb = open_jupyter(pairs);
    cx_session *gs = cx_session_open(gb, NULL);
    settle(gb);
    gw = run_sequential(gs, n);
    cx_session_close(gs);
    cx_backend_free(gb);
    /* The same without TCP_NODELAY and TCP_QUICKACK: the Nagle stall. */
    const char *naive[] = { url, "token=bench", "tcp-nodelay=false", NULL };
    gb = open_jupyter(naive);
    gs = cx_session_open(gb, NULL);
    settle(gb);
    gw_naive = run_sequential(gs, MAX(20, n / 3));
    cx_session_close(gs);
    cx_backend_free(gb);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    g_autofree char *rm = g_strdup_printf("rm -rf '%s'", root);
    if (system(rm) != 0)
      fprintf(stderr, "could not remove %s\n", root);
  }

  printf("\n%-44s %12s\n", "cellexec jupyter backend", "");
  printf("%-44s %9.3f ms\n", "sequential round trip, median", seq.median_ms);
  printf("%-44s %9.3f ms\n", "sequential round trip, p99", seq.p99_ms);
  printf("%-44s %9.1f\n", "sequential cells/s", seq.cells_per_s);
  printf("%-44s %9.3f ms\n", "host CPU per cell", seq.cpu_ms);
  printf("%-44s %9.1f\n", "pool of 4 kernels, aggregate cells/s", pool4);
  printf("%-44s %9.1f ms\n", "first result from a warm pool, median", warm);
  printf("%-44s %9.1f ms\n", "first result, cold start (pool-size 0)", cold);
  printf("%-44s %9.1f ms\n", "interrupt of time.sleep -> result, median", interrupt_ms);
  if (gateway) {
    printf("%-44s %9.3f ms\n", "gateway round trip, median", gw.median_ms);
    printf("%-44s %9.3f ms\n", "gateway round trip, p99", gw.p99_ms);
    printf("%-44s %9.1f\n", "gateway cells/s", gw.cells_per_s);
    printf("%-44s %9.3f ms\n", "gateway round trip, no TCP_NODELAY/QUICKACK", gw_naive.median_ms);
  }

  if (baseline) {
    g_autofree char *count = g_strdup_printf("%d", n);
    const char *bargv[] = { CX_PYTHON_EXECUTABLE, CX_BENCH_BASELINE, count, NULL };
    g_autofree char *out = NULL;
    int status = 0;
    if (!g_spawn_sync(NULL, (char **)bargv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                      &status, &error) || status != 0)
      g_error("the jupyter_client baseline failed");
    g_autoptr(JsonNode) node = cx_json_from_string(out, -1, &error);
    if (node == NULL)
      g_error("baseline output: %s", out);
    JsonObject *b = json_node_get_object(node);
#define B(key) json_object_get_double_member(b, key)
    printf("\n%-44s %12s\n", "jupyter_client (same kernel)", "");
    printf("%-44s %9.3f ms   ours/theirs %.2f\n", "sequential round trip, median",
           B("sequential_median_ms"), seq.median_ms / B("sequential_median_ms"));
    printf("%-44s %9.3f ms\n", "sequential round trip, p99", B("sequential_p99_ms"));
    printf("%-44s %9.1f      ours/theirs %.2f\n", "sequential cells/s", B("sequential_cells_per_s"),
           seq.cells_per_s / B("sequential_cells_per_s"));
    printf("%-44s %9.3f ms\n", "client CPU per cell", B("client_cpu_ms_per_cell"));
    printf("%-44s %9.1f      ours/theirs %.2f\n", "4 kernels, 4 threads, aggregate cells/s",
           B("pool4_cells_per_s"), pool4 / B("pool4_cells_per_s"));
    printf("%-44s %9.1f ms\n", "start a kernel + first result", B("cold_first_result_ms"));
    printf("%-44s %9.1f ms\n", "interrupt of time.sleep -> reply, median", B("interrupt_ms"));
    if (gateway)
      printf("%-44s %12s   ours/theirs %.2f\n", "gateway round trip vs ZeroMQ direct", "",
             gw.median_ms / B("sequential_median_ms"));
  }
  double load[3];
  if (getloadavg(load, 3) == 3)
    printf("\nload average: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  cx_registry_unref(registry);
  return 0;
}
