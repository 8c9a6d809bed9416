/* server: the HTTP side (server.h): listening, the token every route and
 * WebSocket upgrade must present, the size of request bodies, a log line
 * per request, and JSON replies. */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "lib/peer_json.h"
#include "server/accept.h"
#include "server/request_head.h"
#include "server/server-private.h"

/* Connections waiting to be accepted, at most (listen(2)'s backlog). */
#define LISTEN_BACKLOG 512

/* ---- The log ------------------------------------------------------------------- */

static int log_fd = -1; /* a copy of fd 2, made before any cell runs */

static void
open_log(void)
{
  if (log_fd < 0)
    log_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
}

void
cxs_log(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *text = g_strdup_vprintf(format, args);
  va_end(args);
  g_autofree char *line = g_strdup_printf("cellexec serve: %s\n", text);
  int fd = log_fd >= 0 ? log_fd : STDERR_FILENO;
  for (gsize done = 0, len = strlen(line); done < len;) {
    ssize_t n = write(fd, line + done, len - done);
    if (n <= 0)
      break;
    done += (gsize)n;
  }
}

/* ---- Replies -------------------------------------------------------------------- */

void
cxs_reply_json(SoupServerMessage *msg, guint status, JsonNode *node)
{
  soup_server_message_set_status(msg, status, NULL);
  if (node == NULL)
    return;
  char *text = cx_json_to_string(node, FALSE);
  json_node_unref(node);
  soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_TAKE, text,
                                   strlen(text));
}

void
cxs_reply_error(SoupServerMessage *msg, guint status, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  /* libsoup 3 has no name for 429 (RFC 6585). */
  const char *phrase = status == CXS_STATUS_TOO_MANY_REQUESTS ? "Too Many Requests"
                                                              : soup_status_get_phrase(status);
  JsonObject *error = json_object_new();
  json_object_set_string_member(error, "message", message);
  json_object_set_string_member(error, "reason", phrase);
  cxs_reply_json(msg, status, json_node_init_object(json_node_alloc(), error));
  soup_server_message_set_status(msg, status, phrase);
  json_object_unref(error);
}

void
cxs_reply_list(SoupServerMessage *msg, GHashTable *table,
               JsonNode *(*model)(gpointer value, gpointer data), gpointer data)
{
  JsonArray *list = json_array_new();
  g_autoptr(GList) values = g_hash_table_get_values(table);
  for (GList *l = values; l != NULL; l = l->next)
    json_array_add_element(list, model(l->data, data));
  cxs_reply_json(msg, SOUP_STATUS_OK, json_node_init_array(json_node_alloc(), list));
  json_array_unref(list);
}

char *
cxs_time_text(gint64 real_time)
{
  g_autoptr(GDateTime) time = g_date_time_new_from_unix_utc(real_time / G_USEC_PER_SEC);
  g_autofree char *seconds = g_date_time_format(time, "%Y-%m-%dT%H:%M:%S");
  return g_strdup_printf("%s.%06" G_GINT64_FORMAT "Z", seconds, real_time % G_USEC_PER_SEC);
}

/* ---- Every request ---------------------------------------------------------------- */

/* The token MSG presents: "Authorization: token T" (or "Bearer T"),
 * ?token=T, or E2B's X-Access-Token; NULL when none. */
static char *
presented_token(SoupServerMessage *msg)
{
  SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
  char *token = cxs_authorization_token(soup_message_headers_get_one(headers, "Authorization"));
  if (token != NULL)
    return token;
  const char *access = soup_message_headers_get_one(headers, "X-Access-Token");
  if (access != NULL)
    return g_strdup(access);
  return cxs_query_token(g_uri_get_query(soup_server_message_get_uri(msg)));
}

/* Equal in time that does not depend on where they differ. */
static gboolean
tokens_equal(const char *expected, const char *given)
{
  gsize n = strlen(expected), m = strlen(given);
  guint8 differ = n != m;
  for (gsize i = 0; i < n; i++)
    differ |= (guint8)(expected[i] ^ given[i < m ? i : 0]);
  return differ == 0;
}

/* Before the body is read: a request without the token is refused (401
 * when it presented none, 403 when a wrong one) and one whose body would
 * be too large gets 413, so neither costs more than its headers. */
/* REFUSED after answering MSG: its body, if it announced one, is read and
 * dropped, not kept, and the connection closed after the answer. */
static void
refused(SoupServerMessage *msg)
{
  soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
  soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Connection",
                               "close");
}

/* Without a token only this machine's own programs may run code: not a web
 * page the user's browser shows (its cross-site requests carry another
 * Origin, or, rebound by DNS, another Host) nor a form it posts (a body that
 * is not JSON: browsers send text/plain and form types without asking). */
static gboolean
local_caller(SoupServerMessage *msg)
{
  SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
  const char *host = soup_message_headers_get_one(headers, "Host");
  if (!cxs_host_is_loopback(host))
    return FALSE;
  const char *origin = soup_message_headers_get_one(headers, "Origin");
  if (origin != NULL && !cxs_origin_is_loopback(origin))
    return FALSE;
  goffset length = soup_message_headers_get_content_length(headers);
  const char *type = soup_message_headers_get_content_type(headers, NULL);
  return length <= 0 || g_strcmp0(type, "application/json") == 0;
}

/* What is wrong with how MSG says where its body ends, or NULL.  A server
 * and a proxy in front of it that read the end of a body differently see
 * different requests in the same bytes (request smuggling), and libsoup
 * takes some of these: a Content-Length of -5 as an empty body, the bytes
 * after it as the next request. */
static const char *
framing_error(SoupServerMessage *msg)
{
  SoupMessageHeadersIter iter;
  soup_message_headers_iter_init(&iter, soup_server_message_get_request_headers(msg));
  guint lengths = 0, codings = 0;
  gboolean numbers = TRUE;
  const char *name, *value;
  while (soup_message_headers_iter_next(&iter, &name, &value)) {
    guint64 length;
    if (g_ascii_strcasecmp(name, "Content-Length") == 0) {
      lengths++;
      numbers = numbers && cxs_content_length_parse(value, &length);
    } else if (g_ascii_strcasecmp(name, "Transfer-Encoding") == 0) {
      codings++;
    }
  }
  if (lengths > 1)
    return "more than one Content-Length";
  if (!numbers)
    return "a Content-Length that is not a number of bytes (digits only)";
  if (lengths > 0 && codings > 0)
    return "both Content-Length and Transfer-Encoding";
  return NULL;
}

static void
check_request(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
              gpointer data)
{
  (void)soup, (void)path, (void)query;
  cxs_server *server = data;
  const char *framing = framing_error(msg);
  if (framing != NULL) {
    g_autofree char *message = g_strdup_printf(
      "where the request body ends is unclear: %s; send one Content-Length, a number of bytes, "
      "or none", framing);
    const char *remote = soup_server_message_get_remote_host(msg);
    cxs_log("%s %s %s 400 (connection closed: %s)", remote != NULL ? remote : "-",
            soup_server_message_get_method(msg), g_uri_get_path(soup_server_message_get_uri(msg)),
            framing);
    cxs_connection_refuse(msg, SOUP_STATUS_BAD_REQUEST, message);
    return;
  }
  if (server->token == NULL && !local_caller(msg)) {
    cxs_reply_error(msg, SOUP_STATUS_FORBIDDEN,
                    "a server without a token takes requests from this machine only: Host and "
                    "Origin on loopback, bodies as application/json");
    refused(msg);
    return;
  }
  if (server->token != NULL) {
    g_autofree char *token = presented_token(msg);
    if (token == NULL) {
      cxs_reply_error(msg, SOUP_STATUS_UNAUTHORIZED,
                      "this server needs a token: send \"Authorization: token TOKEN\"");
      refused(msg);
      return;
    }
    if (!tokens_equal(server->token, token)) {
      cxs_reply_error(msg, SOUP_STATUS_FORBIDDEN, "wrong token");
      refused(msg);
      return;
    }
  }
  SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
  if (soup_message_headers_get_encoding(headers) == SOUP_ENCODING_CHUNKED) {
    cxs_reply_error(msg, SOUP_STATUS_LENGTH_REQUIRED,
                    "send the request body with a Content-Length, not chunked");
    refused(msg);
    return;
  }
  goffset length = soup_message_headers_get_content_length(headers);
  if (length > 0 && (guint64)length > server->options.max_body) {
    cxs_reply_error(msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                    "the request body has %" G_GINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
                    " bytes this server takes (--max-body)",
                    (gint64)length, server->options.max_body);
    refused(msg);
  }
}

static void
log_request(SoupServer *soup, SoupServerMessage *msg, gpointer data)
{
  (void)soup, (void)data;
  GUri *uri = soup_server_message_get_uri(msg);
  guint status = soup_server_message_get_status(msg);
  const char *remote = soup_server_message_get_remote_host(msg);
  cxs_log("%s %s %s %u", remote != NULL ? remote : "-", soup_server_message_get_method(msg),
          g_uri_get_path(uri), status);
}

/* Anything no route serves. */
static void
not_found(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
          gpointer data)
{
  (void)soup, (void)query, (void)data;
  cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no such route: %s", path);
}

/* The paths under which routes are registered: each gets check_request
 * as its early handler (libsoup runs the early handler of the longest
 * matching path only). */
static const char *const route_paths[] = { "/", "/api", "/api/kernelspecs", "/api/kernels",
                                           "/api/sessions", "/execute", "/contexts", "/health",
                                           NULL };

void
cxs_server_worker_begin(cxs_server *server)
{
  g_mutex_lock(&server->workers_lock);
  server->workers++;
  g_mutex_unlock(&server->workers_lock);
}

void
cxs_server_worker_end(cxs_server *server)
{
  g_mutex_lock(&server->workers_lock);
  if (--server->workers == 0)
    g_cond_signal(&server->workers_done);
  g_mutex_unlock(&server->workers_lock);
}

void
cxs_server_defer(cxs_server *server, gint priority, GSourceFunc func, gpointer data)
{
  GSource *source = g_idle_source_new();
  g_source_set_priority(source, priority);
  g_source_set_callback(source, func, data, NULL);
  g_source_attach(source, server->context);
  g_source_unref(source);
}

gboolean
cxs_server_spawn(const char *name, GThreadFunc func, gpointer data)
{
  g_autoptr(GError) error = NULL;
  GThread *thread = g_thread_try_new(name, func, data, &error);
  if (thread == NULL) {
    cxs_log("cannot start a thread (%s): %s", name, error->message);
    return FALSE;
  }
  g_thread_unref(thread);
  return TRUE;
}

gboolean
cxs_server_has_room(cxs_server *server, SoupServerMessage *msg)
{
  /* Those being deleted count until their session is gone (ending.c). */
  guint running = g_hash_table_size(server->kernels) + g_hash_table_size(server->contexts) +
                  server->ending;
  if (server->options.max_sessions == 0 || running < server->options.max_sessions)
    return TRUE;
  cxs_reply_error(msg, SOUP_STATUS_SERVICE_UNAVAILABLE,
                  "the server already runs %u kernels and contexts, its limit (--max-sessions "
                  "%u): delete one first", running, server->options.max_sessions);
  return FALSE;
}

cxs_server *
cxs_server_new(const cxs_options *options)
{
  open_log();
  cxs_server *server = g_new0(cxs_server, 1);
  server->options = *options;
  cxs_options *o = &server->options;
  o->max_queue = o->max_queue > 0 ? o->max_queue : CXS_DEFAULT_MAX_QUEUE;
  o->max_queued = o->max_queued > 0 ? o->max_queued : CXS_DEFAULT_MAX_QUEUED;
  o->cell_threads = o->cell_threads > 0 ? o->cell_threads : CXS_DEFAULT_CELL_THREADS;
  o->stop_timeout = o->stop_timeout > 0 ? o->stop_timeout : CXS_DEFAULT_STOP_TIMEOUT;
  server->token = options->token != NULL && *options->token != '\0' ? g_strdup(options->token)
                                                                   : NULL;
  server->options.token = server->token;
  server->context = g_main_context_ref_thread_default();
  server->kernels = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                          (GDestroyNotify)cxs_kernel_unref);
  server->sessions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)json_object_unref);
  server->contexts = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)cxs_context_unref);
  server->executions = g_hash_table_new(NULL, NULL);
  g_mutex_init(&server->workers_lock);
  g_cond_init(&server->workers_done);
  server->soup = soup_server_new("server-header", "cellexec/" PACKAGE_VERSION " ", NULL);
  for (const char *const *path = route_paths; *path != NULL; path++)
    soup_server_add_early_handler(server->soup, *path, check_request, server, NULL);
  soup_server_add_handler(server->soup, "/", not_found, server, NULL);
  cxs_kernels_add_routes(server);
  cxs_e2b_add_routes(server);
  g_signal_connect(server->soup, "request-finished", G_CALLBACK(log_request), server);
  server->acceptor = cxs_acceptor_new(server->soup, server->context, options->max_connections,
                                      options->header_timeout);
  return server;
}

gboolean
cxs_server_listen(cxs_server *server, const char *host, guint port, GError **error)
{
  g_autoptr(GInetAddress) address = g_str_equal(host, "localhost")
                                      ? g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4)
                                      : g_inet_address_new_from_string(host);
  if (address == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "--listen %s: not a numeric address (use 127.0.0.1, ::1 or 0.0.0.0)", host);
    return FALSE;
  }
  g_autoptr(GSocketAddress) where = g_inet_socket_address_new(address, port);
  g_autoptr(GError) failure = NULL;
  /* The socket made here for its backlog: GLib's default of 10 pending
   * connections drops some of a burst of clients (32 agents at once). */
  g_autoptr(GSocket) socket = g_socket_new(g_inet_address_get_family(address),
                                           G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &failure);
  if (socket != NULL) {
    g_socket_set_listen_backlog(socket, LISTEN_BACKLOG);
    if (!g_socket_bind(socket, where, TRUE, &failure) || !g_socket_listen(socket, &failure))
      g_clear_object(&socket);
  }
  if (socket == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot listen on %s:%u: %s", host, port,
                failure->message);
    return FALSE;
  }
  cxs_acceptor_listen(server->acceptor, socket);
  return TRUE;
}

char **
cxs_server_get_uris(cxs_server *server)
{
  return cxs_acceptor_get_uris(server->acceptor);
}

void
cxs_server_free(cxs_server *server)
{
  if (server == NULL)
    return;
  server->stopping = TRUE;
  cxs_acceptor_stop(server->acceptor);
  soup_server_disconnect(server->soup);
  if (server->cull_source != 0)
    g_source_remove(server->cull_source);
  cxs_contexts_end_all(server);
  cxs_kernels_end_all(server);
  g_mutex_lock(&server->workers_lock);
  while (server->workers > 0)
    g_cond_wait(&server->workers_done, &server->workers_lock);
  g_mutex_unlock(&server->workers_lock);
  if (server->cell_threads != NULL)
    g_thread_pool_free(server->cell_threads, FALSE, TRUE);
  /* What the last threads handed the loop: nobody is left to read it. */
  while (g_main_context_iteration(server->context, FALSE))
    ;
  g_object_unref(server->soup);
  /* The connections libsoup let go of just now are forgotten on the loop. */
  while (g_main_context_iteration(server->context, FALSE))
    ;
  cxs_acceptor_free(server->acceptor);
  g_hash_table_unref(server->kernels);
  g_hash_table_unref(server->sessions);
  g_hash_table_unref(server->contexts);
  g_hash_table_unref(server->executions);
  g_free(server->default_context);
  g_mutex_clear(&server->workers_lock);
  g_cond_clear(&server->workers_done);
  g_main_context_unref(server->context);
  g_free(server->token);
  g_free(server);
}
