/* server: kernels, kernelspecs and sessions as Jupyter Server's REST API
 * serves them (server.h).  A kernel is a cxk_kernel (kernel/kernel.h) on a
 * session of the server's backend; starting, restarting and ending one
 * runs on a worker thread while its request waits, paused. */
#include "config.h"

#include <string.h>

#include "lib/peer_json.h"
#include "server/server-private.h"

/* The one kernelspec: the configured backend's Python, named as the
 * default kernel is everywhere, so that clients asking for it work
 * unchanged. */
#define SPEC_NAME "python3"

/* ---- A served kernel ------------------------------------------------------------ */

served_kernel *
cxs_kernel_ref(served_kernel *kernel)
{
  g_atomic_int_inc(&kernel->refs);
  return kernel;
}

void
cxs_kernel_unref(served_kernel *kernel)
{
  if (kernel == NULL || !g_atomic_int_dec_and_test(&kernel->refs))
    return;
  g_free(kernel->id);
  g_free(kernel->name);
  g_queue_clear_full(&kernel->pending, (GDestroyNotify)jp_message_free);
  g_mutex_clear(&kernel->lock);
  g_mutex_clear(&kernel->state_lock);
  g_free(kernel);
}

served_kernel *
cxs_kernel_lookup(cxs_server *server, const char *id)
{
  return g_hash_table_lookup(server->kernels, id);
}

void
cxs_kernel_touch(served_kernel *kernel)
{
  g_mutex_lock(&kernel->state_lock);
  kernel->last_activity = g_get_real_time();
  g_mutex_unlock(&kernel->state_lock);
}

void
cxs_kernel_set_state(served_kernel *kernel, const char *state)
{
  g_mutex_lock(&kernel->state_lock);
  kernel->execution_state = g_intern_string(state);
  kernel->last_activity = g_get_real_time();
  g_mutex_unlock(&kernel->state_lock);
}

/* REQUEST (taken) to KERNEL's session, which runs (under KERNEL's lock). */
static void
deliver_now(served_kernel *kernel, int channel, jp_message *request)
{
  if (channel == JP_SHELL) {
    cxk_kernel_submit(kernel->kernel, request);
  } else if (channel == JP_STDIN) {
    cxk_kernel_stdin(kernel->kernel, request);
  } else {
    cxk_kernel_control(kernel->kernel, request);
  }
}

/* At most this many requests wait for a kernel that is starting. */
#define MAX_PENDING 256

void
cxs_kernel_deliver(served_kernel *kernel, int channel, jp_message *request)
{
  cxs_kernel_touch(kernel);
  g_mutex_lock(&kernel->lock);
  if (kernel->kernel != NULL) {
    deliver_now(kernel, channel, request);
  } else if (channel != JP_STDIN && g_queue_get_length(&kernel->pending) < MAX_PENDING) {
    request->channel = channel;
    g_queue_push_tail(&kernel->pending, request);
  } else {
    jp_message_free(request);
  }
  g_mutex_unlock(&kernel->lock);
}

static JsonNode *
kernel_model(served_kernel *kernel)
{
  JsonObject *model = json_object_new();
  json_object_set_string_member(model, "id", kernel->id);
  json_object_set_string_member(model, "name", kernel->name);
  g_mutex_lock(&kernel->state_lock);
  g_autofree char *when = cxs_time_text(kernel->last_activity);
  json_object_set_string_member(model, "last_activity", when);
  json_object_set_string_member(model, "execution_state", kernel->execution_state);
  g_mutex_unlock(&kernel->state_lock);
  json_object_set_int_member(model, "connections",
                             kernel->connections != NULL
                               ? cxs_connections_count(kernel->connections) : 0);
  JsonNode *node = json_node_init_object(json_node_alloc(), model);
  json_object_unref(model);
  return node;
}

/* ---- Starting, restarting, ending ------------------------------------------------- */

typedef struct {
  served_kernel *kernel;
  SoupServerMessage *msg;     /* the request waiting for it, or NULL */
  guint ok_status;
  char *session_id;           /* answer with this session's model, not the kernel's */
  gboolean restart;
} kernel_job;

static void
kernel_job_free(kernel_job *job)
{
  cxs_kernel_unref(job->kernel);
  g_clear_object(&job->msg);
  g_free(job->session_id);
  g_free(job);
}

static JsonNode *session_model(cxs_server *server, JsonObject *record);

/* On a worker thread: (re)open KERNEL's session. */
static void
start_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  (void)source, (void)cancellable;
  kernel_job *job = data;
  served_kernel *k = job->kernel;
  if (job->restart) {
    cxs_kernel_set_state(k, "restarting");
    g_mutex_lock(&k->lock);
    cxk_kernel *old = g_steal_pointer(&k->kernel);
    g_mutex_unlock(&k->lock);
    cxk_kernel_free(old);
  }
  cxk_sink sink = cxs_channels_sink(k);
  GError *error = NULL;
  cxk_kernel *kernel = cxk_kernel_new(k->server->options.backend, &sink, &error);
  if (kernel != NULL)
    cxk_kernel_set_max_queued(kernel, k->server->options.max_queue);
  g_mutex_lock(&k->lock);
  /* Deleted while it started: the new session goes, never to be reached. */
  cxk_kernel *unwanted = k->ended ? g_steal_pointer(&kernel) : NULL;
  k->kernel = kernel;
  /* What came meanwhile, in order. */
  jp_message *request;
  while ((request = g_queue_pop_head(&k->pending)) != NULL) {
    if (kernel != NULL)
      deliver_now(k, request->channel, request);
    else
      jp_message_free(request);
  }
  g_mutex_unlock(&k->lock);
  cxs_kernel_set_state(k, kernel != NULL ? "idle" : "dead");
  cxk_kernel_free(unwanted);
  if (unwanted != NULL)
    g_set_error_literal(&error, CX_ERROR, CX_ERROR_BACKEND, "the kernel was deleted as it started");
  if (kernel == NULL)
    g_task_return_error(task, error);
  else
    g_task_return_boolean(task, TRUE);
}

static void end_kernel(cxs_server *server, served_kernel *kernel, SoupServerMessage *msg);
static void run_kernel_end(gpointer end);

/* Back on the main loop: answer the request that waited. */
static void
started(GObject *source, GAsyncResult *result, gpointer data)
{
  (void)source, (void)data;
  kernel_job *job = g_task_get_task_data(G_TASK(result));
  g_autoptr(GError) error = NULL;
  gboolean ok = g_task_propagate_boolean(G_TASK(result), &error);
  job->kernel->starting = FALSE;
  if (job->msg != NULL && job->kernel->server->stopping) {
    /* The server is going: its connections are gone. */
  } else if (job->msg != NULL && job->kernel->ended) {
    cxs_reply_error(job->msg, SOUP_STATUS_NOT_FOUND, "the kernel was deleted as it started");
    soup_server_message_unpause(job->msg);
  } else if (job->msg != NULL) {
    cxs_server *server = job->kernel->server;
    JsonObject *record = job->session_id != NULL
                           ? g_hash_table_lookup(server->sessions, job->session_id) : NULL;
    if (ok && record != NULL) {
      cxs_reply_json(job->msg, job->ok_status, session_model(server, record));
    } else if (ok) {
      if (job->ok_status == SOUP_STATUS_CREATED) {
        g_autofree char *location = g_strdup_printf("/api/kernels/%s", job->kernel->id);
        soup_message_headers_replace(soup_server_message_get_response_headers(job->msg),
                                     "Location", location);
      }
      cxs_reply_json(job->msg, job->ok_status, kernel_model(job->kernel));
    } else {
      cxs_reply_error(job->msg, SOUP_STATUS_INTERNAL_SERVER_ERROR,
                      "the kernel's session did not start: %s", error->message);
    }
    soup_server_message_unpause(job->msg);
  }
  job->kernel->server->starting--;
  if (!ok && !job->kernel->server->stopping)
    end_kernel(job->kernel->server, job->kernel, NULL);
  if (job->kernel->end_after_start != NULL)
    run_kernel_end(g_steal_pointer(&job->kernel->end_after_start));
}

/* Start (or restart) KERNEL on a worker thread, answering MSG (may be
 * NULL) with OK_STATUS and its model (the model of the session
 * SESSION_ID, when not NULL) once it runs. */
static void
run_start(served_kernel *kernel, SoupServerMessage *msg, guint ok_status, gboolean restart,
          const char *session_id)
{
  kernel->starting = TRUE;
  kernel_job *job = g_new0(kernel_job, 1);
  job->kernel = cxs_kernel_ref(kernel);
  job->session_id = g_strdup(session_id);
  job->msg = msg != NULL ? g_object_ref(msg) : NULL;
  job->ok_status = ok_status;
  job->restart = restart;
  if (msg != NULL) {
    /* A status now, replaced before the message goes on: the answer
     * should the job end without one. */
    soup_server_message_set_status(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, NULL);
    soup_server_message_pause(msg);
  }
  kernel->server->starting++;
  g_autoptr(GTask) task = g_task_new(NULL, NULL, started, NULL);
  g_task_set_task_data(task, job, (GDestroyNotify)kernel_job_free);
  g_task_run_in_thread(task, start_in_thread);
}

typedef struct {
  served_kernel *kernel;
  cxs_ending *ending;
} kernel_end;

static gpointer
free_in_thread(gpointer data)
{
  kernel_end *end = data;
  served_kernel *kernel = end->kernel;
  cxs_server *server = kernel->server;
  g_mutex_lock(&kernel->lock);
  cxk_kernel *gone = g_steal_pointer(&kernel->kernel);
  g_mutex_unlock(&kernel->lock);
  cxk_kernel_free(gone);
  cxs_kernel_unref(kernel);
  cxs_ending_done_later(end->ending);
  g_free(end);
  cxs_server_worker_end(server);
  return NULL;
}

/* KERNEL leaves the server: its WebSockets are closed at once, its
 * session ended on a thread of its own (a running cell is interrupted),
 * and MSG (may be NULL) answered 204 once it has (ending.c). */
static void
end_kernel(cxs_server *server, served_kernel *kernel, SoupServerMessage *msg)
{
  if (kernel->ended) {
    if (msg != NULL)
      cxs_reply_json(msg, SOUP_STATUS_NO_CONTENT, NULL);
    return;
  }
  g_mutex_lock(&kernel->lock);
  kernel->ended = TRUE; /* under the lock: a start on its way reads it there */
  g_mutex_unlock(&kernel->lock);
  cxs_kernel_set_state(kernel, "dead");
  g_clear_pointer(&kernel->connections, cxs_connections_free);
  cxs_kernel_ref(kernel);
  g_hash_table_remove(server->kernels, kernel->id);
  /* The sessions that named it go with it, as in Jupyter Server. */
  GHashTableIter iter;
  gpointer key, value;
  g_hash_table_iter_init(&iter, server->sessions);
  while (g_hash_table_iter_next(&iter, &key, &value))
    if (g_strcmp0(cx__peer_get_string(value, "kernel_id", NULL), kernel->id) == 0)
      g_hash_table_iter_remove(&iter);
  g_autofree char *what = g_strdup_printf("kernel %s", kernel->id);
  kernel_end *end = g_new0(kernel_end, 1);
  end->kernel = kernel;
  end->ending = cxs_ending_begin(server, msg, SOUP_STATUS_NO_CONTENT, what);
  cxs_server_worker_begin(server);
  /* A (re)start on its way holds a session, or is ending one: the end,
   * and the slot's release, wait for it (started()). */
  if (kernel->starting)
    kernel->end_after_start = end;
  else
    run_kernel_end(end);
}

/* END (a kernel_end) on a thread of its own. */
static void
run_kernel_end(gpointer end)
{
  if (!cxs_server_spawn("cellexec-serve-end", free_in_thread, end))
    free_in_thread(end); /* here, then: the server must not abort */
}

void
cxs_kernels_end_all(cxs_server *server)
{
  /* What is starting ends once it has started. */
  while (server->starting > 0)
    g_main_context_iteration(server->context, TRUE);
  g_autoptr(GList) kernels = g_hash_table_get_values(server->kernels);
  for (GList *l = kernels; l != NULL; l = l->next) {
    served_kernel *kernel = l->data;
    g_mutex_lock(&kernel->lock);
    kernel->ended = TRUE;
    g_mutex_unlock(&kernel->lock);
    g_clear_pointer(&kernel->connections, cxs_connections_free);
    g_mutex_lock(&kernel->lock);
    cxk_kernel *gone = g_steal_pointer(&kernel->kernel);
    g_mutex_unlock(&kernel->lock);
    cxk_kernel_free(gone);
  }
  g_hash_table_remove_all(server->kernels);
}

typedef struct {
  served_kernel *kernel;
  gboolean restart;
} shutdown_call;

static gboolean
shutdown_on_main(gpointer data)
{
  shutdown_call *call = data;
  served_kernel *kernel = call->kernel;
  if (!kernel->ended) {
    if (call->restart && !kernel->starting)
      run_start(kernel, NULL, 0, TRUE, NULL);
    else if (!call->restart)
      end_kernel(kernel->server, kernel, NULL);
  }
  cxs_kernel_unref(kernel);
  g_free(call);
  return G_SOURCE_REMOVE;
}

void
cxs_kernel_shutdown_requested(served_kernel *kernel, gboolean restart)
{
  shutdown_call *call = g_new0(shutdown_call, 1);
  call->kernel = cxs_kernel_ref(kernel);
  call->restart = restart;
  /* Always later: the caller may hold the kernel's lock. */
  cxs_server_defer(kernel->server, G_PRIORITY_DEFAULT_IDLE, shutdown_on_main, call);
}

/* Every few seconds: end the kernels idle with no connection, and the
 * contexts idle, for longer than --idle-timeout. */
static gboolean
cull_idle(gpointer data)
{
  cxs_server *server = data;
  gint64 limit = g_get_real_time() - (gint64)server->options.idle_timeout * G_USEC_PER_SEC;
  g_autoptr(GList) kernels = g_hash_table_get_values(server->kernels);
  for (GList *l = kernels; l != NULL; l = l->next) {
    served_kernel *kernel = l->data;
    g_mutex_lock(&kernel->state_lock);
    gboolean idle = kernel->execution_state == g_intern_static_string("idle") &&
                    kernel->last_activity < limit;
    g_mutex_unlock(&kernel->state_lock);
    if (idle && cxs_connections_count(kernel->connections) == 0) {
      cxs_log("kernel %s idle for more than %u s: ended", kernel->id,
              server->options.idle_timeout);
      end_kernel(server, kernel, NULL);
    }
  }
  g_autoptr(GList) contexts = g_hash_table_get_values(server->contexts);
  for (GList *l = contexts; l != NULL; l = l->next) {
    if (cxs_context_is_idle(l->data, limit)) {
      cxs_log("context %s idle for more than %u s: ended", cxs_context_id(l->data),
              server->options.idle_timeout);
      cxs_context_remove(server, l->data, NULL);
    }
  }
  return G_SOURCE_CONTINUE;
}

/* ---- /api/kernels ----------------------------------------------------------------- */

/* A new kernel of SPEC, in the table; NULL after answering MSG when the
 * server is full or the spec unknown. */
static served_kernel *
new_kernel(cxs_server *server, SoupServerMessage *msg, const char *spec)
{
  if (spec != NULL && !g_str_equal(spec, SPEC_NAME)) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND,
                    "no kernelspec named \"%s\" (this server has \"" SPEC_NAME
                    "\"; GET /api/kernelspecs lists it)", spec);
    return NULL;
  }
  if (!cxs_server_has_room(server, msg))
    return NULL;
  served_kernel *kernel = g_new0(served_kernel, 1);
  kernel->refs = 1;
  kernel->server = server;
  kernel->id = g_uuid_string_random();
  kernel->name = g_strdup(SPEC_NAME);
  g_mutex_init(&kernel->lock);
  g_mutex_init(&kernel->state_lock);
  g_queue_init(&kernel->pending);
  kernel->execution_state = "starting";
  kernel->last_activity = g_get_real_time();
  kernel->connections = cxs_connections_new();
  g_hash_table_insert(server->kernels, kernel->id, kernel);
  return kernel;
}

static JsonNode *
listed_kernel(gpointer kernel, gpointer data)
{
  (void)data;
  return kernel_model(kernel);
}

static void
kernels_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
              gpointer data)
{
  (void)soup, (void)query;
  cxs_server *server = data;
  const char *method = soup_server_message_get_method(msg);
  g_auto(GStrv) parts = g_strsplit(path + strlen("/api/kernels"), "/", -1);
  /* parts: "" (for /api/kernels), or "", ID[, ACTION] */
  guint n = g_strv_length(parts);
  if (n <= 1 || (n == 2 && *parts[1] == '\0')) {
    if (g_str_equal(method, "GET")) {
      cxs_reply_list(msg, server->kernels, listed_kernel, NULL);
    } else if (g_str_equal(method, "POST")) {
      g_autoptr(JsonObject) body = cxs_request_object(msg);
      if (body == NULL)
        return;
      served_kernel *kernel = new_kernel(server, msg, cx__peer_get_string(body, "name", NULL));
      if (kernel != NULL)
        run_start(kernel, msg, SOUP_STATUS_CREATED, FALSE, NULL);
    } else {
      cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s %s: use GET or POST", method, path);
    }
    return;
  }
  served_kernel *kernel = n <= 4 ? cxs_kernel_lookup(server, parts[1]) : NULL;
  if (kernel == NULL) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no kernel %s (GET /api/kernels lists them)",
                    n > 1 ? parts[1] : "");
    return;
  }
  const char *action = n >= 3 ? parts[2] : "";
  if (*action == '\0') {
    if (g_str_equal(method, "GET")) {
      cxs_reply_json(msg, SOUP_STATUS_OK, kernel_model(kernel));
    } else if (g_str_equal(method, "DELETE")) {
      end_kernel(server, kernel, msg);
    } else {
      cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s %s: use GET or DELETE", method,
                      path);
    }
  } else if (g_str_equal(action, "channels") && n == 3) {
    cxs_channels_accept(server, msg);
  } else if (!g_str_equal(method, "POST") || n != 3) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no such route: %s %s", method, path);
  } else if (g_str_equal(action, "interrupt")) {
    g_mutex_lock(&kernel->lock);
    if (kernel->kernel != NULL)
      cxk_kernel_interrupt(kernel->kernel);
    g_mutex_unlock(&kernel->lock);
    cxs_reply_json(msg, SOUP_STATUS_NO_CONTENT, NULL);
  } else if (g_str_equal(action, "restart")) {
    if (kernel->starting)
      cxs_reply_error(msg, SOUP_STATUS_CONFLICT, "kernel %s is starting already: wait for it",
                      kernel->id);
    else
      run_start(kernel, msg, SOUP_STATUS_OK, TRUE, NULL);
  } else {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no such route: %s %s", method, path);
  }
}

/* ---- /api/kernelspecs and /api ------------------------------------------------------ */

static JsonNode *
spec_model(cxs_server *server)
{
  JsonObject *spec = json_object_new();
  json_object_set_array_member(spec, "argv", json_array_new());
  g_autofree char *display = g_strdup_printf("Python 3 (cellexec %s)",
                                             server->options.backend_name);
  json_object_set_string_member(spec, "display_name", display);
  json_object_set_string_member(spec, "language", "python");
  json_object_set_string_member(spec, "interrupt_mode", "message");
  json_object_set_object_member(spec, "env", json_object_new());
  json_object_set_object_member(spec, "metadata", json_object_new());
  JsonObject *model = json_object_new();
  json_object_set_string_member(model, "name", SPEC_NAME);
  json_object_set_object_member(model, "spec", spec);
  json_object_set_object_member(model, "resources", json_object_new());
  JsonNode *node = json_node_init_object(json_node_alloc(), model);
  json_object_unref(model);
  return node;
}

static void
kernelspecs_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
                  gpointer data)
{
  (void)soup, (void)query;
  cxs_server *server = data;
  if (!g_str_equal(soup_server_message_get_method(msg), "GET")) {
    cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s: use GET", path);
    return;
  }
  const char *name = path + strlen("/api/kernelspecs");
  while (*name == '/')
    name++;
  if (*name != '\0') {
    if (g_str_equal(name, SPEC_NAME))
      cxs_reply_json(msg, SOUP_STATUS_OK, spec_model(server));
    else
      cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no kernelspec named \"%s\"", name);
    return;
  }
  JsonObject *specs = json_object_new();
  json_object_set_member(specs, SPEC_NAME, spec_model(server));
  JsonObject *all = json_object_new();
  json_object_set_string_member(all, "default", SPEC_NAME);
  json_object_set_object_member(all, "kernelspecs", specs);
  cxs_reply_json(msg, SOUP_STATUS_OK, json_node_init_object(json_node_alloc(), all));
  json_object_unref(all);
}

static void
api_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
          gpointer data)
{
  (void)soup, (void)query, (void)data;
  if (!g_str_equal(path, "/api") && !g_str_equal(path, "/api/")) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no such route: %s", path);
    return;
  }
  JsonObject *about = json_object_new();
  json_object_set_string_member(about, "version", PACKAGE_VERSION);
  cxs_reply_json(msg, SOUP_STATUS_OK, json_node_init_object(json_node_alloc(), about));
  json_object_unref(about);
}

/* ---- /api/sessions ---------------------------------------------------------------- */

/* The session model of RECORD (kept: id, path, name, type, kernel_id),
 * with its kernel's model. */
static JsonNode *
session_model(cxs_server *server, JsonObject *record)
{
  JsonObject *model = json_object_new();
  for (const char *const *key = (const char *const[]){ "id", "path", "name", "type", NULL };
       *key != NULL; key++)
    json_object_set_string_member(model, *key, cx__peer_get_string(record, *key, ""));
  served_kernel *kernel = cxs_kernel_lookup(server, cx__peer_get_string(record, "kernel_id", ""));
  if (kernel != NULL)
    json_object_set_member(model, "kernel", kernel_model(kernel));
  else
    json_object_set_null_member(model, "kernel");
  /* What clients of notebook 5 still read. */
  JsonObject *notebook = json_object_new();
  json_object_set_string_member(notebook, "path", cx__peer_get_string(record, "path", ""));
  json_object_set_string_member(notebook, "name", cx__peer_get_string(record, "name", ""));
  json_object_set_object_member(model, "notebook", notebook);
  JsonNode *node = json_node_init_object(json_node_alloc(), model);
  json_object_unref(model);
  return node;
}

/* Whether a session names the kernel ID. */
static gboolean
kernel_in_a_session(cxs_server *server, const char *id)
{
  GHashTableIter iter;
  gpointer key, record;
  g_hash_table_iter_init(&iter, server->sessions);
  while (g_hash_table_iter_next(&iter, &key, &record))
    if (g_strcmp0(cx__peer_get_string(record, "kernel_id", NULL), id) == 0)
      return TRUE;
  return FALSE;
}

static JsonNode *
listed_session(gpointer record, gpointer server)
{
  return session_model(server, record);
}

static void
update_session(JsonObject *record, JsonObject *body)
{
  for (const char *const *key = (const char *const[]){ "path", "name", "type", NULL };
       *key != NULL; key++) {
    const char *value = cx__peer_get_string(body, *key, NULL);
    if (value != NULL)
      json_object_set_string_member(record, *key, value);
  }
}

/* The kernel BODY's "kernel" names: {"id"} of a running one, else a new
 * one of {"name"}; NULL after answering MSG. */
static served_kernel *
session_kernel(cxs_server *server, SoupServerMessage *msg, JsonObject *body, gboolean *is_new)
{
  JsonObject *wanted = cx__peer_get_object(body, "kernel");
  const char *id = cx__peer_get_string(wanted, "id", NULL);
  *is_new = FALSE;
  if (id != NULL) {
    served_kernel *kernel = cxs_kernel_lookup(server, id);
    if (kernel == NULL)
      cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no kernel %s", id);
    return kernel;
  }
  *is_new = TRUE;
  return new_kernel(server, msg, cx__peer_get_string(wanted, "name", NULL));
}

static void
sessions_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
               gpointer data)
{
  (void)soup, (void)query;
  cxs_server *server = data;
  const char *method = soup_server_message_get_method(msg);
  const char *id = path + strlen("/api/sessions");
  while (*id == '/')
    id++;
  if (*id == '\0') {
    if (g_str_equal(method, "GET")) {
      cxs_reply_list(msg, server->sessions, listed_session, server);
    } else if (g_str_equal(method, "POST")) {
      g_autoptr(JsonObject) body = cxs_request_object(msg);
      if (body == NULL)
        return;
      gboolean is_new;
      served_kernel *kernel = session_kernel(server, msg, body, &is_new);
      if (kernel == NULL)
        return;
      JsonObject *record = json_object_new();
      char *session_id = g_uuid_string_random();
      json_object_set_string_member(record, "id", session_id);
      json_object_set_string_member(record, "kernel_id", kernel->id);
      update_session(record, body);
      g_hash_table_insert(server->sessions, session_id, record);
      g_autofree char *location = g_strdup_printf("/api/sessions/%s", session_id);
      soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Location",
                                   location);
      /* Answered once its kernel runs, as Jupyter Server answers. */
      if (is_new)
        run_start(kernel, msg, SOUP_STATUS_CREATED, FALSE, session_id);
      else
        cxs_reply_json(msg, SOUP_STATUS_CREATED, session_model(server, record));
    } else {
      cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s %s: use GET or POST", method, path);
    }
    return;
  }
  JsonObject *record = g_hash_table_lookup(server->sessions, id);
  if (record == NULL) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no session %s (GET /api/sessions lists them)", id);
    return;
  }
  if (g_str_equal(method, "GET")) {
    cxs_reply_json(msg, SOUP_STATUS_OK, session_model(server, record));
  } else if (g_str_equal(method, "PATCH")) {
    g_autoptr(JsonObject) body = cxs_request_object(msg);
    if (body == NULL)
      return;
    if (cx__peer_get_object(body, "kernel") != NULL) {
      gboolean is_new;
      served_kernel *kernel = session_kernel(server, msg, body, &is_new);
      if (kernel == NULL)
        return;
      g_autofree char *old_id = g_strdup(cx__peer_get_string(record, "kernel_id", ""));
      json_object_set_string_member(record, "kernel_id", kernel->id);
      if (is_new)
        run_start(kernel, NULL, 0, FALSE, NULL);
      /* The kernel it leaves ends, unless another session has it (as
       * JupyterLab's "Change kernel" expects of Jupyter Server). */
      served_kernel *old = cxs_kernel_lookup(server, old_id);
      if (old != NULL && old != kernel && !kernel_in_a_session(server, old_id))
        end_kernel(server, old, NULL);
    }
    update_session(record, body);
    cxs_reply_json(msg, SOUP_STATUS_OK, session_model(server, record));
  } else if (g_str_equal(method, "DELETE")) {
    served_kernel *kernel =
      cxs_kernel_lookup(server, cx__peer_get_string(record, "kernel_id", ""));
    g_hash_table_remove(server->sessions, id);
    if (kernel != NULL)
      end_kernel(server, kernel, msg);
    else
      cxs_reply_json(msg, SOUP_STATUS_NO_CONTENT, NULL);
  } else {
    cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s %s: use GET, PATCH or DELETE",
                    method, path);
  }
}

void
cxs_kernels_add_routes(cxs_server *server)
{
  soup_server_add_handler(server->soup, "/api", api_route, server, NULL);
  soup_server_add_handler(server->soup, "/api/kernelspecs", kernelspecs_route, server, NULL);
  cxs_server_add_route(server, "/api/kernels", kernels_route);
  cxs_server_add_route(server, "/api/sessions", sessions_route);
  if (server->options.idle_timeout > 0)
    server->cull_source = g_timeout_add_seconds(MAX(1, server->options.idle_timeout / 4),
                                                cull_idle, server);
}
