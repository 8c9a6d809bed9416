/* plugins/jupyter: one connection to one Jupyter kernel (messaging
 * protocol 5.3 over ZeroMQ): launching it from a kernelspec, attaching to
 * it by connection file, signed messages, and running one execute_request.
 * Internal to the plugin (names jk_). */
#ifndef CX_JUPYTER_KERNEL_H
#define CX_JUPYTER_KERNEL_H

#include <sys/types.h>
#include <cellexec/plugin.h>

#include "jupyter_protocol/message.h"
#include "lib/peer_json.h"

G_BEGIN_DECLS

/* How to launch a kernel: the kernelspec, resolved. */
typedef struct {
  char *name;            /* the kernelspec's name, e.g. python3 */
  char *resource_dir;    /* its directory, or NULL for the built-in python3 */
  char **argv;           /* with {connection_file} still in it */
  char **env;            /* the kernelspec's "env", KEY=VALUE; may be NULL */
  gboolean signal_interrupt; /* interrupt_mode signal (the default) */
  gboolean memory_history;   /* an ipykernel's history in memory, not SQLite */
} jk_spec;

jk_spec *jk_spec_find(const char *name, GError **error);
void jk_spec_free(jk_spec *spec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(jk_spec, jk_spec_free)

typedef struct jk_kernel jk_kernel;

/* Launch a kernel from SPEC in CWD (may be NULL) and wait until it answers
 * kernel_info_request, START_TIMEOUT seconds at most.  ZMQ is a context
 * of the caller's, COUNTERS outlive the kernel.  Once *CANCEL (may be
 * NULL) is nonzero, the kernel is killed and the launch fails at once. */
jk_kernel *jk_kernel_launch(void *zmq, const jk_spec *spec, const char *cwd,
                            double start_timeout, const gint *cancel, jp_counters *counters,
                            GError **error);
/* Connect to the running kernel CONNECTION_FILE describes. */
jk_kernel *jk_kernel_attach(void *zmq, const char *connection_file, double start_timeout,
                            jp_counters *counters, GError **error);
/* Gateway mode: check that the Jupyter Server at URL answers and takes
 * TOKEN; start a kernel NAME there and connect to its channels over a
 * WebSocket. */
gboolean jk_gateway_check(const char *url, const char *token, double timeout, GError **error);
jk_kernel *jk_kernel_gateway_start(const char *url, const char *token, const char *name,
                                   gboolean nodelay, double start_timeout, jp_counters *counters,
                                   GError **error);
/* Disconnect; a kernel this backend launched is killed (its process group)
 * and reaped, and its connection file removed. */
void jk_kernel_free(jk_kernel *kernel);

gboolean jk_kernel_launched(const jk_kernel *kernel);
pid_t jk_kernel_pid(const jk_kernel *kernel);
const char *jk_kernel_connection_file(const jk_kernel *kernel);
/* FALSE once the kernel is known to be dead (its process ended; for an
 * attached kernel, the heartbeat went unanswered). */
gboolean jk_kernel_alive(jk_kernel *kernel);
/* Interrupt the cell running: SIGINT for a launched kernel of
 * interrupt_mode signal, else interrupt_request on the control channel.
 * Any thread. */
gboolean jk_kernel_interrupt(jk_kernel *kernel, GError **error);
/* Kill a launched kernel now (a cell that did not end after its
 * interrupt).  No effect on an attached one. */
void jk_kernel_kill(jk_kernel *kernel);
/* The kernel's kernel_info_reply content (borrowed). */
JsonObject *jk_kernel_info(const jk_kernel *kernel);

/* ---- execute_request ---------------------------------------------------------- */

typedef enum {
  JK_EXEC_DONE,      /* execute_reply and status idle arrived */
  JK_EXEC_TIMEOUT,   /* the deadline passed: interrupted (or killed after the grace) */
  JK_EXEC_DIED,      /* the kernel died */
  JK_EXEC_SEND_FAILED,
} jk_exec_outcome;

typedef struct {
  /* Another shell request in execute_request's place (complete_request,
   * inspect_request, ...): its msg_type and content (borrowed), and the
   * reply waited for is its _reply; past TIMEOUT it is given up, the kernel
   * neither interrupted nor killed.  NULL: an execute_request made of the
   * fields below. */
  const char *msg_type;
  JsonObject *content;
  const char *code;
  gboolean silent;
  gboolean store_history;
  JsonObject *user_expressions; /* may be NULL */
  cx_result *result;            /* outputs go here; may be NULL */
  const cx_run_options *run;    /* MIME filter; may be NULL */
  double timeout;               /* seconds, 0: none */
  guint64 output_limit;         /* output-limit (lib/output_limit.h), 0: none */
  double grace;                 /* seconds between interrupt and kill */
  /* With ON_INPUT set, allow_stdin is true and each input_request of the
   * request is answered with what ON_INPUT returns for its prompt and
   * password flag (a new string; NULL: an empty line). */
  char *(*on_input)(const char *prompt, gboolean password, const char *msg_id, gpointer data);
  gpointer input_data;
  /* out */
  JsonObject *reply;            /* the reply's content (owned), or NULL */
  gboolean killed;              /* the kernel was killed after the grace */
  gboolean abandoned;           /* not ours to kill: given up after the grace */
  char *died_how;               /* for JK_EXEC_DIED, e.g. "killed by signal 9" */
} jk_exec;

jk_exec_outcome jk_kernel_execute(jk_kernel *kernel, jk_exec *exec);
/* EXEC's msg_type: "execute_request" unless it says another. */
const char *jk_exec_request_type(const jk_exec *exec);
/* From within ON_INPUT: answer the input_request of request MSG_ID with
 * VALUE and wait (TIMEOUT seconds, 0: for ever) for the kernel's next
 * input_request of that request; its prompt (new), or NULL with ERROR. */
char *jk_kernel_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value,
                               double timeout, GError **error);
void jk_exec_clear(jk_exec *exec);

/* Strip ANSI escape sequences (tracebacks of IPython are coloured). */
char *jk_strip_ansi(const char *text);

G_END_DECLS

#endif /* CX_JUPYTER_KERNEL_H */
