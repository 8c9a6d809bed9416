/* plugins/subprocess/executor_host.h: the executor operations of the
 * subprocess backend, host side.  Environments live in the session's
 * process (worker/executor_worker.c); see "Executor operations" in
 * docs/worker-protocol.md. */
#ifndef CX__SP_EXECUTOR_HOST_H
#define CX__SP_EXECUTOR_HOST_H

#include <cellexec/plugin.h>

G_BEGIN_DECLS

/* Its cx_session_instance is a subprocess_session (session.h). */
extern const cx_executor_vtable cx__sp_executor_vtable;

G_END_DECLS

#endif /* CX__SP_EXECUTOR_HOST_H */
