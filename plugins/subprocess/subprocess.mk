# plugins/subprocess: the `subprocess` backend and its worker program.
# The wire protocol (wire/: frames, messages, the output-limit rule on the
# wire) is shared by both ends through a convenience library, the rule
# itself through the core's lib/libcxoutput.la; the worker embeds
# Python through pyembed.  README.md maps the files.
noinst_LTLIBRARIES += plugins/subprocess/wire/libcxwire.la
plugins_subprocess_wire_libcxwire_la_SOURCES = \
	plugins/subprocess/wire/frame.c \
	plugins/subprocess/wire/frame.h \
	plugins/subprocess/wire/output_limit.c \
	plugins/subprocess/wire/output_limit.h \
	plugins/subprocess/wire/protocol.c \
	plugins/subprocess/wire/protocol.h
plugins_subprocess_wire_libcxwire_la_CFLAGS = $(PLUGIN_CFLAGS)

plugins_LTLIBRARIES += plugins/subprocess.la
plugins_subprocess_la_SOURCES = \
	plugins/subprocess/subprocess.c \
	plugins/subprocess/cell_call.c \
	plugins/subprocess/cell_call.h \
	plugins/subprocess/executor_host.c \
	plugins/subprocess/executor_host.h \
	plugins/subprocess/session.h \
	plugins/subprocess/worker_process.c \
	plugins/subprocess/worker_process.h
plugins_subprocess_la_CPPFLAGS = $(AM_CPPFLAGS) -DCX_WORKER_DIR='"$(workerdir)"'
plugins_subprocess_la_CFLAGS = $(PLUGIN_CFLAGS)
plugins_subprocess_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_subprocess_la_LIBADD = plugins/subprocess/wire/libcxwire.la lib/libcxoutput.la \
	$(PLUGIN_LIBADD)

# The worker, in $(libexecdir)/cellexec, linked twice from one set of
# objects.  plugins/subprocess/cellexec-worker is the build tree's:
# -no-fast-install makes its .libs/cellexec-worker (what CELLEXEC_WORKER
# names in `make check`) find the build tree's libcellexec through its
# RUNPATH, without a wrapper script or LD_LIBRARY_PATH, which would leak
# into the cells' environment.  That RUNPATH names the build directory,
# which an installed program must not search (a stale or planted
# libcellexec there would be loaded first), so what is installed is
# plugins/subprocess/installed/cellexec-worker, linked as programs
# normally are.
# -fPIC: data of the libraries (PyExc_*, g_ascii_table) is reached through
# the GOT, not copied into the program, which would then have to export
# it; the worker exports no symbol (tests/check_symbols.sh).
noinst_PROGRAMS += plugins/subprocess/cellexec-worker
pkglibexec_PROGRAMS += plugins/subprocess/installed/cellexec-worker
plugins_subprocess_installed_cellexec_worker_SOURCES =
plugins_subprocess_installed_cellexec_worker_LDADD = $(plugins_subprocess_cellexec_worker_OBJECTS) \
	$(plugins_subprocess_cellexec_worker_LDADD)
plugins_subprocess_cellexec_worker_SOURCES = \
	plugins/subprocess/worker/worker.h \
	plugins/subprocess/worker/worker_main.c \
	plugins/subprocess/worker/forkserver.c \
	plugins/subprocess/worker/cell_process.c \
	plugins/subprocess/worker/executor_worker.c \
	plugins/subprocess/worker/limits.c \
	plugins/subprocess/worker/reaper.c \
	plugins/subprocess/worker/sandbox.c \
	plugins/subprocess/worker/seccomp.c \
	pyembed/pyembed-process.h \
	pyembed/process.c \
	pyembed/executor.h
plugins_subprocess_cellexec_worker_CFLAGS = $(AM_CFLAGS) $(PYTHON_EMBED_CFLAGS) $(SECCOMP_CFLAGS) -fPIC
plugins_subprocess_cellexec_worker_LDFLAGS = $(AM_LDFLAGS) -no-fast-install
plugins_subprocess_cellexec_worker_LDADD = plugins/subprocess/wire/libcxwire.la lib/libcxoutput.la \
	pyembed/libcxpyembed.la libcellexec.la $(PYTHON_EMBED_LIBS) $(GLIB_LIBS) $(JSON_LIBS) \
	$(SECCOMP_LIBS) -lpthread
EXTRA_DIST += plugins/subprocess/README.md
