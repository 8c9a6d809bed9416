# tests/: the local backend (plugins/local + pyembed), through the public API.
# test_local_isolated is separate: a process starts its interpreter once.
LOCAL_TESTS = tests/test_local tests/test_local_isolated
check_PROGRAMS += $(LOCAL_TESTS)
TESTS += $(LOCAL_TESTS)

tests_test_local_SOURCES = tests/test_local.c
tests_test_local_CFLAGS = $(TEST_CFLAGS)
tests_test_local_LDADD = $(TEST_LDADD)

tests_test_local_isolated_SOURCES = tests/test_local_isolated.c
tests_test_local_isolated_CFLAGS = $(TEST_CFLAGS)
tests_test_local_isolated_LDADD = $(TEST_LDADD)
