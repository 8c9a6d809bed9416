/* bench_subprocess: cost per cell of the subprocess backend through the
 * public API, next to two ways of giving each cell a process of its own.
 *
 *   make bench-subprocess                # or: bench/bench_subprocess [-n N] ...
 *
 * Measured, all with the cell `print('hello')\n1 + 1`:
 *   - stateless cells (fork server: a fresh process per cell), one caller;
 *   - session round trips (one dedicated process);
 *   - throughput of stateless cells with two callers at once;
 *   - the CPU time of a stateless cell: the host's, the fork server's and
 *     the cell process's (its whole life, read from the server's cutime
 *     and cstime);
 *   - mode = spawn (a new interpreter per cell), for reference;
 * and, in the same invocation, the baselines:
 *   - `python3 -c CELL` started per cell (fork/exec, stdout captured);
 *   - a multiprocessing "spawn" process per cell running IPython's
 *     run_cell under capture_output() (bench/baseline_subprocess.py);
 * and the machine's floors, which the figures are reported as ratios to:
 *   - fork floor: a C process whose resident size is the fork server's
 *     forks a child that writes as many pages as a cell dirties, exits,
 *     and is reaped (waitpid): what any fork-per-cell design pays;
 *   - ping-pong floor: a 64-byte round trip over a socketpair between two
 *     processes: what any session round trip pays;
 *   - the cell's own work: the same cell in a session of the local backend
 *     (no process boundary), which a session round trip pays on top;
 * and the same stateless and session figures with isolation = sandbox.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cellexec/cellexec.h>

#include "bench/backend_options.h"
#include "bench/timing.h"

#define CELL "print('hello')\n1 + 1"
#define TARGET_STATELESS_OVER_FORK_FLOOR 1.5
#define TARGET_SPEEDUP_OVER_PYTHON_C 10.0
#define TARGET_SESSION_OVER_PING_PONG 1.5
#define TARGET_THROUGHPUT_SHARE 0.7

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
  g_autoptr(JsonNode) node = cx_json_from_string(out, -1, error);
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

/* ---- The machine's floors ------------------------------------------------ */

/* kB of a /proc status-like FIELD ("VmRSS:") of FILE. */
static guint64
read_kb(const char *file, const char *field)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(file, &text, NULL, NULL))
    return 0;
  const char *at = strstr(text, field);
  return at != NULL ? g_ascii_strtoull(at + strlen(field), NULL, 10) : 0;
}

/* CPU time so far, in seconds, of this process (all threads), of the
 * fork server SERVER_PID itself, and of the server's reaped children:
 * every cell process's whole life, from fork to exit. */
typedef struct {
  double host, server, cells;
} cpu_split;

static cpu_split
read_cpu_split(gint64 server_pid)
{
  cpu_split split = { 0 };
  struct rusage self;
  if (getrusage(RUSAGE_SELF, &self) == 0)
    split.host = self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + self.ru_stime.tv_sec +
                 self.ru_stime.tv_usec / 1e6;
  g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)server_pid);
  g_autofree char *stat = NULL;
  const char *after_comm;
  unsigned long long utime, stime, cutime, cstime;
  if (g_file_get_contents(path, &stat, NULL, NULL) && (after_comm = strrchr(stat, ')')) != NULL &&
      sscanf(after_comm + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
             &utime, &stime, &cutime, &cstime) == 4) {
    double tick = (double)sysconf(_SC_CLK_TCK);
    split.server = (utime + stime) / tick;
    split.cells = (cutime + cstime) / tick;
  }
  return split;
}

/* Pages a stateless cell dirties: its Private_Dirty at the end of the
 * cell (the copies of the fork server's pages it wrote, and its own). */
static guint64
cell_dirty_kb(cx_backend *backend)
{
  g_autoptr(cx_result) result = cx_backend_run_cell(backend,
    "print([l.split()[1] for l in open('/proc/self/smaps_rollup') "
    "if l.startswith('Private_Dirty')][0])", NULL, NULL);
  return result != NULL ? g_ascii_strtoull(cx_result_get_stdout(result, NULL), NULL, 10) : 0;
}

/* The fork floor, in a child of ours that first grows to RSS_KB resident:
 * ITERATIONS of fork + the child writing DIRTY_KB of it + _exit + waitpid.
 * *CPU_NS: the CPU time (both processes) per iteration. */
static gboolean
time_fork_floor(guint64 rss_kb, guint64 dirty_kb, int iterations, timing *result,
                double *cpu_ns)
{
  int pipe_fds[2];
  if (pipe(pipe_fds) < 0)
    return FALSE;
  pid_t helper = fork();
  if (helper == 0) {
    close(pipe_fds[0]);
    guint64 own_kb = read_kb("/proc/self/status", "VmRSS:");
    gsize size = (rss_kb > own_kb ? rss_kb - own_kb : 0) * 1024;
    gsize page = (gsize)sysconf(_SC_PAGESIZE);
    char *memory = size > 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    if (memory == MAP_FAILED)
      _exit(1);
    for (gsize i = 0; i < size; i += page)
      memory[i] = 1;
    gsize dirty = MIN(dirty_kb * 1024, size);
    double *samples = g_new(double, iterations);
    struct rusage before, after, children_before, children_after;
    getrusage(RUSAGE_SELF, &before);
    getrusage(RUSAGE_CHILDREN, &children_before);
    for (int i = 0; i < iterations; i++) {
      gint64 start = now_ns();
      pid_t child = fork();
      if (child == 0) {
        for (gsize j = 0; j < dirty; j += page)
          memory[j] = 2;
        _exit(0);
      }
      int status;
      waitpid(child, &status, 0);
      samples[i] = (double)(now_ns() - start);
    }
    getrusage(RUSAGE_SELF, &after);
    getrusage(RUSAGE_CHILDREN, &children_after);
#define TV_NS(tv) ((tv).tv_sec * 1e9 + (tv).tv_usec * 1e3)
    double cpu = TV_NS(after.ru_utime) + TV_NS(after.ru_stime) - TV_NS(before.ru_utime) -
                 TV_NS(before.ru_stime) + TV_NS(children_after.ru_utime) +
                 TV_NS(children_after.ru_stime) - TV_NS(children_before.ru_utime) -
                 TV_NS(children_before.ru_stime);
    timing t = summarise(samples, iterations);
    double message[3] = { t.median_ns, t.p99_ns, cpu / iterations };
    _exit(write(pipe_fds[1], message, sizeof message) == sizeof message ? 0 : 1);
  }
  close(pipe_fds[1]);
  double message[3];
  gboolean ok = helper > 0 && read(pipe_fds[0], message, sizeof message) == sizeof message;
  close(pipe_fds[0]);
  int status;
  if (helper > 0)
    waitpid(helper, &status, 0);
  if (ok) {
    *result = (timing){ message[0], message[1] };
    *cpu_ns = message[2];
  }
  return ok;
}

/* The ping-pong floor: 64-byte round trips over a socketpair. */
static gboolean
time_ping_pong(int iterations, timing *result)
{
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) < 0)
    return FALSE;
  pid_t echo = fork();
  if (echo == 0) {
    close(sockets[0]);
    char buffer[64];
    gssize n;
    while ((n = read(sockets[1], buffer, sizeof buffer)) > 0)
      if (write(sockets[1], buffer, n) != n)
        break;
    _exit(0);
  }
  close(sockets[1]);
  g_autofree double *samples = g_new(double, iterations);
  char buffer[64] = { 0 };
  gboolean ok = echo > 0;
  for (int i = 0; ok && i < iterations + iterations / 10; i++) {
    gint64 start = now_ns();
    gsize got = 0;
    ok = write(sockets[0], buffer, sizeof buffer) == sizeof buffer;
    while (ok && got < sizeof buffer) {
      gssize n = read(sockets[0], buffer + got, sizeof buffer - got);
      ok = n > 0;
      got += MAX(n, 0);
    }
    if (i >= iterations / 10)
      samples[i - iterations / 10] = (double)(now_ns() - start);
  }
  close(sockets[0]);
  int status;
  if (echo > 0)
    waitpid(echo, &status, 0);
  if (ok)
    *result = summarise(samples, iterations);
  return ok;
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
  if (session == NULL) {
    fprintf(stderr, "bench_subprocess: %s\n", error->message);
    return 1;
  }
  g_autoptr(JsonNode) first_info = cx_backend_query(backend, "info", NULL);
  gint64 first_server = first_info != NULL ? json_object_get_int_member_with_default(
                                               json_node_get_object(first_info), "server_pid", 0) : 0;
  cpu_split cpu_before = read_cpu_split(first_server);
  gboolean timed = time_cells(run_stateless, backend, iterations, iterations / 10, &stateless, &error);
  cpu_split cpu_after = read_cpu_split(first_server);
  if (!timed ||
      !time_cells(run_in_session, session, session_iterations, session_iterations / 10,
                  &in_session, &error) ||
      !time_cells(run_stateless, spawner, spawn_iterations, 2, &spawned, &error)) {
    fprintf(stderr, "bench_subprocess: %s\n", error->message);
    return 1;
  }
  guint failures;
  double throughput = measure_throughput(backend, 2, throughput_seconds, &failures);

  /* The floors, for this fork server's size and this cell's pages. */
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  gint64 server_pid = info != NULL ? json_object_get_int_member_with_default(
                                       json_node_get_object(info), "server_pid", 0) : 0;
  g_autofree char *status_file = g_strdup_printf("/proc/%d/status", (int)server_pid);
  guint64 server_rss_kb = read_kb(status_file, "VmRSS:");
  guint64 dirty_kb = cell_dirty_kb(backend);
  timing fork_floor = { 0 }, ping_pong = { 0 };
  double floor_cpu_ns = 0;
  if (!time_fork_floor(server_rss_kb, dirty_kb, iterations, &fork_floor, &floor_cpu_ns) ||
      !time_ping_pong(session_iterations, &ping_pong)) {
    fprintf(stderr, "bench_subprocess: cannot measure the floors\n");
    return 1;
  }

  /* The sandbox's cost: the same cells with isolation = sandbox. */
  static const char *const sandboxed[] = { "mode=forkserver", "isolation=sandbox", NULL };
  g_autoptr(GError) sandbox_error = NULL;
  g_autoptr(cx_backend) sandbox = bench_open_backend(registry, "subprocess", backend_options,
                                                     sandboxed, &sandbox_error);
  g_autoptr(cx_session) sandbox_session =
    sandbox != NULL ? cx_session_open(sandbox, &sandbox_error) : NULL;
  timing sandbox_stateless = { 0 }, sandbox_in_session = { 0 };
  gboolean have_sandbox = sandbox_session != NULL &&
    time_cells(run_stateless, sandbox, iterations, iterations / 10, &sandbox_stateless,
               &sandbox_error) &&
    time_cells(run_in_session, sandbox_session, session_iterations, session_iterations / 10,
               &sandbox_in_session, &sandbox_error);
  g_autofree char *mp_missing = NULL;
  if (!time_python_c(python_c_iterations, &python_c, &error) ||
      !time_mp_ipython(baseline_script, mp_iterations, &mp_ipython, &mp_missing, &error)) {
    fprintf(stderr, "bench_subprocess: a baseline failed: %s\n", error->message);
    return 1;
  }

  /* The cell's own work, with no process boundary: the same cell in a
   * session of the local backend (embedded CPython, the same capture).
   * Last, so that the interpreter it loads into this process does not
   * enlarge the process the baselines above fork from. */
  g_autoptr(GError) local_error = NULL;
  g_autoptr(cx_backend) local = bench_open_backend(registry, "local", NULL, NULL, &local_error);
  g_autoptr(cx_session) local_session =
    local != NULL ? cx_session_open(local, &local_error) : NULL;
  timing local_in_session = { 0 };
  gboolean have_local = local_session != NULL &&
    time_cells(run_in_session, local_session, session_iterations, session_iterations / 10,
               &local_in_session, &local_error);

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
  /* Per stateless cell, warm-up cells included (tick-sampled: a few
   * hundred cells make it a fair average). */
  double ms_per_cell = 1000.0 / (iterations + iterations / 10);
  cpu_split used = { (cpu_after.host - cpu_before.host) * ms_per_cell,
                     (cpu_after.server - cpu_before.server) * ms_per_cell,
                     (cpu_after.cells - cpu_before.cells) * ms_per_cell };
  printf("  %-44s %.2f ms: host %.2f, fork server %.2f, cell process %.2f\n",
         "CPU time per stateless cell", used.host + used.server + used.cells, used.host,
         used.server, used.cells);
  printf("\nfloors (fork server resident %" G_GUINT64_FORMAT " kB; a cell dirties %"
         G_GUINT64_FORMAT " kB):\n", server_rss_kb, dirty_kb);
  print_row("fork floor: fork + touch + exit + waitpid", &fork_floor);
  printf("  %-44s %10.1f µs\n", "fork floor CPU time per cell", floor_cpu_ns / 1000);
  print_row("ping-pong floor: 64-byte socketpair round trip", &ping_pong);
  if (have_local)
    print_row("the cell in a local session (no process)", &local_in_session);
  else
    printf("  the cell in a local session: not measured (%s)\n",
           local_error != NULL ? local_error->message : "?");
  if (have_sandbox) {
    printf("\nisolation = sandbox:\n");
    print_row("sandbox, stateless (fork server)", &sandbox_stateless);
    print_row("sandbox, session round trip", &sandbox_in_session);
    printf("  %-44s %+10.1f µs %+10.1f µs\n", "sandbox cost per stateless cell / round trip",
           (sandbox_stateless.median_ns - stateless.median_ns) / 1000,
           (sandbox_in_session.median_ns - in_session.median_ns) / 1000);
  } else {
    printf("\nisolation = sandbox: not measured (%s)\n",
           sandbox_error != NULL ? sandbox_error->message : "?");
  }

  double speedup = python_c.median_ns / stateless.median_ns;
  double stateless_ratio = stateless.median_ns / fork_floor.median_ns;
  double session_ratio = in_session.median_ns / ping_pong.median_ns;
  double throughput_target = TARGET_THROUGHPUT_SHARE * 2 / (floor_cpu_ns / 1e9);
  printf("\n");
  printf("  stateless / fork floor <= %.1fx:      %s (%.2fx: %.0f / %.0f µs)\n",
         TARGET_STATELESS_OVER_FORK_FLOOR,
         verdict(stateless_ratio <= TARGET_STATELESS_OVER_FORK_FLOOR), stateless_ratio,
         stateless.median_ns / 1000, fork_floor.median_ns / 1000);
  printf("  session / ping-pong <= %.1fx:         %s (%.2fx: %.0f / %.0f µs)\n",
         TARGET_SESSION_OVER_PING_PONG, verdict(session_ratio <= TARGET_SESSION_OVER_PING_PONG),
         session_ratio, in_session.median_ns / 1000, ping_pong.median_ns / 1000);
  if (have_local) {
    /* What the process boundary adds to the cell's own work. */
    double boundary_ns = in_session.median_ns - local_in_session.median_ns;
    printf("    of which the process boundary: %.0f µs, %.2fx the ping-pong; the cell's own\n"
           "    work (a local session) %.0f µs\n",
           boundary_ns / 1000, boundary_ns / ping_pong.median_ns,
           local_in_session.median_ns / 1000);
  }
  printf("  python3 -c / stateless >= %.0fx:        %s (%.1fx)\n", TARGET_SPEEDUP_OVER_PYTHON_C,
         verdict(speedup >= TARGET_SPEEDUP_OVER_PYTHON_C), speedup);
  printf("  2-caller throughput >= 0.7 x 2 cores / floor CPU: %s (%.0f of %.0f cells/s)\n",
         verdict(throughput >= throughput_target), throughput, throughput_target);
  if (mp_missing == NULL)
    printf("  multiprocessing+IPython / stateless: %.0fx\n", mp_ipython.median_ns / stateless.median_ns);
  return 0;
}
