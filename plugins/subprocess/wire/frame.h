/* plugins/subprocess/wire/frame.h: length-prefixed frames over a Unix socket.
 *
 * A frame is a 4-byte big-endian payload length, a 1-byte type, then the
 * payload.  A frame may carry one file descriptor (SCM_RIGHTS).  Used by
 * both ends of the worker protocol (docs/worker-protocol.md): the host
 * reads with a non-blocking reader and never trusts what it gets; a frame
 * that is too long or cut short is an error for that channel only.
 */
#ifndef CX__WIRE_FRAME_H
#define CX__WIRE_FRAME_H

#include <glib.h>
#include <sys/uio.h>

G_BEGIN_DECLS

#define CX__WIRE_HEADER_SIZE 5
/* Larger frames are malformed: no message of the protocol needs more. */
#define CX__WIRE_MAX_PAYLOAD (64u * 1024 * 1024)

/* Send one frame whose payload is the N_PARTS buffers PARTS, joined.
 * FD_TO_PASS (>= 0) travels with it.  Blocks until written; never raises
 * SIGPIPE.  FALSE with ERROR when the peer is gone. */
gboolean cx__wire_sendv(int socket, guint8 type, const struct iovec *parts, int n_parts,
                        int fd_to_pass, GError **error);

/* Shorthand for a payload in one buffer, without a descriptor. */
gboolean cx__wire_send(int socket, guint8 type, const void *payload, gsize len, GError **error);

typedef struct cx__wire_reader cx__wire_reader;

typedef enum {
  CX__WIRE_READ_DATA,   /* bytes arrived (maybe no whole frame yet) */
  CX__WIRE_READ_AGAIN,  /* nothing to read now (non-blocking) */
  CX__WIRE_READ_EOF,    /* the peer closed the channel */
  CX__WIRE_READ_ERROR,  /* ERROR is set */
} cx__wire_read_status;

/* A reader of frames from SOCKET (borrowed: the caller closes it). */
cx__wire_reader *cx__wire_reader_new(int socket);
void cx__wire_reader_free(cx__wire_reader *reader);

/* One recvmsg(): BLOCKING or not.  Descriptors received are queued. */
cx__wire_read_status cx__wire_reader_fill(cx__wire_reader *reader, gboolean blocking,
                                          GError **error);

/* The next complete frame: TRUE with *TYPE, *PAYLOAD (valid until the next
 * call on READER) and *LEN; FALSE with ERROR unset when no whole frame is
 * buffered; FALSE with ERROR set when the stream is malformed. */
gboolean cx__wire_reader_next(cx__wire_reader *reader, guint8 *type, const guint8 **payload,
                              gsize *len, GError **error);

/* Bytes of an incomplete frame buffered: nonzero at EOF means the peer
 * died in the middle of a frame. */
gsize cx__wire_reader_pending(const cx__wire_reader *reader);

/* The oldest descriptor received and not yet taken, or -1.  The caller
 * owns it. */
int cx__wire_reader_take_fd(cx__wire_reader *reader);

/* Read until a frame arrives or DEADLINE (g_get_monotonic_time(); <= 0:
 * none) passes: TRUE with the frame; FALSE with ERROR unset at a clean EOF;
 * FALSE with ERROR set otherwise, and *TIMED_OUT (may be NULL) TRUE when
 * the deadline passed. */
gboolean cx__wire_read_within(cx__wire_reader *reader, gint64 deadline, guint8 *type,
                              const guint8 **payload, gsize *len, gboolean *timed_out,
                              GError **error);

/* Read frames until one arrives, blocking: TRUE with the frame, FALSE
 * with ERROR unset at a clean EOF, FALSE with ERROR set otherwise. */
gboolean cx__wire_read_blocking(cx__wire_reader *reader, guint8 *type, const guint8 **payload,
                                gsize *len, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx__wire_reader, cx__wire_reader_free)

G_END_DECLS

#endif /* CX__WIRE_FRAME_H */
