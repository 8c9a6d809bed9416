/* The executor operations: the conformance kit's table of executor cases
 * (tools/conformance_executor.c, which `cellexec plugins --check` runs on
 * any plugin), run against every backend on the plugin path that
 * implements the executor vtable.  A third-party backend runs the same
 * table with
 *   CELLEXEC_PLUGIN_PATH=/its/dir CELLEXEC_EXECUTOR_BACKENDS=its-name tests/test_executor
 * or with `cellexec plugins --check its-name.so`.
 */
#include "config.h"

#include <string.h>

#include "cx_test.h"
#include "tools/conformance.h"

static cx_registry *registry;
static GPtrArray *backends; /* names of the backends under test */

/* The executor cases use sessions only: a jupyter backend need not keep a
 * kernel warm for stateless cells (a second kernel started per case). */
static const char *const *
options_for(const char *backend)
{
  static const char *const no_pool[] = { "pool-size=0", NULL };
  return strcmp(backend, "jupyter") == 0 ? no_pool : NULL;
}

/* The test running now is "test_" and the name of a case of the table: run
 * that case on every backend under test. */
static void
run_current_case(void)
{
  const char *test = CU_get_current_test()->pName;
  const conformance_case *kase = conformance_executor_cases;
  while (kase->name != NULL && strcmp(test + strlen("test_"), kase->name) != 0)
    kase++;
  CU_ASSERT_PTR_NOT_NULL_FATAL(kase->name);
  CU_ASSERT_TRUE_FATAL(backends->len > 0);
  guint ran = 0;
  for (guint i = 0; i < backends->len; i++) {
    const char *name = g_ptr_array_index(backends, i);
    conformance_target target;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(conformance_target_init(&target, registry, name, options_for(name), &error));
    target.python = TRUE;
    g_autofree char *reason = NULL;
    conformance_outcome outcome = conformance_run_case(&target, kase, &reason);
    conformance_target_clear(&target);
    if (outcome != CONFORMANCE_PASS)
      fprintf(stderr, "\n  [%s] %s: %s\n", name, outcome == CONFORMANCE_FAIL ? "FAIL" : "skip", reason);
    CU_ASSERT_NOT_EQUAL(outcome, CONFORMANCE_FAIL);
    ran += outcome != CONFORMANCE_SKIP;
  }
  if (ran == 0)
    cx_test_skip("no backend under test has what %s needs", kase->name);
}

void
cx_test_register(void)
{
  const char *const path[] = { cx_test_plugins_dir(), NULL };
  const char *extra = g_getenv("CELLEXEC_PLUGIN_PATH");
  g_auto(GStrv) dirs = g_strsplit(extra != NULL ? extra : "", ":", -1);
  registry = dirs[0] != NULL && *dirs[0] != '\0' ? cx_registry_new_for_path((const char *const *)dirs)
                                                  : cx_registry_new_for_path(path);
  backends = g_ptr_array_new_with_free_func(g_free);
  const char *only = g_getenv("CELLEXEC_EXECUTOR_BACKENDS");
  g_auto(GStrv) wanted = only != NULL ? g_strsplit(only, ",", -1) : NULL;
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++) {
    const cx_plugin_info *info = cx_registry_get_plugin(registry, i);
    const char *name = cx_plugin_info_get_name(info);
    if (cx_plugin_info_has_executor(info) && (wanted == NULL || g_strv_contains((const char *const *)wanted, name)))
      g_ptr_array_add(backends, g_strdup(name));
  }
  fprintf(stderr, "executor backends under test:");
  for (guint i = 0; i < backends->len; i++)
    fprintf(stderr, " %s", (const char *)g_ptr_array_index(backends, i));
  fprintf(stderr, "\n");

  CU_pSuite suite = CU_add_suite("executor", NULL, NULL);
  g_assert(suite != NULL);
  for (const conformance_case *kase = conformance_executor_cases; kase->name != NULL; kase++) {
    g_autofree char *test = g_strconcat("test_", kase->name, NULL); /* CUnit copies it */
    g_assert(CU_add_test(suite, test, run_current_case) != NULL);
  }
}
