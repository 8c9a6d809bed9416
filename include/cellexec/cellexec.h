/* cellexec/cellexec.h: the client API of libcellexec.
 *
 * cellexec runs Python code cells through swappable backends, each a plugin
 * (see plugin.h).  A typical client:
 *
 *   g_autoptr(GError) error = NULL;
 *   g_autoptr(cx_backend) backend = cx_backend_open_configured(NULL, NULL, &error);
 *   if (backend == NULL) { g_printerr("%s\n", error->message); return 2; }
 *   g_autoptr(cx_result) result = cx_backend_run_cell(backend, "print('hi')\n1 + 1", NULL, &error);
 *   g_autofree char *json = cx_result_to_json(result, FALSE);
 *
 * Build with `pkg-config --cflags --libs cellexec`.
 *
 * Threads: a registry, config and backend may be shared between threads;
 * several threads may run cells on one backend at once, subject to what the
 * plugin documents.  A session runs one cell at a time.
 */
#ifndef CELLEXEC_CELLEXEC_H
#define CELLEXEC_CELLEXEC_H

#include <cellexec/common.h>
#include <cellexec/options.h>
#include <cellexec/result.h>
#include <cellexec/plugin.h>
#include <cellexec/executor.h>
#include <cellexec/notebook.h>
#include <cellexec/record.h>

G_BEGIN_DECLS

typedef struct cx_registry cx_registry;
typedef struct cx_plugin_info cx_plugin_info;
typedef struct cx_config cx_config;
typedef struct cx_backend cx_backend;
typedef struct cx_session cx_session;

/* ---- Registry: finding and loading plugins -------------------------------
 *
 * The search path is, in order: the directories in $CELLEXEC_PLUGIN_PATH
 * (colon-separated), then EXTRA_DIRS (the config's plugin-path), then the
 * installed plugins directory (cx_plugins_dir()).  A plugin named NAME is
 * the file NAME.so; its descriptor must carry the same name.
 *
 * First on the path wins: a later file of the same name is shadowed (listed
 * as a faulty entry with CX_ERROR_DUPLICATE naming the winner, and never
 * loaded), and the winner lists it (cx_plugin_info_get_shadowed_paths), so
 * that a plugin which takes the place of a built-in one can be noticed.
 *
 * Creating a registry only lists the directories.  An entry is examined
 * when it is first asked for (cx_registry_lookup, cx_registry_get_plugin):
 * its file is tried in a separate process (cellexec-probe, killed after 10
 * seconds), so that a plugin that crashes, hangs or exits in its entry or
 * init takes down that process instead of this one; then it is loaded
 * (dlopen RTLD_NOW | RTLD_LOCAL), its descriptor and schema checked and its
 * init called.  The probe's verdicts are cached in
 * $XDG_CACHE_HOME/cellexec/plugin-probes while a file is unchanged
 * (cx_registry_forget_probes() clears them).  Without cellexec-probe no
 * plugin is loaded: every entry is faulty and says why.  A file that
 * cannot be used stays listed as a faulty entry with the reason, and
 * selecting it fails with that reason.  Loaded plugins are never unloaded
 * (an embedded interpreter cannot be).
 */

/* Scan the default search path plus EXTRA_DIRS (NULL-terminated, may be NULL). */
CX_EXPORT cx_registry *cx_registry_new(const char *const *extra_dirs);
/* Scan exactly DIRS, nothing else (for tests and tools). */
CX_EXPORT cx_registry *cx_registry_new_for_path(const char *const *dirs);
CX_EXPORT cx_registry *cx_registry_ref(cx_registry *registry);
CX_EXPORT void cx_registry_unref(cx_registry *registry);

/* The directories scanned, in order (NULL-terminated, owned by REGISTRY). */
CX_EXPORT const char *const *cx_registry_get_search_path(const cx_registry *registry);
/* Every entry found, faulty ones included, in search-path order. */
CX_EXPORT guint cx_registry_get_n_plugins(const cx_registry *registry);
CX_EXPORT const cx_plugin_info *cx_registry_get_plugin(const cx_registry *registry, guint index);
/* The entry that NAME selects, or NULL with CX_ERROR_NOT_FOUND (listing the
 * directories searched).  A faulty entry is returned as is: check it with
 * cx_plugin_info_is_usable(). */
CX_EXPORT const cx_plugin_info *cx_registry_lookup(const cx_registry *registry,
                                                   const char *name, GError **error);

/* The directory plugins are installed in, compiled in. */
CX_EXPORT const char *cx_plugins_dir(void);

/* One registry entry.  Strings are owned by the registry. */
CX_EXPORT const char *cx_plugin_info_get_name(const cx_plugin_info *info);  /* file stem if faulty */
CX_EXPORT const char *cx_plugin_info_get_path(const cx_plugin_info *info);
CX_EXPORT const char *cx_plugin_info_get_version(const cx_plugin_info *info);     /* NULL if unknown */
CX_EXPORT const char *cx_plugin_info_get_description(const cx_plugin_info *info); /* NULL if unknown */
/* The ABI the plugin declares; 0.0 when its entry could not be read. */
CX_EXPORT void cx_plugin_info_get_abi(const cx_plugin_info *info, guint *major, guint *minor);
/* TRUE when the plugin loaded and can be opened. */
CX_EXPORT gboolean cx_plugin_info_is_usable(const cx_plugin_info *info);
/* Why the entry is faulty (NULL when usable).  The message names the file,
 * the reason, both ABIs and what to do. */
CX_EXPORT const GError *cx_plugin_info_get_error(const cx_plugin_info *info);
/* The option schema (NULL-terminated by name; never NULL for usable entries). */
CX_EXPORT const cx_option_spec *cx_plugin_info_get_options(const cx_plugin_info *info);
/* TRUE when the plugin implements the executor vtable. */
CX_EXPORT gboolean cx_plugin_info_has_executor(const cx_plugin_info *info);
/* ABI 1.1: the optional methods a usable plugin implements, by their vtable
 * names ("session_open", "interrupt", "query", "evaluate_inline", ...),
 * NULL-terminated, owned by the registry; empty for a faulty entry. */
CX_EXPORT const char *const *cx_plugin_info_get_optional_methods(const cx_plugin_info *info);
/* ABI 1.1: the files of the same name later on the search path that this
 * entry shadows, NULL-terminated, owned by the registry; NULL when none. */
CX_EXPORT const char *const *cx_plugin_info_get_shadowed_paths(const cx_plugin_info *info);
/* ABI 1.1: the descriptor's CX_PLUGIN_* flags (0 for a faulty entry). */
CX_EXPORT guint32 cx_plugin_info_get_flags(const cx_plugin_info *info);

/* ABI 1.1: forget every cached probe verdict, so that the next registry
 * probes each plugin again (after a plugin hung only because the machine
 * was busy, say).  FALSE with ERROR when the cache cannot be removed. */
CX_EXPORT gboolean cx_registry_forget_probes(GError **error);

/* ---- Config files (GKeyFile) --------------------------------------------
 *
 *   [cellexec]
 *   # the plugin to use (default: local)
 *   backend = subprocess
 *   # extra plugin directories, searched after $CELLEXEC_PLUGIN_PATH
 *   plugin-path = /opt/a;/opt/b
 *   # log every step to this file (Markdown, or JSON Lines for .jsonl)
 *   debug-export = runtime-debug.md
 *   # where cells asking for use_subprocess run (default: subprocess)
 *   use-subprocess-backend = subprocess
 *   # append every cell and its result to this recording (record.h)
 *   record = cells.jsonl
 *
 *   # options of a backend, in a section named after the plugin
 *   [subprocess]
 *   timeout = 2.0
 *
 * Looked up in this order, the first that exists wins: the explicit path,
 * $CELLEXEC_CONFIG, $XDG_CONFIG_HOME/cellexec/config (default
 * ~/.config/cellexec/config), /etc/cellexec/config.  With none, an empty
 * config: backend local, defaults everywhere.
 *
 * A config is UTF-8 text of at most 1 MiB without NUL bytes, and sets each
 * key of a section once (a section repeated further down is the same
 * section); loading one that is not fails with CX_ERROR_CONFIG, naming the
 * line where there is one.  A file is read no further than that limit.
 */

/* Load the config an explicit PATH (may be NULL) selects by the order above.
 * An explicit PATH or $CELLEXEC_CONFIG that does not exist is an error. */
CX_EXPORT cx_config *cx_config_load(const char *path, GError **error);
/* Load exactly PATH. */
CX_EXPORT cx_config *cx_config_load_file(const char *path, GError **error);
/* Parse config text; ORIGIN names it in messages. */
CX_EXPORT cx_config *cx_config_load_data(const char *data, const char *origin, GError **error);
CX_EXPORT cx_config *cx_config_new_empty(void);
CX_EXPORT void cx_config_free(cx_config *config);

/* The file the config came from, or NULL. */
CX_EXPORT const char *cx_config_get_path(const cx_config *config);
/* [cellexec] backend, default "local". */
CX_EXPORT const char *cx_config_get_backend(const cx_config *config);
/* [cellexec] plugin-path as a NULL-terminated vector (owned by CONFIG). */
CX_EXPORT const char *const *cx_config_get_plugin_path(const cx_config *config);

/* [cellexec] debug-export, or NULL. */
CX_EXPORT const char *cx_config_get_debug_export(const cx_config *config);
/* ABI 1.1: [cellexec] use-subprocess-backend, default "subprocess": the
 * backend that runs a use_subprocess cell of a plugin which does not serve
 * that run option itself (see CX_PLUGIN_HANDLES_USE_SUBPROCESS), with this
 * config's options for it. */
CX_EXPORT const char *cx_config_get_use_subprocess_backend(const cx_config *config);
/* ABI 1.1: [cellexec] record, or NULL: the recording
 * cx_backend_open_configured() appends every cell to (record.h). */
CX_EXPORT const char *cx_config_get_record(const cx_config *config);

/* Options for PLUGIN: its schema's defaults overridden by the config's
 * section named after it.  An unknown key or a bad value fails with
 * CX_ERROR_OPTION naming section, key and value (and the closest valid key). */
CX_EXPORT cx_options *cx_config_get_backend_options(const cx_config *config,
                                                    const cx_plugin_info *plugin,
                                                    GError **error);

/* ABI 1.1: FALSE with CX_ERROR_CONFIG when a section of CONFIG names no
 * plugin on REGISTRY's path (a misspelled [subproces] would otherwise be
 * ignored, and the limits in it with it), naming the closest plugin.
 * Opening a backend from a config (cx_backend_open_configured, `cellexec
 * run`) checks this; cx_config_check() does too. */
CX_EXPORT gboolean cx_config_check_sections(const cx_config *config,
                                            const cx_registry *registry, GError **error);

/* Check the whole config against REGISTRY: the [cellexec] keys, that the
 * selected backend (and use-subprocess-backend, when set) exists and is
 * usable, and every section named after a plugin.  A section that names no
 * plugin is an error too.  Every problem found is in ERROR's message, one
 * per line (the code is the first one's). */
CX_EXPORT gboolean cx_config_check(const cx_config *config, const cx_registry *registry,
                                   GError **error);

/* ---- Backends and sessions ----------------------------------------------- */

/* Open the plugin NAME of REGISTRY with OPTIONS (NULL: defaults; otherwise
 * made for that plugin's schema; taken over by the backend). */
CX_EXPORT cx_backend *cx_backend_open(cx_registry *registry, const char *name,
                                      cx_options *options, GError **error);
/* ABI 1.1: as cx_backend_open, and the backend keeps a copy of CONFIG for
 * what concerns it beyond OPTIONS: where its use_subprocess cells run
 * ([cellexec] use-subprocess-backend) and that backend's options. */
CX_EXPORT cx_backend *cx_backend_open_with_config(cx_registry *registry, const cx_config *config,
                                                  const char *name, cx_options *options,
                                                  GError **error);

/* Load the config (cx_config_load(CONFIG_PATH)), scan the plugins it names,
 * and open BACKEND (NULL: the config's choice) with the config's options.
 * With a debug-export in the config, the backend and its sessions write
 * their events there (the backend owns that exporter); with a record, they
 * append every cell to that recording (record.h). */
CX_EXPORT cx_backend *cx_backend_open_configured(const char *config_path, const char *backend,
                                                 GError **error);
CX_EXPORT void cx_backend_free(cx_backend *backend);

CX_EXPORT const cx_plugin_info *cx_backend_get_plugin(const cx_backend *backend);
CX_EXPORT const char *cx_backend_get_name(const cx_backend *backend);

/* Run CODE statelessly.  RUN may be NULL.  The backend's options cwd, env
 * and timeout, where its schema has them, are defaults for RUN's fields.
 * A failed cell is a result with success FALSE; NULL with ERROR set means
 * the backend could not run anything.
 *
 * CODE is a C string: a NUL byte of the source is given as CX_RESULT_NUL,
 * as cx_json_from_string_keeping_nul() reads a \u0000.  Python refuses
 * such source, and so does every backend: the cell fails, running
 * nothing, with Python's ValueError "source code string cannot contain
 * null bytes" (as cx_session_run_cell() does). */
CX_EXPORT cx_result *cx_backend_run_cell(cx_backend *backend, const char *code,
                                         const cx_run_options *run, GError **error);
/* Interrupt the stateless cells running on BACKEND. */
CX_EXPORT gboolean cx_backend_interrupt(cx_backend *backend, GError **error);
/* ABI 1.1: interrupt every cell running on BACKEND: its stateless cells,
 * the cell of each of its open sessions, and use_subprocess cells routed
 * to another backend; what a user's Ctrl-C means (cellexec run).  Safe
 * from any thread, but not from a signal handler. */
CX_EXPORT gboolean cx_backend_interrupt_all(cx_backend *backend, GError **error);
/* Introspection: a new node answering WHAT.  "info" is a JSON object with
 * at least "backend" (the plugin's name) and "version" (its version), plus
 * what the plugin reports (for the built-ins: Python, isolation, limits,
 * counters); a plugin answering "info" with anything but an object fails
 * with CX_ERROR_BACKEND. */
CX_EXPORT JsonNode *cx_backend_query(cx_backend *backend, const char *what, GError **error);

/* A session keeps its namespace across cells.  It keeps its backend alive:
 * cx_backend_free() with sessions still open only drops the caller's hold,
 * and the plugin's backend is destroyed when the last of them is closed
 * (plugins never see a destroy under an open session).  A session runs one
 * cell at a time, whatever the
 * backend: cx_session_run_cell holds the session's lock, so calls from
 * several threads take turns.  The lock is recursive: a cell's host
 * callback may run another cell of the same session on its thread.
 * cx_session_close waits for a cell still running.  Executor operations
 * on the session's environments (executor.h) take the same lock. */
CX_EXPORT cx_session *cx_session_open(cx_backend *backend, GError **error);
CX_EXPORT cx_result *cx_session_run_cell(cx_session *session, const char *code,
                                         const cx_run_options *run, GError **error);
/* Interrupt the cell running in SESSION (KeyboardInterrupt); executor
 * operations are not interrupted (see executor.h, LIMITS). */
CX_EXPORT gboolean cx_session_interrupt(cx_session *session, GError **error);
/* ABI 1.2: answer the Jupyter request TYPE ("complete_request",
 * "inspect_request", "is_complete_request", "history_request",
 * "comm_info_request", or CX_REQUEST_USER_EXPRESSIONS) with
 * CONTENT (borrowed) in SESSION's interpreter; the reply's content (new,
 * with "status"), or NULL with ERROR.  CX_ERROR_UNSUPPORTED when the
 * backend does not answer TYPE (see session_request in plugin.h for the
 * contents and what a kernel replies then).  Takes the session's lock. */
CX_EXPORT JsonObject *cx_session_request(cx_session *session, const char *type,
                                         JsonObject *content, GError **error);
CX_EXPORT void cx_session_close(cx_session *session);

/* ---- Utilities ------------------------------------------------------------ */

/* The key of CANDIDATES (NULL-terminated) closest to WORD by edit distance,
 * if close enough to be a likely typo; else NULL.  Borrowed from CANDIDATES. */
CX_EXPORT const char *cx_suggest(const char *word, const char *const *candidates);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_registry, cx_registry_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_config, cx_config_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_backend, cx_backend_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_session, cx_session_close)

G_END_DECLS

#endif /* CELLEXEC_CELLEXEC_H */
