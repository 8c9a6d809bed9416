/* The local backend with isolated = true: `python3 -I -S` semantics.  A
 * program of its own, since a process starts its interpreter only once. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

static cx_backend *
open_isolated(void)
{
  const char *dirs[] = { cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(dirs);
  g_autoptr(GError) error = NULL;
  const cx_plugin_info *info = cx_registry_lookup(registry, "local", &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_options) options = cx_options_new("local", cx_plugin_info_get_options(info));
  cx_options_set(options, "isolated", "true", &error);
  CX_ASSERT_NO_ERROR(error);
  cx_backend *backend = cx_backend_open(registry, "local", g_steal_pointer(&options), &error);
  CX_ASSERT_NO_ERROR(error);
  return backend;
}

static void
test_local_isolated_has_no_site_packages(void)
{
  g_autoptr(cx_backend) backend = open_isolated();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_backend_run_cell(
    backend,
    "import sys\n"
    "print(sys.flags.isolated, sys.flags.no_site, sys.flags.no_user_site)\n"
    "print('' in sys.path, any('packages' in p for p in sys.path), 'site' in sys.modules)\n"
    "print(sys.executable)\n"
    "import json, ctypes\n"
    "exit(2)",
    NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *expected = g_strdup_printf("1 1 1\nFalse False False\n%s\n", CX_PYTHON_EXECUTABLE);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(result, NULL), expected);
  /* exit() exists without site, and still only ends the cell. */
  CU_ASSERT_STRING_EQUAL(cx_result_get_error_type(result), "SystemExit");
}

static void
test_local_isolated_reports_it(void)
{
  g_autoptr(cx_backend) backend = open_isolated();
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", &error);
  CX_ASSERT_NO_ERROR(error);
  JsonObject *object = json_node_get_object(info);
  CU_ASSERT_TRUE(json_object_get_boolean_member(object, "isolated"));
  CU_ASSERT_FALSE(json_object_get_boolean_member(object, "site"));
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_local_isolated_has_no_site_packages", test_local_isolated_has_no_site_packages },
    { "test_local_isolated_reports_it", test_local_isolated_reports_it },
    { NULL }
  };
  cx_test_add_suite("local: isolated", tests);
}
