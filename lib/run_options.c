/* Options of one run_cell call. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "lib/internal.h"

struct cx_run_options {
  char *cwd;
  GPtrArray *env;     /* "KEY=VALUE" strings, NULL-terminated */
  GHashTable *env_index; /* KEY -> its index in env + 1: replacing stays linear */
  double timeout;
  gboolean use_subprocess;
  GPtrArray *mime;    /* allowed MIME types, NULL-terminated; NULL: all */
  cx_output_func output_callback;
  gpointer output_data;
  GMutex output_lock; /* one output callback at a time */
  cx_input_func input_callback;
  gpointer input_data;
  gboolean unstored;  /* cx_run_options_set_store_history(FALSE) */
  gboolean keeps_nul; /* cx_run_options_set_output_keeps_nul() */
};

static GPtrArray *
strv_array_new(void)
{
  GPtrArray *array = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(array, NULL);
  return array;
}

/* Insert ITEM before the NULL terminator. */
static void
strv_array_append(GPtrArray *array, const char *item)
{
  g_ptr_array_insert(array, array->len - 1, g_strdup(item));
}

cx_run_options *
cx_run_options_new(void)
{
  cx_run_options *run = g_new0(cx_run_options, 1);
  run->env = strv_array_new();
  run->env_index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_mutex_init(&run->output_lock);
  return run;
}

void
cx_run_options_free(cx_run_options *run)
{
  if (run == NULL)
    return;
  g_free(run->cwd);
  g_ptr_array_unref(run->env);
  g_hash_table_unref(run->env_index);
  if (run->mime != NULL)
    g_ptr_array_unref(run->mime);
  g_mutex_clear(&run->output_lock);
  g_free(run);
}

cx_run_options *
cx_run_options_copy(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, NULL);
  cx_run_options *copy = cx_run_options_new();
  copy->cwd = g_strdup(run->cwd);
  for (guint i = 0; i + 1 < run->env->len; i++)
    cx_run_options_add_env(copy, g_ptr_array_index(run->env, i));
  copy->timeout = run->timeout;
  copy->use_subprocess = run->use_subprocess;
  copy->output_callback = run->output_callback;
  copy->output_data = run->output_data;
  copy->input_callback = run->input_callback;
  copy->input_data = run->input_data;
  copy->unstored = run->unstored;
  copy->keeps_nul = run->keeps_nul;
  if (run->mime != NULL)
    for (guint i = 0; i + 1 < run->mime->len; i++)
      cx_run_options_add_allowed_mime_type(copy, g_ptr_array_index(run->mime, i));
  return copy;
}

cx_run_options *
cx__run_options_merge(const cx_run_options *run, const cx_run_options *defaults)
{
  cx_run_options *merged = cx_run_options_copy(run);
  if (merged->cwd == NULL)
    merged->cwd = g_strdup(defaults->cwd);
  if (merged->timeout <= 0)
    merged->timeout = defaults->timeout;
  /* The defaults' variables in their order, each one RUN names replaced
   * by RUN's value where it stands, then RUN's others. */
  g_ptr_array_set_size(merged->env, 0);
  g_ptr_array_add(merged->env, NULL);
  g_hash_table_remove_all(merged->env_index);
  for (guint i = 0; i + 1 < defaults->env->len; i++)
    cx_run_options_add_env(merged, g_ptr_array_index(defaults->env, i));
  for (guint i = 0; i + 1 < run->env->len; i++)
    cx_run_options_add_env(merged, g_ptr_array_index(run->env, i));
  return merged;
}

/* ---- backend options that are defaults of run options ---------------------------- */

static gboolean
check_timeout(const char *value)
{
  return cx_timeout_parse(value, NULL, NULL);
}

static void
apply_cwd(cx_run_options *run, const cx_options *options, const char *name)
{
  cx_run_options_set_cwd(run, cx_options_get_string(options, name, NULL));
}

static void
apply_env(cx_run_options *run, const cx_options *options, const char *name)
{
  g_auto(GStrv) env = cx_options_get_env(options, name);
  for (char **item = env; item != NULL && *item != NULL; item++)
    cx_run_options_add_env(run, *item);
}

static void
apply_timeout(cx_run_options *run, const cx_options *options, const char *name)
{
  cx_run_options_set_timeout(run, cx_options_get_double(options, name, 0));
}

const cx__run_option_default cx__run_option_defaults[] = {
  { "cwd", CX_OPTION_PATH, NULL, NULL, apply_cwd },
  { "env", CX_OPTION_ENV, NULL, NULL, apply_env },
  { "timeout", CX_OPTION_DOUBLE, check_timeout, CX__TIMEOUT_RULE, apply_timeout },
  { NULL, 0, NULL, NULL, NULL }
};

void
cx_run_options_set_cwd(cx_run_options *run, const char *cwd)
{
  g_return_if_fail(run != NULL);
  g_free(run->cwd);
  run->cwd = g_strdup(cwd);
}

const char *
cx_run_options_get_cwd(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, NULL);
  return run->cwd;
}

gboolean
cx_run_options_add_env(cx_run_options *run, const char *assignment)
{
  g_return_val_if_fail(run != NULL && assignment != NULL, FALSE);
  const char *eq = strchr(assignment, '=');
  if (eq == NULL || eq == assignment)
    return FALSE;
  g_autofree char *key = g_strndup(assignment, (gsize)(eq - assignment));
  gpointer slot = g_hash_table_lookup(run->env_index, key);
  if (slot != NULL) {
    guint i = GPOINTER_TO_UINT(slot) - 1;
    g_free(g_ptr_array_index(run->env, i));
    g_ptr_array_index(run->env, i) = g_strdup(assignment);
    return TRUE;
  }
  g_hash_table_insert(run->env_index, g_steal_pointer(&key), GUINT_TO_POINTER(run->env->len));
  strv_array_append(run->env, assignment);
  return TRUE;
}

const char *const *
cx_run_options_get_env(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, NULL);
  return (const char *const *)run->env->pdata;
}

gboolean
cx_timeout_check(double seconds, GError **error)
{
  G_STATIC_ASSERT(CX_TIMEOUT_MAX == 365.0 * 24 * 60 * 60);
  /* Written so that NaN fails too.  The cap keeps deadlines in
   * microseconds far from overflowing a gint64. */
  if (seconds >= 0 && seconds <= CX_TIMEOUT_MAX)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "bad timeout %g: " CX__TIMEOUT_RULE, seconds);
  return FALSE;
}

gboolean
cx_timeout_parse(const char *text, double *seconds, GError **error)
{
  g_return_val_if_fail(text != NULL, FALSE);
  char *end = NULL;
  errno = 0;
  double value = g_ascii_strtod(text, &end);
  /* ERANGE: too large (inf) or too small to be told from 0. */
  if (end == text || *end != '\0' || errno == ERANGE || !cx_timeout_check(value, NULL)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "bad timeout '%s': " CX__TIMEOUT_RULE, text);
    return FALSE;
  }
  if (seconds != NULL)
    *seconds = value;
  return TRUE;
}

void
cx_run_options_set_timeout(cx_run_options *run, double seconds)
{
  g_return_if_fail(run != NULL);
  g_autoptr(GError) error = NULL;
  if (!cx_timeout_check(seconds, &error)) {
    g_critical("cx_run_options_set_timeout: %s", error->message);
    return;
  }
  run->timeout = seconds;
}

double
cx_run_options_get_timeout(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, 0);
  return run->timeout;
}

void
cx_run_options_set_use_subprocess(cx_run_options *run, gboolean use_subprocess)
{
  g_return_if_fail(run != NULL);
  run->use_subprocess = use_subprocess;
}

gboolean
cx_run_options_get_use_subprocess(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, FALSE);
  return run->use_subprocess;
}

void
cx_run_options_add_allowed_mime_type(cx_run_options *run, const char *mime)
{
  g_return_if_fail(run != NULL && mime != NULL);
  if (run->mime == NULL)
    run->mime = strv_array_new();
  if (!g_strv_contains((const char *const *)run->mime->pdata, mime))
    strv_array_append(run->mime, mime);
}

const char *const *
cx_run_options_get_allowed_mime_types(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, NULL);
  return run->mime != NULL ? (const char *const *)run->mime->pdata : NULL;
}

void
cx_run_options_set_output_callback(cx_run_options *run, cx_output_func callback,
                                   gpointer user_data)
{
  g_return_if_fail(run != NULL);
  run->output_callback = callback;
  run->output_data = user_data;
}

cx_output_func
cx_run_options_get_output_callback(const cx_run_options *run, gpointer *user_data)
{
  g_return_val_if_fail(run != NULL, NULL);
  if (user_data != NULL)
    *user_data = run->output_data;
  return run->output_callback;
}

JsonObject *
cx__run_options_filter_bundle(const cx_run_options *run, JsonObject *bundle)
{
  if (run->mime == NULL)
    return NULL;
  g_autoptr(GList) types = json_object_get_members(bundle);
  GList *type = types;
  while (type != NULL && cx_run_options_mime_allowed(run, type->data))
    type = type->next;
  if (type == NULL)
    return NULL;
  /* A copy: the bundle may be shared with whoever made it. */
  JsonObject *kept = json_object_new();
  for (type = types; type != NULL; type = type->next)
    if (cx_run_options_mime_allowed(run, type->data))
      json_object_set_member(kept, type->data,
                             json_node_copy(json_object_get_member(bundle, type->data)));
  return kept;
}

/* OUTPUT's "data" with only the MIME types RUN allows (a new object set in
 * OUTPUT when some are not); FALSE when nothing is left worth showing (a
 * display without an id, an execute_result). */
static gboolean
filter_output_data(const cx_run_options *run, JsonObject *output)
{
  JsonNode *data = json_object_get_member(output, "data");
  if (run->mime == NULL || data == NULL || !JSON_NODE_HOLDS_OBJECT(data))
    return TRUE;
  JsonObject *kept = cx__run_options_filter_bundle(run, json_node_get_object(data));
  if (kept == NULL)
    return TRUE; /* all allowed: nothing was dropped */
  json_object_set_object_member(output, "data", kept);
  return json_object_get_size(kept) > 0 || json_object_has_member(output, "transient");
}

gboolean
cx_run_options_emit_output(const cx_run_options *run, JsonObject *output)
{
  g_return_val_if_fail(run != NULL && output != NULL, FALSE);
  if (run->output_callback == NULL)
    return FALSE;
  cx_run_options *mutable_run = (cx_run_options *)run; /* the lock only */
  g_mutex_lock(&mutable_run->output_lock);
  if (filter_output_data(run, output))
    run->output_callback(output, run->output_data);
  g_mutex_unlock(&mutable_run->output_lock);
  return TRUE;
}

gboolean
cx_run_options_mime_allowed(const cx_run_options *run, const char *mime)
{
  g_return_val_if_fail(run != NULL && mime != NULL, FALSE);
  if (run->mime == NULL)
    return TRUE;
  return g_strv_contains((const char *const *)run->mime->pdata, mime);
}

static JsonNode *
strv_node(const char *const *items)
{
  JsonArray *array = json_array_new();
  for (const char *const *item = items; item != NULL && *item != NULL; item++)
    json_array_add_string_element(array, *item);
  JsonNode *node = json_node_new(JSON_NODE_ARRAY);
  json_node_take_array(node, array);
  return node;
}

JsonNode *
cx_run_options_to_json_node(const cx_run_options *run)
{
  g_return_val_if_fail(run != NULL, NULL);
  JsonObject *object = json_object_new();
  if (run->cwd != NULL)
    json_object_set_string_member(object, "cwd", run->cwd);
  else
    json_object_set_null_member(object, "cwd");
  json_object_set_member(object, "env", strv_node(cx_run_options_get_env(run)));
  json_object_set_double_member(object, "timeout", run->timeout);
  json_object_set_boolean_member(object, "use_subprocess", run->use_subprocess);
  if (run->unstored) /* only when set: older recordings stay as they were */
    json_object_set_boolean_member(object, "store_history", FALSE);
  if (run->mime != NULL)
    json_object_set_member(object, "allowed_mime_types",
                           strv_node(cx_run_options_get_allowed_mime_types(run)));
  else
    json_object_set_null_member(object, "allowed_mime_types");
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, object);
  return node;
}

void
cx_run_options_set_input_callback(cx_run_options *run, cx_input_func callback, gpointer user_data)
{
  g_return_if_fail(run != NULL);
  run->input_callback = callback;
  run->input_data = user_data;
}

cx_input_func
cx_run_options_get_input_callback(const cx_run_options *run, gpointer *user_data)
{
  g_return_val_if_fail(run != NULL, NULL);
  if (user_data != NULL)
    *user_data = run->input_data;
  return run->input_callback;
}

char *
cx_run_options_ask_input(const cx_run_options *run, const char *prompt, gboolean password,
                         GError **error)
{
  g_return_val_if_fail(prompt != NULL, NULL);
  if (run == NULL || run->input_callback == NULL) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                        "input() was called, but nothing answers input requests");
    return NULL;
  }
  GError *failure = NULL;
  char *line = run->input_callback(prompt, password, run->input_data, &failure);
  if (line == NULL && failure == NULL)
    g_set_error_literal(&failure, CX_ERROR, CX_ERROR_FAILED, "no answer to the input request");
  if (line == NULL)
    g_propagate_error(error, failure);
  return line;
}

void
cx_run_options_set_store_history(cx_run_options *run, gboolean store_history)
{
  g_return_if_fail(run != NULL);
  run->unstored = !store_history;
}

gboolean
cx_run_options_get_store_history(const cx_run_options *run)
{
  return run == NULL || !run->unstored;
}

void
cx_run_options_set_output_keeps_nul(cx_run_options *run, gboolean keeps_nul)
{
  g_return_if_fail(run != NULL);
  run->keeps_nul = keeps_nul;
}

gboolean
cx_run_options_get_output_keeps_nul(const cx_run_options *run)
{
  return run != NULL && run->keeps_nul;
}
