/* server: `cellexec serve`, the backends as an HTTP service (libsoup 3).
 *
 * Jupyter Server's kernels API, as Kernel Gateway's jupyter-websocket mode
 * serves it: REST for kernelspecs, kernels and sessions, and each
 * kernel's channels as Jupyter messages on a WebSocket.  Every kernel is a
 * cellexec session answered by the same request handling as `cellexec
 * kernel` (kernel/kernel.h); only the transport differs.
 *
 * One main loop serves every route; cells run on the kernels' own
 * threads, and starting, restarting or ending a kernel runs on a worker
 * thread, so no route waits for another.
 *
 * Internal to cellexec (names cxs_). */
#ifndef CX_SERVER_SERVER_H
#define CX_SERVER_SERVER_H

#include <cellexec/cellexec.h>

G_BEGIN_DECLS

typedef struct {
  cx_backend *backend;      /* every kernel's (borrowed: it outlives the server) */
  const char *backend_name; /* for the kernelspec's display name */
  const char *token;        /* what clients must present; NULL: none */
  guint max_sessions;       /* kernels at once; 0: no limit */
  guint idle_timeout;       /* seconds after which an idle kernel with no
                             * connection is ended; 0: never */
  gsize max_body;           /* the largest request body taken, in bytes */
  guint max_queue;          /* requests waiting per context or kernel (0: the default) */
  guint max_queued;         /* /execute requests waiting in all (0: the default) */
  guint cell_threads;       /* threads running E2B cells at once (0: the default) */
  guint stop_timeout;       /* seconds a DELETE waits for a session to end before
                             * answering 202 (0: the default) */
  guint max_connections;    /* open at once (server/accept.h); at least 1 */
  guint header_timeout;     /* seconds a connection has for a request's
                             * headers (server/accept.h); 0: no limit */
} cxs_options;

/* The defaults of the bounds above. */
#define CXS_DEFAULT_MAX_QUEUE 100
#define CXS_DEFAULT_MAX_QUEUED 1000
#define CXS_DEFAULT_CELL_THREADS 16
#define CXS_DEFAULT_STOP_TIMEOUT 10

typedef struct cxs_server cxs_server;

/* One line of the server's log, "cellexec serve: " and printf's FORMAT, on
 * the standard error the process had when the first server was made: a
 * local backend's cell captures the process's own file descriptor 2 while
 * it runs, and must not get another client's log lines. */
void cxs_log(const char *format, ...) G_GNUC_PRINTF(1, 2);

/* --max-connections by default: half the soft limit on open descriptors
 * (RLIMIT_NOFILE; 1024 when there is none), the rest for kernels, their
 * workers and the server itself (server/accept.c). */
guint cxs_server_default_max_connections(void);

/* A server with OPTIONS (copied), serving nothing until it listens. */
cxs_server *cxs_server_new(const cxs_options *options);
/* Listen on HOST (a numeric address, or "localhost") and PORT (0: any
 * free one); FALSE with ERROR (one line). */
gboolean cxs_server_listen(cxs_server *server, const char *host, guint port, GError **error);
/* The URIs listened on, "http://HOST:PORT/" (new). */
char **cxs_server_get_uris(cxs_server *server);
/* Stop listening, end every kernel (their sessions and workers) and free
 * SERVER.  Waits for the kernels' threads. */
void cxs_server_free(cxs_server *server);

G_END_DECLS

#endif /* CX_SERVER_SERVER_H */
