/* jupyter_protocol: multipart messages on ZeroMQ sockets, as frames
 * (GBytes), for jupyter_protocol/message.h's encode and decode. */
#ifndef CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H
#define CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H

#include <glib.h>

G_BEGIN_DECLS

/* The largest message taken from a peer: its frames together, and how
 * many there are. */
typedef struct {
  guint64 max_bytes;
  guint64 max_frames;
} jp_zmq_bounds;

/* Send FRAMES (GBytes) on SOCKET as one multipart message; FALSE with
 * errno (zmq_errno()) when a part could not be sent. */
gboolean jp_zmq_send_frames(void *socket, GPtrArray *frames);
/* All frames of the next message on SOCKET (new), or NULL when none came
 * (FLAGS: 0 or ZMQ_DONTWAIT) or the socket failed (zmq_errno() says why:
 * EAGAIN, EINTR, ETERM). */
GPtrArray *jp_zmq_recv_frames(void *socket, int flags);
/* The same within BOUNDS: a message with more frames or bytes is read
 * frame by frame to its end, the frames held freed once it passes a bound
 * and each one after thrown away as it comes, and NULL is returned with
 * *DROPPED (may be NULL) set, else cleared.  ZeroMQ itself delivers a
 * message only once all of it came, holding it meanwhile: this bounds what
 * the caller holds, not what ZeroMQ does. */
GPtrArray *jp_zmq_recv_frames_within(void *socket, int flags, const jp_zmq_bounds *bounds,
                                     gboolean *dropped);
/* Set SOCKET's ZMQ_MAXMSGSIZE (a bound on one frame) to BOUNDS's bytes:
 * ZeroMQ disconnects a peer that sends a frame over it before reading it.
 * Before the socket binds or connects. */
void jp_zmq_set_max_frame_size(void *socket, const jp_zmq_bounds *bounds);

G_END_DECLS

#endif /* CX_JUPYTER_PROTOCOL_ZMQ_FRAMES_H */
