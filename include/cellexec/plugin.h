/* cellexec/plugin.h: the plugin ABI, and the plugin writer's specification.
 *
 * A cellexec plugin is a shared object that exports exactly one symbol,
 * cellexec_plugin_entry, returning a pointer to a constant cx_plugin
 * descriptor.  Define it with CX_PLUGIN_DEFINE() and build the plugin with
 * -fvisibility=hidden so nothing else is exported:
 *
 *   #include <cellexec/plugin.h>
 *
 *   static const cx_option_spec my_options[] = {
 *     { "greeting", CX_OPTION_STRING, "hello", "what every cell prints" },
 *     { NULL }
 *   };
 *   static const cx_backend_vtable my_backend = {
 *     .struct_size = sizeof(cx_backend_vtable),
 *     .create = my_create, .destroy = my_destroy, .run_cell = my_run_cell,
 *   };
 *   CX_PLUGIN_DEFINE("mine", "1.0", "a backend that greets",
 *                    my_options, &my_backend, NULL, NULL)
 *
 * and build it against `pkg-config --cflags --libs cellexec`, installing it
 * as NAME.so into `pkg-config --variable=pluginsdir cellexec`.
 *
 * THE ENTRY.  cellexec_plugin_entry() must have no side effects: the
 * registry calls it to list plugins that will never be used.  Work that may
 * fail belongs in cx_plugin.init (called once, when the plugin is loaded)
 * or in the backend's create().
 *
 * VERSIONING.  The descriptor and each vtable start with fields that never
 * move (abi_major, abi_minor, struct_size; a vtable's struct_size).  The
 * core loads a plugin whose abi_major equals its own CX_ABI_MAJOR, whatever
 * its abi_minor: a plugin built against an older minor simply lacks the
 * newer methods, and a plugin built against a newer minor has methods this
 * core ignores.  Fields are only ever appended, each group under a comment
 * naming the ABI minor that added it; a change to an existing field is a new
 * abi_major.  The core copies each vtable into a zeroed structure of its own
 * size, copying MIN(struct_size, sizeof) bytes, so a method past the end of
 * an older plugin's table reads as NULL.  Optional methods are called only
 * after CX_HAS(vtable, method); a NULL or missing method the caller needs
 * yields CX_ERROR_UNSUPPORTED, never a call through garbage.
 *
 * OWNERSHIP.  Unless a comment says otherwise: strings passed to a method
 * are borrowed for the duration of the call; a cx_result, JsonNode or
 * handle a method returns belongs to the caller; GError follows GLib's
 * rules (set it exactly when the method fails).  Methods of one backend
 * instance may be called from several threads at once; a plugin that cannot
 * allow that serialises internally.
 */
#ifndef CELLEXEC_PLUGIN_H
#define CELLEXEC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <cellexec/common.h>
#include <cellexec/options.h>
#include <cellexec/result.h>

G_BEGIN_DECLS

/* The name of the one symbol a plugin exports. */
#define CX_PLUGIN_ENTRY_SYMBOL "cellexec_plugin_entry"

/* TRUE when VTABLE (a pointer) is long enough to hold METHOD and METHOD is
 * set.  Use before calling any optional method. */
#define CX_HAS(vtable, method)                                                   \
  ((vtable) != NULL &&                                                           \
   (vtable)->struct_size >= (size_t)((const char *)&(vtable)->method -           \
                                     (const char *)(vtable)) + sizeof((vtable)->method) && \
   (vtable)->method != NULL)

/* ---- Debug exporters --------------------------------------------------- */

/* One step of execution, as a debug exporter sees it.  Every pointer is
 * borrowed for the duration of the export_event call; any may be NULL. */
typedef struct cx_debug_event {
  size_t struct_size;       /* sizeof(cx_debug_event) of the emitter */
  /* ABI 1.0 */
  gint64 timestamp_us;      /* wall clock, microseconds since the epoch (UTC) */
  const char *executor;     /* backend name, e.g. "local" */
  const char *step;         /* "run_cell", "evaluate_inline", ... */
  const char *code;         /* the code the step ran */
  JsonNode *inputs;         /* locals or bindings passed in */
  JsonNode *environment;    /* the environment after the step */
  JsonNode *outputs;        /* the value returned, or the result bundle */
  const char *error_type;   /* exception class name, NULL on success */
  const char *error_message;
  const char *error_traceback;
} cx_debug_event;

/* An exporter the host (or a plugin) implements, or one of the built-ins
 * from cellexec.h.  Embed it as the first member of your own struct to keep
 * state.  The core serialises calls to one exporter. */
typedef struct cx_debug_exporter cx_debug_exporter;
struct cx_debug_exporter {
  size_t struct_size;       /* sizeof(cx_debug_exporter) of the implementer */
  /* ABI 1.0 */
  void (*export_event)(cx_debug_exporter *self, const cx_debug_event *event); /* required */
  void (*flush)(cx_debug_exporter *self);    /* optional */
  void (*destroy)(cx_debug_exporter *self);  /* optional: frees SELF */
};

/* ---- The backend vtable ------------------------------------------------- */

/* Handles a backend gives out: pointers to the plugin's own state, which
 * the core never reads.  Each is a distinct incomplete type, so that the
 * compiler tells a session from a backend or an environment; a plugin
 * casts its state to and from them, e.g.
 *
 *   static cx_backend_instance *
 *   my_create(const cx_options *options, GError **error)
 *   {
 *     my_backend *backend = g_new0(my_backend, 1);
 *     return (cx_backend_instance *)backend;
 *   }
 *
 *   static void
 *   my_destroy(cx_backend_instance *instance)
 *   {
 *     my_backend *backend = (my_backend *)instance;
 *     ...
 *
 * (Until ABI 1.1 all three were void, and the same pointers cross the
 * ABI, so plugins built either way load into either core.) */
typedef struct cx_backend_instance cx_backend_instance;
typedef struct cx_session_instance cx_session_instance;
typedef struct cx_env_instance cx_env_instance;

typedef struct cx_backend_vtable {
  size_t struct_size;       /* sizeof(cx_backend_vtable) the plugin was built with */
  /* ABI 1.0 */

  /* Required.  A backend instance configured by OPTIONS (checked against the
   * plugin's schema, defaults filled in; borrowed: copy what you keep).
   * NULL with ERROR set when it cannot start (e.g. a worker binary missing). */
  cx_backend_instance *(*create)(const cx_options *options, GError **error);

  /* Required.  Frees the instance.  Sessions are closed before this. */
  void (*destroy)(cx_backend_instance *backend);

  /* Required.  Run CODE in a fresh namespace, as a new IPython session per
   * call would.  RUN is never NULL, and the core has merged the backend's
   * own cwd, env and timeout options into it (the call's values win, env
   * entries add up): apply RUN as given, without reading those options
   * again for a cell.  The same holds for session_run_cell.  A cell that
   * fails in any way (exception,
   * timeout, crash) is a result with success FALSE and error set; NULL with
   * ERROR set is only for failures of the backend itself (it cannot run
   * anything). */
  cx_result *(*run_cell)(cx_backend_instance *backend, const char *code,
                         const cx_run_options *run, GError **error);

  /* Optional (all three or none).  A session keeps its namespace across
   * calls.  session_close frees it. */
  cx_session_instance *(*session_open)(cx_backend_instance *backend, GError **error);
  cx_result *(*session_run_cell)(cx_session_instance *session, const char *code,
                                 const cx_run_options *run, GError **error);
  void (*session_close)(cx_session_instance *session);

  /* Optional.  Interrupt the cell running in SESSION (NULL: every stateless
   * cell of BACKEND), as KeyboardInterrupt.  Returns TRUE when a request was
   * delivered, also if nothing was running.  May be called from any thread
   * while run_cell blocks in another. */
  gboolean (*interrupt)(cx_backend_instance *backend, cx_session_instance *session,
                        GError **error);

  /* Optional.  Introspection: a JSON value describing WHAT ("info" should
   * be supported by every backend that has this method).  Returns a new node,
   * or NULL with CX_ERROR_UNSUPPORTED for an unknown WHAT. */
  JsonNode *(*query)(cx_backend_instance *backend, const char *what, GError **error);

  /* ABI 1.2 */

  /* Optional.  Answer, in SESSION's interpreter, one of the Jupyter
   * requests a front end sends beside execute_request.  TYPE is the
   * request's msg_type and CONTENT its content (borrowed), as in messaging
   * protocol 5.3:
   *
   *   complete_request     {code, cursor_pos}: matches, cursor_start,
   *                        cursor_end, metadata
   *   inspect_request      {code, cursor_pos, detail_level}: found, data,
   *                        metadata
   *   is_complete_request  {code}: status ("complete", "incomplete" with
   *                        indent, "invalid", "unknown")
   *   history_request      {hist_access_type "tail" | "range" | "search",
   *                        output, raw, n, session, start, stop, pattern,
   *                        unique}: history, the session's own cells
   *   comm_info_request    {target_name}: comms {comm_id: {target_name}},
   *                        the comms open in get_ipython().kernel's comm
   *                        manager (of that target when it names one)
   *   user_expressions     (CX_REQUEST_USER_EXPRESSIONS) {user_expressions:
   *                        {name: expression}}: user_expressions {name:
   *                        {status "ok", data, metadata} or {status
   *                        "error", ename, evalue, traceback}}, each
   *                        expression evaluated in the session's namespace
   *                        as execute_request's user_expressions are
   *                        after a cell that succeeded
   *
   * Returns the reply's content (new), "status" included, as the built-in
   * backends make it with IPython's machinery (its completer,
   * object_inspect_mime, TransformerManager.check_complete) on the
   * session's namespace.  The call takes the session's lock, as a cell
   * does, so it waits for a cell running on another thread.  Fails with
   * CX_ERROR_UNSUPPORTED for a TYPE it does not answer: a caller then
   * answers as a kernel with nothing to offer does (no matches, found
   * false, status unknown, no history, no comms), never with an error.
   * Backends without this method are treated the same way.
   *
   * A front end's comm_open, comm_msg and comm_close are no request: a
   * kernel hands them to get_ipython().kernel.comm_manager in a cell run
   * with cx_run_options_set_store_history(FALSE) (`cellexec kernel` does),
   * so a backend whose cells have IPython's kernel object needs nothing
   * more for them. */
  JsonObject *(*session_request)(cx_session_instance *session, const char *type,
                                 JsonObject *content, GError **error);
} cx_backend_vtable;


/* ---- The executor vtable ------------------------------------------------ */

/* A host function bound into Python by create_dynamic_function.  ARGUMENTS
 * maps every parameter name to its value (defaults applied), borrowed.
 * Return a new JsonNode (NULL means None), or NULL with ERROR set to make
 * the Python call raise. */
typedef JsonNode *(*cx_host_function)(JsonObject *arguments, gpointer user_data,
                                      GError **error);

/* The operations a language runtime needs from embedded Python.  Every
 * method is optional; a caller needing a NULL one gets CX_ERROR_UNSUPPORTED.
 * An environment (cx_env_instance) belongs to the session it was made in.
 * Values are JSON; an object with no JSON form stays in the backend and
 * crosses as {"$ref": ID, "repr": "..."}, which may be passed back in later
 * calls on the same session.  Python exceptions fail with CX_ERROR_PYTHON. */
typedef struct cx_executor_vtable {
  size_t struct_size;       /* sizeof(cx_executor_vtable) the plugin was built with */
  /* ABI 1.0 */

  /* A new environment holding the globals CODE defines. */
  cx_env_instance *(*execute_prelude)(cx_session_instance *session, const char *code,
                                      GError **error);
  /* Run CODE in ENV (NULL: a new one) and return ENV. */
  cx_env_instance *(*execute_prelude_incremental)(cx_session_instance *session,
                                                  cx_env_instance *env, const char *code,
                                                  GError **error);
  /* The value of the expression CODE, with LOCALS (may be NULL) visible. */
  JsonNode *(*evaluate_inline)(cx_session_instance *session, cx_env_instance *env,
                               const char *code, JsonObject *locals, GError **error);
  /* CODE run as a function body; the value of its return (NULL node: None).
   * Names already in ENV that the block rebinds are written back. */
  JsonNode *(*execute_block)(cx_session_instance *session, cx_env_instance *env,
                             const char *code, JsonObject *locals, GError **error);
  /* CODE run for effect in ENV with BINDINGS visible; error line numbers are
   * shifted by LINE_OFFSET. */
  gboolean (*execute_side_effects)(cx_session_instance *session, cx_env_instance *env,
                                   const char *code, JsonObject *bindings,
                                   int line_offset, GError **error);
  /* Bind NAME in ENV to a Python function with parameters PARAMS
   * (NULL-terminated) and DEFAULTS (may be NULL) that calls FUNCTION.
   * DESTROY (may be NULL) is called on USER_DATA when ENV is freed, or
   * before returning FALSE: exactly once either way. */
  gboolean (*create_dynamic_function)(cx_session_instance *session, cx_env_instance *env,
                                      const char *name, const char *const *params,
                                      JsonObject *defaults, cx_host_function function,
                                      gpointer user_data, GDestroyNotify destroy,
                                      GError **error);
  /* A type descriptor ({"kind": ...}) for the type expression CODE. */
  JsonNode *(*evaluate_type_expression)(cx_session_instance *session, cx_env_instance *env,
                                        const char *code, GError **error);
  /* Route the backend's own debug events to EXPORTER (NULL: none).  The
   * exporter outlives the session or is replaced first. */
  void (*set_debug_exporter)(cx_session_instance *session, cx_debug_exporter *exporter);
  /* The environment's contents as a JSON object, for debug exports. */
  JsonObject *(*env_snapshot)(cx_session_instance *session, cx_env_instance *env,
                              GError **error);
  /* Free an environment. */
  void (*env_free)(cx_session_instance *session, cx_env_instance *env);
} cx_executor_vtable;

/* ---- The descriptor ---------------------------------------------------- */

typedef struct cx_plugin {
  uint32_t abi_major;       /* CX_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;       /* CX_ABI_MINOR the plugin was built with */
  size_t struct_size;       /* sizeof(cx_plugin) the plugin was built with */
  /* ABI 1.0 */
  const char *name;         /* required: [a-z0-9_-]+, what configs select */
  const char *version;      /* required: the plugin's own version */
  const char *description;  /* required: one line */
  const cx_option_spec *options;        /* may be NULL: no options */
  const cx_backend_vtable *backend;     /* required */
  const cx_executor_vtable *executor;   /* may be NULL: no executor operations */
  /* Optional.  Called once per process, when the plugin is first loaded
   * (and once more in the probe process that tries it beforehand); return
   * FALSE with ERROR set to refuse (e.g. "needs a kernel with cgroup v2").
   * Every later registry gets the same verdict. */
  gboolean (*init)(GError **error);
  /* ABI 1.1 */
  /* The oldest core ABI minor (of abi_major) the plugin works with; 0:
   * any.  A core with an older minor refuses the plugin with
   * CX_ERROR_ABI_MISMATCH (a 1.0 core cannot read this field: there the
   * versioned symbols the plugin links against are the only guard; each
   * function is in the node of the minor that added it, CELLEXEC_1.1 for
   * 1.1's, so the dynamic linker refuses such a plugin by name). */
  uint32_t min_core_abi_minor;
  /* CX_PLUGIN_* flags, below. */
  uint32_t flags;
} cx_plugin;

/* The plugin serves the use_subprocess run option itself: its cells already
 * run outside the host process (e.g. worker processes, remote kernels), or,
 * as a test double, it only records the option.  Without this flag the core
 * runs a use_subprocess cell on the isolation backend instead (the config's
 * [cellexec] use-subprocess-backend, default "subprocess"). */
#define CX_PLUGIN_HANDLES_USE_SUBPROCESS (1u << 0)

/* The signature of cellexec_plugin_entry. */
typedef const cx_plugin *(*cx_plugin_entry_func)(void);

#define CX_PLUGIN_EXPORT __attribute__((visibility("default")))

/* Defines cellexec_plugin_entry returning a descriptor stamped with this
 * header's ABI version, its other fields given as designated initializers.
 * Use exactly once per plugin, at file scope:
 *
 *   CX_PLUGIN_DESCRIBE(.name = "mine", .version = "1.0",
 *                      .description = "a backend that greets",
 *                      .options = my_options, .backend = &my_backend,
 *                      .min_core_abi_minor = 1)
 */
#define CX_PLUGIN_DESCRIBE(...)                                                        \
  CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);                       \
  CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void)                        \
  {                                                                                    \
    static const cx_plugin descriptor = {                                              \
      .abi_major = CX_ABI_MAJOR, .abi_minor = CX_ABI_MINOR,                            \
      .struct_size = sizeof(cx_plugin), __VA_ARGS__                                    \
    };                                                                                 \
    return &descriptor;                                                                \
  }

/* The ABI 1.0 fields in order; the later ones stay zero. */
#define CX_PLUGIN_DEFINE(name_, version_, description_, options_, backend_, executor_, init_) \
  CX_PLUGIN_DESCRIBE(.name = (name_), .version = (version_),                           \
                     .description = (description_), .options = (options_),            \
                     .backend = (backend_), .executor = (executor_), .init = (init_))

G_END_DECLS

#endif /* CELLEXEC_PLUGIN_H */
