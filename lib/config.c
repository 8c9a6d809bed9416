/* Config files: GKeyFile with a [cellexec] group and one group per backend. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "lib/internal.h"

#define MAIN_GROUP "cellexec"
#define DEFAULT_BACKEND "local"

struct cx_config {
  GKeyFile *keys;
  char *path;          /* NULL when not from a file */
  char *origin;        /* for messages: the path, or "built-in defaults" */
  char *backend;
  char **plugin_path;
  char *debug_export;
  char *use_subprocess_backend;
  char *record;
};

static const char *const main_keys[] = { "backend", "plugin-path", "debug-export",
                                         "use-subprocess-backend", "record", NULL };

cx_config *
cx_config_new_empty(void)
{
  cx_config *config = g_new0(cx_config, 1);
  config->keys = g_key_file_new();
  config->origin = g_strdup("built-in defaults");
  config->backend = g_strdup(DEFAULT_BACKEND);
  config->use_subprocess_backend = g_strdup(CX__DEFAULT_USE_SUBPROCESS_BACKEND);
  config->plugin_path = g_new0(char *, 1);
  return config;
}

void
cx_config_free(cx_config *config)
{
  if (config == NULL)
    return;
  g_key_file_unref(config->keys);
  g_free(config->path);
  g_free(config->origin);
  g_free(config->backend);
  g_strfreev(config->plugin_path);
  g_free(config->debug_export);
  g_free(config->use_subprocess_backend);
  g_free(config->record);
  g_free(config);
}

/* [cellexec] KEY into *VALUE (NULL when absent).  A value GKeyFile cannot
 * read (a bad escape sequence) is an error, not a missing key. */
static gboolean
get_main_string(const cx_config *config, const char *key, char **value, GError **error)
{
  g_autoptr(GError) key_error = NULL;
  *value = g_key_file_get_string(config->keys, MAIN_GROUP, key, &key_error);
  if (*value != NULL || g_error_matches(key_error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
      g_error_matches(key_error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND))
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: [" MAIN_GROUP "] %s: %s", config->origin, key,
              key_error->message);
  return FALSE;
}

/* [cellexec] KEY naming a plugin into *NAME, which keeps its default when
 * the key is absent; an empty name is an error. */
static gboolean
get_main_plugin_name(const cx_config *config, const char *key, char **name, GError **error)
{
  g_autofree char *value = NULL;
  if (!get_main_string(config, key, &value, error))
    return FALSE;
  if (value == NULL)
    return TRUE;
  g_strstrip(value);
  if (*value == '\0') {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "%s: [" MAIN_GROUP "] %s is empty; name a plugin such as '%s'", config->origin,
                key, *name);
    return FALSE;
  }
  g_free(*name);
  *name = g_steal_pointer(&value);
  return TRUE;
}

/* Read the [cellexec] group; unknown keys there are errors right away, as
 * they cannot depend on which plugins are installed. */
static gboolean
read_main_group(cx_config *config, GError **error)
{
  if (!g_key_file_has_group(config->keys, MAIN_GROUP))
    return TRUE;
  g_auto(GStrv) keys = g_key_file_get_keys(config->keys, MAIN_GROUP, NULL, NULL);
  for (char **key = keys; *key != NULL; key++) {
    if (g_strv_contains(main_keys, *key))
      continue;
    const char *closest = cx_suggest(*key, main_keys);
    g_autofree char *valid = g_strjoinv(", ", (char **)main_keys);
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "%s: unknown key '%s' in [" MAIN_GROUP "]%s%s%s; valid keys are %s",
                config->origin, *key, closest ? "; did you mean '" : "", closest ? closest : "",
                closest ? "'?" : "", valid);
    return FALSE;
  }
  g_autofree char *path = NULL;
  if (!get_main_plugin_name(config, "backend", &config->backend, error) ||
      !get_main_string(config, "plugin-path", &path, error) ||
      !get_main_string(config, "debug-export", &config->debug_export, error) ||
      !get_main_string(config, "record", &config->record, error) ||
      !get_main_plugin_name(config, "use-subprocess-backend", &config->use_subprocess_backend,
                            error))
    return FALSE;
  if (path != NULL) {
    g_strfreev(config->plugin_path);
    /* GKeyFile lists use ';'; ':' is accepted too, as in CELLEXEC_PLUGIN_PATH. */
    config->plugin_path = g_regex_split_simple("[;:]", g_strstrip(path), 0, 0);
  }
  if (config->debug_export != NULL && *g_strstrip(config->debug_export) == '\0')
    g_clear_pointer(&config->debug_export, g_free);
  if (config->record != NULL && *g_strstrip(config->record) == '\0')
    g_clear_pointer(&config->record, g_free);
  return TRUE;
}

/* GKeyFile resolves a key set twice to its last value, silently; a config
 * saying two things is more likely a mistake than an override. */
static gboolean
check_duplicate_keys(const cx_config *config, GError **error)
{
  g_auto(GStrv) groups = g_key_file_get_groups(config->keys, NULL);
  for (char **group = groups; *group != NULL; group++) {
    /* get_keys lists every occurrence of a key, repeated groups merged. */
    g_auto(GStrv) keys = g_key_file_get_keys(config->keys, *group, NULL, NULL);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (char **key = keys; key != NULL && *key != NULL; key++)
      if (!g_hash_table_add(seen, *key)) {
        g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                    "%s: key '%s' is set more than once in [%s]; keep one", config->origin, *key,
                    *group);
        return FALSE;
      }
  }
  return TRUE;
}

/* The 1-based line of DATA that OFFSET falls on, for messages. */
static guint
line_of(const char *data, gsize offset)
{
  guint line = 1;
  for (const char *c = data; c < data + offset; c++)
    line += *c == '\n';
  return line;
}

/* Parse LENGTH bytes of config text.  GKeyFile would stop at a NUL without
 * a word, and hand back values that are not UTF-8 as missing: both are
 * errors here, before it sees the text. */
static cx_config *
load_text(const char *data, gsize length, const char *origin, GError **error)
{
  g_autoptr(cx_config) config = cx_config_new_empty();
  g_free(config->origin);
  config->origin = g_strdup(origin != NULL ? origin : "config");
  /* Measured before a byte order mark is taken off: the readers stop one
   * byte past the limit, and what they cut must not pass for the end. */
  if (length > CX__CONFIG_MAX_SIZE) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: larger than %d bytes; a config file is "
                "a few lines of text", config->origin, CX__CONFIG_MAX_SIZE);
    return NULL;
  }
  /* Editors on Windows start UTF-8 files with a byte order mark, which
   * GKeyFile would take for a stray character of the first line. */
  if (length >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
    data += 3;
    length -= 3;
  }
  const char *nul = memchr(data, '\0', length);
  if (nul != NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "%s: line %u contains a NUL byte; a config file is UTF-8 text", config->origin,
                line_of(data, (gsize)(nul - data)));
    return NULL;
  }
  const char *bad = NULL;
  if (!g_utf8_validate_len(data, length, &bad)) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: line %u is not valid UTF-8",
                config->origin, line_of(data, (gsize)(bad - data)));
    return NULL;
  }
  g_autoptr(GError) parse_error = NULL;
  if (!g_key_file_load_from_data(config->keys, data, length, G_KEY_FILE_NONE, &parse_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: %s", config->origin, parse_error->message);
    return NULL;
  }
  if (!check_duplicate_keys(config, error) || !read_main_group(config, error))
    return NULL;
  return g_steal_pointer(&config);
}

cx_config *
cx_config_load_data(const char *data, const char *origin, GError **error)
{
  g_return_val_if_fail(data != NULL, NULL);
  /* strnlen: a longer text is refused without measuring all of it. */
  return load_text(data, strnlen(data, CX__CONFIG_MAX_SIZE + 1), origin, error);
}

/* PATH's contents, at most CX__CONFIG_MAX_SIZE + 1 bytes (enough to tell
 * it is too long): a path such as /dev/zero must not be read forever. */
static char *
read_bounded(const char *path, gsize *length, GError **error)
{
  int fd = g_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
  if (fd < 0) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "cannot read config file %s: %s", path,
                g_strerror(saved));
    return NULL;
  }
  int saved = 0;
  char *data = cx__read_fd_bounded(fd, CX__CONFIG_MAX_SIZE, 4096, length, &saved);
  close(fd);
  if (data == NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "cannot read config file %s: %s", path,
                g_strerror(saved));
  return data;
}

cx_config *
cx_config_load_file(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  gsize length = 0;
  g_autofree char *data = read_bounded(path, &length, error);
  if (data == NULL)
    return NULL;
  cx_config *config = load_text(data, length, path, error);
  if (config != NULL)
    config->path = g_strdup(path);
  return config;
}

cx_config *
cx_config_load(const char *path, GError **error)
{
  if (path != NULL)
    return cx_config_load_file(path, error);
  const char *env = g_getenv("CELLEXEC_CONFIG");
  if (env != NULL && *env != '\0')
    return cx_config_load_file(env, error);

  /* Not g_get_user_config_dir(): GLib caches it for the life of the process. */
  const char *xdg = g_getenv("XDG_CONFIG_HOME");
  g_autofree char *user =
    xdg != NULL && g_path_is_absolute(xdg)
      ? g_build_filename(xdg, "cellexec", "config", NULL)
      : g_build_filename(g_get_home_dir(), ".config", "cellexec", "config", NULL);
  const char *const candidates[] = { user, "/etc/cellexec/config", NULL };
  for (const char *const *candidate = candidates; *candidate != NULL; candidate++)
    if (g_file_test(*candidate, G_FILE_TEST_EXISTS))
      return cx_config_load_file(*candidate, error);
  return cx_config_new_empty();
}

const char *
cx_config_get_path(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return config->path;
}

const char *
cx_config_get_backend(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return config->backend;
}

const char *const *
cx_config_get_plugin_path(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return (const char *const *)config->plugin_path;
}

const char *
cx_config_get_debug_export(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return config->debug_export;
}

const char *
cx_config_get_record(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return config->record;
}

cx_config *
cx__config_copy(const cx_config *config)
{
  g_autofree char *text = g_key_file_to_data(config->keys, NULL, NULL);
  cx_config *copy = cx_config_load_data(text, config->origin, NULL);
  g_assert(copy != NULL); /* it parsed once */
  g_free(copy->path);
  copy->path = g_strdup(config->path);
  return copy;
}

const char *
cx_config_get_use_subprocess_backend(const cx_config *config)
{
  g_return_val_if_fail(config != NULL, NULL);
  return config->use_subprocess_backend;
}

cx_options *
cx_config_get_backend_options(const cx_config *config, const cx_plugin_info *plugin,
                              GError **error)
{
  g_return_val_if_fail(config != NULL && plugin != NULL, NULL);
  const char *name = cx_plugin_info_get_name(plugin);
  g_autoptr(cx_options) options = cx_options_new(name, cx_plugin_info_get_options(plugin));
  if (!g_key_file_has_group(config->keys, name))
    return g_steal_pointer(&options);

  g_auto(GStrv) keys = g_key_file_get_keys(config->keys, name, NULL, NULL);
  for (char **key = keys; *key != NULL; key++) {
    g_autofree char *value = g_key_file_get_string(config->keys, name, *key, NULL);
    g_autoptr(GError) option_error = NULL;
    if (value == NULL) /* escape sequences GKeyFile rejects */
      value = g_key_file_get_value(config->keys, name, *key, NULL);
    if (!cx_options_set(options, *key, value, &option_error)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "%s: [%s] %s", config->origin, name,
                  option_error->message);
      return NULL;
    }
  }
  return g_steal_pointer(&options);
}

/* Each section of CONFIG that names no plugin on REGISTRY's path, as a
 * problem added to PROBLEMS. */
static void
find_stray_sections(const cx_config *config, const cx_registry *registry, GPtrArray *problems)
{
  g_auto(GStrv) groups = g_key_file_get_groups(config->keys, NULL);
  for (char **group = groups; *group != NULL; group++) {
    /* By name only: the plugins are not loaded for this. */
    if (strcmp(*group, MAIN_GROUP) == 0 || cx__registry_has_plugin(registry, *group))
      continue;
    g_autoptr(GPtrArray) names = cx__registry_names(registry);
    const char *closest = cx_suggest(*group, (const char *const *)names->pdata);
    g_ptr_array_add(problems,
                    g_strdup_printf("%s: section [%s] names no installed backend%s%s%s; run "
                                    "`cellexec plugins` to list them",
                                    config->origin, *group, closest ? "; did you mean [" : "",
                                    closest ? closest : "", closest ? "]?" : ""));
  }
}

/* Add the problem ERROR to PROBLEMS; the first one's code is the code. */
static void
add_problem(GPtrArray *problems, int *code, const GError *error)
{
  if (problems->len == 0)
    *code = error->code;
  g_ptr_array_add(problems, g_strdup(error->message));
}

/* FALSE with ERROR (CODE) holding PROBLEMS, one per line, when there are any. */
static gboolean
no_problems(GPtrArray *problems, int code, GError **error)
{
  if (problems->len == 0)
    return TRUE;
  g_ptr_array_add(problems, NULL);
  g_autofree char *all = g_strjoinv("\n", (char **)problems->pdata);
  g_set_error_literal(error, CX_ERROR, code, all);
  return FALSE;
}

gboolean
cx_config_check_sections(const cx_config *config, const cx_registry *registry, GError **error)
{
  g_return_val_if_fail(config != NULL && registry != NULL, FALSE);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  find_stray_sections(config, registry, problems);
  return no_problems(problems, CX_ERROR_CONFIG, error);
}

/* [cellexec] KEY names NAME: a plugin on REGISTRY's path that can be used. */
static gboolean
check_named_plugin(const cx_config *config, const cx_registry *registry, const char *key,
                   const char *name, GError **error)
{
  g_autoptr(GError) lookup_error = NULL;
  const cx_plugin_info *plugin = cx_registry_lookup(registry, name, &lookup_error);
  if (plugin == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: [" MAIN_GROUP "] %s: %s", config->origin,
                key, lookup_error->message);
    return FALSE;
  }
  if (!cx_plugin_info_is_usable(plugin)) {
    const GError *why = cx_plugin_info_get_error(plugin);
    g_set_error(error, CX_ERROR, why->code, "%s: [" MAIN_GROUP "] %s '%s' cannot be used: %s",
                config->origin, key, name, why->message);
    return FALSE;
  }
  return TRUE;
}

gboolean
cx_config_check(const cx_config *config, const cx_registry *registry, GError **error)
{
  g_return_val_if_fail(config != NULL && registry != NULL, FALSE);
  /* Every problem, not just the first: a user fixing three typos should
   * not need three runs. */
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  int code = CX_ERROR_CONFIG;
  find_stray_sections(config, registry, problems);

  g_auto(GStrv) groups = g_key_file_get_groups(config->keys, NULL);
  for (char **group = groups; *group != NULL; group++) {
    if (strcmp(*group, MAIN_GROUP) == 0)
      continue;
    const cx_plugin_info *plugin = cx_registry_lookup(registry, *group, NULL);
    /* A stray section is reported above; an unusable plugin's options
     * cannot be checked, and selecting it reports why. */
    if (plugin == NULL || !cx_plugin_info_is_usable(plugin))
      continue;
    g_autoptr(GError) option_error = NULL;
    g_autoptr(cx_options) options = cx_config_get_backend_options(config, plugin, &option_error);
    if (options == NULL)
      add_problem(problems, &code, option_error);
  }

  /* The default isolation backend need not be installed until a cell asks. */
  g_autoptr(GError) backend_error = NULL;
  if (!check_named_plugin(config, registry, "backend", config->backend, &backend_error))
    add_problem(problems, &code, backend_error);
  g_autoptr(GError) isolation_error = NULL;
  if (g_key_file_has_key(config->keys, MAIN_GROUP, "use-subprocess-backend", NULL) &&
      !check_named_plugin(config, registry, "use-subprocess-backend",
                          config->use_subprocess_backend, &isolation_error))
    add_problem(problems, &code, isolation_error);
  return no_problems(problems, code, error);
}
