/* plugins/subprocess/options.c: the backend's options, and their
 * translation into what the worker is started with (its program, Python
 * flags, preloads, environment), the limits of each cell's process and
 * the sandbox's description. */
#include "config.h"

#include <string.h>

#include "plugins/subprocess/backend.h"

/* Where the worker is installed; CELLEXEC_WORKER overrides it (tests in the
 * build tree), the `worker` option overrides both. */
#define WORKER_PROGRAM CX_WORKER_DIR "/cellexec-worker"

const cx_option_spec cx__sp_options[] = {
  { "mode", CX_OPTION_STRING, "forkserver",
    "forkserver: fork each cell from a warm interpreter; spawn: a new interpreter per cell" },
  { "worker", CX_OPTION_PATH, NULL, "the worker program (default: the installed cellexec-worker)" },
  { "isolated", CX_OPTION_BOOL, "false",
    "run Python as `python3 -I -S`: no site-packages, no user site, no '' on sys.path" },
  { "preload", CX_OPTION_STRING, NULL,
    "modules the worker imports once, before it forks cells (comma-separated, e.g. IPython; "
    "those not installed are skipped)" },
  { "timeout", CX_OPTION_DOUBLE, NULL,
    "seconds after which a cell is stopped with TimeoutError (unset or 0: never)" },
  { "interrupt-grace", CX_OPTION_DOUBLE, "1",
    "seconds an interrupted session cell has to stop before its process is killed, and the "
    "session's state with it (0: never killed)" },
  { "cwd", CX_OPTION_PATH, NULL, "working directory of each cell (default: the host's)" },
  { "env", CX_OPTION_ENV, NULL, "environment variables of the worker, on top of the allowlist" },
  { "inherit-env", CX_OPTION_BOOL, "false",
    "give the worker the host's whole environment, not only PATH, HOME, LANG, LC_*, TZ, TMPDIR" },
  /* No default in the schema, so that a command can tell it unset
   * (cellexec serve turns it on then). */
  { "cwd-per-session", CX_OPTION_BOOL, NULL,
    "each session and stateless cell works in a fresh directory of its own under cwd "
    "(with isolation = sandbox seen at cwd's place, the others' out of reach; default: "
    "false, with cellexec serve true)" },
  { "keep-session-cwd", CX_OPTION_BOOL, "false",
    "with cwd-per-session: keep each directory when its session or cell ends (default: "
    "removed)" },
  { "memory-limit", CX_OPTION_SIZE_LIMIT, NULL,
    "address space of a cell's process (RLIMIT_AS); with isolation = sandbox also its "
    "cgroup's memory (default there: 1G, the cgroup only)" },
  { "cpu-limit", CX_OPTION_COUNT, NULL, "CPU seconds per cell (RLIMIT_CPU): CPUTimeExceeded" },
  { "max-processes", CX_OPTION_COUNT, NULL,
    "processes of the user a cell may reach (RLIMIT_NPROC, counts all of the user's); with "
    "isolation = sandbox the cell's cgroup pids.max (default there: 256)" },
  { "max-open-files", CX_OPTION_COUNT, NULL,
    "descriptors a cell's process may open (RLIMIT_NOFILE; default with isolation = "
    "sandbox: 4096)" },
  { "tmp-size", CX_OPTION_SIZE, NULL,
    "with isolation = sandbox: bytes of each cell's /tmp (default: half the memory limit)" },
  { "shm-size", CX_OPTION_SIZE, NULL,
    "with isolation = sandbox: bytes of each cell's /dev/shm (default: a quarter of the "
    "memory limit)" },
  { "file-size-limit", CX_OPTION_SIZE_LIMIT, NULL, "largest file a cell may write (RLIMIT_FSIZE)" },
  { "output-limit", CX_OPTION_SIZE, "10M",
    "bytes of stdout and of stderr kept per cell; past it the head and tail (0: all)" },
  { "isolation", CX_OPTION_STRING, "none",
    "none: cells run as the host's user with its files, network and processes in reach; "
    "sandbox: namespaces, a read-only filesystem view, no network, seccomp, no capabilities, "
    "cgroup limits per cell (refuses to start if any of it cannot be applied)" },
  { "network", CX_OPTION_STRING, "none",
    "with isolation = sandbox: none (no network at all) or loopback (a private loopback)" },
  { "read-only-paths", CX_OPTION_STRING, NULL,
    "with isolation = sandbox: more paths cells may read (absolute, separated by ':')" },
  { "writable-paths", CX_OPTION_STRING, NULL,
    "with isolation = sandbox: paths cells may write besides their cwd and /tmp (':')" },
  { "hidden-paths", CX_OPTION_STRING, NULL,
    "with isolation = sandbox: paths cells may not see (':'); /etc's secrets always are" },
  { NULL }
};

static JsonObject *
limits_from(const cx_options *options, GError **error)
{
  static const struct { const char *option, *key; gboolean size; } map[] = {
    { "memory-limit", "memory", TRUE },
    { "cpu-limit", "cpu", FALSE },
    { "max-processes", "processes", FALSE },
    { "file-size-limit", "file_size", TRUE },
    { "max-open-files", "open_files", FALSE },
  };
  g_autoptr(JsonObject) limits = json_object_new();
  for (guint i = 0; i < G_N_ELEMENTS(map); i++) {
    if (!cx_options_has(options, map[i].option))
      continue;
    gint64 value = map[i].size ? (gint64)cx_options_get_size(options, map[i].option, 0)
                               : cx_options_get_int(options, map[i].option, 0);
    if (value <= 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "subprocess: %s must be positive (leave it unset for no limit)", map[i].option);
      return NULL;
    }
    json_object_set_int_member(limits, map[i].key, value);
  }
  return g_steal_pointer(&limits);
}

static const char *
worker_path_from(const cx_options *options)
{
  const char *path = cx_options_get_string(options, "worker", NULL);
  if (path == NULL)
    path = g_getenv("CELLEXEC_WORKER");
  return path != NULL ? path : WORKER_PROGRAM;
}

/* The sandbox's bounds when the options leave them unset: the cgroup's
 * memory.max (not RLIMIT_AS, which some libraries' address-space
 * reservations would trip over), its pids.max, and RLIMIT_NOFILE. */
#define SANDBOX_MEMORY ((gint64)1 << 30)
#define SANDBOX_PROCESSES 256
#define SANDBOX_OPEN_FILES 4096

/* The sandbox's bounds into SANDBOX, the defaults where OPTIONS leave them
 * unset: without them one cell forked 1500 processes, or filled the
 * host's memory through /tmp and /dev/shm. */
static gboolean
set_sandbox_bounds(const cx_options *options, JsonObject *sandbox, GError **error)
{
  json_object_set_int_member(sandbox, "memory",
                             cx_options_has(options, "memory-limit")
                               ? (gint64)cx_options_get_size(options, "memory-limit", 0)
                               : SANDBOX_MEMORY);
  json_object_set_int_member(sandbox, "processes",
                             cx_options_has(options, "max-processes")
                               ? cx_options_get_int(options, "max-processes", 0)
                               : SANDBOX_PROCESSES);
  static const struct { const char *option, *key; } sizes[] = {
    { "tmp-size", "tmp_size" }, { "shm-size", "shm_size" },
  };
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    if (!cx_options_has(options, sizes[i].option))
      continue;
    guint64 size = cx_options_get_size(options, sizes[i].option, 0);
    if (size == 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "subprocess: %s must be positive (leave it unset for the default)",
                  sizes[i].option);
      return FALSE;
    }
    json_object_set_int_member(sandbox, sizes[i].key, (gint64)size);
  }
  return TRUE;
}

/* isolation = sandbox: the description the worker applies (worker/sandbox.c),
 * as JSON, and in *VIEW the directories of it a cell may work in (its cwd
 * first, then writable-paths and read-only-paths, canonical); NULL with
 * *ERROR unset for isolation = none. */
static char *
sandbox_from(const cx_options *options, char ***view, GError **error)
{
  const char *isolation = cx_options_get_string(options, "isolation", "none");
  const char *network = cx_options_get_string(options, "network", "none");
  if (!g_str_equal(isolation, "none") && !g_str_equal(isolation, "sandbox")) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: isolation must be \"none\" or \"sandbox\", not \"%s\"", isolation);
    return NULL;
  }
  if (!g_str_equal(network, "none") && !g_str_equal(network, "loopback")) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: network must be \"none\" or \"loopback\", not \"%s\"", network);
    return NULL;
  }
  static const char *const sandbox_only[] = { "network", "read-only-paths", "writable-paths",
                                              "hidden-paths", "tmp-size", "shm-size" };
  if (g_str_equal(isolation, "none")) {
    for (guint i = 0; i < G_N_ELEMENTS(sandbox_only); i++) {
      gboolean sized = g_str_has_suffix(sandbox_only[i], "-size");
      const char *value = sized ? NULL : cx_options_get_string(options, sandbox_only[i], "");
      if (sized ? cx_options_has(options, sandbox_only[i])
                : *value != '\0' && !g_str_equal(value, "none")) {
        g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                    "subprocess: %s applies with isolation = sandbox only", sandbox_only[i]);
        return NULL;
      }
    }
    return NULL;
  }
  if (cx_options_get_bool(options, "inherit-env", FALSE)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: isolation = sandbox does not pass the host's whole environment "
                "(inherit-env); name the variables cells need in `env`");
    return NULL;
  }
  g_autoptr(JsonObject) sandbox = json_object_new();
  json_object_set_string_member(sandbox, "network", network);
  const char *cwd = cx_options_get_string(options, "cwd", NULL);
  g_autofree char *host_cwd = cwd == NULL ? g_get_current_dir() : NULL;
  json_object_set_string_member(sandbox, "cwd", cwd != NULL ? cwd : host_cwd);
  g_autoptr(GPtrArray) dirs = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(dirs, g_canonicalize_filename(cwd != NULL ? cwd : host_cwd, NULL));
  static const struct { const char *option, *key; } lists[] = {
    { "read-only-paths", "read_only" }, { "writable-paths", "writable" },
    { "hidden-paths", "hidden" },
  };
  for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
    g_auto(GStrv) paths = g_strsplit(cx_options_get_string(options, lists[i].option, ""), ":", -1);
    JsonArray *array = json_array_new();
    for (char **path = paths; *path != NULL; path++) {
      g_strstrip(*path);
      if (**path == '\0')
        continue;
      if (!g_path_is_absolute(*path)) {
        json_array_unref(array);
        g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                    "subprocess: %s: \"%s\" is not an absolute path", lists[i].option, *path);
        return NULL;
      }
      json_array_add_string_element(array, *path);
      if (!g_str_equal(lists[i].key, "hidden"))
        g_ptr_array_add(dirs, g_canonicalize_filename(*path, NULL));
    }
    json_object_set_array_member(sandbox, lists[i].key, array);
  }
  if (!set_sandbox_bounds(options, sandbox, error))
    return NULL;
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), sandbox);
  g_ptr_array_add(dirs, NULL);
  *view = (char **)g_ptr_array_free(g_steal_pointer(&dirs), FALSE);
  return cx_json_to_string(node, FALSE);
}

/* PRELOAD is a list of dotted module names: the worker writes them into
 * the Python it runs. */
static gboolean
preload_is_valid(const char *preload, GError **error)
{
  g_auto(GStrv) names = g_strsplit(preload, ",", -1);
  for (char **name = names; *name != NULL; name++) {
    g_strstrip(*name);
    if (**name == '\0')
      continue;
    if (!g_regex_match_simple("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$", *name, 0, 0)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "subprocess: preload: \"%s\" is not a module name; give module names "
                  "separated by commas, e.g. preload = IPython, numpy", *name);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
cx__sp_configure(subprocess_backend *backend, const cx_options *options, GError **error)
{
  const char *mode = cx_options_get_string(options, "mode", "forkserver");
  if (!g_str_equal(mode, "forkserver") && !g_str_equal(mode, "spawn")) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: mode must be \"forkserver\" or \"spawn\", not \"%s\"", mode);
    return FALSE;
  }
  if (!preload_is_valid(cx_options_get_string(options, "preload", ""), error))
    return FALSE;
  g_autoptr(JsonObject) limits = limits_from(options, error);
  if (limits == NULL)
    return FALSE;
  g_autoptr(GError) sandbox_error = NULL;
  g_auto(GStrv) view = NULL;
  g_autofree char *sandbox = sandbox_from(options, &view, &sandbox_error);
  if (sandbox_error != NULL) {
    g_propagate_error(error, g_steal_pointer(&sandbox_error));
    return FALSE;
  }
  const char *worker_path = worker_path_from(options);
  if (!g_file_test(worker_path, G_FILE_TEST_IS_EXECUTABLE)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "subprocess: the worker program %s is missing or not executable; install "
                "cellexec completely or point the `worker` option at cellexec-worker",
                worker_path);
    return FALSE;
  }


  backend->worker_path = g_strdup(worker_path);
  backend->isolated = cx_options_get_bool(options, "isolated", FALSE);
  backend->preload = g_strdup(cx_options_get_string(options, "preload", ""));
  backend->spawn_mode = g_str_equal(mode, "spawn");
  g_auto(GStrv) env = cx_options_get_env(options, "env");
  backend->environment =
    cx__sp_worker_environment(cx_options_get_bool(options, "inherit-env", FALSE),
                              (const char *const *)env);
  backend->cwd = g_strdup(cx_options_get_string(options, "cwd", NULL));
  if (sandbox != NULL && !json_object_has_member(limits, "open_files"))
    json_object_set_int_member(limits, "open_files", SANDBOX_OPEN_FILES);
  backend->cwd_per_session = cx_options_get_bool(options, "cwd-per-session", FALSE);
  if (!backend->cwd_per_session && cx_options_get_bool(options, "keep-session-cwd", FALSE)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: keep-session-cwd applies with cwd-per-session = true only");
    return FALSE;
  }
  if (backend->cwd_per_session) {
    g_autofree char *base = backend->cwd != NULL ? g_strdup(backend->cwd) : g_get_current_dir();
    backend->worker_arguments =
      g_strdupv((char *[]){ "--private-cwd", base,
                            cx_options_get_bool(options, "keep-session-cwd", FALSE)
                              ? "--keep-private-cwd" : NULL, NULL });
  }
  backend->limits = g_steal_pointer(&limits);
  backend->sandbox = g_steal_pointer(&sandbox);
  backend->view = g_steal_pointer(&view);
  backend->output_limit = cx_options_get_size(options, "output-limit", 0);
  backend->interrupt_grace = cx_options_get_double(options, "interrupt-grace", 1);
  if (backend->interrupt_grace < 0 || backend->interrupt_grace > 3600) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: interrupt-grace must be from 0 (never kill) to 3600 seconds");
    return FALSE;
  }
  return TRUE;
}
