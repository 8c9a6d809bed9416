/* kernel: the server side of the Jupyter protocol: a cellexec session on
 * any backend answering a front end's requests, as a Jupyter kernel does.
 *
 * Split as xeus splits a kernel: this part (requests.c) is the
 * interpreter side, which knows the requests and the session but not how
 * messages travel; a transport (zmq_kernel.c: a connection file's five
 * ZeroMQ sockets) receives requests, hands them here and sends what this
 * part gives its sink.  `cellexec kernel` is the two together.
 *
 * Shell requests run one at a time, in the order they came, on the
 * kernel's own thread, so that control requests (interrupt, shutdown) are
 * answered while a cell runs.  Every request is framed by IOPub statuses
 * busy and idle, as the protocol requires.
 *
 * Internal to cellexec (names cxk_). */
#ifndef CX_KERNEL_KERNEL_H
#define CX_KERNEL_KERNEL_H

#include <cellexec/cellexec.h>

#include "jupyter_protocol/message.h"

G_BEGIN_DECLS

/* How the kernel's messages leave: the transport's side. */
typedef struct {
  /* Send MSG_TYPE with CONTENT (borrowed) on CHANNEL (JP_SHELL, JP_IOPUB,
   * ...) as a child of PARENT (borrowed: its header becomes the parent
   * header, its routing ids address a reply).  Called from the kernel's
   * thread, the backend's output threads and the transport's own (for
   * control requests), one call at a time per thread. */
  void (*send)(gpointer data, int channel, const jp_message *parent, const char *msg_type,
               JsonObject *content);
  /* A shutdown_request was answered: stop serving (RESTART: the front end
   * will start the kernel again, as jupyter_client's restart does). */
  void (*shutdown)(gpointer data, gboolean restart);
  gpointer data;
} cxk_sink;

typedef struct cxk_kernel cxk_kernel;

/* A kernel serving a new session of BACKEND (borrowed; it must outlive
 * the kernel), sending through SINK (copied); NULL with ERROR when the
 * session cannot be opened. */
cxk_kernel *cxk_kernel_new(cx_backend *backend, const cxk_sink *sink, GError **error);
/* Drop the requests queued, interrupt the cell running, wait for the
 * kernel's thread and close the session. */
void cxk_kernel_free(cxk_kernel *kernel);

/* Requests a kernel queues for its thread by default: past them, a
 * request is answered at once with an error (and not run), so that a front
 * end sending without waiting cannot fill the host's memory. */
#define CXK_DEFAULT_MAX_QUEUED 1000
/* Queue at most MAX requests (0: CXK_DEFAULT_MAX_QUEUED). */
void cxk_kernel_set_max_queued(cxk_kernel *kernel, guint max);
/* Queue REQUEST (taken), which came on the shell channel, for the
 * kernel's thread; past the bound, answer it with an error instead. */
void cxk_kernel_submit(cxk_kernel *kernel, jp_message *request);
/* MESSAGE (taken), which came on the stdin channel: an input_reply for
 * the cell waiting in input(), if one is. */
void cxk_kernel_stdin(cxk_kernel *kernel, jp_message *message);
/* REQUEST (taken), which came on the control channel: interrupt_request,
 * shutdown_request and kernel_info_request answered now, on the caller's
 * thread, which never waits for the session; the rest (what the session
 * answers: completion, inspection, ...) queued for the kernel's thread and
 * answered on control in turn. */
void cxk_kernel_control(cxk_kernel *kernel, jp_message *request);
/* Tell a front end that just subscribed to IOPub the kernel's state: a
 * status with no parent, "busy" while a shell request is being answered,
 * else "idle". */
void cxk_kernel_welcome(cxk_kernel *kernel);
/* Interrupt the cell running, if any (interrupt_mode "signal": SIGINT),
 * and its wait for an input_reply.  Any thread. */
void cxk_kernel_interrupt(cxk_kernel *kernel);

G_END_DECLS

#endif /* CX_KERNEL_KERNEL_H */
