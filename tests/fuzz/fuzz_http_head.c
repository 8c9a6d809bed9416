/* tests/fuzz/fuzz_http_head.c: libFuzzer target for the checks `cellexec
 * serve` makes of a request's head itself (server/request_head.c): the
 * Host and Origin that decide whether a request without a token is this
 * machine's, a Content-Length, a token in Authorization or the query.
 * libsoup's own parser is not ours to fuzz.  The input is one header value;
 * what each check accepts is held to what it promises. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "server/request_head.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* A loopback Host has no userinfo, path, query, space or control byte,
 * and no colon after its host but the one before the port. */
static void
check_host(const char *host)
{
  if (!cxs_host_is_loopback(host))
    return;
  if (strpbrk(host, "@/?# \t\r\n%") != NULL)
    abort();
  const char *after = host[0] == '[' ? strchr(host, ']') : host;
  if (after == NULL || strchr(after, ':') != strrchr(after, ':'))
    abort();
}

static void
check_origin(const char *origin)
{
  if (!cxs_origin_is_loopback(origin))
    return;
  const char *host = strstr(origin, "://");
  if (host == NULL || !cxs_host_is_loopback(host + 3))
    abort();
}

/* A Content-Length taken is digits only, and its number is theirs. */
static void
check_length(const char *value)
{
  guint64 length;
  if (!cxs_content_length_parse(value, &length))
    return;
  if (*value == '\0' || strspn(value, "0123456789") != strlen(value) ||
      g_ascii_strtoull(value, NULL, 10) != length || length > G_MAXINT64)
    abort();
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  check_host(text);
  check_origin(text);
  check_length(text);
  g_free(cxs_authorization_token(text));
  g_free(cxs_query_token(text));
  return 0;
}
