/* executor_demo: the executor operations a language runtime uses, end to end.
 *
 * Build against an installed cellexec with nothing but pkg-config:
 *   cc executor_demo.c -o executor_demo $(pkg-config --cflags --libs cellexec)
 *   ./executor_demo [BACKEND]        (default: local)
 *
 * It runs a prelude, extends it, evaluates an expression, runs a block with
 * `return`, calls a host function bound into Python, describes a type, and
 * writes every step to a Markdown debug export.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cellexec/cellexec.h>

/* The host function: Python calls it as shout(text, times=2). */
static JsonNode *
shout(JsonObject *arguments, gpointer user_data, GError **error)
{
  const char *text = json_object_get_string_member(arguments, "text");
  gint64 times = json_object_get_int_member(arguments, "times");
  GString *out = g_string_new(NULL);
  for (gint64 i = 0; i < times; i++)
    g_string_append(out, text);
  g_autofree char *upper = g_utf8_strup(out->str, -1);
  g_string_free(out, TRUE);
  return json_node_init_string(json_node_alloc(), upper);
}

static void
show(const char *what, JsonNode *value)
{
  g_autofree char *text = json_to_string(value, FALSE);
  printf("%-26s %s\n", what, text);
  json_node_unref(value);
}

static int
fail(GError *error)
{
  fprintf(stderr, "executor_demo: %s\n", error->message);
  const cx_python_error *python = cx_error_get_python(error);
  if (python != NULL)
    fprintf(stderr, "%s", python->traceback);
  g_error_free(error);
  return 1;
}

int
main(int argc, char **argv)
{
  const char *name = argc > 1 ? argv[1] : "local";
  GError *error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open_configured(NULL, name, &error);
  if (backend == NULL)
    return fail(error);
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  if (session == NULL)
    return fail(error);

  g_autofree char *export_path = cx_default_debug_export_path("executor_demo.kedi");
  cx_debug_exporter *exporter = cx_debug_exporter_new_markdown(export_path, NULL, &error);
  if (exporter == NULL)
    return fail(error);
  cx_session_set_debug_exporter(session, exporter);

  cx_env *env = cx_session_execute_prelude(session, "rate = 3\ndef scale(x):\n    return x * rate\n", &error);
  if (env == NULL)
    return fail(error);
  if (cx_session_execute_prelude_incremental(session, env, "offset = 100", &error) == NULL)
    return fail(error);

  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_int_member(locals, "n", 4);
  JsonNode *value = cx_env_evaluate_inline(env, "scale(n) + offset", locals, &error);
  if (value == NULL)
    return fail(error);
  show("evaluate_inline:", value);

  value = cx_env_execute_block(env, "total = sum(scale(i) for i in range(n))\nreturn total", locals, &error);
  if (value == NULL)
    return fail(error);
  show("execute_block:", value);

  const char *const params[] = { "text", "times", NULL };
  g_autoptr(JsonObject) defaults = json_object_new();
  json_object_set_int_member(defaults, "times", 2);
  if (!cx_env_create_dynamic_function(env, "shout", params, defaults, shout, NULL, NULL, &error))
    return fail(error);
  value = cx_env_evaluate_inline(env, "shout('hey') + ' / ' + shout('ho', times=3)", NULL, &error);
  if (value == NULL)
    return fail(error);
  show("dynamic function:", value);

  value = cx_env_evaluate_type_expression(env, "list[int] | None", &error);
  if (value == NULL)
    return fail(error);
  show("evaluate_type_expression:", value);

  cx_env_free(env);
  cx_session_set_debug_exporter(session, NULL);
  cx_debug_exporter_free(exporter);
  printf("debug export:              %s\n", export_path);
  return 0;
}
