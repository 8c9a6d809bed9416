/* plugins/subprocess/worker/executor_worker.c: the executor operations in
 * a session's process.
 *
 * pyembed/executor.h does the Python work, as in the local backend; this
 * file maps EXECUTOR_REQUESTs onto it, keeps the session's environments
 * by id, and lets Python call the host's functions: a HOST_CALL, then a
 * loop until its HOST_RETURN that serves whatever else the host sends
 * meanwhile (the host function may run executor operations or cells on
 * this session: nested requests, answered innermost first).
 */
#include "config.h"

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/executor.h"

struct cx__worker_executor {
  int channel;
  GMutex *write_lock;             /* the channel's: the streamer sends too */
  cx__wire_reader *reader;        /* the session loop's */
  cx__py_session *session;        /* the session's namespace, for kernel requests */
  cx__worker_frame_handler other_frames;
  gpointer other_frames_data;
  cx__py_executor *python;    /* the reference table; made on first use */
  GHashTable *envs;               /* id -> cx__py_env */
  guint last_env_id;
};

/* What a host function bound in Python calls back with. */
typedef struct {
  cx__worker_executor *executor;
  guint function;                 /* the host's id of the function */
} host_function_ref;

cx__worker_executor *
cx__worker_executor_new(int channel, GMutex *write_lock, cx__wire_reader *reader,
                        cx__py_session *session, cx__worker_frame_handler other_frames,
                        gpointer other_frames_data)
{
  cx__worker_executor *executor = g_new0(cx__worker_executor, 1);
  executor->channel = channel;
  executor->write_lock = write_lock;
  executor->reader = reader;
  executor->session = session;
  executor->other_frames = other_frames;
  executor->other_frames_data = other_frames_data;
  executor->envs = g_hash_table_new(NULL, NULL);
  return executor;
}

static gboolean
send_locked(cx__worker_executor *executor, guint8 type, JsonObject *object)
{
  g_mutex_lock(executor->write_lock);
  gboolean sent = cx__wire_send_object(executor->channel, type, object, -1, NULL);
  g_mutex_unlock(executor->write_lock);
  return sent;
}

/* ---- Host functions ------------------------------------------------------------ */

/* The cx_host_function of every function bound here (pyembed calls it
 * without the GIL): ask the host, and serve the host until it answers. */
static JsonNode *
call_host(JsonObject *arguments, gpointer user_data, GError **error)
{
  host_function_ref *ref = user_data;
  cx__worker_executor *executor = ref->executor;
  JsonObject *call = json_object_new();
  json_object_set_int_member(call, "function", ref->function);
  json_object_set_object_member(call, "arguments", json_object_ref(arguments));
  if (!send_locked(executor, CX__WIRE_MSG_HOST_CALL, call)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the host closed the session");
    return NULL;
  }
  for (;;) {
    guint8 type;
    const guint8 *payload;
    gsize len;
    g_autoptr(GError) read_error = NULL;
    if (!cx__wire_read_blocking(executor->reader, &type, &payload, &len, &read_error)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the host closed the session");
      return NULL;
    }
    if (type == CX__WIRE_MSG_EXECUTOR_REQUEST) {
      cx__worker_executor_serve(executor, payload, len);
      continue;
    }
    if (type != CX__WIRE_MSG_HOST_RETURN) {
      if (executor->other_frames(type, payload, len, executor->other_frames_data))
        continue;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "unexpected message while waiting for the host function");
      return NULL;
    }
    g_autoptr(JsonNode) node = cx__wire_parse_object(payload, len, "HOST_RETURN", error);
    if (node == NULL)
      return NULL;
    /* The host's message as it is: Python raises RuntimeError with it. */
    JsonObject *reply = json_node_get_object(node);
    return cx__peer_reply_check(reply, NULL, error) ? cx__peer_reply_value(reply) : NULL;
  }
}

/* ---- Requests ------------------------------------------------------------------ */

static cx__py_env *
find_env(cx__worker_executor *executor, JsonObject *request, GError **error)
{
  gint64 id = cx__peer_get_int(request, "env", 0);
  cx__py_env *env = id > 0 && id <= G_MAXUINT
                          ? g_hash_table_lookup(executor->envs, GUINT_TO_POINTER((guint)id))
                          : NULL;
  if (env == NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "no environment %" G_GINT64_FORMAT " in this session's process", id);
  return env;
}

/* Run the prelude: into the request's env, or a new one (kept only when
 * the code ran).  The reply names the env. */
static JsonObject *
run_prelude(cx__worker_executor *executor, JsonObject *request, const char *code, GError **error)
{
  gboolean fresh = !json_object_has_member(request, "env");
  cx__py_env *env = fresh ? cx__py_env_new(executor->python, error)
                              : find_env(executor, request, error);
  if (env == NULL)
    return NULL;
  if (!cx__py_env_execute(env, code, NULL, 0, "<prelude>", error)) {
    if (fresh)
      cx__py_env_free(env);
    return NULL;
  }
  guint id = (guint)cx__peer_get_int(request, "env", 0);
  if (fresh) {
    id = ++executor->last_env_id;
    g_hash_table_insert(executor->envs, GUINT_TO_POINTER(id), env);
  }
  JsonObject *reply = json_object_new();
  json_object_set_int_member(reply, "env", id);
  return reply;
}

static JsonObject *
bind_function(cx__worker_executor *executor, cx__py_env *env, JsonObject *request,
              GError **error)
{
  const char *name = cx__peer_get_string(request, "name", NULL);
  JsonArray *names = cx__peer_get_array(request, "params");
  gint64 function = cx__peer_get_int(request, "function", 0);
  if (name == NULL || names == NULL || function <= 0 || function > G_MAXUINT) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "malformed bind_function request");
    return NULL;
  }
  g_autofree const char **params = g_new0(const char *, json_array_get_length(names) + 1);
  for (guint i = 0; i < json_array_get_length(names); i++) {
    params[i] = json_node_get_string(json_array_get_element(names, i));
    if (params[i] == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "a parameter name that is not a string");
      return NULL;
    }
  }
  host_function_ref *ref = g_new0(host_function_ref, 1);
  ref->executor = executor;
  ref->function = (guint)function;
  /* pyembed frees REF with ENV (or at once if binding fails). */
  if (!cx__py_env_bind_function(env, name, params, cx__peer_get_object(request, "defaults"),
                                call_host, ref, g_free, error))
    return NULL;
  return json_object_new();
}

/* A Jupyter request beside execute, in the session's namespace. */
static JsonObject *
kernel_request(cx__worker_executor *executor, JsonObject *request, GError **error)
{
  const char *type = cx__peer_get_string(request, "type", NULL);
  JsonObject *content = cx__peer_get_object(request, "content");
  if (type == NULL || content == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "malformed kernel_request");
    return NULL;
  }
  g_autoptr(GError) failure = NULL;
  JsonObject *answer = cx__py_session_request(executor->session, type, content, &failure);
  if (answer == NULL && !g_error_matches(failure, CX_ERROR, CX_ERROR_UNSUPPORTED)) {
    g_propagate_error(error, g_steal_pointer(&failure));
    return NULL;
  }
  JsonNode *value = answer != NULL ? json_node_init_object(json_node_alloc(), answer) : NULL;
  if (answer != NULL)
    json_object_unref(answer);
  return cx__peer_reply_new(value, NULL, TRUE);
}

/* The successful reply to REQUEST, or NULL with ERROR. */
static JsonObject *
perform(cx__worker_executor *executor, JsonObject *request, GError **error)
{
  const char *op = cx__peer_get_string(request, "op", "");
  const char *code = cx__peer_get_string(request, "code", NULL);
  if (g_str_equal(op, CX__WIRE_OP_KERNEL_REQUEST))
    return kernel_request(executor, request, error);
  if (executor->python == NULL && (executor->python = cx__py_executor_new(error)) == NULL)
    return NULL;
  if (g_str_equal(op, CX__WIRE_OP_PRELUDE) && code != NULL)
    return run_prelude(executor, request, code, error);

  cx__py_env *env = find_env(executor, request, error);
  if (env == NULL)
    return NULL;
  JsonObject *locals = cx__peer_get_object(request, "locals");
  if (g_str_equal(op, CX__WIRE_OP_BIND_FUNCTION))
    return bind_function(executor, env, request, error);
  if (g_str_equal(op, CX__WIRE_OP_SNAPSHOT)) {
    JsonObject *snapshot = cx__py_env_snapshot(env, error);
    if (snapshot == NULL)
      return NULL;
    JsonNode *value = json_node_init_object(json_node_alloc(), snapshot);
    json_object_unref(snapshot);
    return cx__peer_reply_new(value, NULL, TRUE);
  }
  if (code == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "an executor request \"%s\" without code", op);
    return NULL;
  }
  JsonNode *value;
  if (g_str_equal(op, CX__WIRE_OP_EVALUATE_INLINE))
    value = cx__py_env_evaluate_inline(env, code, locals, error);
  else if (g_str_equal(op, CX__WIRE_OP_EXECUTE_BLOCK))
    value = cx__py_env_execute_block(env, code, locals, error);
  else if (g_str_equal(op, CX__WIRE_OP_TYPE_EXPRESSION))
    value = cx__py_env_evaluate_type_expression(env, code, error);
  else if (g_str_equal(op, CX__WIRE_OP_SIDE_EFFECTS)) {
    int line_offset = (int)cx__peer_get_int(request, "line_offset", 0);
    if (!cx__py_env_execute(env, code, cx__peer_get_object(request, "bindings"),
                            line_offset, "<side_effects>", error))
      return NULL;
    return json_object_new();
  } else {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "unknown executor operation \"%s\"", op);
    return NULL;
  }
  if (value == NULL && error != NULL && *error != NULL)
    return NULL;
  return cx__peer_reply_new(value, NULL, TRUE);
}

void
cx__worker_executor_serve(cx__worker_executor *executor, const guint8 *payload, gsize len)
{
  g_autoptr(GError) error = NULL;
  /* Parsed before anything else reads the channel: PAYLOAD lives until then. */
  g_autoptr(JsonNode) node = cx__wire_parse_object(payload, len, "EXECUTOR_REQUEST", &error);
  JsonObject *request = node != NULL ? json_node_get_object(node) : NULL;
  if (request != NULL &&
      g_str_equal(cx__peer_get_string(request, "op", ""),
                  CX__WIRE_OP_FREE_ENV)) {
    gint64 id = cx__peer_get_int(request, "env", 0);
    cx__py_env *env = id > 0 && id <= G_MAXUINT
                            ? g_hash_table_lookup(executor->envs, GUINT_TO_POINTER((guint)id))
                            : NULL;
    if (env != NULL) {
      g_hash_table_remove(executor->envs, GUINT_TO_POINTER((guint)id));
      cx__py_env_free(env);
    }
    return; /* no reply */
  }
  JsonObject *reply = request != NULL ? perform(executor, request, &error) : NULL;
  if (reply == NULL)
    reply = cx__peer_reply_new(NULL, error, TRUE);
  send_locked(executor, CX__WIRE_MSG_EXECUTOR_REPLY, reply);
}
