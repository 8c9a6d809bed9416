/* Which optional methods a plugin implements, grouped as the conformance
 * kit and `cellexec plugins` show them. */
#ifndef CX_TOOLS_CONFORMANCE_METHODS_H
#define CX_TOOLS_CONFORMANCE_METHODS_H

#include <cellexec/cellexec.h>

G_BEGIN_DECLS

/* The executor operations, in the order of cx_executor_vtable. */
#define CONFORMANCE_N_EXECUTOR_OPS 10
extern const char *const conformance_executor_op_names[CONFORMANCE_N_EXECUTOR_OPS];

typedef struct {
  gboolean known;      /* FALSE for a faulty plugin: the rest is FALSE */
  gboolean sessions;   /* session_open, session_run_cell and session_close */
  gboolean interrupt;
  gboolean query;
  gboolean executor;   /* an executor vtable */
  gboolean executor_ops[CONFORMANCE_N_EXECUTOR_OPS];
} conformance_methods;

/* Read the optional methods of plugin INFO into METHODS.  FALSE (and
 * METHODS->known FALSE) when INFO is faulty. */
gboolean conformance_methods_read(const cx_plugin_info *info, conformance_methods *methods);

/* "sessions, interrupt, query" or "none" (g_free). */
char *conformance_methods_describe_backend(const conformance_methods *methods);
/* The executor operations, comma-separated, or "none" (g_free). */
char *conformance_methods_describe_executor(const conformance_methods *methods);

G_END_DECLS

#endif /* CX_TOOLS_CONFORMANCE_METHODS_H */
