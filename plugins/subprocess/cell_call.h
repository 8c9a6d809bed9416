/* plugins/subprocess/cell_call.h: the host's side of one cell: read what
 * the cell's process sends over its channel, enforce the deadline and the
 * output limit, and make the result. */
#ifndef CX__SP_CELL_CALL_H
#define CX__SP_CELL_CALL_H

#include <cellexec/options.h>
#include <cellexec/result.h>

#include "plugins/subprocess/wire/frame.h"

G_BEGIN_DECLS

/* How often the fork server is checked (a cell may have stopped it) while
 * a cell or a session waits for its process to start. */
#define CX__SP_SERVER_CHECK_US (100 * 1000)

typedef struct {
  double timeout;          /* seconds; <= 0: none */
  guint64 output_limit;    /* bytes kept per stream; 0: all */
  /* The process serves this one cell and then ends (stateless cells); a
   * session's process goes on serving. */
  gboolean one_shot;
  /* While the process has not started: FALSE once the fork server that
   * should start it is gone (dead, or stopped and killed).  May be NULL. */
  gboolean (*server_alive)(gpointer data);
  gpointer server_data;
  /* Readable when the cell was interrupted (-1: never): a cell still
   * running INTERRUPT_GRACE seconds later is killed, process group and
   * all (<= 0: never), as one that ignores SIGINT would hold its caller
   * for ever.  Sessions only: a stateless cell's caller has its timeout. */
  int wake_fd;
  double interrupt_grace;
  /* The call's run options: their output callback, if any, gets the
   * cell's outputs as the frames carrying them arrive. */
  const cx_run_options *run;
  /* The cell's execution_count when its process cannot give one (it died
   * first): 1 for a stateless cell, its number in the session's process. */
  guint cell_number;
} cx__sp_call_params;

typedef enum {
  /* the channel closed (or the server went) before the process started */
  CX__SP_CALL_NEVER_STARTED,
  CX__SP_CALL_DONE,          /* a result came, the process lives on (sessions) */
  CX__SP_CALL_PROCESS_GONE,  /* the process ended, was killed, or broke the protocol */
} cx__sp_call_outcome;

/* What an interrupt leaves in a *PID slot whose process has not started:
 * the process gets SIGINT as soon as it has. */
#define CX__SP_INTERRUPT_PENDING (-1)

/* Wait for the cell sent on CHANNEL (read with READER) and return its
 * result.  *PID is the process (and process group) serving the channel: 0
 * (or CX__SP_INTERRUPT_PENDING) until its STARTED message, set here then
 * (atomically, for interrupts from other threads).  Failures of the cell (timeout, crash, limits) are
 * results; NULL with ERROR only when the worker could not run it (e.g. an
 * invalid cwd), with *OUTCOME telling whether the process is still there. */
cx_result *cx__sp_cell_call_run(int channel, cx__wire_reader *reader, gint *pid,
                                const cx__sp_call_params *params, cx__sp_call_outcome *outcome,
                                GError **error);

G_END_DECLS

#endif /* CX__SP_CELL_CALL_H */
