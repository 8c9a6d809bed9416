/* The fake backend's script of responses. */
#include "config.h"

#include "plugins/fake/script.h"

#include <string.h>

#include "plugins/fake/recording.h"

typedef struct {
  GRegex *match;
  cx_result *result;
} rule;

struct fake_script {
  GPtrArray *rules;    /* rule*, checked in order */
  GQueue ordered;      /* cx_result*, consumed in order */
  fake_replay *replay; /* the recordings */
};

static void
rule_free(rule *r)
{
  g_regex_unref(r->match);
  cx_result_free(r->result);
  g_free(r);
}

void
fake_script_free(fake_script *script)
{
  if (script == NULL)
    return;
  g_ptr_array_unref(script->rules);
  g_queue_clear_full(&script->ordered, (GDestroyNotify)cx_result_free);
  fake_replay_free(script->replay);
  g_free(script);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(fake_script, fake_script_free)

/* {"recording": FILE}: FILE relative to the responses file. */
static gboolean
load_recording_entry(fake_script *script, const char *path, guint index, JsonObject *object,
                     GError **error)
{
  JsonNode *file = json_object_get_member(object, "recording");
  if (!JSON_NODE_HOLDS_VALUE(file) || json_node_get_value_type(file) != G_TYPE_STRING ||
      json_object_get_size(object) != 1) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                "%s: entry %u: write {\"recording\": FILE} (a recording to replay) alone", path,
                index);
    return FALSE;
  }
  g_autofree char *dir = g_path_get_dirname(path);
  const char *name = json_node_get_string(file);
  g_autofree char *full = g_path_is_absolute(name) ? g_strdup(name)
                                                   : g_build_filename(dir, name, NULL);
  g_autoptr(GError) inner = NULL;
  if (!fake_replay_add(script->replay, full, &inner)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s: entry %u: %s", path, index, inner->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean
load_entry(fake_script *script, const char *path, guint index, JsonNode *entry, GError **error)
{
  g_autoptr(GError) inner = NULL;
  if (!JSON_NODE_HOLDS_OBJECT(entry)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                "%s: entry %u is not an object; write a result bundle or "
                "{\"match\": REGEX, \"result\": BUNDLE}", path, index);
    return FALSE;
  }
  JsonObject *object = json_node_get_object(entry);
  if (json_object_has_member(object, "recording"))
    return load_recording_entry(script, path, index, object, error);
  if (!json_object_has_member(object, "match")) {
    cx_result *result = cx_result_from_json_node(entry, &inner);
    if (result == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s: entry %u: %s", path, index, inner->message);
      return FALSE;
    }
    g_queue_push_tail(&script->ordered, result);
    return TRUE;
  }

  JsonNode *match = json_object_get_member(object, "match");
  JsonNode *bundle = json_object_get_member(object, "result");
  if (!JSON_NODE_HOLDS_VALUE(match) || json_node_get_value_type(match) != G_TYPE_STRING ||
      bundle == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                "%s: entry %u: a rule needs \"match\" (a regular expression) and \"result\" "
                "(a result bundle)", path, index);
    return FALSE;
  }
  g_autoptr(GRegex) regex = g_regex_new(json_node_get_string(match), G_REGEX_MULTILINE, 0, &inner);
  if (regex == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s: entry %u: bad \"match\": %s", path, index,
                inner->message);
    return FALSE;
  }
  cx_result *result = cx_result_from_json_node(bundle, &inner);
  if (result == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s: entry %u: \"result\": %s", path, index,
                inner->message);
    return FALSE;
  }
  rule *r = g_new0(rule, 1);
  r->match = g_steal_pointer(&regex);
  r->result = result;
  g_ptr_array_add(script->rules, r);
  return TRUE;
}

fake_script *
fake_script_load(const char *path, GError **error)
{
  g_autoptr(fake_script) script = g_new0(fake_script, 1);
  script->rules = g_ptr_array_new_with_free_func((GDestroyNotify)rule_free);
  g_queue_init(&script->ordered);
  script->replay = fake_replay_new();
  if (path == NULL)
    return g_steal_pointer(&script);

  g_autofree char *contents = NULL;
  gsize length = 0;
  g_autoptr(GError) parse_error = NULL;
  if (!cx_file_get_contents(path, &contents, &length, &parse_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "responses file: %s", parse_error->message);
    return NULL;
  }
  /* A script is one JSON array; anything else must be a recording (JSON
   * Lines of objects), and is told what is wrong with it as one. */
  const char *first = contents;
  while (first < contents + length && g_ascii_isspace(*first))
    first++;
  if (first == contents + length || *first != '[') {
    if (!fake_replay_add_data(script->replay, path, contents, length, error))
      return NULL;
    return g_steal_pointer(&script);
  }

  g_autoptr(JsonNode) root = cx_json_from_string(contents, (gssize)length, &parse_error);
  if (root == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON, "responses file %s: %s", path,
                parse_error->message);
    return NULL;
  }
  if (!JSON_NODE_HOLDS_ARRAY(root)) {
    g_set_error(error, CX_ERROR, CX_ERROR_JSON,
                "responses file %s: expected a JSON array of result bundles", path);
    return NULL;
  }
  JsonArray *entries = json_node_get_array(root);
  for (guint i = 0; i < json_array_get_length(entries); i++)
    if (!load_entry(script, path, i, json_array_get_element(entries, i), error))
      return NULL;
  return g_steal_pointer(&script);
}

gboolean
fake_script_next(fake_script *script, const char *code, guint session, guint cell,
                 cx_result **result, GError **error)
{
  *result = NULL;
  for (guint i = 0; i < script->rules->len; i++) {
    rule *r = g_ptr_array_index(script->rules, i);
    if (g_regex_match(r->match, code, 0, NULL)) {
      *result = cx_result_copy(r->result);
      return TRUE;
    }
  }
  if (fake_replay_lookup(script->replay, code, session, cell, result, error))
    return TRUE;
  *result = g_queue_pop_head(&script->ordered);
  return *result != NULL;
}

const char *
fake_script_recordings(const fake_script *script)
{
  return fake_replay_describe(script->replay);
}

guint
fake_script_remaining(const fake_script *script)
{
  return script->ordered.length;
}
