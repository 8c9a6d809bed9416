/* server: the checks of a request's head that are the server's own, not
 * libsoup's: what a Host or Origin names, a Content-Length, a token in an
 * Authorization header or a query.  Plain GLib and strings, so that a
 * fuzz target (tests/fuzz/fuzz_http_head.c) drives them as they are.
 * Internal (names cxs_). */
#ifndef CX_SERVER_REQUEST_HEAD_H
#define CX_SERVER_REQUEST_HEAD_H

#include <glib.h>

G_BEGIN_DECLS

/* HOST, a Host header's value, names this machine's loopback: localhost,
 * 127.0.0.0/8 or [::1] (IPv6 in brackets), then nothing or ":" and a port
 * of digits.  Anything else (userinfo, a path, a second colon, spaces) is
 * not loopback. */
gboolean cxs_host_is_loopback(const char *host);
/* ORIGIN, an Origin header's value, is "http://" or "https://" and a
 * loopback host as above, nothing after; "null" and the rest are not. */
gboolean cxs_origin_is_loopback(const char *origin);
/* VALUE, one Content-Length, is 1 to 18 ASCII digits (no sign, no space,
 * no list): its number in *LENGTH.  FALSE for anything else. */
gboolean cxs_content_length_parse(const char *value, guint64 *length);
/* The token an Authorization header's VALUE carries ("token T" or
 * "Bearer T", the scheme in any case; new), or NULL. */
char *cxs_authorization_token(const char *value);
/* The value of token=... in the query QUERY (the last, when several;
 * new), or NULL. */
char *cxs_query_token(const char *query);

G_END_DECLS

#endif /* CX_SERVER_REQUEST_HEAD_H */
