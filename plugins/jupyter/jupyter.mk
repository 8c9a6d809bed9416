# plugins/jupyter: the `jupyter` backend, cells on Jupyter kernels over
# ZeroMQ.  Built only when libzmq is found (configure: HAVE_ZMQ); gateway
# mode (gateway.c) only with libsoup 3 (HAVE_SOUP), else it says so.
if HAVE_ZMQ
plugins_LTLIBRARIES += plugins/jupyter.la
plugins_jupyter_la_SOURCES = \
	plugins/jupyter/jupyter.c \
	plugins/jupyter/jupyter.h \
	plugins/jupyter/session.c \
	plugins/jupyter/pool.c \
	plugins/jupyter/run.c \
	plugins/jupyter/kernel.c \
	plugins/jupyter/kernelspec.c \
	plugins/jupyter/kernel.h \
	plugins/jupyter/kernel-private.h \
	plugins/jupyter/message.c \
	plugins/jupyter/execute.c \
	plugins/jupyter/transport.c \
	plugins/jupyter/outputs.c \
	plugins/jupyter/gateway.c
# -I$(top_builddir): the generated headers of the kernel side of the
# executor operations, pyembed's errors.py and executor.py (the local
# backend's own Python) and executor_boot.py, which loads them.
plugins_jupyter_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)
plugins_jupyter_la_CFLAGS = $(PLUGIN_CFLAGS) $(ZMQ_CFLAGS) $(SOUP_CFLAGS)
nodist_plugins_jupyter_la_SOURCES = pyembed/errors-py.h pyembed/executor-py.h \
	plugins/jupyter/executor_boot-py.h
BUILT_SOURCES += plugins/jupyter/executor_boot-py.h
CLEANFILES += plugins/jupyter/executor_boot-py.h
plugins_jupyter_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_jupyter_la_LIBADD = jupyter_protocol/libcxjupyter.la lib/libcxoutput.la $(PLUGIN_LIBADD) $(ZMQ_LIBS) $(SOUP_LIBS)
endif
EXTRA_DIST += plugins/jupyter/README.md plugins/jupyter/executor_boot.py
