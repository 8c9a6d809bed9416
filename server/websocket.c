/* server: WebSocket upgrades with bounds libsoup 3.2 does not have.
 *
 * libsoup bounds a frame (max-incoming-payload-size), not a message: a
 * client could send one message as endless fragments, all kept until the
 * last.  And what a server sends waits in the connection's queue, unbounded
 * and unseen, when a client stops reading.  So the handshake is answered
 * here and the connection's stream runs through two counters:
 *
 *   in:  bytes read since the last whole message; past --max-body (and
 *        SLACK for framing) the connection is closed with 1009, and what
 *        the client sends meanwhile is dropped unread;
 *   out: bytes the socket took, from which cxs_websocket_backlog() tells
 *        what still waits.
 *
 * No extension is offered: with permessage-deflate a small frame could
 * inflate past any bound, unseen by the counters. */
#include "config.h"

#include "server/server-private.h"

/* Allowed past --max-body for what is not the message: a frame's header
 * (at most 14 bytes), and the start of the next message read with the end
 * of this one (libsoup reads 1024 bytes at a time). */
#define SLACK (14 + 1024)

/* ---- Streams that pass bytes on, counting them ------------------------------------------
 *
 * Filters of the stolen connection's own streams, pollable as libsoup's
 * WebSocket needs, with no buffer of their own: a byte counted out is a
 * byte the socket took. */

#define CXS_TYPE_COUNTED_INPUT (cxs_counted_input_get_type())
G_DECLARE_FINAL_TYPE(CxsCountedInput, cxs_counted_input, CXS, COUNTED_INPUT, GFilterInputStream)

struct _CxsCountedInput {
  GFilterInputStream parent;
  guint64 count;                /* bytes since the last whole message */
  guint64 max_message;          /* --max-body; COUNT may pass it by SLACK; 0: no limit */
  gboolean discarding;          /* past the limit: what comes is dropped */
  SoupWebsocketConnection *ws;  /* weak: told to close past the limit */
};

static GPollableInputStream *
base_input(gpointer stream)
{
  return G_POLLABLE_INPUT_STREAM(g_filter_input_stream_get_base_stream(stream));
}

/* N bytes were read (or -1 with ERROR, or 0 at the end).  Past the
 * limit, the connection is closed as the protocol says (1009 "message too
 * big", after what is queued for the client, which then has libsoup's
 * 5 s to answer), and from then on what the client sends is read and
 * dropped: it reaches libsoup as nothing yet.  Failing the read instead
 * would be a forced close, which sends no close frame. */
static gssize
counted_read(CxsCountedInput *in, gssize n, gboolean blocking, GError **error)
{
  if (n <= 0 || in->max_message == 0)
    return n;
  if (!in->discarding) {
    in->count += (guint64)n;
    if (in->count <= in->max_message + SLACK)
      return n;
    in->discarding = TRUE;
    cxs_log("a WebSocket message passed the %" G_GUINT64_FORMAT " bytes this server takes "
            "(--max-body): its connection is closed (1009)", in->max_message);
    if (in->ws != NULL &&
        soup_websocket_connection_get_state(in->ws) == SOUP_WEBSOCKET_STATE_OPEN)
      soup_websocket_connection_close(in->ws, SOUP_WEBSOCKET_CLOSE_TOO_BIG, "message too big");
  }
  if (blocking)
    return 0; /* nobody reads this way; were it to, the message ends here */
  g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "dropped: past --max-body");
  return -1;
}

static gssize
counted_input_read(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
                   GError **error)
{
  gssize n = g_input_stream_read(G_INPUT_STREAM(base_input(stream)), buffer, count, cancellable,
                                 error);
  return counted_read(CXS_COUNTED_INPUT(stream), n, TRUE, error);
}

static gssize
counted_input_read_nonblocking(GPollableInputStream *stream, void *buffer, gsize count,
                               GError **error)
{
  gssize n = g_pollable_input_stream_read_nonblocking(base_input(stream), buffer, count, NULL,
                                                      error);
  return counted_read(CXS_COUNTED_INPUT(stream), n, FALSE, error);
}

static gboolean
counted_input_can_poll(GPollableInputStream *stream)
{
  return g_pollable_input_stream_can_poll(base_input(stream));
}

static gboolean
counted_input_is_readable(GPollableInputStream *stream)
{
  return g_pollable_input_stream_is_readable(base_input(stream));
}

/* A source of STREAM that fires when BASE (taken), its base stream's,
 * does. */
static GSource *
pollable_source(gpointer stream, GSource *base, GCancellable *cancellable)
{
  GSource *source = g_pollable_source_new_full(stream, base, cancellable);
  g_source_unref(base);
  return source;
}

static GSource *
counted_input_create_source(GPollableInputStream *stream, GCancellable *cancellable)
{
  return pollable_source(stream, g_pollable_input_stream_create_source(base_input(stream), NULL),
                         cancellable);
}

static void
cxs_counted_input_pollable_init(GPollableInputStreamInterface *iface)
{
  iface->can_poll = counted_input_can_poll;
  iface->is_readable = counted_input_is_readable;
  iface->create_source = counted_input_create_source;
  iface->read_nonblocking = counted_input_read_nonblocking;
}

G_DEFINE_TYPE_WITH_CODE(CxsCountedInput, cxs_counted_input, G_TYPE_FILTER_INPUT_STREAM,
                        G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_INPUT_STREAM,
                                              cxs_counted_input_pollable_init))

static void
cxs_counted_input_finalize(GObject *object)
{
  CxsCountedInput *in = CXS_COUNTED_INPUT(object);
  g_clear_weak_pointer(&in->ws);
  G_OBJECT_CLASS(cxs_counted_input_parent_class)->finalize(object);
}

static void
cxs_counted_input_class_init(CxsCountedInputClass *class)
{
  G_OBJECT_CLASS(class)->finalize = cxs_counted_input_finalize;
  G_INPUT_STREAM_CLASS(class)->read_fn = counted_input_read;
}

static void
cxs_counted_input_init(CxsCountedInput *in)
{
  (void)in;
}

#define CXS_TYPE_COUNTED_OUTPUT (cxs_counted_output_get_type())
G_DECLARE_FINAL_TYPE(CxsCountedOutput, cxs_counted_output, CXS, COUNTED_OUTPUT,
                     GFilterOutputStream)

struct _CxsCountedOutput {
  GFilterOutputStream parent;
  guint64 count;                /* bytes the socket took */
};

static GPollableOutputStream *
base_output(gpointer stream)
{
  return G_POLLABLE_OUTPUT_STREAM(g_filter_output_stream_get_base_stream(stream));
}

static gssize
counted_written(gpointer stream, gssize n)
{
  if (n > 0)
    CXS_COUNTED_OUTPUT(stream)->count += (guint64)n;
  return n;
}

static gssize
counted_output_write(GOutputStream *stream, const void *buffer, gsize count,
                     GCancellable *cancellable, GError **error)
{
  return counted_written(stream, g_output_stream_write(G_OUTPUT_STREAM(base_output(stream)),
                                                       buffer, count, cancellable, error));
}

static gssize
counted_output_write_nonblocking(GPollableOutputStream *stream, const void *buffer, gsize count,
                                 GError **error)
{
  return counted_written(stream, g_pollable_output_stream_write_nonblocking(
                                   base_output(stream), buffer, count, NULL, error));
}

static gboolean
counted_output_can_poll(GPollableOutputStream *stream)
{
  return g_pollable_output_stream_can_poll(base_output(stream));
}

static gboolean
counted_output_is_writable(GPollableOutputStream *stream)
{
  return g_pollable_output_stream_is_writable(base_output(stream));
}

static GSource *
counted_output_create_source(GPollableOutputStream *stream, GCancellable *cancellable)
{
  return pollable_source(
    stream, g_pollable_output_stream_create_source(base_output(stream), NULL), cancellable);
}

static void
cxs_counted_output_pollable_init(GPollableOutputStreamInterface *iface)
{
  iface->can_poll = counted_output_can_poll;
  iface->is_writable = counted_output_is_writable;
  iface->create_source = counted_output_create_source;
  iface->write_nonblocking = counted_output_write_nonblocking;
}

G_DEFINE_TYPE_WITH_CODE(CxsCountedOutput, cxs_counted_output, G_TYPE_FILTER_OUTPUT_STREAM,
                        G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_OUTPUT_STREAM,
                                              cxs_counted_output_pollable_init))

static void
cxs_counted_output_class_init(CxsCountedOutputClass *class)
{
  G_OUTPUT_STREAM_CLASS(class)->write_fn = counted_output_write;
}

static void
cxs_counted_output_init(CxsCountedOutput *out)
{
  (void)out;
}

/* ---- The connection: both, closed as the socket ----------------------------------------- */

#define CXS_TYPE_COUNTED_STREAM (cxs_counted_stream_get_type())
G_DECLARE_FINAL_TYPE(CxsCountedStream, cxs_counted_stream, CXS, COUNTED_STREAM, GIOStream)

struct _CxsCountedStream {
  GIOStream parent;
  GIOStream *socket;            /* the connection stolen from the HTTP server */
  CxsCountedInput *in;
  CxsCountedOutput *out;
  guint64 queued;               /* bytes handed to cxs_websocket_send() */
};

G_DEFINE_TYPE(CxsCountedStream, cxs_counted_stream, G_TYPE_IO_STREAM)

static GInputStream *
counted_stream_get_input(GIOStream *stream)
{
  return G_INPUT_STREAM(CXS_COUNTED_STREAM(stream)->in);
}

static GOutputStream *
counted_stream_get_output(GIOStream *stream)
{
  return G_OUTPUT_STREAM(CXS_COUNTED_STREAM(stream)->out);
}

/* The socket itself, at once, with nothing to flush: closing never waits
 * for a client that does not read. */
static gboolean
counted_stream_close(GIOStream *stream, GCancellable *cancellable, GError **error)
{
  GIOStream *socket = CXS_COUNTED_STREAM(stream)->socket;
  return socket == NULL || g_io_stream_close(socket, cancellable, error); /* NULL: disposed */
}

/* As GSocketConnection does, on the caller's thread: closing a socket
 * does not block. */
static void
counted_stream_close_async(GIOStream *stream, int priority, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer data)
{
  (void)priority;
  g_autoptr(GTask) task = g_task_new(stream, cancellable, callback, data);
  GError *error = NULL;
  if (counted_stream_close(stream, cancellable, &error))
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_error(task, error);
}

static gboolean
counted_stream_close_finish(GIOStream *stream, GAsyncResult *result, GError **error)
{
  (void)stream;
  return g_task_propagate_boolean(G_TASK(result), error);
}

static void
cxs_counted_stream_dispose(GObject *object)
{
  CxsCountedStream *stream = CXS_COUNTED_STREAM(object);
  g_clear_object(&stream->in);
  g_clear_object(&stream->out);
  /* Closed whatever happened: a connection freed unclosed must not leave
   * its socket open. */
  if (stream->socket != NULL)
    g_io_stream_close(stream->socket, NULL, NULL);
  g_clear_object(&stream->socket);
  G_OBJECT_CLASS(cxs_counted_stream_parent_class)->dispose(object);
}

static void
cxs_counted_stream_class_init(CxsCountedStreamClass *class)
{
  G_OBJECT_CLASS(class)->dispose = cxs_counted_stream_dispose;
  GIOStreamClass *io = G_IO_STREAM_CLASS(class);
  io->get_input_stream = counted_stream_get_input;
  io->get_output_stream = counted_stream_get_output;
  io->close_fn = counted_stream_close;
  io->close_async = counted_stream_close_async;
  io->close_finish = counted_stream_close_finish;
}

static void
cxs_counted_stream_init(CxsCountedStream *stream)
{
  (void)stream;
}

/* SOCKET with its bytes counted both ways: reads fail past MAX_MESSAGE
 * bytes since the last whole message (0: no limit), framing included
 * (SLACK bytes allowed for it). */
static CxsCountedStream *
counted_stream_new(GIOStream *socket, guint64 max_message)
{
  CxsCountedStream *stream = g_object_new(CXS_TYPE_COUNTED_STREAM, NULL);
  stream->socket = g_object_ref(socket);
  stream->in = g_object_new(CXS_TYPE_COUNTED_INPUT, "base-stream",
                            g_io_stream_get_input_stream(socket), "close-base-stream", FALSE,
                            NULL);
  stream->in->max_message = max_message;
  stream->out = g_object_new(CXS_TYPE_COUNTED_OUTPUT, "base-stream",
                             g_io_stream_get_output_stream(socket), "close-base-stream", FALSE,
                             NULL);
  return stream;
}

/* ---- A connection's counts -------------------------------------------------------- */

static const char STREAM_KEY[] = "cxs-websocket-stream";

/* A whole message arrived: the next one counts from nothing.  Connected
 * before the route's own handler, so this runs first. */
static void
on_message(SoupWebsocketConnection *ws, gint type, GBytes *message, gpointer data)
{
  (void)ws, (void)type, (void)message;
  CxsCountedStream *stream = data;
  stream->in->count = 0;
}

void
cxs_websocket_send(SoupWebsocketConnection *ws, SoupWebsocketDataType type, GBytes *message)
{
  CxsCountedStream *stream = g_object_get_data(G_OBJECT(ws), STREAM_KEY);
  if (stream != NULL)
    stream->queued += g_bytes_get_size(message);
  soup_websocket_connection_send_message(ws, type, message);
}

guint64
cxs_websocket_backlog(SoupWebsocketConnection *ws)
{
  CxsCountedStream *stream = g_object_get_data(G_OBJECT(ws), STREAM_KEY);
  /* Frame headers and control frames count out, not queued: at worst the
   * backlog reads a little low. */
  return stream != NULL && stream->queued > stream->out->count
           ? stream->queued - stream->out->count : 0;
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
  CxsCountedStream *stream = counted_stream_new(socket, u->max_message);
  SoupMessageHeaders *request = soup_server_message_get_request_headers(msg);
  SoupMessageHeaders *response = soup_server_message_get_response_headers(msg);
  SoupWebsocketConnection *ws = soup_websocket_connection_new(
    G_IO_STREAM(stream), uri, SOUP_WEBSOCKET_CONNECTION_SERVER,
    soup_message_headers_get_one(request, "Origin"),
    soup_message_headers_get_one(response, "Sec-WebSocket-Protocol"), NULL);
  g_object_set_data_full(G_OBJECT(ws), STREAM_KEY, stream, g_object_unref);
  g_set_weak_pointer(&stream->in->ws, ws);
  /* The counter is the bound, for one frame as for many: libsoup's own
   * (per frame) would close without saying why. */
  soup_websocket_connection_set_max_incoming_payload_size(ws, 0);
  g_signal_connect(ws, "message", G_CALLBACK(on_message), stream);
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
    /* As libsoup's own handshake answers: a client that asked to upgrade
     * must not send more on this connection. */
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Connection",
                                 "close");
    return FALSE;
  }
  soup_websocket_server_process_handshake(msg, NULL, protocols, NULL, NULL);
  upgrade *u = g_new0(upgrade, 1);
  *u = (upgrade){ max_message, opened, data };
  g_signal_connect_data(msg, "wrote-informational", G_CALLBACK(on_wrote_informational), u,
                        upgrade_free, 0);
  return TRUE;
}
