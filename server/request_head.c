/* server: the request-head checks of the server's own (request_head.h). */
#include "config.h"

#include <string.h>

#include <gio/gio.h>

#include "server/request_head.h"

/* The longest port, and the most digits a Content-Length may have: 18
 * digits fit in a gint64 whatever they are, and no body is larger. */
#define PORT_DIGITS 5
#define LENGTH_DIGITS 18

static gboolean
all_of(const char *text, gsize len, const char *allowed)
{
  for (gsize i = 0; i < len; i++)
    if (text[i] == '\0' || strchr(allowed, text[i]) == NULL)
      return FALSE;
  return TRUE;
}

/* PORT (up to the string's end) is 1 to 5 digits, at most 65535. */
static gboolean
port_is_valid(const char *port)
{
  gsize len = strlen(port);
  if (len == 0 || len > PORT_DIGITS || !all_of(port, len, "0123456789"))
    return FALSE;
  return g_ascii_strtoull(port, NULL, 10) <= 65535;
}

/* NAME (LEN bytes, without brackets) is localhost or a loopback address
 * of FAMILY's syntax: IPv4 when not BRACKETED, IPv6 when. */
static gboolean
name_is_loopback(const char *name, gsize len, gboolean bracketed)
{
  if (len == 0)
    return FALSE;
  if (!bracketed && len == strlen("localhost") && g_ascii_strncasecmp(name, "localhost", len) == 0)
    return TRUE;
  /* Digits and dots, or hex and colons: no scope (%), no name GLib would
   * resolve, nothing inet_pton might take leniently. */
  if (!all_of(name, len, bracketed ? "0123456789abcdefABCDEF:." : "0123456789."))
    return FALSE;
  g_autofree char *text = g_strndup(name, len);
  g_autoptr(GInetAddress) address = g_inet_address_new_from_string(text);
  if (address == NULL)
    return FALSE;
  GSocketFamily family = g_inet_address_get_family(address);
  return family == (bracketed ? G_SOCKET_FAMILY_IPV6 : G_SOCKET_FAMILY_IPV4) &&
         g_inet_address_get_is_loopback(address);
}

gboolean
cxs_host_is_loopback(const char *host)
{
  if (host == NULL)
    return FALSE;
  const char *name = host, *end;
  gboolean bracketed = host[0] == '[';
  if (bracketed) {
    name = host + 1;
    const char *close = strchr(name, ']');
    if (close == NULL)
      return FALSE;
    end = close;
    host = close + 1;
  } else {
    end = host + strcspn(host, ":");
    host = end;
  }
  if (*host != '\0' && (*host != ':' || !port_is_valid(host + 1)))
    return FALSE;
  return name_is_loopback(name, (gsize)(end - name), bracketed);
}

gboolean
cxs_origin_is_loopback(const char *origin)
{
  if (origin == NULL)
    return FALSE;
  for (const char *const *scheme = (const char *const[]){ "http://", "https://", NULL };
       *scheme != NULL; scheme++)
    if (g_ascii_strncasecmp(origin, *scheme, strlen(*scheme)) == 0)
      return cxs_host_is_loopback(origin + strlen(*scheme));
  return FALSE;
}

gboolean
cxs_content_length_parse(const char *value, guint64 *length)
{
  gsize len = value != NULL ? strlen(value) : 0;
  if (len == 0 || len > LENGTH_DIGITS || !all_of(value, len, "0123456789"))
    return FALSE;
  *length = g_ascii_strtoull(value, NULL, 10);
  return TRUE;
}

char *
cxs_authorization_token(const char *value)
{
  if (value == NULL)
    return NULL;
  for (const char *const *scheme = (const char *const[]){ "token ", "Bearer ", NULL };
       *scheme != NULL; scheme++)
    if (g_ascii_strncasecmp(value, *scheme, strlen(*scheme)) == 0)
      return g_strstrip(g_strdup(value + strlen(*scheme)));
  return NULL;
}

char *
cxs_query_token(const char *query)
{
  if (query == NULL)
    return NULL;
  g_autoptr(GHashTable) fields = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL);
  const char *token = fields != NULL ? g_hash_table_lookup(fields, "token") : NULL;
  return g_strdup(token);
}
