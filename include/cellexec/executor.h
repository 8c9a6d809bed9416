/* cellexec/executor.h: the executor operations and debug exports.
 *
 * Language runtimes that embed Python (templating and prompt languages,
 * notebooks, rule engines) evaluate expressions and blocks against an
 * environment they own, bind host functions into it, and log every step.
 * These functions give them that on any backend whose plugin implements
 * the executor vtable (cx_plugin_info_has_executor()); a backend without an
 * operation fails with CX_ERROR_UNSUPPORTED and never restarts anything
 * silently.
 *
 * ENVIRONMENTS.  A cx_env is a Python namespace (a dict of globals) that
 * lives in a session: in the host's interpreter for `local`, in the
 * session's worker process for `subprocess`.  It is valid until freed or
 * until its session is closed, whichever comes first; free environments
 * before closing their session.
 *
 * VALUES cross as JSON (json-glib nodes), exactly or not at all: None/bool/
 * int/float/str/list/tuple/dict with string keys map to JSON.  Anything a
 * node cannot hold exactly stays in the session and crosses as a reference
 * {"$ref": ID, "repr": "..."}: objects of other types, ints outside the
 * 64-bit range, NaN and the infinities, strs holding NUL or lone
 * surrogates, and a dict with such a str as a key (the whole dict: a key
 * cannot be a reference).  A reference may be passed back (as a value, or
 * inside lists and objects) in later calls on the same session, and is the
 * same object again.  Values from the host reach Python as they are
 * (gint64, double, UTF-8 strings); a value JSON cannot express (NaN, a
 * string that is not UTF-8) fails the call.
 *
 * ERRORS.  When the Python code raises, the call fails with CX_ERROR_PYTHON
 * and cx_error_get_python() describes the exception.
 *
 * LIMITS.  An operation runs to completion: cx_session_interrupt() and the
 * timeout run option apply to cells, not to these operations.  Code that
 * may not terminate belongs in a cell with a timeout.
 */
#ifndef CELLEXEC_EXECUTOR_H
#define CELLEXEC_EXECUTOR_H

#include <cellexec/common.h>
#include <cellexec/plugin.h>

G_BEGIN_DECLS

typedef struct cx_backend cx_backend;
typedef struct cx_session cx_session;
typedef struct cx_env cx_env;

/* ---- Python exceptions ------------------------------------------------- */

/* What a CX_ERROR_PYTHON error carries; its message reads "TYPE: MESSAGE".
 * Strings are owned by the error. */
typedef struct {
  const char *type;      /* exception class name, e.g. "ZeroDivisionError" */
  const char *message;   /* str(exc) */
  const char *traceback; /* formatted traceback, line numbers as the host sees them */
  int line;              /* line of the step's code where it was raised (or
                          * made the call that raised), line offset applied;
                          * 0 when unknown */
} cx_python_error;

/* The Python details of ERROR, or NULL if ERROR is not CX_ERROR_PYTHON. */
CX_EXPORT const cx_python_error *cx_error_get_python(const GError *error);

/* For plugins: set ERROR to CX_ERROR_PYTHON with these details. */
CX_EXPORT void cx_set_python_error(GError **error, const char *type, const char *message,
                                   const char *traceback, int line);

/* ---- The operations ---------------------------------------------------- */

/* A new environment holding the globals CODE defines. */
CX_EXPORT cx_env *cx_session_execute_prelude(cx_session *session, const char *code,
                                             GError **error);

/* Run CODE in ENV, extending it, and return ENV; with ENV NULL, a new
 * environment.  A backend without this operation fails with
 * CX_ERROR_UNSUPPORTED (and ENV is left as it was). */
CX_EXPORT cx_env *cx_session_execute_prelude_incremental(cx_session *session, cx_env *env,
                                                         const char *code, GError **error);

/* The value of the expression CODE in ENV, with LOCALS (may be NULL; a JSON
 * object of name -> value) visible.  Returns a new node (null for None). */
CX_EXPORT JsonNode *cx_env_evaluate_inline(cx_env *env, const char *code, JsonObject *locals,
                                           GError **error);

/* CODE run as the body of a function: returns the value of its `return`
 * (null without one).  LOCALS are its local variables.  A name that exists
 * in ENV and that the block rebinds (as a global or a local) is written back
 * to ENV; new names stay local to the block. */
CX_EXPORT JsonNode *cx_env_execute_block(cx_env *env, const char *code, JsonObject *locals,
                                         GError **error);

/* CODE run for its effects on ENV, with BINDINGS (may be NULL) visible as
 * globals.  Line numbers in errors are shifted by LINE_OFFSET, so that they
 * point into the host's own source file. */
CX_EXPORT gboolean cx_env_execute_side_effects(cx_env *env, const char *code,
                                               JsonObject *bindings, int line_offset,
                                               GError **error);

/* Bind NAME in ENV to a Python function with exactly these parameters
 * (PARAMS, NULL-terminated) and DEFAULTS (may be NULL: name -> value) that
 * calls FUNCTION with the arguments.  inspect.signature() shows the
 * parameters and defaults.  FUNCTION may itself call back into the session
 * (nested calls).  DESTROY (may be NULL) is called on USER_DATA when ENV is
 * freed, or before this returns FALSE: either way exactly once. */
CX_EXPORT gboolean cx_env_create_dynamic_function(cx_env *env, const char *name,
                                                  const char *const *params,
                                                  JsonObject *defaults,
                                                  cx_host_function function,
                                                  gpointer user_data, GDestroyNotify destroy,
                                                  GError **error);

/* A type descriptor for the type expression CODE, e.g. for "list[int] | None":
 *   {"kind": "union", "args": [{"kind": "generic", "origin": {"kind": "builtin",
 *    "name": "list"}, "args": [{"kind": "builtin", "name": "int"}]}, {"kind": "none"}]}
 * Kinds: none, builtin (name), typing (name), union (args), literal (values),
 * generic (origin, args), class (module, qualname). */
CX_EXPORT JsonNode *cx_env_evaluate_type_expression(cx_env *env, const char *code,
                                                    GError **error);

/* The environment's contents as a JSON object (references for values with no
 * exact JSON form; a name that is not a str JSON can carry under its
 * repr()), as debug exports show it. */
CX_EXPORT JsonObject *cx_env_snapshot(cx_env *env, GError **error);

CX_EXPORT void cx_env_free(cx_env *env);

/* ---- Debug exporters -----------------------------------------------------
 *
 * Every executor operation and every run_cell of a session or backend with
 * an exporter becomes an event (cx_debug_event in plugin.h): UTC time,
 * executor (the backend name), step, code, inputs, environment after the
 * step, outputs, error.  Values are sanitised to printable form with size
 * caps; nothing is dropped without saying so.  Exports may contain prompts,
 * credentials and user data: redact what must not be written, and store
 * them accordingly.
 */

/* Options of the built-in exporters. */
typedef struct {
  size_t struct_size;          /* sizeof(cx_debug_export_options) */
  /* Names or glob patterns (NULL-terminated) whose keys and values are
   * written as "[redacted]", e.g. {"*TOKEN*", "*SECRET*", "*PASSWORD*",
   * NULL}.  Matching ignores case.  NULL: cx_debug_default_redact. */
  const char *const *redact;
  /* Longest text written for one value before it is cut (with a note of
   * how much was cut); 0: 4096 bytes. */
  gsize max_value_bytes;
} cx_debug_export_options;

/* {"*TOKEN*", "*SECRET*", "*PASSWORD*", "*API_KEY*", "*CREDENTIAL*", NULL} */
CX_EXPORT const char *const *cx_debug_default_redact(void);

/* A Markdown log (one section per event) or a JSON Lines log (one event
 * per line) written to PATH, created or truncated.  OPTIONS may be NULL.
 * Free with cx_debug_exporter_free(), which flushes and closes the file. */
CX_EXPORT cx_debug_exporter *cx_debug_exporter_new_markdown(const char *path,
                                                            const cx_debug_export_options *options,
                                                            GError **error);
CX_EXPORT cx_debug_exporter *cx_debug_exporter_new_jsonl(const char *path,
                                                         const cx_debug_export_options *options,
                                                         GError **error);
/* The exporter for PATH by its extension: .jsonl or .ndjson for JSON Lines,
 * anything else Markdown. */
CX_EXPORT cx_debug_exporter *cx_debug_exporter_new_for_path(const char *path,
                                                            const cx_debug_export_options *options,
                                                            GError **error);
/* Flush and destroy any exporter (calls its destroy method if it has one). */
CX_EXPORT void cx_debug_exporter_free(cx_debug_exporter *exporter);

/* Route events of SESSION / of BACKEND's stateless cells to EXPORTER (NULL:
 * none).  The exporter is borrowed: keep it alive while attached.  Events
 * of one exporter are serialised. */
CX_EXPORT void cx_session_set_debug_exporter(cx_session *session, cx_debug_exporter *exporter);
CX_EXPORT void cx_backend_set_debug_exporter(cx_backend *backend, cx_debug_exporter *exporter);

/* "<stem>_debug_export_<UTC timestamp>.md" in the current directory, for
 * SOURCE_PATH "dir/<stem>.ext" (e.g. "program.kedi"); a new string. */
CX_EXPORT char *cx_default_debug_export_path(const char *source_path);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_env, cx_env_free)

G_END_DECLS

#endif /* CELLEXEC_EXECUTOR_H */
