/* pyembed/pyembed-process.h: what a worker process needs from the embedded
 * runtime beyond pyembed.h.
 *
 * The subprocess backend's worker runs cells in processes of their own:
 * it forks a process per cell from an interpreter started once, streams
 * a cell's output while it runs (so a cell killed or crashed still shows
 * what it printed), and lets os._exit() end the process for real.  None of
 * this is safe in a host process; only the worker calls it.
 */
#ifndef CX_PYEMBED_PROCESS_H
#define CX_PYEMBED_PROCESS_H

#include <sys/types.h>

#include "pyembed/pyembed.h"

G_BEGIN_DECLS

/* fork() with the interpreter in a state the child can use: the GIL held
 * and PyOS_BeforeFork / PyOS_AfterFork_{Child,Parent} around the call.
 * Returns as fork() does (errno set on -1).  Call it from a process whose
 * only thread is the caller: other threads do not exist in the child. */
pid_t cx_pyembed_fork(void);

/* How much of the running cell's stdout and stderr has been seen. */
typedef struct {
  gsize stdout_seen;
  gsize stderr_seen;
} cx_pyembed_output_cursor;

/* Called with output a cell wrote: STREAM is 1 (stdout) or 2 (stderr). */
typedef void (*cx_pyembed_output_func)(int stream, const char *data, gsize len,
                                       gpointer user_data);

/* Pass FUNC the stdout / stderr bytes the running cell has written since
 * CURSOR last saw, and advance CURSOR.  Takes the GIL (FUNC runs with it
 * held: copy, do not block).  FALSE when no cell is running. */
gboolean cx_pyembed_peek_output(cx_pyembed_output_cursor *cursor,
                                cx_pyembed_output_func func, gpointer user_data);

/* The same for a caller that holds the GIL already, or a process about to
 * die of a fatal signal in the cell's own thread (best effort). */
gboolean cx_pyembed_peek_output_gil_held(cx_pyembed_output_cursor *cursor,
                                         cx_pyembed_output_func func, gpointer user_data);

/* Make os._exit(STATUS) in cells end the process, as in python3, instead
 * of raising SystemExit as it does in a host process.  BEFORE_EXIT (may be
 * NULL) is called first, with the GIL held, e.g. to send the output seen so
 * far.  cx_pyembed_start() must have succeeded. */
gboolean cx_pyembed_use_process_exit(void (*before_exit)(int status), GError **error);

/* Make cx_pyembed_interrupt_main_thread() work: SIGINT's Python-level
 * handler becomes signal.default_int_handler, as in python3.  Installs
 * Python's C handler for SIGINT, which the caller may then replace with
 * its own.  Call from the thread that started Python. */
gboolean cx_pyembed_route_sigint(GError **error);

/* Async-signal-safe: have the main thread raise KeyboardInterrupt at its
 * next bytecode, as SIGINT does in python3 (a blocking system call returns
 * EINTR and raises it too, if the signal interrupted it). */
void cx_pyembed_interrupt_main_thread(void);

/* Drop an interrupt requested above that no cell has seen yet, so it
 * cannot surface in the next cell.  Takes the GIL. */
void cx_pyembed_discard_interrupt(void);

G_END_DECLS

#endif /* CX_PYEMBED_PROCESS_H */
