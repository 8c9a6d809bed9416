/* The IPython behaviour table (tests/ipython/): every case of
 * tests/ipython/expected.json, which a real Jupyter kernel recorded, runs as
 * a stateless cell (after its setup cells, in one session) on the local
 * and on the subprocess backend, and the
 * result's "outputs", "payload", "execution_count", success and error type
 * must match what the kernel did, under the case's normalisation rules
 * (tests/ipython/README.md).
 *
 * One CUnit test per backend and case, named BACKEND/CASE (e.g.
 * "local/display_markdown"), so a failure names the case and a single case
 * can be run by name.  A missing or unreadable expected.json is a failure;
 * the table is skipped only when IPython is not installed for the
 * configured Python.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cx_test.h"

/* Seconds a cell may take: generous, for valgrind and sanitizer builds. */
#define CELL_TIMEOUT 120.0

/* U+0000 cannot live in a JsonNode string; both sides read it as this
 * private-use character instead (and print it back as \u0000). */
#define NUL_STANDIN "\xee\x80\x80" /* U+E000 */

static const char *const backend_names[] = { "local", "subprocess", NULL };

static JsonNode *table;          /* expected.json, parsed */
static JsonArray *table_cases;   /* its "cases" (borrowed from table) */
static char *table_problem;      /* why the table cannot be used, or NULL */
static char *skip_reason;        /* why the table is skipped, or NULL */
static cx_backend *backends[G_N_ELEMENTS(backend_names)];

/* ---- JSON helpers ------------------------------------------------------------------ */

/* TEXT parsed, with every \u0000 escape read as NUL_STANDIN.  Outside
 * strings JSON has no backslash, so escapes are found byte by byte. */
static JsonNode *
parse_json_keeping_nul(const char *text, gsize len, GError **error)
{
  GString *mapped = g_string_sized_new(len + 16);
  for (gsize i = 0; i < len; i++) {
    if (text[i] == '\\' && i + 1 < len) {
      if (i + 5 < len && text[i + 1] == 'u' && strncmp(text + i + 2, "0000", 4) == 0) {
        g_string_append(mapped, "\\ue000");
        i += 5;
      } else {
        g_string_append_len(mapped, text + i, 2);
        i++;
      }
    } else {
      g_string_append_c(mapped, text[i]);
    }
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  gboolean ok = json_parser_load_from_data(parser, mapped->str, (gssize)mapped->len, error);
  g_string_free(mapped, TRUE);
  if (!ok)
    return NULL;
  return json_node_copy(json_parser_get_root(parser));
}

/* A copy of NODE with object members sorted by name (for printing). */
static JsonNode *
sorted_copy(JsonNode *node)
{
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *in = json_node_get_array(node);
    JsonArray *out = json_array_new();
    for (guint i = 0; i < json_array_get_length(in); i++)
      json_array_add_element(out, sorted_copy(json_array_get_element(in, i)));
    JsonNode *copy = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(copy, out);
    return copy;
  }
  if (JSON_NODE_HOLDS_OBJECT(node)) {
    JsonObject *in = json_node_get_object(node);
    GList *names = g_list_sort(json_object_get_members(in), (GCompareFunc)strcmp);
    JsonObject *out = json_object_new();
    for (GList *l = names; l != NULL; l = l->next)
      json_object_set_member(out, l->data, sorted_copy(json_object_get_member(in, l->data)));
    g_list_free(names);
    JsonNode *copy = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(copy, out);
    return copy;
  }
  return json_node_copy(node);
}

/* NODE as JSON with sorted keys, PRETTY or compact, NUL_STANDIN shown as
 * \u0000. */
static char *
json_for_humans(JsonNode *node, gboolean pretty)
{
  g_autoptr(JsonNode) sorted = sorted_copy(node);
  g_autofree char *text = cx_json_to_string(sorted, pretty);
  g_auto(GStrv) parts = g_strsplit(text, NUL_STANDIN, -1);
  return g_strjoinv("\\u0000", parts);
}

/* Member names in the order differences are looked for: output_type
 * first (a different kind of output says more than a missing field). */
static gint
compare_member_names(gconstpointer a, gconstpointer b)
{
  gboolean a_type = strcmp(a, "output_type") == 0, b_type = strcmp(b, "output_type") == 0;
  if (a_type != b_type)
    return a_type ? -1 : 1;
  return strcmp(a, b);
}

/* Where A and B first differ, as "PATH: expected X, got Y" appended to OUT;
 * FALSE when they are equal. */
static gboolean
describe_difference(JsonNode *a, JsonNode *b, const char *path, GString *out)
{
  if (a == NULL || b == NULL || JSON_NODE_TYPE(a) != JSON_NODE_TYPE(b)) {
    if (a == NULL && b == NULL)
      return FALSE;
    g_autofree char *x = a ? json_for_humans(a, FALSE) : g_strdup("(missing)");
    g_autofree char *y = b ? json_for_humans(b, FALSE) : g_strdup("(missing)");
    g_string_append_printf(out, "%s: expected %s, got %s", path, x, y);
    return TRUE;
  }
  if (JSON_NODE_HOLDS_ARRAY(a)) {
    JsonArray *x = json_node_get_array(a), *y = json_node_get_array(b);
    guint n = MAX(json_array_get_length(x), json_array_get_length(y));
    for (guint i = 0; i < n; i++) {
      g_autofree char *sub = g_strdup_printf("%s[%u]", path, i);
      JsonNode *ex = i < json_array_get_length(x) ? json_array_get_element(x, i) : NULL;
      JsonNode *ey = i < json_array_get_length(y) ? json_array_get_element(y, i) : NULL;
      if (describe_difference(ex, ey, sub, out))
        return TRUE;
    }
    return FALSE;
  }
  if (JSON_NODE_HOLDS_OBJECT(a)) {
    JsonObject *x = json_node_get_object(a), *y = json_node_get_object(b);
    GList *names = g_list_sort(json_object_get_members(x), compare_member_names);
    GList *more = g_list_sort(json_object_get_members(y), compare_member_names);
    gboolean found = FALSE;
    for (GList *l = names; l != NULL && !found; l = l->next) {
      g_autofree char *sub = g_strdup_printf("%s.%s", path, (const char *)l->data);
      found = describe_difference(json_object_get_member(x, l->data),
                                  json_object_get_member(y, l->data), sub, out);
    }
    for (GList *l = more; l != NULL && !found; l = l->next)
      if (!json_object_has_member(x, l->data)) {
        g_autofree char *sub = g_strdup_printf("%s.%s", path, (const char *)l->data);
        found = describe_difference(NULL, json_object_get_member(y, l->data), sub, out);
      }
    g_list_free(names);
    g_list_free(more);
    return found;
  }
  if (json_node_equal(a, b))
    return FALSE;
  g_autofree char *x = json_for_humans(a, FALSE);
  g_autofree char *y = json_for_humans(b, FALSE);
  g_string_append_printf(out, "%s: expected %s, got %s", path, x, y);
  return TRUE;
}

/* ---- Normalisation (the rules of tests/ipython/README.md) ----------------------- */

typedef struct {
  const char *rule;  /* NULL: always applied */
  const char *pattern;
  const char *replacement;
  GRegex *regex;
} string_rule;

/* In this order, as generate_expectations.py applies them. */
static string_rule string_rules[] = {
  { "strip_ansi", "\\x1b\\[[0-9;?]*[A-Za-z]", "", NULL },
  { "timing", "[0-9]+(?:\\.[0-9]+)?(?:e[+-]?[0-9]+)?\\s*(?:ns|\xc2\xb5s|us|ms|s)\\b", "<time>", NULL },
  { "cell_filename", "\\([^(),]*, line ([0-9]+)\\)", "(<cell>, line \\1)", NULL },
  { "cell_path", "/tmp/ipykernel_[0-9]+/[0-9]+\\.py|<cell-[0-9a-f]+>", "<cell>", NULL },
  { "digits", "[0-9]+", "<n>", NULL },
  { NULL, "0x[0-9a-fA-F]{4,}", "0x<addr>", NULL },
};

static const char *const known_rules[] = {
  "strip_ansi", "timing", "cell_filename", "cell_path", "digits", "streams_by_name",
  "drop_exit_hint", "compare_tracebacks", NULL
};

#define EXIT_HINT "UserWarning: To exit: use 'exit', 'quit', or Ctrl-D."

static gboolean
has_rule(const char *const *rules, const char *rule)
{
  return rule == NULL || (rules != NULL && g_strv_contains(rules, rule));
}

static char *
normalize_string(const char *text, const char *const *rules)
{
  char *result = g_strdup(text);
  for (gsize i = 0; i < G_N_ELEMENTS(string_rules); i++) {
    string_rule *r = &string_rules[i];
    if (!has_rule(rules, r->rule))
      continue;
    if (r->regex == NULL) {
      g_autoptr(GError) error = NULL;
      /* No G_REGEX_OPTIMIZE: PCRE2's JIT code reads past the end of
       * strings in 16-byte steps, which valgrind reports. */
      r->regex = g_regex_new(r->pattern, 0, 0, &error);
      g_assert_no_error(error);
    }
    g_autoptr(GError) error = NULL;
    char *next = g_regex_replace(r->regex, result, -1, 0, r->replacement, 0, &error);
    g_assert_no_error(error);
    g_free(result);
    result = next;
  }
  return result;
}

/* A copy of NODE with every string value normalised. */
static JsonNode *
normalize_node(JsonNode *node, const char *const *rules)
{
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *in = json_node_get_array(node);
    JsonArray *out = json_array_new();
    for (guint i = 0; i < json_array_get_length(in); i++)
      json_array_add_element(out, normalize_node(json_array_get_element(in, i), rules));
    JsonNode *copy = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(copy, out);
    return copy;
  }
  if (JSON_NODE_HOLDS_OBJECT(node)) {
    JsonObject *in = json_node_get_object(node);
    JsonObject *out = json_object_new();
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    json_object_iter_init(&iter, in);
    while (json_object_iter_next(&iter, &name, &member))
      json_object_set_member(out, name, normalize_node(member, rules));
    JsonNode *copy = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(copy, out);
    return copy;
  }
  if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING) {
    g_autofree char *text = normalize_string(json_node_get_string(node), rules);
    return json_node_init_string(json_node_alloc(), text);
  }
  return json_node_copy(node);
}

static const char *
member_string(JsonObject *object, const char *name)
{
  JsonNode *node = json_object_get_member(object, name);
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
             json_node_get_value_type(node) == G_TYPE_STRING
           ? json_node_get_string(node)
           : NULL;
}

/* OUTPUTS normalised: tracebacks dropped (unless "compare_tracebacks"), streams joined per name with
 * "streams_by_name", every string through normalize_string().  Anything
 * that is not an array of objects is kept as it is, to show up in the
 * diff. */
static JsonNode *
normalize_outputs(JsonNode *outputs, const char *const *rules)
{
  if (outputs == NULL)
    return json_node_init_null(json_node_alloc());
  if (!JSON_NODE_HOLDS_ARRAY(outputs))
    return json_node_copy(outputs);
  JsonArray *in = json_node_get_array(outputs);
  JsonArray *out = json_array_new();
  GString *streams[2] = { NULL, NULL }; /* stdout, stderr */
  for (guint i = 0; i < json_array_get_length(in); i++) {
    JsonNode *element = json_array_get_element(in, i);
    if (!JSON_NODE_HOLDS_OBJECT(element)) {
      json_array_add_element(out, json_node_copy(element));
      continue;
    }
    JsonObject *output = json_node_get_object(element);
    const char *type = member_string(output, "output_type");
    const char *name = member_string(output, "name");
    const char *text = member_string(output, "text");
    if (has_rule(rules, "drop_exit_hint") && g_strcmp0(type, "stream") == 0 && text != NULL &&
        strstr(text, EXIT_HINT) != NULL)
      continue;
    if (has_rule(rules, "streams_by_name") && g_strcmp0(type, "stream") == 0 && text != NULL &&
        (g_strcmp0(name, "stdout") == 0 || g_strcmp0(name, "stderr") == 0)) {
      int which = g_strcmp0(name, "stdout") == 0 ? 0 : 1;
      if (streams[which] == NULL)
        streams[which] = g_string_new(NULL);
      g_string_append(streams[which], text);
      continue;
    }
    JsonObject *copy = json_object_new();
    JsonObjectIter iter;
    const char *key;
    JsonNode *member;
    json_object_iter_init(&iter, output);
    while (json_object_iter_next(&iter, &key, &member))
      if (!(g_strcmp0(type, "error") == 0 && strcmp(key, "traceback") == 0) ||
          has_rule(rules, "compare_tracebacks"))
        json_object_set_member(copy, key, json_node_copy(member));
    json_array_add_object_element(out, copy);
  }
  for (int which = 0; which < 2; which++)
    if (streams[which] != NULL) {
      JsonObject *stream = json_object_new();
      json_object_set_string_member(stream, "output_type", "stream");
      json_object_set_string_member(stream, "name", which == 0 ? "stdout" : "stderr");
      json_object_set_string_member(stream, "text", streams[which]->str);
      json_array_add_object_element(out, stream);
      g_string_free(streams[which], TRUE);
    }
  g_autoptr(JsonNode) joined = json_node_new(JSON_NODE_ARRAY);
  json_node_take_array(joined, out);
  return normalize_node(joined, rules);
}

/* ---- The table ---------------------------------------------------------------------- */

static char *
expected_path(void)
{
  return g_build_filename(cx_test_srcdir(), "tests", "ipython", "expected.json", NULL);
}

/* Load expected.json into table/table_cases, or set table_problem. */
static void
load_table(void)
{
  g_autofree char *path = expected_path();
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &text, &len, &error)) {
    table_problem = g_strdup_printf("cannot read %s: %s (regenerate it: see tests/ipython/README.md)",
                                    path, error->message);
    return;
  }
  table = parse_json_keeping_nul(text, len, &error);
  if (table == NULL) {
    table_problem = g_strdup_printf("%s is not JSON: %s", path, error->message);
    return;
  }
  JsonObject *root = JSON_NODE_HOLDS_OBJECT(table) ? json_node_get_object(table) : NULL;
  JsonNode *cases = root != NULL ? json_object_get_member(root, "cases") : NULL;
  if (cases == NULL || !JSON_NODE_HOLDS_ARRAY(cases) ||
      json_array_get_length(json_node_get_array(cases)) == 0) {
    table_problem = g_strdup_printf("%s has no \"cases\" array", path);
    return;
  }
  table_cases = json_node_get_array(cases);
  for (guint i = 0; i < json_array_get_length(table_cases); i++) {
    JsonNode *node = json_array_get_element(table_cases, i);
    JsonObject *entry = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    if (entry == NULL || member_string(entry, "name") == NULL || member_string(entry, "code") == NULL ||
        member_string(entry, "status") == NULL || !json_object_has_member(entry, "outputs")) {
      table_problem = g_strdup_printf("%s: case %u lacks name, code, status or outputs", path, i);
      return;
    }
    JsonArray *rules = json_object_has_member(entry, "normalize")
                         ? json_object_get_array_member(entry, "normalize")
                         : NULL;
    for (guint r = 0; rules != NULL && r < json_array_get_length(rules); r++) {
      const char *rule = json_array_get_string_element(rules, r);
      if (rule == NULL || !g_strv_contains(known_rules, rule)) {
        table_problem = g_strdup_printf("%s: case %s has an unknown normalisation rule \"%s\"",
                                        path, member_string(entry, "name"), rule ? rule : "?");
        return;
      }
    }
  }
}

/* The configured Python's version, or NULL (and REASON) without IPython. */
static char *
python_with_ipython(char **reason)
{
  const char *argv[] = { CX_PYTHON_EXECUTABLE, "-E", "-c",
                         "import platform, IPython; print(platform.python_version())", NULL };
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr(GError) error = NULL;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL, &out,
                    &err, &status, &error)) {
    *reason = g_strdup_printf("cannot run %s: %s", CX_PYTHON_EXECUTABLE, error->message);
    return NULL;
  }
  if (!g_spawn_check_wait_status(status, NULL)) {
    *reason = g_strdup_printf("IPython is not installed for %s", CX_PYTHON_EXECUTABLE);
    return NULL;
  }
  return g_strdup(g_strstrip(out));
}

static JsonObject *
find_case(const char *name)
{
  for (guint i = 0; table_cases != NULL && i < json_array_get_length(table_cases); i++) {
    JsonObject *entry = json_array_get_object_element(table_cases, i);
    if (g_strcmp0(member_string(entry, "name"), name) == 0)
      return entry;
  }
  return NULL;
}

static cx_backend *
backend_named(const char *name)
{
  for (gsize i = 0; backend_names[i] != NULL; i++)
    if (strcmp(backend_names[i], name) == 0) {
      if (backends[i] == NULL)
        backends[i] = cx_test_open_backend(name, NULL, NULL);
      return backends[i];
    }
  g_assert_not_reached();
}

/* What is compared, for either side: an object of outputs, payload,
 * execution_count, success, error_type and (when the case lists files)
 * files. */
static JsonNode *
comparable(JsonNode *outputs, JsonNode *payload, JsonNode *execution_count, gboolean success,
           const char *error_type, JsonNode *files, const char *const *rules)
{
  JsonObject *object = json_object_new();
  json_object_set_member(object, "outputs", normalize_outputs(outputs, rules));
  if (payload != NULL) {
    json_object_set_member(object, "payload", normalize_node(payload, rules));
  } else {
    JsonNode *empty = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(empty, json_array_new());
    json_object_set_member(object, "payload", empty);
  }
  json_object_set_member(object, "execution_count",
                         execution_count != NULL ? json_node_copy(execution_count)
                                                 : json_node_init_null(json_node_alloc()));
  json_object_set_boolean_member(object, "success", success);
  if (error_type != NULL)
    json_object_set_string_member(object, "error_type", error_type);
  else
    json_object_set_null_member(object, "error_type");
  if (files != NULL)
    json_object_set_member(object, "files", json_node_copy(files));
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, object);
  return node;
}

/* The files EXPECTED names, read from DIR: {name: contents or null}. */
static JsonNode *
read_files(JsonObject *expected, const char *dir)
{
  JsonObject *files = json_object_new();
  GList *names = json_object_get_members(expected);
  for (GList *l = names; l != NULL; l = l->next) {
    g_autofree char *path = g_build_filename(dir, (const char *)l->data, NULL);
    g_autofree char *contents = NULL;
    gsize len = 0;
    if (g_file_get_contents(path, &contents, &len, NULL)) {
      g_autofree char *valid = g_utf8_make_valid(contents, (gssize)len);
      json_object_set_string_member(files, l->data, valid);
    } else {
      json_object_set_null_member(files, l->data);
    }
  }
  g_list_free(names);
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, files);
  return node;
}

/* The test of one backend and case, both named by the running test. */
static void
test_table_case(void)
{
  const char *test_name = CU_get_current_test()->pName;
  const char *slash = strchr(test_name, '/');
  g_assert(slash != NULL);
  g_autofree char *backend_name = g_strndup(test_name, (gsize)(slash - test_name));
  JsonObject *entry = find_case(slash + 1);
  g_assert(entry != NULL);
  const char *code = member_string(entry, "code");

  g_autoptr(GPtrArray) rule_list = g_ptr_array_new();
  if (json_object_has_member(entry, "normalize")) {
    JsonArray *rules = json_object_get_array_member(entry, "normalize");
    for (guint r = 0; r < json_array_get_length(rules); r++)
      g_ptr_array_add(rule_list, (gpointer)json_array_get_string_element(rules, r));
  }
  g_ptr_array_add(rule_list, NULL);
  const char *const *rules = (const char *const *)rule_list->pdata;

  cx_backend *backend = backend_named(backend_name);
  g_autofree char *cwd = cx_test_tmpdir();
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, cwd);
  cx_run_options_set_timeout(run, CELL_TIMEOUT);
  g_autoptr(cx_result) result = NULL;
  JsonNode *setup = json_object_get_member(entry, "setup");
  if (setup != NULL && JSON_NODE_HOLDS_ARRAY(setup)) {
    /* The setup cells and the case's own, in one session. */
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    JsonArray *cells = json_node_get_array(setup);
    for (guint i = 0; session != NULL && i < json_array_get_length(cells); i++) {
      const char *setup_code = json_array_get_string_element(cells, i);
      /* It may fail, as in the kernel (a post-mortem case). */
      cx_result_free(cx_test_run_session_cell(session, setup_code, run));
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    result = cx_test_run_session_cell(session, code, run);
  } else {
    result = cx_test_run_cell(backend, code, run);
  }

  /* The result as its JSON text, the form that keeps NUL bytes. */
  g_autofree char *result_text = cx_result_to_json(result, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) got_root = parse_json_keeping_nul(result_text, strlen(result_text), &error);
  CX_ASSERT_NO_ERROR(error);
  JsonObject *got = json_node_get_object(got_root);

  JsonNode *expected_files = json_object_get_member(entry, "files");
  g_autoptr(JsonNode) got_files = NULL;
  if (expected_files != NULL && JSON_NODE_HOLDS_OBJECT(expected_files))
    got_files = read_files(json_node_get_object(expected_files), cwd);

  gboolean expected_ok = g_strcmp0(member_string(entry, "status"), "ok") == 0;
  g_autoptr(JsonNode) want = comparable(
    json_object_get_member(entry, "outputs"), json_object_get_member(entry, "payload"),
    json_object_get_member(entry, "execution_count"), expected_ok,
    expected_ok ? NULL : member_string(entry, "ename"), expected_files, rules);
  g_autoptr(JsonNode) have = comparable(
    json_object_get_member(got, "outputs"), json_object_get_member(got, "payload"),
    json_object_get_member(got, "execution_count"), cx_result_get_success(result),
    cx_result_has_error(result) ? cx_result_get_error_type(result) : NULL, got_files, rules);

  gboolean same = json_node_equal(want, have);
  if (!same) {
    g_autoptr(GString) where = g_string_new(NULL);
    describe_difference(want, have, "", where);
    g_autofree char *want_text = json_for_humans(want, TRUE);
    g_autofree char *have_text = json_for_humans(have, TRUE);
    g_autofree char *rules_text = g_strjoinv(", ", (char **)rules);
    fprintf(stderr,
            "\n  ---- %s: differs from the kernel (normalised%s%s) ----\n"
            "  first difference at %s\n"
            "  code:\n%s\n"
            "  expected:\n%s\n"
            "  got:\n%s\n",
            test_name, *rules ? ": " : "", rules_text, where->str, code, want_text, have_text);
    if (cx_result_has_error(result))
      fprintf(stderr, "  the cell's error: %s: %s\n%s\n", cx_result_get_error_type(result),
              cx_result_get_error_message(result), cx_result_get_error_traceback(result));
  }
  CU_ASSERT_TRUE(same);
}

static void
test_table_unusable(void)
{
  fprintf(stderr, "\n  %s\n", table_problem);
  CU_FAIL("tests/ipython/expected.json is missing or broken");
}

static void
test_table_skipped(void)
{
  cx_test_skip("%s; the whole IPython table is not run", skip_reason);
}

static int
close_backends(void)
{
  for (gsize i = 0; backend_names[i] != NULL; i++)
    g_clear_pointer(&backends[i], cx_backend_free);
  return 0;
}

static void
free_table(void)
{
  g_clear_pointer(&table, json_node_unref);
  table_cases = NULL;
  g_clear_pointer(&table_problem, g_free);
  g_clear_pointer(&skip_reason, g_free);
  for (gsize i = 0; i < G_N_ELEMENTS(string_rules); i++)
    g_clear_pointer(&string_rules[i].regex, g_regex_unref);
}

void
cx_test_register(void)
{
  /* A cell that reads stdin gets EOF, never the terminal of whoever runs
   * the tests (input() must fail without reading anyway). */
  int devnull = open("/dev/null", O_RDONLY);
  g_assert(devnull >= 0);
  g_assert(dup2(devnull, STDIN_FILENO) == STDIN_FILENO);
  close(devnull);
  g_setenv("PYTHONDONTWRITEBYTECODE", "1", TRUE);
  atexit(free_table);

  load_table();
  if (table_problem != NULL) {
    static const cx_test_case broken[] = {
      { "test_ipython_table_expectations", test_table_unusable },
      { NULL }
    };
    cx_test_add_suite("ipython_table", broken);
    return;
  }
  g_autofree char *version = python_with_ipython(&skip_reason);
  if (version == NULL) {
    static const cx_test_case skipped[] = {
      { "test_ipython_table_skipped", test_table_skipped },
      { NULL }
    };
    cx_test_add_suite("ipython_table", skipped);
    return;
  }
  JsonObject *kernel = json_object_get_object_member(json_node_get_object(table), "kernel");
  const char *recorded = kernel != NULL ? member_string(kernel, "python") : NULL;
  if (recorded != NULL && strcmp(recorded, version) != 0)
    fprintf(stderr, "note: expected.json was recorded with Python %s, cells run on %s (%s)\n",
            recorded, CX_PYTHON_EXECUTABLE, version);

  for (gsize b = 0; backend_names[b] != NULL; b++) {
    g_autofree char *suite_name = g_strdup_printf("ipython_table_%s", backend_names[b]);
    CU_pSuite suite = CU_add_suite(suite_name, NULL, close_backends);
    g_assert(suite != NULL);
    for (guint i = 0; i < json_array_get_length(table_cases); i++) {
      JsonObject *entry = json_array_get_object_element(table_cases, i);
      g_autofree char *name = g_strdup_printf("%s/%s", backend_names[b], member_string(entry, "name"));
      g_assert(CU_add_test(suite, name, test_table_case) != NULL);
    }
  }
}
