/* The executor operations on sessions and environments, with a debug event
 * for every step. */
#include "config.h"

#include "lib/internal.h"

struct cx_env {
  cx_session *session;
  cx_env_instance *instance;
};

static gboolean
unsupported(const cx_session *session, const char *operation, GError **error)
{
  g_autofree char *what = g_strdup_printf(
    "the executor operation %s; choose a backend that does (`cellexec plugins` shows "
    "'executor operations: yes')", operation);
  return cx__unsupported(session->backend, what, error);
}

/* Look up METHOD of SESSION's executor vtable, or fail as unsupported. */
#define EXECUTOR_METHOD(session, method, error, failed)                      \
  const cx_executor_vtable *vt = cx__executor_of(session);                       \
  if (vt == NULL || !CX_HAS(vt, method)) {                                   \
    unsupported((session), #method, (error));                                \
    return failed;                                                           \
  }

static JsonNode *
object_node(JsonObject *object)
{
  return object != NULL ? json_node_init_object(json_node_alloc(), object) : NULL;
}

/* Report a step of ENV's session, with the environment as it is after it. */
static void
emit(cx_env *env, cx_session *session, const char *step, const char *code, JsonObject *inputs,
     JsonNode *outputs, const GError *error)
{
  if (session->exporter == NULL)
    return;
  g_autoptr(JsonNode) environment = NULL;
  const cx_executor_vtable *vt = cx__executor_of(session);
  if (env != NULL && vt != NULL && CX_HAS(vt, env_snapshot)) {
    g_autoptr(GError) snapshot_error = NULL;
    JsonObject *snapshot = vt->env_snapshot(session->instance, env->instance, &snapshot_error);
    if (snapshot != NULL) {
      environment = object_node(snapshot);
      json_object_unref(snapshot);
    } else {
      g_autofree char *note = g_strdup_printf("(environment unavailable: %s)",
                                              snapshot_error ? snapshot_error->message : "?");
      environment = json_node_init_string(json_node_alloc(), note);
    }
  }
  g_autoptr(JsonNode) input_node = object_node(inputs);
  cx__debug_emit(session->exporter, cx_backend_get_name(session->backend), step, code,
                 input_node, environment, outputs, error);
}

static cx_env *
env_new(cx_session *session, cx_env_instance *instance)
{
  cx_env *env = g_new0(cx_env, 1);
  env->session = session;
  env->instance = instance;
  return env;
}

cx_env *
cx_session_execute_prelude(cx_session *session, const char *code, GError **error)
{
  g_return_val_if_fail(session != NULL && code != NULL, NULL);
  EXECUTOR_METHOD(session, execute_prelude, error, NULL);
  GError *step_error = NULL;
  cx__session_lock(session); /* one call at a time on a session, cells included */
  cx_env_instance *instance = vt->execute_prelude(session->instance, code, &step_error);
  cx__session_unlock(session);
  cx_env *env = instance != NULL ? env_new(session, instance) : NULL;
  if (env == NULL && step_error == NULL)
    cx__plugin_failure(session->backend, "execute_prelude", NULL, &step_error);
  emit(env, session, "execute_prelude", code, NULL, NULL, step_error);
  if (step_error != NULL)
    g_propagate_error(error, step_error);
  return env;
}

cx_env *
cx_session_execute_prelude_incremental(cx_session *session, cx_env *env, const char *code,
                                       GError **error)
{
  g_return_val_if_fail(session != NULL && code != NULL, NULL);
  g_return_val_if_fail(env == NULL || env->session == session, NULL);
  EXECUTOR_METHOD(session, execute_prelude_incremental, error, NULL);
  GError *step_error = NULL;
  cx__session_lock(session);
  cx_env_instance *instance = vt->execute_prelude_incremental(
    session->instance, env != NULL ? env->instance : NULL, code, &step_error);
  cx__session_unlock(session);
  cx_env *result = NULL;
  if (instance != NULL)
    result = env != NULL ? env : env_new(session, instance);
  else if (step_error == NULL)
    cx__plugin_failure(session->backend, "execute_prelude_incremental", NULL, &step_error);
  emit(result != NULL ? result : env, session, "execute_prelude_incremental", code, NULL, NULL,
       step_error);
  if (step_error != NULL)
    g_propagate_error(error, step_error);
  return result;
}

/* The shape shared by evaluate_inline and execute_block. */
typedef JsonNode *(*value_method)(cx_session_instance *, cx_env_instance *, const char *,
                                  JsonObject *, GError **);

static JsonNode *
run_value_step(cx_env *env, value_method method, const char *step, const char *code,
               JsonObject *locals, GError **error)
{
  GError *step_error = NULL;
  cx__session_lock(env->session);
  JsonNode *value = method(env->session->instance, env->instance, code, locals, &step_error);
  cx__session_unlock(env->session);
  if (value == NULL && step_error == NULL)
    value = json_node_init_null(json_node_alloc()); /* NULL means None */
  emit(env, env->session, step, code, locals, value, step_error);
  if (step_error != NULL) {
    g_propagate_error(error, step_error);
    g_clear_pointer(&value, json_node_unref);
  }
  return value;
}

JsonNode *
cx_env_evaluate_inline(cx_env *env, const char *code, JsonObject *locals, GError **error)
{
  g_return_val_if_fail(env != NULL && code != NULL, NULL);
  EXECUTOR_METHOD(env->session, evaluate_inline, error, NULL);
  return run_value_step(env, vt->evaluate_inline, "evaluate_inline", code, locals, error);
}

JsonNode *
cx_env_execute_block(cx_env *env, const char *code, JsonObject *locals, GError **error)
{
  g_return_val_if_fail(env != NULL && code != NULL, NULL);
  EXECUTOR_METHOD(env->session, execute_block, error, NULL);
  return run_value_step(env, vt->execute_block, "execute_block", code, locals, error);
}

gboolean
cx_env_execute_side_effects(cx_env *env, const char *code, JsonObject *bindings,
                            int line_offset, GError **error)
{
  g_return_val_if_fail(env != NULL && code != NULL, FALSE);
  EXECUTOR_METHOD(env->session, execute_side_effects, error, FALSE);
  GError *step_error = NULL;
  cx__session_lock(env->session);
  gboolean ok = vt->execute_side_effects(env->session->instance, env->instance, code, bindings,
                                         line_offset, &step_error);
  cx__session_unlock(env->session);
  if (!ok && step_error == NULL)
    cx__plugin_failure(env->session->backend, "execute_side_effects", NULL, &step_error);
  emit(env, env->session, "execute_side_effects", code, bindings, NULL, step_error);
  if (step_error != NULL)
    g_propagate_error(error, step_error);
  return ok && step_error == NULL;
}

gboolean
cx_env_create_dynamic_function(cx_env *env, const char *name, const char *const *params,
                               JsonObject *defaults, cx_host_function function,
                               gpointer user_data, GDestroyNotify destroy, GError **error)
{
  g_return_val_if_fail(env != NULL && name != NULL && function != NULL, FALSE);
  const cx_executor_vtable *vt = cx__executor_of(env->session);
  if (vt == NULL || !CX_HAS(vt, create_dynamic_function)) {
    if (destroy != NULL)
      destroy(user_data); /* as on every failure: nothing will call it later */
    return unsupported(env->session, "create_dynamic_function", error);
  }
  static const char *const no_params[] = { NULL };
  if (params == NULL)
    params = no_params;
  GError *step_error = NULL;
  cx__session_lock(env->session);
  gboolean ok = vt->create_dynamic_function(env->session->instance, env->instance, name, params,
                                            defaults, function, user_data, destroy, &step_error);
  cx__session_unlock(env->session);
  if (!ok && step_error == NULL)
    cx__plugin_failure(env->session->backend, "create_dynamic_function", NULL, &step_error);
  if (env->session->exporter != NULL) {
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, name);
    json_builder_set_member_name(b, "params");
    json_builder_begin_array(b);
    for (const char *const *p = params; *p != NULL; p++)
      json_builder_add_string_value(b, *p);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "defaults");
    if (defaults != NULL)
      json_builder_add_value(b, json_node_init_object(json_node_alloc(), defaults));
    else
      json_builder_add_null_value(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) inputs = json_builder_get_root(b);
    emit(env, env->session, "create_dynamic_function", NULL, json_node_get_object(inputs), NULL,
         step_error);
  }
  if (step_error != NULL)
    g_propagate_error(error, step_error);
  return ok && step_error == NULL;
}

JsonNode *
cx_env_evaluate_type_expression(cx_env *env, const char *code, GError **error)
{
  g_return_val_if_fail(env != NULL && code != NULL, NULL);
  EXECUTOR_METHOD(env->session, evaluate_type_expression, error, NULL);
  GError *step_error = NULL;
  cx__session_lock(env->session);
  JsonNode *type = vt->evaluate_type_expression(env->session->instance, env->instance, code,
                                                &step_error);
  cx__session_unlock(env->session);
  if (type == NULL && step_error == NULL)
    cx__plugin_failure(env->session->backend, "evaluate_type_expression", NULL, &step_error);
  emit(env, env->session, "evaluate_type_expression", code, NULL, type, step_error);
  if (step_error != NULL) {
    g_propagate_error(error, step_error);
    g_clear_pointer(&type, json_node_unref);
  }
  return type;
}

JsonObject *
cx_env_snapshot(cx_env *env, GError **error)
{
  g_return_val_if_fail(env != NULL, NULL);
  EXECUTOR_METHOD(env->session, env_snapshot, error, NULL);
  GError *plugin_error = NULL;
  cx__session_lock(env->session);
  JsonObject *snapshot = vt->env_snapshot(env->session->instance, env->instance, &plugin_error);
  cx__session_unlock(env->session);
  if (snapshot == NULL)
    cx__plugin_failure(env->session->backend, "env_snapshot", plugin_error, error);
  else if (plugin_error != NULL)
    g_error_free(plugin_error);
  return snapshot;
}

void
cx_env_free(cx_env *env)
{
  if (env == NULL)
    return;
  const cx_executor_vtable *vt = cx__executor_of(env->session);
  if (vt != NULL && CX_HAS(vt, env_free)) {
    cx__session_lock(env->session);
    vt->env_free(env->session->instance, env->instance);
    cx__session_unlock(env->session);
  }
  g_free(env);
}
