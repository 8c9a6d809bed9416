/* Which optional methods a plugin implements, as the registry read them
 * from its descriptor (cx_plugin_info_get_optional_methods). */
#include "config.h"

#include <string.h>

#include "tools/conformance_methods.h"

const char *const conformance_executor_op_names[CONFORMANCE_N_EXECUTOR_OPS] = {
  "execute_prelude", "execute_prelude_incremental", "evaluate_inline", "execute_block",
  "execute_side_effects", "create_dynamic_function", "evaluate_type_expression",
  "set_debug_exporter", "env_snapshot", "env_free",
};

gboolean
conformance_methods_read(const cx_plugin_info *info, conformance_methods *methods)
{
  memset(methods, 0, sizeof *methods);
  if (info == NULL || !cx_plugin_info_is_usable(info))
    return FALSE;
  const char *const *names = cx_plugin_info_get_optional_methods(info);
  gboolean session_methods[3] = { FALSE, FALSE, FALSE };
  static const char *const session_names[3] = { "session_open", "session_run_cell", "session_close" };
  for (const char *const *name = names; name != NULL && *name != NULL; name++) {
    for (guint i = 0; i < 3; i++)
      session_methods[i] |= strcmp(*name, session_names[i]) == 0;
    methods->interrupt |= strcmp(*name, "interrupt") == 0;
    methods->query |= strcmp(*name, "query") == 0;
    for (guint i = 0; i < CONFORMANCE_N_EXECUTOR_OPS; i++)
      methods->executor_ops[i] |= strcmp(*name, conformance_executor_op_names[i]) == 0;
  }
  methods->sessions = session_methods[0] && session_methods[1] && session_methods[2];
  methods->executor = cx_plugin_info_has_executor(info);
  methods->known = TRUE;
  return TRUE;
}

static char *
join_or_none(GPtrArray *names)
{
  if (names->len == 0)
    return g_strdup("none");
  g_ptr_array_add(names, NULL);
  return g_strjoinv(", ", (char **)names->pdata);
}

char *
conformance_methods_describe_backend(const conformance_methods *methods)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  if (methods->sessions)
    g_ptr_array_add(names, "sessions");
  if (methods->interrupt)
    g_ptr_array_add(names, "interrupt");
  if (methods->query)
    g_ptr_array_add(names, "query");
  return join_or_none(names);
}

char *
conformance_methods_describe_executor(const conformance_methods *methods)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint i = 0; i < CONFORMANCE_N_EXECUTOR_OPS; i++)
    if (methods->executor_ops[i])
      g_ptr_array_add(names, (gpointer)conformance_executor_op_names[i]);
  return join_or_none(names);
}
