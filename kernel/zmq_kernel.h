/* kernel: the ZeroMQ transport of a kernel (kernel.h): the five sockets a
 * connection file names, bound, and a kernel served on them until a
 * shutdown_request or a signal ends it. */
#ifndef CX_KERNEL_ZMQ_KERNEL_H
#define CX_KERNEL_ZMQ_KERNEL_H

#include <cellexec/cellexec.h>

#include "jupyter_protocol/zmq_frames.h"

G_BEGIN_DECLS

/* What opens the kernel's backend: the backend (the caller keeps it until
 * cxk_zmq_serve() returns), or NULL with ERROR (one line). */
typedef cx_backend *(*cxk_backend_opener)(gpointer data, GError **error);

/* Serve a kernel on the sockets CONNECTION_FILE names, with its key and
 * signature scheme, taking no message over BOUNDS (copied) from a peer on
 * any of them, of the backend OPEN_BACKEND(DATA) opens once they are
 * bound: a front end connects as soon as it has launched the kernel, and
 * a socket not yet bound would make it retry only after ZeroMQ's
 * reconnect interval.  SIGNAL_FD (or -1) is a pipe the caller's signal
 * handlers write to: a byte 'i' interrupts the cell running (SIGINT,
 * interrupt_mode "signal"), 't' ends the kernel (SIGTERM).  Returns when
 * the kernel ended; FALSE with ERROR (one line) when it could not start
 * (a bad connection file, a port in use, a backend that did not open). */
gboolean cxk_zmq_serve(const char *connection_file, const jp_zmq_bounds *bounds,
                       cxk_backend_opener open_backend, gpointer data, int signal_fd,
                       GError **error);

G_END_DECLS

#endif /* CX_KERNEL_ZMQ_KERNEL_H */
