/* server: the connections a server accepts, counted and timed (accept.h). */
#include "config.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/peer_json.h"
#include "server/accept.h"
#include "server/server.h"

/* Connections taken per wakeup of a listening socket: a burst does not
 * keep the loop from the connections it already has. */
#define ACCEPT_BATCH 64
/* How long accepting pauses after accept(2) failed, unless a connection
 * closes first (descriptors freed elsewhere, by an ending kernel, wake
 * nobody). */
#define RETRY_MS 250
/* The server's log says how many connections timed out at most this
 * often, not one line per connection. */
#define TIMEOUT_LOG_SECONDS 1

typedef struct {
  cxs_acceptor *acceptor;
  GSocket *socket;              /* listening */
  GSource *source;              /* its readiness; NULL while paused */
} listening;

typedef struct {
  cxs_acceptor *acceptor;
  GSocketConnection *connection; /* weak: libsoup's, or its WebSocket's; NULL once
                                 * it is gone (set on whatever thread freed it) */
  GSocket *socket;              /* its socket: still an object when the connection is
                                 * gone, closed then */
  GSocketAddress *remote;       /* libsoup's messages name it: the way back here */
  GSource *deadline;            /* the header timeout; NULL while a request runs */
} accepted;

struct cxs_acceptor {
  SoupServer *soup;
  GMainContext *context;
  guint max_connections;
  guint header_timeout;         /* seconds; 0: none */
  GPtrArray *listeners;         /* listening */
  GHashTable *open;             /* accepted, owned */
  gboolean refusing;            /* at the cap, said in the log */
  guint64 refused;              /* since it was said */
  gboolean short_of_descriptors;/* accept(2) failed, said in the log */
  GSource *resume;              /* the retry while paused */
  guint timed_out;              /* since the last log line of them */
  GSource *timed_out_log;
};

static GQuark
accepted_quark(void)
{
  return g_quark_from_static_string("cxs-accepted");
}

guint
cxs_server_default_max_connections(void)
{
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur / 2 > G_MAXUINT)
    return 1024;
  return MAX((guint)(limit.rlim_cur / 2), 1);
}

static GSource *
attach(cxs_acceptor *acceptor, GSource *source, GSourceFunc func, gpointer data)
{
  g_source_set_callback(source, func, data, NULL);
  g_source_attach(source, acceptor->context);
  return source;
}

static void
drop_source(GSource **source)
{
  if (*source != NULL) {
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
  }
}

/* ---- The header timeout ------------------------------------------------------------- */

static gboolean
log_timed_out(gpointer data)
{
  cxs_acceptor *acceptor = data;
  cxs_log("closed %u connections whose request headers had not come within %u s "
          "(--header-timeout)", acceptor->timed_out, acceptor->header_timeout);
  acceptor->timed_out = 0;
  g_clear_pointer(&acceptor->timed_out_log, g_source_unref);
  return G_SOURCE_REMOVE;
}

/* The headers did not come in time: the socket is shut down under
 * libsoup, which sees its end and lets the connection go. */
static gboolean
header_time_out(gpointer data)
{
  accepted *a = data;
  cxs_acceptor *acceptor = a->acceptor;
  g_clear_pointer(&a->deadline, g_source_unref);
  if (g_atomic_pointer_get(&a->connection) == NULL)
    return G_SOURCE_REMOVE; /* gone, about to be forgotten */
  g_socket_shutdown(a->socket, TRUE, TRUE, NULL);
  if (acceptor->timed_out++ == 0)
    acceptor->timed_out_log = attach(acceptor, g_timeout_source_new_seconds(TIMEOUT_LOG_SECONDS),
                                     log_timed_out, acceptor);
  return G_SOURCE_REMOVE;
}

/* A's clock starts: it waits for a request's headers. */
static void
arm(accepted *a)
{
  if (a->acceptor->header_timeout == 0 || a->deadline != NULL)
    return;
  a->deadline = attach(a->acceptor, g_timeout_source_new_seconds(a->acceptor->header_timeout),
                       header_time_out, a);
}

/* MSG's connection, if it is one of ours still. */
static accepted *
accepted_of(SoupServerMessage *msg)
{
  GSocketAddress *remote = soup_server_message_get_remote_address(msg);
  return remote != NULL ? g_object_get_qdata(G_OBJECT(remote), accepted_quark()) : NULL;
}

/* The headers are in: the clock stops, unless the request was refused
 * on them (a status set before its body is read): libsoup drains the body
 * of that one before it answers, and a client that never ends it would
 * hold the connection. */
static void
on_got_headers(SoupServerMessage *msg, gpointer unused)
{
  (void)unused;
  accepted *a = accepted_of(msg);
  if (a != NULL && soup_server_message_get_status(msg) == 0)
    drop_source(&a->deadline);
}

/* Found through MSG each time, never kept: a message may outlive its
 * connection's record, or the acceptor. */
static void
on_request_started(SoupServer *soup, SoupServerMessage *msg, gpointer data)
{
  (void)soup, (void)data;
  g_signal_connect(msg, "got-headers", G_CALLBACK(on_got_headers), NULL);
}

/* An answer is out: a kept-alive connection waits for the next request
 * under the same clock. */
static void
on_request_done(SoupServer *soup, SoupServerMessage *msg, gpointer data)
{
  (void)soup, (void)data;
  accepted *a = accepted_of(msg);
  if (a != NULL)
    arm(a);
}

/* ---- Accepting ---------------------------------------------------------------------- */

static gboolean on_incoming(GSocket *socket, GIOCondition condition, gpointer data);

static void
set_accepting(cxs_acceptor *acceptor, gboolean accepting)
{
  drop_source(&acceptor->resume);
  for (guint i = 0; i < acceptor->listeners->len; i++) {
    listening *l = acceptor->listeners->pdata[i];
    if (!accepting)
      drop_source(&l->source);
    else if (l->source == NULL)
      l->source = attach(acceptor, g_socket_create_source(l->socket, G_IO_IN, NULL),
                         G_SOURCE_FUNC(on_incoming), l);
  }
}

static gboolean
resume_accepting(gpointer data)
{
  cxs_acceptor *acceptor = data;
  g_clear_pointer(&acceptor->resume, g_source_unref);
  set_accepting(acceptor, TRUE);
  return G_SOURCE_REMOVE;
}

/* accept(2) failed with ERROR (most often EMFILE: no descriptor left): the
 * pending connections wait in the backlog until one closes or RETRY_MS
 * pass, rather than the loop spinning on a socket it cannot take from. */
static void
pause_accepting(cxs_acceptor *acceptor, const GError *error)
{
  if (!acceptor->short_of_descriptors) {
    struct rlimit limit = { 0 };
    getrlimit(RLIMIT_NOFILE, &limit);
    cxs_log("cannot accept a connection: %s (%u open, descriptor limit %llu): waiting for one "
            "to close; lower --max-connections or raise the limit (ulimit -n)",
            error->message, g_hash_table_size(acceptor->open),
            (unsigned long long)limit.rlim_cur);
    acceptor->short_of_descriptors = TRUE;
  }
  set_accepting(acceptor, FALSE);
  acceptor->resume = attach(acceptor, g_timeout_source_new(RETRY_MS), resume_accepting, acceptor);
}

/* On the main loop, after on_connection_gone(). */
static gboolean
forget(gpointer data)
{
  accepted *a = data;
  cxs_acceptor *acceptor = a->acceptor;
  g_hash_table_remove(acceptor->open, a);
  guint open = g_hash_table_size(acceptor->open);
  /* A burst ends once a quarter of the connections are free again. */
  if (acceptor->refusing && open < acceptor->max_connections - acceptor->max_connections / 4) {
    cxs_log("accepting connections again: %" G_GUINT64_FORMAT " were refused while %u were "
            "open (--max-connections)", acceptor->refused, acceptor->max_connections);
    acceptor->refusing = FALSE;
    acceptor->refused = 0;
  }
  if (acceptor->resume != NULL)
    resume_accepting(acceptor);
  return G_SOURCE_REMOVE;
}

/* The connection is gone: closed and freed by libsoup or its WebSocket,
 * on the main loop, or on a cell's thread that let go of the last message
 * holding it.  The rest is the main loop's. */
static void
on_connection_gone(gpointer data, GObject *where_it_was)
{
  (void)where_it_was;
  accepted *a = data;
  g_atomic_pointer_set(&a->connection, NULL);
  GSource *source = g_idle_source_new();
  g_source_set_priority(source, G_PRIORITY_DEFAULT); /* not after every other source */
  g_source_unref(attach(a->acceptor, source, forget, a));
}

static void
accepted_free(gpointer data)
{
  accepted *a = data;
  GSocketConnection *connection = g_atomic_pointer_get(&a->connection);
  if (connection != NULL)
    g_object_weak_unref(G_OBJECT(connection), on_connection_gone, a);
  drop_source(&a->deadline);
  g_object_unref(a->socket);
  g_object_set_qdata(G_OBJECT(a->remote), accepted_quark(), NULL);
  g_object_unref(a->remote);
  g_free(a);
}

/* STATUS with {"message": MESSAGE, "reason": its phrase}, as the routes'
 * errors, and "Connection: close": as much as CLIENT takes at once (a
 * client that does not read gets less, not a server that waits). */
static void
send_answer(GSocket *client, guint status, const char *message)
{
  JsonObject *error = json_object_new();
  json_object_set_string_member(error, "message", message);
  json_object_set_string_member(error, "reason", soup_status_get_phrase(status));
  JsonNode *node = json_node_init_object(json_node_alloc(), error);
  g_autofree char *body = cx_json_to_string(node, FALSE);
  json_node_unref(node);
  json_object_unref(error);
  g_autofree char *answer = g_strdup_printf(
    "HTTP/1.1 %u %s\r\n%sConnection: close\r\nContent-Type: application/json\r\n"
    "Content-Length: %zu\r\n\r\n%s", status, soup_status_get_phrase(status),
    status == SOUP_STATUS_SERVICE_UNAVAILABLE ? "Retry-After: 1\r\n" : "", strlen(body), body);
  g_socket_set_blocking(client, FALSE);
  g_socket_send(client, answer, strlen(answer), NULL, NULL);
}

void
cxs_connection_refuse(SoupServerMessage *msg, guint status, const char *message)
{
  accepted *a = accepted_of(msg);
  g_autoptr(GSocket) socket = a != NULL ? g_object_ref(a->socket) : NULL;
  g_autoptr(GIOStream) stream = soup_server_message_steal_connection(msg);
  if (socket != NULL)
    send_answer(socket, status, message);
  if (stream != NULL)
    g_io_stream_close(stream, NULL, NULL);
}

/* Past --max-connections: a 503 if the socket takes it at once, and the
 * end. */
static void
refuse(cxs_acceptor *acceptor, GSocket *client)
{
  if (!acceptor->refusing) {
    cxs_log("%u connections are open, as many as this server takes (--max-connections): "
            "refusing new ones until some close", acceptor->max_connections);
    acceptor->refusing = TRUE;
  }
  acceptor->refused++;
  send_answer(client, SOUP_STATUS_SERVICE_UNAVAILABLE,
              "the server has as many connections open as it takes (--max-connections): "
              "try again later");
  g_socket_close(client, NULL);
}

/* CLIENT (taken) to libsoup, counted and on the clock. */
static void
take(cxs_acceptor *acceptor, GSocket *client)
{
  if (g_hash_table_size(acceptor->open) >= acceptor->max_connections) {
    refuse(acceptor, client);
    g_object_unref(client);
    return;
  }
  g_autoptr(GSocketAddress) local = g_socket_get_local_address(client, NULL);
  g_autoptr(GSocketAddress) remote = g_socket_get_remote_address(client, NULL);
  if (local == NULL || remote == NULL) { /* gone already */
    g_object_unref(client);
    return;
  }
  g_socket_set_option(client, IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);
  accepted *a = g_new0(accepted, 1);
  a->acceptor = acceptor;
  a->connection = g_socket_connection_factory_create_connection(client);
  a->socket = client;
  a->remote = g_object_ref(remote);
  g_object_set_qdata(G_OBJECT(remote), accepted_quark(), a);
  g_object_weak_ref(G_OBJECT(a->connection), on_connection_gone, a);
  g_hash_table_add(acceptor->open, a);
  arm(a);
  GSocketConnection *connection = a->connection; /* A may be gone when libsoup returns */
  soup_server_accept_iostream(acceptor->soup, G_IO_STREAM(connection), local, remote, NULL);
  g_object_unref(connection);
}

static gboolean
on_incoming(GSocket *socket, GIOCondition condition, gpointer data)
{
  (void)condition;
  listening *l = data;
  cxs_acceptor *acceptor = l->acceptor;
  for (int i = 0; i < ACCEPT_BATCH; i++) {
    g_autoptr(GError) error = NULL;
    GSocket *client = g_socket_accept(socket, NULL, &error);
    if (client == NULL) {
      if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return G_SOURCE_CONTINUE;
      pause_accepting(acceptor, error); /* destroys this source */
      return G_SOURCE_REMOVE;
    }
    acceptor->short_of_descriptors = FALSE;
    take(acceptor, client);
  }
  return G_SOURCE_CONTINUE;
}

/* ---- The acceptor ------------------------------------------------------------------- */

/* libsoup 3.2 keeps a connection alive after an answer only while the
 * server has a listener of its own (request_finished() in soup-server.c):
 * it gets one that can never accept, a socket of a pair whose other end is
 * closed (it wakes libsoup's listener once, whose accept fails, and is
 * never watched again). */
static void
keep_alive_for_accepted(SoupServer *soup)
{
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return;
  g_autoptr(GSocket) socket = g_socket_new_from_fd(pair[0], NULL);
  if (socket == NULL)
    close(pair[0]);
  else
    soup_server_listen_socket(soup, socket, 0, NULL);
  close(pair[1]);
}

cxs_acceptor *
cxs_acceptor_new(SoupServer *soup, GMainContext *context, guint max_connections,
                 guint header_timeout)
{
  cxs_acceptor *acceptor = g_new0(cxs_acceptor, 1);
  acceptor->soup = soup;
  acceptor->context = context;
  acceptor->max_connections = MAX(max_connections, 1);
  acceptor->header_timeout = header_timeout;
  acceptor->listeners = g_ptr_array_new();
  acceptor->open = g_hash_table_new_full(NULL, NULL, accepted_free, NULL);
  keep_alive_for_accepted(soup);
  g_signal_connect(soup, "request-started", G_CALLBACK(on_request_started), acceptor);
  g_signal_connect(soup, "request-finished", G_CALLBACK(on_request_done), acceptor);
  g_signal_connect(soup, "request-aborted", G_CALLBACK(on_request_done), acceptor);
  return acceptor;
}

void
cxs_acceptor_listen(cxs_acceptor *acceptor, GSocket *socket)
{
  g_socket_set_blocking(socket, FALSE);
  listening *l = g_new0(listening, 1);
  l->acceptor = acceptor;
  l->socket = g_object_ref(socket);
  g_ptr_array_add(acceptor->listeners, l);
  if (acceptor->resume == NULL)
    set_accepting(acceptor, TRUE);
}

char **
cxs_acceptor_get_uris(cxs_acceptor *acceptor)
{
  GPtrArray *uris = g_ptr_array_new();
  for (guint i = 0; i < acceptor->listeners->len; i++) {
    listening *l = acceptor->listeners->pdata[i];
    g_autoptr(GSocketAddress) address = g_socket_get_local_address(l->socket, NULL);
    if (address == NULL || !G_IS_INET_SOCKET_ADDRESS(address))
      continue;
    GInetSocketAddress *inet = G_INET_SOCKET_ADDRESS(address);
    g_autofree char *host = g_inet_address_to_string(g_inet_socket_address_get_address(inet));
    g_autoptr(GUri) uri = g_uri_build(G_URI_FLAGS_NONE, "http", NULL, host,
                                      g_inet_socket_address_get_port(inet), "/", NULL, NULL);
    g_ptr_array_add(uris, g_uri_to_string(uri));
  }
  g_ptr_array_add(uris, NULL);
  return (char **)g_ptr_array_free(uris, FALSE);
}

void
cxs_acceptor_stop(cxs_acceptor *acceptor)
{
  set_accepting(acceptor, FALSE);
  for (guint i = 0; i < acceptor->listeners->len; i++) {
    listening *l = acceptor->listeners->pdata[i];
    g_socket_close(l->socket, NULL);
    g_object_unref(l->socket);
    g_free(l);
  }
  g_ptr_array_set_size(acceptor->listeners, 0);
  g_signal_handlers_disconnect_by_data(acceptor->soup, acceptor);
  acceptor->soup = NULL;
}

void
cxs_acceptor_free(cxs_acceptor *acceptor)
{
  if (acceptor == NULL)
    return;
  if (acceptor->soup != NULL)
    cxs_acceptor_stop(acceptor);
  g_ptr_array_unref(acceptor->listeners);
  g_hash_table_unref(acceptor->open);
  drop_source(&acceptor->timed_out_log);
  g_free(acceptor);
}
