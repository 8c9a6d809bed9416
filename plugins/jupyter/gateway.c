/* plugins/jupyter: kernels behind a Jupyter Server, Kernel Gateway or
 * Enterprise Gateway: REST to start, interrupt and delete them
 * (POST /api/kernels, POST /api/kernels/ID/interrupt, DELETE
 * /api/kernels/ID), and the kernel's channels as JSON messages on one
 * WebSocket (/api/kernels/ID/channels), all through libsoup 3.
 *
 * The server signs and checks the ZeroMQ side itself; here messages are
 * JSON text with a "channel" member.  Each kernel has a GMainContext of
 * its own, pushed as the thread-default by whichever thread uses the
 * kernel (one at a time), so that its WebSocket's I/O happens there.
 *
 * A stock jupyter_server never sets TCP_NODELAY, so a small message can
 * wait for the client's delayed ACK (~40 ms).  The client's socket gets
 * TCP_NODELAY once and TCP_QUICKACK after every message read (Linux
 * clears it again by itself). */
#include "config.h"

#include <string.h>

#include "plugins/jupyter/kernel-private.h"

#ifdef HAVE_SOUP

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <libsoup/soup.h>

typedef struct jk_gateway_kernel jk_gateway_kernel;
struct jk_gateway_kernel {
  GMainContext *context;
  SoupSession *session;
  SoupWebsocketConnection *ws;
  char *base;                 /* http://host:port, no trailing slash */
  char *token;
  char *kernel_id;
  GQueue incoming;            /* jp_message * */
  gboolean closed;
  int fd;                     /* the WebSocket's TCP socket, for TCP_QUICKACK */
  gboolean nodelay;
};

static char *
base_of(const char *url)
{
  char *base = g_strdup(url);
  gsize len = strlen(base);
  while (len > 0 && base[len - 1] == '/')
    base[--len] = '\0';
  return base;
}

static SoupMessage *
request(const char *method, const char *base, const char *path, const char *token,
        const char *body)
{
  g_autofree char *url = g_strconcat(base, path, NULL);
  SoupMessage *message = soup_message_new(method, url);
  if (message == NULL)
    return NULL;
  if (token != NULL && *token != '\0') {
    g_autofree char *value = g_strdup_printf("token %s", token);
    soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization", value);
  }
  if (body != NULL) {
    g_autoptr(GBytes) bytes = g_bytes_new(body, strlen(body));
    soup_message_set_request_body_from_bytes(message, "application/json", bytes);
  }
  return message;
}

/* Send METHOD PATH; the reply's JSON (a new node; JSON null for an empty
 * body), or NULL with ERROR set: one line naming the server and what went
 * wrong. */
static JsonNode *
call(SoupSession *session, const char *method, const char *base, const char *path,
     const char *token, const char *body, guint expected, GError **error)
{
  g_autoptr(SoupMessage) message = request(method, base, path, token, body);
  if (message == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "jupyter: gateway-url %s is not an http:// URL", base);
    return NULL;
  }
  g_autoptr(GError) send_error = NULL;
  g_autoptr(GBytes) reply = soup_session_send_and_read(session, message, NULL, &send_error);
  if (reply == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot reach the Jupyter server at %s: %s",
                base, send_error->message);
    return NULL;
  }
  guint status = soup_message_get_status(message);
  if (status == 401 || status == 403) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: the Jupyter server at %s refused the token (HTTP %u %s); check `token`",
                base, status, soup_message_get_reason_phrase(message));
    return NULL;
  }
  if (status != expected) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: %s %s%s: HTTP %u %s", method, base, path,
                status, soup_message_get_reason_phrase(message));
    return NULL;
  }
  gsize len;
  const char *data = g_bytes_get_data(reply, &len);
  if (len == 0)
    return json_node_init_null(json_node_alloc());
  g_autoptr(GError) parse_error = NULL;
  JsonNode *answer = cx_json_from_string(data, (gssize)len, &parse_error);
  if (answer == NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: %s %s%s: the answer cannot be read as JSON (%s)", method, base, path,
                parse_error->message);
  return answer;
}

/* A session for the server at URL.  A loopback server is reached
 * directly: no proxy applies there, and GIO's proxy lookup is skipped. */
static SoupSession *
new_session(const char *url, double timeout)
{
  g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
  const char *host = uri != NULL ? g_uri_get_host(uri) : NULL;
  gboolean loopback = g_strcmp0(host, "127.0.0.1") == 0 || g_strcmp0(host, "localhost") == 0 ||
                      g_strcmp0(host, "::1") == 0;
  SoupSession *session = soup_session_new_with_options("timeout", (guint)MAX(1, timeout),
                                                       "idle-timeout", 0,
                                                       "user-agent", "cellexec-jupyter", NULL);
  if (loopback)
    soup_session_set_proxy_resolver(session, NULL);
  return session;
}

gboolean
jk_gateway_check(const char *url, const char *token, double timeout, GError **error)
{
  if (!g_str_has_prefix(url, "http://") && !g_str_has_prefix(url, "https://")) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "jupyter: gateway-url must be http://HOST:PORT or https://..., not \"%s\"", url);
    return FALSE;
  }
  g_autofree char *base = base_of(url);
  g_autoptr(SoupSession) session = new_session(url, timeout);
  g_autoptr(JsonNode) kernels = call(session, "GET", base, "/api/kernels", token, NULL, 200, error);
  return kernels != NULL;
}

/* ---- The WebSocket ------------------------------------------------------------------ */

static void
set_tcp_option(int fd, int option)
{
  int one = 1;
  if (fd >= 0)
    setsockopt(fd, IPPROTO_TCP, option, &one, sizeof one);
}

static void
on_network_event(SoupMessage *message, GSocketClientEvent event, GIOStream *connection,
                 gpointer data)
{
  jk_gateway_kernel *g = data;
  if (event != G_SOCKET_CLIENT_CONNECTED || !G_IS_SOCKET_CONNECTION(connection))
    return;
  GSocket *socket = g_socket_connection_get_socket(G_SOCKET_CONNECTION(connection));
  if (!g->nodelay)
    return;
  g->fd = g_socket_get_fd(socket);
  set_tcp_option(g->fd, TCP_NODELAY);
  set_tcp_option(g->fd, TCP_QUICKACK);
}

static void
on_message(SoupWebsocketConnection *ws, gint type, GBytes *bytes, gpointer data)
{
  jk_kernel *kernel = data;
  jk_gateway_kernel *g = kernel->gateway;
  set_tcp_option(g->fd, TCP_QUICKACK);
  if (type != SOUP_WEBSOCKET_DATA_TEXT) {
    g_atomic_int_inc(&kernel->counters->malformed);
    return;
  }
  gsize len;
  const char *text = g_bytes_get_data(bytes, &len);
  jp_message *m = jp_message_from_websocket(text, len, CX_JSON_MAX_VALUES, kernel->counters);
  if (m != NULL)
    g_queue_push_tail(&g->incoming, m);
}

static void
on_closed(SoupWebsocketConnection *ws, gpointer data)
{
  jk_kernel *kernel = data;
  kernel->gateway->closed = TRUE;
}

static gboolean
wake(gpointer data)
{
  return G_SOURCE_REMOVE;
}

/* Run the kernel's context until something happens or UNTIL (monotonic
 * µs) passes.  With the context pushed. */
static void
iterate_until(jk_gateway_kernel *g, gint64 until)
{
  if (g_main_context_pending(g->context)) {
    g_main_context_iteration(g->context, FALSE);
    return;
  }
  gint64 now = g_get_monotonic_time();
  guint ms = until <= now ? 0 : (guint)MIN((until - now + 999) / 1000, 100);
  GSource *timeout = g_timeout_source_new(ms);
  g_source_set_callback(timeout, wake, NULL, NULL);
  g_source_attach(timeout, g->context);
  g_main_context_iteration(g->context, TRUE);
  g_source_destroy(timeout);
  g_source_unref(timeout);
}

typedef struct {
  gboolean done;
  SoupWebsocketConnection *ws;
  GError *error;
} connecting;

static void
connected(GObject *source, GAsyncResult *result, gpointer data)
{
  connecting *c = data;
  c->ws = soup_session_websocket_connect_finish(SOUP_SESSION(source), result, &c->error);
  c->done = TRUE;
}

static gboolean
gateway_send(jk_kernel *kernel, int channel, const char *msg_type, JsonObject *content,
             char **msg_id, GError **error)
{
  jk_gateway_kernel *g = kernel->gateway;
  if (g->closed || g->ws == NULL ||
      soup_websocket_connection_get_state(g->ws) != SOUP_WEBSOCKET_STATE_OPEN) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel's WebSocket is closed");
    return FALSE;
  }
  g_autofree char *id = NULL;
  g_autoptr(JsonObject) header = jk_message_header(kernel, msg_type, &id);
  g_autofree char *text = jp_message_to_websocket(channel, header, NULL, NULL, content);
  soup_websocket_connection_send_text(g->ws, text);
  if (msg_id != NULL)
    *msg_id = g_steal_pointer(&id);
  return TRUE;
}

static gboolean
wait_ready(jk_kernel *kernel, gint64 deadline, GError **error)
{
  jk_gateway_kernel *g = kernel->gateway;
  g_autofree char *id = NULL;
  g_autoptr(JsonObject) content = json_object_new();
  gint64 resend = 0;
  while (g_get_monotonic_time() < deadline && !g->closed) {
    if (g_get_monotonic_time() >= resend) {
      g_clear_pointer(&id, g_free);
      if (!gateway_send(kernel, JP_SHELL, "kernel_info_request", content, &id, error))
        return FALSE;
      resend = g_get_monotonic_time() + G_USEC_PER_SEC;
    }
    iterate_until(g, MIN(deadline, resend));
    jp_message *m;
    while ((m = g_queue_pop_head(&g->incoming)) != NULL) {
      gboolean ready = m->channel == JP_SHELL && g_str_equal(m->msg_type, "kernel_info_reply");
      if (ready) {
        g_clear_pointer(&kernel->info, json_object_unref);
        kernel->info = json_object_ref(m->content);
      }
      jp_message_free(m);
      if (ready)
        return TRUE;
    }
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "jupyter: the gateway's kernel did not answer kernel_info_request in time");
  return FALSE;
}

static jk_exec_outcome gateway_execute(jk_kernel *kernel, jk_exec *exec);
static char *gateway_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value,
                                    double timeout, GError **error);
static gboolean gateway_interrupt(jk_kernel *kernel, GError **error);
static void gateway_close(jk_kernel *kernel);

/* A kernel killed is only marked dead: gateway_close() deletes it on the
 * server. */
static void
gateway_kill(jk_kernel *kernel)
{
  kernel->dead = TRUE;
}

static const jk_transport gateway_transport = {
  .execute = gateway_execute,
  .stdin_exchange = gateway_stdin_exchange,
  .interrupt = gateway_interrupt,
  .kill = gateway_kill,
  .close = gateway_close,
};

jk_kernel *
jk_kernel_gateway_start(const char *url, const char *token, const char *name, gboolean nodelay,
                        double start_timeout, jp_counters *counters, GError **error)
{
  jk_kernel *kernel = jk_kernel_new(NULL, counters);
  kernel->transport = &gateway_transport;
  jk_gateway_kernel *g = kernel->gateway = g_new0(jk_gateway_kernel, 1);
  g->fd = -1;
  g->nodelay = nodelay;
  g_queue_init(&g->incoming);
  g->context = g_main_context_new();
  g->base = base_of(url);
  g->token = g_strdup(token);
  kernel->spec_name = g_strdup(name);
  g_main_context_push_thread_default(g->context);
  g->session = new_session(url, start_timeout);
  g_autofree char *body = NULL;
  {
    g_autoptr(JsonObject) o = json_object_new();
    json_object_set_string_member(o, "name", name);
    g_autoptr(JsonNode) n = json_node_init_object(json_node_alloc(), o);
    body = cx_json_to_string(n, FALSE);
  }
  g_autoptr(JsonNode) started = call(g->session, "POST", g->base, "/api/kernels", token, body, 201, error);
  const char *id = started != NULL && JSON_NODE_HOLDS_OBJECT(started)
                     ? cx__peer_get_string(json_node_get_object(started), "id", NULL)
                     : NULL;
  gboolean ok = id != NULL;
  if (started != NULL && id == NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: POST %s/api/kernels: no kernel id", g->base);
  if (ok) {
    g->kernel_id = g_strdup(id);
    g_autofree char *path = g_strdup_printf("/api/kernels/%s/channels?session_id=%s", id, kernel->session);
    g_autoptr(SoupMessage) message = request("GET", g->base, path, token, NULL);
    g_signal_connect(message, "network-event", G_CALLBACK(on_network_event), g);
    connecting c = { FALSE, NULL, NULL };
    soup_session_websocket_connect_async(g->session, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         connected, &c);
    gint64 deadline = g_get_monotonic_time() + (gint64)(start_timeout * G_USEC_PER_SEC);
    while (!c.done)
      iterate_until(g, deadline);
    if (c.ws == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot open the kernel's WebSocket at %s%s: %s",
                  g->base, path, c.error ? c.error->message : "failed");
      g_clear_error(&c.error);
      ok = FALSE;
    } else {
      g->ws = c.ws;
      soup_websocket_connection_set_max_incoming_payload_size(g->ws, 0);
      soup_websocket_connection_set_keepalive_interval(g->ws, 0);
      g_signal_connect(g->ws, "message", G_CALLBACK(on_message), kernel);
      g_signal_connect(g->ws, "closed", G_CALLBACK(on_closed), kernel);
      ok = wait_ready(kernel, deadline, error);
    }
  }
  g_main_context_pop_thread_default(g->context);
  if (!ok) {
    jk_kernel_free(kernel);
    return NULL;
  }
  return kernel;
}

static void
gateway_close(jk_kernel *kernel)
{
  jk_gateway_kernel *g = kernel->gateway;
  g_main_context_push_thread_default(g->context);
  if (g->ws != NULL) {
    g_signal_handlers_disconnect_by_data(g->ws, kernel);
    if (soup_websocket_connection_get_state(g->ws) == SOUP_WEBSOCKET_STATE_OPEN)
      soup_websocket_connection_close(g->ws, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
    g_clear_object(&g->ws);
  }
  if (g->kernel_id != NULL) {
    /* A server restarting the kernel (it died) refuses the DELETE for a
     * moment (HTTP 500): try again, 10 s at most. */
    g_autofree char *path = g_strdup_printf("/api/kernels/%s", g->kernel_id);
    for (int attempt = 0; attempt < 50; attempt++) {
      g_autoptr(GError) error = NULL;
      g_autoptr(JsonNode) gone = call(g->session, "DELETE", g->base, path, g->token, NULL, 204, &error);
      if (gone != NULL || strstr(error->message, "HTTP 404") != NULL ||
          strstr(error->message, "cannot reach") != NULL)
        break;
      g_usleep(200 * 1000);
    }
  }
  g_clear_object(&g->session);
  while (g_main_context_pending(g->context))
    g_main_context_iteration(g->context, FALSE);
  g_main_context_pop_thread_default(g->context);
  g_queue_clear_full(&g->incoming, (GDestroyNotify)jp_message_free);
  g_main_context_unref(g->context);
  g_free(g->base);
  g_free(g->token);
  g_free(g->kernel_id);
  g_free(g);
  kernel->gateway = NULL;
}

static gboolean
gateway_interrupt(jk_kernel *kernel, GError **error)
{
  jk_gateway_kernel *g = kernel->gateway;
  g_autofree char *path = g_strdup_printf("/api/kernels/%s/interrupt", g->kernel_id);
  /* Any thread: libsoup's sync API may be used from several. */
  g_autoptr(JsonNode) done = call(g->session, "POST", g->base, path, g->token, NULL, 204, error);
  return done != NULL;
}

/* Handle what came for request MSG_ID on the WebSocket: JK_EXEC_DIED when
 * the server says its kernel died, else JK_EXEC_DONE. */
static jk_exec_outcome
read_incoming(jk_kernel *kernel, jk_exec *exec, jk_exec_state *state, const char *msg_id,
              gint64 *replied_at, gboolean *idle)
{
  jk_gateway_kernel *g = kernel->gateway;
  jk_exec_outcome outcome = JK_EXEC_DONE;
  jp_message *m;
  while ((m = g_queue_pop_head(&g->incoming)) != NULL) {
    gboolean ours = g_strcmp0(m->parent_id, msg_id) == 0;
    const char *state_name = m->channel == JP_IOPUB && g_str_equal(m->msg_type, "status")
                               ? cx__peer_get_string(m->content, "execution_state", "")
                               : "";
    if (m->too_large != NULL) {
      /* Too large to read, whose it was is unknown: it came while this
       * request ran, the only one running on this connection. */
      jk_exec_unreadable(state, m);
    } else if (g_str_equal(state_name, "restarting") || g_str_equal(state_name, "dead")) {
      /* The server saw its kernel die (and may bring up another). */
      kernel->dead = TRUE;
      exec->died_how = g_strdup_printf("the server reports it %s", state_name);
      outcome = JK_EXEC_DIED;
    } else if (!ours) {
      if (!jk_kernel_sent_recently(kernel, m->parent_id) || !g_str_equal(m->msg_type, "status"))
        g_atomic_int_inc(&kernel->counters->wrong_parent);
    } else if (m->channel == JP_IOPUB) {
      if (jk_exec_handle_iopub(state, m))
        *idle = TRUE;
    } else if (m->channel == JP_STDIN) {
      g_autoptr(JsonObject) reply = jk_exec_input_reply(exec, msg_id, m);
      if (reply != NULL)
        gateway_send(kernel, JP_STDIN, "input_reply", reply, NULL, NULL);
    } else if (m->channel == JP_SHELL && jk_exec_is_reply(exec, m->msg_type)) {
      g_clear_pointer(&exec->reply, json_object_unref);
      exec->reply = json_object_ref(m->content);
      *replied_at = g_get_monotonic_time();
    }
    jp_message_free(m);
  }
  return outcome;
}

static jk_exec_outcome
gateway_execute(jk_kernel *kernel, jk_exec *exec)
{
  jk_gateway_kernel *g = kernel->gateway;
  jk_exec_state state;
  jk_exec_begin(&state, exec);
  g_autoptr(JsonObject) content = jk_exec_request_content(exec);
  g_autofree char *msg_id = NULL;
  g_main_context_push_thread_default(g->context);
  jk_exec_outcome outcome = JK_EXEC_DONE;
  if (kernel->dead || !gateway_send(kernel, JP_SHELL, jk_exec_request_type(exec), content, &msg_id,
                                     NULL)) {
    exec->died_how = g_strdup("its WebSocket is closed");
    outcome = JK_EXEC_DIED;
  }
  gint64 start = g_get_monotonic_time();
  gint64 deadline = exec->timeout > 0 ? start + (gint64)(exec->timeout * G_USEC_PER_SEC) : G_MAXINT64;
  gint64 kill_at = G_MAXINT64, replied_at = 0;
  gboolean idle = FALSE, timed_out = FALSE;
  while (outcome == JK_EXEC_DONE && (exec->reply == NULL || !idle)) {
    gint64 now = g_get_monotonic_time();
    jk_stop stop = jk_exec_stop_due(&state, now, deadline);
    if (stop == JK_STOP_GIVE_UP) {
      outcome = JK_EXEC_TIMEOUT;
      break;
    }
    if (stop == JK_STOP_INTERRUPT) {
      timed_out = TRUE;
      gateway_interrupt(kernel, NULL);
      kill_at = now + (gint64)(exec->grace * G_USEC_PER_SEC);
      deadline = G_MAXINT64; /* passed: the loop now waits for kill_at */
    }
    if (now >= kill_at) {
      kernel->dead = TRUE; /* deleted on the server when freed */
      exec->killed = TRUE;
      outcome = JK_EXEC_TIMEOUT;
      break;
    }
    /* What came meanwhile is read first: the status may be in it. */
    if (exec->reply != NULL &&
        jk_exec_idle_overdue(now - replied_at, g_queue_is_empty(&g->incoming))) {
      jk_exec_idle_lost(&state); /* the reply is the word that counts, and says so */
      break;
    }
    outcome = read_incoming(kernel, exec, &state, msg_id, &replied_at, &idle);
    if (outcome != JK_EXEC_DONE || (exec->reply != NULL && idle))
      break;
    if (g->closed) {
      kernel->dead = TRUE;
      exec->died_how = g_strdup("its WebSocket closed");
      outcome = JK_EXEC_DIED;
      break;
    }
    gint64 wake_at = MIN(deadline, kill_at);
    if (exec->reply != NULL)
      wake_at = MIN(wake_at, replied_at + JK_IDLE_AFTER_REPLY_US);
    iterate_until(g, wake_at);
  }
  g_main_context_pop_thread_default(g->context);
  /* A stream may pass the stop threshold in the read that brought the
   * reply: the cell is over, but it wrote more than it may. */
  if (outcome == JK_EXEC_DONE
      && (timed_out || jk_exec_stop_due(&state, 0, G_MAXINT64) != JK_STOP_NONE))
    outcome = JK_EXEC_TIMEOUT;
  jk_exec_finish(&state, outcome);
  return outcome;
}

static char *
gateway_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value, double timeout,
                       GError **error)
{
  jk_gateway_kernel *g = kernel->gateway;
  g_autoptr(JsonObject) reply = json_object_new();
  json_object_set_string_member(reply, "value", value);
  g_main_context_push_thread_default(g->context);
  char *prompt = NULL;
  if (gateway_send(kernel, JP_STDIN, "input_reply", reply, NULL, error)) {
    gint64 deadline = timeout > 0 ? g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC) : G_MAXINT64;
    /* Messages of other channels are kept, in order, for the request's loop. */
    GQueue kept = G_QUEUE_INIT;
    while (prompt == NULL && !g->closed && g_get_monotonic_time() < deadline) {
      jp_message *m;
      while (prompt == NULL && (m = g_queue_pop_head(&g->incoming)) != NULL) {
        const char *asked = m->channel == JP_STDIN ? jk_input_prompt(m, msg_id) : NULL;
        if (asked != NULL) {
          prompt = g_strdup(asked);
          jp_message_free(m);
        } else {
          g_queue_push_tail(&kept, m);
        }
      }
      if (prompt == NULL)
        iterate_until(g, MIN(deadline, g_get_monotonic_time() + 100 * 1000));
    }
    while (!g_queue_is_empty(&kept))
      g_queue_push_head(&g->incoming, g_queue_pop_tail(&kept));
    if (prompt == NULL)
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "jupyter: the kernel did not answer during a host function's call");
  }
  g_main_context_pop_thread_default(g->context);
  return prompt;
}

#else /* !HAVE_SOUP */

gboolean
jk_gateway_check(const char *url, const char *token, double timeout, GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
              "jupyter: gateway mode was not built (libsoup-3.0 was not found at configure time)");
  return FALSE;
}

jk_kernel *
jk_kernel_gateway_start(const char *url, const char *token, const char *name, gboolean nodelay,
                        double start_timeout, jp_counters *counters, GError **error)
{
  jk_gateway_check(url, token, start_timeout, error);
  return NULL;
}

#endif /* HAVE_SOUP */
