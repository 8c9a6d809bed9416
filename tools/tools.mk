# tools/: the cellexec command-line program.
bin_PROGRAMS += tools/cellexec
tools_cellexec_SOURCES = tools/cellexec.c tools/cmd_run.c tools/cmd_notebook.c \
	tools/cell_command.c tools/cell_command.h tools/interrupts.c tools/interrupts.h \
	tools/cmd_plugins.c \
	tools/cmd_config.c tools/cmd_record.c tools/commands.h
tools_cellexec_LDADD = tools/libconformance.la libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

# The plugin conformance kit (`cellexec plugins --check`); tests/test_executor
# runs its executor cases too.
noinst_LTLIBRARIES += tools/libconformance.la
tools_libconformance_la_SOURCES = tools/conformance.c tools/conformance.h \
	tools/conformance_cases.c tools/conformance_executor.c \
	tools/conformance_methods.c tools/conformance_methods.h \
	tools/conformance_file.c tools/conformance_file.h
tools_libconformance_la_LIBADD = -lm
