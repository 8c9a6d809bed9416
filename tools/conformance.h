/* The plugin conformance kit: a table of cases a backend plugin must pass,
 * run by `cellexec plugins --check FILE.so` and by tests/test_executor.
 *
 * A case gets a fresh backend (and, for executor cases, a fresh session)
 * of the plugin under test and says whether the plugin keeps the contract
 * of include/cellexec/: it passes, fails with one sentence saying why, or
 * is skipped because the plugin lacks what it needs (an optional method,
 * or Python).  The first failure ends a case.
 *
 * Only the public API is used, as a host would use the plugin.
 */
#ifndef CX_TOOLS_CONFORMANCE_H
#define CX_TOOLS_CONFORMANCE_H

#include <cellexec/cellexec.h>

#include "tools/conformance_methods.h"

G_BEGIN_DECLS

/* What a case needs of the plugin; a case whose needs are not met is skipped. */
typedef enum {
  CONFORMANCE_NEEDS_NOTHING = 0,
  CONFORMANCE_NEEDS_PYTHON = 1 << 0,    /* the plugin runs cells as Python */
  CONFORMANCE_NEEDS_SESSIONS = 1 << 1,  /* session_open, session_run_cell, session_close */
  CONFORMANCE_NEEDS_INTERRUPT = 1 << 2, /* interrupt */
  CONFORMANCE_NEEDS_QUERY = 1 << 3,     /* query */
  CONFORMANCE_NEEDS_EXECUTOR = 1 << 4,  /* an executor vtable; the case gets a session */
} conformance_needs;

typedef enum {
  CONFORMANCE_PASS,
  CONFORMANCE_FAIL,
  CONFORMANCE_SKIP,
} conformance_outcome;

/* What one case sees. */
typedef struct {
  cx_backend *backend;      /* a backend of the plugin, opened for this case */
  cx_session *session;      /* a session of BACKEND for executor cases, else NULL */
  const char *name;         /* the plugin's name */
  gboolean python;          /* the plugin runs Python (or the user said it must) */
  const conformance_methods *methods;
  char *failure;            /* why the case failed, or NULL */
  char *skipped;            /* why the case was skipped, or NULL */
  GPtrArray *tmpdirs;       /* removed after the case */
  const char *tmp_parent;   /* where they are made, or NULL: the system's temporary directory */
} conformance_check;

typedef struct {
  const char *name;         /* a_sentence_in_snake_case */
  conformance_needs needs;
  void (*run)(conformance_check *check);
} conformance_case;

/* The tables, each ending with { NULL }. */
extern const conformance_case conformance_backend_cases[];  /* conformance_cases.c */
extern const conformance_case conformance_executor_cases[]; /* conformance_executor.c */

/* The plugin under test. */
typedef struct {
  cx_registry *registry;
  char *name;
  cx_config *config;        /* the backend options of every case, as a config */
  conformance_methods methods;
  gboolean python;
  /* Where the cases make their temporary directories (not owned; set after
   * conformance_target_init), or NULL: the system's temporary directory. */
  const char *tmpdir;
} conformance_target;

/* Fill TARGET for plugin NAME of REGISTRY (which must be usable) with
 * OPTIONS ("KEY=VALUE" strings, may be NULL).  FALSE with ERROR when the
 * options do not fit the plugin's schema. */
gboolean conformance_target_init(conformance_target *target, cx_registry *registry,
                                 const char *name, const char *const *options,
                                 GError **error);
void conformance_target_clear(conformance_target *target);

/* Whether the plugin runs Python: a stateless cell print(6 * 7) prints
 * "42\n".  *EVIDENCE (may be NULL) gets one sentence saying what it did. */
gboolean conformance_detect_python(const conformance_target *target, char **evidence);

/* Run CASE against TARGET; *REASON (may be NULL) gets why it failed or was
 * skipped (g_free). */
conformance_outcome conformance_run_case(const conformance_target *target,
                                         const conformance_case *kase, char **reason);

/* ---- For the cases ------------------------------------------------------ */

/* Record the first failure, or that the case is skipped. */
void conformance_fail(conformance_check *check, const char *format, ...) G_GNUC_PRINTF(2, 3);
void conformance_skip(conformance_check *check, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* TRUE once the case has failed or been skipped: it should return. */
gboolean conformance_done(const conformance_check *check);

/* Fail the case and return from it unless COND holds. */
#define CONFORMANCE_CHECK(check, cond, ...)                                         \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      conformance_fail((check), __VA_ARGS__);                                       \
      return;                                                                       \
    }                                                                               \
  } while (0)
/* Return from the case once it has failed or been skipped. */
#define CONFORMANCE_RETURN_IF_DONE(check)                                           \
  do {                                                                              \
    if (conformance_done(check))                                                    \
      return;                                                                       \
  } while (0)

/* Fail CHECK saying WHAT failed with ERROR (consumed; may be NULL: no
 * failure).  An executor operation the plugin lacks (CX_ERROR_UNSUPPORTED)
 * skips the case instead.  Returns TRUE when ERROR was NULL. */
gboolean conformance_no_error(conformance_check *check, GError *error, const char *what);

/* CODE run statelessly (SESSION NULL) or in SESSION with RUN (may be NULL).
 * The backend must return a result and the result must be a well-formed
 * bundle; otherwise the case fails and this returns NULL. */
cx_result *conformance_run_cell(conformance_check *check, cx_session *session,
                                const char *code, const cx_run_options *run);
/* A session of the check's backend, or NULL with the case failed. */
cx_session *conformance_open_session(conformance_check *check);

/* Fail unless RESULT succeeded and its stdout is EXPECTED. */
void conformance_expect_stdout(conformance_check *check, const cx_result *result,
                               const char *expected);
/* Fail unless RESULT failed with error type TYPE. */
void conformance_expect_error_type(conformance_check *check, const cx_result *result,
                                   const char *type);

/* A new empty directory (in the target's tmpdir, if it has one), removed
 * with its contents after the case. */
const char *conformance_tmpdir(conformance_check *check);
/* Remove PATH and everything below it, as far as possible. */
void conformance_remove_tree(const char *path);

G_END_DECLS

#endif /* CX_TOOLS_CONFORMANCE_H */
