/* The subcommands of the cellexec program. */
#ifndef CX_TOOLS_COMMANDS_H
#define CX_TOOLS_COMMANDS_H

#include <cellexec/cellexec.h>

/* Exit statuses shared by every command. */
enum {
  EXIT_CELL_OK = 0,     /* the command (or the cell) succeeded */
  EXIT_CELL_FAILED = 1, /* the cell ran and failed */
  EXIT_USAGE = 2,       /* bad usage, config or plugin: nothing ran */
  EXIT_OUTPUT = 3,      /* the output could not be written: what was done is lost */
};

/* Each takes the arguments after its name (ARGV[0] is "cellexec CMD"). */
int cmd_run(int argc, char **argv);
int cmd_notebook(int argc, char **argv);
int cmd_plugins(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_record(int argc, char **argv);
#ifdef HAVE_ZMQ
int cmd_kernel(int argc, char **argv);
#endif
#ifdef HAVE_SERVE
int cmd_serve(int argc, char **argv);
#endif

/* Print "cellexec: MESSAGE" on stderr and return EXIT_USAGE. */
int fail_usage(const char *format, ...) G_GNUC_PRINTF(1, 2);

/* Parse ARGV with CONTEXT, ARGV[0] as the program name; on error, print
 * it with a pointer to --help. */
gboolean parse_options(GOptionContext *context, int *argc, char ***argv);

/* TEXT, the value of COMMAND's option NAME, as a size ("64M", read as the
 * backends read their sizes: at least 1 byte) in *BYTES; FALSE with ERROR
 * (one line) when it is none. */
gboolean parse_size(const char *command, const char *name, const char *text, gsize *bytes, GError **error);

#endif /* CX_TOOLS_COMMANDS_H */
