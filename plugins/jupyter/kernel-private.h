/* plugins/jupyter: what kernel.c, message.c, execute.c, outputs.c, transport.c and gateway.c
 * share. */
#ifndef CX_JUPYTER_KERNEL_PRIVATE_H
#define CX_JUPYTER_KERNEL_PRIVATE_H

#include "jupyter_protocol/message.h"
#include "lib/output_buffer.h"
#include "plugins/jupyter/kernel.h"

G_BEGIN_DECLS

struct jk_kernel {
  void *zmq;
  void *sockets[JP_N_CHANNELS];
  int ports[JP_N_CHANNELS];
  char *ip;
  char *key;                 /* HMAC key; "" means unsigned */
  char *session;             /* our session id */
  char *connection_file;
  char *spec_name;
  int send_timeout_ms;       /* ZMQ_SNDTIMEO: a send never waits for ever */
  jp_counters *counters;
  JsonObject *info;          /* kernel_info_reply content */
  GQueue *recent;            /* msg_ids we sent lately (char *) */
  GMutex recent_lock;

  pid_t pid;                 /* 0: attached */
  int pidfd;                 /* readable once the process ended; -1 */
  gboolean signal_interrupt;
  GMutex process_lock;       /* reaped, kill() and waitpid() */
  gboolean reaped;
  gboolean dead;
  char *died_how;
  GMutex control_lock;       /* the control socket */
  /* Till the stdin socket's connection is made: a PAIR socket that hears
   * of it (zmq_socket_monitor).  NULL once it is made. */
  void *stdin_monitor;
  const struct jk_transport *transport; /* how messages travel; NULL: the sockets above */
  struct jk_gateway_kernel *gateway; /* gateway mode's state (gateway.c): no sockets of ours */
};

/* How a connection's requests travel: the kernel's own ZeroMQ sockets
 * (jk_zmq_transport, execute.c and kernel.c) or a gateway's WebSocket and
 * REST API (gateway.c).  transport.c dispatches jk_kernel_execute(),
 * jk_kernel_stdin_exchange() and jk_kernel_interrupt() to it; kill and
 * close (may be NULL) add to what jk_kernel_kill() and jk_kernel_free() do
 * for every kernel. */
typedef struct jk_transport {
  jk_exec_outcome (*execute)(jk_kernel *kernel, jk_exec *exec);
  char *(*stdin_exchange)(jk_kernel *kernel, const char *msg_id, const char *value,
                          double timeout, GError **error);
  gboolean (*interrupt)(jk_kernel *kernel, GError **error);
  void (*kill)(jk_kernel *kernel);
  void (*close)(jk_kernel *kernel);
} jk_transport;
extern const jk_transport jk_zmq_transport;
/* The ZeroMQ transport's parts: execute.c's loop and input_reply, and
 * kernel.c's interrupt (a signal, or interrupt_request on control). */
jk_exec_outcome jk_zmq_execute(jk_kernel *kernel, jk_exec *exec);
char *jk_zmq_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value,
                            double timeout, GError **error);
gboolean jk_zmq_interrupt(jk_kernel *kernel, GError **error);

/* A new header for MSG_TYPE in our session; *MSG_ID gets its id, which is
 * remembered as ours. */
JsonObject *jk_message_header(jk_kernel *kernel, const char *msg_type, char **msg_id);
/* Sign and send MSG_TYPE with CONTENT (borrowed) on CHANNEL; *MSG_ID (may
 * be NULL) gets its id, which is remembered as ours. */
gboolean jk_message_send(jk_kernel *kernel, int channel, const char *msg_type,
                         JsonObject *content, char **msg_id, GError **error);
/* Receive one message from CHANNEL, verified.  FLAGS: 0 or ZMQ_DONTWAIT. */
jp_recv_status jk_message_recv(jk_kernel *kernel, int channel, int flags, jp_message **message);
/* Note MSG_ID as one of ours. */
void jk_kernel_remember(jk_kernel *kernel, const char *msg_id);
/* TRUE when MSG_ID is one of the last requests sent on this connection. */
gboolean jk_kernel_sent_recently(jk_kernel *kernel, const char *msg_id);
/* Wait until the stdin socket is connected, TIMEOUT seconds at most: the
 * kernel's ROUTER drops an input_request to a peer it has not met yet,
 * and the cell would then wait for an answer for ever.  FALSE when it did
 * not connect in time. */
gboolean jk_kernel_stdin_ready(jk_kernel *kernel, double timeout);
/* Replace the heartbeat socket (a REQ that lost its reply is stuck). */
void jk_kernel_reopen_heartbeat(jk_kernel *kernel);

/* One execute_request's collected state (execute.c), shared with the
 * gateway's loop. */
typedef struct {
  jk_exec *exec;
  char *ename, *evalue, *traceback;
  /* The error message's traceback as the kernel sent it (IPython's, with
   * colour codes), for the error output; NULL for the plain traceback
   * (past output-limit, or not a list of strings). */
  char **traceback_lines;
  gboolean error_message_came; /* FALSE: the error is only in the reply */
  gint64 execution_count; /* from execute_input; 0: none came */
  JsonArray *dropped;     /* what could not be kept of its outputs; NULL: nothing */
  /* output-limit: [1] stdout, [2] stderr as kept (their heads are in the
   * result already, their tails go in at the end); the parts of outputs
   * cut; the stream that passed the stop threshold ("stdout", "stderr"),
   * NULL while none did. */
  cx__output_buffer streams[3];
  JsonArray *cuts;
  const char *over_limit;
  gboolean stopped, for_output; /* stopping began; because of over_limit */
  /* Why a message of the request could not be read (too large), as the
   * cell's OutputLimitExceeded says it; NULL while all could. */
  char *unreadable;
} jk_exec_state;
/* Begin one request's state (jk_exec_finish ends it). */
void jk_exec_begin(jk_exec_state *state, jk_exec *exec);
/* What to do about a request running on: JK_STOP_NONE, or, the first time
 * it must stop (NOW past DEADLINE, or a stream past output-limit's stop
 * threshold, the reason kept for the result), JK_STOP_INTERRUPT for a cell
 * (the caller interrupts, and kills after the grace) and JK_STOP_GIVE_UP
 * for any other request: nothing of the user's runs, the kernel only
 * failed to answer (ipykernel never replies to a request it cannot read),
 * so the caller ends the wait and keeps the kernel and its state. */
typedef enum { JK_STOP_NONE, JK_STOP_INTERRUPT, JK_STOP_GIVE_UP } jk_stop;
jk_stop jk_exec_stop_due(jk_exec_state *state, gint64 now, gint64 deadline);
/* The request's content (new), and whether a shell message of MSG_TYPE
 * is its reply. */
JsonObject *jk_exec_request_content(const jk_exec *exec);
gboolean jk_exec_is_reply(const jk_exec *exec, const char *msg_type);
/* The idle status may trail the execute_reply; not for ever.
 * jk_exec_idle_overdue() is TRUE once SINCE_REPLY (µs) is past
 * JK_IDLE_AFTER_REPLY_US and what had come is all read (DRAINED: the
 * status may be behind it in the queue), or past 15 times that whatever
 * comes (a thread of the cell's printing for ever).  Then
 * jk_exec_idle_lost() notes that output sent later is missing (a kernel
 * still sending a large output when its flush timed out). */
#define JK_IDLE_AFTER_REPLY_US (2 * G_USEC_PER_SEC)
gboolean jk_exec_idle_overdue(gint64 since_reply, gboolean drained);
void jk_exec_idle_lost(jk_exec_state *state);
/* The prompt of M (borrowed) when it is an input_request of request
 * MSG_ID, else NULL. */
const char *jk_input_prompt(const jp_message *m, const char *msg_id);
/* The input_reply content for M when it is this request's input_request
 * (new), else NULL. */
JsonObject *jk_exec_input_reply(jk_exec *exec, const char *msg_id, jp_message *m);
/* One IOPub message of this request; TRUE when it says idle. */
gboolean jk_exec_handle_iopub(jk_exec_state *state, jp_message *m);
/* A message of the request whose content was too large to read (M's
 * too_large): the cell stops as it does past output-limit, its error
 * saying why (the first such message's reason). */
void jk_exec_unreadable(jk_exec_state *state, const jp_message *m);
void jk_exec_finish(jk_exec_state *state, jk_exec_outcome outcome);

/* A connection with nothing open yet, on the ZeroMQ transport until its
 * creator sets another (gateway.c). */
jk_kernel *jk_kernel_new(void *zmq, jp_counters *counters);

G_END_DECLS

#endif
