/* tests/fuzz/fuzz_config.c: libFuzzer target for the config file parser
 * (cx_config_load_data) and what a config hands out. */
#include "config.h"

#include <cellexec/cellexec.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load_data(text, "fuzz", &error);
  if (config == NULL)
    return 0;
  (void)cx_config_get_backend(config);
  (void)cx_config_get_plugin_path(config);
  (void)cx_config_get_debug_export(config);
  (void)cx_config_get_use_subprocess_backend(config);
  (void)cx_config_get_record(config);
  return 0;
}
