/* plugins/jupyter: what the backend's files share. */
#ifndef CX_JUPYTER_H
#define CX_JUPYTER_H

#include <cellexec/plugin.h>

#include "plugins/jupyter/kernel.h"

G_BEGIN_DECLS

typedef struct {
  void *zmq;                 /* one ZeroMQ context for all the kernels */
  jk_spec *spec;             /* launch mode */
  char *connection_file;     /* attach mode */
  char *gateway_url, *token; /* gateway mode */
  gboolean nodelay;
  char *kernel_name;
  char *cwd;
  gint64 pool_size;
  double grace, start_timeout, timeout;
  guint64 output_limit;      /* output-limit, per stream and per part of an output */
  jp_counters counters;

  GMutex lock;               /* the fields below */
  GCond cond;                /* a kernel started, or failed to */
  GQueue ready;              /* warm kernels (jk_kernel *) */
  guint starting;
  guint kernels_started;
  GError *start_error;
  gboolean stopping;
  gint cancel_starts;   /* atomic: set at destroy, kernels still starting are killed */
  GThreadPool *starters;     /* start kernels, pool_size at a time */
  GThreadPool *discarder;    /* stop used kernels */
  GPtrArray *running;        /* kernels running a cell, for interrupt */
  jk_kernel *attached;       /* attach mode: the one kernel */
  GMutex attached_lock;      /* one cell at a time on it */
} jupyter_backend;

typedef struct {
  jupyter_backend *backend;
  GRecMutex lock;            /* one call at a time */
  int depth;                 /* calls in progress (a host function's call back) */
  GHashTable *host_functions; /* id -> its host function */
  jk_kernel *current_kernel; /* running an executor operation */
  const char *call_msg_id;   /* the request whose host function runs */
  jk_kernel *kernel;         /* launch mode: the session's own */
  gboolean restart_unreported; /* a new kernel since the last cell: its result says so */
  gboolean busy;
  gint next_env;
} jupyter_session;

/* pool.c: a warm kernel for one cell or one session (a replacement starts
 * at once); done with one, it goes in the background. */
jk_kernel *jupyter_pool_take(jupyter_backend *backend, GError **error);
void jupyter_discard(jupyter_backend *backend, jk_kernel *kernel);
/* The pool's threads: one that stops used kernels; with WARM, pool-size
 * that start kernels, filling the pool from now on.  Closed at destroy:
 * kernels still starting are stopped, the warm ones too. */
void jupyter_pool_open(jupyter_backend *backend, gboolean warm);
void jupyter_pool_close(jupyter_backend *backend);

/* run.c.  A Python string literal for TEXT. */
char *jupyter_py_literal(const char *text);
/* Run CODE on KERNEL with RUN's cwd and env applied first.  NULL with
 * CX_ERROR_OPTION when the kernel cannot apply them (no such directory). */
cx_result *jupyter_run_on(jupyter_backend *backend, jk_kernel *kernel, const char *code,
                          const cx_run_options *run, gboolean *kernel_lost, GError **error);
/* Attach mode: the kernel, connected again if it was lost (*REATTACHED). */
jk_kernel *jupyter_attached_kernel(jupyter_backend *backend, gboolean *reattached, GError **error);
cx_result *jupyter_run_attached(jupyter_backend *backend, const char *code,
                                const cx_run_options *run, gboolean *restarted, GError **error);
cx_result *jupyter_run_stateless(jupyter_backend *backend, const char *code,
                                 const cx_run_options *run, GError **error);

cx_session_instance *jupyter_session_open(cx_backend_instance *backend, GError **error);
cx_result *jupyter_session_run_cell(cx_session_instance *session, const char *code,
                                    const cx_run_options *run, GError **error);
void jupyter_session_close(cx_session_instance *session);
gboolean jupyter_session_interrupt(cx_session_instance *session, GError **error);
JsonObject *jupyter_session_request(cx_session_instance *session, const char *type,
                                    JsonObject *content, GError **error);

extern const cx_executor_vtable jupyter_executor_vtable;

G_END_DECLS

#endif
