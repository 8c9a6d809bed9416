/* pyembed/pyembed.h: the embedded CPython runtime.
 *
 * Shared by the local backend (CPython in the host process) and the
 * subprocess worker: both link libcxpyembed.la and drive Python only through
 * these functions, so neither needs Python.h.  Internal to cellexec, hence
 * the cx__py_ prefix (cx_ is the public API's).
 *
 * One interpreter per process, started lazily by cx__py_start() and
 * never finalised (CPython cannot be re-initialised reliably).  Every
 * function may be called from any thread; they take the GIL themselves.
 *
 * A cell runs as the body of an IPython cell would:
 *   - in a fresh namespace, or in a session's namespace that persists;
 *   - the last statement, if it is an expression, is evaluated and its
 *     value displayed (the last rich output) unless it is None or the cell
 *     ends with ';';
 *   - sys.stdout / sys.stderr writes of the cell's thread go to the result;
 *   - exceptions, SystemExit and os._exit() end the cell with an error,
 *     never the process.
 */
#ifndef CX__PY_H
#define CX__PY_H

#include <cellexec/common.h>
#include <cellexec/options.h>
#include <cellexec/result.h>

G_BEGIN_DECLS

/* A persistent namespace (and its asyncio event loop): what a session keeps
 * between cells. */
typedef struct cx__py_session cx__py_session;

/* Start the interpreter if nobody has yet.  ISOLATED gives `python3 -I -S`
 * semantics (no site-packages, no user site, no '' on sys.path); otherwise
 * imports behave as in the configured python3.  PYTHON* environment
 * variables never change the interpreter's behaviour.  Cheap once started.
 * Fails with CX_ERROR_BACKEND when Python cannot start, or was started with
 * the other ISOLATED setting (one interpreter per process). */
gboolean cx__py_start(gboolean isolated, GError **error);

/* FALSE with CX_ERROR_BACKEND if the interpreter is already running with
 * the other ISOLATED setting; TRUE otherwise (also when not started yet). */
gboolean cx__py_check_isolation(gboolean isolated, GError **error);

/* How cx__py_run_cell() runs a cell. */
typedef enum {
  CX__PY_RUN_DEFAULT = 0,
  /* Also capture what is written to file descriptors 1 and 2 while the cell
   * runs (os.write, os.system, child processes, C extensions), as ipykernel
   * does: the process's fds 1 and 2 point into a pipe for the duration of
   * the call, so output of other threads of the process lands in the cell
   * too. */
  CX__PY_RUN_CAPTURE_FDS = 1 << 0,
  /* For a worker that streams a cell's outputs to its host: displays,
   * updates, clear_output and the cell's value are recorded as events (see
   * pyembed-process.h) instead of being applied to the result, whose
   * stdout and stderr then only grow. */
  CX__PY_RUN_RECORD_EVENTS = 1 << 1,
} cx__py_run_flags;

/* Run CODE (UTF-8) and return its result bundle.  SESSION NULL runs it in a
 * fresh namespace.  OWNER identifies the caller for cx__py_interrupt()
 * (the session, or the backend for stateless cells).  RUN (not NULL) gives
 * cwd, env, timeout and the allowed MIME types; use_subprocess is the
 * caller's business and ignored here.  FLAGS: see cx__py_run_flags.
 *
 * cwd and env change the whole process for the duration of the call, so
 * calls using them are serialised by a process-wide lock; calls without
 * them run concurrently (and see whatever directory is current).
 *
 * A failing cell is a result with success FALSE; NULL with ERROR set only
 * when the cell could not be run at all (e.g. RUN's cwd does not exist).
 * cx__py_start() must have succeeded. */
cx_result *cx__py_run_cell(const void *owner, cx__py_session *session,
                           const char *code, const cx_run_options *run,
                           cx__py_run_flags flags, GError **error);

/* Raise KeyboardInterrupt in every cell of OWNER running now.  A cell
 * blocked in a C call sees it when the call returns. */
void cx__py_interrupt(const void *owner);

/* A new session namespace.  cx__py_start() must have succeeded. */
cx__py_session *cx__py_session_new(GError **error);
void cx__py_session_free(cx__py_session *session);

/* The reply content of the Jupyter request TYPE with CONTENT (borrowed) in
 * SESSION's namespace (pyembed/requests.py: complete, inspect, is_complete,
 * history), or NULL with ERROR: CX_ERROR_UNSUPPORTED for a TYPE it does
 * not answer, CX_ERROR_BACKEND when answering raised. */
JsonObject *cx__py_session_request(cx__py_session *session, const char *type,
                                   JsonObject *content, GError **error);

/* {"python_version", "executable", "isolated", "site", "prefix",
 *  "libpython", "compile_cache_entries"} describing the interpreter (a new
 * node).  cx__py_start() must have succeeded. */
JsonNode *cx__py_describe(GError **error);

G_END_DECLS

#endif /* CX__PY_H */
