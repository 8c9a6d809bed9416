/* kernel: the ZeroMQ transport of a kernel (kernel.h): the five sockets a
 * connection file names, bound, and a kernel served on them until a
 * shutdown_request or a signal ends it. */
#ifndef CX_KERNEL_ZMQ_KERNEL_H
#define CX_KERNEL_ZMQ_KERNEL_H

#include <cellexec/cellexec.h>

G_BEGIN_DECLS

/* Serve a kernel of BACKEND (borrowed) on the sockets CONNECTION_FILE
 * names, with its key and signature scheme.  SIGNAL_FD (or -1) is a pipe
 * the caller's signal handlers write to: a byte 'i' interrupts the cell
 * running (SIGINT, interrupt_mode "signal"), 't' ends the kernel
 * (SIGTERM).  Returns when the kernel ended; FALSE with ERROR (one line)
 * when it could not start (a bad connection file, a port in use). */
gboolean cxk_zmq_serve(const char *connection_file, cx_backend *backend, int signal_fd,
                       GError **error);

G_END_DECLS

#endif /* CX_KERNEL_ZMQ_KERNEL_H */
