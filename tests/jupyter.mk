# tests/: the jupyter backend (plugins/jupyter) against real ipykernel
# kernels launched on loopback.
if HAVE_ZMQ
check_PROGRAMS += tests/test_jupyter
TESTS += tests/test_jupyter
tests_test_jupyter_SOURCES = tests/test_jupyter.c tests/test_jupyter_server.c \
	tests/test_jupyter_server.h
tests_test_jupyter_CFLAGS = $(TEST_CFLAGS)
tests_test_jupyter_LDADD = $(TEST_LDADD)

# Its message decoding, linked in: untrusted messages without a kernel.
check_PROGRAMS += tests/test_jupyter_message
TESTS += tests/test_jupyter_message
tests_test_jupyter_message_SOURCES = tests/test_jupyter_message.c plugins/jupyter/message.c \
	plugins/jupyter/outputs.c
tests_test_jupyter_message_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)
tests_test_jupyter_message_CFLAGS = $(TEST_CFLAGS) $(ZMQ_CFLAGS)
tests_test_jupyter_message_LDADD = jupyter_protocol/libcxjupyter.la lib/libcxoutput.la $(TEST_LDADD) $(ZMQ_LIBS)
endif
# cellexec serve, driven by the jupyter backend in gateway mode and libsoup.
if HAVE_SERVE
check_PROGRAMS += tests/test_serve
TESTS += tests/test_serve
tests_test_serve_SOURCES = tests/test_serve.c tests/test_jupyter_server.c \
	tests/test_jupyter_server.h
tests_test_serve_CFLAGS = $(TEST_CFLAGS) $(SOUP_CFLAGS)
tests_test_serve_LDADD = $(TEST_LDADD) $(SOUP_LIBS)
# Other people's clients against it: JupyterLab's and E2B's, from npm.
TESTS += tests/check_clients.sh
endif
EXTRA_DIST += tests/check_clients.sh $(NODE_CLIENT_FILES)
NODE_CLIENT_FILES = tests/node/package.json tests/node/package-lock.json \
	tests/node/jupyterlab_client.mjs tests/node/e2b_client.mjs tests/node/notebook_browser.mjs
# cellexec kernel against Jupyter's kernel tests and jupyter_client.
TESTS += tests/check_kernel.sh
EXTRA_DIST += tests/check_kernel.sh tests/kernel/test_kernel.py tests/kernelspecs.sh
# What Jupyter Notebook shows of it in headless Chromium, beside ipykernel.
TESTS += tests/check_browser.sh
EXTRA_DIST += tests/check_browser.sh
# A kernel that speaks the protocol badly, run by test_jupyter.
EXTRA_DIST += tests/hostile_kernel.py
