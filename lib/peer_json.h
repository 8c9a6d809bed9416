/* lib/peer_json.h: reading members of JSON that came from a peer which
 * runs untrusted code (a worker process, a kernel).  Internal: in the
 * convenience library libcxoutput.la, as lib/output_limit.h is.
 *
 * json-glib's own getters log a CRITICAL for a member of the wrong kind
 * and turn a fraction into an integer; these read such a member as
 * missing instead, so a forged message can neither warn nor change a
 * value on its way in.
 */
#ifndef CX__PEER_JSON_H
#define CX__PEER_JSON_H

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Member KEY of OBJECT (which may be NULL) when it is an array / an object
 * (borrowed), else NULL. */
JsonArray *cx__peer_get_array(JsonObject *object, const char *key);
JsonObject *cx__peer_get_object(JsonObject *object, const char *key);
/* Member KEY of OBJECT when it is a string / an integer (a fraction is not
 * one) / a boolean, else FALLBACK. */
const char *cx__peer_get_string(JsonObject *object, const char *key, const char *fallback);
gint64 cx__peer_get_int(JsonObject *object, const char *key, gint64 fallback);
gboolean cx__peer_get_boolean(JsonObject *object, const char *key, gboolean fallback);

G_END_DECLS

#endif
