/* server: a kernel or context between its DELETE and the end of its
 * session (server-private.h).  Its slot stays taken until the session is
 * gone: a cell that ignores its interrupt must not let a client run more
 * sessions than --max-sessions by deleting them.  Its DELETE is answered
 * when the session is gone or after --stop-timeout, whichever comes
 * first, never not at all. */
#include "config.h"

#include "server/server-private.h"

struct cxs_ending {
  cxs_server *server;
  SoupServerMessage *msg;     /* the DELETE, until answered */
  guint ok_status;
  char *what;
  guint timer;
};

static void
answer(cxs_ending *ending, guint status, const char *message)
{
  if (ending->msg == NULL)
    return;
  if (!ending->server->stopping) {
    if (message != NULL)
      cxs_reply_error(ending->msg, status, "%s", message);
    else if (status == SOUP_STATUS_NO_CONTENT)
      cxs_reply_json(ending->msg, status, NULL);
    else
      cxs_reply_json(ending->msg, status, json_node_init_null(json_node_alloc()));
    soup_server_message_unpause(ending->msg);
  }
  g_clear_object(&ending->msg);
}

static gboolean
stop_timeout_passed(gpointer data)
{
  cxs_ending *ending = data;
  ending->timer = 0;
  g_autofree char *message = g_strdup_printf(
    "%s is deleted, but its cell has not stopped within --stop-timeout (%u s) of its "
    "interrupt: it keeps its place under --max-sessions until it does", ending->what,
    ending->server->options.stop_timeout);
  cxs_log("%s", message);
  answer(ending, SOUP_STATUS_ACCEPTED, message);
  return G_SOURCE_REMOVE;
}

cxs_ending *
cxs_ending_begin(cxs_server *server, SoupServerMessage *msg, guint ok_status, const char *what)
{
  cxs_ending *ending = g_new0(cxs_ending, 1);
  ending->server = server;
  ending->ok_status = ok_status;
  ending->what = g_strdup(what);
  server->ending++;
  if (msg != NULL) {
    ending->msg = g_object_ref(msg);
    soup_server_message_set_status(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, NULL); /* replaced */
    soup_server_message_pause(msg);
    ending->timer = g_timeout_add_seconds(server->options.stop_timeout, stop_timeout_passed,
                                          ending);
  }
  return ending;
}

void
cxs_ending_done(cxs_ending *ending)
{
  ending->server->ending--;
  if (ending->timer != 0)
    g_source_remove(ending->timer);
  answer(ending, ending->ok_status, NULL);
  g_free(ending->what);
  g_free(ending);
}

static gboolean
done_on_main(gpointer data)
{
  cxs_ending_done(data);
  return G_SOURCE_REMOVE;
}

void
cxs_ending_done_later(cxs_ending *ending)
{
  cxs_server_defer(ending->server, G_PRIORITY_DEFAULT_IDLE, done_on_main, ending);
}
