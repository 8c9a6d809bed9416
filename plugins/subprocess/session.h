/* plugins/subprocess/session.h: a session of the subprocess backend, as
 * the files of the plugin that drive its channel share it: session.c (its
 * process's life, cells) and executor_host.c (executor operations). */
#ifndef CX__SP_SESSION_H
#define CX__SP_SESSION_H

#include <cellexec/plugin.h>

#include "plugins/subprocess/wire/frame.h"
#include "plugins/subprocess/worker_process.h"

G_BEGIN_DECLS

typedef struct subprocess_backend subprocess_backend;

typedef struct {
  subprocess_backend *backend;
  /* Recursive: a host function called during an executor operation may
   * call back into the same session from the same thread. */
  GRecMutex lock;
  cx__sp_worker_process *own_server; /* spawn mode: the session's own worker */
  int channel;
  cx__wire_reader *reader;
  gint pid;                  /* the session's process */
  gint busy;                 /* a cell runs: interrupts go through */
  int interrupted;           /* an eventfd, written by an interrupt: the cell's
                              * call kills it after interrupt-grace */
  gboolean dead;             /* the process ended: restart on the next call */
  gboolean restart_unreported; /* revived since its last cell: the next result says so */
  guint generation;          /* counts processes: environments remember theirs */
  guint cells_run;           /* history cells sent to the current process */
  guint executor_depth;      /* executor requests waiting for their reply */
  GHashTable *host_functions; /* function id -> executor_host.c's record */
  guint last_function_id;
} subprocess_session;

/* With SESSION's lock held: make sure it has a live process, starting a new
 * one (empty namespace, new generation) if it died.  A new one sets
 * restart_unreported, so that the next cell's result tells the state was
 * lost whichever call revived it (a completion between a crash and that
 * cell, say). */
gboolean cx__sp_session_revive(subprocess_session *session, GError **error);

/* The backend vtable's session methods (session.c). */
cx_session_instance *cx__sp_session_open(cx_backend_instance *instance, GError **error);
cx_result *cx__sp_session_run_cell(cx_session_instance *instance, const char *code,
                                   const cx_run_options *run, GError **error);
void cx__sp_session_close(cx_session_instance *instance);
/* SIGINT to the session's process while it runs a cell; killed if still
 * running interrupt-grace later. */
void cx__sp_session_interrupt(subprocess_session *session);

G_END_DECLS

#endif /* CX__SP_SESSION_H */
