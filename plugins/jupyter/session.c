/* plugins/jupyter: sessions (one kernel each, state kept) and the executor
 * operations the protocol can express.
 *
 * An executor environment is a dict kept by a helper object in the
 * kernel's namespace (_cellexec_h); each operation is a silent
 * execute_request whose answer comes back through user_expressions.
 * Operations that need Python to call
 * back into the host (create_dynamic_function) or that a kernel has no
 * words for are not provided: the core reports CX_ERROR_UNSUPPORTED. */
#include "config.h"

#include <string.h>

#include <cellexec/executor.h>

#include "jupyter_protocol/outputs.h"
#include "plugins/jupyter/jupyter.h"
#include "pyembed/errors-py.h"   /* cx__py_errors_source: generated */
#include "pyembed/executor-py.h" /* cx__py_executor_source: generated */
#include "plugins/jupyter/executor_boot-py.h" /* cx__py_executor_boot_source: generated */

/* How long a request beside execute waits for its reply when the backend
 * has no timeout: a front end asks them as the user types. */
#define REQUEST_TIMEOUT 30.0

/* What the kernel's input() prompt starts with when it calls a host
 * function. */
#define HOST_CALL_PREFIX "cellexec-host-call:"
/* ... and when it answers the host function's call back into it. */
#define NESTED_PREFIX "cellexec-nested-answer:"

typedef struct {
  int id;
} jupyter_env;

/* ---- Sessions ------------------------------------------------------------------------- */

cx_session_instance *
jupyter_session_open(cx_backend_instance *instance, GError **error)
{
  jupyter_backend *backend = (jupyter_backend *)instance;
  jupyter_session *session = g_new0(jupyter_session, 1);
  session->backend = backend;
  g_rec_mutex_init(&session->lock);
  if (backend->connection_file == NULL) {
    session->kernel = jupyter_pool_take(backend, error);
    if (session->kernel == NULL) {
      g_rec_mutex_clear(&session->lock);
      g_free(session);
      return NULL;
    }
  }
  return (cx_session_instance *)session;
}

/* The session's kernel, a new one when the last died: then the next
 * cell's result says the state was lost, whichever call started it.  With
 * session->lock held; launch mode. */
static jk_kernel *
session_kernel(jupyter_session *session, GError **error)
{
  jupyter_backend *backend = session->backend;
  if (session->kernel != NULL && jk_kernel_alive(session->kernel))
    return session->kernel;
  jk_kernel *fresh = jupyter_pool_take(backend, error);
  if (fresh == NULL)
    return NULL;
  g_mutex_lock(&backend->lock);
  jk_kernel *old = session->kernel;
  session->kernel = fresh;
  g_mutex_unlock(&backend->lock);
  jupyter_discard(backend, old);
  session->restart_unreported = TRUE;
  return fresh;
}

cx_result *
jupyter_session_run_cell(cx_session_instance *instance, const char *code,
                         const cx_run_options *run, GError **error)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_backend *backend = session->backend;
  gboolean restarted = FALSE;
  cx_result *result;
  g_rec_mutex_lock(&session->lock);
  if (backend->connection_file != NULL) {
    g_atomic_int_set(&session->busy, TRUE);
    result = jupyter_run_attached(backend, code, run, &restarted, error);
    g_atomic_int_set(&session->busy, FALSE);
  } else {
    jk_kernel *kernel = session_kernel(session, error);
    restarted = session->restart_unreported;
    session->restart_unreported = FALSE;
    if (kernel == NULL) {
      g_rec_mutex_unlock(&session->lock);
      return NULL;
    }
    gboolean lost;
    g_atomic_int_set(&session->busy, TRUE);
    result = jupyter_run_on(backend, kernel, code, run, &lost, error);
    g_atomic_int_set(&session->busy, FALSE);
    if (lost)
      jk_kernel_kill(kernel); /* replaced by the next call, which says so */
  }
  if (result != NULL && restarted)
    cx_result_set_extra(result, "session_restarted", json_node_init_boolean(json_node_alloc(), TRUE));
  g_rec_mutex_unlock(&session->lock);
  return result;
}

void
jupyter_session_close(cx_session_instance *instance)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_discard(session->backend, session->kernel);
  g_clear_pointer(&session->host_functions, g_hash_table_unref);
  g_rec_mutex_clear(&session->lock);
  g_free(session);
}

gboolean
jupyter_session_interrupt(cx_session_instance *instance, GError **error)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_backend *backend = session->backend;
  if (!g_atomic_int_get(&session->busy))
    return TRUE;
  g_mutex_lock(&backend->lock);
  jk_kernel *kernel = backend->connection_file != NULL ? backend->attached : session->kernel;
  gboolean ok = kernel == NULL || jk_kernel_interrupt(kernel, error);
  g_mutex_unlock(&backend->lock);
  return ok;
}

static char *on_input(const char *prompt, gboolean password, const char *msg_id, gpointer data);

/* Send EXEC's request (filled but for its timeout and grace) to the
 * session's kernel and wait for the reply; its content, or NULL with ERROR
 * set (CX_ERROR_BACKEND when the kernel replied with an error). */
static JsonObject *
session_send(jupyter_session *session, jk_exec *exec, GError **error)
{
  jupyter_backend *backend = session->backend;
  g_rec_mutex_lock(&session->lock);
  if (session->depth > 0) {
    /* A host function called from the kernel is calling back into it: the
     * kernel waits for the host's answer and cannot run anything else. */
    g_rec_mutex_unlock(&session->lock);
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "jupyter: a host function cannot call back into the kernel that called it (the "
                "kernel waits for its answer); use the local or subprocess backend for that");
    return NULL;
  }
  session->depth++;
  jk_kernel *kernel;
  if (backend->connection_file != NULL) {
    g_mutex_lock(&backend->attached_lock);
    kernel = backend->attached;
  } else {
    kernel = session_kernel(session, error);
  }
  JsonObject *reply = NULL;
  if (kernel != NULL) {
    exec->timeout = backend->timeout > 0 || exec->msg_type == NULL ? backend->timeout
                                                                   : REQUEST_TIMEOUT;
    exec->grace = backend->grace;
    g_atomic_int_set(&session->busy, TRUE);
    session->current_kernel = kernel;
    jk_exec_outcome outcome = jk_kernel_execute(kernel, exec);
    session->current_kernel = NULL;
    g_atomic_int_set(&session->busy, FALSE);
    const char *status = exec->reply ? cx__peer_get_string(exec->reply, "status", "") : "";
    /* is_complete_reply's status is the code's, not the request's. */
    gboolean failed = exec->msg_type == NULL ? g_strcmp0(status, "ok") != 0
                                             : g_strcmp0(status, "error") == 0;
    if (outcome != JK_EXEC_DONE) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel %s",
                  outcome == JK_EXEC_TIMEOUT ? "did not answer in time" : "died");
    } else if (failed) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel's %s failed: %s: %s",
                  jk_exec_request_type(exec), cx__peer_get_string(exec->reply, "ename", "Error"),
                  cx__peer_get_string(exec->reply, "evalue", status));
    } else {
      reply = json_object_ref(exec->reply);
    }
    jk_exec_clear(exec);
  }
  if (backend->connection_file != NULL)
    g_mutex_unlock(&backend->attached_lock);
  session->depth--;
  g_rec_mutex_unlock(&session->lock);
  return reply;
}

/* Run CODE silently in the session's kernel with USER_EXPRESSIONS (may be
 * NULL), answering its input() with host function calls when HOST_CALLS;
 * the reply's content, or NULL with ERROR set. */
static JsonObject *
session_exec(jupyter_session *session, const char *code, JsonObject *user_expressions,
             gboolean host_calls, GError **error)
{
  jk_exec exec = { .code = code, .silent = TRUE, .user_expressions = user_expressions,
                   .on_input = host_calls ? on_input : NULL, .input_data = session };
  return session_send(session, &exec, error);
}

/* CONTENT (borrowed) of a request of TYPE with the members the protocol
 * requires, where it left them out, given the values the other backends
 * assume (pyembed/requests.py): ipykernel never replies to a request that
 * lacks one.  New. */
static JsonObject *
with_required_members(const char *type, JsonObject *content)
{
  JsonObject *full = jp_object_copy_without(content, NULL);
  if (g_str_equal(type, "history_request")) {
    if (cx__peer_get_string(full, "hist_access_type", NULL) == NULL)
      json_object_set_string_member(full, "hist_access_type", "tail");
    if (!json_object_has_member(full, "raw"))
      json_object_set_boolean_member(full, "raw", TRUE);
    if (!json_object_has_member(full, "output"))
      json_object_set_boolean_member(full, "output", FALSE);
    return full;
  }
  if (g_str_equal(type, "comm_info_request"))
    return full; /* target_name is optional */
  const char *code = cx__peer_get_string(full, "code", NULL);
  if (code == NULL)
    json_object_set_string_member(full, "code", code = "");
  if (g_str_equal(type, "is_complete_request"))
    return full;
  if (!json_object_has_member(full, "cursor_pos")) /* the end, in code points */
    json_object_set_int_member(full, "cursor_pos", g_utf8_strlen(code, -1));
  if (g_str_equal(type, "inspect_request") && !json_object_has_member(full, "detail_level"))
    json_object_set_int_member(full, "detail_level", 0);
  return full;
}

JsonObject *
jupyter_session_request(cx_session_instance *instance, const char *type, JsonObject *content,
                        GError **error)
{
  jupyter_session *session = (jupyter_session *)instance;
  /* user_expressions travel in a silent execute_request with no code, as a
   * kernel evaluates them after a cell; the rest is forwarded as it is. */
  if (g_str_equal(type, CX_REQUEST_USER_EXPRESSIONS)) {
    JsonObject *expressions = cx__peer_get_object(content, "user_expressions");
    g_autoptr(JsonObject) reply = session_exec(session, "", expressions, FALSE, error);
    if (reply == NULL)
      return NULL;
    JsonObject *values = cx__peer_get_object(reply, "user_expressions");
    JsonObject *answer = json_object_new();
    json_object_set_string_member(answer, "status", "ok");
    json_object_set_object_member(answer, "user_expressions",
                                  values != NULL ? json_object_ref(values) : json_object_new());
    return answer;
  }
  if (!g_strv_contains(jp_session_requests, type)) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED, "the jupyter backend does not forward \"%s\"",
                type);
    return NULL;
  }
  g_autoptr(JsonObject) full = with_required_members(type, content);
  jk_exec exec = { .msg_type = type, .content = full };
  return session_send(session, &exec, error);
}

/* ---- Executor ------------------------------------------------------------------------- */

/* The kernel side of the executor operations is the local backend's own
 * (pyembed/errors.py and pyembed/executor.py, loaded as modules into the
 * session's kernel once by executor_boot.py), so values, references,
 * errors and line numbers are the same on both.  _cellexec_h holds it;
 * each operation is one silent execute_request whose answer, ["ok", value]
 * or ["error", type, message, traceback, line], is the text/plain of a
 * user_expressions entry (the repr of an object holding the JSON).  A host
 * function is called over the stdin channel: the kernel's input() sends an
 * input_request whose prompt names the function and its arguments, and
 * the input_reply carries the host's value. */

typedef struct {
  cx_host_function function;
  gpointer user_data;
  GDestroyNotify destroy;
  int env;
} host_function;

static void
host_function_free(gpointer data)
{
  host_function *f = data;
  if (f->destroy != NULL)
    f->destroy(f->user_data);
  g_free(f);
}

/* An input_request of an executor operation: a host function to call,
 * answered with its reply (lib/peer_json.h: cx__peer_reply_new). */
static char *
on_input(const char *prompt, gboolean password, const char *msg_id, gpointer data)
{
  jupyter_session *session = data;
  g_autoptr(JsonNode) request = g_str_has_prefix(prompt, HOST_CALL_PREFIX)
                                  ? cx_json_from_string(prompt + strlen(HOST_CALL_PREFIX), -1, NULL) : NULL;
  JsonObject *call = request != NULL && JSON_NODE_HOLDS_OBJECT(request) ? json_node_get_object(request) : NULL;
  host_function *f = call != NULL && session->host_functions != NULL
    ? g_hash_table_lookup(session->host_functions,
                          GINT_TO_POINTER(cx__peer_get_int(call, "function", 0)))
    : NULL;
  JsonObject *arguments = cx__peer_get_object(call, "arguments");
  g_autoptr(GError) error = NULL;
  JsonNode *value = NULL;
  if (f == NULL || arguments == NULL) {
    g_set_error_literal(&error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                        "input() is not available to executor operations");
  } else {
    const char *outer = session->call_msg_id;
    session->call_msg_id = msg_id;
    value = f->function(arguments, f->user_data, &error);
    session->call_msg_id = outer;
  }
  /* The message only: Python raises RuntimeError with it. */
  g_autoptr(JsonObject) reply = cx__peer_reply_new(value, error, FALSE);
  g_autoptr(JsonNode) root = json_node_init_object(json_node_alloc(), reply);
  return cx_json_to_string(root, FALSE);
}

/* Load the helper into KERNEL unless it is there already. */
static gboolean
ensure_helper(jupyter_session *session, GError **error)
{
  g_autofree char *errors = jupyter_py_literal(cx__py_errors_source);
  g_autofree char *executor = jupyter_py_literal(cx__py_executor_source);
  g_autofree char *host_call = jupyter_py_literal(HOST_CALL_PREFIX);
  g_autofree char *nested = jupyter_py_literal(NESTED_PREFIX);
  g_autofree char *code = g_strdup_printf("%s\n_cellexec_h = _cellexec_boot(%s, %s, %s, %s)\n"
                                          "del _cellexec_boot\n",
                                          cx__py_executor_boot_source, errors, executor, host_call,
                                          nested);
  g_autoptr(JsonObject) reply = session_exec(session, code, NULL, FALSE, error);
  return reply != NULL;
}

/* The answer text of CALL when a host function of this session, called
 * by the kernel, calls back into it: sent as the reply to the kernel's
 * input_request, whose next prompt carries the answer. */
static char *
nested_call(jupyter_session *session, const char *call, GError **error)
{
  if (session->current_kernel == NULL || session->call_msg_id == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "jupyter: this session is busy with another operation");
    return NULL;
  }
  g_autoptr(JsonObject) o = json_object_new();
  json_object_set_string_member(o, "nested", call);
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), o);
  g_autofree char *value = cx_json_to_string(node, FALSE);
  g_autofree char *prompt = jk_kernel_stdin_exchange(session->current_kernel, session->call_msg_id,
                                                     value, session->backend->timeout, error);
  if (prompt == NULL)
    return NULL;
  if (!g_str_has_prefix(prompt, NESTED_PREFIX)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: unexpected input_request: %s", prompt);
    return NULL;
  }
  return g_strdup(prompt + strlen(NESTED_PREFIX));
}

/* The answer text of CALL run in the session's kernel. */
static char *
direct_call(jupyter_session *session, const char *call, GError **error)
{
  g_autofree char *code = g_strdup_printf("_cellexec_answer = _cellexec_h.Out(%s)\n", call);
  g_autoptr(JsonObject) expressions = json_object_new();
  json_object_set_string_member(expressions, "answer", "_cellexec_answer");
  g_autoptr(JsonObject) reply = NULL;
  for (int attempt = 0; reply == NULL && attempt < 2; attempt++) {
    g_autoptr(GError) call_error = NULL;
    reply = session_exec(session, code, expressions, TRUE, &call_error);
    /* A new kernel (the session's first operation, or a restart): the
     * helper goes in first. */
    if (reply == NULL && attempt == 0 && call_error->domain == CX_ERROR &&
        call_error->code == CX_ERROR_BACKEND && strstr(call_error->message, "NameError") != NULL) {
      if (!ensure_helper(session, error))
        return NULL;
      continue;
    }
    if (reply == NULL) {
      g_propagate_error(error, g_steal_pointer(&call_error));
      return NULL;
    }
  }
  JsonNode *all = json_object_get_member(reply, "user_expressions");
  JsonObject *value = all != NULL && JSON_NODE_HOLDS_OBJECT(all)
                        ? json_object_get_object_member(json_node_get_object(all), "answer") : NULL;
  JsonNode *data = value != NULL ? json_object_get_member(value, "data") : NULL;
  const char *text = data != NULL && JSON_NODE_HOLDS_OBJECT(data)
                       ? cx__peer_get_string(json_node_get_object(data), "text/plain", NULL)
                       : NULL;
  if (text == NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel did not answer the operation");
  return g_strdup(text);
}

/* The answer of CALL (a Python expression on _cellexec_h) in the session's
 * kernel: its "value" (a new node; JSON null for None), or NULL with ERROR
 * set (CX_ERROR_PYTHON when the code raised). */
static JsonNode *
helper_call(jupyter_session *session, const char *call, GError **error)
{
  g_autofree char *text = session->depth > 0 ? nested_call(session, call, error)
                                             : direct_call(session, call, error);
  if (text == NULL)
    return NULL;
  g_autoptr(JsonNode) parsed = cx_json_from_string(text, -1, NULL);
  JsonArray *answer = parsed != NULL && JSON_NODE_HOLDS_ARRAY(parsed) ? json_node_get_array(parsed) : NULL;
  const char *status = answer != NULL && json_array_get_length(answer) >= 2
                         ? json_array_get_string_element(answer, 0) : NULL;
  if (g_strcmp0(status, "ok") == 0)
    return json_node_copy(json_array_get_element(answer, 1));
  if (g_strcmp0(status, "error") == 0 && json_array_get_length(answer) >= 5) {
    cx_set_python_error(error, json_array_get_string_element(answer, 1),
                        json_array_get_string_element(answer, 2),
                        json_array_get_string_element(answer, 3),
                        (int)json_array_get_int_element(answer, 4));
    return NULL;
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel's answer is not the executor's: %s",
              text);
  return NULL;
}

/* OBJECT (may be NULL) as a Python literal of its JSON text, or None. */
static char *
json_literal(JsonObject *object)
{
  if (object == NULL)
    return g_strdup("None");
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  return jupyter_py_literal(text);
}

static cx_env_instance *
jupyter_execute_prelude_incremental(cx_session_instance *instance, cx_env_instance *env_instance,
                                    const char *code, GError **error)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_env *env = (jupyter_env *)env_instance;
  gboolean fresh = env == NULL;
  if (fresh) {
    env = g_new0(jupyter_env, 1);
    env->id = g_atomic_int_add(&session->next_env, 1) + 1;
  }
  g_autofree char *literal = jupyter_py_literal(code);
  g_autofree char *call = g_strdup_printf("_cellexec_h.x.execute(_cellexec_h.env(%d), %s, None, 0, "
                                          "'<prelude>')", env->id, literal);
  g_autoptr(JsonNode) value = helper_call(session, call, error);
  if (value == NULL) {
    if (fresh)
      g_free(env);
    return NULL;
  }
  return (cx_env_instance *)env;
}

static cx_env_instance *
jupyter_execute_prelude(cx_session_instance *instance, const char *code, GError **error)
{
  return jupyter_execute_prelude_incremental(instance, NULL, code, error);
}

/* OPERATION(env, CODE, LOCALS as JSON text or None) of executor.py. */
static JsonNode *
value_call(cx_session_instance *instance, cx_env_instance *env_instance, const char *operation,
           const char *code, JsonObject *locals, gboolean with_locals, GError **error)
{
  jupyter_env *env = (jupyter_env *)env_instance;
  g_autofree char *code_literal = jupyter_py_literal(code);
  g_autofree char *locals_literal = with_locals ? json_literal(locals) : NULL;
  g_autofree char *call = g_strdup_printf("_cellexec_h.x.%s(_cellexec_h.env(%d), %s%s%s)", operation,
                                          env != NULL ? env->id : 0, code_literal,
                                          with_locals ? ", " : "", with_locals ? locals_literal : "");
  return helper_call((jupyter_session *)instance, call, error);
}

static JsonNode *
jupyter_evaluate_inline(cx_session_instance *instance, cx_env_instance *env,
                        const char *code, JsonObject *locals, GError **error)
{
  return value_call(instance, env, "evaluate_inline", code, locals, TRUE, error);
}

static JsonNode *
jupyter_execute_block(cx_session_instance *instance, cx_env_instance *env,
                      const char *code, JsonObject *locals, GError **error)
{
  JsonNode *value = value_call(instance, env, "execute_block", code, locals, TRUE, error);
  if (value != NULL && JSON_NODE_HOLDS_NULL(value))
    g_clear_pointer(&value, json_node_unref); /* None */
  return value;
}

static JsonNode *
jupyter_evaluate_type_expression(cx_session_instance *instance, cx_env_instance *env,
                                 const char *code, GError **error)
{
  return value_call(instance, env, "evaluate_type_expression", code, NULL, FALSE, error);
}

static gboolean
jupyter_execute_side_effects(cx_session_instance *instance, cx_env_instance *env_instance,
                             const char *code, JsonObject *bindings, int line_offset,
                             GError **error)
{
  jupyter_env *env = (jupyter_env *)env_instance;
  g_autofree char *literal = jupyter_py_literal(code);
  g_autofree char *bound = json_literal(bindings);
  g_autofree char *call = g_strdup_printf("_cellexec_h.x.execute(_cellexec_h.env(%d), %s, %s, %d, "
                                          "'<side effects>')", env->id, literal, bound, line_offset);
  g_autoptr(JsonNode) value = helper_call((jupyter_session *)instance, call, error);
  return value != NULL;
}

static gboolean
jupyter_create_dynamic_function(cx_session_instance *instance, cx_env_instance *env_instance,
                                const char *name, const char *const *params,
                                JsonObject *defaults, cx_host_function function,
                                gpointer user_data, GDestroyNotify destroy, GError **error)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_env *env = (jupyter_env *)env_instance;
  host_function *f = g_new0(host_function, 1);
  *f = (host_function){ function, user_data, destroy, env->id };
  int id = g_atomic_int_add(&session->next_env, 1) + 1;
  if (session->host_functions == NULL)
    session->host_functions = g_hash_table_new_full(NULL, NULL, NULL, host_function_free);
  g_hash_table_insert(session->host_functions, GINT_TO_POINTER(id), f);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_array(b);
  for (const char *const *p = params; p != NULL && *p != NULL; p++)
    json_builder_add_string_value(b, *p);
  json_builder_end_array(b);
  g_autoptr(JsonNode) list = json_builder_get_root(b);
  g_autofree char *list_text = cx_json_to_string(list, FALSE);
  g_autofree char *name_literal = jupyter_py_literal(name);
  g_autofree char *defaults_literal = json_literal(defaults);
  g_autofree char *call = g_strdup_printf(
    "_cellexec_h.x.bind_function(_cellexec_h.env(%d), %s, %s, %s, _cellexec_h.call_host(%d))",
    env->id, name_literal, list_text, defaults_literal, id);
  g_autoptr(JsonNode) value = helper_call(session, call, error);
  if (value == NULL) {
    g_hash_table_remove(session->host_functions, GINT_TO_POINTER(id)); /* destroys once */
    return FALSE;
  }
  return TRUE;
}

static JsonObject *
jupyter_env_snapshot(cx_session_instance *instance, cx_env_instance *env_instance, GError **error)
{
  jupyter_env *env = (jupyter_env *)env_instance;
  g_autofree char *call = g_strdup_printf("_cellexec_h.x.snapshot(_cellexec_h.env(%d))",
                                          env != NULL ? env->id : 0);
  g_autoptr(JsonNode) value = helper_call((jupyter_session *)instance, call, error);
  if (value == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT(value)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the snapshot is not an object");
    return NULL;
  }
  return json_object_ref(json_node_get_object(value));
}

static gboolean
env_owns(gpointer key, gpointer value, gpointer data)
{
  return ((host_function *)value)->env == GPOINTER_TO_INT(data);
}

static void
jupyter_env_free(cx_session_instance *instance, cx_env_instance *env_instance)
{
  jupyter_session *session = (jupyter_session *)instance;
  jupyter_env *env = (jupyter_env *)env_instance;
  g_autofree char *call = g_strdup_printf("_cellexec_h.free(%d)", env->id);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) value = helper_call((jupyter_session *)instance, call, &error);
  if (session->host_functions != NULL)
    g_hash_table_foreach_remove(session->host_functions, env_owns, GINT_TO_POINTER(env->id));
  g_free(env);
}

const cx_executor_vtable jupyter_executor_vtable = {
  .struct_size = sizeof(cx_executor_vtable),
  .execute_prelude = jupyter_execute_prelude,
  .execute_prelude_incremental = jupyter_execute_prelude_incremental,
  .evaluate_inline = jupyter_evaluate_inline,
  .execute_block = jupyter_execute_block,
  .execute_side_effects = jupyter_execute_side_effects,
  .create_dynamic_function = jupyter_create_dynamic_function,
  .evaluate_type_expression = jupyter_evaluate_type_expression,
  .env_snapshot = jupyter_env_snapshot,
  .env_free = jupyter_env_free,
};
