/* Opening a backend as a config file says: its plugin path and backend
 * sections, the backend's options, and the debug export and recording it
 * names; the backend keeps the config for use_subprocess cells. */
#include "config.h"

#include "lib/internal.h"

cx_backend *
cx_backend_open_with_config(cx_registry *registry, const cx_config *config, const char *name,
                            cx_options *options, GError **error)
{
  g_return_val_if_fail(config != NULL, NULL);
  cx_backend *backend = cx_backend_open(registry, name, options, error);
  if (backend != NULL)
    backend->config = cx__config_copy(config);
  return backend;
}

cx_backend *
cx_backend_open_configured(const char *config_path, const char *name, GError **error)
{
  g_autoptr(cx_config) config = cx_config_load(config_path, error);
  if (config == NULL)
    return NULL;
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (!cx_config_check_sections(config, registry, error))
    return NULL;
  if (name == NULL)
    name = cx_config_get_backend(config);
  const cx_plugin_info *plugin = cx_registry_lookup(registry, name, error);
  if (plugin == NULL)
    return NULL;
  cx_options *options = NULL;
  if (cx_plugin_info_is_usable(plugin) &&
      (options = cx_config_get_backend_options(config, plugin, error)) == NULL)
    return NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, name, options, error);
  if (backend == NULL)
    return NULL;
  const char *debug_export = cx_config_get_debug_export(config);
  if (debug_export != NULL) {
    backend->owned_exporter = cx_debug_exporter_new_for_path(debug_export, NULL, error);
    if (backend->owned_exporter == NULL)
      return NULL;
    cx_backend_set_debug_exporter(backend, backend->owned_exporter);
  }
  const char *record = cx_config_get_record(config);
  if (record != NULL && !cx_backend_record(backend, record, error))
    return NULL;
  backend->config = g_steal_pointer(&config);
  return g_steal_pointer(&backend);
}
