/* plugins/subprocess/cell_call.h: the host's side of one cell: read what
 * the cell's process sends over its channel, enforce the deadline and the
 * output limit, and make the result. */
#ifndef CX_SUBPROCESS_CELL_CALL_H
#define CX_SUBPROCESS_CELL_CALL_H

#include <cellexec/result.h>

#include "plugins/subprocess/frame.h"

G_BEGIN_DECLS

/* How often the fork server is checked (a cell may have stopped it) while
 * a cell or a session waits for its process to start. */
#define CX_SERVER_CHECK_US (100 * 1000)

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
} cx_call_params;

typedef enum {
  CX_CALL_NEVER_STARTED,   /* the channel closed (or the server went) before the process started */
  CX_CALL_DONE,            /* a result came, the process lives on (sessions) */
  CX_CALL_PROCESS_GONE,    /* the process ended, was killed, or broke the protocol */
} cx_call_outcome;

/* Wait for the cell sent on CHANNEL (read with READER) and return its
 * result.  *PID is the process (and process group) serving the channel: 0
 * until its STARTED message, set here then (atomically, for interrupts
 * from other threads).  Failures of the cell (timeout, crash, limits) are
 * results; NULL with ERROR only when the worker could not run it (e.g. an
 * invalid cwd), with *OUTCOME telling whether the process is still there. */
cx_result *cx_cell_call_run(int channel, cx_frame_reader *reader, gint *pid,
                            const cx_call_params *params, cx_call_outcome *outcome,
                            GError **error);

G_END_DECLS

#endif /* CX_SUBPROCESS_CELL_CALL_H */
