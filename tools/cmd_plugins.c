/* cellexec plugins: list every plugin found, usable or faulty. */
#include "config.h"

#include <stdio.h>

#include "tools/commands.h"

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
    json_builder_set_member_name(b, "executor");
    json_builder_add_boolean_value(b, cx_plugin_info_has_executor(info));
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
    if (why != NULL)
      printf("  reason: %s\n", why->message);
    if (why == NULL)
      printf("  executor operations: %s\n", cx_plugin_info_has_executor(info) ? "yes" : "no");
    for (const cx_option_spec *spec = cx_plugin_info_get_options(info); spec->name != NULL; spec++)
      printf("  option %s (%s, default %s): %s\n", spec->name, cx_option_type_name(spec->type),
             spec->default_value != NULL ? spec->default_value : "unset",
             spec->help != NULL ? spec->help : "");
  }
}

int
cmd_plugins(int argc, char **argv)
{
  gboolean json = FALSE;
  g_autofree char *config_path = NULL;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the list as JSON", NULL },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &config_path, "Also search the plugin-path of this config file", "FILE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new(NULL);
  g_option_context_set_summary(context,
    "List every backend plugin on the search path: name, version, plugin ABI,\n"
    "file, status (ok, or FAULTY with the reason it cannot be used) and options.\n"
    "The search path is $CELLEXEC_PLUGIN_PATH, the config's plugin-path, then\n"
    "the installed plugins directory; the first plugin of a name wins.");
  g_option_context_set_description(context,
    "Exit status: 0 listed, 2 usage or config error, 3 the list could not be\n"
    "written to stdout.");
  g_option_context_add_main_entries(context, entries, NULL);
  g_set_prgname(argv[0]);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc > 1)
    return fail_usage("unexpected argument '%s'", argv[1]);

  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load(config_path, &error);
  if (config == NULL)
    return fail_usage("%s", error->message);
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (json)
    print_json(registry);
  else
    print_human(registry);
  return EXIT_CELL_OK;
}
