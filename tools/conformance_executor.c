/* The conformance cases of the executor vtable (include/cellexec/executor.h):
 * run by `cellexec plugins --check` on a plugin that has one, and by
 * tests/test_executor on every such backend built here.  Each case gets a
 * fresh session; an operation the plugin lacks skips the case. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tools/conformance.h"

#define RETURN_IF_DONE CONFORMANCE_RETURN_IF_DONE
#define CHECK CONFORMANCE_CHECK

/* Parse JSON text of the cases' own (expected values, arguments). */
static JsonObject *
object_of(const char *text)
{
  g_autoptr(JsonNode) node = cx_json_from_string(text, -1, NULL);
  g_assert(node != NULL && JSON_NODE_HOLDS_OBJECT(node));
  return json_object_ref(json_node_get_object(node));
}

static cx_env *
prelude(conformance_check *c, const char *code)
{
  GError *error = NULL;
  cx_env *env = cx_session_execute_prelude(c->session, code, &error);
  if (!conformance_no_error(c, error, "execute_prelude"))
    return NULL;
  if (env == NULL)
    conformance_fail(c, "execute_prelude returned no environment");
  return env;
}

/* The value of CODE in ENV with LOCALS (JSON text, may be NULL), or NULL
 * with the case failed. */
static JsonNode *
eval(conformance_check *c, cx_env *env, const char *code, const char *locals)
{
  if (conformance_done(c))
    return NULL;
  GError *error = NULL;
  g_autoptr(JsonObject) l = locals != NULL ? object_of(locals) : NULL;
  JsonNode *value = cx_env_evaluate_inline(env, code, l, &error);
  g_autofree char *what = g_strdup_printf("evaluate_inline(\"%s\")", code);
  conformance_no_error(c, error, what);
  return value;
}

/* VALUE (consumed, may be NULL) serialises to EXPECTED. */
static void
expect_json(conformance_check *c, JsonNode *value, const char *expected)
{
  g_autoptr(JsonNode) owned = value;
  if (conformance_done(c))
    return;
  g_autofree char *text = value != NULL ? json_to_string(value, FALSE) : g_strdup("(nothing)");
  if (strcmp(text, expected) != 0)
    conformance_fail(c, "expected %s, got %s", expected, text);
}

/* The operation that failed with ERROR (consumed: kept in *KEEP, so that
 * the details stay valid while the case reads them) raised TYPE, its
 * message holding MESSAGE (NULL: any), on LINE of its code (0: any line).
 * Returns the details, or NULL with the case failed (or skipped, for an
 * operation the plugin lacks). */
static const cx_python_error *
expect_raised(conformance_check *c, GError *error, GError **keep, const char *type,
              const char *message, int line)
{
  *keep = error;
  if (conformance_done(c))
    return NULL;
  if (error == NULL) {
    conformance_fail(c, "the operation succeeded, expected it to raise %s", type);
    return NULL;
  }
  if (g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED)) {
    conformance_skip(c, "%s", error->message);
    return NULL;
  }
  const cx_python_error *python = cx_error_get_python(error);
  if (python == NULL)
    conformance_fail(c, "expected the Python exception %s, got: %s", type, error->message);
  else if (strcmp(python->type, type) != 0)
    conformance_fail(c, "expected %s, got %s: %s", type, python->type, python->message);
  else if (message != NULL && strstr(python->message, message) == NULL)
    conformance_fail(c, "expected \"%s\" in the message of %s, got \"%s\"", message, type,
                     python->message);
  else if (line != 0 && python->line != line)
    conformance_fail(c, "%s was raised on line %d, expected line %d", type, python->line, line);
  return conformance_done(c) ? NULL : python;
}

/* ERROR (consumed) is the Python exception TYPE, its message holding
 * MESSAGE (may be NULL). */
static void
expect_python_error(conformance_check *c, GError *error, const char *type, const char *message)
{
  g_autoptr(GError) keep = NULL;
  expect_raised(c, error, &keep, type, message, 0);
}

static void
prelude_defines_globals(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 2\ndef double_x(a):\n    return a * x\n");
  RETURN_IF_DONE(c);
  expect_json(c, eval(c, env, "double_x(3)", NULL), "6");
}

static void
incremental_prelude_extends_the_environment(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 2");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  cx_env *same = cx_session_execute_prelude_incremental(c->session, env, "y = x + 1", &error);
  if (!conformance_no_error(c, error, "execute_prelude_incremental"))
    return;
  CHECK(c, same == env, "execute_prelude_incremental returned another environment than it was given");
  expect_json(c, eval(c, env, "[x, y]", NULL), "[2,3]");
}

static void
incremental_prelude_without_env_starts_one(conformance_check *c)
{
  GError *error = NULL;
  g_autoptr(cx_env) env = cx_session_execute_prelude_incremental(c->session, NULL, "z = 5", &error);
  if (!conformance_no_error(c, error, "execute_prelude_incremental"))
    return;
  expect_json(c, eval(c, env, "z", NULL), "5");
}

static void
environments_are_separate(conformance_check *c)
{
  g_autoptr(cx_env) a = prelude(c, "v = 'a'");
  g_autoptr(cx_env) b = prelude(c, "v = 'b'");
  RETURN_IF_DONE(c);
  expect_json(c, eval(c, a, "v", NULL), "\"a\"");
  expect_json(c, eval(c, b, "v", NULL), "\"b\"");
}

static void
inline_sees_locals_without_keeping_them(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 2");
  RETURN_IF_DONE(c);
  expect_json(c, eval(c, env, "a + x", "{\"a\": 5}"), "7");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "a", NULL, &error);
  CHECK(c, value == NULL, "a local of an earlier call is still visible");
  expect_python_error(c, error, "NameError", "'a'");
}

static void
values_cross_as_json(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  expect_json(c, eval(c, env, "{'s': 'x', 'n': None, 'b': True, 'f': 1.5, 'l': [1, (2, 3)]}", NULL),
              "{\"s\":\"x\",\"n\":null,\"b\":true,\"f\":1.5,\"l\":[1,[2,3]]}");
  expect_json(c, eval(c, env, "None", NULL), "null");
  expect_json(c, eval(c, env, "d['k'][1]", "{\"d\": {\"k\": [0, \"deep\"]}}"), "\"deep\"");
}

static void
objects_cross_as_references(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "class Box:\n    def __repr__(self): return 'Box()'\n");
  g_autoptr(JsonNode) ref = eval(c, env, "Box()", NULL);
  RETURN_IF_DONE(c);
  JsonObject *object = JSON_NODE_HOLDS_OBJECT(ref) ? json_node_get_object(ref) : NULL;
  CHECK(c, object != NULL && json_object_has_member(object, "$ref"), "Box() did not cross as a reference");
  const char *repr = json_object_get_string_member_with_default(object, "repr", "");
  CHECK(c, strcmp(repr, "Box()") == 0, "the reference's repr is \"%s\", expected \"Box()\"", repr);
  /* Passed back in a later call, it is the same object again. */
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_member(locals, "b", json_node_copy(ref));
  GError *error = NULL;
  g_autoptr(JsonNode) name = cx_env_evaluate_inline(env, "type(b).__name__", locals, &error);
  if (!conformance_no_error(c, error, "evaluate_inline with a reference"))
    return;
  expect_json(c, g_steal_pointer(&name), "\"Box\"");
}

static void
block_returns_its_value(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 2");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonObject) locals = object_of("{\"k\": 10}");
  JsonNode *value = cx_env_execute_block(env, "z = x * k\nreturn z", locals, &error);
  if (!conformance_no_error(c, error, "execute_block"))
    return;
  expect_json(c, value, "20");
  value = cx_env_execute_block(env, "w = 1", NULL, &error);
  if (!conformance_no_error(c, error, "execute_block"))
    return;
  expect_json(c, value, "null");
}

static void
block_writes_back_existing_names_only(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 2\nitems = []");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) ignored = cx_env_execute_block(env, "x = x + 40\nfresh = 1\nitems.append(x)", NULL, &error);
  if (!conformance_no_error(c, error, "execute_block"))
    return;
  expect_json(c, eval(c, env, "[x, items, 'fresh' in globals()]", NULL), "[42,[42],false]");
}

static void
side_effects_mutate_the_environment(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "counter = 1");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonObject) bindings = object_of("{\"step\": 5}");
  cx_env_execute_side_effects(env, "counter += step\nlabel = 'done'", bindings, 0, &error);
  if (!conformance_no_error(c, error, "execute_side_effects"))
    return;
  expect_json(c, eval(c, env, "[counter, label]", NULL), "[6,\"done\"]");
}

static void
side_effects_shift_error_lines(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  cx_env_execute_side_effects(env, "a = 1\nraise ValueError('bad input')", NULL, 40, &error);
  g_autoptr(GError) keep = NULL;
  const cx_python_error *python = expect_raised(c, error, &keep, "ValueError", NULL, 2 + 40);
  RETURN_IF_DONE(c);
  CHECK(c, strstr(python->traceback, "line 42") != NULL &&
             strstr(python->traceback, "raise ValueError('bad input')") != NULL,
        "the traceback does not show line 42 and its code: %s", python->traceback);
}

static void
errors_carry_type_message_traceback_and_line(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "def boom():\n    return 1 / 0\n");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "boom()", NULL, &error);
  CHECK(c, value == NULL, "boom() returned a value instead of raising");
  g_autoptr(GError) keep = NULL;
  const cx_python_error *python = expect_raised(c, error, &keep, "ZeroDivisionError", NULL, 1);
  RETURN_IF_DONE(c);
  CHECK(c, strcmp(python->message, "division by zero") == 0, "the message is \"%s\"", python->message);
  CHECK(c, strstr(python->traceback, "ZeroDivisionError: division by zero") != NULL &&
             strstr(python->traceback, "return 1 / 0") != NULL,
        "the traceback lacks the exception or the code: %s", python->traceback);
}

static void
syntax_errors_are_python_errors(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  cx_env_execute_side_effects(env, "ok = 1\nif True\n", NULL, 0, &error);
  g_autoptr(GError) keep = NULL;
  expect_raised(c, error, &keep, "SyntaxError", NULL, 2);
}

static JsonNode *
greet(JsonObject *arguments, gpointer user_data, GError **error)
{
  (*(int *)user_data)++;
  const char *name = json_object_get_string_member(arguments, "name");
  const char *punct = json_object_get_string_member(arguments, "punct");
  if (strcmp(name, "nobody") == 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "nobody to greet");
    return NULL;
  }
  g_autofree char *text = g_strdup_printf("Hello, %s%s", name, punct);
  return json_node_init_string(json_node_alloc(), text);
}

static const char *const greet_params[] = { "name", "punct", NULL };

static gboolean
bind(conformance_check *c, cx_env *env, const char *name, const char *const *params,
     JsonObject *defaults, cx_host_function function, gpointer data, GDestroyNotify destroy)
{
  if (conformance_done(c))
    return FALSE;
  GError *error = NULL;
  cx_env_create_dynamic_function(env, name, params, defaults, function, data, destroy, &error);
  return conformance_no_error(c, error, "create_dynamic_function");
}

static void
dynamic_function_has_the_signature(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "import inspect");
  int calls = 0;
  g_autoptr(JsonObject) defaults = object_of("{\"punct\": \"!\"}");
  if (!bind(c, env, "greet", greet_params, defaults, greet, &calls, NULL))
    return;
  expect_json(c, eval(c, env, "str(inspect.signature(greet))", NULL), "\"(name, punct='!')\"");
  expect_json(c, eval(c, env, "greet('Ada')", NULL), "\"Hello, Ada!\"");
  expect_json(c, eval(c, env, "greet(punct='?', name='Bo')", NULL), "\"Hello, Bo?\"");
  RETURN_IF_DONE(c);
  CHECK(c, calls == 2, "the host function ran %d times, expected 2", calls);
  GError *error = NULL;
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "greet()", NULL, &error);
  CHECK(c, value == NULL, "greet() without its argument returned a value");
  expect_python_error(c, error, "TypeError", "name");
}

static void
dynamic_function_errors_raise_in_python(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  int calls = 0;
  if (!bind(c, env, "greet", greet_params, NULL, greet, &calls, NULL))
    return;
  expect_json(c, eval(c, env, "(lambda: (greet('nobody', '.')))() if False else 'skipped'", NULL), "\"skipped\"");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "greet('nobody', '.')", NULL, &error);
  CHECK(c, value == NULL, "a host function that failed returned a value");
  expect_python_error(c, error, "RuntimeError", "nobody to greet");
  /* Python code may catch it like any exception. */
  g_autoptr(cx_env) env2 = prelude(c, "");
  if (!bind(c, env2, "greet", greet_params, NULL, greet, &calls, NULL))
    return;
  error = NULL;
  g_autoptr(JsonNode) caught = cx_env_execute_block(
    env2, "try:\n    greet('nobody', '.')\nexcept RuntimeError as e:\n    return str(e)", NULL, &error);
  if (!conformance_no_error(c, error, "execute_block"))
    return;
  CHECK(c, JSON_NODE_HOLDS_VALUE(caught) && strstr(json_node_get_string(caught), "nobody to greet") != NULL,
        "the caught exception does not say \"nobody to greet\"");
}

typedef struct {
  cx_env *env;
  int depth;
} nested_state;

/* A host function that calls back into the session it was called from. */
static JsonNode *
call_back_in(JsonObject *arguments, gpointer user_data, GError **error)
{
  nested_state *state = user_data;
  state->depth++;
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_int_member(locals, "n", json_object_get_int_member(arguments, "n"));
  return cx_env_evaluate_inline(state->env, "n * base", locals, error);
}

static void
dynamic_function_may_call_back_into_python(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "base = 7");
  nested_state state = { env, 0 };
  const char *const params[] = { "n", NULL };
  if (!bind(c, env, "times_base", params, NULL, call_back_in, &state, NULL))
    return;
  expect_json(c, eval(c, env, "times_base(6) + 0", NULL), "42");
  RETURN_IF_DONE(c);
  CHECK(c, state.depth == 1, "the host function ran %d times, expected 1", state.depth);
}

static void
count_destroy(gpointer data)
{
  (*(int *)data)++;
}

static void
dynamic_function_data_freed_with_env(conformance_check *c)
{
  int destroyed = 0;
  cx_env *env = prelude(c, "");
  RETURN_IF_DONE(c);
  const char *const params[] = { NULL };
  gboolean bound = bind(c, env, "f", params, NULL, greet, &destroyed, count_destroy);
  int before = destroyed;
  cx_env_free(env);
  if (!bound)
    return;
  CHECK(c, before == 0, "the host function's data was freed while its environment lived");
  CHECK(c, destroyed == 1, "freeing the environment freed the host function's data %d times, expected once",
        destroyed);
}

static void
expect_type(conformance_check *c, cx_env *env, const char *expression, const char *expected)
{
  if (conformance_done(c))
    return;
  GError *error = NULL;
  JsonNode *type = cx_env_evaluate_type_expression(env, expression, &error);
  if (conformance_no_error(c, error, "evaluate_type_expression"))
    expect_json(c, type, expected);
}

static void
type_expressions_become_descriptors(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "import typing\nfrom typing import Literal, Optional\nclass Point:\n    pass\n");
  RETURN_IF_DONE(c);
  expect_type(c, env, "int", "{\"kind\":\"builtin\",\"name\":\"int\"}");
  expect_type(c, env, "None", "{\"kind\":\"none\"}");
  expect_type(c, env, "list[int] | None",
              "{\"kind\":\"union\",\"args\":[{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"list\"},"
              "\"args\":[{\"kind\":\"builtin\",\"name\":\"int\"}]},{\"kind\":\"none\"}]}");
  expect_type(c, env, "Optional[str]",
              "{\"kind\":\"union\",\"args\":[{\"kind\":\"builtin\",\"name\":\"str\"},{\"kind\":\"none\"}]}");
  expect_type(c, env, "Literal['a', 1]", "{\"kind\":\"literal\",\"values\":[\"a\",1]}");
  expect_type(c, env, "dict[str, list[float]]",
              "{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"dict\"},\"args\":[{\"kind\":\"builtin\",\"name\":\"str\"},"
              "{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"list\"},\"args\":[{\"kind\":\"builtin\",\"name\":\"float\"}]}]}");
  expect_type(c, env, "typing.Any", "{\"kind\":\"typing\",\"name\":\"Any\"}");
  expect_type(c, env, "Point", "{\"kind\":\"class\",\"module\":\"__main__\",\"qualname\":\"Point\"}");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) bad = cx_env_evaluate_type_expression(env, "3", &error);
  CHECK(c, bad == NULL, "3 became a type descriptor");
  expect_python_error(c, error, "TypeError", "not a type");
}

static void
snapshot_shows_the_environment(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "x = 1\nname = 'n'\nimport os\n");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonObject) snapshot = cx_env_snapshot(env, &error);
  if (!conformance_no_error(c, error, "env_snapshot"))
    return;
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), snapshot);
  g_autofree char *text = json_to_string(node, FALSE);
  JsonObject *os = json_object_get_object_member(snapshot, "os");
  CHECK(c, json_object_get_int_member_with_default(snapshot, "x", 0) == 1 &&
             g_strcmp0(json_object_get_string_member_with_default(snapshot, "name", NULL), "n") == 0 &&
             os != NULL && json_object_has_member(os, "$ref") &&
             !json_object_has_member(snapshot, "__builtins__"),
        "the snapshot is not {x: 1, name: \"n\", os: a reference} without __builtins__: %s", text);
}

static void
steps_reach_the_debug_exporter(conformance_check *c)
{
  const char *dir = conformance_tmpdir(c);
  RETURN_IF_DONE(c);
  g_autofree char *path = g_build_filename(dir, "steps.jsonl", NULL);
  cx_debug_exporter *exporter = cx_debug_exporter_new_jsonl(path, NULL, NULL);
  cx_session_set_debug_exporter(c->session, exporter);
  {
    g_autoptr(cx_env) env = prelude(c, "API_TOKEN = 'tok-123'\nx = 1");
    g_autoptr(JsonNode) value = env != NULL ? eval(c, env, "x + a", "{\"a\": 2}") : NULL;
    g_autoptr(JsonNode) failed = env != NULL ? cx_env_evaluate_inline(env, "undefined_name", NULL, NULL) : NULL;
  }
  cx_session_set_debug_exporter(c->session, NULL);
  cx_debug_exporter_free(exporter);
  RETURN_IF_DONE(c);
  g_autofree char *text = NULL;
  g_file_get_contents(path, &text, NULL, NULL);
  g_auto(GStrv) lines = g_strsplit(text != NULL ? text : "", "\n", -1);
  CHECK(c, g_strv_length(lines) == 4, "the export has %u lines, expected 3 events", g_strv_length(lines) - 1);
  g_autofree char *executor = g_strdup_printf("\"executor\":\"%s\"", c->name);
  const struct { guint line; const char *needle; gboolean present; } expected[] = {
    { 0, "\"step\":\"execute_prelude\"", TRUE },
    { 0, "\"API_TOKEN\":\"[redacted]\"", TRUE },
    /* The code is logged as written; environments never show the value. */
    { 1, "tok-123", FALSE },
    { 1, "\"API_TOKEN\":\"[redacted]\"", TRUE },
    { 1, "\"step\":\"evaluate_inline\"", TRUE },
    { 1, "\"inputs\":{\"a\":2}", TRUE },
    { 1, "\"outputs\":3", TRUE },
    { 1, executor, TRUE },
    { 2, "\"type\":\"NameError\"", TRUE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(expected); i++)
    CHECK(c, (strstr(lines[expected[i].line], expected[i].needle) != NULL) == expected[i].present,
          "event %u of the export %s %s: %s", expected[i].line + 1,
          expected[i].present ? "lacks" : "shows", expected[i].needle, lines[expected[i].line]);
}

/* NODE is a reference ({"$ref", "repr"} only) with REPR. */
static void
expect_ref(conformance_check *c, JsonNode *node, const char *repr)
{
  if (conformance_done(c))
    return;
  JsonObject *object = node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
  gboolean is_ref = object != NULL && json_object_has_member(object, "$ref") &&
                    json_object_get_size(object) == 2;
  const char *got = is_ref ? json_object_get_string_member_with_default(object, "repr", "") : "";
  if (!is_ref || strcmp(got, repr) != 0) {
    g_autofree char *text = node != NULL ? json_to_string(node, FALSE) : g_strdup("(nothing)");
    conformance_fail(c, "expected a reference with repr %s, got %s", repr, text);
  }
}

/* The value of CODE is a reference with REPR. */
static void
expect_eval_ref(conformance_check *c, cx_env *env, const char *code, const char *repr)
{
  g_autoptr(JsonNode) value = eval(c, env, code, NULL);
  expect_ref(c, value, repr);
}

/* VALUE (consumed, a reference) passed back as local `v`: CHECK is True. */
static void
expect_ref_resolves(conformance_check *c, cx_env *env, JsonNode *value, const char *check)
{
  if (conformance_done(c)) {
    if (value != NULL)
      json_node_unref(value);
    return;
  }
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_member(locals, "v", value);
  GError *error = NULL;
  JsonNode *result = cx_env_evaluate_inline(env, check, locals, &error);
  if (conformance_no_error(c, error, "evaluate_inline with references"))
    expect_json(c, result, "true");
}

static JsonNode *
copy_or_null(JsonNode *node)
{
  return node != NULL ? json_node_copy(node) : NULL;
}

static void
integers_beyond_64_bits_cross_as_references(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  /* json-glib would read these as -1, -1 and -9223372036854775808. */
  expect_eval_ref(c, env, "2**70", "1180591620717411303424");
  expect_eval_ref(c, env, "2**64", "18446744073709551616");
  expect_eval_ref(c, env, "2**63", "9223372036854775808");
  expect_eval_ref(c, env, "-2**63 - 1", "-9223372036854775809");
  expect_json(c, eval(c, env, "[2**63 - 1, -2**63]", NULL), "[9223372036854775807,-9223372036854775808]");
  expect_ref_resolves(c, env, eval(c, env, "2**70", NULL), "v == 2**70");
}

static void
nested_big_integers_cross_as_references(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  g_autoptr(JsonNode) value = env != NULL ? eval(c, env, "[2**70, {'k': 2**64, 'small': 1}, (1, 2**63)]", NULL) : NULL;
  RETURN_IF_DONE(c);
  JsonArray *array = JSON_NODE_HOLDS_ARRAY(value) ? json_node_get_array(value) : NULL;
  CHECK(c, array != NULL && json_array_get_length(array) == 3, "the list did not cross as a list of 3");
  expect_ref(c, json_array_get_element(array, 0), "1180591620717411303424");
  JsonObject *object = json_array_get_object_element(array, 1);
  expect_ref(c, json_object_get_member(object, "k"), "18446744073709551616");
  RETURN_IF_DONE(c);
  CHECK(c, json_object_get_int_member(object, "small") == 1, "a small int beside a big one did not cross as 1");
  JsonArray *pair = json_array_get_array_element(array, 2);
  CHECK(c, json_array_get_int_element(pair, 0) == 1, "the tuple's small int did not cross as 1");
  expect_ref(c, json_array_get_element(pair, 1), "9223372036854775808");
  expect_ref_resolves(c, env, copy_or_null(value), "v == [2**70, {'k': 2**64, 'small': 1}, [1, 2**63]]");
}

static void
strings_with_nul_cross_as_references(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  /* json-glib would cut them at the NUL: "a". */
  expect_eval_ref(c, env, "'a\\x00b'", "'a\\x00b'");
  expect_eval_ref(c, env, "'\\x00'", "'\\x00'");
  /* Not UTF-8 either: a lone surrogate. */
  expect_eval_ref(c, env, "'x\\ud800'", "'x\\ud800'");
  g_autoptr(JsonNode) nested = eval(c, env, "['a\\x00b', {'k': 'x\\x00'}, 'plain']", NULL);
  RETURN_IF_DONE(c);
  JsonArray *array = json_node_get_array(nested);
  expect_ref(c, json_array_get_element(array, 0), "'a\\x00b'");
  expect_ref(c, json_object_get_member(json_array_get_object_element(array, 1), "k"), "'x\\x00'");
  RETURN_IF_DONE(c);
  CHECK(c, g_strcmp0(json_array_get_string_element(array, 2), "plain") == 0, "'plain' did not cross as a string");
  expect_ref_resolves(c, env, copy_or_null(nested), "v == ['a\\x00b', {'k': 'x\\x00'}, 'plain']");
}

static void
dicts_with_nul_keys_cross_as_references(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  /* A key cannot be a reference: the dict as a whole is one. */
  expect_eval_ref(c, env, "{'a\\x00b': 1}", "{'a\\x00b': 1}");
  g_autoptr(JsonNode) nested = eval(c, env, "[{'a\\x00b': 1, 'c': 2}, {'c': 3}]", NULL);
  RETURN_IF_DONE(c);
  JsonArray *array = json_node_get_array(nested);
  expect_ref(c, json_array_get_element(array, 0), "{'a\\x00b': 1, 'c': 2}");
  RETURN_IF_DONE(c);
  CHECK(c, json_object_get_int_member(json_array_get_object_element(array, 1), "c") == 3,
        "{'c': 3} did not cross as an object");
  expect_ref_resolves(c, env, copy_or_null(nested), "v[0]['a\\x00b'] == 1 and v[1] == {'c': 3}");
}

static void
block_and_snapshot_keep_values_exact(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "big = 2**70\nsmall = 7\nglobals()['a\\x00b'] = 'x\\x00'\n");
  RETURN_IF_DONE(c);
  GError *error = NULL;
  g_autoptr(JsonNode) returned = cx_env_execute_block(env, "return big", NULL, &error);
  if (!conformance_no_error(c, error, "execute_block"))
    return;
  expect_ref(c, returned, "1180591620717411303424");
  RETURN_IF_DONE(c);
  g_autoptr(JsonObject) snapshot = cx_env_snapshot(env, &error);
  if (!conformance_no_error(c, error, "env_snapshot"))
    return;
  expect_ref(c, json_object_get_member(snapshot, "big"), "1180591620717411303424");
  RETURN_IF_DONE(c);
  CHECK(c, json_object_get_int_member_with_default(snapshot, "small", 0) == 7, "the snapshot lacks small = 7");
  /* A name JSON cannot carry is shown as its repr(). */
  expect_ref(c, json_object_get_member(snapshot, "'a\\x00b'"), "'x\\x00'");
  RETURN_IF_DONE(c);
  g_autoptr(JsonNode) type = cx_env_evaluate_type_expression(env, "Literal[2**70, 'a\\x00']", &error);
  if (!conformance_no_error(c, error, "evaluate_type_expression"))
    return;
  JsonArray *values = json_object_get_array_member(json_node_get_object(type), "values");
  CHECK(c, values != NULL && json_array_get_length(values) == 2, "the Literal's values are not a list of 2");
  expect_ref(c, json_array_get_element(values, 0), "1180591620717411303424");
  expect_ref(c, json_array_get_element(values, 1), "'a\\x00'");
}

/* Hands its argument `x` back unchanged. */
static JsonNode *
echo(JsonObject *arguments, gpointer user_data, GError **error)
{
  return json_node_copy(json_object_get_member(arguments, "x"));
}

static void
host_functions_get_and_return_exact_values(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  const char *const params[] = { "x", NULL };
  if (!bind(c, env, "echo", params, NULL, echo, NULL, NULL))
    return;
  /* What the host cannot hold reaches it as a reference, and comes back as
   * the same object. */
  expect_json(c, eval(c, env, "[echo(v) == v for v in (2**70, 'a\\x00b', {'k\\x00': [2**64]})]", NULL),
              "[true,true,true]");
  expect_json(c, eval(c, env, "[echo(v) is v for v in (2**70, 'a\\x00b')]", NULL), "[true,true]");
}

/* Every control character, escaped by cx_json_to_string() on its way into
 * Python (json-glib writes U+001F raw, which Python's json rejects). */
static void
host_strings_with_control_characters_arrive_exactly(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  char text[33];
  for (int i = 1; i < 32; i++)
    text[i - 1] = (char)i;
  text[31] = 0x7f;
  text[32] = '\0';
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_string_member(locals, "s", text);
  GError *error = NULL;
  JsonNode *same = cx_env_evaluate_inline(env, "s == ''.join(map(chr, [*range(1, 32), 127]))", locals, &error);
  if (!conformance_no_error(c, error, "evaluate_inline"))
    return;
  expect_json(c, same, "true");
  RETURN_IF_DONE(c);
  g_autoptr(JsonNode) back = cx_env_evaluate_inline(env, "s", locals, &error);
  if (!conformance_no_error(c, error, "evaluate_inline"))
    return;
  CHECK(c, JSON_NODE_HOLDS_VALUE(back) && g_strcmp0(json_node_get_string(back), text) == 0,
        "the control characters did not come back unchanged");
}

/* Integers at the ends of the 64-bit range and doubles json-glib writes in
 * exponent form, both ways. */
static void
numbers_cross_exactly(conformance_check *c)
{
  g_autoptr(cx_env) env = prelude(c, "");
  RETURN_IF_DONE(c);
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_int_member(locals, "max", G_MAXINT64);
  json_object_set_int_member(locals, "min", G_MININT64);
  json_object_set_double_member(locals, "big", 1e20);
  json_object_set_double_member(locals, "tiny", 5e-324);
  json_object_set_double_member(locals, "two", 2.0);
  GError *error = NULL;
  JsonNode *checks = cx_env_evaluate_inline(env,
    "[max == 2**63 - 1, min == -2**63, big == 1e20, tiny == 5e-324, "
    "[type(x).__name__ for x in (max, big, two)]]", locals, &error);
  if (!conformance_no_error(c, error, "evaluate_inline"))
    return;
  expect_json(c, checks, "[true,true,true,true,[\"int\",\"float\",\"float\"]]");
  RETURN_IF_DONE(c);
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "[0.1, 1e20, 1e300, 5e-324, 2.0, -0.0, 2**63 - 1]",
                                                     NULL, &error);
  if (!conformance_no_error(c, error, "evaluate_inline"))
    return;
  JsonArray *array = json_node_get_array(value);
  const double expected[] = { 0.1, 1e20, 1e300, 5e-324, 2.0, -0.0 };
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    JsonNode *element = json_array_get_element(array, i);
    CHECK(c, json_node_get_value_type(element) == G_TYPE_DOUBLE && json_node_get_double(element) == expected[i],
          "element %u of the list did not cross as the double %g", i, expected[i]);
  }
  CHECK(c, signbit(json_array_get_double_element(array, 5)), "-0.0 lost its sign");
  CHECK(c, json_array_get_int_element(array, 6) == G_MAXINT64, "2**63 - 1 did not cross exactly");
}

#define EXECUTOR_CASE(name) { "executor_" #name, CONFORMANCE_NEEDS_EXECUTOR, name }

const conformance_case conformance_executor_cases[] = {
  EXECUTOR_CASE(prelude_defines_globals),
  EXECUTOR_CASE(incremental_prelude_extends_the_environment),
  EXECUTOR_CASE(incremental_prelude_without_env_starts_one),
  EXECUTOR_CASE(environments_are_separate),
  EXECUTOR_CASE(inline_sees_locals_without_keeping_them),
  EXECUTOR_CASE(values_cross_as_json),
  EXECUTOR_CASE(objects_cross_as_references),
  EXECUTOR_CASE(block_returns_its_value),
  EXECUTOR_CASE(block_writes_back_existing_names_only),
  EXECUTOR_CASE(side_effects_mutate_the_environment),
  EXECUTOR_CASE(side_effects_shift_error_lines),
  EXECUTOR_CASE(errors_carry_type_message_traceback_and_line),
  EXECUTOR_CASE(syntax_errors_are_python_errors),
  EXECUTOR_CASE(dynamic_function_has_the_signature),
  EXECUTOR_CASE(dynamic_function_errors_raise_in_python),
  EXECUTOR_CASE(dynamic_function_may_call_back_into_python),
  EXECUTOR_CASE(dynamic_function_data_freed_with_env),
  EXECUTOR_CASE(type_expressions_become_descriptors),
  EXECUTOR_CASE(snapshot_shows_the_environment),
  EXECUTOR_CASE(steps_reach_the_debug_exporter),
  EXECUTOR_CASE(integers_beyond_64_bits_cross_as_references),
  EXECUTOR_CASE(nested_big_integers_cross_as_references),
  EXECUTOR_CASE(strings_with_nul_cross_as_references),
  EXECUTOR_CASE(dicts_with_nul_keys_cross_as_references),
  EXECUTOR_CASE(block_and_snapshot_keep_values_exact),
  EXECUTOR_CASE(host_functions_get_and_return_exact_values),
  EXECUTOR_CASE(host_strings_with_control_characters_arrive_exactly),
  EXECUTOR_CASE(numbers_cross_exactly),
  { NULL, 0, NULL }
};
