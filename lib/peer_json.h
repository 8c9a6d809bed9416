/* lib/peer_json.h: reading members of JSON that came from a peer which
 * runs untrusted code (a worker process, a kernel), and the one encoding
 * of the replies the backends exchange with such peers.  Internal: in the
 * convenience library libcxoutput.la, as lib/output_limit.h is.
 *
 * json-glib's own getters log a CRITICAL for a member of the wrong kind
 * and turn a fraction into an integer; these read such a member as
 * missing instead, so a forged message can neither warn nor change a
 * value on its way in.
 */
#ifndef CX__PEER_JSON_H
#define CX__PEER_JSON_H

#include <cellexec/executor.h>
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

/* Replies to calls made to a peer, or by it: an executor operation's
 * (the subprocess worker's EXECUTOR_REPLY) and a host function's (its
 * HOST_RETURN, the jupyter kernel's input_reply).
 *
 * cx__peer_reply_new(): {"value": VALUE} (consumed; NULL: null) when
 * ERROR is NULL; else {"python_error": {"type", "message", "traceback",
 * "line"}} for a Python exception when PYTHON_DETAILS, or {"error":
 * message}.  cx__peer_reply_check(): FALSE with ERROR set when REPLY holds
 * a failure: a Python exception as CX_ERROR_PYTHON; an "error" as
 * CX_ERROR_BACKEND prefixed with "WHO: ", or with WHO NULL as it came
 * (CX_ERROR_FAILED).  cx__peer_reply_value(): the value of a successful
 * REPLY, a new node (null when it has none). */
JsonObject *cx__peer_reply_new(JsonNode *value, const GError *error, gboolean python_details);
gboolean cx__peer_reply_check(JsonObject *reply, const char *who, GError **error);
JsonNode *cx__peer_reply_value(JsonObject *reply);

G_END_DECLS

#endif
