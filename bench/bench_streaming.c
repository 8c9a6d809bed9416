/* bench_streaming: how long a cell's flushed print takes to reach the
 * host's output callback on the subprocess backend (and on local), next to
 * the same prints read from a plain pipe of a python3 child in the same
 * invocation.
 *
 * The cell prints time.monotonic_ns() (CLOCK_MONOTONIC, the clock now_ns()
 * reads here too) with flush=True, then sleeps 20 ms, N times; each line's
 * latency is the host's clock when the line arrives minus the printed one.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cellexec/cellexec.h>

#include "bench/backend_options.h"
#include "bench/timing.h"

typedef struct {
  GArray *latencies; /* double, ns */
  GString *partial;  /* a line not yet complete */
} line_clock;

/* Feed TEXT (LEN bytes) in; each complete line is a printed timestamp. */
static void
line_clock_feed(line_clock *clock, const char *text, gsize len)
{
  gint64 now = now_ns();
  g_string_append_len(clock->partial, text, (gssize)len);
  char *newline;
  while ((newline = strchr(clock->partial->str, '\n')) != NULL) {
    *newline = '\0';
    gint64 printed = g_ascii_strtoll(clock->partial->str, NULL, 10);
    if (printed > 0) {
      double latency = (double)(now - printed);
      g_array_append_val(clock->latencies, latency);
    }
    g_string_erase(clock->partial, 0, newline - clock->partial->str + 1);
  }
}

static void
on_output(JsonObject *output, gpointer data)
{
  if (!g_str_equal(json_object_get_string_member(output, "output_type"), "stream"))
    return;
  const char *text = json_object_get_string_member(output, "text");
  line_clock_feed(data, text, strlen(text));
}

static char *
printing_cell(int lines)
{
  return g_strdup_printf("import time\n"
                         "for _ in range(%d):\n"
                         "    print(time.monotonic_ns(), flush=True)\n"
                         "    time.sleep(0.02)\n",
                         lines);
}

static timing
measure_backend(cx_registry *registry, const char *name, char **options, int lines)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = bench_open_backend(registry, name, options, NULL, &error);
  if (backend == NULL) {
    g_printerr("bench_streaming: %s\n", error->message);
    exit(2);
  }
  line_clock clock = { g_array_new(FALSE, FALSE, sizeof(double)), g_string_new(NULL) };
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, on_output, &clock);
  g_autofree char *code = printing_cell(lines);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, code, run, &error);
  if (result == NULL || !cx_result_get_success(result) || clock.latencies->len != (guint)lines) {
    g_printerr("bench_streaming: %s: the cell did not print %d timestamps (%u arrived)\n", name,
               lines, clock.latencies->len);
    exit(1);
  }
  timing t = summarise((double *)(void *)clock.latencies->data, clock.latencies->len);
  g_array_unref(clock.latencies);
  g_string_free(clock.partial, TRUE);
  return t;
}

/* The baseline: the same cell as a python3 child writing to a pipe we read. */
static timing
measure_pipe(int lines)
{
  g_autofree char *code = printing_cell(lines);
  const char *argv[] = { CX_PYTHON_EXECUTABLE, "-c", code, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) child =
    g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  if (child == NULL) {
    g_printerr("bench_streaming: %s\n", error->message);
    exit(2);
  }
  line_clock clock = { g_array_new(FALSE, FALSE, sizeof(double)), g_string_new(NULL) };
  GInputStream *out = g_subprocess_get_stdout_pipe(child);
  char buffer[4096];
  gssize got;
  while ((got = g_input_stream_read(out, buffer, sizeof buffer, NULL, NULL)) > 0)
    line_clock_feed(&clock, buffer, (gsize)got);
  g_subprocess_wait(child, NULL, NULL);
  timing t = summarise((double *)(void *)clock.latencies->data, clock.latencies->len);
  g_array_unref(clock.latencies);
  g_string_free(clock.partial, TRUE);
  return t;
}

int
main(int argc, char **argv)
{
  int lines = 200;
  char **options = NULL;
  const GOptionEntry entries[] = {
    { "lines", 'n', 0, G_OPTION_ARG_INT, &lines, "Timestamps each cell prints (default 200)", "N" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &options, "Subprocess backend option", "KEY=VALUE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new(NULL);
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || lines < 1) {
    g_printerr("bench_streaming: %s\n", error != NULL ? error->message : "--lines must be >= 1");
    return 2;
  }
  const char *dirs[] = { CX_BENCH_PLUGINS_DIR, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);

  timing subprocess = measure_backend(registry, "subprocess", options, lines);
  timing local = measure_backend(registry, "local", NULL, lines);
  timing pipe = measure_pipe(lines);
  double load[1] = { 0 };
  getloadavg(load, 1);
  printf("print(..., flush=True) to the host, %d lines each, 20 ms apart (load average %.2f):\n",
         lines, load[0]);
  printf("  %-34s median %7.3f ms   p99 %7.3f ms\n", "subprocess backend, output callback",
         subprocess.median_ns / 1e6, subprocess.p99_ns / 1e6);
  printf("  %-34s median %7.3f ms   p99 %7.3f ms\n", "local backend, output callback",
         local.median_ns / 1e6, local.p99_ns / 1e6);
  printf("  %-34s median %7.3f ms   p99 %7.3f ms\n", "python3 child, plain pipe (baseline)",
         pipe.median_ns / 1e6, pipe.p99_ns / 1e6);
  printf("  subprocess / pipe: median %.2fx, p99 %.2fx\n", subprocess.median_ns / pipe.median_ns,
         subprocess.p99_ns / pipe.p99_ns);
  g_strfreev(options);
  return subprocess.p99_ns <= 50e6 ? 0 : 1;
}
