/* server: what its parts share (server.h).  Internal. */
#ifndef CX_SERVER_PRIVATE_H
#define CX_SERVER_PRIVATE_H

#include <libsoup/soup.h>

#include "kernel/kernel.h"
#include "server/accept.h"
#include "server/server.h"

G_BEGIN_DECLS

typedef struct served_kernel served_kernel;
typedef struct cxs_context cxs_context;

struct cxs_server {
  SoupServer *soup;
  cxs_acceptor *acceptor;     /* every connection, counted and timed (accept.h) */
  cxs_options options;
  char *token;
  GMainContext *context;      /* the main loop's: libsoup's objects live there */
  GHashTable *kernels;        /* id -> served_kernel (a reference) */
  GHashTable *sessions;       /* id -> JsonObject: a session's model, "kernel" left out */
  GHashTable *contexts;       /* id -> cxs_context (a reference): E2B's contexts */
  char *default_context;      /* the id of E2B's default context, once made */
  GThreadPool *cell_threads;  /* where E2B's cells run (e2b.c): a fixed set */
  gint cells_waiting;         /* atomic: /execute requests accepted, their cell not begun */
  guint ending;               /* kernels and contexts deleted whose session is not
                               * gone yet: they hold their slot (main loop) */
  GHashTable *executions;     /* E2B executions whose response is under way */
  guint cull_source;
  GMutex workers_lock;
  GCond workers_done;
  guint workers;              /* threads of the server's own still running */
  guint starting;             /* kernels (re)starting on worker threads */
  gboolean stopping;          /* cxs_server_free() began: requests are gone */
};

/* A thread of the server's own begins / ends: cxs_server_free() waits for
 * them all.  Any thread. */
void cxs_server_worker_begin(cxs_server *server);
void cxs_server_worker_end(cxs_server *server);
/* Run FUNC(DATA) on SERVER's main loop, later, at PRIORITY (messages at
 * G_PRIORITY_DEFAULT, so they keep their order and go before what waits
 * at G_PRIORITY_DEFAULT_IDLE), even when called from it: the caller may
 * hold a lock FUNC takes.  Any thread. */
void cxs_server_defer(cxs_server *server, gint priority, GSourceFunc func, gpointer data);
/* Whether another kernel or context may start (--max-sessions); when not,
 * MSG is answered 503 saying so. */
gboolean cxs_server_has_room(cxs_server *server, SoupServerMessage *msg);
/* FUNC(DATA) on a thread of its own; FALSE, said in the log and nothing
 * started, when the system has no thread to give (g_thread_new would
 * abort the server). */
gboolean cxs_server_spawn(const char *name, GThreadFunc func, gpointer data);

/* ---- Ending a kernel or context (ending.c) -------------------------------- */

/* A kernel or context leaving the server, from its DELETE until its
 * session is gone: it holds its --max-sessions slot until then, and MSG
 * (may be NULL; paused here) is answered OK_STATUS once it is gone, or 202
 * after --stop-timeout saying the cell did not stop. WHAT names it for
 * that answer ("context ID"). */
typedef struct cxs_ending cxs_ending;
cxs_ending *cxs_ending_begin(cxs_server *server, SoupServerMessage *msg, guint ok_status,
                             const char *what);
/* Main loop: the session is gone; frees ENDING. */
void cxs_ending_done(cxs_ending *ending);
/* Any thread: cxs_ending_done() on the main loop, later. */
void cxs_ending_done_later(cxs_ending *ending);

/* ---- Replies (http.c) --------------------------------------------------- */

/* Answer MSG with STATUS and the JSON NODE (taken; NULL: no body). */
void cxs_reply_json(SoupServerMessage *msg, guint status, JsonNode *node);
#define CXS_STATUS_TOO_MANY_REQUESTS 429
/* Answer MSG with STATUS and {"message": ..., "reason": reason phrase}, as
 * Jupyter Server's errors are. */
void cxs_reply_error(SoupServerMessage *msg, guint status, const char *format, ...)
  G_GNUC_PRINTF(3, 4);
/* Answer MSG with 200 and the array of MODEL(value, DATA) of each value
 * of TABLE, as Jupyter Server lists kernels and sessions. */
void cxs_reply_list(SoupServerMessage *msg, GHashTable *table,
                    JsonNode *(*model)(gpointer value, gpointer data), gpointer data);
/* ---- Request bodies (request_body.c) ------------------------------------- */

/* The most JSON values a request body or a front end's WebSocket message
 * holds: ten thousand times what the Jupyter and E2B clients send (a
 * kernel's name, a cell's code and a few environment variables), and at
 * most 30 MB of json-glib's memory; more than CX_JSON_MAX_DEPTH, so that
 * nesting too deep is told as such. */
#define CXS_REQUEST_MAX_VALUES 100000

/* MSG's request body as a JSON object (new; an empty body: {}), or NULL
 * after answering 400, or 413 when it holds more values than a request
 * body may (request_body.c).  Read in advance, on a worker thread, for a
 * large body of a route added with cxs_server_add_route(). */
JsonObject *cxs_request_object(SoupServerMessage *msg);
/* soup_server_add_handler(PATH, HANDLER, SERVER) for a route that reads
 * its body (cxs_request_object): a large one is read on a worker thread
 * first, its message paused, so that no other client waits for it. */
void cxs_server_add_route(cxs_server *server, const char *path, SoupServerCallback handler);
/* NOW as Jupyter Server writes times: ISO 8601, UTC, with microseconds. */
char *cxs_time_text(gint64 real_time);

/* ---- Kernels (kernels.c) ------------------------------------------------ */

/* The REST routes: /api, /api/kernelspecs, /api/kernels, /api/sessions. */
void cxs_kernels_add_routes(cxs_server *server);
/* The kernel ID, or NULL (borrowed). */
served_kernel *cxs_kernel_lookup(cxs_server *server, const char *id);
/* Note activity on KERNEL now (for the idle timeout and its model). */
void cxs_kernel_touch(served_kernel *kernel);
/* End every kernel (cxs_server_free). */
void cxs_kernels_end_all(cxs_server *server);

/* ---- E2B's code-interpreter API (e2b.c) ---------------------------------- */

/* The routes /execute, /contexts and /health. */
void cxs_e2b_add_routes(cxs_server *server);
void cxs_context_unref(cxs_context *context);
const char *cxs_context_id(cxs_context *context);
/* Whether CONTEXT runs nothing and did nothing since SINCE (real time). */
gboolean cxs_context_is_idle(cxs_context *context, gint64 since);
/* CONTEXT leaves the server: its session is ended on a thread, and MSG
 * (may be NULL) answered once it has. */
void cxs_context_remove(cxs_server *server, cxs_context *context, SoupServerMessage *msg);
/* Interrupt every context's cell and drop them (cxs_server_free). */
void cxs_contexts_end_all(cxs_server *server);

/* ---- WebSockets (websocket.c) -------------------------------------------- */

typedef void (*cxs_websocket_opened)(SoupServerMessage *msg, const char *path,
                                     SoupWebsocketConnection *ws, gpointer data);
/* On a route: answer MSG's WebSocket handshake for PROTOCOLS (NULL: no
 * subprotocol; no extension either) and call OPENED once the 101 is
 * written, with a connection that drops a client whose message passes
 * MAX_MESSAGE bytes in all its frames.  FALSE, MSG answered 400, if MSG
 * is no handshake. */
gboolean cxs_websocket_accept(SoupServerMessage *msg, char **protocols, guint64 max_message,
                              cxs_websocket_opened opened, gpointer data);
/* soup_websocket_connection_send_message(), counted for the backlog. */
void cxs_websocket_send(SoupWebsocketConnection *ws, SoupWebsocketDataType type,
                        GBytes *message);
/* Bytes sent on WS (cxs_websocket_send) that have not left for its socket:
 * what a client that does not read leaves in the server. */
guint64 cxs_websocket_backlog(SoupWebsocketConnection *ws);

/* ---- Channels (channels.c) ---------------------------------------------- */

/* GET /api/kernels/ID/channels: the WebSocket of KERNEL's channels. */
void cxs_channels_accept(cxs_server *server, SoupServerMessage *msg);
/* A sink (kernel.h) that sends KERNEL's messages to its WebSockets. */
cxk_sink cxs_channels_sink(served_kernel *kernel);
/* What channels.c keeps per kernel: its open WebSockets. */
typedef struct cxs_connections cxs_connections;
cxs_connections *cxs_connections_new(void);
/* Close every WebSocket (the kernel ended) and free. */
void cxs_connections_free(cxs_connections *connections);
guint cxs_connections_count(cxs_connections *connections);

/* ---- A served kernel (kernels.c) ---------------------------------------- */

struct served_kernel {
  gint refs;
  cxs_server *server;
  char *id;
  char *name;                 /* its kernelspec's */
  GMutex lock;                /* kernel and pending */
  cxk_kernel *kernel;         /* NULL while (re)starting */
  GQueue pending;             /* jp_message: come while it was NULL, for it */
  GMutex state_lock;          /* execution_state and last_activity: the kernel's
                               * own threads set them, under lock or not */
  const char *execution_state;/* "starting", "idle", "busy", "restarting", "dead" */
  gint64 last_activity;       /* g_get_real_time() */
  cxs_connections *connections; /* main thread only */
  gboolean ended;             /* deleted: nothing more is sent (set under LOCK) */
  gboolean starting;          /* main thread: a start or restart is on its way */
  gpointer end_after_start;   /* main thread: its end, deleted while starting: it
                               * begins once the start is over (kernels.c) */
};

served_kernel *cxs_kernel_ref(served_kernel *kernel);
void cxs_kernel_unref(served_kernel *kernel);
/* KERNEL's execution state, as its IOPub statuses said (any thread). */
void cxs_kernel_set_state(served_kernel *kernel, const char *state);
/* Hand REQUEST (taken), which came on CHANNEL, to KERNEL's cxk_kernel, or
 * keep it for the session while one is starting. */
void cxs_kernel_deliver(served_kernel *kernel, int channel, jp_message *request);
/* A shutdown_request came over a WebSocket: restart KERNEL, or end it. */
void cxs_kernel_shutdown_requested(served_kernel *kernel, gboolean restart);

G_END_DECLS

#endif /* CX_SERVER_PRIVATE_H */
