# lib/: libcellexec, the registry, config, results and the backend facade.
lib_LTLIBRARIES += libcellexec.la
libcellexec_la_SOURCES = \
	lib/error.c \
	lib/suggest.c \
	lib/result.c \
	lib/result_json.c \
	lib/result_mime.c \
	lib/result_private.h \
	lib/json_text.c \
	lib/json_exact.c \
	lib/file_read.c \
	lib/options.c \
	lib/run_options.c \
	lib/registry.c \
	lib/plugin_probe.c \
	lib/config.c \
	lib/backend.c \
	lib/backend_config.c \
	lib/executor.c \
	lib/debug_export.c \
	lib/redact.c \
	lib/record.c \
	lib/notebook.c \
	lib/notebook_parameters.c \
	lib/notebook_run.c \
	lib/safe_file.c \
	lib/notebook_internal.h \
	lib/internal.h
libcellexec_la_CPPFLAGS = $(AM_CPPFLAGS) -DCX_COMPILATION \
	-DCX_PLUGINS_DIR='"$(pluginsdir)"' -DCX_PROBE_PATH='"$(pkglibexecdir)/cellexec-probe"'
libcellexec_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libcellexec_la_LIBADD = $(GLIB_LIBS) $(JSON_LIBS) -ldl
libcellexec_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(CX_LT_VERSION_INFO) -no-undefined \
	-Wl,--version-script=$(srcdir)/lib/libcellexec.map
EXTRA_libcellexec_la_DEPENDENCIES = $(srcdir)/lib/libcellexec.map
EXTRA_DIST += lib/libcellexec.map

# What the backends that talk to a peer process (subprocess, jupyter)
# share: the output-limit rule, the output buffer, and the safe reading of
# a peer's JSON.  A convenience library linked into each, as plugins do
# not depend on each other, and outside libcellexec's ABI.
noinst_LTLIBRARIES += lib/libcxoutput.la
lib_libcxoutput_la_SOURCES = \
	lib/output_limit.c \
	lib/output_limit.h \
	lib/output_buffer.c \
	lib/output_buffer.h \
	lib/peer_json.c \
	lib/peer_json.h
lib_libcxoutput_la_CFLAGS = $(PLUGIN_CFLAGS)

cellexecincludedir = $(includedir)/cellexec
cellexecinclude_HEADERS = \
	include/cellexec/cellexec.h \
	include/cellexec/common.h \
	include/cellexec/executor.h \
	include/cellexec/notebook.h \
	include/cellexec/options.h \
	include/cellexec/plugin.h \
	include/cellexec/record.h \
	include/cellexec/result.h
nodist_cellexecinclude_HEADERS = include/cellexec/version.h

# cellexec-probe: loads a plugin in a process of its own before the host
# does (lib/plugin_probe.c).
pkglibexec_PROGRAMS += lib/cellexec-probe
lib_cellexec_probe_SOURCES = lib/probe_main.c
lib_cellexec_probe_LDADD = $(GLIB_LIBS) -ldl
