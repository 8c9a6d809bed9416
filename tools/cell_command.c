/* What the commands that run cells share (see cell_command.h). */
#include "config.h"

#include <string.h>

#include "tools/cell_command.h"
#include "tools/interrupts.h"

/* TRUE when SCHEMA (may be NULL) has KEY. */
static gboolean
schema_has(const cx_option_spec *schema, const char *key)
{
  for (; schema != NULL && schema->name != NULL; schema++)
    if (g_str_equal(schema->name, key))
      return TRUE;
  return FALSE;
}

/* Set "KEY=VALUE" ITEM in OPTIONS; with ONLY_UNSET, only a key of SCHEMA
 * that holds no value yet. */
static gboolean
set_item(cx_options *options, const cx_option_spec *schema, const char *item,
         gboolean only_unset, GError **error)
{
  const char *eq = strchr(item, '=');
  if (eq == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "option %s: write KEY=VALUE", item);
    return FALSE;
  }
  g_autofree char *key = g_strndup(item, (gsize)(eq - item));
  if (only_unset && (!schema_has(schema, key) || cx_options_has(options, key)))
    return TRUE;
  return cx_options_set(options, key, eq + 1, error);
}

/* The backend NAME with CONFIG's options for it, OVERRIDES on top, and
 * DEFAULTS where both leave a key unset. */
static cx_backend *
open_with_options(cx_registry *registry, const cx_config *config, const char *name,
                  char **overrides, const char *const *defaults, GError **error)
{
  const cx_plugin_info *plugin = cx_registry_lookup(registry, name, error);
  if (plugin == NULL)
    return NULL;
  if (!cx_plugin_info_is_usable(plugin))
    return cx_backend_open(registry, name, NULL, error); /* fails with the reason */
  g_autoptr(cx_options) options = cx_config_get_backend_options(config, plugin, error);
  if (options == NULL)
    return NULL;
  const cx_option_spec *schema = cx_plugin_info_get_options(plugin);
  for (char **item = overrides; item != NULL && *item != NULL; item++)
    if (!set_item(options, schema, *item, FALSE, error))
      return NULL;
  for (const char *const *item = defaults; item != NULL && *item != NULL; item++)
    if (!set_item(options, schema, *item, TRUE, error))
      return NULL;
  cx_backend *backend =
    cx_backend_open_with_config(registry, config, name, g_steal_pointer(&options), error);
  const char *const *shadowed = cx_plugin_info_get_shadowed_paths(plugin);
  for (; backend != NULL && shadowed != NULL && *shadowed != NULL; shadowed++)
    g_printerr("cellexec: warning: backend '%s' is %s, which shadows %s further along the "
               "plugin path; remove one of them or reorder the plugin path\n",
               name, cx_plugin_info_get_path(plugin), *shadowed);
  return backend;
}

gboolean
open_requested_backend(const backend_request *request, opened_backend *opened, GError **error)
{
  g_autoptr(cx_config) config = cx_config_load(request->config, error);
  if (config == NULL)
    return FALSE;
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  /* As `config check` says: a misspelled section's limits would not apply. */
  if (!cx_config_check_sections(config, registry, error))
    return FALSE;
  const char *name = request->backend != NULL ? request->backend : cx_config_get_backend(config);
  g_autoptr(cx_backend) backend =
    open_with_options(registry, config, name, request->options, request->defaults, error);
  if (backend == NULL)
    return FALSE;
  const char *record = request->record != NULL ? request->record : cx_config_get_record(config);
  if (record != NULL && !cx_backend_record(backend, record, error))
    return FALSE;
  const char *debug_export = request->debug_export != NULL ? request->debug_export
                                                           : cx_config_get_debug_export(config);
  if (debug_export != NULL) {
    opened->exporter = cx_debug_exporter_new_for_path(debug_export, NULL, error);
    if (opened->exporter == NULL)
      return FALSE;
    cx_backend_set_debug_exporter(backend, opened->exporter);
  }
  opened->backend = g_steal_pointer(&backend);
  interrupts_watch(opened->backend);
  return TRUE;
}

void
opened_backend_clear(opened_backend *opened)
{
  interrupts_unwatch();
  if (opened->backend != NULL && opened->exporter != NULL)
    cx_backend_set_debug_exporter(opened->backend, NULL);
  g_clear_pointer(&opened->backend, cx_backend_free);
  g_clear_pointer(&opened->exporter, cx_debug_exporter_free);
}

cx_run_options *
cell_run_options_new(const char *cwd, char **env, const char *timeout, GError **error)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  if (cwd != NULL)
    cx_run_options_set_cwd(run, cwd);
  for (char **item = env; item != NULL && *item != NULL; item++)
    if (!cx_run_options_add_env(run, *item)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "-e %s: write KEY=VALUE", *item);
      return NULL;
    }
  double seconds = 0;
  if (timeout != NULL && !cx_timeout_parse(timeout, &seconds, error)) {
    g_prefix_error(error, "--timeout: ");
    return NULL;
  }
  cx_run_options_set_timeout(run, seconds);
  return g_steal_pointer(&run);
}
