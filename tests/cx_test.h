/* Shared scaffolding of the CUnit test programs.
 *
 * Each test program defines cx_test_register(), which adds its suites with
 * CX_TEST_SUITE / CU_add_test; cx_test_main.c runs them and prints
 * "PROGRAM: N passed, N failed" (and "PROGRAM: N skipped" when some were).
 * It exits 0 when none failed, 1 when one did, and 77 (automake's SKIP)
 * when every test it ran skipped itself or it ran none, so that a program
 * that could test nothing here never shows as passed.
 * A program may also be given test names on its command line to run only
 * those.
 */
#ifndef CX_TEST_H
#define CX_TEST_H

#include <CUnit/CUnit.h>
#include <cellexec/cellexec.h>

/* Provided by each test program. */
void cx_test_register(void);

/* Add a suite with TESTS, a { "name", function } array ending with { NULL }. */
typedef struct { const char *name; CU_TestFunc func; } cx_test_case;
void cx_test_add_suite(const char *suite, const cx_test_case *tests);

/* The running test cannot be run here: say why (printf's FORMAT) and
 * count it as skipped, not passed.  The test returns after calling it. */
void cx_test_skip(const char *format, ...) G_GNUC_PRINTF(1, 2);

/* Directories of this build tree (from the environment make check sets). */
const char *cx_test_builddir(void);
const char *cx_test_srcdir(void);
/* The directory the real plugins are built into (builddir/plugins/.libs). */
const char *cx_test_plugins_dir(void);

/* The directory the test-only plugins are built into. */
const char *cx_test_case_plugins_dir(void);
/* A new temporary directory holding symlinks to the test-only plugins
 * NAMES (NULL-terminated, e.g. "echo" for tests/plugins/.libs/echo.so). */
char *cx_test_dir_with_plugins(const char *const *names);
/* A registry of exactly the test-only plugins NAMES. */
cx_registry *cx_test_registry_with(const char *const *names);

/* The registry of the plugins built here (shared by a program's tests). */
cx_registry *cx_test_registry(void);
/* Options for backend NAME of cx_test_registry() from KEY, VALUE pairs
 * ending with NULL; every pair must be accepted. */
cx_options *cx_test_options_valist(const char *name, const char *first_key, va_list args);
/* Backend NAME of cx_test_registry() with KEY, VALUE option pairs ending
 * with NULL; it must open. */
cx_backend *cx_test_open_backend(const char *name, const char *first_key, ...) G_GNUC_NULL_TERMINATED;
cx_backend *cx_test_open_backend_valist(const char *name, const char *first_key, va_list args);

/* Run CODE on BACKEND with RUN (may be NULL); the backend must return a
 * result (the cell itself may fail). */
cx_result *cx_test_run_cell(cx_backend *backend, const char *code, const cx_run_options *run);
/* Check the answers to Jupyter requests beside execute (cx_session_request) of
 * BACKEND, answered from the session's own namespace and cells: a
 * completion of a name a cell defined, its inspection, is_complete of an
 * open block, the history's tail (with the cell's output where
 * OUTPUT_IN_HISTORY, else null), range and search, user_expressions, and
 * an unknown type unsupported. */
void cx_test_check_session_requests(cx_backend *backend, gboolean output_in_history);
/* Check that BACKEND's cells ask the run options' input callback: input()
 * and getpass() answered, what the cell wrote first given first, and
 * without a callback StdinNotImplementedError.  With ANSWERS_FAILURES, a
 * cancelled answer is KeyboardInterrupt and another failure EOFError. */
void cx_test_check_input(cx_backend *backend, gboolean answers_failures);
/* Check that BACKEND's sessions honour cx_run_options_set_store_history():
 * a cell run with FALSE keeps the execution count and stays out of In and
 * the history; its value is still _, as in IPython; the next stored cell
 * numbers on from the last stored one. */
void cx_test_check_unstored_cells(cx_backend *backend);
/* Check that code holding a NUL byte (CX_RESULT_NUL in the C string) fails
 * on BACKEND, statelessly and in a session, running nothing, with the
 * exception the configured Python's compile() raises for such source,
 * while a string literal '\0' (a backslash and a zero) runs. */
void cx_test_check_nul_in_code(cx_backend *backend);
/* "Type: message" of the exception the configured Python's compile()
 * raises for source holding a NUL byte (borrowed). */
const char *cx_test_python_refusal_of_nul(void);
/* Assert that RESULT failed with that exception type and message. */
void cx_test_assert_refused_as_python_refuses_nul(const cx_result *result);
/* The same in SESSION. */
cx_result *cx_test_run_session_cell(cx_session *session, const char *code,
                                    const cx_run_options *run);

/* How many file descriptors this process has open now. */
guint cx_test_count_open_fds(void);

/* Seconds since START (a g_get_monotonic_time() value). */
double cx_test_seconds_since(gint64 start);
/* Whether this program runs under valgrind (its preload is in LD_PRELOAD). */
gboolean cx_test_under_valgrind(void);
/* How much slower than a plain build this one runs, to scale hang guards:
 * 10 under valgrind, 3 in a sanitizer build (CELLEXEC_SANITIZED), else 1. */
double cx_test_slowdown(void);

/* Processes whose command line contains MARKER: how many there are; how
 * many remain after waiting up to SECONDS for them to go; killing them
 * (SIGKILL), so that a failed case fails alone. */
guint cx_test_count_processes_with(const char *marker);
guint cx_test_processes_left_with(const char *marker, double seconds);
void cx_test_kill_processes_with(const char *marker);

/* The argv (NULL-terminated, for g_subprocess_newv) of the cellexec
 * program built here with the arguments FIRST, ... up to NULL.  Free
 * with g_strfreev. */
char **cx_test_cellexec_argv_valist(const char *first, va_list args);

/* `cellexec ARGS` as a user runs it: what it printed and its exit status
 * (128 + the signal when one killed it). */
typedef struct {
  char *out; /* NULL when stdout went elsewhere */
  char *err;
  int status;
} cx_test_cli_run;
void cx_test_cli_run_clear(cx_test_cli_run *run);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(cx_test_cli_run, cx_test_cli_run_clear)
/* Start `cellexec ARGS...` (NULL-terminated), its stdin, stdout and stderr
 * pipes. */
GSubprocess *cx_test_cellexec_start(const char *first, ...) G_GNUC_NULL_TERMINATED;
/* Give INPUT (may be NULL) to PROCESS and wait for it to end. */
cx_test_cli_run cx_test_cellexec_finish(GSubprocess *process, const char *input);
/* Send PROCESS SIGTERM, wait for it to end (killed after 60 s), and
 * finish it; *SECONDS gets how long it took to end. */
cx_test_cli_run cx_test_cellexec_terminate(GSubprocess *process, double *seconds);
/* Run `cellexec ARGS...` with INPUT (may be NULL) on its stdin. */
cx_test_cli_run cx_test_cellexec(const char *input, const char *first, ...) G_GNUC_NULL_TERMINATED;
/* Run `cellexec ARGS...` under `prlimit --as=ADDRESS_SPACE` (bytes), so
 * that a host which would exhaust the machine aborts instead (its worker
 * processes inherit the limit).  Not in a sanitizer build: ASan reserves
 * more address space than any such limit. */
cx_test_cli_run cx_test_cellexec_capped(guint64 address_space, const char *first, ...)
  G_GNUC_NULL_TERMINATED;

/* A new empty temporary directory, removed with its contents at exit. */
char *cx_test_tmpdir(void);
/* Write CONTENTS to DIR/NAME; returns the path (g_free it). */
char *cx_test_write_file(const char *dir, const char *name, const char *contents);
/* LEVELS arrays nested in one another around VALUE ("[[VALUE]]" for 2):
 * JSON deeper than cellexec reads (CX_JSON_MAX_DEPTH) from a hostile
 * writer.  Free with g_free. */
char *cx_test_nested_json(guint levels, const char *value);
/* Wait until PATH exists (a cell got that far), at most 10 s. */
gboolean cx_test_wait_for_file(const char *path);

/* This process's descriptor FD (1 or 2) pointed at a new file, to see what
 * reaches it (processes started meanwhile inherit it);
 * cx_test_restore_fd() puts the original back. */
typedef struct {
  int fd;
  int saved;
  char *path;
} cx_test_fd_redirect;
void cx_test_redirect_fd(cx_test_fd_redirect *redirect, int fd);
/* What reached the descriptor meanwhile (g_free it). */
char *cx_test_restore_fd(cx_test_fd_redirect *redirect);

/* Assertions on GError. */
#define CX_ASSERT_NO_ERROR(err)                                                     \
  do {                                                                              \
    if ((err) != NULL) {                                                            \
      fprintf(stderr, "\n  unexpected error: %s\n", (err)->message);               \
    }                                                                               \
    CU_ASSERT_PTR_NULL_FATAL(err);                                                  \
  } while (0)
#define CX_ASSERT_ERROR(err, code_)                                                 \
  do {                                                                              \
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);                                              \
    if (!g_error_matches((err), CX_ERROR, (code_)))                                 \
      fprintf(stderr, "\n  expected code %d, got %d: %s\n", (int)(code_),          \
              (err)->code, (err)->message);                                          \
    CU_ASSERT_TRUE(g_error_matches((err), CX_ERROR, (code_)));                      \
  } while (0)
/* TRUE-asserting substring check that prints both strings on failure. */
#define CX_ASSERT_CONTAINS(haystack, needle)                                        \
  do {                                                                              \
    const char *h_ = (haystack);                                                    \
    gboolean ok_ = h_ != NULL && strstr(h_, (needle)) != NULL;                      \
    if (!ok_)                                                                       \
      fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", (needle), h_ ? h_ : "(null)"); \
    CU_ASSERT_TRUE(ok_);                                                            \
  } while (0)

/* Assertions on cell results, printing what the cell did when they fail. */
void cx_test_print_unexpected_error(const cx_result *result);
#define CX_ASSERT_CELL_OK(result)                                                  \
  do {                                                                            \
    cx_test_print_unexpected_error(result);                                       \
    CU_ASSERT_TRUE(cx_result_get_success(result));                               \
  } while (0)
#define CX_ASSERT_STDOUT(result, expected)                                        \
  do {                                                                            \
    const char *out_ = cx_result_get_stdout((result), NULL);                      \
    if (strcmp(out_, (expected)) != 0)                                            \
      fprintf(stderr, "\n  stdout: expected \"%s\", got \"%s\"\n", (expected), out_); \
    CU_ASSERT_STRING_EQUAL(out_, (expected));                                     \
  } while (0)
#define CX_ASSERT_ERROR_TYPE(result, type)                                        \
  do {                                                                            \
    CU_ASSERT_FALSE(cx_result_get_success(result));                               \
    CU_ASSERT_TRUE_FATAL(cx_result_has_error(result));                            \
    if (strcmp(cx_result_get_error_type(result), (type)) != 0)                    \
      fprintf(stderr, "\n  expected %s, got %s: %s\n%s", (type),                  \
              cx_result_get_error_type(result), cx_result_get_error_message(result), \
              cx_result_get_error_traceback(result));                             \
    CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), (type));             \
  } while (0)

#endif /* CX_TEST_H */
