# tests/: the subprocess backend (plugins/subprocess + cellexec-worker),
# through the public API, with real worker processes.
check_PROGRAMS += tests/test_subprocess
TESTS += tests/test_subprocess
tests_test_subprocess_SOURCES = tests/test_subprocess.c
tests_test_subprocess_CFLAGS = $(TEST_CFLAGS)
tests_test_subprocess_LDADD = $(TEST_LDADD)
