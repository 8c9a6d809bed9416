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
} cx__loaded_plugin;

/* The loaded plugin behind a usable registry entry (NULL if faulty). */
const cx__loaded_plugin *cx__plugin_info_get_loaded(const cx_plugin_info *info);

/* Parse VALUE as TYPE; on failure set ERROR with a message naming TYPE. */
gboolean cx__option_value_check(cx_option_type type, const char *value, GError **error);

/* The size of the descriptor in ABI 1.0; a plugin's struct_size may not be
 * smaller.  The registry and cellexec-probe judge by the same rule. */
#define CX__DESCRIPTOR_SIZE_1_0 (offsetof(cx_plugin, init) + sizeof(((cx_plugin *)0)->init))

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
  /* The caller's reference plus one per open session (atomic): the plugin's
   * destroy runs when the last goes, never under an open session. */
  gint references;
};

struct cx_session {
  cx_backend *backend;
  cx_session_instance *instance;
  cx_debug_exporter *exporter; /* borrowed; NULL: none */
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

/* DATA (LEN bytes) as valid UTF-8 for a JsonNode string: invalid
 * sequences become U+FFFD, and so does NUL unless KEEP_NUL, which marks it
 * for cx_json_to_string() to write as \u0000 (json_text.c). */
char *cx__json_text_from_bytes(const char *data, gsize len, gboolean keep_nul);

/* What every timeout must be (cx_timeout_check), for error messages. */
#define CX__TIMEOUT_RULE \
  "expected a number of seconds from 0 (no timeout) to 31536000 (365 days)"

/* The largest config file read, in bytes (config.c). */
#define CX__CONFIG_MAX_SIZE (1024 * 1024)

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
