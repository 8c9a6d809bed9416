/* cellexec plugins: list every plugin found, usable or faulty, with the
 * optional methods each has; --check FILE.so runs the conformance kit. */
#include "config.h"

#include <stdio.h>

#include "tools/commands.h"
#include "tools/conformance_file.h"
#include "tools/conformance_methods.h"

static void
add_options_json(JsonBuilder *b, const cx_plugin_info *info)
{
  json_builder_begin_array(b);
  for (const cx_option_spec *spec = cx_plugin_info_get_options(info); spec->name != NULL; spec++) {
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, spec->name);
    json_builder_set_member_name(b, "type");
    json_builder_add_string_value(b, cx_option_type_name(spec->type));
    json_builder_set_member_name(b, "default");
    if (spec->default_value != NULL)
      json_builder_add_string_value(b, spec->default_value);
    else
      json_builder_add_null_value(b);
    json_builder_set_member_name(b, "help");
    json_builder_add_string_value(b, spec->help != NULL ? spec->help : "");
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
}

static void
add_nullable_string(JsonBuilder *b, const char *name, const char *value)
{
  json_builder_set_member_name(b, name);
  if (value != NULL)
    json_builder_add_string_value(b, value);
  else
    json_builder_add_null_value(b);
}

/* "methods": {"sessions", "interrupt", "query", "executor": [ops]}, or
 * null when they cannot be read (a faulty plugin). */
static void
add_methods_json(JsonBuilder *b, const cx_plugin_info *info)
{
  conformance_methods methods;
  json_builder_set_member_name(b, "methods");
  if (!conformance_methods_read(info, &methods)) {
    json_builder_add_null_value(b);
    return;
  }
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "sessions");
  json_builder_add_boolean_value(b, methods.sessions);
  json_builder_set_member_name(b, "interrupt");
  json_builder_add_boolean_value(b, methods.interrupt);
  json_builder_set_member_name(b, "query");
  json_builder_add_boolean_value(b, methods.query);
  json_builder_set_member_name(b, "executor");
  json_builder_begin_array(b);
  for (guint i = 0; i < CONFORMANCE_N_EXECUTOR_OPS; i++)
    if (methods.executor_ops[i])
      json_builder_add_string_value(b, conformance_executor_op_names[i]);
  json_builder_end_array(b);
  json_builder_end_object(b);
}

static void
print_methods_human(const cx_plugin_info *info)
{
  conformance_methods methods;
  if (!conformance_methods_read(info, &methods)) {
    printf("  executor operations: %s\n", cx_plugin_info_has_executor(info) ? "yes" : "no");
    return;
  }
  g_autofree char *backend = conformance_methods_describe_backend(&methods);
  g_autofree char *executor = conformance_methods_describe_executor(&methods);
  printf("  optional methods: %s\n  executor operations: %s\n", backend, executor);
}

static void
print_json(const cx_registry *registry)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "search_path");
  json_builder_begin_array(b);
  for (const char *const *dir = cx_registry_get_search_path(registry); *dir != NULL; dir++)
    json_builder_add_string_value(b, *dir);
  json_builder_end_array(b);
  json_builder_set_member_name(b, "plugins");
  json_builder_begin_array(b);
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++) {
    const cx_plugin_info *info = cx_registry_get_plugin(registry, i);
    guint major, minor;
    cx_plugin_info_get_abi(info, &major, &minor);
    g_autofree char *abi = major == 0 && minor == 0 ? NULL : g_strdup_printf("%u.%u", major, minor);
    const GError *why = cx_plugin_info_get_error(info);
    json_builder_begin_object(b);
    add_nullable_string(b, "name", cx_plugin_info_get_name(info));
    add_nullable_string(b, "version", cx_plugin_info_get_version(info));
    add_nullable_string(b, "description", cx_plugin_info_get_description(info));
    add_nullable_string(b, "abi", abi);
    add_nullable_string(b, "path", cx_plugin_info_get_path(info));
    add_nullable_string(b, "status", why == NULL ? "ok" : "faulty");
    add_nullable_string(b, "reason", why != NULL ? why->message : NULL);
    json_builder_set_member_name(b, "shadows");
    json_builder_begin_array(b);
    for (const char *const *shadowed = cx_plugin_info_get_shadowed_paths(info);
         shadowed != NULL && *shadowed != NULL; shadowed++)
      json_builder_add_string_value(b, *shadowed);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "executor");
    json_builder_add_boolean_value(b, cx_plugin_info_has_executor(info));
    add_methods_json(b, info);
    json_builder_set_member_name(b, "options");
    add_options_json(b, info);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = cx_json_to_string(root, TRUE);
  printf("%s\n", text);
}

static void
print_human(const cx_registry *registry)
{
  g_autofree char *path = g_strjoinv(":", (char **)cx_registry_get_search_path(registry));
  printf("search path: %s\n", path);
  if (cx_registry_get_n_plugins(registry) == 0)
    printf("\nno plugins found; install some or add their directory to CELLEXEC_PLUGIN_PATH\n");
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++) {
    const cx_plugin_info *info = cx_registry_get_plugin(registry, i);
    guint major, minor;
    cx_plugin_info_get_abi(info, &major, &minor);
    const GError *why = cx_plugin_info_get_error(info);
    printf("\n%s", cx_plugin_info_get_name(info));
    if (cx_plugin_info_get_version(info) != NULL)
      printf(" %s", cx_plugin_info_get_version(info));
    if (major != 0 || minor != 0)
      printf(" (ABI %u.%u)", major, minor);
    printf(": %s\n", why == NULL ? "ok" : "FAULTY");
    if (cx_plugin_info_get_description(info) != NULL)
      printf("  %s\n", cx_plugin_info_get_description(info));
    printf("  path: %s\n", cx_plugin_info_get_path(info));
    for (const char *const *shadowed = cx_plugin_info_get_shadowed_paths(info);
         shadowed != NULL && *shadowed != NULL; shadowed++)
      printf("  shadows: %s (later on the plugin path, never loaded)\n", *shadowed);
    if (why != NULL)
      printf("  reason: %s\n", why->message);
    if (why == NULL)
      print_methods_human(info);
    for (const cx_option_spec *spec = cx_plugin_info_get_options(info); spec->name != NULL; spec++)
      printf("  option %s (%s, default %s): %s\n", spec->name, cx_option_type_name(spec->type),
             spec->default_value != NULL ? spec->default_value : "unset",
             spec->help != NULL ? spec->help : "");
  }
}

static gboolean
any_faulty(const cx_registry *registry)
{
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++)
    if (!cx_plugin_info_is_usable(cx_registry_get_plugin(registry, i)))
      return TRUE;
  return FALSE;
}

/* `cellexec plugins --help`: what it does, then its exit status and examples. */
static const char plugins_summary[] =
  "List every backend plugin on the search path: name, version, plugin ABI,\n"
  "file, status (ok, or FAULTY with the reason it cannot be used), the optional\n"
  "methods it implements (sessions, interrupt, query), its executor operations\n"
  "and its options (--json: the same as one JSON document, the methods under\n"
  "\"methods\").  The search path is $CELLEXEC_PLUGIN_PATH, the config's\n"
  "plugin-path, then the installed plugins directory; the first plugin of a\n"
  "name wins.\n"
  "\n"
  "With --check FILE.so, check one plugin before you ship it instead: the file\n"
  "is loaded alone (not the plugins on the search path; probed afresh), its\n"
  "descriptor and option schema are validated as the registry validates them,\n"
  "then a table of conformance cases runs against it, each with a backend of\n"
  "its own: the result bundle's shape (success, error with type, message and\n"
  "traceback, MIME bundles), and when the plugin has them, sessions (state\n"
  "kept, two sessions isolated), interrupt, query(\"info\") and the executor\n"
  "operations.  When the plugin runs Python (the cell print(6 * 7) prints 42),\n"
  "it must also capture stdout and stderr, give display() and the last\n"
  "expression as rich outputs, fail with the exception's type, message and\n"
  "traceback, honour the cwd, env and timeout run options, give each\n"
  "stateless call a fresh namespace and stop a running cell on interrupt;\n"
  "a plugin that does not run Python is held to the bundle's contract only,\n"
  "unless --python says it must run Python.  One line per case, \"ok - NAME\",\n"
  "\"FAIL - NAME: REASON\" or \"skip - NAME: REASON\" (what the plugin lacks),\n"
  "then \"N passed, N failed, N skipped\".  The plugin runs in a child process:\n"
  "a case in which it crashes, exits or hangs (--case-timeout) fails, saying\n"
  "so, and the check goes on with the next case.";
static const char plugins_description[] =
  "Exit status: 0 listed (with --check: every case passed); 1 with --strict,\n"
  "a plugin listed is FAULTY (with --check: a case failed); 2 usage or config\n"
  "error, or the --check file cannot be loaded (one line on stderr, the\n"
  "registry's reason); 3 the output could not be written to stdout.\n"
  "\n"
  "Examples:\n"
  "  cellexec plugins --strict                 # fail when any plugin is FAULTY\n"
  "  cellexec plugins --rescan                 # probe every plugin again\n"
  "  cellexec plugins --check ./hello.so       # before installing hello.so\n"
  "  cellexec plugins --check ./mine.so -o server=localhost --python";

int
cmd_plugins(int argc, char **argv)
{
  gboolean json = FALSE, strict = FALSE, rescan = FALSE, python = FALSE;
  double case_timeout = -1; /* not given */
  g_autofree char *config_path = NULL;
  g_autofree char *check = NULL;
  g_auto(GStrv) options = NULL;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the list as JSON", NULL },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &config_path, "Also search the plugin-path of this config file", "FILE" },
    { "strict", 0, 0, G_OPTION_ARG_NONE, &strict, "Exit with status 1 when a plugin listed is FAULTY", NULL },
    { "rescan", 0, 0, G_OPTION_ARG_NONE, &rescan, "Forget the cached probe verdicts first: probe every plugin again", NULL },
    { "check", 0, 0, G_OPTION_ARG_FILENAME, &check, "Load this one plugin file alone and run the conformance cases on it", "FILE.so" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &options, "With --check: a backend option for every case (repeatable)", "KEY=VALUE" },
    { "python", 0, 0, G_OPTION_ARG_NONE, &python, "With --check: the plugin must run Python; run the Python cases", NULL },
    { "case-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &case_timeout, "With --check: seconds one case may take before the plugin counts as hung (default " G_STRINGIFY(CONFORMANCE_CASE_TIMEOUT) ")", "S" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new(NULL);
  g_option_context_set_summary(context, plugins_summary);
  g_option_context_set_description(context, plugins_description);
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc > 1)
    return fail_usage("unexpected argument '%s'", argv[1]);
  if (check == NULL && (options != NULL || python || case_timeout != -1))
    return fail_usage("-o, --python and --case-timeout apply only with --check FILE.so");
  if (case_timeout != -1 && !(case_timeout > 0))
    return fail_usage("--case-timeout %g: give a number of seconds above 0", case_timeout);
  if (check != NULL && (json || strict || rescan || config_path != NULL))
    return fail_usage("--check takes no --json, --strict, --rescan or --config: it loads only its "
                      "file, and always probes it afresh");
  g_autoptr(GError) error = NULL;
  if (check != NULL) {
    int status = conformance_check_file(check, (const char *const *)options, python,
                                        case_timeout != -1 ? case_timeout : CONFORMANCE_CASE_TIMEOUT,
                                        &error);
    return error != NULL ? fail_usage("%s", error->message) : status;
  }

  g_autoptr(cx_config) config = cx_config_load(config_path, &error);
  if (config == NULL)
    return fail_usage("%s", error->message);
  if (rescan && !cx_registry_forget_probes(&error))
    return fail_usage("%s", error->message);
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (json)
    print_json(registry);
  else
    print_human(registry);
  return strict && any_faulty(registry) ? EXIT_CELL_FAILED : EXIT_CELL_OK;
}
