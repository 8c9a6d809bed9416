# tools/: the cellexec command-line program.
bin_PROGRAMS += tools/cellexec
tools_cellexec_SOURCES = tools/cellexec.c tools/cmd_run.c tools/cmd_notebook.c \
	tools/cell_command.c tools/cell_command.h tools/interrupts.c tools/interrupts.h \
	tools/cmd_plugins.c \
	tools/cmd_config.c tools/cmd_record.c tools/commands.h
tools_cellexec_LDADD = tools/libconformance.la libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)
tools_cellexec_CPPFLAGS = $(AM_CPPFLAGS) -DBINDIR='"$(bindir)"' -DPREFIX='"$(prefix)"' \
	-DCX_KERNEL_LOGO_DIR='"$(kernellogodir)"'
if HAVE_ZMQ
tools_cellexec_SOURCES += tools/cmd_kernel.c
tools_cellexec_LDADD += kernel/libcxkernel.la
endif
EXTRA_DIST += tools/cmd_kernel.c
if HAVE_SERVE
tools_cellexec_SOURCES += tools/cmd_serve.c
tools_cellexec_LDADD += server/libcxserver.la
endif
EXTRA_DIST += tools/cmd_serve.c

# The plugin conformance kit (`cellexec plugins --check`); tests/test_executor
# runs its executor cases too.
noinst_LTLIBRARIES += tools/libconformance.la
tools_libconformance_la_SOURCES = tools/conformance.c tools/conformance.h \
	tools/conformance_cases.c tools/conformance_executor.c \
	tools/conformance_methods.c tools/conformance_methods.h \
	tools/conformance_file.c tools/conformance_file.h
tools_libconformance_la_LIBADD = -lm
