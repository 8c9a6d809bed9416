/* The backend facade: an opened plugin instance, its sessions, and the
 * merging of backend-level defaults into each call's run options. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

/* ---- Observers ---------------------------------------------------------- */

static const cx__cell_observer *observers[CX__MAX_CELL_OBSERVERS];
static gint n_observers; /* atomic; observers[i] is set before it counts */
static GMutex observers_lock;

void
cx__cell_observer_add(const cx__cell_observer *observer)
{
  g_mutex_lock(&observers_lock);
  gint n = g_atomic_int_get(&n_observers);
  gboolean known = FALSE;
  for (gint i = 0; i < n; i++)
    known = known || observers[i] == observer;
  if (!known) {
    g_assert(n < CX__MAX_CELL_OBSERVERS);
    observers[n] = observer;
    g_atomic_int_set(&n_observers, n + 1);
  }
  g_mutex_unlock(&observers_lock);
}

#define FOR_EACH_OBSERVER(hook, ...)                                                 \
  do {                                                                               \
    gint n_ = g_atomic_int_get(&n_observers);                                        \
    for (gint i_ = 0; i_ < n_; i_++)                                                 \
      if (observers[i_]->hook != NULL)                                               \
        observers[i_]->hook(__VA_ARGS__);                                            \
  } while (0)

/* Backend options with these names and types are defaults of run options. */
static gboolean
schema_has(const cx_option_spec *schema, const char *name, cx_option_type type)
{
  for (const cx_option_spec *spec = schema; spec != NULL && spec->name != NULL; spec++)
    if (strcmp(spec->name, name) == 0)
      return spec->type == type || (type == CX_OPTION_PATH && spec->type == CX_OPTION_STRING);
  return FALSE;
}

static void
collect_defaults(cx_backend *backend)
{
  const cx_option_spec *schema = cx_options_get_schema(backend->options);
  backend->defaults = cx_run_options_new();
  for (const cx__run_option_default *option = cx__run_option_defaults; option->name != NULL;
       option++) {
    if (schema_has(schema, option->name, option->type) &&
        cx_options_has(backend->options, option->name)) {
      option->apply(backend->defaults, backend->options, option->name);
      backend->has_defaults = TRUE;
    }
  }
}

cx_backend *
cx_backend_open(cx_registry *registry, const char *name, cx_options *options, GError **error)
{
  g_return_val_if_fail(registry != NULL && name != NULL, NULL);
  g_autoptr(cx_options) owned_options = options;
  const cx_plugin_info *plugin = cx_registry_lookup(registry, name, error);
  if (plugin == NULL)
    return NULL;
  if (!cx_plugin_info_is_usable(plugin)) {
    const GError *why = cx_plugin_info_get_error(plugin);
    g_set_error(error, CX_ERROR, why->code, "backend '%s' cannot be used: %s", name, why->message);
    return NULL;
  }
  if (owned_options == NULL)
    owned_options = cx_options_new(cx_plugin_info_get_name(plugin), cx_plugin_info_get_options(plugin));
  else if (cx_options_get_schema(owned_options) != cx_plugin_info_get_options(plugin)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "options made for backend '%s' were given to backend '%s'; create them with "
                "cx_config_get_backend_options() or cx_options_new() for that plugin",
                cx_options_get_backend(owned_options), name);
    return NULL;
  }

  g_autoptr(cx_backend) backend = g_new0(cx_backend, 1);
  backend->references = 1;
  backend->registry = cx_registry_ref(registry);
  backend->plugin = plugin;
  backend->loaded = cx__plugin_info_get_loaded(plugin);
  backend->options = g_steal_pointer(&owned_options);
  collect_defaults(backend);

  g_mutex_init(&backend->isolation_lock);
  g_mutex_init(&backend->sessions_lock);
  backend->open_sessions = g_ptr_array_new();

  GError *create_error = NULL;
  backend->instance = backend->loaded->backend.create(backend->options, &create_error);
  if (backend->instance == NULL) {
    /* The plugin's own code says more than ours (an option it rejects is
     * CX_ERROR_OPTION); only an error from outside cellexec is recoded. */
    if (create_error != NULL && create_error->domain == CX_ERROR) {
      g_propagate_prefixed_error(error, create_error, "backend '%s' could not start: ", name);
    } else {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "backend '%s' could not start: %s", name,
                  create_error != NULL ? create_error->message : "(the plugin gave no reason)");
      g_clear_error(&create_error);
    }
    return NULL;
  }
  return g_steal_pointer(&backend);
}

static void
backend_unref(cx_backend *backend)
{
  if (!g_atomic_int_dec_and_test(&backend->references))
    return;
  if (backend->instance != NULL)
    backend->loaded->backend.destroy(backend->instance);
  cx_backend_free(backend->isolation);
  g_mutex_clear(&backend->isolation_lock);
  g_mutex_clear(&backend->sessions_lock);
  g_ptr_array_unref(backend->open_sessions);
  cx_config_free(backend->config);
  cx_debug_exporter_free(backend->owned_exporter);
  FOR_EACH_OBSERVER(backend_closed, backend);
  cx_run_options_free(backend->defaults);
  cx_options_free(backend->options);
  cx_registry_unref(backend->registry);
  g_free(backend);
}

void
cx_backend_free(cx_backend *backend)
{
  if (backend != NULL)
    backend_unref(backend); /* the plugin is destroyed once its sessions are closed too */
}

const cx_plugin_info *
cx_backend_get_plugin(const cx_backend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return backend->plugin;
}

const char *
cx_backend_get_name(const cx_backend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return cx_plugin_info_get_name(backend->plugin);
}

/* RUN with the backend's defaults under it.  Returns RUN itself, the
 * defaults, or a merged copy stored in *MERGED (free it). */
static const cx_run_options *
effective_run_options(cx_backend *backend, const cx_run_options *run, cx_run_options **merged)
{
  *merged = NULL;
  if (run == NULL)
    return backend->defaults;
  if (!backend->has_defaults)
    return run;
  return *merged = cx__run_options_merge(run, backend->defaults);
}

/* A plugin must return a result or set an error; hold it to that. */
void
cx__plugin_failure(const cx_backend *backend, const char *method, GError *plugin_error,
                   GError **error)
{
  if (plugin_error != NULL) {
    g_propagate_error(error, plugin_error);
    return;
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "backend '%s': %s failed and gave no error; this is a bug in the plugin %s",
              cx_plugin_info_get_name(backend->plugin), method,
              cx_plugin_info_get_path(backend->plugin));
}

static gboolean
checked(const cx_backend *backend, const char *method, gboolean ok, GError *plugin_error,
        GError **error)
{
  if (!ok)
    cx__plugin_failure(backend, method, plugin_error, error);
  else if (plugin_error != NULL)
    g_error_free(plugin_error); /* an error beside a success is ignored */
  return ok;
}

/* What follows every cell, stateless (SESSION NULL) or SESSION's cell
 * CELL, run by METHOD: the plugin held to returning a result or an error,
 * the result's MIME filter and its streaming finished (unless ROUTED: the
 * isolation backend's own run did both), then the debug export and the
 * observers, which see the failure even when the caller passed no ERROR. */
static void
after_run(cx_backend *backend, cx_session *session, guint cell, const char *method,
          const char *code, const cx_run_options *run, gboolean routed, cx_result *result,
          GError *plugin_error, GError **error)
{
  GError *failure = NULL;
  checked(backend, method, result != NULL, plugin_error, &failure);
  if (result != NULL && !routed) {
    cx__result_filter_mime(result, run);
    cx__result_finish_streaming(result, run);
  }
  cx_debug_exporter *exporter = session != NULL ? session->exporter : backend->exporter;
  if (exporter != NULL) {
    g_autoptr(JsonNode) inputs = cx_run_options_to_json_node(run);
    cx__debug_emit_result(exporter, cx_backend_get_name(backend), method, code, inputs, result,
                          failure);
  }
  FOR_EACH_OBSERVER(cell_done, backend, session, cell, code, run, result, failure);
  if (failure != NULL)
    g_propagate_error(error, failure);
}

/* The backend use_subprocess cells of BACKEND run on: the config's
 * use-subprocess-backend (default "subprocess"), with the config's options
 * for it, opened on first use; BACKEND itself when that names its own
 * plugin. */
static cx_backend *
isolation_backend(cx_backend *backend, GError **error)
{
  const char *name = backend->config != NULL
                       ? cx_config_get_use_subprocess_backend(backend->config)
                       : CX__DEFAULT_USE_SUBPROCESS_BACKEND;
  if (strcmp(name, cx_backend_get_name(backend)) == 0)
    return backend;
  g_mutex_lock(&backend->isolation_lock);
  if (backend->isolation == NULL) {
    g_autoptr(GError) open_error = NULL;
    cx_options *options = NULL;
    const cx_plugin_info *plugin = NULL;
    if (backend->config != NULL &&
        (plugin = cx_registry_lookup(backend->registry, name, &open_error)) != NULL &&
        cx_plugin_info_is_usable(plugin))
      options = cx_config_get_backend_options(backend->config, plugin, &open_error);
    if (open_error == NULL)
      backend->isolation = cx_backend_open(backend->registry, name, options, &open_error);
    if (backend->isolation == NULL)
      g_propagate_prefixed_error(error, g_steal_pointer(&open_error),
                                 "use_subprocess runs cells of backend '%s' on backend '%s', "
                                 "which cannot be used (set [cellexec] use-subprocess-backend "
                                 "to choose another): ",
                                 cx_backend_get_name(backend), name);
  }
  cx_backend *isolation = backend->isolation;
  g_mutex_unlock(&backend->isolation_lock);
  return isolation;
}

/* Whether the core, not BACKEND's plugin, serves RUN's use_subprocess. */
static gboolean
routes_to_isolation(const cx_backend *backend, const cx_run_options *run)
{
  return cx_run_options_get_use_subprocess(run) &&
         !(backend->loaded->flags & CX_PLUGIN_HANDLES_USE_SUBPROCESS);
}

/* A use_subprocess cell of BACKEND, run statelessly as an ordinary cell of
 * its isolation backend (a session's namespace stays where it is). */
static cx_result *
run_isolated(cx_backend *backend, const char *code, const cx_run_options *run, GError **error)
{
  cx_backend *isolation = isolation_backend(backend, error);
  if (isolation == NULL)
    return NULL;
  g_autoptr(cx_run_options) plain = cx_run_options_copy(run);
  cx_run_options_set_use_subprocess(plain, FALSE);
  return isolation == backend ? backend->loaded->backend.run_cell(backend->instance, code, plain, error)
                              : cx_backend_run_cell(isolation, code, plain, error);
}

/* Python refuses source holding a NUL byte before running any of it:
 * compile() raises this ValueError (Python 3.11, Debian 12's), and so
 * does exec() of a file's text.  Code comes here as a C string, a NUL in
 * it as CX_RESULT_NUL (as cx_json_from_string_keeping_nul() reads
 * \u0000); no backend is given such code, which a C string could not
 * carry whole, and the cell fails as Python fails it.  NULL for code any
 * backend may run. */
static cx_result *
refusal_of_nul(const char *code)
{
  if (strstr(code, CX_RESULT_NUL) == NULL)
    return NULL;
  cx_result *result = cx_result_new();
  cx_result_set_error(result, "ValueError", "source code string cannot contain null bytes",
                      "ValueError: source code string cannot contain null bytes\n");
  return result;
}

cx_result *
cx_backend_run_cell(cx_backend *backend, const char *code, const cx_run_options *run,
                    GError **error)
{
  g_return_val_if_fail(backend != NULL && code != NULL, NULL);
  g_autoptr(cx_run_options) merged = NULL;
  const cx_run_options *effective = effective_run_options(backend, run, &merged);
  GError *plugin_error = NULL;
  gboolean routed = routes_to_isolation(backend, effective);
  cx_result *result = refusal_of_nul(code);
  if (result == NULL)
    result = routed ? run_isolated(backend, code, effective, &plugin_error)
                    : backend->loaded->backend.run_cell(backend->instance, code, effective,
                                                        &plugin_error);
  after_run(backend, NULL, 0, "run_cell", code, effective, routed, result, plugin_error, error);
  return result;
}

gboolean
cx__unsupported(const cx_backend *backend, const char *what, GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED, "backend '%s' does not support %s",
              cx_backend_get_name(backend), what);
  return FALSE;
}

gboolean
cx_backend_interrupt(cx_backend *backend, GError **error)
{
  g_return_val_if_fail(backend != NULL, FALSE);
  const cx_backend_vtable *vt = &backend->loaded->backend;
  if (!CX_HAS(vt, interrupt))
    return cx__unsupported(backend, "interrupt", error);
  GError *plugin_error = NULL;
  gboolean ok = vt->interrupt(backend->instance, NULL, &plugin_error);
  return checked(backend, "interrupt", ok, plugin_error, error);
}

gboolean
cx_backend_interrupt_all(cx_backend *backend, GError **error)
{
  if (!cx_backend_interrupt(backend, error))
    return FALSE;
  const cx_backend_vtable *vt = &backend->loaded->backend;
  GError *plugin_error = NULL;
  gboolean ok = TRUE;
  /* A session closing meanwhile waits for the lock, so each instance is
   * alive while it is interrupted. */
  g_mutex_lock(&backend->sessions_lock);
  for (guint i = 0; ok && i < backend->open_sessions->len; i++) {
    cx_session *session = g_ptr_array_index(backend->open_sessions, i);
    ok = vt->interrupt(backend->instance, session->instance, &plugin_error);
  }
  g_mutex_unlock(&backend->sessions_lock);
  if (!checked(backend, "interrupt", ok, plugin_error, error))
    return FALSE;
  g_mutex_lock(&backend->isolation_lock);
  cx_backend *isolation = backend->isolation;
  g_mutex_unlock(&backend->isolation_lock);
  return isolation == NULL || cx_backend_interrupt_all(isolation, error);
}

/* query("info") is an object naming the backend and its version, from
 * every plugin: what a plugin leaves out the core adds. */
static gboolean
complete_info(const cx_backend *backend, JsonNode *answer, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT(answer)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "backend '%s': query(\"info\") returned a JSON %s, not an object; this is a "
                "bug in the plugin %s",
                cx_backend_get_name(backend), json_node_type_name(answer),
                cx_plugin_info_get_path(backend->plugin));
    return FALSE;
  }
  JsonObject *info = json_node_get_object(answer);
  if (!json_object_has_member(info, "backend"))
    json_object_set_string_member(info, "backend", cx_backend_get_name(backend));
  if (!json_object_has_member(info, "version"))
    json_object_set_string_member(info, "version", cx_plugin_info_get_version(backend->plugin));
  return TRUE;
}

JsonNode *
cx_backend_query(cx_backend *backend, const char *what, GError **error)
{
  g_return_val_if_fail(backend != NULL && what != NULL, NULL);
  const cx_backend_vtable *vt = &backend->loaded->backend;
  if (!CX_HAS(vt, query)) {
    cx__unsupported(backend, "queries", error);
    return NULL;
  }
  GError *plugin_error = NULL;
  JsonNode *answer = vt->query(backend->instance, what, &plugin_error);
  if (!checked(backend, "query", answer != NULL, plugin_error, error))
    return NULL;
  if (strcmp(what, "info") == 0 && !complete_info(backend, answer, error))
    g_clear_pointer(&answer, json_node_unref);
  return answer;
}

/* A session with the lock that makes its cells take turns, on every
 * backend: a plugin may run calls of one session concurrently (local
 * would, in one namespace).  Recursive: a cell's host callback may run
 * another cell of the same session on the same thread. */
typedef struct {
  cx_session session; /* first: a cx_session * is a locked_session * */
  GRecMutex lock;
} locked_session;

void
cx__session_lock(cx_session *session)
{
  g_rec_mutex_lock(&((locked_session *)session)->lock);
}

void
cx__session_unlock(cx_session *session)
{
  g_rec_mutex_unlock(&((locked_session *)session)->lock);
}

cx_session *
cx_session_open(cx_backend *backend, GError **error)
{
  g_return_val_if_fail(backend != NULL, NULL);
  const cx_backend_vtable *vt = &backend->loaded->backend;
  if (!CX_HAS(vt, session_open)) {
    cx__unsupported(backend, "sessions", error);
    return NULL;
  }
  GError *plugin_error = NULL;
  cx_session_instance *instance = vt->session_open(backend->instance, &plugin_error);
  if (!checked(backend, "session_open", instance != NULL, plugin_error, error))
    return NULL;
  locked_session *locked = g_new0(locked_session, 1);
  g_rec_mutex_init(&locked->lock);
  cx_session *session = &locked->session;
  g_atomic_int_inc(&backend->references);
  session->backend = backend;
  session->instance = instance;
  if (backend->exporter != NULL)
    cx_session_set_debug_exporter(session, backend->exporter);
  session->number = (guint)g_atomic_int_add(&backend->sessions_opened, 1) + 1;
  FOR_EACH_OBSERVER(session_opened, backend, session);
  g_mutex_lock(&backend->sessions_lock);
  g_ptr_array_add(backend->open_sessions, session);
  g_mutex_unlock(&backend->sessions_lock);
  return session;
}

cx_result *
cx_session_run_cell(cx_session *session, const char *code, const cx_run_options *run,
                    GError **error)
{
  g_return_val_if_fail(session != NULL && code != NULL, NULL);
  cx_backend *backend = session->backend;
  g_autoptr(cx_run_options) merged = NULL;
  const cx_run_options *effective = effective_run_options(backend, run, &merged);
  GError *plugin_error = NULL;
  cx__session_lock(session);
  gboolean routed = routes_to_isolation(backend, effective);
  cx_result *result = refusal_of_nul(code);
  if (result == NULL)
    result = routed ? run_isolated(backend, code, effective, &plugin_error)
                    : backend->loaded->backend.session_run_cell(session->instance, code,
                                                                effective, &plugin_error);
  guint cell = ++session->cells_run; /* in the order cells ran, for recordings */
  cx__session_unlock(session);
  after_run(backend, session, cell, "session_run_cell", code, effective, routed, result,
            plugin_error, error);
  return result;
}

gboolean
cx_session_interrupt(cx_session *session, GError **error)
{
  g_return_val_if_fail(session != NULL, FALSE);
  const cx_backend_vtable *vt = &session->backend->loaded->backend;
  if (!CX_HAS(vt, interrupt))
    return cx__unsupported(session->backend, "interrupt", error);
  GError *plugin_error = NULL;
  gboolean ok = vt->interrupt(session->backend->instance, session->instance, &plugin_error);
  return checked(session->backend, "interrupt", ok, plugin_error, error);
}

JsonObject *
cx_session_request(cx_session *session, const char *type, JsonObject *content, GError **error)
{
  g_return_val_if_fail(session != NULL && type != NULL && content != NULL, NULL);
  const cx_backend_vtable *vt = &session->backend->loaded->backend;
  if (!CX_HAS(vt, session_request)) {
    g_autofree char *what = g_strdup_printf("%s (it has no session_request method)", type);
    cx__unsupported(session->backend, what, error);
    return NULL;
  }
  GError *plugin_error = NULL;
  cx__session_lock(session);
  JsonObject *reply = vt->session_request(session->instance, type, content, &plugin_error);
  cx__session_unlock(session);
  /* "Not this type" is the caller's to handle, not the plugin's failure. */
  if (reply == NULL && g_error_matches(plugin_error, CX_ERROR, CX_ERROR_UNSUPPORTED)) {
    g_propagate_error(error, plugin_error);
    return NULL;
  }
  checked(session->backend, "session_request", reply != NULL, plugin_error, error);
  return reply;
}

void
cx_session_close(cx_session *session)
{
  if (session == NULL)
    return;
  g_mutex_lock(&session->backend->sessions_lock);
  g_ptr_array_remove_fast(session->backend->open_sessions, session);
  g_mutex_unlock(&session->backend->sessions_lock);
  /* Waits for a cell still running on another thread. */
  cx__session_lock(session);
  session->backend->loaded->backend.session_close(session->instance);
  cx__session_unlock(session);
  cx_backend *backend = session->backend;
  locked_session *locked = (locked_session *)session;
  g_rec_mutex_clear(&locked->lock);
  FOR_EACH_OBSERVER(session_closed, session);
  g_free(locked);
  backend_unref(backend);
}
