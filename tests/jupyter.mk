# tests/: the jupyter backend (plugins/jupyter) against real ipykernel
# kernels launched on loopback.
if HAVE_ZMQ
check_PROGRAMS += tests/test_jupyter
TESTS += tests/test_jupyter
tests_test_jupyter_SOURCES = tests/test_jupyter.c tests/test_jupyter_server.c \
	tests/test_jupyter_server.h
tests_test_jupyter_CFLAGS = $(TEST_CFLAGS)
tests_test_jupyter_LDADD = $(TEST_LDADD)
endif
# A kernel that speaks the protocol badly, run by test_jupyter.
EXTRA_DIST += tests/hostile_kernel.py
