/* cellexec: run Python code cells through swappable execution backends. */
#include "config.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"

static const char summary[] =
  "Commands:\n"
  "  run        run a cell and print its output or its result bundle\n"
  "  notebook   run a Jupyter notebook (.ipynb) and write it with its outputs\n"
  "  plugins    list the backend plugins found, with their status and options\n"
  "  config     check a config file against the installed plugins\n"
  "  record     summarise (show) or validate (check) a recording of cells\n"
  "  kernel     serve a backend as a Jupyter kernel, or install its kernelspec\n"
  "  serve      serve the backends over HTTP: Jupyter Server's kernels API\n"
  "\n"
  "Run `cellexec COMMAND --help` for the options of a command.\n"
  "\n"
  "Environment:\n"
  "  CELLEXEC_CONFIG       config file to use instead of the search order\n"
  "  CELLEXEC_PLUGIN_PATH  colon-separated directories searched for plugins first\n"
  "\n"
  "Exit status: 0 success, 1 the cell failed, 2 usage, config or plugin error,\n"
  "3 the output could not be written (e.g. a full disk; the cell may have run).";

static int exit_status; /* what main returns, for check_stdout */

/* Run at exit, whichever way a command leaves (the option parser exits by
 * itself after --help): a failed write to stdout, such as to a full disk,
 * must not pass for success.  A usage error keeps its status. */
static void
check_stdout(void)
{
  errno = 0;
  gboolean failed = fflush(stdout) != 0 || ferror(stdout);
  int saved = errno;
  if (fclose(stdout) != 0 && !failed) {
    failed = TRUE;
    saved = errno;
  }
  if (!failed)
    return;
  if (saved != 0)
    fprintf(stderr, "cellexec: cannot write the output: %s\n", g_strerror(saved));
  else
    fprintf(stderr, "cellexec: cannot write the output\n");
  _exit(exit_status == EXIT_USAGE ? EXIT_USAGE : EXIT_OUTPUT);
}

int
fail_usage(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  fprintf(stderr, "cellexec: %s\n", message);
  return EXIT_USAGE;
}

gboolean
parse_options(GOptionContext *context, int *argc, char ***argv)
{
  g_set_prgname((*argv)[0]); /* "cellexec CMD", for the parser's messages */
  g_autoptr(GError) error = NULL;
  if (g_option_context_parse(context, argc, argv, &error))
    return TRUE;
  fail_usage("%s (see `%s --help`)", error->message, (*argv)[0]);
  return FALSE;
}

gboolean
parse_size(const char *command, const char *name, const char *text, gsize *bytes, GError **error)
{
  const cx_option_spec schema[] = {
    { name, CX_OPTION_SIZE_LIMIT, NULL, "a size" },
    { NULL },
  };
  cx_options *options = cx_options_new(command, schema);
  gboolean ok = cx_options_set(options, name, text, error);
  if (ok)
    *bytes = (gsize)cx_options_get_size(options, name, 0);
  cx_options_free(options);
  return ok;
}

static int
print_main_help(FILE *stream)
{
  fprintf(stream,
          "Usage: cellexec COMMAND [OPTION...]\n\n"
          "Run Python code cells through swappable execution backends.\n\n%s\n",
          summary);
  return stream == stdout ? EXIT_CELL_OK : EXIT_USAGE;
}

static void
ignore_signal(int signal_number)
{
  (void)signal_number;
}

static int
dispatch(int argc, char **argv)
{
  if (argc < 2)
    return print_main_help(stderr);
  const char *command = argv[1];
  if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 || strcmp(command, "help") == 0)
    return print_main_help(stdout);
  if (strcmp(command, "--version") == 0) {
    printf("cellexec %s (plugin ABI %d.%d)\n", cx_version(), CX_ABI_MAJOR, CX_ABI_MINOR);
    return EXIT_CELL_OK;
  }

  static const struct {
    const char *name;
    int (*run)(int, char **);
  } commands[] = { { "run", cmd_run }, { "notebook", cmd_notebook }, { "plugins", cmd_plugins },
                   { "config", cmd_config }, { "record", cmd_record },
#ifdef HAVE_ZMQ
                   { "kernel", cmd_kernel },
#endif
#ifdef HAVE_SERVE
                   { "serve", cmd_serve },
#endif
  };
  /* A reader that goes away (`| head`) is a write error (exit 3), not a
   * signal that kills us.  A handler rather than SIG_IGN: exec() resets it,
   * so the processes cells start get the default, as from a shell. */
  struct sigaction on_sigpipe = { .sa_handler = ignore_signal };
  sigemptyset(&on_sigpipe.sa_mask);
  sigaction(SIGPIPE, &on_sigpipe, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(command, commands[i].name) == 0) {
      /* Present "cellexec CMD" as the program name to the command's parser. */
      g_autofree char *name = g_strdup_printf("cellexec %s", command);
      argv[1] = name;
      int status = commands[i].run(argc - 1, argv + 1);
      argv[1] = (char *)command;
      return status;
    }
  const char *const names[] = { "run", "notebook", "plugins", "config", "record", "kernel", "serve",
                                NULL };
  const char *closest = cx_suggest(command, names);
  return fail_usage("unknown command '%s'%s%s%s; see `cellexec --help`", command,
                    closest ? " (did you mean '" : "", closest ? closest : "", closest ? "'?)" : "");
}

int
main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  atexit(check_stdout);
  exit_status = dispatch(argc, argv);
  return exit_status;
}
