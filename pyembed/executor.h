/* pyembed/executor.h: the executor operations on the embedded interpreter.
 *
 * Shared by every backend that runs Python (the local plugin in the host,
 * the subprocess worker in its process).  Values cross as JSON; objects
 * with no JSON form stay here and cross as {"$ref": ID, "repr": "..."},
 * resolvable in later calls through the same cx__py_executor.  Python
 * exceptions fail with CX_ERROR_PYTHON (cx_set_python_error).
 * cx__py_start() must have succeeded; every function takes the GIL.
 */
#ifndef CX__PY_EXECUTOR_H
#define CX__PY_EXECUTOR_H

#include <cellexec/executor.h>

G_BEGIN_DECLS

/* What a session keeps for its environments: the objects handed out by
 * reference.  They live until the executor is freed. */
typedef struct cx__py_executor cx__py_executor;
typedef struct cx__py_env cx__py_env;

cx__py_executor *cx__py_executor_new(GError **error);
void cx__py_executor_free(cx__py_executor *executor);

/* A new, empty environment of EXECUTOR (a fresh __main__-like namespace). */
cx__py_env *cx__py_env_new(cx__py_executor *executor, GError **error);
/* Frees ENV and calls the destroy notifies of its host functions. */
void cx__py_env_free(cx__py_env *env);

/* Run CODE in ENV for effect, after binding BINDINGS (may be NULL) in it;
 * line numbers shifted by LINE_OFFSET.  FILENAME names the code in
 * tracebacks ("<prelude>", "<side_effects>"). */
gboolean cx__py_env_execute(cx__py_env *env, const char *code, JsonObject *bindings,
                            int line_offset, const char *filename, GError **error);

/* See cx_env_evaluate_inline(), cx_env_execute_block(),
 * cx_env_create_dynamic_function(), cx_env_evaluate_type_expression() and
 * cx_env_snapshot() in <cellexec/executor.h>: same contracts. */
JsonNode *cx__py_env_evaluate_inline(cx__py_env *env, const char *code,
                                     JsonObject *locals, GError **error);
JsonNode *cx__py_env_execute_block(cx__py_env *env, const char *code,
                                   JsonObject *locals, GError **error);
gboolean cx__py_env_bind_function(cx__py_env *env, const char *name,
                                  const char *const *params, JsonObject *defaults,
                                  cx_host_function function, gpointer user_data,
                                  GDestroyNotify destroy, GError **error);
JsonNode *cx__py_env_evaluate_type_expression(cx__py_env *env, const char *code,
                                              GError **error);
JsonObject *cx__py_env_snapshot(cx__py_env *env, GError **error);

G_END_DECLS

#endif /* CX__PY_EXECUTOR_H */
