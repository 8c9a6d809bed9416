# core/: libcellexec, the registry, config, results and the backend facade.
lib_LTLIBRARIES += libcellexec.la
libcellexec_la_SOURCES = \
	core/error.c \
	core/suggest.c \
	core/result.c \
	core/options.c \
	core/run_options.c \
	core/registry.c \
	core/config.c \
	core/backend.c \
	core/internal.h
libcellexec_la_CPPFLAGS = $(AM_CPPFLAGS) -DCX_COMPILATION \
	-DCX_PLUGINS_DIR='"$(pluginsdir)"'
libcellexec_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libcellexec_la_LIBADD = $(GLIB_LIBS) $(JSON_LIBS) -ldl
libcellexec_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(CX_LT_VERSION_INFO) -no-undefined \
	-Wl,--version-script=$(srcdir)/core/libcellexec.map
EXTRA_libcellexec_la_DEPENDENCIES = $(srcdir)/core/libcellexec.map
EXTRA_DIST += core/libcellexec.map

cellexecincludedir = $(includedir)/cellexec
cellexecinclude_HEADERS = \
	include/cellexec/cellexec.h \
	include/cellexec/common.h \
	include/cellexec/options.h \
	include/cellexec/plugin.h \
	include/cellexec/result.h
nodist_cellexecinclude_HEADERS = include/cellexec/version.h
