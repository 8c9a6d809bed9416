/* `cellexec serve` (server/) driven by real clients: cellexec's own
 * jupyter backend in gateway mode (the client code that talks to Jupyter
 * Server, run against this server instead), and libsoup for the REST
 * routes, their authentication and bad input.  Each server runs on
 * 127.0.0.1 with a port of its own; the main one is started once. */
#define _GNU_SOURCE /* memmem */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "tests/cx_test.h"
#include "tests/proc_table.h"
#include "tests/test_jupyter_server.h"

#define TOKEN "cellexec-serve-test-token"
#define MAX_BODY "64K"

typedef struct {
  GSubprocess *process;
  int port;
  char *log;          /* its stderr: a line per request */
} server;

static server main_server;

/* How a server's process is started, beyond its arguments. */
typedef struct {
  guint nofile;             /* its limit on open descriptors; 0: the test's */
  guint64 address_space;    /* its limit on address space, in bytes; 0: none */
  const char *token_env;    /* CELLEXEC_TOKEN in its environment; NULL: unset */
} spawn_options;

/* `cellexec serve` with ARGS after the listen address, started as OPTIONS
 * say; waits until it accepts connections. */
static server
start_server_va(const spawn_options *options, const char *first, va_list ap)
{
  server s = { 0 };
  s.port = jupyter_server_free_port();
  g_autofree char *listen = g_strdup_printf("127.0.0.1:%d", s.port);
  g_autofree char *dir = cx_test_tmpdir();
  s.log = g_build_filename(dir, "serve.log", NULL);
  g_autoptr(GPtrArray) args = g_ptr_array_new();
  g_ptr_array_add(args, (gpointer) "serve");
  g_ptr_array_add(args, (gpointer) "--listen");
  g_ptr_array_add(args, listen);
  for (const char *arg = first; arg != NULL; arg = va_arg(ap, const char *))
    g_ptr_array_add(args, (gpointer)arg);
  g_ptr_array_add(args, NULL);
  /* Its log to a file: a pipe nobody reads would fill and stop it. */
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stderr_file_path(launcher, s.log);
  g_subprocess_launcher_set_stdout_file_path(launcher, s.log);
  g_subprocess_launcher_unsetenv(launcher, "CELLEXEC_TOKEN");
  if (options->token_env != NULL)
    g_subprocess_launcher_setenv(launcher, "CELLEXEC_TOKEN", options->token_env, TRUE);
  g_autofree char *program = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
  g_ptr_array_insert(args, 0, program);
  /* By prlimit(1), which then runs the server in its place: valgrind only
   * pretends to change its own process's limit, and a child set up before
   * its exec is still valgrind's. */
  g_autofree char *nofile = g_strdup_printf("--nofile=%u", options->nofile);
  g_autofree char *as = g_strdup_printf("--as=%" G_GUINT64_FORMAT, options->address_space);
  if (options->nofile != 0)
    g_ptr_array_insert(args, 0, nofile);
  if (options->address_space != 0)
    g_ptr_array_insert(args, 0, as);
  if (options->nofile != 0 || options->address_space != 0)
    g_ptr_array_insert(args, 0, (gpointer) "prlimit");
  g_autoptr(GError) error = NULL;
  s.process = g_subprocess_launcher_spawnv(launcher, (const char *const *)args->pdata, &error);
  CX_ASSERT_NO_ERROR(error);
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (!jupyter_server_port_open(s.port) && g_get_monotonic_time() < deadline &&
         g_subprocess_get_identifier(s.process) != NULL)
    g_usleep(20 * 1000);
  CU_ASSERT_TRUE_FATAL(jupyter_server_port_open(s.port));
  return s;
}

/* `cellexec serve` with ARGS (NULL-terminated) after the listen address. */
static server
start_server(const char *first, ...)
{
  static const spawn_options plain = { 0 };
  va_list ap;
  va_start(ap, first);
  server s = start_server_va(&plain, first, ap);
  va_end(ap);
  return s;
}

/* The same, started as OPTIONS say. */
static server
start_server_with(const spawn_options *options, const char *first, ...)
{
  va_list ap;
  va_start(ap, first);
  server s = start_server_va(options, first, ap);
  va_end(ap);
  return s;
}

/* SIGTERM, and its exit status. */
static int
stop_server(server *s)
{
  if (s->process == NULL)
    return -1;
  g_subprocess_send_signal(s->process, SIGTERM);
  g_autoptr(GError) error = NULL;
  g_subprocess_wait(s->process, NULL, &error);
  int status = g_subprocess_get_if_exited(s->process) ? g_subprocess_get_exit_status(s->process)
                                                        : 128 + g_subprocess_get_term_sig(s->process);
  g_clear_object(&s->process);
  return status;
}

static GPid
pid_of(const server *s)
{
  return (GPid)g_ascii_strtoll(g_subprocess_get_identifier(s->process), NULL, 10);
}

static void
stop_main_server(void)
{
  stop_server(&main_server);
}

static server *
shared_server(void)
{
  if (main_server.process == NULL) {
    main_server = start_server("-b", "subprocess", "--token", TOKEN, "--max-body", MAX_BODY, NULL);
    atexit(stop_main_server);
  }
  return &main_server;
}

static char *
url_of(const server *s)
{
  return g_strdup_printf("http://127.0.0.1:%d", s->port);
}

/* ---- REST, with libsoup ------------------------------------------------------------ */

typedef struct {
  guint status;
  JsonNode *body;     /* NULL when none or not JSON */
  char *text;
} reply;

static void
reply_clear(reply *r)
{
  g_clear_pointer(&r->body, json_node_unref);
  g_clear_pointer(&r->text, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(reply, reply_clear)

/* METHOD PATH on S with the header AUTH ("Name: value", or NULL) and BODY
 * (JSON text, or NULL). */
static reply
call(const server *s, const char *method, const char *path, const char *auth, const char *body)
{
  static SoupSession *session;
  /* Calls from several threads at once (a DELETE that waits, and what
   * goes on meanwhile) each get a connection: libsoup's default of 2 per
   * host would queue the third. */
  if (session == NULL)
    session = soup_session_new_with_options("timeout", 60, "max-conns-per-host", 8, NULL);
  g_autofree char *url = g_strdup_printf("http://127.0.0.1:%d%s", s->port, path);
  g_autoptr(SoupMessage) msg = soup_message_new(method, url);
  if (auth != NULL) {
    g_auto(GStrv) header = g_strsplit(auth, ": ", 2);
    soup_message_headers_replace(soup_message_get_request_headers(msg), header[0], header[1]);
  }
  if (body != NULL) {
    g_autoptr(GBytes) bytes = g_bytes_new(body, strlen(body));
    soup_message_set_request_body_from_bytes(msg, "application/json", bytes);
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) answer = soup_session_send_and_read(session, msg, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  reply r = { soup_message_get_status(msg), NULL, NULL };
  if (answer != NULL) {
    gsize len;
    const char *data = g_bytes_get_data(answer, &len);
    r.text = g_strndup(data, len);
    /* One JSON document, not /execute's lines (json-glib would leak the
     * first value of several when it fails on the second). */
    const char *type = soup_message_headers_get_content_type(
      soup_message_get_response_headers(msg), NULL);
    if (len > 0 && g_strcmp0(type, "application/json") == 0)
      r.body = json_from_string(r.text, NULL);
  }
  return r;
}

#define AUTH "Authorization: token " TOKEN

static const char *
member_string(JsonNode *node, const char *name)
{
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
    return NULL;
  JsonObject *o = json_node_get_object(node);
  return json_object_has_member(o, name) ? json_object_get_string_member(o, name) : NULL;
}

static guint
array_length(JsonNode *node)
{
  return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_array_get_length(json_node_get_array(node))
                                                     : G_MAXUINT;
}

static void
test_serve_needs_the_token_on_every_route(void)
{
  server *s = shared_server();
  const char *const paths[] = { "/api", "/api/kernels", "/api/kernelspecs", "/api/sessions",
                                "/no-such-route", NULL };
  for (const char *const *path = paths; *path != NULL; path++) {
    g_auto(reply) none = call(s, "GET", *path, NULL, NULL);
    CU_ASSERT_EQUAL(none.status, 401);
    g_auto(reply) wrong = call(s, "GET", *path, "Authorization: token not-it", NULL);
    CU_ASSERT_EQUAL(wrong.status, 403);
    CU_ASSERT_PTR_NOT_NULL(member_string(wrong.body, "message"));
  }
  /* A refused POST starts nothing. */
  g_auto(reply) refused = call(s, "POST", "/api/kernels", "Authorization: token not-it", "{}");
  CU_ASSERT_EQUAL(refused.status, 403);
  g_auto(reply) listed = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(listed.status, 200);
  CU_ASSERT_EQUAL(array_length(listed.body), 0);
  /* The other ways to present it: ?token= and E2B's header. */
  g_auto(reply) query = call(s, "GET", "/api/kernels?token=" TOKEN, NULL, NULL);
  CU_ASSERT_EQUAL(query.status, 200);
  g_auto(reply) header = call(s, "GET", "/api", "X-Access-Token: " TOKEN, NULL);
  CU_ASSERT_EQUAL(header.status, 200);
  CU_ASSERT_PTR_NOT_NULL(member_string(header.body, "version"));
}

static void
test_serve_kernel_lifecycle_over_rest(void)
{
  server *s = shared_server();
  g_auto(reply) specs = call(s, "GET", "/api/kernelspecs", AUTH, NULL);
  CU_ASSERT_EQUAL(specs.status, 200);
  CU_ASSERT_STRING_EQUAL(member_string(specs.body, "default"), "python3");
  g_auto(reply) spec = call(s, "GET", "/api/kernelspecs/python3", AUTH, NULL);
  CU_ASSERT_EQUAL(spec.status, 200);
  CU_ASSERT_STRING_EQUAL(member_string(spec.body, "name"), "python3");

  g_auto(reply) started = call(s, "POST", "/api/kernels", AUTH, "{\"name\": \"python3\"}");
  CU_ASSERT_EQUAL_FATAL(started.status, 201);
  const char *id = member_string(started.body, "id");
  CU_ASSERT_PTR_NOT_NULL_FATAL(id);
  CU_ASSERT_STRING_EQUAL(member_string(started.body, "execution_state"), "idle");
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) got = call(s, "GET", path, AUTH, NULL);
  CU_ASSERT_EQUAL(got.status, 200);
  CU_ASSERT_STRING_EQUAL(member_string(got.body, "id"), id);
  g_autofree char *interrupt = g_strdup_printf("%s/interrupt", path);
  g_auto(reply) interrupted = call(s, "POST", interrupt, AUTH, NULL);
  CU_ASSERT_EQUAL(interrupted.status, 204);
  g_autofree char *restart = g_strdup_printf("%s/restart", path);
  g_auto(reply) restarted = call(s, "POST", restart, AUTH, NULL);
  CU_ASSERT_EQUAL(restarted.status, 200);
  CU_ASSERT_STRING_EQUAL(member_string(restarted.body, "id"), id);
  g_auto(reply) deleted = call(s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 204);
  g_auto(reply) gone = call(s, "GET", path, AUTH, NULL);
  CU_ASSERT_EQUAL(gone.status, 404);
  CU_ASSERT_PTR_NOT_NULL(member_string(gone.body, "message"));
  g_auto(reply) none = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(none.body), 0);

  /* Sessions, as JupyterLab opens a notebook: a kernel comes with one. */
  g_auto(reply) opened = call(s, "POST", "/api/sessions", AUTH,
                              "{\"path\": \"a.ipynb\", \"name\": \"a.ipynb\", \"type\": \"notebook\","
                              " \"kernel\": {\"name\": \"python3\"}}");
  CU_ASSERT_EQUAL_FATAL(opened.status, 201);
  const char *session_id = member_string(opened.body, "id");
  JsonObject *kernel = json_object_get_object_member(json_node_get_object(opened.body), "kernel");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(kernel, "execution_state"), "idle");
  g_autofree char *session_path = g_strdup_printf("/api/sessions/%s", session_id);
  g_auto(reply) renamed = call(s, "PATCH", session_path, AUTH, "{\"path\": \"b.ipynb\"}");
  CU_ASSERT_EQUAL(renamed.status, 200);
  CU_ASSERT_STRING_EQUAL(member_string(renamed.body, "path"), "b.ipynb");
  g_auto(reply) sessions = call(s, "GET", "/api/sessions", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(sessions.body), 1);
  g_auto(reply) closed = call(s, "DELETE", session_path, AUTH, NULL);
  CU_ASSERT_EQUAL(closed.status, 204);
  g_auto(reply) kernels = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(kernels.body), 0); /* its kernel went with it */
}

static void
test_serve_bad_input_gets_4xx_and_stops_nothing(void)
{
  server *s = shared_server();
  g_auto(reply) malformed = call(s, "POST", "/api/kernels", AUTH, "{not json");
  CU_ASSERT_EQUAL(malformed.status, 400);
  CX_ASSERT_CONTAINS(member_string(malformed.body, "message"), "not a JSON object");
  g_autofree char *deep = cx_test_nested_json(20000, "1"); /* 40 KB: within --max-body */
  g_autofree char *deep_body = g_strdup_printf("{\"name\": %s}", deep);
  g_auto(reply) too_deep = call(s, "POST", "/api/sessions", AUTH, deep_body);
  CU_ASSERT_EQUAL(too_deep.status, 400);
  g_autofree char *big = g_strnfill(100 * 1024, ' ');
  g_autofree char *big_body = g_strdup_printf("{\"name\": \"python3\"%s}", big);
  g_auto(reply) too_big = call(s, "POST", "/api/kernels", AUTH, big_body);
  CU_ASSERT_EQUAL(too_big.status, 413);
  CX_ASSERT_CONTAINS(member_string(too_big.body, "message"), "--max-body");
  g_auto(reply) unknown = call(s, "GET", "/api/kernels/no-such-id", AUTH, NULL);
  CU_ASSERT_EQUAL(unknown.status, 404);
  g_auto(reply) wrong_spec = call(s, "POST", "/api/kernels", AUTH, "{\"name\": \"ruby\"}");
  CU_ASSERT_EQUAL(wrong_spec.status, 404);
  CX_ASSERT_CONTAINS(member_string(wrong_spec.body, "message"), "no kernelspec named \"ruby\"");
  g_auto(reply) wrong_method = call(s, "PUT", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL(wrong_method.status, 405);
  /* E2B's routes, the same way. */
  g_auto(reply) no_code = call(s, "POST", "/execute", AUTH, "{\"codes\": \"1\"}");
  CU_ASSERT_EQUAL(no_code.status, 400);
  g_auto(reply) both = call(s, "POST", "/execute", AUTH,
                            "{\"code\": \"1\", \"context_id\": \"x\", \"language\": \"python\"}");
  CU_ASSERT_EQUAL(both.status, 400);
  g_auto(reply) ruby = call(s, "POST", "/execute", AUTH, "{\"code\": \"1\", \"language\": \"ruby\"}");
  CU_ASSERT_EQUAL(ruby.status, 400);
  CX_ASSERT_CONTAINS(member_string(ruby.body, "message"), "Python only");
  g_auto(reply) nowhere = call(s, "POST", "/execute", AUTH,
                               "{\"code\": \"1\", \"context_id\": \"no-such-context\"}");
  CU_ASSERT_EQUAL(nowhere.status, 404);
  g_auto(reply) bad_env = call(s, "POST", "/execute", AUTH,
                               "{\"code\": \"1\", \"env_vars\": {\"A=B\": \"1\"}}");
  CU_ASSERT_EQUAL(bad_env.status, 400);
  g_auto(reply) gone = call(s, "DELETE", "/contexts/no-such-context", AUTH, NULL);
  CU_ASSERT_EQUAL(gone.status, 404);
  g_auto(reply) health = call(s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
  CU_ASSERT_STRING_EQUAL(health.text, "\"OK\"");
  /* Still serving, and nothing was started. */
  g_auto(reply) listed = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(listed.status, 200);
  CU_ASSERT_EQUAL(array_length(listed.body), 0);
}

/* A body of 20 million empty arrays, 60 MB (within the default
 * --max-body, 64M): json-glib's tree of it took the server to 2.4 GB and
 * held every other client for 8 s; under a 1 GiB address-space cap the
 * server aborted.  Now it is refused with 413 before anything is built,
 * on a worker thread, and the server goes on serving. */
static void
test_serve_wide_body_is_refused_within_bounds(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  static const spawn_options capped = { .address_space = (guint64)1 << 30 };
  server s = start_server_with(&capped, "--token", TOKEN, NULL);
  GString *wide = g_string_sized_new(60 * 1000 * 1000 + 8);
  g_string_append_c(wide, '[');
  for (guint i = 0; i < 20 * 1000 * 1000; i++)
    g_string_append(wide, "[],");
  g_string_append(wide, "[]]");
  for (const char *const *path = (const char *const[]){ "/execute", "/api/kernels", NULL };
       *path != NULL; path++) {
    g_auto(reply) refused = call(&s, "POST", *path, AUTH, wide->str);
    CU_ASSERT_EQUAL(refused.status, 413);
    CX_ASSERT_CONTAINS(member_string(refused.body, "message"),
                       "the request body is too large to read: JSON of more than 100000 values");
  }
  g_string_free(wide, TRUE);
  g_auto(reply) health = call(&s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* ---- WebSockets ---------------------------------------------------------------------- */

typedef struct {
  SoupWebsocketConnection *ws;
  GError *error;
  GPtrArray *received;        /* GBytes */
  gboolean done;
} ws_client;

static void
ws_connected(GObject *source, GAsyncResult *result, gpointer data)
{
  ws_client *c = data;
  c->ws = soup_session_websocket_connect_finish(SOUP_SESSION(source), result, &c->error);
  c->done = TRUE;
}

static void
ws_message(SoupWebsocketConnection *ws, gint type, GBytes *message, gpointer data)
{
  (void)ws, (void)type;
  ws_client *c = data;
  g_ptr_array_add(c->received, g_bytes_ref(message));
}

/* A WebSocket to PATH on S (the token in the header AUTH, may be NULL),
 * offering PROTOCOL (may be NULL); C->ws NULL and C->error set when
 * refused. */
static void
ws_open(const server *s, const char *path, const char *auth, const char *protocol, ws_client *c)
{
  static SoupSession *session;
  if (session == NULL)
    session = soup_session_new();
  g_autofree char *url = g_strdup_printf("ws://127.0.0.1:%d%s", s->port, path);
  g_autoptr(SoupMessage) msg = soup_message_new("GET", url);
  if (auth != NULL) {
    g_auto(GStrv) header = g_strsplit(auth, ": ", 2);
    soup_message_headers_replace(soup_message_get_request_headers(msg), header[0], header[1]);
  }
  char *protocols[] = { (char *)protocol, NULL };
  *c = (ws_client){ .received = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref) };
  soup_session_websocket_connect_async(session, msg, NULL, protocol != NULL ? protocols : NULL,
                                       G_PRIORITY_DEFAULT, NULL, ws_connected, c);
  while (!c->done)
    g_main_context_iteration(NULL, TRUE);
  if (c->ws != NULL)
    g_signal_connect(c->ws, "message", G_CALLBACK(ws_message), c);
}

static void
ws_close(ws_client *c)
{
  if (c->ws != NULL) {
    g_signal_handlers_disconnect_by_data(c->ws, c);
    soup_websocket_connection_close(c->ws, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
    g_clear_object(&c->ws);
  }
  g_clear_error(&c->error);
  g_ptr_array_unref(c->received);
}

/* Whether a kernel_info_reply came within 20 s: waits for it. */
static gboolean
kernel_info_answered(ws_client *c)
{
  gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  while (g_get_monotonic_time() < deadline) {
    for (guint i = 0; i < c->received->len; i++) {
      gsize len;
      const char *data = g_bytes_get_data(c->received->pdata[i], &len);
      /* Either framing: the reply's type is in its header's JSON (a v1
       * frame's offsets hold NUL bytes: memmem, not a string search). */
      static const char type[] = "\"kernel_info_reply\"";
      if (memmem(data, len, type, strlen(type)) != NULL)
        return TRUE;
    }
    g_main_context_iteration(NULL, FALSE);
    g_usleep(10 * 1000);
  }
  return FALSE;
}

static const char KERNEL_INFO[] =
  "{\"header\": {\"msg_id\": \"k1\", \"msg_type\": \"kernel_info_request\", \"session\": \"s\","
  " \"username\": \"u\", \"version\": \"5.3\", \"date\": \"\"}, \"parent_header\": {},"
  " \"metadata\": {}, \"content\": {}, \"channel\": \"shell\", \"buffers\": []}";

static void
test_serve_websockets_need_the_token_and_survive_garbage(void)
{
  server *s = shared_server();
  g_auto(reply) kernel = call(s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL_FATAL(kernel.status, 201);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s/channels", member_string(kernel.body, "id"));
  /* The upgrade without the token: refused, as every route. */
  ws_client refused;
  ws_open(s, path, NULL, NULL, &refused);
  CU_ASSERT_PTR_NULL(refused.ws);
  CU_ASSERT_PTR_NOT_NULL(refused.error);
  ws_close(&refused);
  /* JSON text: garbage dropped (and said in the log), the kernel answers after. */
  ws_client text;
  ws_open(s, path, AUTH, NULL, &text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text.ws);
  CU_ASSERT_PTR_NULL(soup_websocket_connection_get_protocol(text.ws));
  soup_websocket_connection_send_text(text.ws, "not json at all");
  soup_websocket_connection_send_text(text.ws, "{\"header\": {}, \"channel\": \"shell\"}");
  g_autofree char *deep = cx_test_nested_json(20000, "1");
  soup_websocket_connection_send_text(text.ws, deep);
  static const guint8 junk[] = { 0xff, 0x00, 0x01 };
  soup_websocket_connection_send_binary(text.ws, junk, sizeof junk);
  soup_websocket_connection_send_text(text.ws, KERNEL_INFO);
  CU_ASSERT_TRUE(kernel_info_answered(&text));
  ws_close(&text);
  /* The binary subprotocol: a frame whose offsets run past its end, one
   * with an absurd count, then a good one. */
  ws_client binary;
  ws_open(s, path, AUTH, "v1.kernel.websocket.jupyter.org", &binary);
  CU_ASSERT_PTR_NOT_NULL_FATAL(binary.ws);
  CU_ASSERT_STRING_EQUAL(soup_websocket_connection_get_protocol(binary.ws),
                         "v1.kernel.websocket.jupyter.org");
  guint64 lying[8] = { GUINT64_TO_LE(6), GUINT64_TO_LE(56), GUINT64_TO_LE(1u << 30) };
  soup_websocket_connection_send_binary(binary.ws, lying, sizeof lying);
  guint64 huge[2] = { GUINT64_TO_LE(G_MAXUINT64), 0 };
  soup_websocket_connection_send_binary(binary.ws, huge, sizeof huge);
  soup_websocket_connection_send_text(binary.ws, KERNEL_INFO); /* text on a binary socket */
  /* A real v1 frame: the offsets table, "shell", the four parts. */
  const char *parts[] = { "shell",
    "{\"msg_id\": \"k2\", \"msg_type\": \"kernel_info_request\", \"session\": \"s\","
    " \"username\": \"u\", \"version\": \"5.3\", \"date\": \"\"}", "{}", "{}", "{}" };
  GByteArray *frame = g_byte_array_new();
  guint64 word = GUINT64_TO_LE(6);
  g_byte_array_append(frame, (const guint8 *)&word, 8);
  guint64 offset = 8 * 7;
  for (int i = 0; i <= 5; i++) {
    word = GUINT64_TO_LE(offset);
    g_byte_array_append(frame, (const guint8 *)&word, 8);
    if (i < 5)
      offset += strlen(parts[i]);
  }
  for (int i = 0; i < 5; i++)
    g_byte_array_append(frame, (const guint8 *)parts[i], strlen(parts[i]));
  soup_websocket_connection_send_binary(binary.ws, frame->data, frame->len);
  g_byte_array_unref(frame);
  CU_ASSERT_TRUE(kernel_info_answered(&binary));
  ws_close(&binary);
  g_autofree char *kernel_path = g_strdup_printf("/api/kernels/%s", member_string(kernel.body, "id"));
  g_auto(reply) deleted = call(s, "DELETE", kernel_path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 204);
  g_autofree char *log = NULL;
  g_file_get_contents(s->log, &log, NULL, NULL);
  CX_ASSERT_CONTAINS(log, "no Jupyter message (JSON text) was dropped");
  CX_ASSERT_CONTAINS(log, "no Jupyter message (v1.kernel.websocket.jupyter.org) was dropped");
}

/* A message of TYPE on CHANNEL with CONTENT (JSON text), id ID, as text. */
static char *
ws_request(const char *channel, const char *type, const char *id, const char *content)
{
  return g_strdup_printf("{\"header\": {\"msg_id\": \"%s\", \"msg_type\": \"%s\", \"session\": \"s\","
                         " \"username\": \"u\", \"version\": \"5.3\", \"date\": \"\"},"
                         " \"parent_header\": {}, \"metadata\": {}, \"content\": %s,"
                         " \"channel\": \"%s\", \"buffers\": []}", id, type, content, channel);
}

/* Whether a message whose text holds NEEDLE came within 20 s. */
static gboolean
ws_received(ws_client *c, const char *needle)
{
  gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  while (g_get_monotonic_time() < deadline) {
    for (guint i = 0; i < c->received->len; i++) {
      gsize len;
      const char *data = g_bytes_get_data(c->received->pdata[i], &len);
      if (memmem(data, len, needle, strlen(needle)) != NULL)
        return TRUE;
    }
    g_main_context_iteration(NULL, FALSE);
    g_usleep(10 * 1000);
  }
  return FALSE;
}

/* A message of TYPE on CHANNEL with CONTENT (JSON text), id ID, sent to C. */
static void
ws_send_request(ws_client *c, const char *channel, const char *type, const char *id,
                const char *content)
{
  g_autofree char *text = ws_request(channel, type, id, content);
  soup_websocket_connection_send_text(c->ws, text);
}

/* A new kernel of S (its id, new) and C connected to its channels. */
static char *
open_kernel_channels(server *s, ws_client *c)
{
  g_auto(reply) kernel = call(s, "POST", "/api/kernels", AUTH, "{}");
  const char *id = member_string(kernel.body, "id");
  CU_ASSERT_PTR_NOT_NULL_FATAL(id);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s/channels", id);
  ws_open(s, path, AUTH, NULL, c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c->ws);
  return g_strdup(id);
}

/* What the session answers, asked on control while a cell runs, waits for
 * the cell on the kernel's thread: the server goes on serving meanwhile. */
static void
test_serve_control_requests_never_block_the_server(void)
{
  server *s = shared_server();
  ws_client c;
  g_autofree char *id = open_kernel_channels(s, &c);
  ws_send_request(&c, "shell", "execute_request", "cell-1",
                  "{\"code\": \"import time\\ntime.sleep(3)\", \"silent\": false}");
  g_usleep(500 * 1000);
  ws_send_request(&c, "control", "complete_request", "complete-1",
                  "{\"code\": \"pri\", \"cursor_pos\": 3}");
  g_usleep(200 * 1000);
  gint64 began = g_get_monotonic_time();
  g_auto(reply) health = call(s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
  CU_ASSERT_TRUE(cx_test_seconds_since(began) < 1.0 * cx_test_slowdown());
  /* The completion comes, after the cell, on control; frames in JSON carry
   * msg_type at their top, as Jupyter Server's do. */
  CU_ASSERT_TRUE(ws_received(&c, "\"msg_type\":\"complete_reply\""));
  CU_ASSERT_TRUE(ws_received(&c, "\"channel\":\"control\""));
  ws_close(&c);
  g_autofree char *kernel_path = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) deleted = call(s, "DELETE", kernel_path, AUTH, NULL);
}

/* The kernels API: an execute_request whose code holds a NUL (\u0000)
 * fails with Python's own error, where U+FFFD in its place ran altered
 * code; a backslash and a zero in a string literal is valid and runs. */
static void
test_serve_kernel_refuses_code_with_nul_as_python_does(void)
{
  server *s = shared_server();
  ws_client c;
  g_autofree char *id = open_kernel_channels(s, &c);
  ws_send_request(&c, "shell", "execute_request", "literal",
                  "{\"code\": \"print('a\\\\0b' == 'a' + chr(0) + 'b')\", \"silent\": false}");
  CU_ASSERT_TRUE(ws_received(&c, "\"text\":\"True\\n\""));
  ws_send_request(&c, "shell", "execute_request", "with-nul",
                  "{\"code\": \"print('a\\u0000b')\", \"silent\": false}");
  g_auto(GStrv) refusal = g_strsplit(cx_test_python_refusal_of_nul(), ": ", 2);
  g_autofree char *ename = g_strdup_printf("\"ename\":\"%s\"", refusal[0]);
  g_autofree char *evalue = g_strdup_printf("\"evalue\":\"%s\"", refusal[1]);
  CU_ASSERT_TRUE(ws_received(&c, ename));
  CU_ASSERT_TRUE(ws_received(&c, evalue));
  ws_close(&c);
  g_autofree char *kernel_path = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) deleted = call(s, "DELETE", kernel_path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 204);
}

/* Changing a session's kernel ends the kernel it leaves. */
static void
test_serve_session_kernel_change_ends_the_old_kernel(void)
{
  server *s = shared_server();
  g_auto(reply) opened = call(s, "POST", "/api/sessions", AUTH,
                              "{\"path\": \"c.ipynb\", \"kernel\": {\"name\": \"python3\"}}");
  CU_ASSERT_EQUAL_FATAL(opened.status, 201);
  g_autofree char *path = g_strdup_printf("/api/sessions/%s", member_string(opened.body, "id"));
  g_auto(reply) changed = call(s, "PATCH", path, AUTH, "{\"kernel\": {\"name\": \"python3\"}}");
  CU_ASSERT_EQUAL(changed.status, 200);
  gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  guint kernels = 0;
  do {
    g_auto(reply) listed = call(s, "GET", "/api/kernels", AUTH, NULL);
    kernels = array_length(listed.body);
  } while (kernels != 1 && g_get_monotonic_time() < deadline);
  CU_ASSERT_EQUAL(kernels, 1);
  g_auto(reply) closed = call(s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(closed.status, 204);
}

/* A connection to S that writes REQUEST (bytes by hand: what no client
 * library would send). */
static GSocketConnection *
connect_raw(const server *s, const char *request)
{
  g_autoptr(GSocketClient) client = g_socket_client_new();
  GSocketConnection *connection = g_socket_client_connect_to_host(client, "127.0.0.1",
                                                                  (guint16)s->port, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(connection);
  GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(connection));
  CU_ASSERT_TRUE(g_output_stream_write_all(out, request, strlen(request), NULL, NULL, NULL));
  return connection;
}

/* A client that POSTs BODY (JSON) to PATH on S and reads nothing: the
 * connection, for the caller to close when it leaves. */
static GSocketConnection *
post_unread(const server *s, const char *path, const char *body)
{
  g_autofree char *request = g_strdup_printf(
    "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Access-Token: " TOKEN "\r\n"
    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", path, strlen(body), body);
  return connect_raw(s, request);
}

typedef struct {
  const server *s;
  const char *body;
  char *answer;
} e2b_call;

static gpointer
e2b_call_run(gpointer data)
{
  e2b_call *c = data;
  g_auto(reply) r = call(c->s, "POST", "/execute", AUTH, c->body);
  c->answer = g_steal_pointer(&r.text);
  return NULL;
}

/* A client that leaves while its cell waits for its turn does not
 * interrupt the cell running before it (another client's).  The server
 * notices the departure when its keepalive (every 5 s) fails to write:
 * the first cell runs past that. */
static void
test_serve_a_leaving_client_interrupts_only_its_own_cell(void)
{
  server *s = shared_server();
  g_auto(reply) context = call(s, "POST", "/contexts", AUTH, "{}");
  const char *id = member_string(context.body, "id");
  g_autofree char *first_body = g_strdup_printf(
    "{\"code\": \"import time\\ntime.sleep(6.5)\\nprint('first done')\", \"context_id\": \"%s\"}", id);
  e2b_call first = { s, first_body, NULL };
  GThread *runner = g_thread_new("first", e2b_call_run, &first);
  g_usleep(300 * 1000);
  /* The second client: its request queued behind the first, then gone. */
  g_autofree char *second_body = g_strdup_printf("{\"code\": \"print('second')\", \"context_id\": \"%s\"}", id);
  g_autoptr(GSocketConnection) connection = post_unread(s, "/execute", second_body);
  g_usleep(300 * 1000);
  g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
  g_thread_join(runner);
  CX_ASSERT_CONTAINS(first.answer, "first done");
  CU_ASSERT_PTR_NULL(strstr(first.answer != NULL ? first.answer : "", "KeyboardInterrupt"));
  g_free(first.answer);
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  g_auto(reply) removed = call(s, "DELETE", path, AUTH, NULL);
}

/* A new Python context of S (E2B's /contexts): its id (new). */
static char *
new_context(const server *s)
{
  g_auto(reply) context = call(s, "POST", "/contexts", AUTH, "{\"language\": \"python\"}");
  CU_ASSERT_EQUAL(context.status, 200);
  const char *id = member_string(context.body, "id");
  CU_ASSERT_PTR_NOT_NULL_FATAL(id);
  return g_strdup(id);
}

/* /execute's answer to BODY, its status 200, as its JSON lines (JsonNode),
 * each line JSON. */
static GPtrArray *
execute_items(server *s, const char *body)
{
  g_auto(reply) ran = call(s, "POST", "/execute", AUTH, body);
  CU_ASSERT_EQUAL(ran.status, 200);
  g_auto(GStrv) lines = g_strsplit(ran.text != NULL ? ran.text : "", "\n", -1);
  GPtrArray *items = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
  for (char **line = lines; *line != NULL && **line != '\0'; line++) {
    JsonNode *item = json_from_string(*line, NULL);
    CU_ASSERT_PTR_NOT_NULL(item);
    if (item != NULL)
      g_ptr_array_add(items, item);
  }
  return items;
}

/* E2B's /execute: the cell's outputs as JSON lines, in order, then the
 * end; its context keeps the state. */
static void
test_serve_e2b_execute_streams_json_lines(void)
{
  server *s = shared_server();
  g_autofree char *id = new_context(s);
  g_autofree char *body = g_strdup_printf(
    "{\"code\": \"import sys\\nprint('out')\\nprint('err', file=sys.stderr)\\nx = 41\\nx + 1\", "
    "\"context_id\": \"%s\"}", id);
  g_autoptr(GPtrArray) items = execute_items(s, body);
  GString *types = g_string_new(NULL);
  for (guint i = 0; i < items->len; i++) {
    JsonNode *item = items->pdata[i];
    g_string_append_printf(types, "%s ", member_string(item, "type"));
    if (g_strcmp0(member_string(item, "type"), "result") == 0)
      CU_ASSERT_STRING_EQUAL(member_string(item, "text"), "42");
  }
  CU_ASSERT_STRING_EQUAL(types->str, "stdout stderr result number_of_executions end_of_execution ");
  g_string_free(types, TRUE);
  g_autofree char *again = g_strdup_printf("{\"code\": \"x\", \"context_id\": \"%s\"}", id);
  g_auto(reply) kept = call(s, "POST", "/execute", AUTH, again);
  CX_ASSERT_CONTAINS(kept.text, "\"text\":\"41\"");
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  g_auto(reply) removed = call(s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(removed.status, 200);
  g_auto(reply) after = call(s, "POST", "/execute", AUTH, again);
  CU_ASSERT_EQUAL(after.status, 404);
}

/* The lines of /execute's answer to CODE_JSON (the "code" member, as
 * JSON) in the context CONTEXT_ID as "type name: value" of its error, or
 * "type text", one a line. */
static char *
execute_lines(server *s, const char *context_id, const char *code_json)
{
  g_autofree char *body =
    g_strdup_printf("{\"code\": %s, \"context_id\": \"%s\"}", code_json, context_id);
  g_autoptr(GPtrArray) items = execute_items(s, body);
  GString *seen = g_string_new(NULL);
  for (guint i = 0; i < items->len; i++) {
    JsonNode *item = items->pdata[i];
    const char *type = member_string(item, "type");
    if (g_strcmp0(type, "error") == 0)
      g_string_append_printf(seen, "error %s: %s\n", member_string(item, "name"),
                             member_string(item, "value"));
    else if (g_strcmp0(type, "stdout") == 0)
      g_string_append_printf(seen, "stdout %s", member_string(item, "text"));
  }
  return g_string_free(seen, FALSE);
}

/* Code holding a NUL (\u0000 in the JSON) fails with Python's own error,
 * running nothing, where U+FFFD in its place ran altered code; a backslash
 * and a zero in a string literal is valid Python and runs. */
static void
test_serve_e2b_execute_refuses_code_with_nul_as_python_does(void)
{
  server *s = shared_server();
  g_autofree char *id = new_context(s);
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *ran = g_build_filename(dir, "ran", NULL);
  g_autofree char *literal = g_strdup_printf(
    "\"open('%s', 'w').close(); print('a\\\\0b' == 'a' + chr(0) + 'b')\"", ran);
  g_autofree char *control = execute_lines(s, id, literal);
  CU_ASSERT_STRING_EQUAL(control, "stdout True\n");
  CU_ASSERT_TRUE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_unlink(ran);
  g_autofree char *with_nul = g_strdup_printf("\"open('%s', 'w').close(); print('a\\u0000b')\"",
                                              ran);
  g_autofree char *refused = execute_lines(s, id, with_nul);
  g_autofree char *expected = g_strdup_printf("error %s\n", cx_test_python_refusal_of_nul());
  CU_ASSERT_STRING_EQUAL(refused, expected);
  CU_ASSERT_FALSE(g_file_test(ran, G_FILE_TEST_EXISTS));
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  g_auto(reply) removed = call(s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(removed.status, 200);
}

/* Each context works in a directory of its own (cwd-per-session, what
 * serve sets for the subprocess backend): a module one context leaves in
 * its cwd, which is sys.path[0], is not what another imports. */
static void
test_serve_contexts_do_not_share_a_cwd(void)
{
  server *s = shared_server();
  g_auto(reply) planter = call(s, "POST", "/contexts", AUTH, "{}");
  g_auto(reply) importer = call(s, "POST", "/contexts", AUTH, "{}");
  CU_ASSERT_EQUAL_FATAL(planter.status, 200);
  CU_ASSERT_EQUAL_FATAL(importer.status, 200);
  g_autofree char *plant = g_strdup_printf(
    "{\"code\": \"open('colorsys.py', 'w').write('planted = True')\", \"context_id\": \"%s\"}",
    member_string(planter.body, "id"));
  g_auto(reply) planted = call(s, "POST", "/execute", AUTH, plant);
  CU_ASSERT_EQUAL(planted.status, 200);
  g_autofree char *import = g_strdup_printf(
    "{\"code\": \"import colorsys\\ngetattr(colorsys, 'planted', False)\", "
    "\"context_id\": \"%s\"}", member_string(importer.body, "id"));
  g_auto(reply) imported = call(s, "POST", "/execute", AUTH, import);
  CX_ASSERT_CONTAINS(imported.text, "\"text\":\"False\"");
  g_autofree char *unplant = g_strdup_printf(
    "{\"code\": \"import os\\nos.remove('colorsys.py')\", \"context_id\": \"%s\"}",
    member_string(planter.body, "id"));
  g_auto(reply) unplanted = call(s, "POST", "/execute", AUTH, unplant);
  for (int i = 0; i < 2; i++) {
    g_autofree char *path =
      g_strdup_printf("/contexts/%s", member_string((i ? importer : planter).body, "id"));
    g_auto(reply) removed = call(s, "DELETE", path, AUTH, NULL);
    CU_ASSERT_EQUAL(removed.status, 200);
  }
}

/* ---- Load ----------------------------------------------------------------------- */

#define CLIENTS 32
#define CELLS_PER_CLIENT 5

typedef struct {
  const server *s;
  int client;
  guint ok;                   /* cells whose output was their own token, exactly */
} load_client;

/* One client: its own context and session, cells that each print a token
 * of their own. */
static gpointer
load_client_run(gpointer data)
{
  load_client *c = data;
  g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 120, NULL);
  g_autofree char *base = g_strdup_printf("http://127.0.0.1:%d", c->s->port);
  g_autofree char *contexts = g_strdup_printf("%s/contexts", base);
  g_autoptr(SoupMessage) create = soup_message_new("POST", contexts);
  soup_message_headers_replace(soup_message_get_request_headers(create), "Authorization",
                               "token " TOKEN);
  g_autoptr(GBytes) empty = g_bytes_new_static("{}", 2);
  soup_message_set_request_body_from_bytes(create, "application/json", empty);
  g_autoptr(GBytes) created = soup_session_send_and_read(session, create, NULL, NULL);
  g_autoptr(JsonNode) model = created != NULL ? json_from_string(g_bytes_get_data(created, NULL), NULL)
                                              : NULL;
  const char *id = member_string(model, "id");
  if (id == NULL)
    return NULL;
  g_autofree char *execute = g_strdup_printf("%s/execute", base);
  for (int cell = 0; cell < CELLS_PER_CLIENT; cell++) {
    g_autofree char *token = g_strdup_printf("token-%d-%d", c->client, cell);
    g_autofree char *body = g_strdup_printf(
      "{\"code\": \"import time\\nprint('%s', end='')\\ntime.sleep(0.01)\", \"context_id\": \"%s\"}",
      token, id);
    g_autoptr(SoupMessage) run = soup_message_new("POST", execute);
    soup_message_headers_replace(soup_message_get_request_headers(run), "Authorization",
                                 "token " TOKEN);
    g_autoptr(GBytes) bytes = g_bytes_new(body, strlen(body));
    soup_message_set_request_body_from_bytes(run, "application/json", bytes);
    g_autoptr(GBytes) answer = soup_session_send_and_read(session, run, NULL, NULL);
    if (answer == NULL)
      continue;
    /* Exactly its own token on stdout, whatever else ran at the time. */
    g_autofree char *text = g_strndup(g_bytes_get_data(answer, NULL), g_bytes_get_size(answer));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    GString *out = g_string_new(NULL);
    for (char **line = lines; *line != NULL && **line != '\0'; line++) {
      g_autoptr(JsonNode) item = json_from_string(*line, NULL);
      if (g_strcmp0(member_string(item, "type"), "stdout") == 0)
        g_string_append(out, member_string(item, "text"));
    }
    if (g_str_equal(out->str, token))
      c->ok++;

    g_string_free(out, TRUE);
  }
  g_autofree char *path = g_strdup_printf("%s/contexts/%s", base, id);
  g_autoptr(SoupMessage) remove = soup_message_new("DELETE", path);
  soup_message_headers_replace(soup_message_get_request_headers(remove), "Authorization",
                               "token " TOKEN);
  g_autoptr(GBytes) removed = soup_session_send_and_read(session, remove, NULL, NULL);
  return NULL;
}

/* The processes under PID (its children, theirs, ...). */
static guint
descendants_of(GPid pid)
{
  guint count = 0;
  g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
  const char *name;
  while (proc != NULL && (name = g_dir_read_name(proc)) != NULL) {
    if (!g_ascii_isdigit(*name))
      continue;
    /* Up the parents from NAME: does the chain reach PID? */
    gint64 at = g_ascii_strtoll(name, NULL, 10);
    for (int depth = 0; at > 1 && depth < 16; depth++) {
      g_autofree char *stat_path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/stat", at);
      g_autofree char *stat = NULL;
      if (!g_file_get_contents(stat_path, &stat, NULL, NULL))
        break;
      const char *close = strrchr(stat, ')');
      gint64 parent = 0;
      if (close == NULL || sscanf(close + 2, "%*c %" G_GINT64_FORMAT, &parent) != 1)
        break;
      if (parent == pid) {
        count++;
        break;
      }
      at = parent;
    }
  }
  return count;
}

static void
test_serve_32_clients_each_get_their_own_output(void)
{
  server *s = shared_server();
  load_client clients[CLIENTS];
  GThread *threads[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    clients[i] = (load_client){ s, i, 0 };
    threads[i] = g_thread_new("load-client", load_client_run, &clients[i]);
  }
  guint ok = 0;
  for (int i = 0; i < CLIENTS; i++) {
    g_thread_join(threads[i]);
    ok += clients[i].ok;
  }
  CU_ASSERT_EQUAL(ok, CLIENTS * CELLS_PER_CLIENT); /* nothing lost, nothing crossed */
  g_auto(reply) left = call(s, "GET", "/contexts", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(left.body), 0);
}

static void
test_serve_200_kernels_leave_no_process_behind(void)
{
  server *s = shared_server();
  GPid pid = pid_of(s);
  /* What the server runs with no kernel: the subprocess backend's fork
   * server and its spares, forked ahead of need, 4 and up to 16 under load
   * (plugins/subprocess/README.md); a burst grows them and they stay. */
  const guint most_at_rest = 1 + 16;
  guint started = 0;
  for (int i = 0; i < 200; i++) {
    g_auto(reply) kernel = call(s, "POST", "/api/kernels", AUTH, "{}");
    const char *id = member_string(kernel.body, "id");
    if (kernel.status != 201 || id == NULL)
      continue;
    started++;
    g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
    g_auto(reply) deleted = call(s, "DELETE", path, AUTH, NULL);
    CU_ASSERT_EQUAL(deleted.status, 204);
  }
  CU_ASSERT_EQUAL(started, 200);
  /* The 200 sessions end (each was a process of its own): what is left is
   * the fork server and its spares. */
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  guint after = descendants_of(pid);
  while (after > most_at_rest && g_get_monotonic_time() < deadline) {
    g_usleep(100 * 1000);
    after = descendants_of(pid);
  }
  CU_ASSERT_TRUE(after <= most_at_rest);
  g_auto(reply) listed = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(listed.body), 0);
}

/* ---- The jupyter backend against it ----------------------------------------------- */

static cx_backend *
gateway_backend(const server *s)
{
  g_autofree char *url = url_of(s);
  cx_backend *backend = cx_test_open_backend("jupyter", "gateway-url", url, "token", TOKEN, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(backend);
  return backend;
}

static void
test_serve_runs_cells_for_the_jupyter_backend(void)
{
  server *s = shared_server();
  {
    g_autoptr(cx_backend) backend = gateway_backend(s);
    g_autoptr(cx_result) result = cx_test_run_cell(backend, "print('hello')\n1 + 1", NULL);
    CX_ASSERT_CELL_OK(result);
    CX_ASSERT_STDOUT(result, "hello\n");
    g_autoptr(cx_result) failed = cx_test_run_cell(backend, "1 / 0", NULL);
    CX_ASSERT_ERROR_TYPE(failed, "ZeroDivisionError");

    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) kept = cx_test_run_session_cell(session, "kept = 41", NULL);
    /* A timeout interrupts the kernel through the server; its state stays. */
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_timeout(run, 0.5);
    g_autoptr(cx_result) timed = cx_test_run_session_cell(
      session, "import time\nprint('waiting', flush=True)\ntime.sleep(30)", run);
    CX_ASSERT_ERROR_TYPE(timed, "TimeoutError");
    CX_ASSERT_STDOUT(timed, "waiting\n");
    g_autoptr(cx_result) still = cx_test_run_session_cell(session, "print(kept)", NULL);
    CX_ASSERT_STDOUT(still, "41\n");
    /* A cell that kills its worker: the kernel behind the server goes on,
     * in a fresh session, and says so. */
    g_autoptr(cx_result) crashed = cx_test_run_session_cell(session, "import os\nos._exit(3)", NULL);
    CU_ASSERT_FALSE(cx_result_get_success(crashed));
    g_autoptr(cx_result) again = cx_test_run_session_cell(session, "print('again')", NULL);
    CX_ASSERT_STDOUT(again, "again\n");
    /* Requests beside execute, and input(), travel the WebSocket too. */
    cx_test_check_session_requests(backend, TRUE);
    cx_test_check_input(backend, FALSE);
  }
  /* Every kernel the backend started there is deleted again. */
  g_auto(reply) listed = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(listed.body), 0);
}

/* ---- Servers of their own --------------------------------------------------------- */

static void
test_serve_limits_kernels_and_ends_idle_ones(void)
{
  server s = start_server("-b", "subprocess", "--token", TOKEN, "--max-sessions", "1",
                          "--idle-timeout", "1", NULL);
  g_auto(reply) first = call(&s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL(first.status, 201);
  g_auto(reply) second = call(&s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL(second.status, 503);
  CX_ASSERT_CONTAINS(member_string(second.body, "message"), "--max-sessions 1");
  /* Idle and unconnected for more than a second: ended. */
  gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  guint left = 1;
  while (left > 0 && g_get_monotonic_time() < deadline) {
    g_usleep(200 * 1000);
    g_auto(reply) listed = call(&s, "GET", "/api/kernels", AUTH, NULL);
    left = array_length(listed.body);
  }
  CU_ASSERT_EQUAL(left, 0);
  g_auto(reply) third = call(&s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL(third.status, 201);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_autofree char *log = NULL;
  g_file_get_contents(s.log, &log, NULL, NULL);
  CX_ASSERT_CONTAINS(log, "idle for more than 1 s: ended");
  CX_ASSERT_CONTAINS(log, "POST /api/kernels 503");
  CX_ASSERT_CONTAINS(log, "stopping: ending every kernel");
  g_free(s.log);
}

static void
test_serve_sandbox_holds_through_the_server(void)
{
  /* Under /var/tmp: outside the sandbox's view. */
  g_autofree char *host_dir = g_build_filename("/var/tmp", "cellexec-serve-secret-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(g_mkdtemp(host_dir));
  g_autofree char *secret = cx_test_write_file(host_dir, "secret", "the host's secret");
  g_autofree char *code = g_strdup_printf(
    "try:\n    print(open('%s').read())\nexcept OSError:\n    print('denied')", secret);
  {
    /* The probe works without the sandbox. */
    g_autoptr(cx_backend) open_backend = gateway_backend(shared_server());
    g_autoptr(cx_result) read = cx_test_run_cell(open_backend, code, NULL);
    CX_ASSERT_STDOUT(read, "the host's secret\n");
  }
  server s = start_server("-b", "subprocess", "-o", "isolation=sandbox", "--token", TOKEN, NULL);
  {
    g_autoptr(cx_backend) sandboxed = gateway_backend(&s);
    g_autoptr(cx_result) denied = cx_test_run_cell(sandboxed, code, NULL);
    CX_ASSERT_STDOUT(denied, "denied\n");
  }
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
  g_unlink(secret);
  g_rmdir(host_dir);
}

/* The resident memory of process PID, in bytes. */
static guint64
resident_bytes(GPid pid)
{
  g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
  g_autofree char *status = NULL;
  if (!g_file_get_contents(path, &status, NULL, NULL))
    return 0;
  const char *line = strstr(status, "VmRSS:");
  return line != NULL ? g_ascii_strtoull(line + 6, NULL, 10) * 1024 : 0;
}

/* A server whose memory a test follows: cells' output kept whole (no
 * output-limit cut), so that all of it streams. */
/* For a server whose memory a test follows, started between the two: in
 * the sanitizer build, ASan would keep what the server frees in its
 * quarantine (256 MB), which is no memory the server holds.  What
 * ASAN_OPTIONS was (new, NULL: unset), for asan_options_restore(). */
static char *
asan_quarantine_small(void)
{
  const char *asan = g_getenv("ASAN_OPTIONS");
  char *saved = g_strdup(asan);
  g_autofree char *small = g_strdup_printf("%s%squarantine_size_mb=1", asan != NULL ? asan : "",
                                           asan != NULL && *asan != '\0' ? ":" : "");
  g_setenv("ASAN_OPTIONS", small, TRUE);
  return saved;
}

static void
asan_options_restore(char *saved)
{
  if (saved != NULL)
    g_setenv("ASAN_OPTIONS", saved, TRUE);
  else
    g_unsetenv("ASAN_OPTIONS");
  g_free(saved);
}

static server
start_memory_server(void)
{
  char *saved = asan_quarantine_small();
  server s = start_server("-b", "subprocess", "-o", "output-limit=1G", "--token", TOKEN, NULL);
  asan_options_restore(saved);
  return s;
}

/* A client that stops reading its /execute answer holds its cell, not the
 * server's memory: the cell waits to write once 4 MiB wait to be sent. */
static void
test_serve_a_client_that_stops_reading_holds_its_cell_not_memory(void)
{
  server s = start_memory_server();
  GPid pid = pid_of(&s);
  guint64 before = resident_bytes(pid);
  static const char body[] =
    "{\"code\": \"import sys\\nline = 'x' * 1000000\\nfor i in range(200): sys.stdout.write(line)\"}";
  g_autoptr(GSocketConnection) connection = post_unread(&s, "/execute", body);
  /* 200 MB to write, nobody reading: the server holds a few. */
  g_usleep((gulong)(4 * G_USEC_PER_SEC * cx_test_slowdown()));
  guint64 during = resident_bytes(pid);
  CU_ASSERT_TRUE(during < before + 64 * 1024 * 1024);
  g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
  /* Still serving; and the cell, its client gone, ends. */
  g_auto(reply) health = call(&s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  gboolean ended = FALSE;
  while (!ended && g_get_monotonic_time() < deadline) {
    g_autofree char *log = NULL;
    g_file_get_contents(s.log, &log, NULL, NULL);
    ended = log != NULL && strstr(log, "the client left during its cell: interrupted") != NULL;
    g_usleep(100 * 1000);
  }
  CU_ASSERT_TRUE(ended);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* ---- WebSocket clients below libsoup --------------------------------------------------- */

/* A WebSocket to PATH on S by hand, offering permessage-deflate: the
 * connection once the server's 101 is read, its headers in *HEADERS
 * unless HEADERS is NULL. */
static GSocketConnection *
raw_ws_open(const server *s, const char *path, char **headers)
{
  g_autofree char *request = g_strdup_printf(
    "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" AUTH "\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", path);
  GSocketConnection *connection = connect_raw(s, request);
  GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(connection));
  GString *text = g_string_new(NULL);
  char c;
  while (!g_str_has_suffix(text->str, "\r\n\r\n") &&
         g_input_stream_read(in, &c, 1, NULL, NULL) == 1)
    g_string_append_c(text, c);
  CU_ASSERT_TRUE(g_str_has_prefix(text->str, "HTTP/1.1 101"));
  if (headers != NULL)
    *headers = g_string_free(g_steal_pointer(&text), FALSE);
  else
    g_string_free(text, TRUE);
  return connection;
}

/* One frame from a client to CONNECTION: masked, as the protocol wants
 * (with a zero mask, which leaves PAYLOAD as it is).  FALSE once the
 * server is gone. */
static gboolean
raw_ws_send(GSocketConnection *connection, guint8 opcode, gboolean fin, const void *payload,
            gsize len)
{
  guint8 head[14];
  gsize n = 0;
  head[n++] = (guint8)((fin ? 0x80 : 0) | opcode);
  if (len < 126) {
    head[n++] = (guint8)(0x80 | len);
  } else if (len <= 0xffff) {
    head[n++] = 0x80 | 126;
    head[n++] = (guint8)(len >> 8);
    head[n++] = (guint8)len;
  } else {
    head[n++] = 0x80 | 127;
    for (int shift = 56; shift >= 0; shift -= 8)
      head[n++] = (guint8)((guint64)len >> shift);
  }
  memset(head + n, 0, 4);
  n += 4;
  GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(connection));
  return g_output_stream_write_all(out, head, n, NULL, NULL, NULL) &&
         g_output_stream_write_all(out, payload, len, NULL, NULL, NULL);
}

/* Reads CONNECTION, for up to 30 s, until NEEDLE has come (TRUE) or the
 * connection ends (FALSE; *CLOSED TRUE if the server closed it, FALSE if
 * the time ran out).  What it reads is dropped: the frames from the server
 * are not masked, so a text message shows as it is. */
static gboolean
raw_read(GSocketConnection *connection, const char *needle, gboolean *closed)
{
  GSocket *socket = g_socket_connection_get_socket(connection);
  g_socket_set_timeout(socket, 30);
  GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(connection));
  g_autofree char *buffer = g_malloc(1 << 16);
  gsize keep = needle != NULL ? strlen(needle) : 0, have = 0;
  /* 30 s in all, not per read: a response that keeps sending (keepalives)
   * without NEEDLE must not hold the test. */
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  for (;;) {
    if (g_get_monotonic_time() >= deadline) {
      *closed = FALSE;
      return FALSE;
    }
    g_autoptr(GError) error = NULL;
    gssize n = g_input_stream_read(in, buffer + have, (1 << 16) - have, NULL, &error);
    if (n <= 0) {
      *closed = !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
      return FALSE;
    }
    have += (gsize)n;
    if (needle != NULL && memmem(buffer, have, needle, keep) != NULL)
      return TRUE;
    /* The tail a needle could start in stays for the next read. */
    gsize tail = MIN(have, keep);
    memmove(buffer, buffer + have - tail, tail);
    have = tail;
  }
}

static gboolean
raw_read_until(GSocketConnection *connection, const char *needle)
{
  gboolean closed;
  return raw_read(connection, needle, &closed);
}

/* Whether the server closes CONNECTION within 30 s (what it sent first is
 * read and dropped). */
static gboolean
raw_closed_by_server(GSocketConnection *connection)
{
  gboolean closed = FALSE;
  raw_read(connection, NULL, &closed);
  return closed;
}

/* A new kernel of S: its id, and the path of its channels in *CHANNELS. */
static char *
new_kernel(const server *s, char **channels)
{
  g_auto(reply) kernel = call(s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL_FATAL(kernel.status, 201);
  const char *id = member_string(kernel.body, "id");
  *channels = g_strdup_printf("/api/kernels/%s/channels", id);
  return g_strdup(id);
}

/* The WebSockets connected to kernel ID of S, as its model says; -1 when
 * there is no such kernel. */
static gint64
connections_of(const server *s, const char *id)
{
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) model = call(s, "GET", path, AUTH, NULL);
  if (model.status != 200 || model.body == NULL || !JSON_NODE_HOLDS_OBJECT(model.body))
    return -1;
  return json_object_get_int_member_with_default(json_node_get_object(model.body),
                                                 "connections", -1);
}

/* A front end's message of 200000 values (400 KB, within --max-body):
 * read on the main loop, a message of millions took json-glib hundreds of
 * megabytes and held every other client.  It is dropped, the log saying
 * why, and the kernel answers the next one. */
static void
test_serve_a_websocket_message_too_wide_is_dropped(void)
{
  server s = start_server("--token", TOKEN, NULL);
  g_auto(reply) kernel = call(&s, "POST", "/api/kernels", AUTH, "{}");
  CU_ASSERT_EQUAL_FATAL(kernel.status, 201);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s/channels",
                                          member_string(kernel.body, "id"));
  ws_client c;
  ws_open(&s, path, AUTH, NULL, &c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c.ws);
  gsize zeros_len = 2 * 200000 - 1; /* "0,0,...,0" */
  g_autofree char *zeros = g_strnfill(zeros_len, ',');
  for (gsize i = 0; i < zeros_len; i += 2)
    zeros[i] = '0';
  g_autofree char *wide = g_strdup_printf(
    "{\"header\": {\"msg_id\": \"w1\", \"msg_type\": \"kernel_info_request\", \"session\": \"s\","
    " \"username\": \"u\", \"version\": \"5.3\", \"date\": \"\"}, \"parent_header\": {},"
    " \"metadata\": {}, \"content\": {\"x\": [%s]}, \"channel\": \"shell\"}", zeros);
  soup_websocket_connection_send_text(c.ws, wide);
  soup_websocket_connection_send_text(c.ws, KERNEL_INFO);
  CU_ASSERT_TRUE(kernel_info_answered(&c));
  ws_close(&c);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_autofree char *log = NULL;
  CU_ASSERT_TRUE(g_file_get_contents(s.log, &log, NULL, NULL));
  CX_ASSERT_CONTAINS(log, "a WebSocket message too large to read was dropped: JSON of more "
                          "than 100000 values");
  g_free(s.log);
}

/* libsoup bounds a frame, not a message: one sent as fragments without an
 * end is closed with 1009 once it passes --max-body (64K here), as is a
 * single frame past it, while messages below it go on however many there
 * are.  No compression is agreed, which would let a small frame inflate
 * past the bound. */
static void
test_serve_a_websocket_message_is_bounded_as_a_whole(void)
{
  server *s = shared_server();
  g_autofree char *path = NULL;
  g_autofree char *id = new_kernel(s, &path);
  g_autofree char *headers = NULL;
  g_autoptr(GSocketConnection) connection = raw_ws_open(s, path, &headers);
  CU_ASSERT_PTR_NULL(strcasestr(headers, "Sec-WebSocket-Extensions"));
  g_autofree char *spaces = g_malloc(40 * 1024);
  memset(spaces, ' ', 40 * 1024);
  /* Two messages of 40K in two fragments each: 80K in all, each below the
   * bound; not Jupyter messages, so dropped, and the connection stays. */
  for (int i = 0; i < 2; i++) {
    CU_ASSERT_TRUE(raw_ws_send(connection, 0x1, FALSE, spaces, 20 * 1024));
    CU_ASSERT_TRUE(raw_ws_send(connection, 0x0, TRUE, spaces + 20 * 1024, 20 * 1024));
  }
  CU_ASSERT_TRUE(raw_ws_send(connection, 0x1, TRUE, KERNEL_INFO, strlen(KERNEL_INFO)));
  CU_ASSERT_TRUE(raw_read_until(connection, "\"kernel_info_reply\""));
  /* One message of 16K fragments that does not end, 128K so far: the
   * server says why (close 1009, "message too big") and hangs up. */
  gboolean sent = raw_ws_send(connection, 0x1, FALSE, spaces, 16 * 1024);
  for (int i = 0; sent && i < 7; i++)
    sent = raw_ws_send(connection, 0x0, FALSE, spaces, 16 * 1024);
  CU_ASSERT_TRUE(raw_read_until(connection, "\x03\xf1message too big"));
  CU_ASSERT_TRUE(raw_closed_by_server(connection));
  /* One frame past the bound (as a browser sends a message): the same. */
  g_autoptr(GSocketConnection) again = raw_ws_open(s, path, NULL);
  g_autofree char *big = g_malloc(128 * 1024);
  memset(big, ' ', 128 * 1024);
  raw_ws_send(again, 0x1, TRUE, big, 128 * 1024);
  CU_ASSERT_TRUE(raw_read_until(again, "\x03\xf1message too big"));
  CU_ASSERT_TRUE(raw_closed_by_server(again));
  g_autofree char *log = NULL;
  g_file_get_contents(s->log, &log, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL(log != NULL ? strstr(log, "a WebSocket message passed the 65536 bytes")
                                     : NULL);
  g_auto(reply) health = call(s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
}

/* Ending a kernel ends its WebSockets: the clients see the connection
 * close, not only a close frame. */
static void
test_serve_ending_a_kernel_closes_its_websockets(void)
{
  server *s = shared_server();
  g_autofree char *path = NULL;
  g_autofree char *id = new_kernel(s, &path);
  g_autoptr(GSocketConnection) connection = raw_ws_open(s, path, NULL);
  CU_ASSERT_EQUAL(connections_of(s, id), 1);
  g_autofree char *kernel = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) deleted = call(s, "DELETE", kernel, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 204);
  CU_ASSERT_TRUE(raw_closed_by_server(connection));
}

/* A front end that stops reading its kernel's WebSocket is dropped once
 * 32 MiB wait for it, where the server used to keep all the kernel sent
 * (here 256 MB of output, with the copies on the way); the kernel goes on
 * for other clients. */
static void
test_serve_a_websocket_client_that_stops_reading_is_dropped(void)
{
  server s = start_memory_server();
  GPid pid = pid_of(&s);
  g_autofree char *path = NULL;
  g_autofree char *id = new_kernel(&s, &path);
  g_autoptr(GSocketConnection) connection = raw_ws_open(&s, path, NULL);
  guint64 before = resident_bytes(pid);
  g_autofree char *flood = ws_request(
    "shell", "execute_request", "flood",
    "{\"code\": \"import sys\\nline = 'x' * 1000000\\n"
    "for i in range(256): sys.stdout.write(line)\", \"silent\": false}");
  CU_ASSERT_TRUE(raw_ws_send(connection, 0x1, TRUE, flood, strlen(flood)));
  /* Read nothing until the cell is over. */
  g_autofree char *log = NULL;
  gint64 deadline = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
  while (g_get_monotonic_time() < deadline) {
    g_clear_pointer(&log, g_free);
    g_file_get_contents(s.log, &log, NULL, NULL);
    if (log != NULL && strstr(log, "bytes unread on its WebSocket: disconnected") != NULL)
      break;
    g_usleep(100 * 1000);
  }
  CU_ASSERT_PTR_NOT_NULL(log != NULL ? strstr(log, "unread on its WebSocket: disconnected")
                                     : NULL);
  /* Not all of it (with no bound, 250 MB more here): half at most. */
  CU_ASSERT_TRUE(resident_bytes(pid) < before + 128 * 1024 * 1024);
  /* Gone from the kernel, though the client still reads nothing: its
   * close is not held up by what it never read. */
  gint64 connections = connections_of(&s, id);
  deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  while (connections != 0 && g_get_monotonic_time() < deadline) {
    g_usleep(100 * 1000);
    connections = connections_of(&s, id);
  }
  CU_ASSERT_EQUAL(connections, 0);
  /* What had been sent, then the end. */
  CU_ASSERT_TRUE(raw_closed_by_server(connection));
  /* The kernel still answers a client that reads. */
  ws_client c;
  ws_open(&s, path, AUTH, NULL, &c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c.ws);
  soup_websocket_connection_send_text(c.ws, KERNEL_INFO);
  CU_ASSERT_TRUE(kernel_info_answered(&c));
  ws_close(&c);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* Without a token, only this machine's own programs: a web page's
 * request (another Origin, another Host, a body that is not JSON) is
 * refused and runs nothing. */
static void
test_serve_without_a_token_refuses_browsers(void)
{
  server s = start_server("-b", "subprocess", "--no-token", NULL);
  g_auto(reply) plain = call(&s, "GET", "/health", NULL, NULL);
  CU_ASSERT_EQUAL(plain.status, 200);
  g_auto(reply) origin = call(&s, "GET", "/api/kernels", "Origin: http://evil.example", NULL);
  CU_ASSERT_EQUAL(origin.status, 403);
  g_auto(reply) host = call(&s, "GET", "/api/kernels", "Host: evil.example", NULL);
  CU_ASSERT_EQUAL(host.status, 403);
  g_auto(reply) local_origin = call(&s, "GET", "/api/kernels", "Origin: http://localhost:8888", NULL);
  CU_ASSERT_EQUAL(local_origin.status, 200);
  /* A form's body: text/plain, as a cross-site POST sends it. */
  g_autofree char *url = g_strdup_printf("http://127.0.0.1:%d/execute", s.port);
  g_autoptr(SoupSession) session = soup_session_new();
  g_autoptr(SoupMessage) form = soup_message_new("POST", url);
  static const char code[] = "{\"code\": \"open('/tmp/cellexec-form-ran', 'w')\"}";
  g_autoptr(GBytes) body = g_bytes_new_static(code, strlen(code));
  soup_message_set_request_body_from_bytes(form, "text/plain", body);
  g_autoptr(GBytes) answer = soup_session_send_and_read(session, form, NULL, NULL);
  CU_ASSERT_EQUAL(soup_message_get_status(form), 403);
  g_auto(reply) listed = call(&s, "GET", "/contexts", NULL, NULL);
  CU_ASSERT_EQUAL(array_length(listed.body), 0); /* nothing ran, no context made */
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* Everything S answers to REQUEST (bytes by hand) until it closes the
 * connection, for up to 30 s; NULL if it kept it open that long. */
static char *
raw_answer(const server *s, const char *request)
{
  g_autoptr(GSocketConnection) connection = connect_raw(s, request);
  GSocket *socket = g_socket_connection_get_socket(connection);
  g_socket_set_timeout(socket, 30);
  GString *answer = g_string_new(NULL);
  char buffer[4096];
  for (;;) {
    g_autoptr(GError) error = NULL;
    gssize n = g_socket_receive(socket, buffer, sizeof buffer, NULL, &error);
    if (n > 0 && answer->len < 1024 * 1024) {
      g_string_append_len(answer, buffer, n);
      continue;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) || n > 0) {
      g_string_free(answer, TRUE);
      return NULL;
    }
    return g_string_free(answer, FALSE); /* the end, or reset after it */
  }
}

/* How many HTTP responses TEXT holds. */
static guint
responses_in(const char *text)
{
  guint n = 0;
  for (const char *p = text; p != NULL && (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
    n++;
  return n;
}

/* A body whose end is unclear is refused, 400, and the connection closed
 * before anything after the headers is read as a request: behind a proxy
 * that reads the framing another way, those bytes would be a request of
 * their own (smuggled).  Each request here would start a kernel. */
static void
test_serve_unclear_framing_gets_400_and_close(void)
{
  server *s = shared_server();
  static const char smuggled[] =
    "GET /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Access-Token: " TOKEN "\r\n\r\n";
  const char *const framings[] = {
    "Content-Length: -5\r\n",
    "Content-Length: +2\r\n",
    "Content-Length: 2\r\nContent-Length: 40\r\n",
    "Content-Length: 2, 40\r\n",
    "Content-Length: 99999999999999999999\r\n",
    "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
    NULL,
  };
  /* The control: clear framing is answered, and the next request too. */
  g_autofree char *clear = raw_answer(s, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "X-Access-Token: " TOKEN "\r\n\r\n"
                                         "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "X-Access-Token: " TOKEN "\r\nConnection: close\r\n\r\n");
  CU_ASSERT_EQUAL(responses_in(clear), 2);
  g_auto(reply) before = call(s, "GET", "/api/kernels", AUTH, NULL);
  for (const char *const *framing = framings; *framing != NULL; framing++) {
    g_autofree char *request = g_strdup_printf(
      "POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Access-Token: " TOKEN "\r\n"
      "Content-Type: application/json\r\n%s\r\n{}0\r\n\r\n%s", *framing, smuggled);
    g_autofree char *answer = raw_answer(s, request);
    CU_ASSERT_PTR_NOT_NULL_FATAL(answer);
    if (!g_str_has_prefix(answer, "HTTP/1.1 400"))
      fprintf(stderr, "\n%s: %.60s\n", *framing, answer);
    CU_ASSERT_TRUE(g_str_has_prefix(answer, "HTTP/1.1 400"));
    CU_ASSERT_EQUAL(responses_in(answer), 1);
  }
  g_auto(reply) after = call(s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(array_length(after.body), array_length(before.body)); /* none started */
}

/* Without a token, the Host check takes a host and a port, nothing else:
 * "127.0.0.1:1@evil.example" names evil.example's machine to a browser
 * (a DNS-rebound page sends it), not this one. */
static void
test_serve_without_a_token_reads_host_strictly(void)
{
  server s = start_server("-b", "subprocess", "--no-token", NULL);
  const char *const local[] = { "Host: 127.0.0.1", "Host: 127.0.0.1:8888", "Host: localhost:1",
                                "Host: [::1]:8888", "Host: 127.3.4.5", NULL };
  for (const char *const *host = local; *host != NULL; host++) {
    g_auto(reply) r = call(&s, "GET", "/api/kernels", *host, NULL);
    CU_ASSERT_EQUAL(r.status, 200);
  }
  const char *const foreign[] = { "Host: 127.0.0.1:1@evil.example", "Host: localhost:1@evil.example",
                                  "Host: 127.0.0.1:", "Host: 127.0.0.1:99999",
                                  "Host: 127.0.0.1.evil.example", "Host: [::1]x", NULL };
  for (const char *const *host = foreign; *host != NULL; host++) {
    g_auto(reply) r = call(&s, "GET", "/api/kernels", *host, NULL);
    if (r.status == 200)
      fprintf(stderr, "\n%s: 200\n", *host);
    CU_ASSERT_NOT_EQUAL(r.status, 200);
  }
  g_auto(reply) userinfo = call(&s, "GET", "/api/kernels", "Host: 127.0.0.1:1@evil.example", NULL);
  CU_ASSERT_EQUAL(userinfo.status, 403);
  g_auto(reply) origin = call(&s, "GET", "/api/kernels", "Origin: http://127.0.0.1:1@evil.example",
                              NULL);
  CU_ASSERT_EQUAL(origin.status, 403);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* ---- Connections -------------------------------------------------------------------- */

#define FD_LIMIT 256
#define SLOW_CLIENTS 300

/* N connections to S that send the start of a request and never its end. */
static GSocketConnection **
connect_slow(const server *s, guint n)
{
  GSocketConnection **slow = g_new0(GSocketConnection *, n);
  for (guint i = 0; i < n; i++)
    slow[i] = connect_raw(s, "GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  return slow;
}

static void
close_all(GSocketConnection **connections, guint n)
{
  for (guint i = 0; i < n; i++)
    if (connections[i] != NULL)
      g_object_unref(connections[i]);
  g_free(connections);
}

/* Whether the server closed CONNECTION (what came first is read, and
 * said in *GOT); FALSE while it is open with nothing more to read. */
static gboolean
closed_now(GSocketConnection *connection, gboolean *got)
{
  GSocket *socket = g_socket_connection_get_socket(connection);
  char buffer[1024];
  for (int reads = 0; reads < 64; reads++) {
    g_autoptr(GError) error = NULL;
    gssize n = g_socket_receive_with_blocking(socket, buffer, sizeof buffer, FALSE, NULL, &error);
    if (n > 0) {
      *got = TRUE;
      continue;
    }
    /* 0: the end; an error other than "nothing yet": reset, as good. */
    return n == 0 || !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
  }
  return FALSE;
}

/* Waits up to a minute for the server to close WANT of CONNECTIONS (N of
 * them): how many it closed, and in *ANSWERED how many of those got bytes
 * first. */
static guint
closed_by_server(GSocketConnection **connections, guint n, guint want, guint *answered)
{
  g_autofree gboolean *closed = g_new0(gboolean, n);
  g_autofree gboolean *got = g_new0(gboolean, n);
  guint count = 0;
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC * cx_test_slowdown();
  while (count < want && g_get_monotonic_time() < deadline) {
    for (guint i = 0; i < n; i++)
      if (!closed[i] && closed_now(connections[i], &got[i])) {
        closed[i] = TRUE;
        count++;
      }
    g_usleep(50 * 1000);
  }
  *answered = 0;
  for (guint i = 0; i < n; i++)
    *answered += closed[i] && got[i];
  return count;
}

/* N clients at once ask S for its kernels: how many got 200. */
static guint
clients_served(const server *s, guint n)
{
  g_autofree char **answers = g_new0(char *, n);
  GSocketConnection **connections = g_new0(GSocketConnection *, n);
  for (guint i = 0; i < n; i++)
    connections[i] = connect_raw(s, "GET /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    "X-Access-Token: " TOKEN "\r\nConnection: close\r\n\r\n");
  guint ok = 0;
  for (guint i = 0; i < n; i++) {
    GSocket *socket = g_socket_connection_get_socket(connections[i]);
    g_socket_set_timeout(socket, 30);
    char buffer[64] = "";
    gssize got = g_socket_receive(socket, buffer, sizeof buffer - 1, NULL, NULL);
    ok += got > 0 && g_str_has_prefix(buffer, "HTTP/1.1 200");
  }
  close_all(connections, n);
  return ok;
}

/* Whether S's log says NEEDLE within a minute: waits for it. */
static gboolean
log_says(const server *s, const char *needle)
{
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC * cx_test_slowdown();
  for (;;) {
    g_autofree char *log = NULL;
    g_file_get_contents(s->log, &log, NULL, NULL);
    if (log != NULL && strstr(log, needle) != NULL)
      return TRUE;
    if (g_get_monotonic_time() >= deadline)
      return FALSE;
    g_usleep(50 * 1000);
  }
}

/* A server of FD_LIMIT descriptors with --header-timeout HEADER_TIMEOUT,
 * and --max-connections MAX_CONNECTIONS unless NULL. */
static server
start_limited(const char *header_timeout, const char *max_connections)
{
  static const spawn_options limited = { .nofile = FD_LIMIT };
  /* Without MAX_CONNECTIONS, the NULL in its place ends the arguments. */
  return start_server_with(&limited, "-b", "subprocess", "--token", TOKEN, "--header-timeout",
                           header_timeout, max_connections != NULL ? "--max-connections" : NULL,
                           max_connections, NULL);
}

/* Connections that never finish their headers, more than the server has
 * descriptors: every one is closed, refused past --max-connections or
 * once --header-timeout passes (which, depends on how fast they come),
 * and then clients are served again. */
static void
test_serve_slow_clients_are_dropped_and_the_server_recovers(void)
{
  server s = start_limited("2", NULL);
  /* The control: served before. */
  CU_ASSERT_EQUAL(clients_served(&s, CLIENTS), CLIENTS);
  GSocketConnection **slow = connect_slow(&s, SLOW_CLIENTS);
  guint answered;
  CU_ASSERT_EQUAL(closed_by_server(slow, SLOW_CLIENTS, SLOW_CLIENTS, &answered), SLOW_CLIENTS);
  close_all(slow, SLOW_CLIENTS);
  /* A request refused on its headers (no token) whose body never ends:
   * libsoup reads that body before it answers, and the clock runs on. */
  GSocketConnection **unfinished = g_new0(GSocketConnection *, 1);
  unfinished[0] = connect_raw(&s, "POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
  CU_ASSERT_EQUAL(closed_by_server(unfinished, 1, 1, &answered), 1);
  close_all(unfinished, 1);
  CU_ASSERT_EQUAL(clients_served(&s, CLIENTS), CLIENTS);
  /* The first ones, at least, were accepted: closed by the timeout. */
  CU_ASSERT_TRUE(log_says(&s, "(--header-timeout)"));
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* Past --max-connections (half the descriptors by default) a connection
 * gets a 503 and is closed, the log says so once for the burst, and the
 * connections open stay so (no --header-timeout here). */
static void
test_serve_past_max_connections_new_ones_get_503(void)
{
  server s = start_limited("0", NULL);
  GSocketConnection **slow = connect_slow(&s, SLOW_CLIENTS);
  const guint past = SLOW_CLIENTS - FD_LIMIT / 2;
  guint answered;
  guint closed = closed_by_server(slow, SLOW_CLIENTS, past, &answered);
  CU_ASSERT_TRUE(closed >= past);
  CU_ASSERT_TRUE(closed < SLOW_CLIENTS);     /* the rest are held */
  CU_ASSERT_EQUAL(answered, closed);          /* each with its 503 */
  CU_ASSERT_TRUE(log_says(&s, "refusing new ones until some close"));
  g_autofree char *log = NULL;
  g_file_get_contents(s.log, &log, NULL, NULL);
  g_auto(GStrv) refusals = g_strsplit(log != NULL ? log : "", "refusing new ones", -1);
  CU_ASSERT_EQUAL(g_strv_length(refusals), 2); /* once */
  close_all(slow, SLOW_CLIENTS);
  CU_ASSERT_TRUE(log_says(&s, "accepting connections again"));
  CU_ASSERT_EQUAL(clients_served(&s, CLIENTS), CLIENTS);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* With --max-connections above what the descriptors allow, accept(2)
 * fails (EMFILE): the server waits, neither spinning nor giving up, and
 * serves again once the connections have gone. */
static void
test_serve_accepts_again_after_running_out_of_descriptors(void)
{
  server s = start_limited("600", "1000");
  GSocketConnection **slow = connect_slow(&s, SLOW_CLIENTS);
  CU_ASSERT_TRUE(log_says(&s, "cannot accept a connection"));
  close_all(slow, SLOW_CLIENTS);
  CU_ASSERT_EQUAL(clients_served(&s, CLIENTS), CLIENTS);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_free(s.log);
}

/* The token from the environment, as a secret store hands it to a
 * container: not on the command line, where every user's ps shows it. */
static void
test_serve_takes_its_token_from_the_environment(void)
{
  static const spawn_options with_token = { .token_env = TOKEN };
  server s = start_server_with(&with_token, "-b", "subprocess", NULL);
  g_auto(reply) none = call(&s, "GET", "/api/kernels", NULL, NULL);
  CU_ASSERT_EQUAL(none.status, 401);
  g_auto(reply) given = call(&s, "GET", "/api/kernels", AUTH, NULL);
  CU_ASSERT_EQUAL(given.status, 200);
  CU_ASSERT_EQUAL(stop_server(&s), 0);
  g_autofree char *log = NULL;
  g_file_get_contents(s.log, &log, NULL, NULL);
  CU_ASSERT_PTR_NULL(strstr(log != NULL ? log : "", TOKEN)); /* not printed either */
  g_free(s.log);
}

static void
test_serve_command_line_errors(void)
{
  g_auto(cx_test_cli_run) open = cx_test_cellexec(NULL, "serve", "--no-token", "--listen",
                                                  "0.0.0.0:1", NULL);
  CU_ASSERT_EQUAL(open.status, 2);
  CX_ASSERT_CONTAINS(open.err, "not a loopback address");
  g_auto(cx_test_cli_run) empty = cx_test_cellexec(NULL, "serve", "--token", "", NULL);
  CU_ASSERT_EQUAL(empty.status, 2);
  CX_ASSERT_CONTAINS(empty.err, "--token is empty");
  g_auto(cx_test_cli_run) both = cx_test_cellexec(NULL, "serve", "--no-token", "--token", "x", NULL);
  CU_ASSERT_EQUAL(both.status, 2);
  CX_ASSERT_CONTAINS(both.err, "exclude each other");
  /* A token file that is not there: which file, what goes in it, who makes it. */
  g_auto(cx_test_cli_run) no_file = cx_test_cellexec(NULL, "serve", "--token-file",
                                                     "/nonexistent/token", NULL);
  CU_ASSERT_EQUAL(no_file.status, 2);
  CX_ASSERT_CONTAINS(no_file.err, "--token-file /nonexistent/token does not exist");
  CX_ASSERT_CONTAINS(no_file.err, "the token on its first line");
  CU_ASSERT_EQUAL(strchr(no_file.err, '\n'), no_file.err + strlen(no_file.err) - 1);
  /* --token shows in ps: --help says so, and where else a token can come from. */
  g_auto(cx_test_cli_run) help = cx_test_cellexec(NULL, "serve", "--help", NULL);
  CX_ASSERT_CONTAINS(help.out, "every user sees it in ps");
  CX_ASSERT_CONTAINS(help.out, "CELLEXEC_TOKEN");
  g_auto(cx_test_cli_run) connections = cx_test_cellexec(NULL, "serve", "--max-connections",
                                                         "0", NULL);
  CU_ASSERT_EQUAL(connections.status, 2);
  CX_ASSERT_CONTAINS(connections.err, "--max-connections");
  g_auto(cx_test_cli_run) size = cx_test_cellexec(NULL, "serve", "--max-body", "lots", NULL);
  CU_ASSERT_EQUAL(size.status, 2);
  CX_ASSERT_CONTAINS(size.err, "--max-body");
  g_auto(cx_test_cli_run) listen = cx_test_cellexec(NULL, "serve", "--listen", "nowhere", NULL);
  CU_ASSERT_EQUAL(listen.status, 2);
  CX_ASSERT_CONTAINS(listen.err, "HOST:PORT");
  /* A port in use: one line, exit 2. */
  server *s = shared_server();
  g_autofree char *taken = g_strdup_printf("127.0.0.1:%d", s->port);
  g_auto(cx_test_cli_run) busy = cx_test_cellexec(NULL, "serve", "--no-token", "--listen", taken,
                                                  NULL);
  CU_ASSERT_EQUAL(busy.status, 2);
  CX_ASSERT_CONTAINS(busy.err, "cannot listen on");
}


/* ---- Under load and abuse: queues, stubborn cells, SIGTERM ----------------------------- */

/* SIGTERM, and the exit status once S has exited, within 60 s; -1 (and
 * S killed) when it did not. */
static int
stop_server_within_bound(server *s)
{
  g_subprocess_send_signal(s->process, SIGTERM);
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (g_subprocess_get_identifier(s->process) != NULL && g_get_monotonic_time() < deadline)
    g_usleep(50 * 1000);
  if (g_subprocess_get_identifier(s->process) != NULL) {
    g_subprocess_force_exit(s->process);
    g_subprocess_wait(s->process, NULL, NULL);
    g_clear_object(&s->process);
    return -1;
  }
  return stop_server(s);
}

/* A cell that will not stop when interrupted: SIGINT ignored (a
 * subprocess cell's interrupt is SIGINT), and a KeyboardInterrupt caught
 * (the local backend raises one whatever SIGINT's disposition).  It
 * writes "stubborn PID;" first, in one write. */
#define STUBBORN_CELL                                                                    \
  "import os, signal, sys, time\\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\\n"       \
  "sys.stdout.write('stubborn %d;' % os.getpid())\\nsys.stdout.flush()\\n"             \
  "while True:\\n    try:\\n"                                                           \
  "        time.sleep(0.1)\\n    except KeyboardInterrupt:\\n        pass"

/* An /execute body for CODE (JSON-escaped already) in CONTEXT_ID. */
static char *
execute_body(const char *code, const char *context_id)
{
  return g_strdup_printf("{\"code\": \"%s\", \"context_id\": \"%s\"}", code, context_id);
}

/* How many lines of S's log hold NEEDLE. */
static guint
log_count(const server *s, const char *needle)
{
  g_autofree char *log = NULL;
  guint n = 0;
  if (!g_file_get_contents(s->log, &log, NULL, NULL))
    return 0;
  for (const char *at = log; (at = strstr(at, needle)) != NULL; at += strlen(needle))
    n++;
  return n;
}

/* Whether S's log holds NEEDLE N times within 30 s. */
static gboolean
log_reaches(const server *s, const char *needle, guint n)
{
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (log_count(s, needle) < n && g_get_monotonic_time() < deadline)
    g_usleep(50 * 1000);
  return log_count(s, needle) >= n;
}

/* The threads of process PID. */
static guint
threads_of(GPid pid)
{
  g_autofree char *path = g_strdup_printf("/proc/%d/task", (int)pid);
  g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
  guint n = 0;
  while (dir != NULL && g_dir_read_name(dir) != NULL)
    n++;
  return n;
}

/* /execute requests that wait for their turn hold no thread: 40 of them
 * behind a cell that does not end leave the server with its fixed set of
 * threads; past --max-queue in a context each is refused at once with
 * 429 and Retry-After, past --max-queued in all with 503; none is left
 * without an answer. */
static void
test_serve_queued_cells_hold_no_thread_and_are_bounded(void)
{
  server s = start_server("-b", "subprocess", "--token", TOKEN, "--max-queue", "30",
                          "--max-queued", "35", "--cell-threads", "2", NULL);
  g_autofree char *first = new_context(&s);
  g_autofree char *body = execute_body("import time\\nwhile True: time.sleep(0.1)", first);
  GPtrArray *clients = g_ptr_array_new_with_free_func(g_object_unref);
  for (int i = 0; i < 41; i++)
    g_ptr_array_add(clients, post_unread(&s, "/execute", body));
  /* 1 runs, 30 wait, 10 are refused. */
  CU_ASSERT_TRUE(log_reaches(&s, "POST /execute 429", 10));
  CU_ASSERT_TRUE(threads_of(pid_of(&s)) < 30);
  g_autoptr(GSocketConnection) refused = post_unread(&s, "/execute", body);
  CU_ASSERT_TRUE(raw_read_until(refused, "Retry-After: 1"));
  /* Another context: its cells wait too until 35 wait in all. */
  g_autofree char *second = new_context(&s);
  g_autofree char *other = execute_body("import time\\nwhile True: time.sleep(0.1)", second);
  for (int i = 0; i < 10; i++)
    g_ptr_array_add(clients, post_unread(&s, "/execute", other));
  CU_ASSERT_TRUE(log_reaches(&s, "POST /execute 503", 4));
  CU_ASSERT_EQUAL(log_count(&s, "POST /execute 429"), 11);
  g_ptr_array_unref(clients);
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}

/* The processes under PID now (their pids). */
static GArray *
descendants_list(GPid pid)
{
  g_autoptr(GArray) table = proc_table_read();
  GArray *found = g_array_new(FALSE, FALSE, sizeof(int));
  g_array_append_val(found, pid);
  /* Breadth first over the table: each pass adds the children of what
   * was found; at most as many passes as processes. */
  for (guint pass = 0, added = 1; added > 0 && pass < table->len; pass++) {
    added = 0;
    for (guint i = 0; i < table->len; i++) {
      proc_entry *e = &g_array_index(table, proc_entry, i);
      gboolean known = FALSE, child = FALSE;
      for (guint j = 0; j < found->len; j++) {
        known |= g_array_index(found, int, j) == e->pid;
        child |= g_array_index(found, int, j) == e->ppid;
      }
      if (child && !known) {
        g_array_append_val(found, e->pid);
        added++;
      }
    }
  }
  g_array_remove_index(found, 0);
  return found;
}

/* Whether every process of PIDS is gone (or a zombie) within 30 s. */
static gboolean
all_gone(GArray *pids)
{
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  for (;;) {
    g_autoptr(GArray) table = proc_table_read();
    guint alive = 0;
    for (guint i = 0; i < pids->len; i++)
      for (guint j = 0; j < table->len; j++) {
        proc_entry *e = &g_array_index(table, proc_entry, j);
        alive += e->pid == g_array_index(pids, int, i) && e->state != 'Z';
      }
    if (alive == 0)
      return TRUE;
    if (g_get_monotonic_time() >= deadline)
      return FALSE;
    g_usleep(100 * 1000);
  }
}

/* A stubborn cell of context ID on S, its client connected: returns once
 * it runs, with the pid it printed (as its namespace sees it) in *PID. */
static GSocketConnection *
run_stubborn(const server *s, const char *id, int *pid)
{
  g_autofree char *body = execute_body(STUBBORN_CELL, id);
  GSocketConnection *client = post_unread(s, "/execute", body);
  g_socket_set_timeout(g_socket_connection_get_socket(client), 30);
  GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(client));
  /* "stubborn PID;", within a few kilobytes. */
  char text[4096];
  gsize have = 0;
  const char *at = NULL;
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (have < sizeof text - 1 && g_get_monotonic_time() < deadline) {
    gssize n = g_input_stream_read(in, text + have, sizeof text - 1 - have, NULL, NULL);
    if (n <= 0)
      break;
    have += (gsize)n;
    text[have] = '\0';
    at = strstr(text, "stubborn ");
    if (at != NULL && strchr(at, ';') != NULL)
      break;
  }
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  *pid = atoi(at + strlen("stubborn "));
  return client;
}

/* A call made on a thread of its own, for one that waits. */
typedef struct {
  const server *s;
  const char *method;
  char *path;
  guint status;
} background_call;

static gpointer
background_run(gpointer data)
{
  background_call *b = data;
  g_auto(reply) r = call(b->s, b->method, b->path, AUTH, NULL);
  b->status = r.status;
  return NULL;
}

/* Whether context ID is still listed by S. */
static gboolean
context_listed(const server *s, const char *id)
{
  g_auto(reply) listed = call(s, "GET", "/contexts", AUTH, NULL);
  return listed.text != NULL && strstr(listed.text, id) != NULL;
}

static gboolean
kernel_listed(const server *s, const char *id)
{
  return connections_of(s, id) >= 0;
}

/* DELETE PATH on S (of ID, which LISTED finds, on a server with
 * --max-sessions 2 and one session) while its cell ignores its interrupt:
 * once ID is no longer listed and until the DELETE is answered (the cell
 * killed), it holds its slot: POST CREATE gets CREATED once, then 503.
 * The DELETE is answered (204 for a kernel, 200 for a context) and the
 * slot is free again. */
static void
delete_holds_its_slot(const server *s, const char *path, const char *id,
                      gboolean (*listed)(const server *s, const char *id), const char *create,
                      guint created)
{
  background_call d = { s, "DELETE", g_strdup(path), 0 };
  GThread *deleting = g_thread_new("delete", background_run, &d);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (listed(s, id) && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  g_auto(reply) one = call(s, "POST", create, AUTH, "{}");
  CU_ASSERT_EQUAL(one.status, created);
  g_auto(reply) full = call(s, "POST", create, AUTH, "{}");
  CU_ASSERT_EQUAL(full.status, 503);
  g_thread_join(deleting);
  CU_ASSERT_EQUAL(d.status, created == 201 ? 204 : 200);
  g_free(d.path);
  g_auto(reply) again = call(s, "POST", create, AUTH, "{}");
  CU_ASSERT_EQUAL(again.status, created);
}

/* DELETE of a context whose cell ignores its interrupt kills the cell
 * after interrupt-grace and answers once it is gone; until then the
 * context keeps its slot under --max-sessions, and no process of it is
 * left.  With OPTION for the backend (NULL: none). */
static void
delete_kills_a_stubborn_cell(const char *option)
{
  server s = start_server("-b", "subprocess", "-o", "interrupt-grace=4", "--token", TOKEN,
                          "--max-sessions", "2", option != NULL ? "-o" : NULL, option, NULL);
  g_autofree char *id = new_context(&s);
  int cell_pid;
  g_autoptr(GSocketConnection) client = run_stubborn(&s, id, &cell_pid);
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  delete_holds_its_slot(&s, path, id, context_listed, "/contexts", 200);
  if (option == NULL) {
    /* Its pid is the host's: the process is gone. */
    g_autoptr(GArray) cell = g_array_new(FALSE, FALSE, sizeof(int));
    g_array_append_val(cell, cell_pid);
    CU_ASSERT_TRUE(all_gone(cell));
  }
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}

/* A new kernel of S running a stubborn cell, its WebSocket open in *C:
 * its id, once the cell runs. */
static char *
stubborn_kernel(const server *s, ws_client *c)
{
  g_autofree char *channels = NULL;
  char *id = new_kernel(s, &channels);
  ws_open(s, channels, AUTH, NULL, c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c->ws);
  g_autofree char *stubborn = ws_request("shell", "execute_request", "stubborn",
                                         "{\"code\": \"" STUBBORN_CELL "\", \"silent\": false}");
  soup_websocket_connection_send_text(c->ws, stubborn);
  /* Its stream, not its execute_input, which holds the word too. */
  CU_ASSERT_TRUE(ws_received(c, "\"text\":\"stubborn "));
  return id;
}

/* The same for a kernel: its DELETE answers 204 once the cell is killed,
 * and the kernel keeps its slot until then. */
static void
kernel_delete_kills_a_stubborn_cell(const char *option)
{
  server s = start_server("-b", "subprocess", "-o", "interrupt-grace=4", "--token", TOKEN,
                          "--max-sessions", "2", option != NULL ? "-o" : NULL, option, NULL);
  ws_client c;
  g_autofree char *id = stubborn_kernel(&s, &c);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  delete_holds_its_slot(&s, path, id, kernel_listed, "/api/kernels", 201);
  ws_close(&c);
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}

static void
test_serve_delete_kills_a_cell_that_ignores_its_interrupt(void)
{
  delete_kills_a_stubborn_cell(NULL);
  delete_kills_a_stubborn_cell("isolation=sandbox");
  kernel_delete_kills_a_stubborn_cell(NULL);
  kernel_delete_kills_a_stubborn_cell("isolation=sandbox");
}

/* Whether kernel ID of S says STATE within 30 s. */
static gboolean
kernel_state_reaches(const server *s, const char *id, const char *state)
{
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (g_get_monotonic_time() < deadline) {
    g_auto(reply) model = call(s, "GET", path, AUTH, NULL);
    if (g_strcmp0(member_string(model.body, "execution_state"), state) == 0)
      return TRUE;
    g_usleep(20 * 1000);
  }
  return FALSE;
}

/* A kernel deleted while it restarts (its old session still ending: the
 * cell ignores its interrupt) keeps its slot until the restart is over
 * and its sessions are gone. */
static void
test_serve_delete_during_a_restart_holds_the_slot(void)
{
  server s = start_server("-b", "subprocess", "-o", "interrupt-grace=4", "--token", TOKEN,
                          "--max-sessions", "2", NULL);
  ws_client c;
  g_autofree char *id = stubborn_kernel(&s, &c);
  background_call r = { &s, "POST", g_strdup_printf("/api/kernels/%s/restart", id), 0 };
  GThread *restarting = g_thread_new("restart", background_run, &r);
  CU_ASSERT_TRUE(kernel_state_reaches(&s, id, "restarting"));
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  delete_holds_its_slot(&s, path, id, kernel_listed, "/api/kernels", 201);
  g_thread_join(restarting);
  CU_ASSERT_EQUAL(r.status, 404); /* deleted as it started */
  g_free(r.path);
  ws_close(&c);
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}

/* A cell that cannot be killed (the local backend's, in the server's own
 * process): DELETE answers 202 after --stop-timeout, and the slot stays
 * taken while the cell runs. */
static void
test_serve_delete_of_an_unkillable_cell_is_answered_and_keeps_its_slot(void)
{
  server s = start_server("-b", "local", "--token", TOKEN, "--max-sessions", "1",
                          "--stop-timeout", "1", NULL);
  g_autofree char *id = new_context(&s);
  int cell_pid;
  g_autoptr(GSocketConnection) client = run_stubborn(&s, id, &cell_pid);
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  g_auto(reply) deleted = call(&s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 202);
  CX_ASSERT_CONTAINS(member_string(deleted.body, "message"), "--stop-timeout");
  g_auto(reply) full = call(&s, "POST", "/contexts", AUTH, "{}");
  CU_ASSERT_EQUAL(full.status, 503);
  /* SIGTERM: the cell still will not stop; the server exits within
   * --stop-timeout all the same. */
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 128 + SIGTERM);
  CU_ASSERT_TRUE(log_count(&s, "exiting without waiting") == 1);
  g_free(s.log);
}



/* SIGTERM with a cell that ignores its interrupt running, and no timeout:
 * the server ends (the cell killed after interrupt-grace, its session
 * with it) well within --stop-timeout, and leaves no worker behind. */
static void
sigterm_ends_the_server_and_its_workers(const char *option)
{
  server s = start_server("-b", "subprocess", "--token", TOKEN, option != NULL ? "-o" : NULL,
                          option, NULL);
  g_autofree char *id = new_context(&s);
  int cell_pid;
  g_autoptr(GSocketConnection) client = run_stubborn(&s, id, &cell_pid);
  g_autoptr(GArray) workers = descendants_list(pid_of(&s));
  CU_ASSERT_TRUE(workers->len >= 2); /* the fork server, the session's process */
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  CU_ASSERT_TRUE(all_gone(workers));
  g_free(s.log);
}

static void
test_serve_sigterm_ends_it_with_a_cell_that_ignores_its_interrupt(void)
{
  sigterm_ends_the_server_and_its_workers(NULL);
  sigterm_ends_the_server_and_its_workers("isolation=sandbox");
}


/* Whether a message holding NEEDLE came within 60 s, reading all that
 * comes as it comes (ws_received() reads one message per pass). */
static gboolean
ws_drained_until(ws_client *c, const char *needle)
{
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  guint seen = 0;
  while (g_get_monotonic_time() < deadline) {
    while (g_main_context_iteration(NULL, FALSE))
      ;
    for (; seen < c->received->len; seen++) {
      gsize len;
      const char *data = g_bytes_get_data(c->received->pdata[seen], &len);
      if (memmem(data, len, needle, strlen(needle)) != NULL)
        return TRUE;
    }
    g_usleep(10 * 1000);
  }
  return FALSE;
}

/* A kernel's queue is bounded: a front end that sends execute_requests
 * without waiting, behind a cell that does not end, gets an error reply
 * for each past --max-queue at once, and the server does not grow with
 * what it sends. */
static void
test_serve_a_kernel_bounds_its_queue(void)
{
  char *saved = asan_quarantine_small();
  server s = start_server("-b", "subprocess", "--token", TOKEN, "--max-queue", "20", NULL);
  asan_options_restore(saved);
  g_autofree char *channels = NULL;
  g_autofree char *id = new_kernel(&s, &channels);
  ws_client c;
  ws_open(&s, channels, AUTH, NULL, &c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c.ws);
  g_autofree char *endless = ws_request("shell", "execute_request", "endless",
    "{\"code\": \"import time\\nwhile True: time.sleep(0.1)\", \"silent\": false}");
  soup_websocket_connection_send_text(c.ws, endless);
  CU_ASSERT_TRUE(ws_received(&c, "\"execute_input\""));
  guint64 before = resident_bytes(pid_of(&s));
  /* 5000 requests of 16 KiB: 80 MB that a queue without bound would keep. */
  g_autofree char *padding = g_strnfill(16384, 'x');
  g_autofree char *content = g_strdup_printf("{\"code\": \"'%s'\", \"silent\": false}", padding);
  for (int i = 0; i < 5000; i++) {
    g_autofree char *msg_id = g_strdup_printf("queued-%d", i);
    g_autofree char *request = ws_request("shell", "execute_request", msg_id, content);
    soup_websocket_connection_send_text(c.ws, request);
    /* What libsoup has not sent yet stays in this process: let it go, and
     * read the replies, as a front end would. */
    if (i % 200 == 0)
      while (g_main_context_iteration(NULL, FALSE))
        ;
  }
  /* The last one's refusal: every one before it was answered or queued. */
  CU_ASSERT_TRUE(ws_drained_until(&c, "\"queued-4999\""));
  CU_ASSERT_TRUE(ws_received(&c, "requests queued, its limit"));
  guint64 after = resident_bytes(pid_of(&s));
  CU_ASSERT_TRUE(after < before + 40 * 1024 * 1024);
  ws_close(&c);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s", id);
  g_auto(reply) deleted = call(&s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 204);
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}


/* Under a memory cap (2.5 GB of address space, which a server with its
 * cell threads fits in three times over and a thread per queued request
 * does not), 300 requests queued in one context are each answered, its
 * DELETE too, and the server goes on: no request dropped in silence, no
 * abort when a thread cannot be made. */
static void
test_serve_queued_cells_under_a_memory_cap_are_all_answered(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    /* ASan's shadow memory is address space no cap leaves room for. */
    return;
  }
  static const spawn_options capped = { .address_space = (guint64)2500 * 1024 * 1024 };
  server s = start_server_with(&capped, "-b", "subprocess", "--token", TOKEN, "--max-queue", "400",
                               NULL);
  g_autofree char *id = new_context(&s);
  g_autofree char *body = execute_body("import time\\nwhile True: time.sleep(0.1)", id);
  GPtrArray *clients = g_ptr_array_new_with_free_func(g_object_unref);
  for (int i = 0; i < 300; i++)
    g_ptr_array_add(clients, post_unread(&s, "/execute", body));
  /* Every one accepted: each response begins (a keepalive comes within 5 s). */
  guint begun = 0;
  for (guint i = 0; i < clients->len; i++)
    begun += raw_read_until(clients->pdata[i], "HTTP/1.1 200");
  CU_ASSERT_EQUAL(begun, 300);
  g_autofree char *path = g_strdup_printf("/contexts/%s", id);
  g_auto(reply) deleted = call(&s, "DELETE", path, AUTH, NULL);
  CU_ASSERT_EQUAL(deleted.status, 200);
  /* Each of the 300 ends: the first interrupted, the rest not run. */
  CU_ASSERT_TRUE(log_reaches(&s, "POST /execute 200", 300));
  g_auto(reply) health = call(&s, "GET", "/health", AUTH, NULL);
  CU_ASSERT_EQUAL(health.status, 200);
  g_ptr_array_unref(clients);
  CU_ASSERT_EQUAL(stop_server_within_bound(&s), 0);
  g_free(s.log);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_serve_needs_the_token_on_every_route", test_serve_needs_the_token_on_every_route },
    { "test_serve_kernel_lifecycle_over_rest", test_serve_kernel_lifecycle_over_rest },
    { "test_serve_bad_input_gets_4xx_and_stops_nothing",
      test_serve_bad_input_gets_4xx_and_stops_nothing },
    { "test_serve_wide_body_is_refused_within_bounds",
      test_serve_wide_body_is_refused_within_bounds },
    { "test_serve_e2b_execute_streams_json_lines", test_serve_e2b_execute_streams_json_lines },
    { "test_serve_e2b_execute_refuses_code_with_nul_as_python_does",
      test_serve_e2b_execute_refuses_code_with_nul_as_python_does },
    { "test_serve_kernel_refuses_code_with_nul_as_python_does",
      test_serve_kernel_refuses_code_with_nul_as_python_does },
    { "test_serve_contexts_do_not_share_a_cwd", test_serve_contexts_do_not_share_a_cwd },
    { "test_serve_websockets_need_the_token_and_survive_garbage",
      test_serve_websockets_need_the_token_and_survive_garbage },
    { "test_serve_control_requests_never_block_the_server",
      test_serve_control_requests_never_block_the_server },
    { "test_serve_session_kernel_change_ends_the_old_kernel",
      test_serve_session_kernel_change_ends_the_old_kernel },
    { "test_serve_a_leaving_client_interrupts_only_its_own_cell",
      test_serve_a_leaving_client_interrupts_only_its_own_cell },
    { "test_serve_32_clients_each_get_their_own_output",
      test_serve_32_clients_each_get_their_own_output },
    { "test_serve_200_kernels_leave_no_process_behind",
      test_serve_200_kernels_leave_no_process_behind },
    { "test_serve_runs_cells_for_the_jupyter_backend",
      test_serve_runs_cells_for_the_jupyter_backend },
    { "test_serve_limits_kernels_and_ends_idle_ones", test_serve_limits_kernels_and_ends_idle_ones },
    { "test_serve_sandbox_holds_through_the_server", test_serve_sandbox_holds_through_the_server },
    { "test_serve_a_client_that_stops_reading_holds_its_cell_not_memory",
      test_serve_a_client_that_stops_reading_holds_its_cell_not_memory },
    { "test_serve_a_websocket_message_too_wide_is_dropped",
      test_serve_a_websocket_message_too_wide_is_dropped },
    { "test_serve_a_websocket_message_is_bounded_as_a_whole",
      test_serve_a_websocket_message_is_bounded_as_a_whole },
    { "test_serve_ending_a_kernel_closes_its_websockets",
      test_serve_ending_a_kernel_closes_its_websockets },
    { "test_serve_a_websocket_client_that_stops_reading_is_dropped",
      test_serve_a_websocket_client_that_stops_reading_is_dropped },
    { "test_serve_without_a_token_refuses_browsers", test_serve_without_a_token_refuses_browsers },
    { "test_serve_unclear_framing_gets_400_and_close",
      test_serve_unclear_framing_gets_400_and_close },
    { "test_serve_without_a_token_reads_host_strictly",
      test_serve_without_a_token_reads_host_strictly },
    { "test_serve_slow_clients_are_dropped_and_the_server_recovers",
      test_serve_slow_clients_are_dropped_and_the_server_recovers },
    { "test_serve_past_max_connections_new_ones_get_503",
      test_serve_past_max_connections_new_ones_get_503 },
    { "test_serve_accepts_again_after_running_out_of_descriptors",
      test_serve_accepts_again_after_running_out_of_descriptors },
    { "test_serve_takes_its_token_from_the_environment",
      test_serve_takes_its_token_from_the_environment },
    { "test_serve_command_line_errors", test_serve_command_line_errors },
    { "test_serve_queued_cells_hold_no_thread_and_are_bounded",
      test_serve_queued_cells_hold_no_thread_and_are_bounded },
    { "test_serve_delete_kills_a_cell_that_ignores_its_interrupt",
      test_serve_delete_kills_a_cell_that_ignores_its_interrupt },
    { "test_serve_sigterm_ends_it_with_a_cell_that_ignores_its_interrupt",
      test_serve_sigterm_ends_it_with_a_cell_that_ignores_its_interrupt },
    { "test_serve_a_kernel_bounds_its_queue", test_serve_a_kernel_bounds_its_queue },
    { "test_serve_delete_during_a_restart_holds_the_slot",
      test_serve_delete_during_a_restart_holds_the_slot },
    { "test_serve_queued_cells_under_a_memory_cap_are_all_answered",
      test_serve_queued_cells_under_a_memory_cap_are_all_answered },
    { "test_serve_delete_of_an_unkillable_cell_is_answered_and_keeps_its_slot",
      test_serve_delete_of_an_unkillable_cell_is_answered_and_keeps_its_slot },
    { NULL }
  };
  cx_test_add_suite("serve", tests);
}
