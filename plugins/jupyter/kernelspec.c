/* plugins/jupyter/kernelspec.c: finding a kernelspec by name in the
 * Jupyter data directories, as jupyter_client does, and reading its
 * kernel.json. */
#include "config.h"

#include <string.h>

#include "plugins/jupyter/kernel-private.h"

void
jk_spec_free(jk_spec *spec)
{
  if (spec == NULL)
    return;
  g_free(spec->name);
  g_free(spec->resource_dir);
  g_strfreev(spec->argv);
  g_strfreev(spec->env);
  g_free(spec);
}

/* The Jupyter data directories, in `jupyter --paths` order: JUPYTER_PATH,
 * the user's (JUPYTER_DATA_DIR or XDG data home), then the system ones. */
static GPtrArray *
data_dirs(void)
{
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  const char *path = g_getenv("JUPYTER_PATH");
  if (path != NULL && *path != '\0') {
    g_auto(GStrv) parts = g_strsplit(path, ":", -1);
    for (char **p = parts; *p != NULL; p++)
      if (**p != '\0')
        g_ptr_array_add(dirs, g_strdup(*p));
  }
  const char *user = g_getenv("JUPYTER_DATA_DIR");
  g_ptr_array_add(dirs, user != NULL && *user != '\0'
                          ? g_strdup(user)
                          : g_build_filename(g_get_user_data_dir(), "jupyter", NULL));
  g_ptr_array_add(dirs, g_strdup("/usr/local/share/jupyter"));
  g_ptr_array_add(dirs, g_strdup("/usr/share/jupyter"));
  return dirs;
}

/* "python3", "python": the interpreter configure chose, never the first
 * python3 on PATH (which may not have ipykernel). */
static char *
resolve_program(const char *argv0)
{
  if (strchr(argv0, '/') == NULL &&
      (g_str_equal(argv0, "python3") || g_str_equal(argv0, "python")))
    return g_strdup(CX_PYTHON_EXECUTABLE);
  return g_strdup(argv0);
}

static jk_spec *
spec_from_file(const char *name, const char *dir, const char *file, GError **error)
{
  g_autoptr(JsonNode) root = jp_json_from_file(file, error);
  if (root == NULL)
    return NULL;
  JsonObject *object = root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
  JsonArray *argv = object != NULL && json_object_has_member(object, "argv") &&
                        JSON_NODE_HOLDS_ARRAY(json_object_get_member(object, "argv"))
                      ? json_object_get_array_member(object, "argv") : NULL;
  if (argv == NULL || json_array_get_length(argv) == 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: the kernelspec %s has no \"argv\" list", file);
    return NULL;
  }
  jk_spec *spec = g_new0(jk_spec, 1);
  spec->name = g_strdup(name);
  spec->resource_dir = g_strdup(dir);
  guint n = json_array_get_length(argv);
  spec->argv = g_new0(char *, n + 1);
  for (guint i = 0; i < n; i++) {
    const char *arg = json_node_get_string(json_array_get_element(argv, i));
    spec->argv[i] = i == 0 ? resolve_program(arg ? arg : "") : g_strdup(arg ? arg : "");
  }
  const char *mode = cx__peer_get_string(object, "interrupt_mode", "signal");
  spec->signal_interrupt = g_strcmp0(mode, "message") != 0;
  if (json_object_has_member(object, "env") &&
      JSON_NODE_HOLDS_OBJECT(json_object_get_member(object, "env"))) {
    JsonObject *env = json_object_get_object_member(object, "env");
    GPtrArray *vars = g_ptr_array_new();
    g_autoptr(GList) members = json_object_get_members(env);
    for (GList *m = members; m != NULL; m = m->next) {
      const char *value = cx__peer_get_string(env, m->data, "");
      g_ptr_array_add(vars, g_strdup_printf("%s=%s", (char *)m->data, value));
    }
    g_ptr_array_add(vars, NULL);
    spec->env = (char **)g_ptr_array_free(vars, FALSE);
  }
  return spec;
}

jk_spec *
jk_spec_find(const char *name, GError **error)
{
  g_autoptr(GPtrArray) dirs = data_dirs();
  for (guint i = 0; i < dirs->len; i++) {
    g_autofree char *dir = g_build_filename(dirs->pdata[i], "kernels", name, NULL);
    g_autofree char *file = g_build_filename(dir, "kernel.json", NULL);
    if (g_file_test(file, G_FILE_TEST_IS_REGULAR))
      return spec_from_file(name, dir, file, error);
  }
  /* jupyter_client's native kernel: python3 is there without a spec. */
  if (g_str_equal(name, "python3")) {
    jk_spec *spec = g_new0(jk_spec, 1);
    spec->name = g_strdup(name);
    const char *argv[] = { CX_PYTHON_EXECUTABLE, "-m", "ipykernel_launcher", "-f",
                           "{connection_file}", NULL };
    spec->argv = g_strdupv((char **)argv);
    spec->signal_interrupt = TRUE;
    return spec;
  }
  g_autoptr(GString) searched = g_string_new(NULL);
  for (guint i = 0; i < dirs->len; i++)
    g_string_append_printf(searched, "%s%s/kernels", i ? ", " : "", (char *)dirs->pdata[i]);
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "jupyter: no kernelspec named \"%s\" in %s (list them with `jupyter kernelspec list`)",
              name, searched->str);
  return NULL;
}
