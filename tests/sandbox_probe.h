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

#endif
