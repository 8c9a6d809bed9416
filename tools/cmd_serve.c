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

/* --max-body SIZE, read as the backends read their sizes ("64M"). */
static gboolean
parse_max_body(const char *text, gsize *bytes, GError **error)
{
  static const cx_option_spec schema[] = {
    { "max-body", CX_OPTION_SIZE_LIMIT, NULL, "the largest request body" },
    { NULL },
  };
  cx_options *options = cx_options_new("serve", schema);
  gboolean ok = cx_options_set(options, "max-body", text, error);
  if (ok)
    *bytes = (gsize)cx_options_get_size(options, "max-body", 0);
  cx_options_free(options);
  return ok;
}

/* The token: --token, the first line of --token-file, none with
 * --no-token, else a new random one, said on stderr. */
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
  if (a->token_file != NULL) {
    g_autofree char *text = NULL;
    if (!g_file_get_contents(a->token_file, &text, NULL, error))
      return NULL;
    g_strstrip(text);
    char *newline = strchr(text, '\n');
    if (newline != NULL)
      *newline = '\0';
    if (*text == '\0') {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "--token-file %s holds no token",
                  a->token_file);
      return NULL;
    }
    return g_steal_pointer(&text);
  }
  *generated = TRUE;
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

static gboolean
quit_loop(gpointer loop)
{
  g_main_loop_quit(loop);
  return G_SOURCE_CONTINUE;
}

static int
serve(serve_args *a)
{
  g_autoptr(GError) error = NULL;
  gsize max_body = 0;
  if (!parse_max_body(a->max_body != NULL ? a->max_body : DEFAULT_MAX_BODY, &max_body, &error))
    return fail_usage("--max-body: %s", error->message);
  if (a->max_sessions < 0 || a->idle_timeout < 0)
    return fail_usage("--max-sessions and --idle-timeout take a number from 0 (no limit)");
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
  guint on_int = g_unix_signal_add(SIGINT, quit_loop, loop);
  guint on_term = g_unix_signal_add(SIGTERM, quit_loop, loop);
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
  g_auto(serve_args) a = { 0 };
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a.backend, "Backend plugin every kernel runs on (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a.config, "Config file to use instead of the search order", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &a.options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "listen", 'l', 0, G_OPTION_ARG_STRING_ARRAY, &a.listen, "Address and port to serve on (repeatable; default " DEFAULT_LISTEN ")", "HOST:PORT" },
    { "token", 0, 0, G_OPTION_ARG_STRING, &a.token, "The token clients must present (default: a new random one, printed)", "TOKEN" },
    { "token-file", 0, 0, G_OPTION_ARG_FILENAME, &a.token_file, "Read the token from the first line of FILE", "FILE" },
    { "no-token", 0, 0, G_OPTION_ARG_NONE, &a.no_token, "Serve without a token (loopback addresses only)", NULL },
    { "max-sessions", 0, 0, G_OPTION_ARG_INT, &a.max_sessions, "Kernels at once (default 0: no limit)", "N" },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &a.idle_timeout, "End a kernel idle and unconnected for S seconds (default 0: never)", "S" },
    { "max-body", 0, 0, G_OPTION_ARG_STRING, &a.max_body, "The largest request body or WebSocket message taken (default " DEFAULT_MAX_BODY ")", "SIZE" },
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
    "runs.  With --no-token (loopback only), a request must come as a program on this\n"
    "machine sends it, not as a web page does: Host and Origin on loopback, a body as\n"
    "application/json; else 403.  Bad input (malformed JSON, a body over --max-body,\n"
    "an unknown kernel or context) gets a 4xx with {\"message\", \"reason\"} and stops\n"
    "nothing else.  One line per request on stderr.  SIGINT and SIGTERM stop the\n"
    "server: every kernel's and context's session ends, its workers with it.\n"
    "\n"
    "Examples:\n"
    "  cellexec serve -b subprocess -o isolation=sandbox --token-file ~/.cellexec-token\n"
    "  curl -H \"Authorization: token $(cat ~/.cellexec-token)\" http://127.0.0.1:8888/api/kernels\n"
    "  cellexec run -b jupyter -o gateway-url=http://127.0.0.1:8888 -o token=... -c 'print(1)'\n"
    "\n"
    "Exit status: 0 stopped by a signal, 2 usage, config or plugin error, or the\n"
    "address could not be listened on (one line on stderr says why).");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc > 1)
    return fail_usage("unexpected argument '%s'; see `cellexec serve --help`", argv[1]);
  return serve(&a);
}
