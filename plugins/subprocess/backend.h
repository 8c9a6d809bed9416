/* plugins/subprocess/backend.h: the subprocess backend as its files share
 * it: its settings (options.c), the fork server and the requests sent to
 * it (requests.c), sessions (session.c), and the ABI glue (subprocess.c). */
#ifndef CX__SP_BACKEND_H
#define CX__SP_BACKEND_H

#include <cellexec/plugin.h>

#include "plugins/subprocess/cell_call.h"
#include "plugins/subprocess/session.h"
#include "plugins/subprocess/worker_process.h"

G_BEGIN_DECLS

struct subprocess_backend {
  char *worker_path;
  gboolean isolated;
  char *preload;          /* module names, comma-separated */
  gboolean spawn_mode;
  char **environment;        /* the worker's */
  char *cwd;                 /* the sandbox's view; a cell's comes in its RUN */
  gboolean cwd_per_session;  /* each process its own directory under cwd (the worker's) */
  char **worker_arguments;   /* more of the worker's command line (cwd-per-session) */
  JsonObject *limits;        /* the "limits" of open requests (only read, never shared) */
  char *sandbox;             /* isolation = sandbox: its JSON for the worker; else NULL */
  char **view;               /* isolation = sandbox: the directories cells see (cwd, lists) */
  guint64 output_limit;
  double interrupt_grace;    /* seconds; 0: an interrupted session cell is never killed */

  GMutex lock;               /* the fields below */
  cx__sp_worker_process *server; /* fork server mode: the shared server */
  GPtrArray *running;        /* gint * pid slots of stateless cells running */
};

/* ---- options.c ----------------------------------------------------------- */

extern const cx_option_spec cx__sp_options[];
/* BACKEND's settings (a new backend, zeroed but for its lock and running
 * list) from OPTIONS, each checked; FALSE with CX_ERROR_OPTION or
 * CX_ERROR_BACKEND (no worker program) saying which is wrong. */
gboolean cx__sp_configure(subprocess_backend *backend, const cx_options *options, GError **error);

/* ---- requests.c ---------------------------------------------------------- */

/* A worker process for BACKEND: the fork server, or in spawn mode a
 * cell's or a session's own. */
cx__sp_worker_process *cx__sp_start_worker(subprocess_backend *backend, GError **error);

/* The server a cell or a session was sent to, while it waits to start. */
typedef struct {
  subprocess_backend *backend;
  cx__sp_worker_process *own_server; /* spawn mode */
  pid_t pid;                         /* fork server mode: the shared server then */
} cx__sp_server_watch;
/* TRUE while the server WATCH (a cx__sp_server_watch) names still runs. */
gboolean cx__sp_server_alive(gpointer watch);
/* A channel to a process forked for REQUEST (consumed): by the shared
 * server (restarted once if it died), or in spawn mode by a new worker
 * put in *OWN_SERVER.  *WATCH then names that server.  -1 on failure. */
int cx__sp_open_channel(subprocess_backend *backend, cx__sp_worker_process **own_server,
                        JsonObject *request, cx__sp_server_watch *watch, GError **error);

/* A cwd asked for one call must lie in the sandbox's view, which was made
 * when the worker started: FALSE, saying what to set, when it does not. */
gboolean cx__sp_cwd_in_view(subprocess_backend *backend, const cx_run_options *run,
                            GError **error);
/* The "cell" of a RUN: CODE with RUN's cwd, env and MIME types. */
JsonObject *cx__sp_cell_request(subprocess_backend *backend, const char *code,
                                const cx_run_options *run);
/* FALSE, before anything is sent, for a REQUEST too long for a frame. */
gboolean cx__sp_request_fits(JsonObject *request, GError **error);
/* A RUN opening a channel of KIND ("cell", "session"), with the limits. */
JsonObject *cx__sp_open_request(subprocess_backend *backend, const char *kind);
cx__sp_call_params cx__sp_call_params_for(subprocess_backend *backend, const cx_run_options *run,
                                          gboolean one_shot);

G_END_DECLS

#endif /* CX__SP_BACKEND_H */
