/* cellexec/result.h: the result bundle of one cell.
 *
 * A cx_result is what every backend returns from run_cell, in the shape
 * users of IPython-based executors know:
 *
 *   {"stdout": "hello\n", "stderr": "", "success": true, "error": null,
 *    "rich_outputs": [{"text/plain": "2"}]}
 *
 *   stdout, stderr  text the cell wrote, in full (bytes are kept as given;
 *                   the JSON form replaces invalid UTF-8 with U+FFFD).
 *   rich_outputs    one MIME bundle ({mime: data}) per display() call, in
 *                   order; the value of the cell's last expression, when it
 *                   has one, is the last entry.  Binary data (image/png,
 *                   image/jpeg, ...) is base64 text, as in Jupyter.
 *   success         false when the cell raised or the backend gave up on it.
 *   error           null, or {"type", "message", "traceback"}: the Python
 *                   exception class name, str(exc) and the formatted
 *                   traceback as one string.  Backends report failures of
 *                   their own with the same shape and types such as
 *                   TimeoutError, WorkerCrashed, KernelDied or
 *                   OutputLimitExceeded.
 *
 * Anything more (durations, truncation marks, ...) goes in extra top-level
 * keys set with cx_result_set_extra().  The five keys above never change
 * meaning.
 *
 * Plugins build results only with these functions, so the core may grow the
 * structure without breaking them.  A result is not thread-safe; it belongs
 * to one thread at a time.
 */
#ifndef CELLEXEC_RESULT_H
#define CELLEXEC_RESULT_H

#include <cellexec/common.h>

G_BEGIN_DECLS

/* A new, empty, successful result.  Free with cx_result_free(). */
CX_EXPORT cx_result *cx_result_new(void);
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

/* Mark the cell as failed with an error.  TYPE and MESSAGE must not be NULL;
 * TRACEBACK may be NULL (stored as "").  A second call replaces the first
 * error.  Sets success to FALSE. */
CX_EXPORT void cx_result_set_error(cx_result *result, const char *type,
                                   const char *message, const char *traceback);

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
 * PRETTY.  cx_result_from_json*() accept exactly the schema above plus extra
 * keys, and fail with CX_ERROR_JSON naming the offending key otherwise. */
CX_EXPORT JsonNode *cx_result_to_json_node(const cx_result *result);
CX_EXPORT char *cx_result_to_json(const cx_result *result, gboolean pretty);
CX_EXPORT cx_result *cx_result_from_json_node(JsonNode *node, GError **error);
CX_EXPORT cx_result *cx_result_from_json(const char *text, GError **error);

/* A deep copy. */
CX_EXPORT cx_result *cx_result_copy(const cx_result *result);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_result, cx_result_free)

G_END_DECLS

#endif /* CELLEXEC_RESULT_H */
