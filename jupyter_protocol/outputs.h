/* jupyter_protocol: what cellexec's outputs are as Jupyter messages.
 *
 * Both sides map between the two: the jupyter backend turns a kernel's
 * IOPub messages into a result's outputs (plugins/jupyter/outputs.c, which
 * also keeps what it could not), and `cellexec kernel` sends the outputs
 * of the output callback as IOPub messages.  The shell requests that a
 * session's interpreter answers (cx_session_request) are listed here too,
 * once for the kernel that serves them and the backend that forwards them.
 *
 * Internal to cellexec (names jp_), as message.h is. */
#ifndef CX_JUPYTER_PROTOCOL_OUTPUTS_H
#define CX_JUPYTER_PROTOCOL_OUTPUTS_H

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The shell requests beside execute_request that a session's interpreter
 * answers: cx_session_request() types that are also protocol messages
 * (NULL-terminated). */
extern const char *const jp_session_requests[];

/* A copy of OBJECT's members (deep) without the member SKIP (NULL: all of
 * them); new. */
JsonObject *jp_object_copy_without(JsonObject *object, const char *skip);

/* OUTPUT (an nbformat-style output, or a comm message, as the output
 * callback gives them) as the IOPub message a kernel sends for it: its
 * content (new) and *MSG_TYPE (interned); NULL for anything else. */
JsonObject *jp_iopub_of_output(JsonObject *output, const char **msg_type);

G_END_DECLS

#endif /* CX_JUPYTER_PROTOCOL_OUTPUTS_H */
