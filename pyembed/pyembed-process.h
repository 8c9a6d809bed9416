/* pyembed/pyembed-process.h: what a worker process needs from the embedded
 * runtime beyond pyembed.h.
 *
 * The subprocess backend's worker runs cells in processes of their own:
 * it forks a process per cell from an interpreter started once, streams
 * a cell's output while it runs (so a cell killed or crashed still shows
 * what it printed), and lets os._exit() end the process for real.  None of
 * this is safe in a host process; only the worker calls it.
 */
#ifndef CX__PY_PROCESS_H
#define CX__PY_PROCESS_H

#include <sys/types.h>

#include "pyembed/pyembed.h"

G_BEGIN_DECLS

/* fork() with the interpreter in a state the child can use: the GIL held
 * and PyOS_BeforeFork / PyOS_AfterFork_{Child,Parent} around the call.
 * Returns as fork() does (errno set on -1).  Call it from a process whose
 * only thread is the caller: other threads do not exist in the child. */
pid_t cx__py_fork(void);

/* How much of a cell's output has been seen: bytes of stdout and stderr,
 * and events (displays, updates, clear_output, the cell's value) that a
 * cell run with CX__PY_RUN_RECORD_EVENTS recorded. */
typedef struct {
  gsize stdout_seen;
  gsize stderr_seen;
  guint events_seen;
} cx__py_output_cursor;

/* Called with output of a cell, in the order it happened: STREAM 1
 * (stdout) or 2 (stderr) with the bytes written, or 0 with an event as
 * compact JSON text: {"event": "display" | "update" | "execute_result",
 * "data", "metadata"?, "display_id"?, "execution_count"?}, {"event":
 * "clear", "wait"} or {"event": "error", "ename", "evalue", "traceback"}. */
typedef void (*cx__py_output_func)(int stream, const char *data, gsize len,
                                   gpointer user_data);

/* Pass FUNC what the running cell has written or shown since CURSOR last
 * saw, and advance CURSOR.  Takes the GIL (FUNC runs with it held: copy,
 * do not block).  FALSE when no cell is running. */
gboolean cx__py_peek_output(cx__py_output_cursor *cursor,
                            cx__py_output_func func, gpointer user_data);

/* The same for a caller that holds the GIL already. */
gboolean cx__py_peek_output_gil_held(cx__py_output_cursor *cursor,
                                     cx__py_output_func func, gpointer user_data);

/* For a process about to die of a fatal signal in the cell's own thread
 * (best effort): the stream bytes only, which takes no lock and allocates
 * nothing (the signal may have come in the middle of malloc); events not
 * sent yet are lost with the process. */
void cx__py_peek_streams_in_signal_handler(cx__py_output_cursor *cursor,
                                           cx__py_output_func func, gpointer user_data);

/* The same once the cell has ended, with RESULT the result
 * cx__py_run_cell() returned for it.  Takes the GIL. */
void cx__py_peek_finished(cx__py_output_cursor *cursor, const cx_result *result,
                          cx__py_output_func func, gpointer user_data);

/* Make room in the descriptor table for what cells run with
 * CX__PY_RUN_CAPTURE_FDS keep there, so that the first such cell does not
 * wait for the kernel to grow it (with other threads running, a wait of
 * milliseconds).  Call while the calling thread is the process's only
 * one, e.g. in a freshly forked process before it starts any thread. */
void cx__py_fdcapture_reserve(void);
/* Call before cx__py_start() in a process that forks children from its
 * interpreter and runs cells only on its main thread: threading is then
 * imported when something first needs it, as in python3, instead of when
 * Python starts.  Its at-fork handler runs Python in every child forked
 * after it is imported (about 0.25 ms and 70 page copies per stateless
 * cell, bench/README.md). */
void cx__py_import_threading_on_demand(void);
/* Start a detached helper thread running MAIN(DATA): a small stack (it
 * only moves bytes) and every signal blocked, so that signals reach the
 * thread that runs Python.  0, or the error number of pthread_create(). */
int cx__py_start_thread(void *(*main)(void *), void *data);

/* Whether modules in the current directory import (sys.path's "" entry,
 * as in `python3 -c`; never with -I).  A fork server turns it off for
 * itself, so that what it imports to warm up (and the preloads) cannot be
 * shadowed by a file a cell left in its working directory, and each
 * process it forks for cells turns it back on.  Takes the GIL. */
gboolean cx__py_set_cwd_importable(gboolean importable, GError **error);

/* Set the environment variable NAME to VALUE in os.environ and the C
 * environment, for a process a fork server forked (its Python read the
 * environment when it started).  Takes the GIL. */
gboolean cx__py_setenv(const char *name, const char *value, GError **error);

/* Make os._exit(STATUS) in cells end the process, as in python3, instead
 * of raising SystemExit as it does in a host process.  BEFORE_EXIT (may be
 * NULL) is called first, with the GIL held, e.g. to send the output seen so
 * far.  cx__py_start() must have succeeded. */
gboolean cx__py_use_process_exit(void (*before_exit)(int status), GError **error);

/* Make cx__py_interrupt_main_thread() work: SIGINT's Python-level
 * handler becomes signal.default_int_handler, as in python3.  Installs
 * Python's C handler for SIGINT, which the caller may then replace with
 * its own.  Call from the thread that started Python. */
gboolean cx__py_route_sigint(GError **error);

/* Async-signal-safe: have the main thread raise KeyboardInterrupt at its
 * next bytecode, as SIGINT does in python3 (a blocking system call returns
 * EINTR and raises it too, if the signal interrupted it). */
void cx__py_interrupt_main_thread(void);

/* Drop an interrupt requested above that no cell has seen yet, so it
 * cannot surface in the next cell.  Takes the GIL. */
void cx__py_discard_interrupt(void);

G_END_DECLS

#endif /* CX__PY_PROCESS_H */
