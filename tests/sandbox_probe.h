/* tests/sandbox_probe.h: what the sandbox tests share.
 *
 * Each test runs the same probe cell with isolation = none and with
 * isolation = sandbox and asserts opposite outcomes: the probe prints
 * ALLOWED when the forbidden thing worked (what none does, so the test
 * proves the probe works) and DENIED otherwise (what the sandbox must do).
 */
#ifndef CX_TEST_SANDBOX_PROBE_H
#define CX_TEST_SANDBOX_PROBE_H

#include <cellexec/cellexec.h>

/* Python that forks up to N children (a literal), each sleeping for a
 * minute (they go with the cell's cgroup), into the list `children`. */
#define CX_TEST_FORK_SLEEPERS(n)                                                           \
  "import os, time\n"                                                                       \
  "children = []\n"                                                                         \
  "for i in range(" #n "):\n"                                                               \
  "    try:\n"                                                                              \
  "        pid = os.fork()\n"                                                               \
  "    except OSError:\n"                                                                   \
  "        break\n"                                                                         \
  "    if pid == 0:\n"                                                                      \
  "        time.sleep(60)\n"                                                                \
  "        os._exit(0)\n"                                                                   \
  "    children.append(pid)\n"

/* The subprocess backend with isolation MODE and up to three more KEY,
 * VALUE pairs (NULL keys are skipped); NULL and *ERROR set when it
 * refuses. */
cx_backend *cx_test_sandbox_open(const char *mode, GError **error, const char *k1,
                                 const char *v1, const char *k2, const char *v2,
                                 const char *k3, const char *v3);

/* Run CODE on BACKEND (a 60 s timeout): its stdout, stripped, or
 * "FAILED <type>: <message>".  CX_SANDBOX_VERBOSE=1 prints every answer. */
char *cx_test_sandbox_probe(cx_backend *backend, const char *code);

/* The probe CODE with isolation none (one more option NONE_KEY =
 * NONE_VALUE, if not NULL) must say ALLOWED, with the sandbox (one more
 * option SANDBOX_KEY = SANDBOX_VALUE) DENIED. */
void cx_test_sandbox_check_both(const char *code, const char *none_key, const char *none_value,
                                const char *sandbox_key, const char *sandbox_value);

/* The pid of the child of the process SERVER (the fork server) whose
 * name (comm) is NAME, or 0. */
gint64 cx_test_sandbox_child_named(gint64 server, const char *name);

/* With isolation none and then sandbox (each with the option KEY =
 * VALUE, if KEY is not NULL): a session runs VICTIM_CODE, and another
 * session runs the probe PROBE_FOR makes of what it printed (stripped)
 * and of the pids that may name the victim's process: "PID HOST_PID",
 * its own and the host's (the same without a PID namespace of its own),
 * which a probe tries but for its own.  The probe must say ALLOWED with
 * none and DENIED with the sandbox.  AFTER_PROBE (may be NULL) runs next
 * in the victim's session, and must say the same. */
void cx_test_sandbox_check_across_sessions(const char *key, const char *value,
                                           const char *victim_code,
                                           char *(*probe_for)(const char *printed,
                                                              const char *pids),
                                           const char *after_probe);

#endif
