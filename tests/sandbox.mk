# tests/: the subprocess backend's `isolation = sandbox`
# (plugins/subprocess/worker/sandbox.c): each isolation test runs both
# ways (none must allow, sandbox must deny), then the whole subprocess
# suite again inside the sandbox.
check_PROGRAMS += tests/test_sandbox tests/test_sandbox_escapes tests/test_sandbox_sessions
TESTS += tests/test_sandbox tests/test_sandbox_escapes tests/test_sandbox_sessions \
  tests/test_subprocess_sandbox.sh
tests_test_sandbox_SOURCES = tests/test_sandbox.c tests/sandbox_probe.c tests/sandbox_probe.h
tests_test_sandbox_CFLAGS = $(TEST_CFLAGS)
tests_test_sandbox_LDADD = $(TEST_LDADD)
# Ways out an attacker's cell tries, each allowed by none, denied by the sandbox.
tests_test_sandbox_escapes_SOURCES = tests/test_sandbox_escapes.c tests/sandbox_probe.c \
  tests/sandbox_probe.h
tests_test_sandbox_escapes_CFLAGS = $(TEST_CFLAGS)
tests_test_sandbox_escapes_LDADD = $(TEST_LDADD)
# The sessions and stateless cells of one backend kept apart; its bounds.
tests_test_sandbox_sessions_SOURCES = tests/test_sandbox_sessions.c tests/sandbox_probe.c \
  tests/sandbox_probe.h
tests_test_sandbox_sessions_CFLAGS = $(TEST_CFLAGS)
tests_test_sandbox_sessions_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/test_subprocess_sandbox.sh
