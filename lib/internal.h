/* Declarations shared between the core's own files; not installed. */
#ifndef CX_LIB_INTERNAL_H
#define CX_LIB_INTERNAL_H

#include <cellexec/cellexec.h>

/* A usable plugin's vtables, copied into zero-padded structures of this
 * core's size (see plugin.h, VERSIONING). */
typedef struct {
  const cx_plugin *descriptor;
  cx_backend_vtable backend;
  cx_executor_vtable executor;
  gboolean has_executor;
  guint32 flags;            /* the descriptor's CX_PLUGIN_* flags */
} cx__loaded_plugin;

/* The loaded plugin behind a usable registry entry (NULL if faulty). */
const cx__loaded_plugin *cx__plugin_info_get_loaded(const cx_plugin_info *info);

/* Whether REGISTRY has a plugin file named NAME, and the names of its
 * entries in search-path order (a NULL-terminated array of borrowed
 * strings), both without loading any plugin (registry.c). */
gboolean cx__registry_has_plugin(const cx_registry *registry, const char *name);
GPtrArray *cx__registry_names(const cx_registry *registry);

/* Parse VALUE as TYPE; on failure set ERROR with a message naming TYPE. */
gboolean cx__option_value_check(cx_option_type type, const char *value, GError **error);

/* The size of the descriptor in ABI 1.0; a plugin's struct_size may not be
 * smaller.  The registry and cellexec-probe judge by the same rule. */
#define CX__DESCRIPTOR_SIZE_1_0 (offsetof(cx_plugin, init) + sizeof(((cx_plugin *)0)->init))
/* The size from which the ABI 1.1 fields (min_core_abi_minor, flags) are
 * there to read. */
#define CX__DESCRIPTOR_SIZE_1_1 (offsetof(cx_plugin, flags) + sizeof(((cx_plugin *)0)->flags))

/* cellexec-probe prints this line last when the plugin it loaded returned
 * from its entry and init; the host kills a probe that takes longer than
 * CX__PROBE_SECONDS. */
#define CX__PROBE_VERDICT "cellexec-probe: loaded"
#define CX__PROBE_SECONDS 10

/* Verdicts of the plugin probe (plugin_probe.c), kept in
 * $XDG_CACHE_HOME/cellexec/plugin-probes and valid while a file is
 * unchanged. */
typedef struct cx__probe_cache cx__probe_cache;
cx__probe_cache *cx__probe_cache_open(void);
/* Merges the verdicts reached since the last save into the cache file. */
void cx__probe_cache_save(cx__probe_cache *cache);
/* Saves new verdicts, then frees CACHE. */
void cx__probe_cache_close(cx__probe_cache *cache);
/* NULL when PATH loads without crashing, hanging or exiting (in a separate
 * process running cellexec-probe, or as remembered), else why it must not
 * be loaded, as a clause ("it crashed while loading ..."; g_free it). */
char *cx__probe_plugin(cx__probe_cache *cache, const char *path);

struct cx_backend {
  cx_registry *registry;
  const cx_plugin_info *plugin;
  const cx__loaded_plugin *loaded;
  cx_options *options;
  cx_backend_instance *instance;
  cx_run_options *defaults; /* from the options cwd/env/timeout; never NULL */
  gboolean has_defaults;
  cx_debug_exporter *exporter; /* borrowed; NULL: none */
  cx_debug_exporter *owned_exporter; /* from the config's debug-export */
  cx_recorder *recorder; /* a reference; NULL: none (record.c) */
  gint sessions_opened;  /* atomic: numbers its sessions */
  /* The caller's reference plus one per open session (atomic): the plugin's
   * destroy runs when the last goes, never under an open session. */
  gint references;
  /* use_subprocess cells of a plugin without CX_PLUGIN_HANDLES_USE_SUBPROCESS
   * run on ISOLATION, opened on first use with CONFIG's options for it. */
  cx_config *config; /* the config the backend was opened from, or NULL */
  GMutex isolation_lock;
  cx_backend *isolation;
  /* The sessions open on it, for cx_backend_interrupt_all. */
  GMutex sessions_lock;
  GPtrArray *open_sessions;
};

struct cx_session {
  cx_backend *backend;
  cx_session_instance *instance;
  cx_debug_exporter *exporter; /* borrowed; NULL: none */
  cx_recorder *recorder; /* a reference; NULL: none (record.c) */
  guint number;          /* its number on its backend, from 1 (in recordings) */
  guint cells_run;       /* counted under the session's lock */
};

/* Set ERROR to CX_ERROR_UNSUPPORTED, "backend 'NAME' does not support
 * WHAT"; returns FALSE. */
gboolean cx__unsupported(const cx_backend *backend, const char *what, GError **error);

/* Report one step to EXPORTER (may be NULL: nothing happens).  ERROR, when
 * set, is the step's failure.  Serialised across threads. */
void cx__debug_emit(cx_debug_exporter *exporter, const char *executor, const char *step,
                    const char *code, JsonNode *inputs, JsonNode *environment,
                    JsonNode *outputs, const GError *error);

/* A result bundle's failure as an event error: type, message, traceback. */
void cx__debug_emit_result(cx_debug_exporter *exporter, const char *executor, const char *step,
                           const char *code, JsonNode *inputs, const cx_result *result,
                           const GError *error);

/* Redaction by name, shared by debug exports and recordings (redact.c):
 * PATTERNS made from globs (NULL: the defaults) match names ignoring case.
 * cx__redact_assignment() returns "KEY=[redacted]" for a "KEY=VALUE" entry
 * whose KEY matches, else NULL. */
GPtrArray *cx__redact_patterns_new(const char *const *globs);
gboolean cx__redact_matches(GPtrArray *patterns, const char *name);
char *cx__redact_assignment(GPtrArray *patterns, const char *text);

/* Observers of every backend's sessions and cells (the recorder,
 * record.c), so that backend.c knows none of them by name.  Each hook may
 * be NULL.  cell_done is told of a cell of SESSION (NULL: stateless) as
 * its cell CELL (counted under the session's lock, so in the order cells
 * ran), in the thread that ran it; session_closed and backend_closed come
 * last, when the session or the backend goes. */
typedef struct {
  void (*session_opened)(cx_backend *backend, cx_session *session);
  void (*cell_done)(cx_backend *backend, cx_session *session, guint cell, const char *code,
                    const cx_run_options *run, const cx_result *result, const GError *failure);
  void (*session_closed)(cx_session *session);
  void (*backend_closed)(cx_backend *backend);
} cx__cell_observer;
/* OBSERVER (static: never freed) is told from now on; adding one twice
 * adds it once.  At most CX__MAX_CELL_OBSERVERS. */
#define CX__MAX_CELL_OBSERVERS 4
void cx__cell_observer_add(const cx__cell_observer *observer);

/* Bytes no valid UTF-8 holds, standing in JsonNode strings for what they
 * cannot hold (json_text.c, json_exact.c): a NUL character anywhere in a
 * string; and, at the start of a string, a number json-glib cannot hold
 * exactly, whose JSON text follows.  Both writers of json_text.c write
 * them back as \u0000 and as the number. */
#define CX__JSON_NUL_MARKER CX_RESULT_NUL
#define CX__JSON_NUMBER_MARKER "\xc0\x81"

/* The JSON value in TEXT with every value kept exactly: \u0000 as the NUL
 * marker, an integer beyond 64 bits or a number beyond a double as the
 * number marker and its text; otherwise as cx_json_from_string()
 * (json_exact.c).  CX_ERROR_UNSUPPORTED for a text it cannot keep so. */
JsonNode *cx__json_from_string_exact(const char *text, gssize length, GError **error);
/* The JSON text of the number NODE keeps (the number marker's string), or
 * NULL when NODE is something else. */
const char *cx__json_kept_number(JsonNode *node);
/* TRUE when NODE is a string value that is text, not a kept number: what a
 * reader of an exactly read document checks where JSON has a string. */
gboolean cx__json_node_is_text(JsonNode *node);
/* The value of the four hex digits at P (which has four bytes), or -1. */
int cx__json_hex4(const char *p);

/* DATA (LEN bytes) as valid UTF-8 for a JsonNode string: invalid
 * sequences become U+FFFD, and so does NUL unless KEEP_NUL, which marks it
 * for cx_json_to_string() to write as \u0000 (json_text.c). */
char *cx__json_text_from_bytes(const char *data, gsize len, gboolean keep_nul);
/* FALSE with ERROR when TEXT (LEN bytes) nests arrays and objects deeper
 * than CX_JSON_MAX_DEPTH (CX_ERROR_JSON), or holds more than
 * CX_JSON_MAX_VALUES values or CX_JSON_MAX_BYTES bytes
 * (CX_ERROR_TOO_LARGE); the one check cx_json_from_string makes before
 * json-glib reads the text (json_text.c). */
gboolean cx__json_check_bounds(const char *text, gsize len, GError **error);
/* The same with MAX_DEPTH levels, the error saying that READER reads no
 * more. */
gboolean cx__json_check_bounds_at_depth(const char *text, gsize len, guint max_depth,
                                        const char *reader, GError **error);
/* cx_json_from_string() of at most MAX_VALUES values (json_text.c). */
JsonNode *cx__json_parse_bounded(const char *text, gssize length, guint max_values,
                                 GError **error);
/* NODE as Python's json.dumps(NODE, sort_keys=True, indent=INDENT,
 * ensure_ascii=False) writes it: how nbformat writes notebooks. */
char *cx__json_to_python_text(JsonNode *node, guint indent);
/* A copy of NODE that shares nothing with it, down to every object, array
 * and value (json_node_copy() shares them, and their reference counts are
 * not atomic): safe to change, and to use from another thread. */
JsonNode *cx__json_deep_copy(JsonNode *node);
JsonObject *cx__json_object_deep_copy(JsonObject *object);

/* What every timeout must be (cx_timeout_check), for error messages. */
#define CX__TIMEOUT_RULE \
  "expected a number of seconds from 0 (no timeout) to 31536000 (365 days)"

/* RUN with DEFAULTS filling in only what RUN leaves unset (cwd, timeout,
 * the environment variables RUN does not name), as a new copy: every
 * other field (callbacks, store_history, MIME types, use_subprocess) is
 * RUN's own (run_options.c). */
cx_run_options *cx__run_options_merge(const cx_run_options *run, const cx_run_options *defaults);

/* The backend options the core interprets: an option of a plugin's schema
 * with one of these names and types is the default of that run option for
 * every call (backend.c), and its value is checked by the run option's own
 * rule when set (options.c), so a config cannot hold one the CLI refuses.
 * The table ends with a NULL name (run_options.c). */
typedef struct {
  const char *name;
  cx_option_type type;
  gboolean (*check)(const char *value); /* NULL: the option type's own check */
  const char *rule;                     /* what CHECK wants, for errors */
  void (*apply)(cx_run_options *run, const cx_options *options, const char *name);
} cx__run_option_default;
extern const cx__run_option_default cx__run_option_defaults[];

/* [cellexec] use-subprocess-backend when the config does not say. */
#define CX__DEFAULT_USE_SUBPROCESS_BACKEND "subprocess"

/* BUNDLE with only the MIME types RUN allows, as a new object; NULL when
 * RUN allows every one it has (run_options.c). */
JsonObject *cx__run_options_filter_bundle(const cx_run_options *run, JsonObject *bundle);

/* cx_result_list_outputs() with each NUL of a stream or an error as the
 * NUL marker, for a notebook to keep (result.c). */
JsonArray *cx__result_list_outputs_keeping_nul(const cx_result *result);
/* The display id of output I of those lists (NULL: none), and the cell's
 * update_display_data messages, in order, as {display_id, data, metadata}
 * objects (borrowed; NULL: none): what a later cell changes of an earlier
 * cell's displays (result.c). */
const char *cx__result_output_display_id(const cx_result *result, guint i);
JsonArray *cx__result_display_updates(const cx_result *result);

/* Keep only the MIME types RUN allows in RESULT's outputs: every backend
 * honours --mime, whatever its plugin does (result.c). */
void cx__result_filter_mime(cx_result *result, const cx_run_options *run);

/* After a run with RUN's output callback: a result built with
 * cx_result_new_streaming() has streamed its outputs, and now gives its
 * failure; any other gives all its outputs now (result.c). */
void cx__result_finish_streaming(cx_result *result, const cx_run_options *run);

/* Writing where a cell may have written first (safe_file.c): no symbolic
 * link is followed, neither among PATH's directories nor at PATH itself.
 * WHAT names the file in errors ("the recording"), which say what to do.
 *
 * cx__safe_file_replace() puts LENGTH bytes of DATA at PATH atomically: a
 * new file beside it (mode 0666 less the umask, or the replaced file's
 * own), fsync'd and renamed over PATH, which replaces a link instead of
 * writing through it; a character device (a terminal, /dev/null) is
 * written to; a named pipe, socket or directory is refused.  On failure
 * PATH is as it was.
 *
 * cx__safe_file_open_append() opens PATH to append (TRUNCATE: emptied once
 * checked), creating it as above, and refuses without blocking what is not
 * a regular file and a file with more than one hard link; a descriptor
 * (O_CLOEXEC) or -1. */
gboolean cx__safe_file_replace(const char *path, const char *what, const char *data,
                               gsize length, GError **error);
int cx__safe_file_open_append(const char *path, const char *what, gboolean truncate,
                              GError **error);

/* A copy of CONFIG, for a backend to keep. */
cx_config *cx__config_copy(const cx_config *config);

/* Up to MAX + 1 bytes of FD (the one more tells it is longer than MAX),
 * NUL-terminated, their number in *LENGTH; a first buffer of SIZE_HINT + 1
 * bytes.  NULL with *SAVED_ERRNO when read() failed (file_read.c). */
char *cx__read_fd_bounded(int fd, gsize max, gsize size_hint, gsize *length, int *saved_errno);

/* The largest config file read, in bytes (config.c). */
#define CX__CONFIG_MAX_SIZE (1024 * 1024)

/* The executor vtable of SESSION's plugin, or NULL when it has none. */
static inline const cx_executor_vtable *
cx__executor_of(const cx_session *session)
{
  const cx__loaded_plugin *loaded = session->backend->loaded;
  return loaded->has_executor ? &loaded->executor : NULL;
}

/* Take / give back SESSION's lock (recursive): one call at a time runs on
 * a session, whatever its backend does.  cx_session_run_cell holds it. */
void cx__session_lock(cx_session *session);
void cx__session_unlock(cx_session *session);

/* After a plugin METHOD of BACKEND failed: ERROR gets PLUGIN_ERROR (taken
 * over), or, when the plugin broke the contract and gave none, an error
 * naming the plugin and the method, so that no caller sees a failure
 * without a GError. */
void cx__plugin_failure(const cx_backend *backend, const char *method, GError *plugin_error,
                        GError **error);

#endif /* CX_LIB_INTERNAL_H */
