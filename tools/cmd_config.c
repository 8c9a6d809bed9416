/* cellexec config check: validate a config file against the plugins. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

static int
config_check(const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load(path, &error);
  if (config == NULL)
    return fail_usage("%s", error->message);
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (!cx_config_check(config, registry, &error)) {
    /* One line per problem, each as the program's other errors. */
    g_auto(GStrv) problems = g_strsplit(error->message, "\n", -1);
    for (char **problem = problems; *problem != NULL; problem++)
      fail_usage("%s", *problem);
    return EXIT_USAGE;
  }
  const char *origin = cx_config_get_path(config);
  printf("%s: ok (backend '%s')\n", origin != NULL ? origin : "no config file found, defaults",
         cx_config_get_backend(config));
  return EXIT_CELL_OK;
}

int
cmd_config(int argc, char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new("check [FILE]");
  g_option_context_set_summary(context,
    "Check a config file: its syntax, the [cellexec] keys, that the selected\n"
    "backend is installed and usable, and every backend section's keys and\n"
    "values against that plugin's options.  Without FILE, check the config\n"
    "the search order finds: $CELLEXEC_CONFIG, $XDG_CONFIG_HOME/cellexec/config,\n"
    "/etc/cellexec/config.");
  g_option_context_set_description(context,
    "A config file must be UTF-8 text of at most 1 MiB, without NUL bytes, and\n"
    "set each key of a section once; a byte order mark at its start is skipped.\n"
    "\n"
    "Exit status: 0 valid, 2 invalid (the reason on stderr), 3 the verdict could\n"
    "not be written to stdout.");
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc < 2 || strcmp(argv[1], "check") != 0)
    return fail_usage("usage: cellexec config check [FILE]");
  if (argc > 3)
    return fail_usage("unexpected argument '%s'", argv[3]);
  return config_check(argc == 3 ? argv[2] : NULL);
}
