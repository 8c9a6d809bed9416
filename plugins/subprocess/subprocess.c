/* plugins/subprocess: the `subprocess` backend, cells in worker processes.
 *
 * For code you do not trust to behave.  A fork server (cellexec-worker,
 * Python started once) forks a fresh process per stateless cell and a
 * dedicated one per session; the host enforces deadlines and output
 * limits, the cell's process its resource limits, and a crash costs one
 * cell, never the host.  See docs/worker-protocol.md.
 *
 * This file is the glue to the plugin ABI: options, the fork server's
 * life (started with the backend, restarted when it died), sessions.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cellexec/plugin.h>

#include "plugins/subprocess/cell_call.h"
#include "plugins/subprocess/executor_host.h"
#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/session.h"
#include "plugins/subprocess/worker_process.h"

/* Where the worker is installed; CELLEXEC_WORKER overrides it (tests in the
 * build tree), the `worker` option overrides both. */
#define WORKER_PROGRAM CX_WORKER_DIR "/cellexec-worker"

/* How long opening a session may wait for its process. */
#define SESSION_START_TIMEOUT_S 30

static const cx_option_spec subprocess_options[] = {
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
  { "cwd", CX_OPTION_PATH, NULL, "working directory of each cell (default: the host's)" },
  { "env", CX_OPTION_ENV, NULL, "environment variables of the worker, on top of the allowlist" },
  { "inherit-env", CX_OPTION_BOOL, "false",
    "give the worker the host's whole environment, not only PATH, HOME, LANG, LC_*, TZ, TMPDIR" },
  { "memory-limit", CX_OPTION_SIZE_LIMIT, NULL, "address space of a cell's process (RLIMIT_AS)" },
  { "cpu-limit", CX_OPTION_COUNT, NULL, "CPU seconds per cell (RLIMIT_CPU): CPUTimeExceeded" },
  { "max-processes", CX_OPTION_COUNT, NULL,
    "processes of the user a cell may reach (RLIMIT_NPROC, counts all of the user's)" },
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

struct subprocess_backend {
  char *worker_path;
  gboolean isolated;
  char *preload;          /* module names, comma-separated */
  gboolean spawn_mode;
  char **environment;        /* the worker's */
  char *cwd;                 /* the sandbox's view; a cell's comes in its RUN */
  JsonObject *limits;        /* the "limits" of open requests (only read, never shared) */
  char *sandbox;             /* isolation = sandbox: its JSON for the worker; else NULL */
  char **view;               /* isolation = sandbox: the directories cells see (cwd, lists) */
  guint64 output_limit;

  GMutex lock;               /* the fields below */
  cx__sp_worker_process *server; /* fork server mode: the shared server */
  GPtrArray *running;        /* gint * pid slots of stateless cells running */
};

/* ---- Options ----------------------------------------------------------------- */

static JsonObject *
limits_from(const cx_options *options, GError **error)
{
  static const struct { const char *option, *key; gboolean size; } map[] = {
    { "memory-limit", "memory", TRUE },
    { "cpu-limit", "cpu", FALSE },
    { "max-processes", "processes", FALSE },
    { "file-size-limit", "file_size", TRUE },
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
                                              "hidden-paths" };
  if (g_str_equal(isolation, "none")) {
    for (guint i = 0; i < G_N_ELEMENTS(sandbox_only); i++) {
      const char *value = cx_options_get_string(options, sandbox_only[i], "");
      if (*value != '\0' && !g_str_equal(value, "none")) {
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
  if (cx_options_has(options, "memory-limit"))
    json_object_set_int_member(sandbox, "memory",
                               (gint64)cx_options_get_size(options, "memory-limit", 0));
  if (cx_options_has(options, "max-processes"))
    json_object_set_int_member(sandbox, "processes",
                               cx_options_get_int(options, "max-processes", 0));
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), sandbox);
  g_ptr_array_add(dirs, NULL);
  *view = (char **)g_ptr_array_free(g_steal_pointer(&dirs), FALSE);
  return cx_json_to_string(node, FALSE);
}

/* ---- The fork server ----------------------------------------------------------- */

static cx__sp_worker_process *
start_worker(subprocess_backend *backend, GError **error)
{
  return cx__sp_worker_process_start(backend->worker_path, backend->isolated, backend->preload,
                                     backend->sandbox, backend->environment, error);
}

/* Open a channel to a process the server forks for REQUEST (consumed):
 * send it with the other end of a new socket pair.  Restarts a dead
 * server once.  With backend->lock held (SERVER is backend->server) or
 * on a server of one's own. */
static int
open_channel(subprocess_backend *backend, cx__sp_worker_process **server, JsonObject *request,
             GError **error)
{
  g_autoptr(JsonObject) owned = request;
  for (int attempt = 0;; attempt++) {
    if (*server == NULL || !cx__sp_worker_process_alive(*server)) {
      g_clear_pointer(server, cx__sp_worker_process_stop);
      *server = start_worker(backend, error);
      if (*server == NULL)
        return -1;
    }
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) < 0) {
      int saved = errno;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot create a socket pair: %s",
                  g_strerror(saved));
      return -1;
    }
    g_autoptr(GError) send_error = NULL;
    gboolean sent = cx__wire_send_object((*server)->control, CX__WIRE_MSG_RUN,
                                         json_object_ref(owned), sockets[1], &send_error);
    close(sockets[1]);
    if (sent)
      return sockets[0];
    close(sockets[0]);
    /* The server died since we last looked: start another, once. */
    g_clear_pointer(server, cx__sp_worker_process_stop);
    if (attempt > 0) {
      g_propagate_error(error, g_steal_pointer(&send_error));
      return -1;
    }
  }
}

/* ---- Requests ------------------------------------------------------------------ */

/* A cwd asked for one call must lie in the sandbox's view, which was made
 * when the worker started: say so, and what to set, rather than let the
 * cell fail to find it. */
static gboolean
cwd_in_view(subprocess_backend *backend, const cx_run_options *run, GError **error)
{
  const char *cwd = cx_run_options_get_cwd(run);
  if (backend->view == NULL || cwd == NULL)
    return TRUE;
  /* As the worker resolves it: from the cells' cwd, the view's first. */
  g_autofree char *path = g_canonicalize_filename(cwd, backend->view[0]);
  for (char **dir = backend->view; *dir != NULL; dir++) {
    gsize n = strlen(*dir);
    if (g_str_has_prefix(path, *dir) && (path[n] == '\0' || path[n] == '/' || n == 1))
      return TRUE;
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "subprocess: the cwd %s is outside what isolation = sandbox shows the cells (its "
              "`cwd`, `writable-paths` and `read-only-paths`, fixed when the backend opened); "
              "add it to `writable-paths` or set `cwd` to it",
              path);
  return FALSE;
}

static JsonObject *
cell_request(subprocess_backend *backend, const char *code, const cx_run_options *run)
{
  JsonObject *cell = json_object_new();
  /* JSON strings are UTF-8: other bytes travel encoded, so that Python,
   * not the protocol, judges them (a SyntaxError, as on every backend). */
  if (g_utf8_validate(code, -1, NULL)) {
    json_object_set_string_member(cell, "code", code);
  } else {
    g_autofree char *encoded = g_base64_encode((const guchar *)code, strlen(code));
    json_object_set_string_member(cell, "code_base64", encoded);
  }
  /* The backend's cwd, env and timeout are in RUN already (plugin.h). */
  const char *cwd = cx_run_options_get_cwd(run);
  if (cwd != NULL)
    json_object_set_string_member(cell, "cwd", cwd);
  JsonArray *env = json_array_new();
  for (const char *const *assignment = cx_run_options_get_env(run); *assignment != NULL;
       assignment++)
    json_array_add_string_element(env, *assignment);
  json_object_set_array_member(cell, "env", env);
  const char *const *mime = cx_run_options_get_allowed_mime_types(run);
  if (mime != NULL) {
    JsonArray *types = json_array_new();
    for (; *mime != NULL; mime++)
      json_array_add_string_element(types, *mime);
    json_object_set_array_member(cell, "mime_types", types);
  }
  return cell;
}

/* A request too long for a frame fails here, before anything is sent:
 * neither the server nor a session may pay for it. */
static gboolean
request_fits(JsonObject *request, GError **error)
{
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), request);
  gsize len = cx__wire_json_size(node);
  if (len <= CX__WIRE_MAX_PAYLOAD)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "subprocess: the cell's code is too large to send to the worker (%" G_GSIZE_FORMAT
              " bytes as a message, %u MiB at most)", len, CX__WIRE_MAX_PAYLOAD / (1024 * 1024));
  return FALSE;
}

static JsonObject *
open_request(subprocess_backend *backend, const char *kind)
{
  JsonObject *request = json_object_new();
  json_object_set_string_member(request, "kind", kind);
  /* A copy, not a reference to backend->limits: JsonObject's reference
   * count is not atomic, and requests are made on the callers' threads. */
  JsonObject *limits = json_object_new();
  g_autoptr(GList) names = json_object_get_members(backend->limits);
  for (GList *name = names; name != NULL; name = name->next)
    json_object_set_int_member(limits, name->data, json_object_get_int_member(backend->limits, name->data));
  json_object_set_object_member(request, "limits", limits);
  json_object_set_int_member(request, "output_limit", (gint64)backend->output_limit);
  return request;
}

static cx__sp_call_params
call_params(subprocess_backend *backend, const cx_run_options *run, gboolean one_shot)
{
  return (cx__sp_call_params){
    .timeout = cx_run_options_get_timeout(run),
    .output_limit = backend->output_limit,
    .one_shot = one_shot,
    .run = run,
    .cell_number = 1,
  };
}

/* ---- The backend --------------------------------------------------------------- */

static void
subprocess_destroy(cx_backend_instance *instance)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  g_clear_pointer(&backend->server, cx__sp_worker_process_stop);
  g_free(backend->worker_path);
  g_free(backend->preload);
  g_strfreev(backend->environment);
  g_free(backend->cwd);
  g_strfreev(backend->view);
  g_clear_pointer(&backend->limits, json_object_unref);
  g_free(backend->sandbox);
  g_ptr_array_unref(backend->running);
  g_mutex_clear(&backend->lock);
  g_free(backend);
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

static cx_backend_instance *
subprocess_create(const cx_options *options, GError **error)
{
  const char *mode = cx_options_get_string(options, "mode", "forkserver");
  if (!g_str_equal(mode, "forkserver") && !g_str_equal(mode, "spawn")) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "subprocess: mode must be \"forkserver\" or \"spawn\", not \"%s\"", mode);
    return NULL;
  }
  if (!preload_is_valid(cx_options_get_string(options, "preload", ""), error))
    return NULL;
  g_autoptr(JsonObject) limits = limits_from(options, error);
  if (limits == NULL)
    return NULL;
  g_autoptr(GError) sandbox_error = NULL;
  g_auto(GStrv) view = NULL;
  g_autofree char *sandbox = sandbox_from(options, &view, &sandbox_error);
  if (sandbox_error != NULL) {
    g_propagate_error(error, g_steal_pointer(&sandbox_error));
    return NULL;
  }
  const char *worker_path = worker_path_from(options);
  if (!g_file_test(worker_path, G_FILE_TEST_IS_EXECUTABLE)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "subprocess: the worker program %s is missing or not executable; install "
                "cellexec completely or point the `worker` option at cellexec-worker",
                worker_path);
    return NULL;
  }

  subprocess_backend *backend = g_new0(subprocess_backend, 1);
  g_mutex_init(&backend->lock);
  backend->running = g_ptr_array_new();
  backend->worker_path = g_strdup(worker_path);
  backend->isolated = cx_options_get_bool(options, "isolated", FALSE);
  backend->preload = g_strdup(cx_options_get_string(options, "preload", ""));
  backend->spawn_mode = g_str_equal(mode, "spawn");
  g_auto(GStrv) env = cx_options_get_env(options, "env");
  backend->environment =
    cx__sp_worker_environment(cx_options_get_bool(options, "inherit-env", FALSE),
                              (const char *const *)env);
  backend->cwd = g_strdup(cx_options_get_string(options, "cwd", NULL));
  backend->limits = g_steal_pointer(&limits);
  backend->sandbox = g_steal_pointer(&sandbox);
  backend->view = g_steal_pointer(&view);
  backend->output_limit = cx_options_get_size(options, "output-limit", 0);

  /* Start the server now: a worker that cannot start fails here, and the
   * first cell does not pay for Python's start. */
  if (!backend->spawn_mode) {
    backend->server = start_worker(backend, error);
    if (backend->server == NULL) {
      subprocess_destroy((cx_backend_instance *)backend);
      return NULL;
    }
  }
  return (cx_backend_instance *)backend;
}

/* The server a stateless cell was sent to, while it waits to start. */
typedef struct {
  subprocess_backend *backend;
  cx__sp_worker_process *own_server; /* spawn mode */
  pid_t pid;                     /* fork server mode: the shared server then */
} server_watch;

static gboolean
server_alive(gpointer data)
{
  server_watch *watch = data;
  if (watch->own_server != NULL)
    return cx__sp_worker_process_alive(watch->own_server);
  subprocess_backend *backend = watch->backend;
  g_mutex_lock(&backend->lock);
  /* Replaced since: the one we used is gone. */
  gboolean alive = backend->server != NULL && backend->server->pid == watch->pid &&
                   cx__sp_worker_process_alive(backend->server);
  g_mutex_unlock(&backend->lock);
  return alive;
}

static cx_result *
run_stateless_once(subprocess_backend *backend, const char *code, const cx_run_options *run,
                   cx__sp_call_outcome *outcome, GError **error)
{
  JsonObject *request = open_request(backend, "cell");
  json_object_set_object_member(request, "cell", cell_request(backend, code, run));
  if (strlen(code) > CX__WIRE_MAX_PAYLOAD / 8 && !request_fits(request, error)) {
    json_object_unref(request);
    *outcome = CX__SP_CALL_DONE;
    return NULL;
  }

  cx__sp_worker_process *own_server = NULL;
  server_watch watch = { backend, NULL, 0 };
  int channel;
  if (backend->spawn_mode) {
    channel = open_channel(backend, &own_server, request, error);
    watch.own_server = own_server;
  } else {
    g_mutex_lock(&backend->lock);
    channel = open_channel(backend, &backend->server, request, error);
    watch.pid = backend->server != NULL ? backend->server->pid : 0;
    g_mutex_unlock(&backend->lock);
  }
  if (channel < 0) {
    cx__sp_worker_process_stop(own_server);
    *outcome = CX__SP_CALL_PROCESS_GONE;
    return NULL;
  }

  gint pid = 0;
  g_mutex_lock(&backend->lock);
  g_ptr_array_add(backend->running, &pid);
  g_mutex_unlock(&backend->lock);

  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(channel);
  cx__sp_call_params params = call_params(backend, run, TRUE);
  params.server_alive = server_alive;
  params.server_data = &watch;
  cx_result *result = cx__sp_cell_call_run(channel, reader, &pid, &params, outcome, error);

  g_mutex_lock(&backend->lock);
  g_ptr_array_remove_fast(backend->running, &pid);
  g_mutex_unlock(&backend->lock);
  close(channel);
  cx__sp_worker_process_stop(own_server);
  return result;
}

static cx_result *
subprocess_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
                    GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  cx__sp_call_outcome outcome;
  g_autoptr(GError) first_error = NULL;
  if (!cwd_in_view(backend, run, error))
    return NULL;
  cx_result *result = run_stateless_once(backend, code, run, &outcome, &first_error);
  /* The server died with the request: the cell never ran, so run it on a
   * new server. */
  if (result == NULL && outcome == CX__SP_CALL_NEVER_STARTED)
    return run_stateless_once(backend, code, run, &outcome, error);
  if (result == NULL)
    g_propagate_error(error, g_steal_pointer(&first_error));
  return result;
}

/* ---- Sessions ------------------------------------------------------------------ */

static gboolean session_connect_once(subprocess_session *session, gboolean *server_lost,
                                     GError **error);

static void
session_disconnect(subprocess_session *session)
{
  if (session->channel >= 0)
    close(session->channel);
  session->channel = -1;
  g_clear_pointer(&session->reader, cx__wire_reader_free);
  g_clear_pointer(&session->own_server, cx__sp_worker_process_stop);
  g_atomic_int_set(&session->pid, 0);
}

/* Read the first frame of a session's channel by DEADLINE, as
 * cx__wire_read_within() does, and give up early (*SERVER_LOST) if the
 * server that should start the process is gone. */
static gboolean
read_first_frame(subprocess_session *session, server_watch *watch, gint64 deadline,
                 guint8 *type, const guint8 **payload, gsize *len, gboolean *timed_out,
                 gboolean *server_lost, GError **error)
{
  *server_lost = FALSE;
  for (;;) {
    gint64 slice = MIN(deadline, g_get_monotonic_time() + CX__SP_SERVER_CHECK_US);
    g_autoptr(GError) read_error = NULL;
    if (cx__wire_read_within(session->reader, slice, type, payload, len, timed_out, &read_error))
      return TRUE;
    if (!*timed_out || g_get_monotonic_time() >= deadline) {
      if (read_error != NULL) /* none at a clean EOF */
        g_propagate_error(error, g_steal_pointer(&read_error));
      return FALSE;
    }
    *timed_out = FALSE;
    if (!server_alive(watch)) {
      *server_lost = TRUE;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker stopped before it started the session's process");
      return FALSE;
    }
  }
}

/* Fork the session's process and wait for its STARTED.  A server found
 * stopped meanwhile is replaced, once. */
static gboolean
session_connect(subprocess_session *session, GError **error)
{
  for (int attempt = 0;; attempt++) {
    gboolean server_lost = FALSE;
    g_autoptr(GError) attempt_error = NULL;
    if (session_connect_once(session, &server_lost, &attempt_error))
      return TRUE;
    if (!server_lost || attempt > 0) {
      if (attempt_error != NULL)
        g_propagate_error(error, g_steal_pointer(&attempt_error));
      return FALSE;
    }
  }
}

static gboolean
session_connect_once(subprocess_session *session, gboolean *server_lost, GError **error)
{
  subprocess_backend *backend = session->backend;
  JsonObject *request = open_request(backend, "session");
  server_watch watch = { backend, NULL, 0 };
  if (backend->spawn_mode) {
    session->channel = open_channel(backend, &session->own_server, request, error);
    watch.own_server = session->own_server;
  } else {
    g_mutex_lock(&backend->lock);
    session->channel = open_channel(backend, &backend->server, request, error);
    watch.pid = backend->server != NULL ? backend->server->pid : 0;
    g_mutex_unlock(&backend->lock);
  }
  if (session->channel < 0)
    return FALSE;
  session->reader = cx__wire_reader_new(session->channel);
  guint8 type;
  const guint8 *payload;
  gsize len;
  g_autoptr(JsonNode) started = NULL;
  gboolean timed_out = FALSE;
  gint64 deadline = g_get_monotonic_time() + SESSION_START_TIMEOUT_S * G_USEC_PER_SEC;
  if (read_first_frame(session, &watch, deadline, &type, &payload, &len, &timed_out,
                       server_lost, error)) {
    started = cx__wire_parse_object(payload, len, "STARTED", error);
    if (started != NULL && type == CX__WIRE_MSG_ERROR) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker could not start a session process: %s",
                  cx__wire_error_message(json_node_get_object(started)));
      g_clear_pointer(&started, json_node_unref);
    } else if (started != NULL && type != CX__WIRE_MSG_STARTED) {
      g_clear_pointer(&started, json_node_unref);
    }
  } else if (timed_out) {
    g_clear_error(error);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the subprocess worker did not start a session process within %d s; "
                "check that the machine can start processes", SESSION_START_TIMEOUT_S);
  }
  gint64 pid = started != NULL ? cx__peer_get_int(
                                   json_node_get_object(started), "pid", 0) : 0;
  if (pid <= 1 || pid > G_MAXINT) {
    if (error != NULL && *error == NULL)
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "the subprocess worker could not start a session process");
    session_disconnect(session);
    return FALSE;
  }
  g_atomic_int_set(&session->pid, (gint)pid);
  session->dead = FALSE;
  session->generation++;
  session->cells_run = 0;
  return TRUE;
}

static cx_session_instance *
subprocess_session_open(cx_backend_instance *instance, GError **error)
{
  subprocess_session *session = g_new0(subprocess_session, 1);
  session->backend = (subprocess_backend *)instance;
  session->channel = -1;
  g_rec_mutex_init(&session->lock);
  if (!session_connect(session, error)) {
    g_rec_mutex_clear(&session->lock);
    g_free(session);
    return NULL;
  }
  return (cx_session_instance *)session;
}

/* TRUE when the session's process has ended since its last cell (its
 * channel has EXITED or EOF waiting). */
static gboolean
session_ended_while_idle(subprocess_session *session)
{
  struct pollfd fd = { session->channel, POLLIN, 0 };
  return poll(&fd, 1, 0) != 0;
}

gboolean
cx__sp_session_revive(subprocess_session *session, gboolean *restarted, GError **error)
{
  *restarted = FALSE;
  if (!session->dead && session->channel >= 0 && !session_ended_while_idle(session))
    return TRUE;
  /* Outer executor requests still wait on the old channel: a new process
   * must not take its place under them. */
  if (session->executor_depth > 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the session's worker died: an executor operation in progress was waiting "
                "for it; the session restarts once that operation has returned");
    return FALSE;
  }
  /* Its state is gone with it: the caller says so, and goes on in a new
   * process. */
  session_disconnect(session);
  if (!session_connect(session, error))
    return FALSE;
  *restarted = TRUE;
  return TRUE;
}

static cx_result *
subprocess_session_run_cell(cx_session_instance *instance, const char *code,
                            const cx_run_options *run, GError **error)
{
  subprocess_session *session = (subprocess_session *)instance;
  subprocess_backend *backend = session->backend;
  if (!cwd_in_view(backend, run, error))
    return NULL;
  g_rec_mutex_lock(&session->lock);
  gboolean restarted;
  if (!cx__sp_session_revive(session, &restarted, error)) {
    g_rec_mutex_unlock(&session->lock);
    return NULL;
  }

  cx_result *result = NULL;
  cx__sp_call_outcome outcome = CX__SP_CALL_PROCESS_GONE;
  JsonObject *cell = cell_request(backend, code, run);
  if (strlen(code) > CX__WIRE_MAX_PAYLOAD / 8 && !request_fits(cell, error)) {
    json_object_unref(cell);
    g_rec_mutex_unlock(&session->lock);
    return NULL;
  }
  if (cx__wire_send_object(session->channel, CX__WIRE_MSG_RUN, cell, -1, error)) {
    cx__sp_call_params params = call_params(backend, run, FALSE);
    params.cell_number = ++session->cells_run;
    g_atomic_int_set(&session->busy, TRUE);
    result = cx__sp_cell_call_run(session->channel, session->reader, &session->pid, &params,
                                  &outcome, error);
    g_atomic_int_set(&session->busy, FALSE);
  }
  if (outcome != CX__SP_CALL_DONE)
    session->dead = TRUE;
  if (result != NULL && restarted)
    cx_result_set_extra(result, "session_restarted", json_node_init_boolean(json_node_alloc(), TRUE));
  g_rec_mutex_unlock(&session->lock);
  return result;
}

static void
subprocess_session_close(cx_session_instance *instance)
{
  subprocess_session *session = (subprocess_session *)instance;
  /* EOF on its channel: the session's process kills what it started and
   * exits; the server reaps it. */
  session_disconnect(session);
  g_clear_pointer(&session->host_functions, g_hash_table_unref);
  g_rec_mutex_clear(&session->lock);
  g_free(session);
}

/* ---- Interrupts and queries ---------------------------------------------------- */

static gboolean
subprocess_interrupt(cx_backend_instance *instance, cx_session_instance *session_instance,
                     GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  if (session_instance != NULL) {
    subprocess_session *session = (subprocess_session *)session_instance;
    gint pid = g_atomic_int_get(&session->pid);
    if (g_atomic_int_get(&session->busy) && pid > 0)
      kill(pid, SIGINT);
    return TRUE;
  }
  g_mutex_lock(&backend->lock);
  for (guint i = 0; i < backend->running->len; i++) {
    gint *slot = g_ptr_array_index(backend->running, i);
    /* Not started yet: the cell's process gets SIGINT the moment it says
     * it has (cx__sp_cell_call_run), or the request would be lost. */
    if (g_atomic_int_compare_and_exchange(slot, 0, CX__SP_INTERRUPT_PENDING))
      continue;
    gint pid = g_atomic_int_get(slot);
    if (pid > 0)
      kill(pid, SIGINT);
  }
  g_mutex_unlock(&backend->lock);
  return TRUE;
}

static JsonNode *
subprocess_query(cx_backend_instance *instance, const char *what, GError **error)
{
  subprocess_backend *backend = (subprocess_backend *)instance;
  if (g_strcmp0(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the subprocess backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  JsonObject *info = json_object_new();
  json_object_set_string_member(info, "mode", backend->spawn_mode ? "spawn" : "forkserver");
  json_object_set_string_member(info, "worker", backend->worker_path);
  json_object_set_int_member(info, "protocol", CX__WIRE_PROTOCOL_VERSION);
  json_object_set_string_member(info, "isolation", backend->sandbox != NULL ? "sandbox" : "none");
  g_mutex_lock(&backend->lock);
  json_object_set_int_member(info, "running_cells", backend->running->len);
  if (backend->server != NULL && cx__sp_worker_process_alive(backend->server)) {
    json_object_set_int_member(info, "server_pid", backend->server->pid);
    JsonObject *hello = json_node_get_object(backend->server->hello);
    JsonNode *python = json_object_get_member(hello, "python");
    if (python != NULL)
      json_object_set_member(info, "python", json_node_copy(python));
    /* The measures the worker applied, as it reported them. */
    JsonNode *measures = json_object_get_member(hello, "sandbox");
    if (measures != NULL)
      json_object_set_member(info, "sandbox", json_node_copy(measures));
  }
  g_mutex_unlock(&backend->lock);
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, info);
  return node;
}

static const cx_backend_vtable subprocess_backend_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = subprocess_create,
  .destroy = subprocess_destroy,
  .run_cell = subprocess_run_cell,
  .session_open = subprocess_session_open,
  .session_run_cell = subprocess_session_run_cell,
  .session_close = subprocess_session_close,
  .interrupt = subprocess_interrupt,
  .query = subprocess_query,
};

/* Every cell already runs in a worker process: use_subprocess is served. */
CX_PLUGIN_DESCRIBE(.name = "subprocess", .version = PACKAGE_VERSION,
                   .description = "cells in worker processes: timeouts, resource limits, "
                                  "crash isolation",
                   .options = subprocess_options, .backend = &subprocess_backend_vtable,
                   .executor = &cx__sp_executor_vtable,
                   .flags = CX_PLUGIN_HANDLES_USE_SUBPROCESS)
