/* plugins/subprocess/executor_host.h: the executor operations of the
 * subprocess backend, host side, and the Jupyter requests beside execute
 * (session_request), which travel the same way.  Environments live in the session's
 * process (worker/executor_worker.c); see "Executor operations" in
 * docs/worker-protocol.md. */
#ifndef CX__SP_EXECUTOR_HOST_H
#define CX__SP_EXECUTOR_HOST_H

#include <cellexec/plugin.h>

G_BEGIN_DECLS

/* Its cx_session_instance is a subprocess_session (session.h). */
extern const cx_executor_vtable cx__sp_executor_vtable;

/* The backend vtable's session_request: a Jupyter request (complete,
 * inspect, is_complete, history) answered in the session's process, on
 * the channel the executor operations use. */
JsonObject *cx__sp_session_request(cx_session_instance *session, const char *type,
                                   JsonObject *content, GError **error);

G_END_DECLS

#endif /* CX__SP_EXECUTOR_HOST_H */
