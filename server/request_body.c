/* server: request bodies read as JSON (server-private.h), on a thread of
 * their own when they are large.
 *
 * json-glib builds up to 300 bytes of memory per value, while the text
 * takes 2 or 3: 60 MB of "[]," took the server to 2.4 GB (it aborted
 * under a 2 GB cap) and held its main loop, every other client with it,
 * for 8 s.  A body is read with at most CXS_REQUEST_MAX_VALUES values,
 * refused (413) before json-glib builds anything, so what it costs is
 * bounded by its bytes: less than five times --max-body.  A body longer than
 * INLINE_BODY_MAX is read on a worker thread while its message waits
 * (paused), and its route runs once it has been read, with the result
 * ready for cxs_request_object; shorter ones, all that a client
 * ordinarily sends, are read where the route asks for them. */
#include "config.h"

#include "server/server-private.h"


/* Bodies up to this size are read on the main loop: microseconds. */
#define INLINE_BODY_MAX (64 * 1024)

/* The key of a message's body read in advance (a parsed_body). */
#define PARSED_BODY_KEY "cellexec-parsed-body"

typedef struct {
  JsonNode *node;  /* NULL: ERROR says why */
  GError *error;
} parsed_body;

static void
parsed_body_free(parsed_body *body)
{
  g_clear_pointer(&body->node, json_node_unref);
  g_clear_error(&body->error);
  g_free(body);
}

static parsed_body *
parse_body(const char *data, gsize len)
{
  parsed_body *body = g_new0(parsed_body, 1);
  /* A \u0000 read as CX_RESULT_NUL, not U+FFFD: code holding one fails as
   * Python fails it, and no other string is silently changed. */
  body->node = cx_json_from_string_bounded(data, (gssize)len, CXS_REQUEST_MAX_VALUES,
                                           CX_JSON_READ_KEEP_NUL, &body->error);
  return body;
}

JsonObject *
cxs_request_object(SoupServerMessage *msg)
{
  SoupMessageBody *request = soup_server_message_get_request_body(msg);
  if (request->length == 0)
    return json_object_new();
  parsed_body *body = g_object_steal_data(G_OBJECT(msg), PARSED_BODY_KEY);
  if (body == NULL)
    body = parse_body(request->data, (gsize)request->length);
  JsonObject *object = NULL;
  if (g_error_matches(body->error, CX_ERROR, CX_ERROR_TOO_LARGE))
    cxs_reply_error(msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                    "the request body is too large to read: %s", body->error->message);
  else if (body->node == NULL || !JSON_NODE_HOLDS_OBJECT(body->node))
    cxs_reply_error(msg, SOUP_STATUS_BAD_REQUEST, "the request body is not a JSON object%s%s",
                    body->error != NULL ? ": " : "",
                    body->error != NULL ? body->error->message : "");
  else
    object = json_object_ref(json_node_get_object(body->node));
  parsed_body_free(body);
  return object;
}

/* ---- Routes whose bodies are read first ------------------------------------------ */

typedef struct {
  cxs_server *server;
  SoupServerCallback handler;
} body_route;

/* A request whose body is read on a worker thread: its route runs once
 * it has been. */
typedef struct {
  const body_route *route;
  SoupServerMessage *msg;
  char *path;
  GHashTable *query;
  GBytes *body;
} body_job;

static void
body_job_free(body_job *job)
{
  g_object_unref(job->msg);
  g_free(job->path);
  g_clear_pointer(&job->query, g_hash_table_unref);
  g_bytes_unref(job->body);
  g_free(job);
}

static void
parse_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  (void)source, (void)cancellable;
  body_job *job = data;
  gsize len;
  const char *text = g_bytes_get_data(job->body, &len);
  parsed_body *body = parse_body(text, len);
  /* Freed here what the route will not take. */
  if (body->node != NULL && !JSON_NODE_HOLDS_OBJECT(body->node))
    g_clear_pointer(&body->node, json_node_unref);
  g_task_return_pointer(task, body, (GDestroyNotify)parsed_body_free);
  cxs_server_worker_end(job->route->server);
}

/* Back on the main loop: the route, with the body read. */
static void
parsed(GObject *source, GAsyncResult *result, gpointer data)
{
  (void)source, (void)data;
  body_job *job = g_task_get_task_data(G_TASK(result));
  parsed_body *body = g_task_propagate_pointer(G_TASK(result), NULL);
  cxs_server *server = job->route->server;
  if (server->stopping) {
    parsed_body_free(body); /* its connection is gone */
    return;
  }
  g_object_set_data_full(G_OBJECT(job->msg), PARSED_BODY_KEY, body,
                         (GDestroyNotify)parsed_body_free);
  /* Before the route runs: a route that waits in turn pauses it again. */
  soup_server_message_unpause(job->msg);
  job->route->handler(server->soup, job->msg, job->path, job->query, server);
}

static void
dispatch(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
         gpointer data)
{
  const body_route *route = data;
  SoupMessageBody *request = soup_server_message_get_request_body(msg);
  if (request->length <= INLINE_BODY_MAX) {
    route->handler(soup, msg, path, query, route->server);
    return;
  }
  body_job *job = g_new0(body_job, 1);
  job->route = route;
  job->msg = g_object_ref(msg);
  job->path = g_strdup(path);
  job->query = query != NULL ? g_hash_table_ref(query) : NULL;
  job->body = soup_message_body_flatten(request);
  soup_server_message_pause(msg);
  cxs_server_worker_begin(route->server);
  g_autoptr(GTask) task = g_task_new(NULL, NULL, parsed, NULL);
  g_task_set_task_data(task, job, (GDestroyNotify)body_job_free);
  g_task_run_in_thread(task, parse_in_thread);
}

void
cxs_server_add_route(cxs_server *server, const char *path, SoupServerCallback handler)
{
  body_route *route = g_new(body_route, 1);
  route->server = server;
  route->handler = handler;
  soup_server_add_handler(server->soup, path, dispatch, route, g_free);
}
