/* bench/backend_options.c: see backend_options.h. */
#include "config.h"

#include <string.h>

#include "bench/backend_options.h"

static gboolean
set_all(cx_options *values, const char *const *options, GError **error)
{
  for (const char *const *option = options; option != NULL && *option != NULL; option++) {
    const char *equals = strchr(*option, '=');
    if (equals == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "-o %s: expected KEY=VALUE", *option);
      return FALSE;
    }
    g_autofree char *key = g_strndup(*option, equals - *option);
    if (!cx_options_set(values, key, equals + 1, error))
      return FALSE;
  }
  return TRUE;
}

cx_backend *
bench_open_backend(cx_registry *registry, const char *name, char **options,
                   const char *const *more, GError **error)
{
  const cx_plugin_info *info = cx_registry_lookup(registry, name, error);
  if (info == NULL)
    return NULL;
  if (!cx_plugin_info_is_usable(info)) {
    g_propagate_error(error, g_error_copy(cx_plugin_info_get_error(info)));
    return NULL;
  }
  cx_options *values = cx_options_new(name, cx_plugin_info_get_options(info));
  if (!set_all(values, (const char *const *)options, error) || !set_all(values, more, error)) {
    cx_options_free(values);
    return NULL;
  }
  return cx_backend_open(registry, name, values, error);
}
