/* cellexec serve: the backends as an HTTP service (server/server.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <glib-unix.h>
#include <gio/gio.h>

#include "server/server.h"
#include "tools/cell_command.h"
#include "tools/commands.h"
#include "tools/interrupts.h"

#define DEFAULT_LISTEN "127.0.0.1:8888"
#define DEFAULT_MAX_BODY "64M"
#define DEFAULT_HEADER_TIMEOUT 30
#define DEFAULT_HEADER_TIMEOUT_TEXT "30"
/* Where a token may come from without showing in ps. */
#define TOKEN_VARIABLE "CELLEXEC_TOKEN"

typedef struct {
  char *backend;
  char *config;
  char **options;
  char **listen;
  char *token;
  char *token_file;
  gboolean no_token;
  int max_sessions;
  int idle_timeout;
  char *max_body;
  int max_queue;
  int max_queued;
  int cell_threads;
  int stop_timeout;
  int max_connections;      /* -1: the default */
  int header_timeout;       /* -1: the default */
} serve_args;

static void
serve_args_clear(serve_args *a)
{
  g_free(a->backend);
  g_free(a->config);
  g_strfreev(a->options);
  g_strfreev(a->listen);
  g_free(a->token);
  g_free(a->token_file);
  g_free(a->max_body);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(serve_args, serve_args_clear)

/* HOST:PORT (or [V6]:PORT) into its parts; FALSE when it is not one. */
static gboolean
split_listen(const char *text, char **host, guint *port)
{
  const char *colon = strrchr(text, ':');
  if (colon == NULL || colon == text)
    return FALSE;
  g_autofree char *name = g_strndup(text, colon - text);
  if (name[0] == '[' && name[strlen(name) - 1] == ']') {
    char *inner = g_strndup(name + 1, strlen(name) - 2);
    g_free(name);
    name = inner;
  }
  guint64 number;
  if (!g_ascii_string_to_unsigned(colon + 1, 10, 0, 65535, &number, NULL))
    return FALSE;
  *host = g_steal_pointer(&name);
  *port = (guint)number;
  return TRUE;
}

static gboolean
is_loopback(const char *host)
{
  if (g_str_equal(host, "localhost"))
    return TRUE;
  g_autoptr(GInetAddress) address = g_inet_address_new_from_string(host);
  return address != NULL && g_inet_address_get_is_loopback(address);
}

/* The first line of --token-file FILE, or NULL with ERROR saying what to
 * put there. */
static char *
read_token_file(const char *file, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr(GError) failure = NULL;
  if (!g_file_get_contents(file, &text, NULL, &failure)) {
    const char *why = g_error_matches(failure, G_FILE_ERROR, G_FILE_ERROR_NOENT) ? "does not exist"
                      : g_error_matches(failure, G_FILE_ERROR, G_FILE_ERROR_ACCES)
                        ? "is not readable by this user"
                        : failure->message;
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "--token-file %s %s: whoever runs the server creates it, the token on its first "
                "line, readable by that user only (python3 -c 'import secrets; "
                "print(secrets.token_hex(24))' > %s; chmod 600 %s)", file, why, file, file);
    return NULL;
  }
  g_strstrip(text);
  char *newline = strchr(text, '\n');
  if (newline != NULL)
    *newline = '\0';
  if (*text == '\0') {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "--token-file %s holds no token: put the token on its first line", file);
    return NULL;
  }
  return g_steal_pointer(&text);
}

/* A new random token, in hex. */
static char *
random_token(GError **error)
{
  guint8 random[24];
  if (getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot make a token: getrandom: %s",
                g_strerror(errno));
    return NULL;
  }
  GString *hex = g_string_new(NULL);
  for (gsize i = 0; i < sizeof random; i++)
    g_string_append_printf(hex, "%02x", random[i]);
  return g_string_free(hex, FALSE);
}

/* The token: --token, the first line of --token-file, none with
 * --no-token, else $CELLEXEC_TOKEN, else a new random one, said on
 * stderr. */
static char *
choose_token(const serve_args *a, gboolean *generated, GError **error)
{
  *generated = FALSE;
  if ((a->token != NULL) + (a->token_file != NULL) + a->no_token > 1) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_OPTION,
                        "--token, --token-file and --no-token exclude each other");
    return NULL;
  }
  if (a->no_token)
    return g_strdup("");
  if (a->token != NULL && *a->token == '\0') {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_OPTION,
                        "--token is empty: give a token, or --no-token to serve without one");
    return NULL;
  }
  if (a->token != NULL)
    return g_strdup(a->token);
  if (a->token_file != NULL)
    return read_token_file(a->token_file, error);
  const char *variable = g_getenv(TOKEN_VARIABLE);
  if (variable != NULL && *variable == '\0') {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_OPTION,
                        TOKEN_VARIABLE " is empty: set it to the token, or unset it for a "
                        "random one");
    return NULL;
  }
  if (variable != NULL)
    return g_strdup(variable);
  *generated = TRUE;
  return random_token(error);
}

typedef struct {
  GMainLoop *loop;
  guint stop_timeout;
} stopping;

/* SIGINT or SIGTERM: end every session, and the program within
 * --stop-timeout even if a cell will not stop. */
static gboolean
quit_loop(gpointer data)
{
  stopping *stop = data;
  interrupts_exit_within(stop->stop_timeout);
  g_main_loop_quit(stop->loop);
  return G_SOURCE_CONTINUE;
}

static int
serve(serve_args *a)
{
  g_autoptr(GError) error = NULL;
  gsize max_body = 0;
  if (!parse_size("serve", "max-body", a->max_body != NULL ? a->max_body : DEFAULT_MAX_BODY,
                  &max_body, &error))
    return fail_usage("--max-body: %s", error->message);
  if (a->max_sessions < 0 || a->idle_timeout < 0)
    return fail_usage("--max-sessions and --idle-timeout take a number from 0 (no limit)");
  if (a->max_queue < 0 || a->max_queued < 0 || a->cell_threads < 0 || a->stop_timeout < 0 ||
      a->cell_threads > 4096 || a->stop_timeout > 3600)
    return fail_usage("--max-queue, --max-queued, --cell-threads (up to 4096) and "
                      "--stop-timeout (up to 3600) take a positive number (0: the default)");
  if (a->max_connections == 0 || a->max_connections < -1)
    return fail_usage("--max-connections takes a number from 1");
  if (a->header_timeout < -1)
    return fail_usage("--header-timeout takes a number of seconds from 0 (no limit)");
  gboolean generated;
  g_autofree char *token = choose_token(a, &generated, &error);
  if (token == NULL)
    return fail_usage("%s", error->message);
  const char *const default_listen[] = { DEFAULT_LISTEN, NULL };
  const char *const *listen = a->listen != NULL ? (const char *const *)a->listen : default_listen;
  for (const char *const *l = listen; *l != NULL; l++) {
    g_autofree char *host = NULL;
    guint port;
    if (!split_listen(*l, &host, &port))
      return fail_usage("--listen %s: give HOST:PORT, such as 127.0.0.1:8888", *l);
    if (*token == '\0' && !is_loopback(host))
      return fail_usage("--no-token on %s, which is not a loopback address: anyone who reaches "
                        "it could run code; give --token or --token-file", host);
  }

  /* Strangers' sessions on one backend: each its own cwd, or a module one
   * left there would be imported by the next (sys.path[0]). */
  static const char *const serve_defaults[] = { "cwd-per-session=true", NULL };
  const backend_request request = { a->config, a->backend, a->options, NULL, NULL,
                                    serve_defaults };
  g_auto(opened_backend) opened = { 0 };
  if (!open_requested_backend(&request, &opened, &error))
    return fail_usage("%s", error->message);
  /* Not the commands' Ctrl-C (stop after this cell): here it stops the server. */
  interrupts_unwatch();
  cxs_options options = {
    .backend = opened.backend,
    .backend_name = cx_backend_get_name(opened.backend),
    .token = *token != '\0' ? token : NULL,
    .max_sessions = (guint)a->max_sessions,
    .idle_timeout = (guint)a->idle_timeout,
    .max_body = max_body,
    .max_queue = (guint)a->max_queue,
    .max_queued = (guint)a->max_queued,
    .cell_threads = (guint)a->cell_threads,
    .stop_timeout = (guint)a->stop_timeout,
    .max_connections = a->max_connections > 0 ? (guint)a->max_connections
                                              : cxs_server_default_max_connections(),
    .header_timeout = a->header_timeout >= 0 ? (guint)a->header_timeout : DEFAULT_HEADER_TIMEOUT,
  };
  g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
  cxs_server *server = cxs_server_new(&options);
  for (const char *const *l = listen; *l != NULL; l++) {
    g_autofree char *host = NULL;
    guint port;
    split_listen(*l, &host, &port);
    if (!cxs_server_listen(server, host, port, &error)) {
      cxs_server_free(server);
      return fail_usage("%s", error->message);
    }
  }
  g_auto(GStrv) uris = cxs_server_get_uris(server);
  for (char **uri = uris; *uri != NULL; uri++) {
    if (generated)
      cxs_log("listening on %s (token %s)", *uri, token);
    else
      cxs_log("listening on %s", *uri);
  }
  interrupts_prepare_deadline("cellexec serve");
  stopping stop = { loop, options.stop_timeout > 0 ? options.stop_timeout
                                                   : CXS_DEFAULT_STOP_TIMEOUT };
  guint on_int = g_unix_signal_add(SIGINT, quit_loop, &stop);
  guint on_term = g_unix_signal_add(SIGTERM, quit_loop, &stop);
  g_main_loop_run(loop);
  g_source_remove(on_int);
  g_source_remove(on_term);
  cxs_log("stopping: ending every kernel");
  cxs_server_free(server);
  return EXIT_CELL_OK;
}

int
cmd_serve(int argc, char **argv)
{
  g_auto(serve_args) a = { .max_connections = -1, .header_timeout = -1 };
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a.backend, "Backend plugin every kernel runs on (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a.config, "Config file to use instead of the search order", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &a.options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "listen", 'l', 0, G_OPTION_ARG_STRING_ARRAY, &a.listen, "Address and port to serve on (repeatable; default " DEFAULT_LISTEN ")", "HOST:PORT" },
    { "token", 0, 0, G_OPTION_ARG_STRING, &a.token, "The token clients must present; every user sees it in ps: prefer --token-file or " TOKEN_VARIABLE " (default: $" TOKEN_VARIABLE ", else a new random one, printed)", "TOKEN" },
    { "token-file", 0, 0, G_OPTION_ARG_FILENAME, &a.token_file, "Read the token from the first line of FILE (made by whoever runs the server, mode 600)", "FILE" },
    { "no-token", 0, 0, G_OPTION_ARG_NONE, &a.no_token, "Serve without a token (loopback addresses only)", NULL },
    { "max-sessions", 0, 0, G_OPTION_ARG_INT, &a.max_sessions, "Kernels at once (default 0: no limit)", "N" },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &a.idle_timeout, "End a kernel idle and unconnected for S seconds (default 0: never)", "S" },
    { "max-body", 0, 0, G_OPTION_ARG_STRING, &a.max_body, "The largest request body or WebSocket message taken (default " DEFAULT_MAX_BODY ")", "SIZE" },
    { "max-queue", 0, 0, G_OPTION_ARG_INT, &a.max_queue, "Requests waiting per context or kernel; past it 429, or an error reply (default " G_STRINGIFY(CXS_DEFAULT_MAX_QUEUE) ")", "N" },
    { "max-queued", 0, 0, G_OPTION_ARG_INT, &a.max_queued, "/execute requests waiting in all; past it 503 (default " G_STRINGIFY(CXS_DEFAULT_MAX_QUEUED) ")", "N" },
    { "cell-threads", 0, 0, G_OPTION_ARG_INT, &a.cell_threads, "Threads running /execute cells at once (default " G_STRINGIFY(CXS_DEFAULT_CELL_THREADS) ")", "N" },
    { "stop-timeout", 0, 0, G_OPTION_ARG_INT, &a.stop_timeout, "Seconds a DELETE, or SIGTERM, waits for cells to stop (default " G_STRINGIFY(CXS_DEFAULT_STOP_TIMEOUT) ")", "S" },
    { "max-connections", 0, 0, G_OPTION_ARG_INT, &a.max_connections, "Connections open at once; past it, 503 and closed (default: half the open-file limit, ulimit -n)", "N" },
    { "header-timeout", 0, 0, G_OPTION_ARG_INT, &a.header_timeout, "Close a connection whose request headers have not come S seconds after it opened or its last answer (default " DEFAULT_HEADER_TIMEOUT_TEXT "; 0: never)", "S" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new(NULL);
  g_option_context_set_summary(context,
    "Serve the backend over HTTP with two APIs: Jupyter Server's kernels API (REST\n"
    "and the kernels' channels on WebSockets), so that JupyterLab, jupyter_server's\n"
    "gateway client and cellexec's own jupyter backend run kernels here; and E2B's\n"
    "code-interpreter API, so that agents and E2B's SDKs run code here.  Each kernel\n"
    "or context is a session of the configured backend, the sandbox included.");
  g_option_context_set_description(context,
    "Jupyter Server's routes: GET /api, GET /api/kernelspecs[/NAME], GET and POST\n"
    "/api/kernels, GET and DELETE /api/kernels/ID, POST /api/kernels/ID/interrupt and\n"
    "/restart, GET and POST /api/sessions, GET, PATCH and DELETE /api/sessions/ID, and\n"
    "/api/kernels/ID/channels: a WebSocket, one Jupyter message per frame, as JSON\n"
    "text or in the binary subprotocol v1.kernel.websocket.jupyter.org.\n"
    "E2B's: POST /execute (the cell's outputs as JSON lines), GET and POST /contexts,\n"
    "POST /contexts/ID/restart, DELETE /contexts/ID, GET /health.\n"
    "\n"
    "Every route and WebSocket upgrade needs the token, as \"Authorization: token T\",\n"
    "\"?token=T\" or \"X-Access-Token: T\": without one, 401; a wrong one, 403; nothing\n"
    "runs.  The server takes it from --token (shown to every user by ps), --token-file\n"
    "or $" TOKEN_VARIABLE ", else makes one.  With --no-token (loopback only), a request\n"
    "must come as a program on this machine sends it, not as a web page does: Host\n"
    "(a loopback host and at most a port) and Origin on loopback, a body as\n"
    "application/json; else 403.  Bad input (malformed JSON, a body over --max-body\n"
    "or of more than 100000 JSON values, an unknown kernel or context) gets a 4xx\n"
    "with {\"message\", \"reason\"} and stops nothing else; a body whose end is unclear\n"
    "(Content-Length not digits, twice, or with Transfer-Encoding) gets 400 and its\n"
    "connection closed.  Connections are bounded before any token is read:\n"
    "--max-connections at once (past it, 503), and --header-timeout for a request's\n"
    "headers.  One line per request on stderr.  SIGINT and SIGTERM stop the server:\n"
    "every kernel's and context's session ends, its workers with it; still running\n"
    "--stop-timeout seconds later (a cell that ignores its interrupt and cannot be\n"
    "killed: the local backend's), it exits at once (status 143).\n"
    "\n"
    "Under load: cells wait for their turn as plain requests, not threads: at most\n"
    "--max-queue per context (past it 429) and --max-queued in all (past it 503),\n"
    "both with Retry-After; a kernel answers requests past --max-queue with an\n"
    "error reply.  DELETE of a kernel or context interrupts its cell (the subprocess\n"
    "backend kills it after its interrupt-grace) and answers once it is gone, or\n"
    "202 after --stop-timeout; it keeps its --max-sessions slot until then.\n"
    "\n"
    "Examples:\n"
    "  cellexec serve -b subprocess -o isolation=sandbox --token-file ~/.cellexec-token\n"
    "  curl -H \"Authorization: token $(cat ~/.cellexec-token)\" http://127.0.0.1:8888/api/kernels\n"
    "  cellexec run -b jupyter -o gateway-url=http://127.0.0.1:8888 -o token=... -c 'print(1)'\n"
    "\n"
    "Exit status: 0 stopped by a signal, 2 usage, config or plugin error, or the\n"
    "address could not be listened on (one line on stderr says why), 143 sessions\n"
    "still ending --stop-timeout seconds after the signal.");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc > 1)
    return fail_usage("unexpected argument '%s'; see `cellexec serve --help`", argv[1]);
  return serve(&a);
}
