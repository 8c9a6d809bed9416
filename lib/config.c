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
};

static const char *const main_keys[] = { "backend", "plugin-path", "debug-export", NULL };

cx_config *
cx_config_new_empty(void)
{
  cx_config *config = g_new0(cx_config, 1);
  config->keys = g_key_file_new();
  config->origin = g_strdup("built-in defaults");
  config->backend = g_strdup(DEFAULT_BACKEND);
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
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "%s: unknown key '%s' in [" MAIN_GROUP "]%s%s%s; valid keys are backend, "
                "plugin-path and debug-export",
                config->origin, *key, closest ? "; did you mean '" : "", closest ? closest : "",
                closest ? "'?" : "");
    return FALSE;
  }
  g_autofree char *backend = NULL;
  g_autofree char *path = NULL;
  if (!get_main_string(config, "backend", &backend, error) ||
      !get_main_string(config, "plugin-path", &path, error) ||
      !get_main_string(config, "debug-export", &config->debug_export, error))
    return FALSE;
  if (backend != NULL) {
    g_strstrip(backend);
    if (*backend == '\0') {
      g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                  "%s: [" MAIN_GROUP "] backend is empty; name a plugin such as 'local'",
                  config->origin);
      return FALSE;
    }
    g_free(config->backend);
    config->backend = g_steal_pointer(&backend);
  }
  if (path != NULL) {
    g_strfreev(config->plugin_path);
    /* GKeyFile lists use ';'; ':' is accepted too, as in CELLEXEC_PLUGIN_PATH. */
    config->plugin_path = g_regex_split_simple("[;:]", g_strstrip(path), 0, 0);
  }
  if (config->debug_export != NULL && *g_strstrip(config->debug_export) == '\0')
    g_clear_pointer(&config->debug_export, g_free);
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
  if (length > CX__CONFIG_MAX_SIZE) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: larger than %d bytes; a config file is "
                "a few lines of text", config->origin, CX__CONFIG_MAX_SIZE);
    return NULL;
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
  gsize size = 0, capacity = 4096;
  g_autofree char *data = g_malloc(capacity + 1);
  while (size <= CX__CONFIG_MAX_SIZE) {
    if (size == capacity) {
      capacity = MIN(capacity * 2, (gsize)CX__CONFIG_MAX_SIZE + 1);
      data = g_realloc(data, capacity + 1);
    }
    gssize n = read(fd, data + size, capacity - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int saved = errno;
      close(fd);
      g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "cannot read config file %s: %s", path,
                  g_strerror(saved));
      return NULL;
    }
    if (n == 0)
      break;
    size += (gsize)n;
  }
  close(fd);
  data[size] = '\0';
  *length = size;
  return g_steal_pointer(&data);
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

gboolean
cx_config_check_sections(const cx_config *config, const cx_registry *registry, GError **error)
{
  g_return_val_if_fail(config != NULL && registry != NULL, FALSE);
  g_auto(GStrv) groups = g_key_file_get_groups(config->keys, NULL);
  for (char **group = groups; *group != NULL; group++) {
    if (strcmp(*group, MAIN_GROUP) == 0 || cx_registry_lookup(registry, *group, NULL) != NULL)
      continue;
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++)
      g_ptr_array_add(names,
                      (gpointer)cx_plugin_info_get_name(cx_registry_get_plugin(registry, i)));
    g_ptr_array_add(names, NULL);
    const char *closest = cx_suggest(*group, (const char *const *)names->pdata);
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "%s: section [%s] names no installed backend%s%s%s; run `cellexec plugins` "
                "to list them",
                config->origin, *group, closest ? "; did you mean [" : "",
                closest ? closest : "", closest ? "]?" : "");
    return FALSE;
  }
  return TRUE;
}

gboolean
cx_config_check(const cx_config *config, const cx_registry *registry, GError **error)
{
  g_return_val_if_fail(config != NULL && registry != NULL, FALSE);
  if (!cx_config_check_sections(config, registry, error))
    return FALSE;

  g_auto(GStrv) groups = g_key_file_get_groups(config->keys, NULL);
  for (char **group = groups; *group != NULL; group++) {
    if (strcmp(*group, MAIN_GROUP) == 0)
      continue;
    const cx_plugin_info *plugin = cx_registry_lookup(registry, *group, NULL);
    if (!cx_plugin_info_is_usable(plugin))
      continue; /* its options cannot be checked; selecting it reports why */
    g_autoptr(cx_options) options = cx_config_get_backend_options(config, plugin, error);
    if (options == NULL)
      return FALSE;
  }

  g_autoptr(GError) lookup_error = NULL;
  const cx_plugin_info *selected = cx_registry_lookup(registry, config->backend, &lookup_error);
  if (selected == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "%s: [" MAIN_GROUP "] backend: %s",
                config->origin, lookup_error->message);
    return FALSE;
  }
  if (!cx_plugin_info_is_usable(selected)) {
    const GError *why = cx_plugin_info_get_error(selected);
    g_set_error(error, CX_ERROR, why->code, "%s: [" MAIN_GROUP "] backend '%s' cannot be used: %s",
                config->origin, config->backend, why->message);
    return FALSE;
  }
  return TRUE;
}
