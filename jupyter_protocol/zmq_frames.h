/* jupyter_protocol: multipart messages on ZeroMQ sockets, as frames
 * (GBytes), for jupyter_protocol/message.h's encode and decode. */
#ifndef CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H
#define CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H

#include <glib.h>

G_BEGIN_DECLS

/* Send FRAMES (GBytes) on SOCKET as one multipart message; FALSE with
 * errno (zmq_errno()) when a part could not be sent. */
gboolean jp_zmq_send_frames(void *socket, GPtrArray *frames);
/* All frames of the next message on SOCKET (new), or NULL when none came
 * (FLAGS: 0 or ZMQ_DONTWAIT) or the socket failed. */
GPtrArray *jp_zmq_recv_frames(void *socket, int flags);

G_END_DECLS

#endif /* CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H */
