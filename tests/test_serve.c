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
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "tests/cx_test.h"
#include "tests/test_jupyter_server.h"

#define TOKEN "cellexec-serve-test-token"
#define MAX_BODY "64K"

typedef struct {
  GSubprocess *process;
  int port;
  char *log;          /* its stderr: a line per request */
} server;

static server main_server;

/* `cellexec serve` with ARGS (NULL-terminated) after the listen address;
 * waits until it accepts connections. */
static server
start_server(const char *first, ...)
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
  va_list ap;
  va_start(ap, first);
  for (const char *arg = first; arg != NULL; arg = va_arg(ap, const char *))
    g_ptr_array_add(args, (gpointer)arg);
  va_end(ap);
  g_ptr_array_add(args, NULL);
  /* Its log to a file: a pipe nobody reads would fill and stop it. */
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stderr_file_path(launcher, s.log);
  g_subprocess_launcher_set_stdout_file_path(launcher, s.log);
  g_autofree char *program = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
  g_ptr_array_insert(args, 0, program);
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
  if (session == NULL)
    session = soup_session_new_with_options("timeout", 60, NULL);
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

/* What the session answers, asked on control while a cell runs, waits for
 * the cell on the kernel's thread: the server goes on serving meanwhile. */
static void
test_serve_control_requests_never_block_the_server(void)
{
  server *s = shared_server();
  g_auto(reply) kernel = call(s, "POST", "/api/kernels", AUTH, "{}");
  const char *id = member_string(kernel.body, "id");
  CU_ASSERT_PTR_NOT_NULL_FATAL(id);
  g_autofree char *path = g_strdup_printf("/api/kernels/%s/channels", id);
  ws_client c;
  ws_open(s, path, AUTH, NULL, &c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c.ws);
  g_autofree char *sleep_cell = ws_request("shell", "execute_request", "cell-1",
    "{\"code\": \"import time\\ntime.sleep(3)\", \"silent\": false}");
  soup_websocket_connection_send_text(c.ws, sleep_cell);
  g_usleep(500 * 1000);
  g_autofree char *complete = ws_request("control", "complete_request", "complete-1",
                                         "{\"code\": \"pri\", \"cursor_pos\": 3}");
  soup_websocket_connection_send_text(c.ws, complete);
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

/* E2B's /execute: the cell's outputs as JSON lines, in order, then the
 * end; its context keeps the state. */
static void
test_serve_e2b_execute_streams_json_lines(void)
{
  server *s = shared_server();
  g_auto(reply) context = call(s, "POST", "/contexts", AUTH, "{\"language\": \"python\"}");
  CU_ASSERT_EQUAL_FATAL(context.status, 200);
  const char *id = member_string(context.body, "id");
  g_autofree char *body = g_strdup_printf(
    "{\"code\": \"import sys\\nprint('out')\\nprint('err', file=sys.stderr)\\nx = 41\\nx + 1\", "
    "\"context_id\": \"%s\"}", id);
  g_auto(reply) ran = call(s, "POST", "/execute", AUTH, body);
  CU_ASSERT_EQUAL(ran.status, 200);
  g_auto(GStrv) lines = g_strsplit(ran.text != NULL ? ran.text : "", "\n", -1);
  GString *types = g_string_new(NULL);
  for (char **line = lines; *line != NULL && **line != '\0'; line++) {
    g_autoptr(JsonNode) item = json_from_string(*line, NULL);
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
static server
start_memory_server(void)
{
  /* In the sanitizer build, ASan would keep what the server frees in its
   * quarantine (256 MB), which is no memory the server holds. */
  const char *asan = g_getenv("ASAN_OPTIONS");
  g_autofree char *saved = g_strdup(asan);
  g_autofree char *small = g_strdup_printf("%s%squarantine_size_mb=1", asan != NULL ? asan : "",
                                           asan != NULL && *asan != '\0' ? ":" : "");
  g_setenv("ASAN_OPTIONS", small, TRUE);
  server s = start_server("-b", "subprocess", "-o", "output-limit=1G", "--token", TOKEN, NULL);
  if (saved != NULL)
    g_setenv("ASAN_OPTIONS", saved, TRUE);
  else
    g_unsetenv("ASAN_OPTIONS");
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
  for (;;) {
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

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_serve_needs_the_token_on_every_route", test_serve_needs_the_token_on_every_route },
    { "test_serve_kernel_lifecycle_over_rest", test_serve_kernel_lifecycle_over_rest },
    { "test_serve_bad_input_gets_4xx_and_stops_nothing",
      test_serve_bad_input_gets_4xx_and_stops_nothing },
    { "test_serve_e2b_execute_streams_json_lines", test_serve_e2b_execute_streams_json_lines },
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
    { "test_serve_a_websocket_message_is_bounded_as_a_whole",
      test_serve_a_websocket_message_is_bounded_as_a_whole },
    { "test_serve_ending_a_kernel_closes_its_websockets",
      test_serve_ending_a_kernel_closes_its_websockets },
    { "test_serve_a_websocket_client_that_stops_reading_is_dropped",
      test_serve_a_websocket_client_that_stops_reading_is_dropped },
    { "test_serve_without_a_token_refuses_browsers", test_serve_without_a_token_refuses_browsers },
    { "test_serve_command_line_errors", test_serve_command_line_errors },
    { NULL }
  };
  cx_test_add_suite("serve", tests);
}
