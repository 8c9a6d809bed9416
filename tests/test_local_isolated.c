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

/* Without site-packages there is no IPython: what still works, and what
 * says clearly that it needs IPython. */
static void
test_local_isolated_works_without_ipython(void)
{
  g_autoptr(cx_backend) backend = open_isolated();
  g_autoptr(cx_result) probe = cx_test_run_cell(
    backend, "import importlib.util\nimportlib.util.find_spec('IPython') is None", NULL);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(probe, 0),
                                                       "text/plain"), "True");

  /* The _repr_*_ protocol and display ids, by cellexec's own display(). */
  g_autoptr(cx_result) shown = cx_test_run_cell(
    backend,
    "class Page:\n"
    "    def _repr_html_(self):\n"
    "        return '<b>page</b>'\n"
    "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
    "        return {'text/markdown': '**page**'}, {'text/markdown': {'k': 1}}\n"
    "display(Page(), display_id='p')\n"
    "display('second', display_id='p', update=True)\n"
    "print('after')\n"
    "Page()",
    NULL);
  CX_ASSERT_CELL_OK(shown);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(shown);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(outputs), 3);
  JsonObject *updated = json_array_get_object_element(outputs, 0);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(
    json_object_get_object_member(updated, "data"), "text/plain"), "'second'");
  JsonObject *value = json_object_get_object_member(json_array_get_object_element(outputs, 2),
                                                    "data");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(value, "text/html"), "<b>page</b>");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(value, "text/markdown"), "**page**");
  CU_ASSERT_TRUE(json_object_has_member(value, "text/plain"));

  /* A cell in IPython's syntax says what is missing and why; input() still fails
   * as in a kernel. */
  static const char *const magics[] = { "%time 1", "!echo hi", "x = !ls", "len?", "%%capture\n1" };
  for (gsize i = 0; i < G_N_ELEMENTS(magics); i++) {
    g_autoptr(cx_result) magic = cx_test_run_cell(backend, magics[i], NULL);
    CX_ASSERT_ERROR_TYPE(magic, "SyntaxError");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(magic), "needs IPython");
    CX_ASSERT_CONTAINS(cx_result_get_error_message(magic),
                       "cannot be imported by " CX_PYTHON_EXECUTABLE " in isolated mode");
  }
  g_autoptr(cx_result) asked = cx_test_run_cell(backend, "input()", NULL);
  CX_ASSERT_ERROR_TYPE(asked, "StdinNotImplementedError");
  g_autoptr(cx_result) plain = cx_test_run_cell(backend, "get_ipython() is None", NULL);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(plain, 0),
                                                       "text/plain"), "True");
}

/* Without IPython, a formatter that raises is shown and left out, as
 * IPython's are: the cell succeeds, and a value with no formatter left is
 * not shown. */
static void
test_local_isolated_raising_formatter_is_shown(void)
{
  g_autoptr(cx_backend) backend = open_isolated();
  g_autoptr(cx_result) broken = cx_test_run_cell(
    backend,
    "class Broken:\n"
    "    def _repr_html_(self):\n"
    "        raise RuntimeError('no html')\n"
    "    def __repr__(self):\n"
    "        raise ValueError('no repr')\n"
    "Broken()",
    NULL);
  CX_ASSERT_CELL_OK(broken);
  g_autoptr(JsonArray) failures = cx_result_list_outputs(broken);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(failures), 2);
  static const char *const raised[] = { "RuntimeError", "ValueError" };
  for (guint i = 0; i < 2; i++) {
    JsonObject *failure = json_array_get_object_element(failures, i);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(failure, "output_type"), "error");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(failure, "ename"), raised[i]);
  }
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_local_isolated_has_no_site_packages", test_local_isolated_has_no_site_packages },
    { "test_local_isolated_reports_it", test_local_isolated_reports_it },
    { "test_local_isolated_works_without_ipython", test_local_isolated_works_without_ipython },
    { "test_local_isolated_raising_formatter_is_shown",
      test_local_isolated_raising_formatter_is_shown },
    { NULL }
  };
  cx_test_add_suite("local: isolated", tests);
}
