/* server: a kernel's channels on WebSockets (/api/kernels/ID/channels),
 * as Jupyter Server carries them: each text frame one Jupyter message in
 * JSON, its "channel" member naming shell, control, stdin or iopub.
 * A client that offers Jupyter Server 2's binary subprotocol
 * (JP_WEBSOCKET_V1, what JupyterLab 4 asks for) gets it instead.
 * Several front ends may connect to one kernel: each gets the replies to
 * its own requests, and all get IOPub.  The kernel's threads send through
 * the sink below, which hands each message to the main loop, where
 * libsoup's connections live.  A client that stops reading is dropped
 * once MAX_BACKLOG bytes wait for it; it may connect again. */
#include "config.h"

#include <string.h>

#include "lib/peer_json.h"
#include "server/server-private.h"

/* What may wait in the server for one client's WebSocket: a few large
 * outputs (images, tables), not an endless stream nobody reads. */
#define MAX_BACKLOG (32 * 1024 * 1024)

typedef struct {
  SoupWebsocketConnection *ws;
  guint32 id;                   /* in a request's identities: who gets the reply */
  gboolean v1;                  /* it chose the binary subprotocol (JP_WEBSOCKET_V1) */
  served_kernel *kernel;        /* borrowed: the connection goes first */
} connection;

struct cxs_connections {
  GPtrArray *all;               /* connection */
  jp_counters dropped;          /* frames that were no Jupyter message */
};

static void
connection_free(connection *c)
{
  g_signal_handlers_disconnect_by_data(c->ws, c);
  if (soup_websocket_connection_get_state(c->ws) == SOUP_WEBSOCKET_STATE_OPEN)
    soup_websocket_connection_close(c->ws, SOUP_WEBSOCKET_CLOSE_GOING_AWAY, "the kernel ended");
  g_object_unref(c->ws);
  g_free(c);
}

cxs_connections *
cxs_connections_new(void)
{
  cxs_connections *connections = g_new0(cxs_connections, 1);
  connections->all = g_ptr_array_new_with_free_func((GDestroyNotify)connection_free);
  return connections;
}

void
cxs_connections_free(cxs_connections *connections)
{
  g_ptr_array_unref(connections->all);
  g_free(connections);
}

guint
cxs_connections_count(cxs_connections *connections)
{
  return connections != NULL ? connections->all->len : 0;
}

/* ---- From the kernel: the sink ----------------------------------------------------- */

typedef struct {
  served_kernel *kernel;
  guint32 to;                   /* a connection's id; 0: every connection */
  int channel;
  GBytes *parts[4];             /* header, parent, metadata, content: JSON */
  char *msg_id, *msg_type;
} outgoing;

static gboolean
send_on_main(gpointer data)
{
  outgoing *out = data;
  cxs_connections *connections = out->kernel->connections;
  g_autoptr(GBytes) text = NULL;    /* made once, for the connections that take it */
  g_autoptr(GBytes) binary = NULL;
  for (guint i = 0; !out->kernel->ended && connections != NULL && i < connections->all->len; i++) {
    connection *c = g_ptr_array_index(connections->all, i);
    if ((out->to != 0 && out->to != c->id) ||
        soup_websocket_connection_get_state(c->ws) != SOUP_WEBSOCKET_STATE_OPEN)
      continue;
    guint64 backlog = cxs_websocket_backlog(c->ws);
    if (backlog > MAX_BACKLOG) {
      cxs_log("kernel %s: a client left %" G_GUINT64_FORMAT " bytes unread on its WebSocket: "
              "disconnected (it may connect again)", out->kernel->id, backlog);
      soup_websocket_connection_close(c->ws, SOUP_WEBSOCKET_CLOSE_POLICY_VIOLATION,
                                      "too many messages unread");
      continue;
    }
    if (c->v1) {
      if (binary == NULL)
        binary = jp_websocket_v1_of_parts(out->channel, out->parts);
      cxs_websocket_send(c->ws, SOUP_WEBSOCKET_DATA_BINARY, binary);
    } else {
      if (text == NULL) {
        char *json = jp_websocket_text_of_parts(out->channel, out->parts, out->msg_id,
                                                out->msg_type);
        text = g_bytes_new_take(json, strlen(json));
      }
      cxs_websocket_send(c->ws, SOUP_WEBSOCKET_DATA_TEXT, text);
    }
  }
  cxs_kernel_unref(out->kernel);
  for (int i = 0; i < 4; i++)
    g_bytes_unref(out->parts[i]);
  g_free(out->msg_id);
  g_free(out->msg_type);
  g_free(out);
  return G_SOURCE_REMOVE;
}

/* The connection PARENT came from, or 0 (every one) when it came from none. */
static guint32
sender_of(const jp_message *parent)
{
  if (parent == NULL || parent->identities == NULL || parent->identities->len != 1)
    return 0;
  gsize len;
  const guint32 *id = g_bytes_get_data(parent->identities->pdata[0], &len);
  return len == sizeof *id ? *id : 0;
}

static void
sink_send(gpointer data, int channel, const jp_message *parent, const char *msg_type,
          JsonObject *content)
{
  served_kernel *kernel = data;
  if (channel == JP_IOPUB && g_str_equal(msg_type, "status"))
    cxs_kernel_set_state(kernel, cx__peer_get_string(content, "execution_state", "idle"));
  outgoing *out = g_new0(outgoing, 1);
  out->kernel = cxs_kernel_ref(kernel);
  out->to = channel == JP_IOPUB ? 0 : sender_of(parent);
  out->channel = channel;
  /* Written here, on the caller's thread: json-glib's objects must not
   * cross to the main loop's. */
  g_autoptr(JsonObject) header = jp_header_new(kernel->id, "kernel", msg_type, &out->msg_id);
  out->msg_type = g_strdup(msg_type);
  g_autoptr(JsonObject) none = json_object_new();
  out->parts[0] = jp_json_bytes(header);
  out->parts[1] = parent != NULL && parent->header_json != NULL ? g_bytes_ref(parent->header_json)
                                                                 : jp_json_bytes(none);
  out->parts[2] = jp_json_bytes(none);
  out->parts[3] = jp_json_bytes(content);
  /* Always through the loop, even from its own thread: in order, and never
   * while the caller holds the kernel's lock. */
  cxs_server_defer(kernel->server, G_PRIORITY_DEFAULT, send_on_main, out);
}

static void
sink_shutdown(gpointer data, gboolean restart)
{
  cxs_kernel_shutdown_requested(data, restart);
}

cxk_sink
cxs_channels_sink(served_kernel *kernel)
{
  cxk_sink sink = { sink_send, sink_shutdown, kernel };
  return sink;
}

/* ---- From the front end ---------------------------------------------------------- */

static void
on_message(SoupWebsocketConnection *ws, gint type, GBytes *frame, gpointer data)
{
  (void)ws;
  connection *c = data;
  served_kernel *kernel = c->kernel;
  gsize len;
  const char *bytes = g_bytes_get_data(frame, &len);
  jp_counters *dropped = &kernel->connections->dropped;
  /* Each connection speaks one framing: the one its handshake chose. */
  jp_message *m = NULL;
  if (c->v1 && type == SOUP_WEBSOCKET_DATA_BINARY)
    m = jp_message_from_websocket_v1((const guint8 *)bytes, len, CXS_REQUEST_MAX_VALUES,
                                     dropped);
  else if (!c->v1 && type == SOUP_WEBSOCKET_DATA_TEXT)
    m = jp_message_from_websocket(bytes, len, CXS_REQUEST_MAX_VALUES, dropped);
  else
    g_atomic_int_inc(&dropped->malformed);
  if (m == NULL) {
    cxs_log("kernel %s: a WebSocket frame that is no Jupyter message (%s) was dropped "
            "(%d so far)",
            kernel->id, c->v1 ? JP_WEBSOCKET_V1 : "JSON text",
            g_atomic_int_get(&dropped->malformed));
    return;
  }
  if (m->too_large != NULL)
    cxs_log("kernel %s: a WebSocket message too large to read was dropped: %s", kernel->id,
            m->too_large);
  int channel = m->channel;
  if (channel != JP_SHELL && channel != JP_CONTROL && channel != JP_STDIN) {
    jp_message_free(m);
    return;
  }
  m->identities = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_ptr_array_add(m->identities, g_bytes_new(&c->id, sizeof c->id));
  cxs_kernel_deliver(kernel, channel, m);
}

static void
on_error(SoupWebsocketConnection *ws, GError *error, gpointer data)
{
  (void)ws;
  connection *c = data;
  cxs_log("kernel %s: a WebSocket client dropped: %s", c->kernel->id, error->message);
}

static void
on_closed(SoupWebsocketConnection *ws, gpointer data)
{
  (void)ws;
  connection *c = data;
  if (c->kernel->connections != NULL)
    g_ptr_array_remove(c->kernel->connections->all, c);
}

static void
opened(SoupServerMessage *msg, const char *path, SoupWebsocketConnection *ws, gpointer data)
{
  (void)msg;
  cxs_server *server = data;
  static guint32 next_id;
  g_auto(GStrv) parts = g_strsplit(path, "/", -1); /* "", api, kernels, ID, channels */
  served_kernel *kernel = g_strv_length(parts) == 5 && g_str_equal(parts[4], "channels")
                            ? cxs_kernel_lookup(server, parts[3]) : NULL;
  if (kernel == NULL || kernel->connections == NULL) {
    soup_websocket_connection_close(ws, SOUP_WEBSOCKET_CLOSE_POLICY_VIOLATION, "no such kernel");
    return;
  }
  connection *c = g_new0(connection, 1);
  c->ws = g_object_ref(ws);
  c->id = ++next_id != 0 ? next_id : ++next_id;
  c->v1 = g_strcmp0(soup_websocket_connection_get_protocol(ws), JP_WEBSOCKET_V1) == 0;
  c->kernel = kernel;
  g_signal_connect(ws, "message", G_CALLBACK(on_message), c);
  g_signal_connect(ws, "error", G_CALLBACK(on_error), c);
  g_signal_connect(ws, "closed", G_CALLBACK(on_closed), c);
  g_ptr_array_add(kernel->connections->all, c);
  cxs_kernel_touch(kernel);
  g_mutex_lock(&kernel->lock);
  if (kernel->kernel != NULL)
    cxk_kernel_welcome(kernel->kernel);
  g_mutex_unlock(&kernel->lock);
}

void
cxs_channels_accept(cxs_server *server, SoupServerMessage *msg)
{
  /* A client that offers the binary subprotocol gets it; one that offers
   * none, JSON text.  A message as large as a request body may be. */
  char *protocols[] = { (char *)JP_WEBSOCKET_V1, NULL };
  cxs_websocket_accept(msg, protocols, server->options.max_body, opened, server);
}
