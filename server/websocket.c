/* server: WebSocket upgrades with bounds libsoup 3.2 does not have.
 *
 * libsoup bounds a frame (max-incoming-payload-size), not a message: a
 * client could send one message as endless fragments, all kept until the
 * last.  And what a server sends waits in the connection's queue, unbounded
 * and unseen, when a client stops reading.  So the handshake is answered
 * here and the connection's stream runs through two counters:
 *
 *   in:  bytes read since the last whole message; past the limit, the read
 *        fails and libsoup drops the connection;
 *   out: bytes that left the queue for the socket, from which
 *        cxs_websocket_backlog() tells what still waits.
 *
 * No extension is offered: with permessage-deflate a small frame could
 * inflate past any bound, unseen by the counters. */
#include "config.h"

#include <string.h>

#include "server/server-private.h"

/* ---- A GConverter that passes bytes on, counting them --------------------------------- */

#define CXS_TYPE_BYTE_COUNTER (cxs_byte_counter_get_type())
G_DECLARE_FINAL_TYPE(CxsByteCounter, cxs_byte_counter, CXS, BYTE_COUNTER, GObject)

struct _CxsByteCounter {
  GObject parent;
  guint64 count;
  guint64 limit;                /* 0: none */
};

static GConverterResult
counter_convert(GConverter *converter, const void *inbuf, gsize inbuf_size, void *outbuf,
                gsize outbuf_size, GConverterFlags flags, gsize *bytes_read,
                gsize *bytes_written, GError **error)
{
  CxsByteCounter *counter = CXS_BYTE_COUNTER(converter);
  gsize n = MIN(inbuf_size, outbuf_size);
  if (n == 0 && inbuf_size > 0) {
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "no room to copy into");
    return G_CONVERTER_ERROR;
  }
  if (counter->limit > 0 && counter->count + n > counter->limit) {
    /* Its domain and code make libsoup's close say 1009, "too big". */
    g_set_error(error, SOUP_WEBSOCKET_ERROR, SOUP_WEBSOCKET_CLOSE_TOO_BIG,
                "a WebSocket message passed the %" G_GUINT64_FORMAT
                " bytes this server takes (--max-body)", counter->limit);
    return G_CONVERTER_ERROR;
  }
  if (n > 0) /* a flush or the end brings no bytes (and maybe no buffer) */
    memcpy(outbuf, inbuf, n);
  counter->count += n;
  *bytes_read = *bytes_written = n;
  if (n == inbuf_size && (flags & G_CONVERTER_INPUT_AT_END))
    return G_CONVERTER_FINISHED;
  if (n == inbuf_size && (flags & G_CONVERTER_FLUSH))
    return G_CONVERTER_FLUSHED;
  return G_CONVERTER_CONVERTED;
}

static void
counter_reset(GConverter *converter)
{
  (void)converter; /* the count goes on: it is the stream's, not a conversion's */
}

static void
cxs_byte_counter_converter_init(GConverterIface *iface)
{
  iface->convert = counter_convert;
  iface->reset = counter_reset;
}

G_DEFINE_TYPE_WITH_CODE(CxsByteCounter, cxs_byte_counter, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(G_TYPE_CONVERTER, cxs_byte_counter_converter_init))

static void
cxs_byte_counter_class_init(CxsByteCounterClass *class)
{
  (void)class;
}

static void
cxs_byte_counter_init(CxsByteCounter *counter)
{
  (void)counter;
}

/* ---- A connection's counts -------------------------------------------------------- */

typedef struct {
  CxsByteCounter *in, *out;
  guint64 queued;               /* bytes handed to cxs_websocket_send() */
} counts;

static const char COUNTS_KEY[] = "cxs-websocket-counts";

static void
counts_free(gpointer data)
{
  counts *c = data;
  g_object_unref(c->in);
  g_object_unref(c->out);
  g_free(c);
}

/* A whole message arrived: the next one counts from nothing.  Connected
 * before the route's own handler, so this runs first. */
static void
on_message(SoupWebsocketConnection *ws, gint type, GBytes *message, gpointer data)
{
  (void)ws, (void)type, (void)message;
  counts *c = data;
  c->in->count = 0;
}

void
cxs_websocket_send(SoupWebsocketConnection *ws, SoupWebsocketDataType type, GBytes *message)
{
  counts *c = g_object_get_data(G_OBJECT(ws), COUNTS_KEY);
  if (c != NULL)
    c->queued += g_bytes_get_size(message);
  soup_websocket_connection_send_message(ws, type, message);
}

guint64
cxs_websocket_backlog(SoupWebsocketConnection *ws)
{
  counts *c = g_object_get_data(G_OBJECT(ws), COUNTS_KEY);
  /* Frame headers and control frames count out, not queued: at worst the
   * backlog reads a little low. */
  return c != NULL && c->queued > c->out->count ? c->queued - c->out->count : 0;
}

/* ---- The upgrade ---------------------------------------------------------------- */

typedef struct {
  guint64 max_message;
  cxs_websocket_opened opened;
  gpointer data;
} upgrade;

static void
upgrade_free(gpointer data, GClosure *closure)
{
  (void)closure;
  g_free(data);
}

/* SOCKET with its bytes counted both ways into a new C; the returned
 * stream holds SOCKET, but closing it does not close SOCKET. */
static GIOStream *
counted_stream(GIOStream *socket, guint64 max_message, counts **out)
{
  counts *c = g_new0(counts, 1);
  c->in = g_object_new(CXS_TYPE_BYTE_COUNTER, NULL);
  c->in->limit = max_message;
  c->out = g_object_new(CXS_TYPE_BYTE_COUNTER, NULL);
  g_autoptr(GInputStream) in =
    g_converter_input_stream_new(g_io_stream_get_input_stream(socket), G_CONVERTER(c->in));
  g_autoptr(GOutputStream) output =
    g_converter_output_stream_new(g_io_stream_get_output_stream(socket), G_CONVERTER(c->out));
  GIOStream *stream = g_simple_io_stream_new(in, output);
  g_object_set_data_full(G_OBJECT(stream), "cxs-socket", g_object_ref(socket), g_object_unref);
  *out = c;
  return stream;
}

static void
close_socket(SoupWebsocketConnection *ws, gpointer data)
{
  (void)ws;
  g_io_stream_close(data, NULL, NULL);
}

static void
unref_socket(gpointer data, GClosure *closure)
{
  (void)closure;
  g_object_unref(data);
}

/* The 101 is written: the connection is the WebSocket's now. */
static void
on_wrote_informational(SoupServerMessage *msg, gpointer data)
{
  upgrade *u = data;
  if (soup_server_message_get_status(msg) != SOUP_STATUS_SWITCHING_PROTOCOLS)
    return;
  g_object_ref(msg);
  GUri *uri = soup_server_message_get_uri(msg);
  g_autoptr(GIOStream) socket = soup_server_message_steal_connection(msg);
  counts *c;
  g_autoptr(GIOStream) stream = counted_stream(socket, u->max_message, &c);
  SoupMessageHeaders *request = soup_server_message_get_request_headers(msg);
  SoupMessageHeaders *response = soup_server_message_get_response_headers(msg);
  SoupWebsocketConnection *ws = soup_websocket_connection_new(
    stream, uri, SOUP_WEBSOCKET_CONNECTION_SERVER,
    soup_message_headers_get_one(request, "Origin"),
    soup_message_headers_get_one(response, "Sec-WebSocket-Protocol"), NULL);
  g_object_set_data_full(G_OBJECT(ws), COUNTS_KEY, c, counts_free);
  /* Its own frame bound too, checked before a frame is read whole. */
  soup_websocket_connection_set_max_incoming_payload_size(ws, u->max_message);
  g_signal_connect(ws, "message", G_CALLBACK(on_message), c);
  /* Closing the counted stream leaves the socket open: this closes it. */
  g_signal_connect_data(ws, "closed", G_CALLBACK(close_socket), g_object_ref(socket),
                        unref_socket, 0);
  u->opened(msg, g_uri_get_path(uri), ws, u->data);
  g_object_unref(ws);
  g_object_unref(msg);
}

gboolean
cxs_websocket_accept(SoupServerMessage *msg, char **protocols, guint64 max_message,
                     cxs_websocket_opened opened, gpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!soup_websocket_server_check_handshake(msg, NULL, protocols, NULL, &error)) {
    cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST, "%s: this path takes a WebSocket handshake",
                    error->message);
    return FALSE;
  }
  soup_websocket_server_process_handshake(msg, NULL, protocols, NULL, NULL);
  upgrade *u = g_new0(upgrade, 1);
  *u = (upgrade){ max_message, opened, data };
  g_signal_connect_data(msg, "wrote-informational", G_CALLBACK(on_wrote_informational), u,
                        upgrade_free, 0);
  return TRUE;
}
