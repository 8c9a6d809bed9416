/* The executor operations: one table of cases, run against every backend
 * on the plugin path that implements the executor vtable.  A third-party
 * backend runs the same table with
 *   CELLEXEC_PLUGIN_PATH=/its/dir CELLEXEC_EXECUTOR_BACKENDS=its-name tests/test_executor
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cx_test.h"

static cx_registry *registry;
static GPtrArray *backends; /* names of the backends under test */

/* One case: gets a fresh session and its backend's name. */
typedef void (*executor_case)(cx_session *session, const char *backend);

static void
for_each_backend(executor_case run_case)
{
  CU_ASSERT_TRUE_FATAL(backends->len > 0);
  for (guint i = 0; i < backends->len; i++) {
    const char *name = g_ptr_array_index(backends, i);
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_backend_open(registry, name, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    run_case(session, name);
  }
}

#define EXECUTOR_TEST(name)                                                 \
  static void name##_case(cx_session *session, const char *backend);        \
  static void name(void) { for_each_backend(name##_case); }                 \
  static void name##_case(cx_session *session, const char *backend)

/* Parse JSON text (for expected values and arguments). */
static JsonNode *
json(const char *text)
{
  g_autoptr(GError) error = NULL;
  JsonNode *node = json_from_string(text, &error);
  g_assert_no_error(error);
  return node;
}

static JsonObject *
json_object(const char *text)
{
  g_autoptr(JsonNode) node = json(text);
  return json_object_ref(json_node_get_object(node));
}

/* Assert that VALUE (consumed) serialises to EXPECTED, naming BACKEND. */
static void
assert_json(const char *backend, JsonNode *value, const char *expected)
{
  g_autofree char *text = value != NULL ? json_to_string(value, FALSE) : g_strdup("(NULL)");
  if (strcmp(text, expected) != 0)
    fprintf(stderr, "\n  [%s] expected %s, got %s\n", backend, expected, text);
  CU_ASSERT_STRING_EQUAL(text, expected);
  if (value != NULL)
    json_node_unref(value);
}

static cx_env *
prelude(cx_session *session, const char *code)
{
  g_autoptr(GError) error = NULL;
  cx_env *env = cx_session_execute_prelude(session, code, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(env);
  return env;
}

static JsonNode *
eval(cx_env *env, const char *code, const char *locals)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonObject) l = locals != NULL ? json_object(locals) : NULL;
  JsonNode *value = cx_env_evaluate_inline(env, code, l, &error);
  CX_ASSERT_NO_ERROR(error);
  return value;
}

/* The Python exception an operation raised; ERROR is consumed. */
static void
assert_python_error(GError *error, const char *type, const char *message)
{
  CX_ASSERT_ERROR(error, CX_ERROR_PYTHON);
  const cx_python_error *python = cx_error_get_python(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(python);
  CU_ASSERT_STRING_EQUAL(python->type, type);
  if (message != NULL)
    CX_ASSERT_CONTAINS(python->message, message);
  g_error_free(error);
}

EXECUTOR_TEST(test_executor_prelude_defines_globals)
{
  g_autoptr(cx_env) env = prelude(session, "x = 2\ndef double_x(a):\n    return a * x\n");
  assert_json(backend, eval(env, "double_x(3)", NULL), "6");
}

EXECUTOR_TEST(test_executor_incremental_prelude_extends_the_environment)
{
  g_autoptr(cx_env) env = prelude(session, "x = 2");
  g_autoptr(GError) error = NULL;
  cx_env *same = cx_session_execute_prelude_incremental(session, env, "y = x + 1", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_EQUAL(same, env);
  assert_json(backend, eval(env, "[x, y]", NULL), "[2,3]");
}

EXECUTOR_TEST(test_executor_incremental_prelude_without_env_starts_one)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_env) env = cx_session_execute_prelude_incremental(session, NULL, "z = 5", &error);
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, eval(env, "z", NULL), "5");
}

EXECUTOR_TEST(test_executor_environments_are_separate)
{
  g_autoptr(cx_env) a = prelude(session, "v = 'a'");
  g_autoptr(cx_env) b = prelude(session, "v = 'b'");
  assert_json(backend, eval(a, "v", NULL), "\"a\"");
  assert_json(backend, eval(b, "v", NULL), "\"b\"");
}

EXECUTOR_TEST(test_executor_inline_sees_locals_without_keeping_them)
{
  g_autoptr(cx_env) env = prelude(session, "x = 2");
  assert_json(backend, eval(env, "a + x", "{\"a\": 5}"), "7");
  g_autoptr(GError) error = NULL;
  JsonNode *value = cx_env_evaluate_inline(env, "a", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  assert_python_error(g_steal_pointer(&error), "NameError", "'a'");
}

EXECUTOR_TEST(test_executor_values_cross_as_json)
{
  g_autoptr(cx_env) env = prelude(session, "");
  assert_json(backend, eval(env, "{'s': 'x', 'n': None, 'b': True, 'f': 1.5, 'l': [1, (2, 3)]}", NULL),
              "{\"s\":\"x\",\"n\":null,\"b\":true,\"f\":1.5,\"l\":[1,[2,3]]}");
  assert_json(backend, eval(env, "None", NULL), "null");
  assert_json(backend, eval(env, "d['k'][1]", "{\"d\": {\"k\": [0, \"deep\"]}}"), "\"deep\"");
}

EXECUTOR_TEST(test_executor_objects_cross_as_references)
{
  g_autoptr(cx_env) env = prelude(session, "class Box:\n    def __repr__(self): return 'Box()'\n");
  g_autoptr(JsonNode) ref = eval(env, "Box()", NULL);
  JsonObject *object = json_node_get_object(ref);
  CU_ASSERT_TRUE_FATAL(json_object_has_member(object, "$ref"));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "repr"), "Box()");
  /* Passed back in a later call, it is the same object again. */
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_member(locals, "b", json_node_copy(ref));
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) name = cx_env_evaluate_inline(env, "type(b).__name__", locals, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(json_node_get_string(name), "Box");
}

EXECUTOR_TEST(test_executor_block_returns_its_value)
{
  g_autoptr(cx_env) env = prelude(session, "x = 2");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonObject) locals = json_object("{\"k\": 10}");
  assert_json(backend, cx_env_execute_block(env, "z = x * k\nreturn z", locals, &error), "20");
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, cx_env_execute_block(env, "w = 1", NULL, &error), "null");
  CX_ASSERT_NO_ERROR(error);
}

EXECUTOR_TEST(test_executor_block_writes_back_existing_names_only)
{
  g_autoptr(cx_env) env = prelude(session, "x = 2\nitems = []");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) ignored = cx_env_execute_block(env, "x = x + 40\nfresh = 1\nitems.append(x)", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, eval(env, "[x, items, 'fresh' in globals()]", NULL), "[42,[42],false]");
}

EXECUTOR_TEST(test_executor_side_effects_mutate_the_environment)
{
  g_autoptr(cx_env) env = prelude(session, "counter = 1");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonObject) bindings = json_object("{\"step\": 5}");
  CU_ASSERT_TRUE(cx_env_execute_side_effects(env, "counter += step\nlabel = 'done'", bindings, 0, &error));
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, eval(env, "[counter, label]", NULL), "[6,\"done\"]");
}

EXECUTOR_TEST(test_executor_side_effects_shift_error_lines)
{
  g_autoptr(cx_env) env = prelude(session, "");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_env_execute_side_effects(env, "a = 1\nraise ValueError('bad input')", NULL, 40, &error));
  const cx_python_error *python = cx_error_get_python(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(python);
  CU_ASSERT_STRING_EQUAL(python->type, "ValueError");
  CU_ASSERT_EQUAL(python->line, 42);
  CX_ASSERT_CONTAINS(python->traceback, "line 42");
  CX_ASSERT_CONTAINS(python->traceback, "raise ValueError('bad input')");
}

EXECUTOR_TEST(test_executor_errors_carry_type_message_traceback_and_line)
{
  g_autoptr(cx_env) env = prelude(session, "def boom():\n    return 1 / 0\n");
  g_autoptr(GError) error = NULL;
  JsonNode *value = cx_env_evaluate_inline(env, "boom()", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  const cx_python_error *python = cx_error_get_python(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(python);
  CU_ASSERT_STRING_EQUAL(python->type, "ZeroDivisionError");
  CU_ASSERT_STRING_EQUAL(python->message, "division by zero");
  CX_ASSERT_CONTAINS(python->traceback, "ZeroDivisionError: division by zero");
  CX_ASSERT_CONTAINS(python->traceback, "return 1 / 0");
  CU_ASSERT_EQUAL(python->line, 1);
}

EXECUTOR_TEST(test_executor_syntax_errors_are_python_errors)
{
  g_autoptr(cx_env) env = prelude(session, "");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_env_execute_side_effects(env, "ok = 1\nif True\n", NULL, 0, &error));
  const cx_python_error *python = cx_error_get_python(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(python);
  CU_ASSERT_STRING_EQUAL(python->type, "SyntaxError");
  CU_ASSERT_EQUAL(python->line, 2);
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

EXECUTOR_TEST(test_executor_dynamic_function_has_the_signature)
{
  g_autoptr(cx_env) env = prelude(session, "import inspect");
  int calls = 0;
  const char *const params[] = { "name", "punct", NULL };
  g_autoptr(JsonObject) defaults = json_object("{\"punct\": \"!\"}");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "greet", params, defaults, greet, &calls, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, eval(env, "str(inspect.signature(greet))", NULL), "\"(name, punct='!')\"");
  assert_json(backend, eval(env, "greet('Ada')", NULL), "\"Hello, Ada!\"");
  assert_json(backend, eval(env, "greet(punct='?', name='Bo')", NULL), "\"Hello, Bo?\"");
  CU_ASSERT_EQUAL(calls, 2);
  JsonNode *value = cx_env_evaluate_inline(env, "greet()", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  assert_python_error(g_steal_pointer(&error), "TypeError", "name");
}

EXECUTOR_TEST(test_executor_dynamic_function_errors_raise_in_python)
{
  g_autoptr(cx_env) env = prelude(session, "");
  int calls = 0;
  const char *const params[] = { "name", "punct", NULL };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "greet", params, NULL, greet, &calls, NULL, &error));
  assert_json(backend, eval(env, "(lambda: (greet('nobody', '.')))() if False else 'skipped'", NULL), "\"skipped\"");
  JsonNode *value = cx_env_evaluate_inline(env, "greet('nobody', '.')", NULL, &error);
  CU_ASSERT_PTR_NULL(value);
  assert_python_error(g_steal_pointer(&error), "RuntimeError", "nobody to greet");
  /* Python code may catch it like any exception. */
  g_autoptr(cx_env) env2 = prelude(session, "");
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env2, "greet", params, NULL, greet, &calls, NULL, NULL));
  g_autoptr(JsonNode) caught = cx_env_execute_block(env2, "try:\n    greet('nobody', '.')\nexcept RuntimeError as e:\n    return str(e)", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CONTAINS(json_node_get_string(caught), "nobody to greet");
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

EXECUTOR_TEST(test_executor_dynamic_function_may_call_back_into_python)
{
  g_autoptr(cx_env) env = prelude(session, "base = 7");
  nested_state state = { env, 0 };
  const char *const params[] = { "n", NULL };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "times_base", params, NULL, call_back_in, &state, NULL, &error));
  assert_json(backend, eval(env, "times_base(6) + 0", NULL), "42");
  CU_ASSERT_EQUAL(state.depth, 1);
}

static void
count_destroy(gpointer data)
{
  (*(int *)data)++;
}

EXECUTOR_TEST(test_executor_dynamic_function_data_freed_with_env)
{
  int destroyed = 0;
  cx_env *env = prelude(session, "");
  const char *const params[] = { NULL };
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "f", params, NULL, greet, &destroyed, count_destroy, NULL));
  CU_ASSERT_EQUAL(destroyed, 0);
  cx_env_free(env);
  CU_ASSERT_EQUAL(destroyed, 1);
}

static void
assert_type(cx_env *env, const char *backend, const char *expression, const char *expected)
{
  g_autoptr(GError) error = NULL;
  JsonNode *type = cx_env_evaluate_type_expression(env, expression, &error);
  CX_ASSERT_NO_ERROR(error);
  assert_json(backend, type, expected);
}

EXECUTOR_TEST(test_executor_type_expressions_become_descriptors)
{
  g_autoptr(cx_env) env = prelude(session, "import typing\nfrom typing import Literal, Optional\nclass Point:\n    pass\n");
  assert_type(env, backend, "int", "{\"kind\":\"builtin\",\"name\":\"int\"}");
  assert_type(env, backend, "None", "{\"kind\":\"none\"}");
  assert_type(env, backend, "list[int] | None",
              "{\"kind\":\"union\",\"args\":[{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"list\"},"
              "\"args\":[{\"kind\":\"builtin\",\"name\":\"int\"}]},{\"kind\":\"none\"}]}");
  assert_type(env, backend, "Optional[str]",
              "{\"kind\":\"union\",\"args\":[{\"kind\":\"builtin\",\"name\":\"str\"},{\"kind\":\"none\"}]}");
  assert_type(env, backend, "Literal['a', 1]", "{\"kind\":\"literal\",\"values\":[\"a\",1]}");
  assert_type(env, backend, "dict[str, list[float]]",
              "{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"dict\"},\"args\":[{\"kind\":\"builtin\",\"name\":\"str\"},"
              "{\"kind\":\"generic\",\"origin\":{\"kind\":\"builtin\",\"name\":\"list\"},\"args\":[{\"kind\":\"builtin\",\"name\":\"float\"}]}]}");
  assert_type(env, backend, "typing.Any", "{\"kind\":\"typing\",\"name\":\"Any\"}");
  assert_type(env, backend, "Point", "{\"kind\":\"class\",\"module\":\"__main__\",\"qualname\":\"Point\"}");
  g_autoptr(GError) error = NULL;
  JsonNode *bad = cx_env_evaluate_type_expression(env, "3", &error);
  CU_ASSERT_PTR_NULL(bad);
  assert_python_error(g_steal_pointer(&error), "TypeError", "not a type");
}

EXECUTOR_TEST(test_executor_snapshot_shows_the_environment)
{
  g_autoptr(cx_env) env = prelude(session, "x = 1\nname = 'n'\nimport os\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonObject) snapshot = cx_env_snapshot(env, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(json_object_get_int_member(snapshot, "x"), 1);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(snapshot, "name"), "n");
  CU_ASSERT_TRUE(json_object_has_member(json_object_get_object_member(snapshot, "os"), "$ref"));
  CU_ASSERT_FALSE(json_object_has_member(snapshot, "__builtins__"));
}

EXECUTOR_TEST(test_executor_steps_reach_the_debug_exporter)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "steps.jsonl", NULL);
  cx_debug_exporter *exporter = cx_debug_exporter_new_jsonl(path, NULL, NULL);
  cx_session_set_debug_exporter(session, exporter);
  {
    g_autoptr(cx_env) env = prelude(session, "API_TOKEN = 'tok-123'\nx = 1");
    g_autoptr(JsonNode) value = eval(env, "x + a", "{\"a\": 2}");
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) failed = cx_env_evaluate_inline(env, "undefined_name", NULL, &error);
  }
  cx_session_set_debug_exporter(session, NULL);
  cx_debug_exporter_free(exporter);
  g_autofree char *text = NULL;
  g_file_get_contents(path, &text, NULL, NULL);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 4);
  CX_ASSERT_CONTAINS(lines[0], "\"step\":\"execute_prelude\"");
  CX_ASSERT_CONTAINS(lines[0], "\"API_TOKEN\":\"[redacted]\"");
  /* The code is logged as written; environments never show the value. */
  CU_ASSERT_PTR_NULL(strstr(lines[1], "tok-123"));
  CX_ASSERT_CONTAINS(lines[1], "\"API_TOKEN\":\"[redacted]\"");
  CX_ASSERT_CONTAINS(lines[1], "\"step\":\"evaluate_inline\"");
  CX_ASSERT_CONTAINS(lines[1], "\"inputs\":{\"a\":2}");
  CX_ASSERT_CONTAINS(lines[1], "\"outputs\":3");
  CX_ASSERT_CONTAINS(lines[2], "\"type\":\"NameError\"");
  g_autofree char *executor = g_strdup_printf("\"executor\":\"%s\"", backend);
  CX_ASSERT_CONTAINS(lines[1], executor);
}

/* A value with no exact JSON form crosses as a reference: NODE is one,
 * with REPR. */
static void
assert_ref(const char *backend, JsonNode *node, const char *repr)
{
  JsonObject *object = node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
  gboolean is_ref = object != NULL && json_object_has_member(object, "$ref") &&
                    json_object_get_size(object) == 2;
  const char *got = is_ref ? json_object_get_string_member_with_default(object, "repr", "") : "";
  if (!is_ref || strcmp(got, repr) != 0) {
    g_autofree char *text = node != NULL ? json_to_string(node, FALSE) : g_strdup("(NULL)");
    fprintf(stderr, "\n  [%s] expected a reference with repr %s, got %s\n", backend, repr, text);
  }
  CU_ASSERT_TRUE(is_ref);
  CU_ASSERT_STRING_EQUAL(got, repr);
}

/* The value of CODE is a reference with REPR. */
static void
assert_eval_ref(cx_env *env, const char *backend, const char *code, const char *repr)
{
  g_autoptr(JsonNode) value = eval(env, code, NULL);
  assert_ref(backend, value, repr);
}

/* VALUE (consumed, a reference) passed back as local `v`: CHECK is True. */
static void
assert_ref_resolves(cx_env *env, const char *backend, JsonNode *value, const char *check)
{
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_member(locals, "v", value);
  g_autoptr(GError) error = NULL;
  assert_json(backend, cx_env_evaluate_inline(env, check, locals, &error), "true");
  CX_ASSERT_NO_ERROR(error);
}

EXECUTOR_TEST(test_executor_integers_beyond_64_bits_cross_as_references)
{
  g_autoptr(cx_env) env = prelude(session, "");
  /* json-glib would read these as -1, -1 and -9223372036854775808. */
  assert_eval_ref(env, backend, "2**70", "1180591620717411303424");
  assert_eval_ref(env, backend, "2**64", "18446744073709551616");
  assert_eval_ref(env, backend, "2**63", "9223372036854775808");
  assert_eval_ref(env, backend, "-2**63 - 1", "-9223372036854775809");
  assert_json(backend, eval(env, "[2**63 - 1, -2**63]", NULL), "[9223372036854775807,-9223372036854775808]");
  assert_ref_resolves(env, backend, eval(env, "2**70", NULL), "v == 2**70");
}

EXECUTOR_TEST(test_executor_nested_big_integers_cross_as_references)
{
  g_autoptr(cx_env) env = prelude(session, "");
  g_autoptr(JsonNode) value = eval(env, "[2**70, {'k': 2**64, 'small': 1}, (1, 2**63)]", NULL);
  CU_ASSERT_TRUE_FATAL(JSON_NODE_HOLDS_ARRAY(value));
  JsonArray *array = json_node_get_array(value);
  CU_ASSERT_EQUAL_FATAL(json_array_get_length(array), 3);
  assert_ref(backend, json_array_get_element(array, 0), "1180591620717411303424");
  JsonObject *object = json_array_get_object_element(array, 1);
  assert_ref(backend, json_object_get_member(object, "k"), "18446744073709551616");
  CU_ASSERT_EQUAL(json_object_get_int_member(object, "small"), 1);
  JsonArray *pair = json_array_get_array_element(array, 2);
  CU_ASSERT_EQUAL(json_array_get_int_element(pair, 0), 1);
  assert_ref(backend, json_array_get_element(pair, 1), "9223372036854775808");
  assert_ref_resolves(env, backend, json_node_copy(value),
                      "v == [2**70, {'k': 2**64, 'small': 1}, [1, 2**63]]");
}

EXECUTOR_TEST(test_executor_strings_with_nul_cross_as_references)
{
  g_autoptr(cx_env) env = prelude(session, "");
  /* json-glib would cut them at the NUL: "a". */
  assert_eval_ref(env, backend, "'a\\x00b'", "'a\\x00b'");
  assert_eval_ref(env, backend, "'\\x00'", "'\\x00'");
  /* Not UTF-8 either: a lone surrogate. */
  assert_eval_ref(env, backend, "'x\\ud800'", "'x\\ud800'");
  g_autoptr(JsonNode) nested = eval(env, "['a\\x00b', {'k': 'x\\x00'}, 'plain']", NULL);
  JsonArray *array = json_node_get_array(nested);
  assert_ref(backend, json_array_get_element(array, 0), "'a\\x00b'");
  assert_ref(backend, json_object_get_member(json_array_get_object_element(array, 1), "k"), "'x\\x00'");
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(array, 2), "plain");
  assert_ref_resolves(env, backend, json_node_copy(nested), "v == ['a\\x00b', {'k': 'x\\x00'}, 'plain']");
}

EXECUTOR_TEST(test_executor_dicts_with_nul_keys_cross_as_references)
{
  g_autoptr(cx_env) env = prelude(session, "");
  /* A key cannot be a reference: the dict as a whole is one. */
  assert_eval_ref(env, backend, "{'a\\x00b': 1}", "{'a\\x00b': 1}");
  g_autoptr(JsonNode) nested = eval(env, "[{'a\\x00b': 1, 'c': 2}, {'c': 3}]", NULL);
  JsonArray *array = json_node_get_array(nested);
  assert_ref(backend, json_array_get_element(array, 0), "{'a\\x00b': 1, 'c': 2}");
  CU_ASSERT_EQUAL(json_object_get_int_member(json_array_get_object_element(array, 1), "c"), 3);
  assert_ref_resolves(env, backend, json_node_copy(nested), "v[0]['a\\x00b'] == 1 and v[1] == {'c': 3}");
}

EXECUTOR_TEST(test_executor_block_and_snapshot_keep_values_exact)
{
  g_autoptr(cx_env) env = prelude(session, "big = 2**70\nsmall = 7\nglobals()['a\\x00b'] = 'x\\x00'\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) returned = cx_env_execute_block(env, "return big", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  assert_ref(backend, returned, "1180591620717411303424");
  g_autoptr(JsonObject) snapshot = cx_env_snapshot(env, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(snapshot);
  assert_ref(backend, json_object_get_member(snapshot, "big"), "1180591620717411303424");
  CU_ASSERT_EQUAL(json_object_get_int_member(snapshot, "small"), 7);
  /* A name JSON cannot carry is shown as its repr(). */
  assert_ref(backend, json_object_get_member(snapshot, "'a\\x00b'"), "'x\\x00'");
  g_autoptr(JsonNode) type = cx_env_evaluate_type_expression(env, "Literal[2**70, 'a\\x00']", &error);
  CX_ASSERT_NO_ERROR(error);
  JsonArray *values = json_object_get_array_member(json_node_get_object(type), "values");
  assert_ref(backend, json_array_get_element(values, 0), "1180591620717411303424");
  assert_ref(backend, json_array_get_element(values, 1), "'a\\x00'");
}

/* Hands its argument `x` back unchanged. */
static JsonNode *
echo(JsonObject *arguments, gpointer user_data, GError **error)
{
  return json_node_copy(json_object_get_member(arguments, "x"));
}

EXECUTOR_TEST(test_executor_host_functions_get_and_return_exact_values)
{
  g_autoptr(cx_env) env = prelude(session, "");
  const char *const params[] = { "x", NULL };
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_env_create_dynamic_function(env, "echo", params, NULL, echo, NULL, NULL, &error));
  CX_ASSERT_NO_ERROR(error);
  /* What the host cannot hold reaches it as a reference, and comes back as
   * the same object. */
  assert_json(backend, eval(env, "[echo(v) == v for v in (2**70, 'a\\x00b', {'k\\x00': [2**64]})]", NULL),
              "[true,true,true]");
  assert_json(backend, eval(env, "[echo(v) is v for v in (2**70, 'a\\x00b')]", NULL), "[true,true]");
}

/* Every control character, escaped by cx_json_to_string() on its way into
 * Python (json-glib writes U+001F raw, which Python's json rejects). */
EXECUTOR_TEST(test_executor_host_strings_with_control_characters_arrive_exactly)
{
  g_autoptr(cx_env) env = prelude(session, "");
  char text[33];
  for (int c = 1; c < 32; c++)
    text[c - 1] = (char)c;
  text[31] = 0x7f;
  text[32] = '\0';
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_string_member(locals, "s", text);
  g_autoptr(GError) error = NULL;
  assert_json(backend, cx_env_evaluate_inline(env, "s == ''.join(map(chr, [*range(1, 32), 127]))", locals, &error),
              "true");
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) back = cx_env_evaluate_inline(env, "s", locals, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(json_node_get_string(back), text);
}

/* Integers at the ends of the 64-bit range and doubles json-glib writes in
 * exponent form, both ways. */
EXECUTOR_TEST(test_executor_numbers_cross_exactly)
{
  g_autoptr(cx_env) env = prelude(session, "");
  g_autoptr(JsonObject) locals = json_object_new();
  json_object_set_int_member(locals, "max", G_MAXINT64);
  json_object_set_int_member(locals, "min", G_MININT64);
  json_object_set_double_member(locals, "big", 1e20);
  json_object_set_double_member(locals, "tiny", 5e-324);
  json_object_set_double_member(locals, "two", 2.0);
  g_autoptr(GError) error = NULL;
  assert_json(backend, cx_env_evaluate_inline(env,
                "[max == 2**63 - 1, min == -2**63, big == 1e20, tiny == 5e-324, "
                "[type(x).__name__ for x in (max, big, two)]]", locals, &error),
              "[true,true,true,true,[\"int\",\"float\",\"float\"]]");
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) value = cx_env_evaluate_inline(env, "[0.1, 1e20, 1e300, 5e-324, 2.0, -0.0, 2**63 - 1]",
                                                     NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(value);
  JsonArray *array = json_node_get_array(value);
  const double expected[] = { 0.1, 1e20, 1e300, 5e-324, 2.0, -0.0 };
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    JsonNode *element = json_array_get_element(array, i);
    CU_ASSERT_EQUAL(json_node_get_value_type(element), G_TYPE_DOUBLE);
    CU_ASSERT_TRUE(json_node_get_double(element) == expected[i]);
  }
  CU_ASSERT_TRUE(signbit(json_array_get_double_element(array, 5)));
  CU_ASSERT_EQUAL(json_array_get_int_element(array, 6), G_MAXINT64);
}

void
cx_test_register(void)
{
  const char *const path[] = { cx_test_plugins_dir(), NULL };
  const char *extra = g_getenv("CELLEXEC_PLUGIN_PATH");
  g_auto(GStrv) dirs = g_strsplit(extra != NULL ? extra : "", ":", -1);
  registry = dirs[0] != NULL && *dirs[0] != '\0' ? cx_registry_new_for_path((const char *const *)dirs)
                                                  : cx_registry_new_for_path(path);
  backends = g_ptr_array_new_with_free_func(g_free);
  const char *only = g_getenv("CELLEXEC_EXECUTOR_BACKENDS");
  g_auto(GStrv) wanted = only != NULL ? g_strsplit(only, ",", -1) : NULL;
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++) {
    const cx_plugin_info *info = cx_registry_get_plugin(registry, i);
    const char *name = cx_plugin_info_get_name(info);
    if (cx_plugin_info_has_executor(info) && (wanted == NULL || g_strv_contains((const char *const *)wanted, name)))
      g_ptr_array_add(backends, g_strdup(name));
  }
  fprintf(stderr, "executor backends under test:");
  for (guint i = 0; i < backends->len; i++)
    fprintf(stderr, " %s", (const char *)g_ptr_array_index(backends, i));
  fprintf(stderr, "\n");

  static const cx_test_case tests[] = {
    { "test_executor_prelude_defines_globals", test_executor_prelude_defines_globals },
    { "test_executor_incremental_prelude_extends_the_environment", test_executor_incremental_prelude_extends_the_environment },
    { "test_executor_incremental_prelude_without_env_starts_one", test_executor_incremental_prelude_without_env_starts_one },
    { "test_executor_environments_are_separate", test_executor_environments_are_separate },
    { "test_executor_inline_sees_locals_without_keeping_them", test_executor_inline_sees_locals_without_keeping_them },
    { "test_executor_values_cross_as_json", test_executor_values_cross_as_json },
    { "test_executor_objects_cross_as_references", test_executor_objects_cross_as_references },
    { "test_executor_block_returns_its_value", test_executor_block_returns_its_value },
    { "test_executor_block_writes_back_existing_names_only", test_executor_block_writes_back_existing_names_only },
    { "test_executor_side_effects_mutate_the_environment", test_executor_side_effects_mutate_the_environment },
    { "test_executor_side_effects_shift_error_lines", test_executor_side_effects_shift_error_lines },
    { "test_executor_errors_carry_type_message_traceback_and_line", test_executor_errors_carry_type_message_traceback_and_line },
    { "test_executor_syntax_errors_are_python_errors", test_executor_syntax_errors_are_python_errors },
    { "test_executor_dynamic_function_has_the_signature", test_executor_dynamic_function_has_the_signature },
    { "test_executor_dynamic_function_errors_raise_in_python", test_executor_dynamic_function_errors_raise_in_python },
    { "test_executor_dynamic_function_may_call_back_into_python", test_executor_dynamic_function_may_call_back_into_python },
    { "test_executor_dynamic_function_data_freed_with_env", test_executor_dynamic_function_data_freed_with_env },
    { "test_executor_type_expressions_become_descriptors", test_executor_type_expressions_become_descriptors },
    { "test_executor_snapshot_shows_the_environment", test_executor_snapshot_shows_the_environment },
    { "test_executor_steps_reach_the_debug_exporter", test_executor_steps_reach_the_debug_exporter },
    { "test_executor_integers_beyond_64_bits_cross_as_references", test_executor_integers_beyond_64_bits_cross_as_references },
    { "test_executor_nested_big_integers_cross_as_references", test_executor_nested_big_integers_cross_as_references },
    { "test_executor_strings_with_nul_cross_as_references", test_executor_strings_with_nul_cross_as_references },
    { "test_executor_dicts_with_nul_keys_cross_as_references", test_executor_dicts_with_nul_keys_cross_as_references },
    { "test_executor_block_and_snapshot_keep_values_exact", test_executor_block_and_snapshot_keep_values_exact },
    { "test_executor_host_functions_get_and_return_exact_values", test_executor_host_functions_get_and_return_exact_values },
    { "test_executor_host_strings_with_control_characters_arrive_exactly", test_executor_host_strings_with_control_characters_arrive_exactly },
    { "test_executor_numbers_cross_exactly", test_executor_numbers_cross_exactly },
    { NULL, NULL }
  };
  cx_test_add_suite("executor", tests);
}
