/* pyembed/pyembed-private.h: what the files of pyembed share.
 *
 * Include after config.h.  Lock order everywhere: the GIL first, then any
 * pyembed mutex; never wait for the GIL while holding one.
 */
#ifndef CX__PY_PRIVATE_H
#define CX__PY_PRIVATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pyembed/convert.h"
#include "pyembed/pyembed.h"

G_BEGIN_DECLS

/* ---- runtime.c: the interpreter and the GIL ------------------------------ */

/* Take / give back the GIL from any thread.  The first call on a thread
 * gives it a Python thread state that lives until the thread exits:
 * creating one per call would cost more than running a small cell. */
PyGILState_STATE cx__py_gil_acquire(void);
void cx__py_gil_release(PyGILState_STATE state);

/* TRUE once IPython's shell exists (ipython_shell.py): cells then end with
 * helper.finish_cell, which fires IPython's post-execution events.  With
 * the GIL held. */
extern gboolean cx__py_shell_started;

/* A new module named __main__ for cells to run in: its dict is the
 * namespace ({__name__: "__main__", __builtins__, ...}), and it is
 * sys.modules["__main__"] while a cell runs in it (see cell.c). */
PyObject *cx__py_new_main_module(void);

/* Run SOURCE (one of the Python halves: helper.py, ...) as module NAME,
 * put in sys.modules, with __file__ FILENAME; a borrowed reference to the
 * module, or NULL with a Python exception set. */
PyObject *cx__py_load_module(const char *source, const char *filename, const char *name);

/* Call helper.NAME(ARGS...) (NARGS positional arguments); new reference or
 * NULL with a Python exception set. */
PyObject *cx__py_call_helper(const char *name, PyObject *const *args, size_t nargs);

/* Fill ERROR from the pending Python exception (cleared), prefixed by the
 * printf-style PREFIX.  For failures of pyembed itself, not of cells. */
void cx__py_error_from_python(GError **error, int code, const char *prefix, ...)
  G_GNUC_PRINTF(3, 4);

/* ---- running.c: the registry of running cells --------------------------- */

/* One cell while it runs: who gets its output, who may interrupt it, when
 * its deadline is.  Lives on the stack of cx__py_run_cell. */
typedef struct cx__py_cell cx__py_cell;
struct cx__py_cell {
  GList link;                /* in the list of running cells */
  const void *owner;         /* what cx__py_interrupt() names */
  unsigned long thread_id;   /* PyThread_get_thread_ident() of the cell's thread */
  gint64 deadline;           /* g_get_monotonic_time() deadline; 0: none */
  gboolean timed_out;        /* the watchdog raised TimeoutError */
  gboolean signalled;        /* a TimeoutError or KeyboardInterrupt was sent to it */
  cx_result *result;         /* where output goes */
  const cx_run_options *run; /* for the allowed MIME types */
  cx__py_cell *outer;   /* the cell this thread was running before (nesting) */
  gint64 execution_count;    /* the number its execute_result carries */
  gboolean record_events;    /* CX__PY_RUN_RECORD_EVENTS: see display.c */
  int last_stream;           /* the stream written last (recording), 0: none yet */
  guint stream_switches;     /* switches recorded so far (recording) */
  guint64 id;                /* unique in the process: threads it starts name it */
  pid_t pid;                 /* the process running it (not one it forked) */
};

/* With the GIL held, on the cell's thread: CELL starts / stops receiving
 * output, interrupts and its deadline.  running_end also drops an
 * interrupt or timeout that arrived too late to be raised, so it cannot
 * surface in the caller's later Python code. */
void cx__py_running_begin(cx__py_cell *cell);
void cx__py_running_end(cx__py_cell *cell);

/* With the GIL held: the cell output of the current thread belongs to: the
 * cell it runs; else, for a thread a cell started (directly or through
 * other threads), that cell while it runs; else, for any other thread, the
 * cell started last; else NULL (the process's own streams, or nobody: see
 * cx__py_output_orphaned).  Always NULL in a process a cell forked. */
cx__py_cell *cx__py_output_cell(void);

/* With the GIL held: TRUE when the current thread was started by a cell
 * that has ended: its output goes nowhere (not into a later cell, not onto
 * the host's stdout, where it could corrupt what the host prints). */
gboolean cx__py_output_orphaned(void);

/* With the GIL held: TRUE when the current thread is running a cell (in
 * this process: not in a child the cell forked). */
gboolean cx__py_in_cell(void);

/* With the GIL held, once, after cx__py_native_init(): fork tracking,
 * and running.c's functions of _cellexec_native. */
gboolean cx__py_running_init(void);

/* With the GIL held, once: the signal functions of _cellexec_native
 * (MODULE), see cell.c. */
gboolean cx__py_signals_init(PyObject *module);
/* With the GIL held, on the cell's thread, when its outermost cell ends:
 * put back the signal dispositions cells changed. */
void cx__py_signals_restore(void);

/* ---- capture.c: sys.stdout / sys.stderr ----------------------------------- */

/* Create the stream types; with the GIL held, once. */
gboolean cx__py_capture_init(void);
/* With the GIL held: route sys.stdout / sys.stderr to the running cells
 * (nested begin/end pairs: the first begin installs, the last end restores
 * the streams that were there before). */
void cx__py_capture_begin(void);
void cx__py_capture_end(void);
/* With the GIL held: a thread a cell started begins / ends.  While such
 * threads live, the routers stay installed when no cell runs: they drop
 * those threads' writes and pass everybody else's on to the host's
 * streams. */
void cx__py_capture_thread_begin(void);
void cx__py_capture_thread_end(void);

/* getpid() without a system call: kept current after fork() by an atfork
 * handler registered when the interpreter starts (running.c). */
pid_t cx__py_process_id(void);

/* ---- fdcapture.c: file descriptors 1 and 2 --------------------------------- */

/* With the GIL held, on the cell's thread, around a cell run with FLAGS
 * (nothing happens without CX__PY_RUN_CAPTURE_FDS): fds 1 and 2 point
 * into pipes from begin to end (nested and concurrent cells: the first
 * begin installs, the last end restores).  begin before
 * cx__py_capture_begin(); end after cx__py_capture_end() and
 * before anything else goes into CELL's result: end flushes the process's
 * stdio and gives CELL what is left in the pipes. */
void cx__py_fdcapture_begin(cx__py_run_flags flags);
void cx__py_fdcapture_end(cx__py_run_flags flags, cx__py_cell *cell);
/* With the GIL held: append what was written to fds 1 and 2 so far to the
 * stdout / stderr of CELL (NULL: cx__py_output_cell()).  Call it
 * before anything else goes into a cell's output, so the two keep their
 * order.  A check of a counter when no cell captures; a poll() otherwise. */
void cx__py_fdcapture_deliver(cx__py_cell *cell);

/* ---- convert.c: Python values as JSON: pyembed/convert.h -------------------- */

/* ---- display.c: what a cell shows besides its streams -------------------- */

typedef enum {
  CX__PY_DISPLAY,        /* display_data */
  CX__PY_UPDATE_DISPLAY, /* update_display_data: DISPLAY_ID required */
  CX__PY_EXECUTE_RESULT, /* the value of the cell */
} cx__py_output_kind;

/* With the GIL held: BUNDLE (a dict {mime: str or JSON value}, binary data
 * already base64) and METADATA (a dict, or NULL / None) as output KIND of
 * CELL, keeping only the MIME types its run allows.  FALSE with a Python
 * exception set if a value cannot be converted. */
gboolean cx__py_publish(cx__py_cell *cell, cx__py_output_kind kind,
                        PyObject *bundle, PyObject *metadata, const char *display_id);
/* With the GIL held, before CELL's stream FD (1 or 2) grows: a cell that
 * records events remembers where it switched streams, so that stdout and
 * stderr reach the host interleaved as they were written. */
void cx__py_note_stream(cx__py_cell *cell, int fd);
/* With the GIL held: TEXT (a str) as UTF-8 with each NUL as CX_RESULT_NUL,
 * a new string (cell.c); NULL with a Python exception when it is no str or
 * has no UTF-8 form. */
char *cx__py_utf8_keeping_nul(PyObject *text);
/* With the GIL held: an exception shown in CELL without failing it (an
 * "error" output), as IPython shows one raised by a display formatter. */
void cx__py_show_error(cx__py_cell *cell, const char *ename, const char *evalue,
                       const char *const *lines);
/* With the GIL held: IPython's clear_output(wait) in CELL. */
void cx__py_clear_output(cx__py_cell *cell, gboolean wait);
/* A comm's IOPub message MSG_TYPE with CONTENT (a dict) for CELL's output
 * callback (cx_result_pass_message); FALSE with a Python exception when
 * CONTENT has no JSON form. */
gboolean cx__py_pass_message(cx__py_cell *cell, const char *msg_type, PyObject *content);
/* The events recorded for the cell running (or last run) in this process,
 * and forgetting them when the next one starts; with the GIL held. */
JsonArray *cx__py_events(void);
void cx__py_events_reset(void);

/* ---- native.c: the _cellexec_native module helper.py imports --------------- */

/* Create the module and put it in sys.modules; with the GIL held. */
gboolean cx__py_native_init(void);

G_END_DECLS

#endif /* CX__PY_PRIVATE_H */
