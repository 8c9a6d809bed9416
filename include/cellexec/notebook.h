/* cellexec/notebook.h: Jupyter notebooks (.ipynb, nbformat 4) run on any
 * backend, as nbclient (`jupyter execute`) and papermill run them.
 *
 * A grader in a few lines:
 *
 *   g_autoptr(cx_notebook) notebook = cx_notebook_load("homework.ipynb", &error);
 *   g_autoptr(cx_backend) backend = cx_backend_open_configured(NULL, "subprocess", &error);
 *   if (!cx_notebook_run(notebook, backend, NULL, CX_NOTEBOOK_ALLOW_ERRORS,
 *                        on_cell, NULL, &error))
 *     g_printerr("%s\n", error->message);
 *   cx_notebook_save(notebook, "graded.ipynb", &error);
 *
 * ABI 1.1.  A notebook is the document's JSON, kept as read: cells other
 * than code cells, unknown keys and metadata come out as they went in.
 * Running fills each code cell's "outputs" (nbformat output objects:
 * stream, display_data, execute_result, error, in the order the cell made
 * them), "execution_count" and metadata.execution (the four timestamps
 * nbclient writes), and the notebook's metadata.language_info.  A notebook
 * is not thread-safe.
 */
#ifndef CELLEXEC_NOTEBOOK_H
#define CELLEXEC_NOTEBOOK_H

#include <cellexec/common.h>
#include <cellexec/options.h>
#include <cellexec/result.h>

G_BEGIN_DECLS

typedef struct cx_notebook cx_notebook;
typedef struct cx_backend cx_backend;

/* Read an nbformat 4.0-4.5 notebook from PATH (or DATA, LENGTH bytes or -1
 * for NUL-terminated, ORIGIN naming it in messages).  Anything else fails
 * with CX_ERROR_NOTEBOOK and a one-line message naming the file and the
 * problem: not JSON (with the line), not a notebook, nbformat 3 (with the
 * command that converts it), a cell without a source.
 * Every value is kept exactly, also what a JsonNode cannot hold: in the
 * notebook's strings a NUL character (\u0000) is the two bytes C0 80, and
 * a number beyond json-glib's (an integer outside 64 bits, 1e400) is a
 * string of the bytes C0 81 followed by the number's JSON text; neither is
 * valid UTF-8, and cx_notebook_to_json() writes both back as they were. */
CX_EXPORT cx_notebook *cx_notebook_load(const char *path, GError **error);
CX_EXPORT cx_notebook *cx_notebook_load_data(const char *data, gssize length,
                                             const char *origin, GError **error);
CX_EXPORT void cx_notebook_free(cx_notebook *notebook);

/* The notebook as nbformat writes it (nbformat.write()), byte for byte:
 * multiline strings split into lines as nbformat splits them, then
 * json.dumps(sort_keys=True, indent=1, ensure_ascii=False) and a final
 * newline.  A notebook nbformat wrote, loaded and saved, is unchanged.
 * The split is only in the text: the notebook's strings stay as they are.
 * Free with g_free(). */
CX_EXPORT char *cx_notebook_to_json(const cx_notebook *notebook);
/* Write the notebook to PATH atomically: a temporary file in the same
 * directory, renamed over PATH, so that PATH holds the old notebook or the
 * new one, never a part of one.  A file replaced this way keeps its
 * permissions (and, for root, its owner).  PATH may be in a directory
 * cells write, so no symbolic link is followed: one at PATH or among its
 * directories fails with CX_ERROR_NOTEBOOK, leaving what it points to as
 * it was; so does a named pipe, socket or directory at PATH.  A character
 * device (a terminal, /dev/null) is written to, not replaced. */
CX_EXPORT gboolean cx_notebook_save(const cx_notebook *notebook, const char *path,
                                    GError **error);

/* The cells: their number, one as JSON (borrowed; change it at will),
 * its "cell_type", and its source as one string (g_free it; a NUL in it
 * is C0 80, as above). */
CX_EXPORT guint cx_notebook_get_n_cells(const cx_notebook *notebook);
CX_EXPORT JsonObject *cx_notebook_get_cell(const cx_notebook *notebook, guint index);
CX_EXPORT const char *cx_notebook_get_cell_type(const cx_notebook *notebook, guint index);
CX_EXPORT char *cx_notebook_get_cell_source(const cx_notebook *notebook, guint index);

/* Parameters, as papermill injects them: ASSIGNMENTS ("NAME=VALUE",
 * NULL-terminated) become a code cell tagged "injected-parameters" right
 * after the cell tagged "parameters" (at the top when there is none),
 * replacing an earlier injected cell.  A VALUE that parses as JSON is that
 * value as a Python literal (5, 2.5, true -> True, null -> None, lists,
 * dicts), exactly: an integer of any size is the same Python int, and a
 * number beyond a double (1e999) fails with CX_ERROR_OPTION, as Python
 * would read it as inf.  Anything else is a string.  NAME must be an
 * ASCII Python identifier that is not a keyword (nor __debug__): another
 * fails with CX_ERROR_OPTION.  A NAME given twice takes its last value
 * (in the place of its first). */
CX_EXPORT gboolean cx_notebook_inject_parameters(cx_notebook *notebook,
                                                 const char *const *assignments,
                                                 GError **error);

typedef enum {
  CX_NOTEBOOK_DEFAULT = 0,
  /* Record a failing cell and go on, as nbclient --allow-errors does;
   * without it the run stops at the first failing cell (its error is in
   * its outputs; later cells are left as they were). */
  CX_NOTEBOOK_ALLOW_ERRORS = 1 << 0,
} cx_notebook_flags;

typedef enum {
  CX_NOTEBOOK_CELL_STARTED,  /* about to run; RESULT is NULL */
  CX_NOTEBOOK_CELL_OK,
  CX_NOTEBOOK_CELL_FAILED,   /* RESULT holds the error */
  CX_NOTEBOOK_CELL_SKIPPED,  /* tagged skip-execution, or empty */
} cx_notebook_cell_status;

/* What the per-cell callback sees.  Pointers are borrowed for the call. */
typedef struct {
  size_t struct_size;           /* sizeof(cx_notebook_cell_report) of the core */
  guint index;                  /* the cell's position among all cells */
  guint code_index;             /* its position among code cells, from 0 */
  guint n_code_cells;
  const char *source;
  cx_notebook_cell_status status;
  const cx_result *result;      /* NULL for STARTED and SKIPPED */
  double duration_s;            /* 0 for STARTED and SKIPPED */
  gboolean allowed_failure;     /* FAILED but tagged raises-exception, or ALLOW_ERRORS */
  /* ABI 1.1: FAILED, allowed, and the cell timed out or its worker or
   * kernel died (TimeoutError, WorkerCrashed, KernelDied): later cells run
   * in a fresh session, and the next one that runs says so first (a
   * stderr stream, as Jupyter shows a kernel restart).  Read it only when
   * struct_size covers it. */
  gboolean session_replaced;
} cx_notebook_cell_report;

typedef void (*cx_notebook_cell_func)(const cx_notebook_cell_report *report,
                                      gpointer user_data);

/* Run the code cells in order in one session of BACKEND (which must offer
 * sessions), each with RUN (may be NULL: timeout, cwd, env, MIME filter
 * per cell), calling CALLBACK (may be NULL) before and after each.
 *
 * A notebook whose metadata.kernelspec.language (or, without one,
 * metadata.language_info.name) is not Python fails up front with
 * CX_ERROR_NOTEBOOK, no cell run.  Before the cells, metadata.language_info
 * is set as ipykernel reports it for Python 3, its "version" asked of the
 * session's Python through an environment of its own (executor.h; left out
 * on a backend without one), so no cell runs for it.
 *
 * A cell tagged "skip-execution" is left as it is; one tagged
 * "raises-exception" may fail.  After a cell that timed out or whose
 * worker or kernel died (error TimeoutError, WorkerCrashed or KernelDied),
 * later cells run in a fresh session, and the first of them that runs gets
 * a stderr stream output saying so before its own.  Returns TRUE when every cell ran (failures that
 * were allowed included); FALSE with CX_ERROR_CELL when a cell failed and
 * the run stopped there (the notebook holds the outputs so far: save it),
 * or with another code when the backend could not run cells at all. */
CX_EXPORT gboolean cx_notebook_run(cx_notebook *notebook, cx_backend *backend,
                                   const cx_run_options *run, cx_notebook_flags flags,
                                   cx_notebook_cell_func callback, gpointer user_data,
                                   GError **error);

/* The same in SESSION, which the caller opened (with state of its own,
 * say) and still owns.  After a timeout or a crash the cells go on in
 * SESSION as its backend left it (the subprocess backend restarts the
 * session's process, saying so in the next result's "session_restarted"
 * key). */
typedef struct cx_session cx_session;
CX_EXPORT gboolean cx_notebook_run_in_session(cx_notebook *notebook, cx_session *session,
                                              const cx_run_options *run, cx_notebook_flags flags,
                                              cx_notebook_cell_func callback, gpointer user_data,
                                              GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_notebook, cx_notebook_free)

G_END_DECLS

#endif /* CELLEXEC_NOTEBOOK_H */
