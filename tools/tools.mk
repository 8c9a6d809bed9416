# tools/: the cellexec command-line program.
bin_PROGRAMS += tools/cellexec
tools_cellexec_SOURCES = tools/cellexec.c tools/cmd_run.c tools/cmd_plugins.c \
	tools/cmd_config.c tools/commands.h
tools_cellexec_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)
