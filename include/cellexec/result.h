/* cellexec/result.h: the result bundle of one cell.
 *
 * A cx_result is what every backend returns from run_cell, in the shape
 * users of IPython-based executors know:
 *
 *   {"stdout": "hello\n", "stderr": "", "success": true, "error": null,
 *    "rich_outputs": [{"text/plain": "2"}]}
 *
 *   stdout, stderr  text the cell wrote, in full (bytes are kept as given;
 *                   the JSON form keeps NUL as \u0000 and reads bytes that
 *                   are not UTF-8 as U+FFFD, one for each byte that does not
 *                   begin a valid sequence, as g_utf8_make_valid() does:
 *                   "\xe2\x82A" reads as "\uFFFD\uFFFDA", where Python's
 *                   errors="replace" gives a single U+FFFD).
 *   rich_outputs    one MIME bundle ({mime: data}) per display() call, in
 *                   order; the value of the cell's last expression, when it
 *                   has one, is the last entry.  Binary data (image/png,
 *                   image/jpeg, ...) is base64 text, as in Jupyter.
 *   success         false when the cell raised or the backend gave up on it.
 *   error           null, or {"type", "message", "traceback"}: the Python
 *                   exception class name, str(exc) and the formatted
 *                   traceback as one string.  Backends report failures of
 *                   their own with the same shape and the types
 *                   CX_ERROR_TYPE_* below.
 *
 * Anything more (durations, truncation marks, ...) goes in extra top-level
 * keys set with cx_result_set_extra().  The five keys above never change
 * meaning.  One extra key is the core's own:
 *
 *   outputs         the cell's outputs in the order they happened, as
 *                   nbformat v4 output objects: {"output_type": "stream",
 *                   "name": "stdout", "text": ...} (consecutive writes to one
 *                   stream merged), {"output_type": "display_data", "data",
 *                   "metadata"}, {"output_type": "execute_result",
 *                   "execution_count", "data", "metadata"} and, last when
 *                   the cell failed, {"output_type": "error", "ename",
 *                   "evalue", "traceback": [lines]} (IPython's traceback,
 *                   as a kernel sends it, when the backend gives it; none
 *                   for a UsageError: see cx_result_set_error_output()).
 *                   A notebook runner
 *                   writes them into a .ipynb unchanged.  It is built from
 *                   the calls below; cx_result_set_extra() cannot set it.
 *
 * Backends that know them also set the extras "execution_count" (the
 * cell's number in its session, as a kernel counts) and "duration_ms".
 *
 * Plugins build results only with these functions, so the core may grow the
 * structure without breaking them.  A result is not thread-safe; it belongs
 * to one thread at a time.
 */
#ifndef CELLEXEC_RESULT_H
#define CELLEXEC_RESULT_H

#include <cellexec/common.h>

G_BEGIN_DECLS

/* ABI 1.1: a NUL character in the C strings of an error: the two bytes
 * C0 80 (the "modified UTF-8" form of U+0000, which valid UTF-8 never
 * holds).  cx_result_to_json() writes it as \u0000; the JsonNode forms
 * (cx_result_to_json_node, cx_result_list_outputs) read it as U+FFFD, as
 * they read a NUL of stdout. */
#define CX_RESULT_NUL "\xc0\x80"

/* ABI 1.1: the error types of failures a backend reports for a cell
 * rather than the cell raising them; a program may compare "error"."type"
 * with them, and every plugin shipped with cellexec uses them.  After the
 * first three the session's state cannot be trusted: the notebook runner
 * and `cellexec kernel` go on in a fresh session (cx_result_ends_session).
 *
 *   CX_ERROR_TYPE_TIMEOUT          the cell ran past its timeout (the local
 *                                  backend raises Python's TimeoutError in
 *                                  it; the others stop or kill its process)
 *   CX_ERROR_TYPE_WORKER_CRASHED   the process running the cell died (a
 *                                  signal, os._exit(), the OOM killer)
 *   CX_ERROR_TYPE_KERNEL_DIED      the Jupyter kernel died or stopped
 *                                  answering while it ran the cell
 *   CX_ERROR_TYPE_OUTPUT_LIMIT     the cell was stopped for its output
 *                                  (output-limit)
 *   CX_ERROR_TYPE_CPU_TIME         the cell used up its CPU time
 *   CX_ERROR_TYPE_KERNEL_PROTOCOL  the kernel's reply made no sense: the
 *                                  cell's outcome is unknown
 *   CX_ERROR_TYPE_ABORTED          the kernel aborted the request
 *   CX_ERROR_TYPE_UNRECORDED_CELL  the fake backend replays a recording
 *                                  that holds no result for the cell */
#define CX_ERROR_TYPE_TIMEOUT "TimeoutError"
#define CX_ERROR_TYPE_WORKER_CRASHED "WorkerCrashed"
#define CX_ERROR_TYPE_KERNEL_DIED "KernelDied"
#define CX_ERROR_TYPE_OUTPUT_LIMIT "OutputLimitExceeded"
#define CX_ERROR_TYPE_CPU_TIME "CPUTimeExceeded"
#define CX_ERROR_TYPE_KERNEL_PROTOCOL "KernelProtocolError"
#define CX_ERROR_TYPE_ABORTED "Aborted"
#define CX_ERROR_TYPE_UNRECORDED_CELL "UnrecordedCell"

/* ABI 1.2: TRUE when RESULT failed in a way that leaves its session's
 * state untrustworthy (CX_ERROR_TYPE_TIMEOUT, _WORKER_CRASHED or
 * _KERNEL_DIED): a program that goes on should close the session and
 * open a fresh one, as cx_notebook_run() does. */
CX_EXPORT gboolean cx_result_ends_session(const cx_result *result);

/* A new, empty, successful result.  Free with cx_result_free(). */
CX_EXPORT cx_result *cx_result_new(void);
/* ABI 1.1: for a backend's run_cell: a new result that passes each output
 * to RUN's output callback (cx_run_options_set_output_callback) the moment
 * it is added, MIME filter applied, one call at a time.  Build the result
 * while the cell runs to stream its output; the core gives the cell's
 * failure (the error output) once run_cell returns.  Same as
 * cx_result_new() when RUN has no callback. */
CX_EXPORT cx_result *cx_result_new_streaming(const cx_run_options *run);
/* ABI 1.1: RESULT's outputs were given to the run's output callback as they
 * happened (cx_run_options_emit_output), so the core does not give them
 * again; it still gives the cell's failure. */
CX_EXPORT void cx_result_set_streamed(cx_result *result);
CX_EXPORT void cx_result_free(cx_result *result);

/* Append LEN bytes of DATA to the cell's stdout or stderr.  LEN may be -1
 * for a NUL-terminated string. */
CX_EXPORT void cx_result_append_stdout(cx_result *result, const char *data, gssize len);
CX_EXPORT void cx_result_append_stderr(cx_result *result, const char *data, gssize len);

/* Append a MIME bundle to rich_outputs.  BUNDLE maps MIME types to their
 * data (a string, or for JSON types such as application/json any JSON
 * value).  The result takes a reference; the caller keeps its own.
 * Returns FALSE (and appends nothing) for an empty bundle. */
CX_EXPORT gboolean cx_result_add_output(cx_result *result, JsonObject *bundle);

/* Shorthand: append the bundle {MIME: TEXT}. */
CX_EXPORT void cx_result_add_output_text(cx_result *result, const char *mime, const char *text);

/* ABI 1.1: outputs as a notebook front end sees them.
 *
 * cx_result_add_display() appends a display_data output (and its BUNDLE to
 * rich_outputs, as cx_result_add_output() does).  METADATA may be NULL
 * (stored as {}).  DISPLAY_ID, when not NULL, names the output for later
 * updates (IPython's display(..., display_id=...)); an empty BUNDLE is kept
 * in "outputs" then, as a placeholder to update, but not in rich_outputs
 * until it has data.  Returns FALSE (nothing appended) for an empty bundle
 * without a display id.
 *
 * cx_result_add_execute_result() appends the value of the cell: an
 * execute_result output numbered EXECUTION_COUNT, and the last entry of
 * rich_outputs.
 *
 * cx_result_update_display() replaces data and metadata of every earlier
 * output named DISPLAY_ID, in "outputs" and rich_outputs alike; it returns
 * how many it replaced.  Whether or not it replaced any, a streaming
 * result gives the update to the output callback as update_display_data
 * (as ipykernel sends it: the display may be an earlier cell's), and
 * cx_notebook_run() applies it to the earlier cells that showed the id,
 * as nbclient does.
 *
 * cx_result_clear_output() clears what the cell has shown so far: stdout,
 * stderr, rich_outputs and "outputs".  With WAIT, it does so just before
 * the next output arrives instead (IPython's clear_output(wait=True)), so a
 * display can be replaced without flicker.
 *
 * The result takes references to BUNDLE and METADATA; the caller keeps its
 * own. */
CX_EXPORT gboolean cx_result_add_display(cx_result *result, JsonObject *bundle,
                                         JsonObject *metadata, const char *display_id);
CX_EXPORT gboolean cx_result_add_execute_result(cx_result *result, JsonObject *bundle,
                                                JsonObject *metadata, gint64 execution_count);
CX_EXPORT guint cx_result_update_display(cx_result *result, const char *display_id,
                                         JsonObject *bundle, JsonObject *metadata);
/* ABI 1.2: cx_result_add_execute_result() naming the output DISPLAY_ID (may
 * be NULL) for later updates, as a kernel's execute_result with a
 * transient display_id is. */
CX_EXPORT gboolean cx_result_add_execute_result_with_id(cx_result *result, JsonObject *bundle,
                                                        JsonObject *metadata,
                                                        gint64 execution_count,
                                                        const char *display_id);
/* ABI 1.2: give the output callback of a streaming result a Jupyter IOPub
 * message that is no notebook output -- comm_open, comm_msg or
 * comm_close, as a cell's ipykernel Comm sends them -- as CONTENT
 * (borrowed) with "output_type": MSG_TYPE, for a kernel to send on.
 * Nothing is kept in the result; without an output callback it goes
 * nowhere.  FALSE, and nothing given, for any other MSG_TYPE. */
CX_EXPORT gboolean cx_result_pass_message(cx_result *result, const char *msg_type,
                                          JsonObject *content);
CX_EXPORT void cx_result_clear_output(cx_result *result, gboolean wait);

/* ABI 1.1: an error shown without failing the cell, as IPython shows an
 * exception raised by a display formatter: an "error" output in "outputs"
 * where it happened (TRACEBACK may be NULL).  The cell's own failure is
 * cx_result_set_error(), whose error output is always the last. */
CX_EXPORT void cx_result_add_error_output(cx_result *result, const char *ename,
                                          const char *evalue, const char *traceback);
/* ABI 1.1: the same, its "traceback" being TRACEBACK_LINES (NULL-terminated,
 * copied) as they are, where cx_result_add_error_output() cuts a text at
 * its line breaks: a Jupyter kernel's traceback is a list whose entries
 * hold line breaks and colour codes.  A NUL is given as CX_RESULT_NUL, as
 * in cx_result_set_error(); lines that are not valid UTF-8 leave the
 * traceback empty. */
CX_EXPORT void cx_result_add_error_output_lines(cx_result *result, const char *ename,
                                                const char *evalue,
                                                const char *const *traceback_lines);

/* ABI 1.1: the ordered outputs described above, as a new array (free with
 * json_array_unref).  Stream text that is not UTF-8 is made valid as in
 * the JSON form; a NUL byte, which a JsonNode cannot hold, reads as U+FFFD
 * here but is kept by cx_result_to_json(). */
CX_EXPORT JsonArray *cx_result_list_outputs(const cx_result *result);

/* Mark the cell as failed with an error.  TYPE and MESSAGE must not be NULL;
 * TRACEBACK may be NULL (stored as "").  A second call replaces the first
 * error.  Sets success to FALSE.  A NUL character of MESSAGE or TRACEBACK
 * (an exception's str() may hold one) is given as CX_RESULT_NUL and read
 * back so by cx_result_get_error_message() and _traceback(). */
CX_EXPORT void cx_result_set_error(cx_result *result, const char *type,
                                   const char *message, const char *traceback);

/* ABI 1.1: how the error set by cx_result_set_error() shows in "outputs",
 * where it is the last output.  TRACEBACK_LINES, when not NULL
 * (NULL-terminated, copied; ignored unless valid UTF-8),
 * become that output's "traceback" in place of the lines of the error's
 * traceback: IPython's formatted traceback, with the colour codes a Jupyter
 * kernel sends, while "error"."traceback" keeps the plain text a program
 * reads (a NUL as CX_RESULT_NUL).  SHOWN FALSE: the failure has no error output at all, as IPython
 * fails a cell on a UsageError (an unknown magic) and only prints its
 * message on stderr, which the backend writes there itself.
 * cx_result_set_error() resets both: plain lines, shown.  In JSON, an
 * error with no error output last in "outputs" reads back as not shown. */
CX_EXPORT void cx_result_set_error_output(cx_result *result, const char *const *traceback_lines,
                                          gboolean shown);
/* ABI 1.1: TRUE when the result has an error and it has an error output. */
CX_EXPORT gboolean cx_result_get_error_output_shown(const cx_result *result);
/* ABI 1.1: the lines cx_result_set_error_output() gave (borrowed), or NULL
 * when the error output lists those of the error's traceback. */
CX_EXPORT const char *const *cx_result_get_error_output_traceback(const cx_result *result);

/* Set success without an error (a bundle read from JSON may say so). */
CX_EXPORT void cx_result_set_success(cx_result *result, gboolean success);

/* Set the extra top-level key KEY to VALUE (the result takes ownership of
 * VALUE).  KEY must not be one of the five standard keys; returns FALSE and
 * frees VALUE if it is. */
CX_EXPORT gboolean cx_result_set_extra(cx_result *result, const char *key, JsonNode *value);

/* Reading.  Strings are owned by the result and valid until it changes or is
 * freed.  LEN, when not NULL, receives the byte length. */
CX_EXPORT const char *cx_result_get_stdout(const cx_result *result, gsize *len);
CX_EXPORT const char *cx_result_get_stderr(const cx_result *result, gsize *len);
CX_EXPORT gboolean cx_result_get_success(const cx_result *result);
CX_EXPORT guint cx_result_get_n_outputs(const cx_result *result);
/* The INDEX-th bundle (borrowed), or NULL when out of range. */
CX_EXPORT JsonObject *cx_result_get_output(const cx_result *result, guint index);
/* TRUE when error is set; then the three getters return its fields, else NULL. */
CX_EXPORT gboolean cx_result_has_error(const cx_result *result);
CX_EXPORT const char *cx_result_get_error_type(const cx_result *result);
CX_EXPORT const char *cx_result_get_error_message(const cx_result *result);
CX_EXPORT const char *cx_result_get_error_traceback(const cx_result *result);
/* The extra key KEY (borrowed), or NULL. */
CX_EXPORT JsonNode *cx_result_get_extra(const cx_result *result, const char *key);
/* The extra keys, in the order they were set (NULL-terminated; g_strfreev). */
CX_EXPORT char **cx_result_list_extras(const cx_result *result);

/* JSON.  cx_result_to_json_node() returns a new node (free with
 * json_node_unref); cx_result_to_json() a newly allocated string, compact or
 * PRETTY, written with cx_json_to_string(): every byte of stdout and stderr
 * survives (NUL as \u0000; invalid UTF-8 becomes U+FFFD), which a JsonNode
 * cannot promise (NUL reads as U+FFFD there).  cx_result_from_json*() accept
 * exactly the schema above plus extra keys ("outputs" in the form above;
 * when missing it is made from the other keys), and fail with CX_ERROR_JSON
 * naming the offending key otherwise.  ABI 1.1: cx_result_from_json_node()
 * also takes CX_RESULT_NUL in the error's message and traceback, as
 * cx_json_from_string_keeping_nul() reads a \u0000 there. */
CX_EXPORT JsonNode *cx_result_to_json_node(const cx_result *result);
CX_EXPORT char *cx_result_to_json(const cx_result *result, gboolean pretty);
CX_EXPORT cx_result *cx_result_from_json_node(JsonNode *node, GError **error);
CX_EXPORT cx_result *cx_result_from_json(const char *text, GError **error);

/* A deep copy. */
CX_EXPORT cx_result *cx_result_copy(const cx_result *result);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_result, cx_result_free)

G_END_DECLS

#endif /* CELLEXEC_RESULT_H */
