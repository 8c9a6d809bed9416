/* plugins/subprocess/executor_host.c: the executor operations of the
 * subprocess backend, host side.
 *
 * Each operation is an EXECUTOR_REQUEST on the session's channel; the
 * session's process runs it with pyembed/executor.h and answers with an
 * EXECUTOR_REPLY.  While it runs, Python may call host functions: a
 * HOST_CALL, served here by calling the C function and answering with a
 * HOST_RETURN.  That function may itself run executor operations on the
 * same session (from this thread: the session lock is recursive), so
 * waiting for a reply is a loop that serves calls, and replies arrive
 * innermost first.  No deadline applies: the operations have no run
 * options.  A process that dies fails the operation, never hangs it: the
 * fork server reports EXITED on the channel, or the channel closes.
 */
#include "config.h"

#include <signal.h>

#include <cellexec/executor.h>

#include "plugins/subprocess/executor_host.h"
#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/session.h"

/* A C function bound into an environment. */
typedef struct {
  guint id;                 /* in session->host_functions and HOST_CALLs */
  cx_host_function function;
  gpointer user_data;
  GDestroyNotify destroy;
} host_function;

typedef struct {
  subprocess_session *session;
  guint id;                 /* the environment's id in the session's process */
  guint generation;         /* of that process: it dies with it */
  GPtrArray *functions;     /* host_function, bound in it */
} subprocess_env;

/* ---- Failures ------------------------------------------------------------------ */

/* The process is gone (or no longer to be trusted): later operations on
 * its environments fail, the next cell or prelude starts a new one. */
static void
lose_process(subprocess_session *session, const char *how, GError **error)
{
  session->dead = TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "the session's worker died: %s; its environments are gone (the next call "
              "on the session starts a new process)", how);
}

static void
reject_protocol(subprocess_session *session, const char *what, GError **error)
{
  gint pid = g_atomic_int_get(&session->pid);
  if (pid > 0)
    kill(-pid, SIGKILL); /* it broke the protocol: no longer trusted */
  g_autofree char *how = g_strdup_printf("it broke the worker protocol (%s) and was killed", what);
  lose_process(session, how, error);
}

static gboolean
env_usable(subprocess_env *env, GError **error)
{
  subprocess_session *session = env->session;
  if (session->dead || session->channel < 0 || session->generation != env->generation) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "this environment lived in a session process that has died; its state is "
                "gone: create a new environment");
    return FALSE;
  }
  return TRUE;
}

/* ---- Host calls ---------------------------------------------------------------- */

/* Run the host function a HOST_CALL names and answer with HOST_RETURN. */
static void
serve_host_call(subprocess_session *session, JsonObject *call)
{
  guint id = (guint)cx__peer_get_int(call, "function", 0);
  JsonObject *arguments = cx__peer_get_object(call, "arguments");
  host_function *function = session->host_functions != NULL
                              ? g_hash_table_lookup(session->host_functions, GUINT_TO_POINTER(id))
                              : NULL;
  GError *error = NULL;
  JsonNode *value = NULL;
  if (function == NULL)
    g_set_error(&error, CX_ERROR, CX_ERROR_FAILED,
                "this host function was released with the environment it was made in");
  else if (arguments == NULL)
    g_set_error(&error, CX_ERROR, CX_ERROR_BACKEND, "a host call without arguments");
  else
    value = function->function(arguments, function->user_data, &error);

  /* The message only: Python raises RuntimeError with it. */
  JsonObject *reply = cx__peer_reply_new(value, error, FALSE);
  g_clear_error(&error);
  /* A failed send means the process died: the next read tells. */
  cx__wire_send_object(session->channel, CX__WIRE_MSG_HOST_RETURN, reply, -1, NULL);
}

/* ---- Requests ------------------------------------------------------------------ */

/* Wait for the reply to the request just sent, serving host calls
 * meanwhile.  GENERATION is the process the request went to. */
static JsonObject *
await_reply(subprocess_session *session, guint generation, GError **error)
{
  for (;;) {
    /* A host function's nested call may have found the process dead. */
    if (session->dead || session->generation != generation) {
      lose_process(session, "it ended during a host function's call", error);
      return NULL;
    }
    guint8 type;
    const guint8 *payload;
    gsize len;
    g_autoptr(GError) read_error = NULL;
    if (!cx__wire_read_blocking(session->reader, &type, &payload, &len, &read_error)) {
      g_autofree char *how = g_strdup_printf(
        "its channel closed (%s)", read_error != NULL ? read_error->message : "end of file");
      lose_process(session, how, error);
      return NULL;
    }
    g_autoptr(GError) parse_error = NULL;
    g_autoptr(JsonNode) node = NULL;
    switch (type) {
    case CX__WIRE_MSG_EXECUTOR_REPLY:
    case CX__WIRE_MSG_HOST_CALL:
    case CX__WIRE_MSG_EXITED:
    case CX__WIRE_MSG_ERROR:
      node = cx__wire_parse_object(payload, len, "executor", &parse_error);
      if (node == NULL) {
        reject_protocol(session, parse_error->message, error);
        return NULL;
      }
      break;
    case CX__WIRE_MSG_OUTPUT:
      continue; /* output of a cell that ended the process: not ours */
    default: {
      g_autofree char *what = g_strdup_printf("unexpected message type 0x%02x", type);
      reject_protocol(session, what, error);
      return NULL;
    }
    }
    JsonObject *object = json_node_get_object(node);
    switch (type) {
    case CX__WIRE_MSG_EXECUTOR_REPLY:
      return json_object_ref(object);
    case CX__WIRE_MSG_HOST_CALL:
      serve_host_call(session, object);
      continue;
    case CX__WIRE_MSG_EXITED: {
      g_autofree char *exit = cx__wire_describe_exit(object);
      g_autofree char *how = g_strdup_printf("the session's process %s", exit);
      lose_process(session, how, error);
      return NULL;
    }
    default: { /* CX__WIRE_MSG_ERROR: the process gives up on its channel */
      g_autofree char *how = g_strdup_printf(
        "it refused the request: %s", cx__wire_error_message(object));
      lose_process(session, how, error);
      return NULL;
    }
    }
  }
}

/* Send REQUEST (consumed) and return the successful reply; NULL with ERROR
 * set for a Python exception or a lost process.  With the session lock
 * held and its process checked. */
static JsonObject *
perform_locked(subprocess_session *session, JsonObject *request, GError **error)
{
  g_autoptr(GError) send_error = NULL;
  if (!cx__wire_send_object(session->channel, CX__WIRE_MSG_EXECUTOR_REQUEST, request, -1,
                            &send_error)) {
    lose_process(session, send_error->message, error);
    return NULL;
  }
  session->executor_depth++;
  JsonObject *reply = await_reply(session, session->generation, error);
  session->executor_depth--;
  if (reply != NULL && !cx__peer_reply_check(reply, "the session's worker", error))
    g_clear_pointer(&reply, json_object_unref);
  return reply;
}

/* A request for OP on ENV. */
static JsonObject *
env_request(subprocess_env *env, const char *op)
{
  JsonObject *request = json_object_new();
  json_object_set_string_member(request, "op", op);
  json_object_set_int_member(request, "env", env->id);
  return request;
}

/* Run REQUEST (consumed) on ENV's process. */
static JsonObject *
perform(subprocess_env *env, JsonObject *request, GError **error)
{
  subprocess_session *session = env->session;
  g_rec_mutex_lock(&session->lock);
  JsonObject *reply = NULL;
  if (env_usable(env, error))
    reply = perform_locked(session, g_steal_pointer(&request), error);
  g_rec_mutex_unlock(&session->lock);
  if (request != NULL)
    json_object_unref(request);
  return reply;
}

/* The "value" of a successful REPLY (consumed), a new node. */
static JsonNode *
reply_value(JsonObject *reply)
{
  if (reply == NULL)
    return NULL;
  JsonNode *value = cx__peer_reply_value(reply);
  json_object_unref(reply);
  return value;
}

static void
set_optional_object(JsonObject *request, const char *key, JsonObject *value)
{
  if (value != NULL)
    json_object_set_object_member(request, key, json_object_ref(value));
}

/* ---- Jupyter requests beside execute -------------------------------------------- */

/* session_request: a KERNEL_REQUEST on the session's channel, answered in
 * the namespace its cells run in; a session without a live process gets
 * one (its state was lost already, as its next cell would find). */
JsonObject *
cx__sp_session_request(cx_session_instance *instance, const char *type, JsonObject *content,
                       GError **error)
{
  subprocess_session *session = (subprocess_session *)instance;
  g_rec_mutex_lock(&session->lock);
  g_autoptr(JsonObject) reply = NULL;
  if (cx__sp_session_revive(session, error)) {
    JsonObject *request = json_object_new();
    json_object_set_string_member(request, "op", CX__WIRE_OP_KERNEL_REQUEST);
    json_object_set_string_member(request, "type", type);
    json_object_set_object_member(request, "content", json_object_ref(content));
    reply = perform_locked(session, request, error);
  }
  g_rec_mutex_unlock(&session->lock);
  if (reply == NULL)
    return NULL;
  JsonObject *answer = cx__peer_get_object(reply, "value");
  if (answer == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the subprocess backend does not answer \"%s\"", type);
    return NULL;
  }
  return json_object_ref(answer);
}

/* ---- The operations ------------------------------------------------------------ */

static cx_env_instance *
subprocess_execute_prelude_incremental(cx_session_instance *instance, cx_env_instance *env_instance,
                                       const char *code, GError **error)
{
  subprocess_session *session = (subprocess_session *)instance;
  subprocess_env *env = (subprocess_env *)env_instance;
  g_rec_mutex_lock(&session->lock);
  /* A new environment may go to a new process; an existing one may not. */
  gboolean ready = env != NULL ? env_usable(env, error) : cx__sp_session_revive(session, error);
  g_autoptr(JsonObject) reply = NULL;
  if (ready) {
    JsonObject *request = json_object_new();
    json_object_set_string_member(request, "op", CX__WIRE_OP_PRELUDE);
    if (env != NULL)
      json_object_set_int_member(request, "env", env->id);
    json_object_set_string_member(request, "code", code);
    reply = perform_locked(session, request, error);
  }
  if (reply != NULL && env == NULL) {
    gint64 id = cx__peer_get_int(reply, "env", 0);
    if (id <= 0 || id > G_MAXUINT) {
      reject_protocol(session, "a prelude reply without an environment", error);
    } else {
      env = g_new0(subprocess_env, 1);
      env->session = session;
      env->id = (guint)id;
      env->generation = session->generation;
      env->functions = g_ptr_array_new();
    }
  }
  g_rec_mutex_unlock(&session->lock);
  return reply != NULL ? (cx_env_instance *)env : NULL;
}

static cx_env_instance *
subprocess_execute_prelude(cx_session_instance *session, const char *code, GError **error)
{
  return subprocess_execute_prelude_incremental(session, NULL, code, error);
}

static JsonNode *
code_with_locals(cx_env_instance *env, const char *op, const char *code, JsonObject *locals,
                 GError **error)
{
  JsonObject *request = env_request((subprocess_env *)env, op);
  json_object_set_string_member(request, "code", code);
  set_optional_object(request, "locals", locals);
  return reply_value(perform((subprocess_env *)env, request, error));
}

static JsonNode *
subprocess_evaluate_inline(cx_session_instance *session, cx_env_instance *env, const char *code,
                           JsonObject *locals, GError **error)
{
  return code_with_locals(env, CX__WIRE_OP_EVALUATE_INLINE, code, locals, error);
}

static JsonNode *
subprocess_execute_block(cx_session_instance *session, cx_env_instance *env, const char *code,
                         JsonObject *locals, GError **error)
{
  return code_with_locals(env, CX__WIRE_OP_EXECUTE_BLOCK, code, locals, error);
}

static gboolean
subprocess_execute_side_effects(cx_session_instance *session, cx_env_instance *env,
                                const char *code, JsonObject *bindings, int line_offset,
                                GError **error)
{
  JsonObject *request = env_request((subprocess_env *)env, CX__WIRE_OP_SIDE_EFFECTS);
  json_object_set_string_member(request, "code", code);
  set_optional_object(request, "bindings", bindings);
  json_object_set_int_member(request, "line_offset", line_offset);
  g_autoptr(JsonObject) reply = perform((subprocess_env *)env, request, error);
  return reply != NULL;
}

static gboolean
subprocess_create_dynamic_function(cx_session_instance *instance, cx_env_instance *env_instance,
                                   const char *name, const char *const *params,
                                   JsonObject *defaults, cx_host_function function,
                                   gpointer user_data, GDestroyNotify destroy, GError **error)
{
  subprocess_session *session = (subprocess_session *)instance;
  subprocess_env *env = (subprocess_env *)env_instance;
  g_rec_mutex_lock(&session->lock);
  /* Registered before the request: the function exists once bound. */
  host_function *bound = g_new0(host_function, 1);
  bound->id = ++session->last_function_id;
  bound->function = function;
  bound->user_data = user_data;
  bound->destroy = destroy;
  if (session->host_functions == NULL)
    session->host_functions = g_hash_table_new(NULL, NULL);
  g_hash_table_insert(session->host_functions, GUINT_TO_POINTER(bound->id), bound);

  JsonObject *request = env_request(env, CX__WIRE_OP_BIND_FUNCTION);
  json_object_set_string_member(request, "name", name);
  JsonArray *names = json_array_new();
  for (const char *const *p = params; *p != NULL; p++)
    json_array_add_string_element(names, *p);
  json_object_set_array_member(request, "params", names);
  set_optional_object(request, "defaults", defaults);
  json_object_set_int_member(request, "function", bound->id);
  g_autoptr(JsonObject) reply = perform(env, request, error);

  if (reply != NULL) {
    g_ptr_array_add(env->functions, bound);
  } else {
    /* As on the local backend: a function that was not bound is released. */
    g_hash_table_remove(session->host_functions, GUINT_TO_POINTER(bound->id));
    if (destroy != NULL)
      destroy(user_data);
    g_free(bound);
  }
  g_rec_mutex_unlock(&session->lock);
  return reply != NULL;
}

static JsonNode *
subprocess_evaluate_type_expression(cx_session_instance *session, cx_env_instance *env,
                                    const char *code, GError **error)
{
  JsonObject *request = env_request((subprocess_env *)env, CX__WIRE_OP_TYPE_EXPRESSION);
  json_object_set_string_member(request, "code", code);
  return reply_value(perform((subprocess_env *)env, request, error));
}

static JsonObject *
subprocess_env_snapshot(cx_session_instance *session, cx_env_instance *env, GError **error)
{
  g_autoptr(JsonNode) value = reply_value(perform((subprocess_env *)env, env_request((subprocess_env *)env, CX__WIRE_OP_SNAPSHOT),
                                                  error));
  if (value == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT(value)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the session's worker sent a snapshot that is not a JSON object");
    return NULL;
  }
  return json_object_ref(json_node_get_object(value));
}

static void
subprocess_env_free(cx_session_instance *instance, cx_env_instance *env_instance)
{
  subprocess_session *session = (subprocess_session *)instance;
  subprocess_env *env = (subprocess_env *)env_instance;
  g_rec_mutex_lock(&session->lock);
  /* No reply: the process frees it in turn.  A dead process took it along. */
  if (env_usable(env, NULL))
    cx__wire_send_object(session->channel, CX__WIRE_MSG_EXECUTOR_REQUEST,
                         env_request(env, CX__WIRE_OP_FREE_ENV), -1, NULL);
  for (guint i = 0; i < env->functions->len; i++) {
    host_function *bound = g_ptr_array_index(env->functions, i);
    g_hash_table_remove(session->host_functions, GUINT_TO_POINTER(bound->id));
    if (bound->destroy != NULL)
      bound->destroy(bound->user_data);
    g_free(bound);
  }
  g_ptr_array_unref(env->functions);
  g_free(env);
  g_rec_mutex_unlock(&session->lock);
}

const cx_executor_vtable cx__sp_executor_vtable = {
  .struct_size = sizeof(cx_executor_vtable),
  .execute_prelude = subprocess_execute_prelude,
  .execute_prelude_incremental = subprocess_execute_prelude_incremental,
  .evaluate_inline = subprocess_evaluate_inline,
  .execute_block = subprocess_execute_block,
  .execute_side_effects = subprocess_execute_side_effects,
  .create_dynamic_function = subprocess_create_dynamic_function,
  .evaluate_type_expression = subprocess_evaluate_type_expression,
  .env_snapshot = subprocess_env_snapshot,
  .env_free = subprocess_env_free,
};
