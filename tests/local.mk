# tests/: the local backend (plugins/local + pyembed), through the public API.
LOCAL_TESTS = tests/test_local
check_PROGRAMS += $(LOCAL_TESTS)
TESTS += $(LOCAL_TESTS)

tests_test_local_SOURCES = tests/test_local.c
tests_test_local_CFLAGS = $(TEST_CFLAGS)
tests_test_local_LDADD = $(TEST_LDADD)
