/* Backend options: values checked against a plugin's option schema. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"

struct cx_options {
  char *backend;
  const cx_option_spec *schema;
  GHashTable *values; /* key -> text: defaults, then values set */
};

const char *
cx_option_type_name(cx_option_type type)
{
  switch (type) {
  case CX_OPTION_STRING: return "string";
  case CX_OPTION_BOOL: return "bool";
  case CX_OPTION_INT: return "int";
  case CX_OPTION_DOUBLE: return "double";
  case CX_OPTION_SIZE: return "size";
  case CX_OPTION_PATH: return "path";
  case CX_OPTION_ENV: return "env";
  case CX_OPTION_COUNT: return "count";
  case CX_OPTION_SIZE_LIMIT: return "size-limit";
  }
  return "unknown";
}

/* The entry of cx__run_option_defaults SPEC is, or NULL. */
static const cx__run_option_default *
run_option_default(const cx_option_spec *spec)
{
  for (const cx__run_option_default *option = cx__run_option_defaults; option->name != NULL;
       option++)
    if (option->type == spec->type && strcmp(option->name, spec->name) == 0)
      return option;
  return NULL;
}

static const char *
type_expectation(cx_option_type type)
{
  switch (type) {
  case CX_OPTION_BOOL: return "true or false (also yes/no, on/off, 1/0)";
  case CX_OPTION_INT: return "an integer";
  case CX_OPTION_DOUBLE: return "a number";
  case CX_OPTION_SIZE: return "a size such as 4096, 512K, 512M or 2G";
  case CX_OPTION_PATH: return "a non-empty path";
  case CX_OPTION_ENV: return "KEY=VALUE pairs separated by ';'";
  case CX_OPTION_COUNT: return "an integer from 1 (leave the option unset for no limit)";
  case CX_OPTION_SIZE_LIMIT:
    return "a size of at least 1 byte, such as 4096, 512K or 2G (leave the option unset for "
           "no limit)";
  case CX_OPTION_STRING: break;
  }
  return "a string";
}

static gboolean
parse_bool(const char *text, gboolean *out)
{
  static const char *const yes[] = { "true", "yes", "on", "1", NULL };
  static const char *const no[] = { "false", "no", "off", "0", NULL };
  for (const char *const *w = yes; *w; w++)
    if (g_ascii_strcasecmp(text, *w) == 0)
      return *out = TRUE, TRUE;
  for (const char *const *w = no; *w; w++)
    if (g_ascii_strcasecmp(text, *w) == 0)
      return *out = FALSE, TRUE;
  return FALSE;
}

static gboolean
parse_double(const char *text, double *out)
{
  char *end = NULL;
  errno = 0;
  double value = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !isfinite(value))
    return FALSE;
  *out = value;
  return TRUE;
}

static gboolean
parse_size(const char *text, guint64 *out)
{
  char *end = NULL;
  if (!g_ascii_isdigit(*text))
    return FALSE;
  errno = 0;
  guint64 value = g_ascii_strtoull(text, &end, 10);
  if (errno != 0)
    return FALSE;
  unsigned shift = 0;
  switch (g_ascii_toupper(*end)) {
  case '\0': break;
  case 'K': shift = 10; end++; break;
  case 'M': shift = 20; end++; break;
  case 'G': shift = 30; end++; break;
  case 'T': shift = 40; end++; break;
  default: return FALSE;
  }
  if (shift != 0 && g_ascii_strcasecmp(end, "") != 0 && g_ascii_strcasecmp(end, "B") != 0 &&
      g_ascii_strcasecmp(end, "iB") != 0)
    return FALSE;
  if (shift == 0 && *end != '\0')
    return FALSE;
  if (shift != 0 && value > (G_MAXUINT64 >> shift))
    return FALSE;
  *out = value << shift;
  return TRUE;
}

/* Split an env value into KEY=VALUE items; NULL if any item is malformed. */
static char **
parse_env(const char *text)
{
  /* Not g_regex_split_simple(): it takes quadratic time in the number of
   * items, and an env of 30,000 took 19 s. */
  g_autoptr(GPtrArray) result = g_ptr_array_new_with_free_func(g_free);
  for (const char *item = text, *end = NULL; end == NULL || *end != '\0'; item = end + 1) {
    end = item + strcspn(item, ";\n");
    g_autofree char *trimmed = g_strstrip(g_strndup(item, (gsize)(end - item)));
    if (*trimmed == '\0')
      continue;
    const char *eq = strchr(trimmed, '=');
    if (eq == NULL || eq == trimmed)
      return NULL;
    g_ptr_array_add(result, g_steal_pointer(&trimmed));
  }
  g_ptr_array_add(result, NULL);
  return (char **)g_ptr_array_free(g_steal_pointer(&result), FALSE);
}

gboolean
cx__option_value_check(cx_option_type type, const char *value, GError **error)
{
  gboolean ok = TRUE;
  switch (type) {
  case CX_OPTION_STRING:
    break;
  case CX_OPTION_BOOL: {
    gboolean b;
    ok = parse_bool(value, &b);
    break;
  }
  case CX_OPTION_INT:
    ok = g_ascii_string_to_signed(value, 10, G_MININT64, G_MAXINT64, NULL, NULL);
    break;
  case CX_OPTION_COUNT:
    ok = g_ascii_string_to_signed(value, 10, 1, G_MAXINT64, NULL, NULL);
    break;
  case CX_OPTION_SIZE_LIMIT: {
    guint64 s;
    ok = parse_size(value, &s) && s >= 1;
    break;
  }
  case CX_OPTION_DOUBLE: {
    double d;
    ok = parse_double(value, &d);
    break;
  }
  case CX_OPTION_SIZE: {
    guint64 s;
    ok = parse_size(value, &s);
    break;
  }
  case CX_OPTION_PATH:
    ok = *value != '\0';
    break;
  case CX_OPTION_ENV: {
    g_auto(GStrv) env = parse_env(value);
    ok = env != NULL;
    break;
  }
  }
  if (!ok)
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "expected %s", type_expectation(type));
  return ok;
}

static const cx_option_spec *
find_spec(const cx_option_spec *schema, const char *key)
{
  for (const cx_option_spec *spec = schema; spec != NULL && spec->name != NULL; spec++)
    if (strcmp(spec->name, key) == 0)
      return spec;
  return NULL;
}

/* Paths starting with "~/" are relative to the home directory. */
static char *
expand_value(const cx_option_spec *spec, const char *value)
{
  if (spec->type == CX_OPTION_PATH && g_str_has_prefix(value, "~/"))
    return g_build_filename(g_get_home_dir(), value + 2, NULL);
  return g_strdup(value);
}

cx_options *
cx_options_new(const char *backend, const cx_option_spec *schema)
{
  g_return_val_if_fail(backend != NULL, NULL);
  cx_options *options = g_new0(cx_options, 1);
  options->backend = g_strdup(backend);
  options->schema = schema;
  options->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (const cx_option_spec *spec = schema; spec != NULL && spec->name != NULL; spec++)
    if (spec->default_value != NULL)
      g_hash_table_replace(options->values, g_strdup(spec->name),
                           expand_value(spec, spec->default_value));
  return options;
}

void
cx_options_free(cx_options *options)
{
  if (options == NULL)
    return;
  g_free(options->backend);
  g_hash_table_unref(options->values);
  g_free(options);
}

gboolean
cx_options_set(cx_options *options, const char *key, const char *value, GError **error)
{
  g_return_val_if_fail(options != NULL && key != NULL && value != NULL, FALSE);
  const cx_option_spec *spec = find_spec(options->schema, key);
  if (spec == NULL) {
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (const cx_option_spec *s = options->schema; s != NULL && s->name != NULL; s++)
      g_ptr_array_add(names, (gpointer)s->name);
    g_ptr_array_add(names, NULL);
    const char *closest = cx_suggest(key, (const char *const *)names->pdata);
    if (closest != NULL)
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "unknown option '%s' for backend '%s'; did you mean '%s'?", key,
                  options->backend, closest);
    else if (names->len > 1) {
      g_autofree char *list = g_strjoinv(", ", (char **)names->pdata);
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "unknown option '%s' for backend '%s'; its options are: %s", key,
                  options->backend, list);
    } else
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "unknown option '%s': backend '%s' takes no options", key, options->backend);
    return FALSE;
  }
  g_autoptr(GError) type_error = NULL;
  /* The default of a run option is held to the run option's own rule. */
  const cx__run_option_default *run_default = run_option_default(spec);
  if (run_default != NULL && run_default->check != NULL) {
    if (!run_default->check(value)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "bad value '%s' for option '%s' of backend '%s': %s", value, key,
                  options->backend, run_default->rule);
      return FALSE;
    }
  } else if (!cx__option_value_check(spec->type, value, &type_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "bad value '%s' for option '%s' of backend '%s': %s", value, key,
                options->backend, type_error->message);
    return FALSE;
  }
  g_hash_table_replace(options->values, g_strdup(key), expand_value(spec, value));
  return TRUE;
}

/* The text of KEY (set or default) if KEY has TYPE; NULL if unset. */
static const char *
lookup(const cx_options *options, const char *key, cx_option_type type)
{
  const cx_option_spec *spec = find_spec(options->schema, key);
  /* A path reads as a string, a count as an int, a size limit as a size. */
  gboolean type_ok = spec != NULL &&
                     (spec->type == type || (type == CX_OPTION_STRING && spec->type == CX_OPTION_PATH) ||
                      (type == CX_OPTION_INT && spec->type == CX_OPTION_COUNT) ||
                      (type == CX_OPTION_SIZE && spec->type == CX_OPTION_SIZE_LIMIT));
  if (!type_ok) {
    g_critical("cellexec: backend '%s' reads option '%s' as %s, but its schema %s",
               options->backend, key, cx_option_type_name(type),
               spec == NULL ? "has no such option" : "declares another type");
    return NULL;
  }
  return g_hash_table_lookup(options->values, key);
}

gboolean
cx_options_has(const cx_options *options, const char *key)
{
  g_return_val_if_fail(options != NULL && key != NULL, FALSE);
  const cx_option_spec *spec = find_spec(options->schema, key);
  return spec != NULL && g_hash_table_contains(options->values, key);
}

const char *
cx_options_get_string(const cx_options *options, const char *key, const char *fallback)
{
  g_return_val_if_fail(options != NULL && key != NULL, fallback);
  const char *value = lookup(options, key, CX_OPTION_STRING);
  return value != NULL ? value : fallback;
}

gboolean
cx_options_get_bool(const cx_options *options, const char *key, gboolean fallback)
{
  g_return_val_if_fail(options != NULL && key != NULL, fallback);
  gboolean value;
  const char *text = lookup(options, key, CX_OPTION_BOOL);
  return text != NULL && parse_bool(text, &value) ? value : fallback;
}

gint64
cx_options_get_int(const cx_options *options, const char *key, gint64 fallback)
{
  g_return_val_if_fail(options != NULL && key != NULL, fallback);
  gint64 value;
  const char *text = lookup(options, key, CX_OPTION_INT);
  return text != NULL && g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, &value, NULL)
             ? value
             : fallback;
}

double
cx_options_get_double(const cx_options *options, const char *key, double fallback)
{
  g_return_val_if_fail(options != NULL && key != NULL, fallback);
  double value;
  const char *text = lookup(options, key, CX_OPTION_DOUBLE);
  return text != NULL && parse_double(text, &value) ? value : fallback;
}

guint64
cx_options_get_size(const cx_options *options, const char *key, guint64 fallback)
{
  g_return_val_if_fail(options != NULL && key != NULL, fallback);
  guint64 value;
  const char *text = lookup(options, key, CX_OPTION_SIZE);
  return text != NULL && parse_size(text, &value) ? value : fallback;
}

char **
cx_options_get_env(const cx_options *options, const char *key)
{
  g_return_val_if_fail(options != NULL && key != NULL, NULL);
  const char *text = lookup(options, key, CX_OPTION_ENV);
  return text != NULL ? parse_env(text) : NULL;
}

const char *
cx_options_get_backend(const cx_options *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  return options->backend;
}

const cx_option_spec *
cx_options_get_schema(const cx_options *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  return options->schema;
}
