/* server: the connections a server accepts, counted and timed, handed to
 * libsoup (soup_server_accept_iostream).
 *
 * libsoup 3.2's own listener keeps every connection as long as its client
 * likes, with no bound on how many, and stops accepting for good the first
 * time accept(2) fails (EMFILE at the descriptor limit): a few hundred
 * clients that never finish their headers, token or not, would take the
 * server down for good.  Here:
 *
 *   - at most MAX_CONNECTIONS are open at once (--max-connections); past
 *     it a new connection is answered 503 with Retry-After and closed, and
 *     the log says so once per burst;
 *   - a connection whose request headers have not all come HEADER_TIMEOUT
 *     seconds after it opened, or after its previous answer, is closed
 *     (--header-timeout; an idle kept-alive connection as well);
 *   - when accept(2) fails (no descriptor left), accepting pauses until a
 *     connection closes, or RETRY_MS, and goes on: it neither spins nor
 *     stops.
 *
 * Main loop only, but for the end of a connection, which may come on any
 * thread (the last message holding it freed on a cell's) and is handed to
 * the loop.  Internal (names cxs_). */
#ifndef CX_SERVER_ACCEPT_H
#define CX_SERVER_ACCEPT_H

#include <libsoup/soup.h>

G_BEGIN_DECLS

typedef struct cxs_acceptor cxs_acceptor;

/* An acceptor for SOUP (borrowed: it outlives the acceptor) on CONTEXT's
 * loop, with the bounds above (HEADER_TIMEOUT 0: none). */
cxs_acceptor *cxs_acceptor_new(SoupServer *soup, GMainContext *context, guint max_connections,
                               guint header_timeout);
/* Accept on SOCKET (bound and listening; referenced). */
void cxs_acceptor_listen(cxs_acceptor *acceptor, GSocket *socket);
/* "http://HOST:PORT/" of each socket listened on (new). */
char **cxs_acceptor_get_uris(cxs_acceptor *acceptor);
/* Answer MSG, whose headers are in, with STATUS and MESSAGE (as the
 * routes' errors) on its connection and close it, not reading its body:
 * for a request whose body's end is unclear, so that nothing after its
 * headers is read as anything. */
void cxs_connection_refuse(SoupServerMessage *msg, guint status, const char *message);
/* Stop listening; the open connections stay libsoup's
 * (soup_server_disconnect() closes them). */
void cxs_acceptor_stop(cxs_acceptor *acceptor);
/* Forget the connections and free ACCEPTOR: once SOUP is gone, no thread
 * but the caller's is left, and the loop has run what they handed it
 * (cxs_server_free()). */
void cxs_acceptor_free(cxs_acceptor *acceptor);

G_END_DECLS

#endif /* CX_SERVER_ACCEPT_H */
