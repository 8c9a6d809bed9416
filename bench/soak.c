/* soak: many cells, some of them hostile, on the local and subprocess
 * backends, checking every result and what the host has left afterwards.
 *
 *   make soak                          # or: bench/soak [-n N] [-k K] ...
 *
 * For each backend, stateless cells and cells in sessions (one per
 * thread), from 1 and from 4 threads: N cells (10,000 by default) per
 * configuration.  Every cell prints a token unique to the run, and its
 * result is checked against it.  Every K-th cell is chaos, in turn: one
 * that exits (os._exit), one that runs past its timeout, one that floods
 * stdout, and on subprocess only one that crashes (a segfault).
 *
 * Prints cells/s and wrong/lost cells per configuration, the host's RSS
 * (VmRSS) at the start, middle and end, and at the end its open fds
 * against those at the start and, once the backends are freed, its
 * descendant processes (none must be left; while a backend is open its
 * fork server keeps more spares after a load).  Exits 1 if any cell was
 * wrong or lost, or fds or processes leaked; the last line is
 * "soak: N passed, N failed", one check per configuration plus the fd and
 * process checks. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cellexec/cellexec.h>

#include "bench/backend_options.h"
#include "bench/timing.h"
#include "tests/proc_table.h"

#define THREADS_MAX 4
#define FLOOD_LINES 16
#define FLOOD_LINE_BYTES 65535

typedef enum { CELL_PLAIN, CELL_EXIT, CELL_TIMEOUT, CELL_FLOOD, CELL_CRASH } cell_kind;

typedef struct {
  const char *backend_name;
  cx_backend *backend;
  gboolean in_sessions;
  int threads;
  int cells;          /* in this configuration */
  int chaos_every;    /* every K-th cell is chaos (0: none) */
  double timeout;     /* of the timeout cells */
  int run;            /* the configuration's number, in the tokens */
  gint wrong;
  gint lost;
  GMutex report_lock;
  int reported;       /* wrong or lost cells described so far */
} soak_config;

typedef struct {
  soak_config *config;
  int first;          /* this thread runs cells first, first + threads, ... */
} soak_thread;

static gint progress; /* cells finished, for the watchdog */

/* The kind of cell INDEX: chaos in turn every K-th cell, crashes only
 * where a crash is contained. */
static cell_kind
kind_of(const soak_config *config, int index)
{
  if (config->chaos_every <= 0 || (index + 1) % config->chaos_every != 0)
    return CELL_PLAIN;
  gboolean crashes = strcmp(config->backend_name, "subprocess") == 0;
  static const cell_kind chaos[] = { CELL_EXIT, CELL_TIMEOUT, CELL_FLOOD, CELL_CRASH };
  int n = crashes ? 4 : 3;
  return chaos[((index + 1) / config->chaos_every - 1) % n];
}

static char *
code_of(cell_kind kind, const char *token, int index)
{
  switch (kind) {
  case CELL_PLAIN:
    return g_strdup_printf("print('%s')\n%d * 2", token, index);
  case CELL_EXIT:
    return g_strdup_printf("import os, sys\nprint('%s')\nsys.stdout.flush()\nos._exit(3)", token);
  case CELL_TIMEOUT:
    return g_strdup_printf("print('%s', flush=True)\nwhile True:\n    pass", token);
  case CELL_FLOOD:
    return g_strdup_printf("print('%s')\nfor _ in range(%d):\n    print('x' * %d)\nprint('%s')",
                           token, FLOOD_LINES, FLOOD_LINE_BYTES, token);
  case CELL_CRASH:
    return g_strdup_printf("import ctypes, sys\nprint('%s')\nsys.stdout.flush()\nctypes.string_at(0)",
                           token);
  }
  g_assert_not_reached();
}

static gboolean
has_error(const cx_result *result, const char *type)
{
  return !cx_result_get_success(result) && cx_result_has_error(result) &&
         strcmp(cx_result_get_error_type(result), type) == 0;
}

/* Whether RESULT is what cell INDEX of KIND, printing TOKEN, must give. */
static gboolean
is_right(const soak_config *config, cell_kind kind, int index, const char *token,
         const cx_result *result)
{
  gboolean local = strcmp(config->backend_name, "local") == 0;
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  g_autofree char *line = g_strdup_printf("%s\n", token);
  gboolean printed = len == strlen(line) && memcmp(out, line, len) == 0;
  switch (kind) {
  case CELL_PLAIN: {
    if (!cx_result_get_success(result) || !printed || cx_result_get_n_outputs(result) != 1)
      return FALSE;
    JsonObject *bundle = cx_result_get_output(result, 0);
    g_autofree char *value = g_strdup_printf("%d", index * 2);
    return json_object_has_member(bundle, "text/plain") &&
           strcmp(json_object_get_string_member(bundle, "text/plain"), value) == 0;
  }
  case CELL_EXIT:
    return printed && has_error(result, local ? "SystemExit" : "WorkerCrashed");
  case CELL_TIMEOUT:
    /* On a loaded machine the deadline may pass before the cell's first
     * line has run: its token, or no output at all. */
    return (printed || len == 0) && has_error(result, "TimeoutError");
  case CELL_FLOOD: {
    /* Whole on local; on subprocess head and tail, as output-limit keeps them. */
    g_autofree char *tail = g_strdup_printf("\n%s\n", token);
    gboolean whole = len == 2 * strlen(line) + FLOOD_LINES * (FLOOD_LINE_BYTES + 1);
    return cx_result_get_success(result) && g_str_has_prefix(out, line) &&
           g_str_has_suffix(out, tail) &&
           (whole || (!local && cx_result_get_extra(result, "truncated") != NULL));
  }
  case CELL_CRASH:
    return printed && has_error(result, "WorkerCrashed") &&
           strstr(cx_result_get_error_message(result), "SIGSEGV") != NULL;
  }
  return FALSE;
}

static void
report(soak_config *config, const char *what, const char *token, const char *detail)
{
  g_mutex_lock(&config->report_lock);
  if (config->reported++ < 5)
    fprintf(stderr, "soak: %s cell %s: %s\n", what, token, detail);
  g_mutex_unlock(&config->report_lock);
}

static gpointer
run_cells(gpointer data)
{
  soak_thread *thread = data;
  soak_config *config = thread->config;
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) session = NULL;
  if (config->in_sessions && (session = cx_session_open(config->backend, &error)) == NULL) {
    report(config, "lost", "(session)", error->message);
    int mine = (config->cells - thread->first + config->threads - 1) / config->threads;
    g_atomic_int_add(&config->lost, mine);
    return NULL;
  }
  g_autoptr(cx_run_options) timed = cx_run_options_new();
  cx_run_options_set_timeout(timed, config->timeout);
  for (int i = thread->first; i < config->cells; i += config->threads) {
    cell_kind kind = kind_of(config, i);
    g_autofree char *token = g_strdup_printf("soak-%d-%d-%08x", config->run, i, g_random_int());
    g_autofree char *code = code_of(kind, token, i);
    const cx_run_options *run = kind == CELL_TIMEOUT ? timed : NULL;
    g_clear_error(&error);
    g_autoptr(cx_result) result = session != NULL
      ? cx_session_run_cell(session, code, run, &error)
      : cx_backend_run_cell(config->backend, code, run, &error);
    if (result == NULL) {
      g_atomic_int_inc(&config->lost);
      report(config, "lost", token, error != NULL ? error->message : "no result");
    } else if (!is_right(config, kind, i, token, result)) {
      g_atomic_int_inc(&config->wrong);
      g_autofree char *json = cx_result_to_json(result, FALSE);
      if (strlen(json) > 600)
        strcpy(json + 590, "...");
      report(config, "wrong", token, json);
    }
    g_atomic_int_inc(&progress);
  }
  return NULL;
}

/* ---- What the host holds ------------------------------------------------------------ */

static long
rss_kib(void)
{
  g_autofree char *status = NULL;
  if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
    return -1;
  const char *line = strstr(status, "\nVmRSS:");
  return line != NULL ? strtol(line + strlen("\nVmRSS:"), NULL, 10) : -1;
}

/* Processes descended from this one (workers, fork servers, cells, and
 * whatever they started that is still attached). */
static guint
count_descendants(void)
{
  g_autoptr(GArray) table = proc_table_read();
  g_autoptr(GHashTable) parent = g_hash_table_new(NULL, NULL);
  for (guint i = 0; i < table->len; i++) {
    const proc_entry *entry = &g_array_index(table, proc_entry, i);
    g_hash_table_insert(parent, GINT_TO_POINTER(entry->pid), GINT_TO_POINTER(entry->ppid));
  }
  guint n = 0;
  int self = getpid();
  for (guint i = 0; i < table->len; i++) {
    int p = g_array_index(table, proc_entry, i).ppid;
    for (int hops = 0; p > 1 && hops < 64; hops++) {
      if (p == self) {
        n++;
        break;
      }
      p = GPOINTER_TO_INT(g_hash_table_lookup(parent, GINT_TO_POINTER(p)));
    }
  }
  return n;
}

/* Nothing moved for a minute: a cell hangs, which no result will report. */
static gpointer
watchdog(gpointer data)
{
  (void)data;
  int last = -1, still = 0;
  for (;;) {
    g_usleep(G_USEC_PER_SEC);
    int now = g_atomic_int_get(&progress);
    still = now == last ? still + 1 : 0;
    last = now;
    if (still >= 60) {
      fprintf(stderr, "soak: no cell finished for 60 s: stuck\n");
      printf("soak: 0 passed, 1 failed\n");
      fflush(NULL);
      _exit(1);
    }
  }
  return NULL;
}

static void
run_config(soak_config *config)
{
  soak_thread threads[THREADS_MAX];
  GThread *handles[THREADS_MAX];
  for (int t = 0; t < config->threads; t++) {
    threads[t] = (soak_thread){ config, t };
    handles[t] = g_thread_new("soak", run_cells, &threads[t]);
  }
  for (int t = 0; t < config->threads; t++)
    g_thread_join(handles[t]);
}

int
main(int argc, char **argv)
{
  int cells = 10000, chaos_every = 25;
  double timeout = 0.1, settle = 5;
  const char *plugins_dir = CX_BENCH_PLUGINS_DIR;
  g_autofree char *backend_list = g_strdup("local,subprocess");
  g_auto(GStrv) subprocess_options = NULL;
  GOptionEntry entries[] = {
    { "cells", 'n', 0, G_OPTION_ARG_INT, &cells, "cells per configuration (10000)", "N" },
    { "chaos-every", 'k', 0, G_OPTION_ARG_INT, &chaos_every,
      "every K-th cell exits, times out, floods or crashes (25; 0: none)", "K" },
    { "timeout", 0, 0, G_OPTION_ARG_DOUBLE, &timeout, "timeout of the timeout cells (0.1)", "S" },
    { "settle", 0, 0, G_OPTION_ARG_DOUBLE, &settle,
      "seconds fds and processes may take to return to their start values (5)", "S" },
    { "backends", 'b', 0, G_OPTION_ARG_STRING, &backend_list, "backends (local,subprocess)", "LIST" },
    { "plugins", 0, 0, G_OPTION_ARG_FILENAME, &plugins_dir, "plugin directory", "DIR" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &subprocess_options,
      "set a subprocess backend option (repeatable; output-limit=256K by default)", "KEY=VALUE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context =
    g_option_context_new("- run many cells, some hostile, and check them all");
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || cells < 1 || chaos_every < 0 ||
      timeout <= 0) {
    fprintf(stderr, "soak: %s\n", error ? error->message : "-n must be >= 1, -k >= 0, --timeout > 0");
    return 2;
  }

  /* Floods are truncated on subprocess: its head-and-tail path is soaked too. */
  static const char *const subprocess_defaults[] = { "output-limit=256K", NULL };
  const char *dirs[] = { plugins_dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  g_auto(GStrv) names = g_strsplit(backend_list, ",", -1);
  guint n_backends = g_strv_length(names);
  g_autofree cx_backend **backends = g_new0(cx_backend *, n_backends);
  for (guint b = 0; b < n_backends; b++) {
    gboolean subprocess = strcmp(names[b], "subprocess") == 0;
    /* The defaults first: -o overrides them. */
    g_autofree char **options = NULL;
    if (subprocess) {
      guint n = subprocess_options != NULL ? g_strv_length(subprocess_options) : 0;
      options = g_new0(char *, n + 2);
      options[0] = (char *)subprocess_defaults[0];
      for (guint i = 0; i < n; i++)
        options[i + 1] = subprocess_options[i];
    }
    backends[b] = bench_open_backend(registry, names[b], options, NULL, &error);
    /* A first cell starts the interpreter, or the fork server and its spares. */
    g_autoptr(cx_result) warm = backends[b] != NULL
      ? cx_backend_run_cell(backends[b], "print('warm')", NULL, &error) : NULL;
    if (warm == NULL) {
      fprintf(stderr, "soak: %s: %s\n", names[b], error->message);
      return 2;
    }
  }
  g_usleep(200 * 1000); /* the spares are forked and warmed */

  g_thread_unref(g_thread_new("watchdog", watchdog, NULL));
  guint fds_start = proc_count_open_fds();
  long rss_start = rss_kib(), rss_middle = -1;
  printf("soak: %d cells per configuration, chaos every %d (exit, timeout of %g s, flood of %d KiB%s)\n",
         cells, chaos_every, timeout, FLOOD_LINES * (FLOOD_LINE_BYTES + 1) / 1024,
         strstr(backend_list, "subprocess") != NULL ? ", crash on subprocess" : "");
  printf("  %-11s %-9s %7s %8s %10s %6s %5s %10s\n", "backend", "cells", "threads", "cells", "cells/s",
         "wrong", "lost", "RSS KiB");

  int passed = 0, failed = 0, run = 0, total_runs = n_backends * 4;
  for (guint b = 0; b < n_backends; b++)
    for (int in_sessions = 0; in_sessions <= 1; in_sessions++)
      for (int threads = 1; threads <= THREADS_MAX; threads *= 4) {
        soak_config config = {
          .backend_name = names[b], .backend = backends[b], .in_sessions = in_sessions,
          .threads = threads, .cells = cells, .chaos_every = chaos_every, .timeout = timeout,
          .run = run,
        };
        g_mutex_init(&config.report_lock);
        gint64 start = now_ns();
        run_config(&config);
        double seconds = (now_ns() - start) / 1e9;
        g_mutex_clear(&config.report_lock);
        gboolean ok = config.wrong == 0 && config.lost == 0;
        ok ? passed++ : failed++;
        printf("  %-11s %-9s %7d %8d %10.0f %6d %5d %10ld%s\n", names[b],
               in_sessions ? "sessions" : "stateless", threads, cells, cells / seconds,
               config.wrong, config.lost, rss_kib(), ok ? "" : "  FAILED");
        fflush(stdout);
        if (++run == total_runs / 2)
          rss_middle = rss_kib();
      }

  /* Closed sessions' processes and killed cells take a moment to go. */
  guint fds_end = proc_count_open_fds();
  gint64 deadline = now_ns() + (gint64)(settle * 1e9);
  while (fds_end != fds_start && now_ns() < deadline) {
    g_usleep(50 * 1000);
    fds_end = proc_count_open_fds();
  }
  long rss_end = rss_kib();
  printf("  host RSS: %ld KiB at the start, %ld KiB in the middle, %ld KiB at the end\n", rss_start,
         rss_middle, rss_end);
  printf("  open fds: %u at the start, %u at the end%s\n", fds_start, fds_end,
         fds_end == fds_start ? "" : "  LEAKED");
  fds_end == fds_start ? passed++ : failed++;

  /* Every process the backends started (fork servers, spares, session
   * processes, what cells left) goes with them. */
  guint processes_open = count_descendants();
  for (guint b = 0; b < n_backends; b++)
    cx_backend_free(backends[b]);
  guint processes_end = count_descendants();
  deadline = now_ns() + (gint64)(settle * 1e9);
  while (processes_end != 0 && now_ns() < deadline) {
    g_usleep(50 * 1000);
    processes_end = count_descendants();
  }
  printf("  processes: %u with the backends open, %u once they are freed%s\n", processes_open,
         processes_end, processes_end == 0 ? "" : "  LEFT OVER");
  processes_end == 0 ? passed++ : failed++;
  printf("soak: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
