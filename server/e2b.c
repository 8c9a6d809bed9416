/* server: E2B's code-interpreter API (the routes of E2B's own server in
 * its sandbox template), so that its SDKs run code here unchanged:
 *
 *   POST /execute            {code, context_id | language, env_vars}: the
 *                            cell's outputs streamed as JSON lines
 *   GET, POST /contexts      {language, cwd} -> {id, language, cwd}
 *   POST /contexts/ID/restart, DELETE /contexts/ID
 *   GET /health              "OK"
 *
 * A context is a cellexec session (not a kernel: no Jupyter messages on
 * the way), opened on the thread that runs its first cell.  Cells run
 * on a fixed set of threads (--cell-threads), one at a time per context,
 * in the order they came: a context's requests wait in its queue as plain
 * objects (at most --max-queue of them, and --max-queued in all; past
 * either, 429 or 503 with Retry-After), and the thread that ran a
 * context's cell runs the next one.  Lines reach the response on the main
 * loop.  A client that goes away interrupts its cell, so that the context
 * is free for the next one. */
#include "config.h"

#include <string.h>

#include "lib/peer_json.h"
#include "server/server-private.h"

/* A line every few seconds while a cell is quiet, as E2B's server sends:
 * writing is how a client that went away is noticed. */
#define KEEPALIVE_SECONDS 5
/* At most this many bytes of a response wait to be written: past it, the
 * thread that makes the next line waits for the client to read, and so,
 * through its output, does the cell.  A client that stops reading holds
 * its cell, not the server's memory. */
#define MAX_UNWRITTEN (4 * 1024 * 1024)
/* What a client refused for a full queue is told to wait, in seconds. */
#define RETRY_AFTER_SECONDS "1"
/* Lines made within this long of the first leave together: a quick cell's
 * lines and its end go out as one chunk, for one wake of the main loop,
 * while a long cell's output still streams. */
#define FLUSH_DELAY_USEC 1000

struct cxs_context {
  gint refs;
  char *id;
  char *cwd;                  /* where its cells run */
  gboolean cwd_given;         /* by the client: else the backend's own, which
                               * a sandbox's view always holds */
  GMutex lock;                /* the fields below; held only briefly */
  GCond changed;              /* users went to 0, or opening ended */
  cx_session *session;        /* NULL until its first cell, and after a restart */
  gboolean opening;           /* a thread is opening SESSION, outside LOCK */
  guint users;                /* executions holding SESSION: closing waits for them */
  struct execution *running;  /* the execution whose cell runs, or NULL */
  GQueue waiting;             /* executions behind the one scheduled, in order */
  gboolean scheduled;         /* one of its executions is on a cell thread, or
                               * waits for one: it runs those of WAITING after it */
  gint64 last_activity;
  guint executions;           /* executions under way, queued or running */
  gboolean removed;
};

static cxs_context *
context_ref(cxs_context *context)
{
  g_atomic_int_inc(&context->refs);
  return context;
}

void
cxs_context_unref(cxs_context *context)
{
  if (context == NULL || !g_atomic_int_dec_and_test(&context->refs))
    return;
  if (context->session != NULL)
    cx_session_close(context->session);
  g_mutex_clear(&context->lock);
  g_cond_clear(&context->changed);
  g_free(context->id);
  g_free(context->cwd);
  g_free(context);
}

static JsonNode *
context_model(cxs_context *context)
{
  JsonObject *model = json_object_new();
  json_object_set_string_member(model, "id", context->id);
  json_object_set_string_member(model, "language", "python");
  json_object_set_string_member(model, "cwd", context->cwd);
  JsonNode *node = json_node_init_object(json_node_alloc(), model);
  json_object_unref(model);
  return node;
}

static JsonNode *
listed_context(gpointer context, gpointer data)
{
  (void)data;
  return context_model(context);
}

/* A new context in the table; NULL after answering MSG when the server is
 * full. */
static cxs_context *
new_context(cxs_server *server, SoupServerMessage *msg, const char *cwd)
{
  if (!cxs_server_has_room(server, msg))
    return NULL;
  cxs_context *context = g_new0(cxs_context, 1);
  context->refs = 1;
  context->id = g_uuid_string_random();
  /* Where its cells run: the backend's directory (the server's own) unless told. */
  context->cwd = cwd != NULL ? g_strdup(cwd) : g_get_current_dir();
  context->cwd_given = cwd != NULL;
  g_mutex_init(&context->lock);
  g_cond_init(&context->changed);
  g_queue_init(&context->waiting);
  context->last_activity = g_get_real_time();
  g_hash_table_insert(server->contexts, context->id, context);
  return context;
}

/* The default context (E2B's "python" one), made on first use. */
static cxs_context *
default_context(cxs_server *server, SoupServerMessage *msg)
{
  cxs_context *context = server->default_context != NULL
                           ? g_hash_table_lookup(server->contexts, server->default_context)
                           : NULL;
  if (context != NULL)
    return context;
  context = new_context(server, msg, NULL);
  if (context != NULL) {
    g_free(server->default_context);
    server->default_context = g_strdup(context->id);
  }
  return context;
}

/* Only Python: the language E2B names it by, "python", or none. */
static gboolean
language_ok(SoupServerMessage *msg, const char *language)
{
  if (language == NULL || g_ascii_strcasecmp(language, "python") == 0)
    return TRUE;
  cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST,
                  "language \"%s\": this server runs Python only", language);
  return FALSE;
}

/* ---- An execution ----------------------------------------------------------------- */

typedef struct execution {
  gint refs;
  cxs_server *server;
  SoupServerMessage *msg;
  cxs_context *context;
  char *code;
  GPtrArray *env;             /* "KEY=VALUE" */
  GMutex lock;                /* pending, ended, flush_due, unwritten, gone */
  GCond written;              /* UNWRITTEN went down, or the client left */
  GString *pending;           /* lines not yet handed to the response */
  gsize unwritten;            /* bytes handed to the response, not yet written */
  gboolean ended;             /* the last line is in PENDING */
  GSource *flush;             /* on the main loop, its ready time set by whoever adds lines */
  gboolean flush_due;         /* FLUSH has a ready time */
  gboolean gone;              /* main loop: the response is over (sent, or the client left) */
  gboolean started;           /* main loop: the response's headers are on their way */
  gboolean done;              /* main loop: the end was written */
  gint cancelled;             /* atomic: its client left before its turn: skip it */
  guint keepalive;
} execution;

static void
execution_unref(execution *e)
{
  if (!g_atomic_int_dec_and_test(&e->refs))
    return;
  g_source_destroy(e->flush);
  g_source_unref(e->flush);
  g_object_unref(e->msg);
  cxs_context_unref(e->context);
  g_free(e->code);
  g_ptr_array_unref(e->env);
  g_string_free(e->pending, TRUE);
  g_mutex_clear(&e->lock);
  g_cond_clear(&e->written);
  g_free(e);
}

/* On the main loop: what waits goes to the response as one chunk (the
 * lines of a quick cell, all of them), then its end once it came.  The
 * flush that takes the end drops the reference of the thread that made
 * it: the message that reference holds belongs to this loop. */
static gboolean
flush_on_main(gpointer data)
{
  execution *e = data;
  g_mutex_lock(&e->lock);
  gsize len = e->pending->len;
  char *lines = g_string_free(e->pending, FALSE);
  e->pending = g_string_new(NULL);
  gboolean ended = e->ended;
  e->flush_due = FALSE;
  g_source_set_ready_time(e->flush, -1);
  gboolean gone = e->gone;
  if (!gone)
    e->unwritten += len;
  g_mutex_unlock(&e->lock);
  if (!gone && !e->server->stopping) {
    SoupMessageBody *body = soup_server_message_get_response_body(e->msg);
    /* A cell that ended before anything was sent is one plain body: fewer
     * writes, and fewer wakes of the client, than chunks. */
    if (ended && !e->started)
      soup_message_headers_set_content_length(
        soup_server_message_get_response_headers(e->msg), len);
    e->started = TRUE;
    if (len > 0)
      soup_message_body_append(body, SOUP_MEMORY_TAKE, g_steal_pointer(&lines), len);
    if (ended)
      soup_message_body_complete(body);
    soup_server_message_unpause(e->msg);
  }
  g_free(lines);
  if (ended && !e->done) {
    e->done = TRUE;
    if (e->keepalive != 0)
      g_source_remove(e->keepalive);
    e->keepalive = 0;
    execution_unref(e); /* the thread's: E may be gone now */
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
dispatch_callback(GSource *source, GSourceFunc callback, gpointer data)
{
  (void)source;
  return callback(data);
}

/* Ready only when its ready time says: no prepare or check of its own. */
static GSourceFuncs flush_source_funcs = { .dispatch = dispatch_callback };

/* Whether CONTEXT is being removed, or restarted (its session taken). */
static gboolean
context_closing(cxs_context *context)
{
  g_mutex_lock(&context->lock);
  gboolean closing = context->removed || context->session == NULL;
  g_mutex_unlock(&context->lock);
  return closing;
}

/* Any thread: OBJECT (taken) as the next line, or the end when NULL,
 * which hands over the calling thread's reference to E. */
static void
send_line(execution *e, JsonObject *object)
{
  g_autofree char *text = NULL;
  if (object != NULL) {
    g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
    json_object_unref(object);
    text = cx_json_to_string(node, FALSE);
  }
  g_mutex_lock(&e->lock);
  /* Not on the main loop (keepalives), which is what writes; and not for a
   * context being removed or restarted, whose closing waits for this cell. */
  while (text != NULL && !e->gone && e->unwritten + e->pending->len > MAX_UNWRITTEN &&
         !g_main_context_is_owner(e->server->context) && !context_closing(e->context))
    g_cond_wait_until(&e->written, &e->lock, g_get_monotonic_time() + G_USEC_PER_SEC);
  if (text != NULL) {
    g_string_append(e->pending, text);
    g_string_append_c(e->pending, '\n');
  } else {
    e->ended = TRUE;
  }
  /* The end goes now; a line waits a moment for the next ones, unless a
   * flush is on its way already and takes it too. */
  if (text == NULL)
    g_source_set_ready_time(e->flush, 0);
  else if (!e->flush_due)
    g_source_set_ready_time(e->flush, g_get_monotonic_time() + FLUSH_DELAY_USEC);
  e->flush_due = TRUE;
  g_mutex_unlock(&e->lock);
}

static JsonObject *
typed(const char *type)
{
  JsonObject *o = json_object_new();
  json_object_set_string_member(o, "type", type);
  return o;
}

/* A MIME value as E2B gives it: text (a list of lines joined), or the
 * JSON value itself for application/json and E2B's own types. */
static JsonNode *
mime_value(JsonNode *value)
{
  if (value != NULL && JSON_NODE_HOLDS_ARRAY(value)) {
    GString *text = g_string_new(NULL);
    JsonArray *lines = json_node_get_array(value);
    for (guint i = 0; i < json_array_get_length(lines); i++) {
      JsonNode *line = json_array_get_element(lines, i);
      if (JSON_NODE_HOLDS_VALUE(line) && json_node_get_value_type(line) == G_TYPE_STRING)
        g_string_append(text, json_node_get_string(line));
    }
    JsonNode *node = json_node_init_string(json_node_alloc(), text->str);
    g_string_free(text, TRUE);
    return node;
  }
  return json_node_copy(value);
}

/* An output's bundle DATA as E2B's Result: its formats by their names,
 * the rest in "extra".  text/plain loses the quotes around it, as E2B's
 * server takes them off ('hello' -> hello). */
static JsonObject *
result_of(JsonObject *data, gboolean main_result)
{
  static const char *const names[][2] = {
    { "text/plain", "text" }, { "text/html", "html" }, { "text/markdown", "markdown" },
    { "image/svg+xml", "svg" }, { "image/png", "png" }, { "image/jpeg", "jpeg" },
    { "application/pdf", "pdf" }, { "text/latex", "latex" }, { "application/json", "json" },
    { "application/javascript", "javascript" }, { "e2b/data", "data" }, { "e2b/chart", "chart" },
  };
  JsonObject *result = typed("result");
  JsonObject *extra = json_object_new();
  JsonObjectIter iter;
  const char *mime;
  JsonNode *value;
  json_object_iter_init(&iter, data);
  while (json_object_iter_next(&iter, &mime, &value)) {
    const char *name = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(names) && name == NULL; i++)
      if (g_str_equal(mime, names[i][0]))
        name = names[i][1];
    JsonNode *kept = mime_value(value);
    if (name != NULL && g_str_equal(name, "text") && JSON_NODE_HOLDS_VALUE(kept) &&
        json_node_get_value_type(kept) == G_TYPE_STRING) {
      const char *text = json_node_get_string(kept);
      gsize len = strlen(text);
      if (len >= 2 && (text[0] == '\'' || text[0] == '"') && text[len - 1] == text[0]) {
        g_autofree char *inner = g_strndup(text + 1, len - 2);
        json_node_unref(kept);
        kept = json_node_init_string(json_node_alloc(), inner);
      }
    }
    if (name != NULL)
      json_object_set_member(result, name, kept);
    else
      json_object_set_member(extra, mime, kept);
  }
  json_object_set_object_member(result, "extra", extra);
  json_object_set_boolean_member(result, "is_main_result", main_result);
  return result;
}

static char *
now_text(void)
{
  return cxs_time_text(g_get_real_time());
}

/* The output callback: each output as E2B's line for it. */
static void
on_output(JsonObject *output, gpointer data)
{
  execution *e = data;
  const char *type = cx__peer_get_string(output, "output_type", "");
  if (g_str_equal(type, "stream")) {
    const char *name = cx__peer_get_string(output, "name", "stdout");
    JsonObject *line = typed(g_str_equal(name, "stderr") ? "stderr" : "stdout");
    json_object_set_string_member(line, "text", cx__peer_get_string(output, "text", ""));
    g_autofree char *when = now_text();
    json_object_set_string_member(line, "timestamp", when);
    send_line(e, line);
  } else if (g_str_equal(type, "display_data") || g_str_equal(type, "execute_result")) {
    JsonObject *bundle = cx__peer_get_object(output, "data");
    if (bundle != NULL)
      send_line(e, result_of(bundle, g_str_equal(type, "execute_result")));
  } else if (g_str_equal(type, "error")) {
    JsonObject *line = typed("error");
    json_object_set_string_member(line, "name", cx__peer_get_string(output, "ename", "Error"));
    json_object_set_string_member(line, "value", cx__peer_get_string(output, "evalue", ""));
    GString *traceback = g_string_new(NULL);
    JsonArray *lines = cx__peer_get_array(output, "traceback");
    for (guint i = 0; lines != NULL && i < json_array_get_length(lines); i++) {
      JsonNode *text = json_array_get_element(lines, i);
      /* Joined as E2B's server joins them: with nothing between. */
      if (JSON_NODE_HOLDS_VALUE(text) && json_node_get_value_type(text) == G_TYPE_STRING)
        g_string_append(traceback, json_node_get_string(text));
    }
    json_object_set_string_member(line, "traceback", traceback->str);
    g_string_free(traceback, TRUE);
    send_line(e, line);
  }
  /* update_display_data, clear_output, comm messages: E2B has none. */
}

/* The context's session for a cell (opened now if it has none, outside
 * the lock: opening may take seconds, and the main loop takes the lock);
 * it stays open until context_release().  NULL with ERROR when the
 * context was removed or no session opened. */
static cx_session *
context_acquire(cxs_server *server, cxs_context *context, GError **error)
{
  g_mutex_lock(&context->lock);
  while (context->opening)
    g_cond_wait(&context->changed, &context->lock);
  if (context->session == NULL && !context->removed) {
    context->opening = TRUE;
    g_mutex_unlock(&context->lock);
    cx_session *opened = cx_session_open(server->options.backend, error);
    g_mutex_lock(&context->lock);
    context->opening = FALSE;
    g_cond_broadcast(&context->changed);
    if (context->removed) {
      g_mutex_unlock(&context->lock);
      if (opened != NULL)
        cx_session_close(opened);
      g_mutex_lock(&context->lock);
    } else {
      context->session = opened;
    }
  }
  cx_session *session = context->removed ? NULL : context->session;
  if (session != NULL)
    context->users++;
  else if (context->removed && (error == NULL || *error == NULL))
    g_set_error_literal(error, CX_ERROR, CX_ERROR_BACKEND, "the context was removed");
  g_mutex_unlock(&context->lock);
  return session;
}

static void
context_release(cxs_context *context)
{
  g_mutex_lock(&context->lock);
  if (--context->users == 0)
    g_cond_broadcast(&context->changed);
  g_mutex_unlock(&context->lock);
}

/* The execution's turn in its context (its thread runs the context's
 * cells one at a time, in the order they came); FALSE when it is to be
 * skipped instead: its client left, or the context went or restarted
 * meanwhile. */
static gboolean
take_turn(execution *e, cx_session *session)
{
  cxs_context *context = e->context;
  g_mutex_lock(&context->lock);
  gboolean go = !g_atomic_int_get(&e->cancelled) && !context->removed &&
                context->session == session;
  context->running = go ? e : NULL;
  g_mutex_unlock(&context->lock);
  return go;
}

static void
end_turn(execution *e)
{
  cxs_context *context = e->context;
  g_mutex_lock(&context->lock);
  context->running = NULL;
  g_mutex_unlock(&context->lock);
}

/* On a cell thread: E's cell, and its response's last lines. */
static void
run_execution(execution *e)
{
  cxs_context *context = e->context;
  g_atomic_int_add(&e->server->cells_waiting, -1);
  g_autoptr(GError) error = NULL;
  cx_session *session = context_acquire(e->server, context, &error);
  g_autoptr(cx_result) result = NULL;
  gboolean skipped = FALSE;
  if (session != NULL && take_turn(e, session)) {
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_output_callback(run, on_output, e);
    if (context->cwd_given)
      cx_run_options_set_cwd(run, context->cwd);
    for (guint i = 0; i < e->env->len; i++)
      cx_run_options_add_env(run, g_ptr_array_index(e->env, i));
    result = cx_session_run_cell(session, e->code, run, &error);
    end_turn(e);
  } else if (session != NULL) {
    skipped = TRUE;
    g_set_error_literal(&error, CX_ERROR, CX_ERROR_BACKEND,
                        "the context was restarted or removed before this cell's turn");
  }
  if (session != NULL)
    context_release(context);
  if (skipped && g_atomic_int_get(&e->cancelled)) {
    /* Nobody is left to read it. */
  } else if (result == NULL) {
    JsonObject *line = typed("error");
    json_object_set_string_member(line, "name", "CellexecError");
    json_object_set_string_member(line, "value", error->message);
    json_object_set_string_member(line, "traceback", "");
    send_line(e, line);
  } else {
    JsonNode *count = cx_result_get_extra(result, "execution_count");
    if (count != NULL && JSON_NODE_HOLDS_VALUE(count)) {
      JsonObject *line = typed("number_of_executions");
      json_object_set_int_member(line, "execution_count", json_node_get_int(count));
      send_line(e, line);
    }
  }
  g_mutex_lock(&context->lock);
  context->executions--;
  context->last_activity = g_get_real_time();
  g_mutex_unlock(&context->lock);
  cxs_server *server = e->server;
  send_line(e, typed("end_of_execution"));
  send_line(e, NULL); /* E is no longer this thread's to touch */
  cxs_server_worker_end(server);
}

/* The execution of CONTEXT to run after the one that just ran, or NULL:
 * CONTEXT is then no longer scheduled. */
static execution *
next_of(cxs_context *context)
{
  g_mutex_lock(&context->lock);
  execution *next = g_queue_pop_head(&context->waiting);
  if (next == NULL)
    context->scheduled = FALSE;
  g_mutex_unlock(&context->lock);
  return next;
}

/* A cell thread: the execution it was given, then those that came for
 * its context meanwhile, so that a context holds one thread at most and
 * what waits holds none. */
static void
execute_in_thread(gpointer data, gpointer pool_data)
{
  (void)pool_data;
  execution *first = data;
  cxs_context *context = context_ref(first->context);
  for (execution *e = first; e != NULL; e = next_of(context))
    run_execution(e);
  cxs_context_unref(context);
}

/* E to its context's thread, or behind the execution it runs. */
static void
schedule(cxs_server *server, execution *e)
{
  cxs_context *context = e->context;
  g_mutex_lock(&context->lock);
  gboolean queued = context->scheduled;
  if (queued)
    g_queue_push_tail(&context->waiting, e);
  context->scheduled = TRUE;
  g_mutex_unlock(&context->lock);
  if (!queued)
    g_thread_pool_push(server->cell_threads, e, NULL); /* exclusive: no thread to start */
}

/* Whether a cell for CONTEXT may wait now (--max-queue in it, --max-queued
 * in all); when not, MSG is answered 429 or 503, with Retry-After. */
static gboolean
has_queue_room(cxs_server *server, cxs_context *context, SoupServerMessage *msg)
{
  g_mutex_lock(&context->lock);
  guint waiting = g_queue_get_length(&context->waiting);
  g_mutex_unlock(&context->lock);
  guint all = (guint)g_atomic_int_get(&server->cells_waiting);
  if (waiting < server->options.max_queue && all < server->options.max_queued)
    return TRUE;
  if (waiting >= server->options.max_queue)
    cxs_reply_error(msg, CXS_STATUS_TOO_MANY_REQUESTS,
                    "context %s has %u cells waiting for its turn, its limit (--max-queue): "
                    "wait for one to end, then send again", context->id, waiting);
  else
    cxs_reply_error(msg, SOUP_STATUS_SERVICE_UNAVAILABLE,
                    "the server has %u cells waiting, its limit (--max-queued): send again "
                    "later", all);
  soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Retry-After",
                               RETRY_AFTER_SECONDS);
  return FALSE;
}

/* The fixed set of threads cells run on, made once; FALSE after
 * answering MSG 503 when the system gives no thread. */
static gboolean
have_cell_threads(cxs_server *server, SoupServerMessage *msg)
{
  if (server->cell_threads != NULL)
    return TRUE;
  g_autoptr(GError) error = NULL;
  /* Exclusive: every thread is made here, where a failure can be answered,
   * never later in g_thread_pool_push(). */
  server->cell_threads = g_thread_pool_new(execute_in_thread, NULL,
                                           (gint)server->options.cell_threads, TRUE, &error);
  if (server->cell_threads != NULL)
    return TRUE;
  cxs_log("cannot start the threads that run cells: %s", error->message);
  cxs_reply_error(msg, SOUP_STATUS_SERVICE_UNAVAILABLE,
                  "the server cannot start the threads that run cells (%s): lower "
                  "--cell-threads, or send again later", error->message);
  soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Retry-After",
                               RETRY_AFTER_SECONDS);
  return FALSE;
}

/* The timer is removed with the end (flush_on_main), so E is alive. */
static gboolean
keep_alive(gpointer data)
{
  execution *e = data;
  if (!e->gone)
    send_line(e, typed("keepalive"));
  return G_SOURCE_CONTINUE;
}

/* E's client is gone (or the server is): its cell is interrupted if it
 * runs, skipped if it waits for its turn; never another client's. */
static void
abandon(execution *e)
{
  g_mutex_lock(&e->lock);
  e->gone = TRUE;
  g_cond_broadcast(&e->written); /* a thread waiting to write goes on */
  g_mutex_unlock(&e->lock);
  if (e->done)
    return;
  g_atomic_int_set(&e->cancelled, 1);
  cxs_context *context = e->context;
  g_mutex_lock(&context->lock);
  gboolean running = context->running == e;
  if (running && context->session != NULL)
    cx_session_interrupt(context->session, NULL);
  g_mutex_unlock(&context->lock);
  cxs_log("context %s: the client left %s: %s", context->id,
          running ? "during its cell" : "before its cell's turn",
          running ? "interrupted" : "not run");
}

/* Some of the response reached the client. */
static void
on_wrote_body_data(SoupServerMessage *msg, guint size, gpointer data)
{
  (void)msg;
  execution *e = data;
  g_mutex_lock(&e->lock);
  e->unwritten -= MIN(e->unwritten, size);
  g_cond_broadcast(&e->written);
  g_mutex_unlock(&e->lock);
}

/* The response ended: sent, or the client went away before the cell
 * ended. */
static void
on_finished(SoupServerMessage *msg, gpointer data)
{
  execution *e = data;
  g_signal_handlers_disconnect_by_data(msg, e);
  g_hash_table_remove(e->server->executions, e);
  abandon(e);
  execution_unref(e); /* the reference the message's end held */
}

/* An execution of CODE with ENV (taken) in CONTEXT for MSG: its response
 * set up (JSON lines, paused until the first), and its cell on its way. */
static void
start_execution(cxs_server *server, SoupServerMessage *msg, cxs_context *context,
                const char *code, GPtrArray *env)
{
  execution *e = g_new0(execution, 1);
  e->refs = 2; /* the thread's, and on_finished's until the message goes */
  e->server = server;
  e->msg = g_object_ref(msg);
  e->context = context_ref(context);
  e->code = g_strdup(code);
  e->env = env;
  g_mutex_init(&e->lock);
  g_cond_init(&e->written);
  e->pending = g_string_new(NULL);
  e->flush = g_source_new(&flush_source_funcs, sizeof(GSource));
  g_source_set_name(e->flush, "cellexec serve: /execute lines");
  g_source_set_callback(e->flush, flush_on_main, e, NULL);
  g_source_attach(e->flush, server->context);
  g_mutex_lock(&context->lock);
  context->executions++;
  context->last_activity = g_get_real_time();
  g_mutex_unlock(&context->lock);
  g_hash_table_add(server->executions, e);
  SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
  soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
  soup_message_headers_set_content_type(headers, "application/x-ndjson", NULL);
  soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);
  soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
  g_signal_connect(msg, "finished", G_CALLBACK(on_finished), e);
  g_signal_connect(msg, "wrote-body-data", G_CALLBACK(on_wrote_body_data), e);
  soup_server_message_pause(msg);
  e->keepalive = g_timeout_add_seconds(KEEPALIVE_SECONDS, keep_alive, e);
  cxs_server_worker_begin(server);
  g_atomic_int_inc(&server->cells_waiting);
  schedule(server, e);
}

static void
execute_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
              gpointer data)
{
  (void)soup, (void)query;
  cxs_server *server = data;
  if (!g_str_equal(soup_server_message_get_method(msg), "POST")) {
    cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s: use POST", path);
    return;
  }
  g_autoptr(JsonObject) body = cxs_request_object(msg);
  if (body == NULL)
    return;
  const char *code = cx__peer_get_string(body, "code", NULL);
  const char *context_id = cx__peer_get_string(body, "context_id", NULL);
  const char *language = cx__peer_get_string(body, "language", NULL);
  if (code == NULL) {
    cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST, "the request has no \"code\" string");
    return;
  }
  if (context_id != NULL && language != NULL) {
    cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST, "give context_id or language, not both");
    return;
  }
  if (!language_ok(msg, language))
    return;
  GPtrArray *env = g_ptr_array_new_with_free_func(g_free);
  JsonObject *vars = cx__peer_get_object(body, "env_vars");
  JsonObjectIter iter;
  const char *name;
  JsonNode *value;
  if (vars != NULL) {
    json_object_iter_init(&iter, vars);
    while (json_object_iter_next(&iter, &name, &value)) {
      if (!JSON_NODE_HOLDS_VALUE(value) || json_node_get_value_type(value) != G_TYPE_STRING ||
          *name == '\0' || strchr(name, '=') != NULL) {
        g_ptr_array_unref(env);
        cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST,
                        "env_vars: \"%s\" must be a name without '=' with a string value", name);
        return;
      }
      g_ptr_array_add(env, g_strdup_printf("%s=%s", name, json_node_get_string(value)));
    }
  }
  cxs_context *context = context_id != NULL ? g_hash_table_lookup(server->contexts, context_id)
                                            : default_context(server, msg);
  if (context == NULL) {
    g_ptr_array_unref(env);
    if (context_id != NULL)
      cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "Context %s not found", context_id);
    return; /* default_context() answered */
  }
  if (!has_queue_room(server, context, msg) || !have_cell_threads(server, msg)) {
    g_ptr_array_unref(env);
    return;
  }
  start_execution(server, msg, context, code, env);
}

/* ---- /contexts and /health -------------------------------------------------------- */

typedef struct {
  cxs_server *server;
  cxs_context *context;
  SoupServerMessage *msg;     /* a restart's, answered once done */
  cxs_ending *ending;         /* a removal's (ending.c) */
  gboolean restart;           /* else: removed */
} context_job;

static gpointer
close_in_thread(gpointer data)
{
  context_job *job = data;
  cxs_context *context = job->context;
  g_mutex_lock(&context->lock);
  while (context->opening)
    g_cond_wait(&context->changed, &context->lock);
  cx_session *old = g_steal_pointer(&context->session);
  /* The cell running is interrupted; cells waiting for their turn see the
   * session gone and are skipped; the session closes once none holds it. */
  if (old != NULL)
    cx_session_interrupt(old, NULL);
  while (old != NULL && context->users > 0)
    g_cond_wait(&context->changed, &context->lock);
  g_mutex_unlock(&context->lock);
  if (old != NULL)
    cx_session_close(old);
  g_autoptr(GError) error = NULL;
  if (job->restart) {
    /* Opened again now, not at the next cell. */
    cx_session *session = context_acquire(job->server, context, &error);
    if (session != NULL)
      context_release(context);
  }
  return job;
}

static gboolean
closed_on_main(gpointer data)
{
  context_job *job = data;
  if (job->ending != NULL)
    cxs_ending_done(job->ending);
  if (job->msg != NULL && !job->server->stopping) {
    cxs_reply_json(job->msg, SOUP_STATUS_OK, json_node_init_null(json_node_alloc()));
    soup_server_message_unpause(job->msg);
  }
  g_clear_object(&job->msg);
  cxs_context_unref(job->context);
  g_free(job);
  return G_SOURCE_REMOVE;
}

static gpointer
job_thread(gpointer data)
{
  context_job *job = close_in_thread(data);
  cxs_server *server = job->server;
  cxs_server_defer(server, G_PRIORITY_DEFAULT_IDLE, closed_on_main, job);
  cxs_server_worker_end(server);
  return NULL;
}

/* Restart or remove CONTEXT on a thread, answering MSG (may be NULL) with
 * null, as E2B's server does, once done (a removal: within --stop-timeout,
 * ending.c). */
static void
run_context_job(cxs_server *server, cxs_context *context, SoupServerMessage *msg, gboolean restart)
{
  context_job *job = g_new0(context_job, 1);
  job->server = server;
  job->context = context_ref(context);
  job->restart = restart;
  if (!restart) {
    g_autofree char *what = g_strdup_printf("context %s", context->id);
    job->ending = cxs_ending_begin(server, msg, SOUP_STATUS_OK, what);
  } else if (msg != NULL) {
    job->msg = g_object_ref(msg);
    soup_server_message_set_status(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, NULL); /* replaced */
    soup_server_message_pause(msg);
  }
  cxs_server_worker_begin(server);
  if (!cxs_server_spawn("cellexec-serve-context", job_thread, job))
    job_thread(job); /* here, then: the server must not abort */
}

void
cxs_context_remove(cxs_server *server, cxs_context *context, SoupServerMessage *msg)
{
  g_mutex_lock(&context->lock);
  context->removed = TRUE;
  g_mutex_unlock(&context->lock);
  if (g_strcmp0(server->default_context, context->id) == 0)
    g_clear_pointer(&server->default_context, g_free);
  run_context_job(server, context, msg, FALSE);
  g_hash_table_remove(server->contexts, context->id);
}

static void
contexts_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
               gpointer data)
{
  (void)soup, (void)query;
  cxs_server *server = data;
  const char *method = soup_server_message_get_method(msg);
  g_auto(GStrv) parts = g_strsplit(path + strlen("/contexts"), "/", -1);
  guint n = g_strv_length(parts); /* "" | "", ID | "", ID, restart */
  if (n <= 1 || (n == 2 && *parts[1] == '\0')) {
    if (g_str_equal(method, "GET")) {
      cxs_reply_list(msg, server->contexts, listed_context, NULL);
    } else if (g_str_equal(method, "POST")) {
      g_autoptr(JsonObject) body = cxs_request_object(msg);
      if (body == NULL || !language_ok(msg, cx__peer_get_string(body, "language", NULL)))
        return;
      cxs_context *context = new_context(server, msg, cx__peer_get_string(body, "cwd", NULL));
      if (context != NULL)
        cxs_reply_json(msg, SOUP_STATUS_OK, context_model(context));
    } else {
      cxs_reply_error(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "%s %s: use GET or POST", method, path);
    }
    return;
  }
  cxs_context *context = n <= 3 ? g_hash_table_lookup(server->contexts, parts[1]) : NULL;
  if (context == NULL) {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "Context %s not found", parts[1]);
  } else if (n == 2 && g_str_equal(method, "DELETE")) {
    cxs_context_remove(server, context, msg);
  } else if (n == 3 && g_str_equal(parts[2], "restart") && g_str_equal(method, "POST")) {
    run_context_job(server, context, msg, TRUE);
  } else {
    cxs_reply_error(msg, SOUP_STATUS_NOT_FOUND, "no such route: %s %s", method, path);
  }
}

static void
health_route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
             gpointer data)
{
  (void)soup, (void)path, (void)query, (void)data;
  cxs_reply_json(msg, SOUP_STATUS_OK, json_node_init_string(json_node_alloc(), "OK"));
}

gboolean
cxs_context_is_idle(cxs_context *context, gint64 since)
{
  g_mutex_lock(&context->lock);
  gboolean idle = context->executions == 0 && context->last_activity < since;
  g_mutex_unlock(&context->lock);
  return idle;
}

const char *
cxs_context_id(cxs_context *context)
{
  return context->id;
}

void
cxs_contexts_end_all(cxs_server *server)
{
  /* The responses under way: their connections went with the server
   * (without "finished"), so their cells are abandoned here. */
  g_autoptr(GList) live = g_hash_table_get_keys(server->executions);
  for (GList *l = live; l != NULL; l = l->next) {
    execution *e = l->data;
    g_signal_handlers_disconnect_by_data(e->msg, e);
    abandon(e);
    execution_unref(e); /* on_finished's, which will not come */
  }
  g_hash_table_remove_all(server->executions);
  g_autoptr(GList) contexts = g_hash_table_get_values(server->contexts);
  for (GList *l = contexts; l != NULL; l = l->next) {
    cxs_context *context = l->data;
    g_mutex_lock(&context->lock);
    context->removed = TRUE;
    if (context->session != NULL)
      cx_session_interrupt(context->session, NULL);
    g_mutex_unlock(&context->lock);
  }
  g_hash_table_remove_all(server->contexts); /* the last reference closes each session */
}

void
cxs_e2b_add_routes(cxs_server *server)
{
  cxs_server_add_route(server, "/execute", execute_route);
  cxs_server_add_route(server, "/contexts", contexts_route);
  soup_server_add_handler(server->soup, "/health", health_route, server, NULL);
}
