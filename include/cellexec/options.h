/* cellexec/options.h: backend options and per-call run options.
 *
 * A plugin declares the options it accepts as a schema: an array of
 * cx_option_spec ending with an entry whose name is NULL.  The core checks
 * every value a user gives (config file section, `cellexec run -o`) against
 * that schema before the plugin sees it, so a plugin's create() receives a
 * cx_options whose values all parse as their declared types, with the
 * schema's defaults filled in.
 */
#ifndef CELLEXEC_OPTIONS_H
#define CELLEXEC_OPTIONS_H

#include <cellexec/common.h>

G_BEGIN_DECLS

/* Types of option values, as written in a config file. */
typedef enum {
  CX_OPTION_STRING = 0, /* any text */
  CX_OPTION_BOOL,       /* true/false, yes/no, on/off, 1/0 */
  CX_OPTION_INT,        /* a decimal integer (gint64) */
  CX_OPTION_DOUBLE,     /* a decimal number, e.g. seconds: 2.5 */
  CX_OPTION_SIZE,       /* bytes with an optional K, M, G or T suffix (powers of 1024): 512M */
  CX_OPTION_PATH,       /* a file or directory name; "~/" is expanded */
  CX_OPTION_ENV,        /* KEY=VALUE pairs separated by ';' or newlines */
  /* ABI 1.1: limits, where 0 (or less) would be one nothing can meet and
   * "no limit" is the option left unset.  A value out of range is refused
   * when it is set (`config check`, -o), not when a cell first runs.  A
   * core older than 1.1 reports a plugin using them as faulty. */
  CX_OPTION_COUNT,      /* an integer from 1 (processes, seconds); read with get_int */
  CX_OPTION_SIZE_LIMIT, /* a size of at least 1 byte; read with get_size */
} cx_option_type;

/* One entry of a plugin's option schema.  All strings are static. */
typedef struct cx_option_spec {
  const char *name;          /* key in the config file, e.g. "timeout"; NULL ends the schema */
  cx_option_type type;
  const char *default_value; /* as text, or NULL for "unset" */
  const char *help;          /* one line, shown by `cellexec plugins` */
} cx_option_spec;

/* The name of a type ("string", "bool", ...), for messages and listings. */
CX_EXPORT const char *cx_option_type_name(cx_option_type type);

/* ---- Backend options ------------------------------------------------ */

/* New options for SCHEMA (NULL for an empty schema), holding its defaults.
 * BACKEND names the plugin in error messages.  SCHEMA must outlive them. */
CX_EXPORT cx_options *cx_options_new(const char *backend, const cx_option_spec *schema);
CX_EXPORT void cx_options_free(cx_options *options);

/* Set KEY to VALUE (text, as in a config file).  Fails with CX_ERROR_OPTION
 * when KEY is not in the schema (the message suggests the closest key) or
 * VALUE does not parse as the key's type or is outside its range (an int
 * below 0, an int or size below 1 for a key without a default; the message
 * names the key, the value and what is accepted). */
CX_EXPORT gboolean cx_options_set(cx_options *options, const char *key,
                                  const char *value, GError **error);

/* TRUE when KEY has a value (set, or a non-NULL default). */
CX_EXPORT gboolean cx_options_has(const cx_options *options, const char *key);

/* Typed getters.  KEY must be in the schema with a matching type (CX_OPTION_PATH
 * reads with get_string; CX_OPTION_SIZE with get_size).  An unset key returns
 * the FALLBACK given.  Strings are owned by OPTIONS. */
CX_EXPORT const char *cx_options_get_string(const cx_options *options, const char *key, const char *fallback);
CX_EXPORT gboolean cx_options_get_bool(const cx_options *options, const char *key, gboolean fallback);
CX_EXPORT gint64 cx_options_get_int(const cx_options *options, const char *key, gint64 fallback);
CX_EXPORT double cx_options_get_double(const cx_options *options, const char *key, double fallback);
CX_EXPORT guint64 cx_options_get_size(const cx_options *options, const char *key, guint64 fallback);
/* A CX_OPTION_ENV value as a NULL-terminated KEY=VALUE vector (free with
 * g_strfreev), or NULL when unset. */
CX_EXPORT char **cx_options_get_env(const cx_options *options, const char *key);

/* The backend name and schema the options were made for. */
CX_EXPORT const char *cx_options_get_backend(const cx_options *options);
CX_EXPORT const cx_option_spec *cx_options_get_schema(const cx_options *options);

/* ---- Timeouts --------------------------------------------------------- */

/* The longest timeout accepted, in seconds: one year (365 days). */
#define CX_TIMEOUT_MAX 31536000.0

/* The one rule for every timeout (the CLI's --timeout, a backend's
 * "timeout" option in a config file or -o, cx_run_options_set_timeout()):
 * a finite number of seconds from 0 (no timeout) to CX_TIMEOUT_MAX.
 * cx_timeout_check() fails with CX_ERROR_OPTION for any other value, the
 * message saying what is accepted. */
CX_EXPORT gboolean cx_timeout_check(double seconds, GError **error);
/* Parse TEXT (a decimal number such as "2.5", in the C locale) as a timeout
 * by that rule; on success store it in *SECONDS (may be NULL). */
CX_EXPORT gboolean cx_timeout_parse(const char *text, double *seconds, GError **error);

/* ---- Run options: the per-call part of run_cell ------------------------ */

CX_EXPORT cx_run_options *cx_run_options_new(void);
CX_EXPORT void cx_run_options_free(cx_run_options *run);
CX_EXPORT cx_run_options *cx_run_options_copy(const cx_run_options *run);

/* Working directory for the cell (NULL: the backend's own). */
CX_EXPORT void cx_run_options_set_cwd(cx_run_options *run, const char *cwd);
CX_EXPORT const char *cx_run_options_get_cwd(const cx_run_options *run);

/* Environment variables for the cell.  ASSIGNMENT is "KEY=VALUE"; a later
 * assignment to the same KEY replaces the earlier one.  Returns FALSE for a
 * string without '=' or with an empty KEY. */
CX_EXPORT gboolean cx_run_options_add_env(cx_run_options *run, const char *assignment);
/* NULL-terminated KEY=VALUE vector owned by RUN (never NULL; may be empty). */
CX_EXPORT const char *const *cx_run_options_get_env(const cx_run_options *run);

/* Deadline in seconds for the cell: a finite number from 0 (the default:
 * none) to CX_TIMEOUT_MAX.  Any other value (negative, NaN, infinite, too
 * large) is a programming error: it is reported with g_critical() and the
 * timeout is left as it was.  Check values from users with
 * cx_timeout_parse() or cx_timeout_check() first. */
CX_EXPORT void cx_run_options_set_timeout(cx_run_options *run, double seconds);
CX_EXPORT double cx_run_options_get_timeout(const cx_run_options *run);

/* Ask for the cell to run in a separate process (default FALSE). */
CX_EXPORT void cx_run_options_set_use_subprocess(cx_run_options *run, gboolean use_subprocess);
CX_EXPORT gboolean cx_run_options_get_use_subprocess(const cx_run_options *run);

/* Restrict rich outputs to these MIME types.  With none added, every type
 * is allowed.  cx_run_options_mime_allowed() tells whether MIME passes. */
CX_EXPORT void cx_run_options_add_allowed_mime_type(cx_run_options *run, const char *mime);
/* NULL-terminated vector owned by RUN, or NULL when every type is allowed. */
CX_EXPORT const char *const *cx_run_options_get_allowed_mime_types(const cx_run_options *run);
CX_EXPORT gboolean cx_run_options_mime_allowed(const cx_run_options *run, const char *mime);

/* ABI 1.1: output as it happens.  CALLBACK gets each output of the cell
 * when the cell makes it, as an nbformat-style object (borrowed for the
 * call): {"output_type": "stream", "name": "stdout" or "stderr", "text":
 * the new text}, "display_data" and "execute_result" as in the result's
 * outputs (a display's id in "transient": {"display_id": ...}),
 * {"output_type": "update_display_data", "data", "metadata", "transient"},
 * {"output_type": "clear_output", "wait": bool}, and "error" (an error
 * shown, or the cell's failure, last).  The result still holds everything
 * at the end.  Backends that run cells as they go (local, subprocess) call
 * it while the cell runs, from the thread running the cell or one of the
 * backend's own, one call at a time per cell; for any other backend the
 * core calls it with every output once the cell is over.  The callback
 * must not call into cellexec for the same backend.  A stream that goes
 * past the backend's output limit (subprocess's output-limit) is given as
 * the result keeps it: its head as it comes, then, once the cell is over,
 * the line saying how much was left out and the tail.  While a local cell
 * captures file descriptors 1 and 2 (its default), what the callback
 * writes to them lands in the cell: write to copies made before (dup()),
 * as `cellexec run` does.  NULL: none. */
typedef void (*cx_output_func)(JsonObject *output, gpointer user_data);
CX_EXPORT void cx_run_options_set_output_callback(cx_run_options *run, cx_output_func callback,
                                                  gpointer user_data);
CX_EXPORT cx_output_func cx_run_options_get_output_callback(const cx_run_options *run,
                                                           gpointer *user_data);
/* ABI 1.1, for backends: give OUTPUT (borrowed; its "data" may be replaced
 * by the MIME filter) to RUN's output callback now, one call at a time.
 * FALSE when RUN has no callback.  A backend that streams this way marks
 * its result with cx_result_set_streamed(); cx_result_new_streaming() does
 * both for a result built while the cell runs. */
CX_EXPORT gboolean cx_run_options_emit_output(const cx_run_options *run, JsonObject *output);

/* ABI 1.2: what answers the cell's input() and getpass(), as a front end
 * answers a kernel's input_request.  CALLBACK gets the PROMPT and whether
 * the answer is a PASSWORD (not to be echoed) and returns the line typed,
 * without its newline (new, freed with g_free()), or NULL with ERROR: the
 * cell's call then raises KeyboardInterrupt when ERROR is
 * G_IO_ERROR_CANCELLED (the wait was interrupted), else EOFError with
 * ERROR's message.  It is called on a thread of the backend while
 * the cell waits; the cell's timeout goes on running.  Without one (NULL,
 * the default) input() raises StdinNotImplementedError at once, as in a
 * kernel whose front end does not allow stdin.  The local, subprocess and
 * jupyter backends ask it; others never do. */
typedef char *(*cx_input_func)(const char *prompt, gboolean password, gpointer user_data,
                               GError **error);
CX_EXPORT void cx_run_options_set_input_callback(cx_run_options *run, cx_input_func callback,
                                                 gpointer user_data);
CX_EXPORT cx_input_func cx_run_options_get_input_callback(const cx_run_options *run,
                                                         gpointer *user_data);
/* ABI 1.2, for backends: RUN's input callback's answer to PROMPT, or NULL
 * with ERROR (CX_ERROR_UNSUPPORTED when RUN has none). */
CX_EXPORT char *cx_run_options_ask_input(const cx_run_options *run, const char *prompt,
                                         gboolean password, GError **error);

/* ABI 1.2: whether the cell is one of the session's history (default
 * TRUE), as execute_request's store_history: a cell run with FALSE does
 * not advance the execution count, and its input reaches neither In, _iN
 * nor %history; its outputs and its effects on the namespace are as for
 * any cell.  A value it shows is still _ and the last cell's Out entry,
 * as IPython's display hook makes it whatever store_history says.  A kernel runs
 * what is not the user's cell this way: a comm message's handler, a silent
 * request.  The local, subprocess and jupyter backends honour it; a
 * backend that does not stores the cell as any other.  A NULL RUN reads
 * as TRUE. */
CX_EXPORT void cx_run_options_set_store_history(cx_run_options *run, gboolean store_history);
CX_EXPORT gboolean cx_run_options_get_store_history(const cx_run_options *run);

/* ABI 1.2: whether the output callback's text keeps a NUL the cell wrote
 * (in a stream, in an error) as the two bytes CX_RESULT_NUL (result.h),
 * which cx_json_to_string() writes as \u0000: for a caller that sends the
 * outputs on as JSON text, as `cellexec kernel` does.  Default FALSE: a
 * NUL reaches the callback as U+FFFD, as the JsonNode forms of a result
 * read it.  The local and subprocess backends honour it; the jupyter
 * backend reads a kernel's \u0000 as U+FFFD before any callback.  A NULL
 * RUN reads as FALSE. */
CX_EXPORT void cx_run_options_set_output_keeps_nul(cx_run_options *run, gboolean keeps_nul);
CX_EXPORT gboolean cx_run_options_get_output_keeps_nul(const cx_run_options *run);

/* The run options as a JSON object {"cwd", "env", "timeout",
 * "use_subprocess", "allowed_mime_types"} (new node), e.g. for recording. */
CX_EXPORT JsonNode *cx_run_options_to_json_node(const cx_run_options *run);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_options, cx_options_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_run_options, cx_run_options_free)

G_END_DECLS

#endif /* CELLEXEC_OPTIONS_H */
