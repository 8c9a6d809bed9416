/* Option schemas, option values, run options and suggestions. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cx_test.h"

static const cx_option_spec schema[] = {
  { "timeout", CX_OPTION_DOUBLE, NULL, "seconds" },
  { "retries", CX_OPTION_INT, "3", "count" },
  { "isolated", CX_OPTION_BOOL, "false", "flag" },
  { "memory-limit", CX_OPTION_SIZE_LIMIT, NULL, "bytes" },
  { "processes", CX_OPTION_COUNT, NULL, "limit" },
  { "cwd", CX_OPTION_PATH, NULL, "directory" },
  { "env", CX_OPTION_ENV, NULL, "variables" },
  { "name", CX_OPTION_STRING, "x", "text" },
  { NULL, 0, NULL, NULL }
};

static void
test_options_start_with_the_schema_defaults(void)
{
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  CU_ASSERT_EQUAL(cx_options_get_int(options, "retries", -1), 3);
  CU_ASSERT_FALSE(cx_options_get_bool(options, "isolated", TRUE));
  CU_ASSERT_FALSE(cx_options_has(options, "timeout"));
  CU_ASSERT_DOUBLE_EQUAL(cx_options_get_double(options, "timeout", 7.0), 7.0, 1e-9);
  CU_ASSERT_STRING_EQUAL(cx_options_get_string(options, "name", NULL), "x");
}

static void
test_options_parse_each_type(void)
{
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_options_set(options, "timeout", "2.5", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "retries", "-4", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "isolated", "yes", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "memory-limit", "512M", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "cwd", "~/work", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "env", "A=1; B=two words\nC=", &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_DOUBLE_EQUAL(cx_options_get_double(options, "timeout", 0), 2.5, 1e-9);
  CU_ASSERT_EQUAL(cx_options_get_int(options, "retries", 0), -4);
  CU_ASSERT_TRUE(cx_options_get_bool(options, "isolated", FALSE));
  CU_ASSERT_EQUAL(cx_options_get_size(options, "memory-limit", 0), 512ull << 20);
  g_autofree char *home_work = g_build_filename(g_get_home_dir(), "work", NULL);
  CU_ASSERT_STRING_EQUAL(cx_options_get_string(options, "cwd", NULL), home_work);
  g_auto(GStrv) env = cx_options_get_env(options, "env");
  CU_ASSERT_EQUAL_FATAL(g_strv_length(env), 3);
  CU_ASSERT_STRING_EQUAL(env[0], "A=1");
  CU_ASSERT_STRING_EQUAL(env[1], "B=two words");
  CU_ASSERT_STRING_EQUAL(env[2], "C=");
}

static void
test_options_unknown_key_suggests_the_closest(void)
{
  g_autoptr(cx_options) options = cx_options_new("subprocess", schema);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_options_set(options, "timout", "2", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CU_ASSERT_STRING_EQUAL(error->message,
                         "unknown option 'timout' for backend 'subprocess'; did you mean 'timeout'?");
}

static void
test_options_unknown_key_far_from_all_lists_them(void)
{
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_options_set(options, "colour", "red", &error));
  CX_ASSERT_CONTAINS(error->message, "its options are: timeout, retries");
}

static void
test_options_bad_value_names_key_value_and_type(void)
{
  static const struct { const char *key, *value, *expect; } cases[] = {
    { "timeout", "soon", "a number" },
    { "retries", "3.5", "an integer" },
    { "isolated", "maybe", "true or false" },
    { "memory-limit", "12X", "a size" },
    { "memory-limit", "-1M", "a size" },
    /* A limit where 0 (or less) is one nothing can meet. */
    { "memory-limit", "0", "expected a size of at least 1 byte, such as 4096, 512K or 2G "
                           "(leave the option unset for no limit)" },
    { "processes", "0", "expected an integer from 1 (leave the option unset for no limit)" },
    { "processes", "-5", "expected an integer from 1" },
    { "env", "NOEQUALS", "KEY=VALUE" },
    { "env", "=1", "KEY=VALUE" },
    { "cwd", "", "a non-empty path" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(cx_options) options = cx_options_new("demo", schema);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(cx_options_set(options, cases[i].key, cases[i].value, &error));
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    g_autofree char *names = g_strdup_printf("bad value '%s' for option '%s' of backend 'demo'",
                                             cases[i].value, cases[i].key);
    CX_ASSERT_CONTAINS(error->message, names);
    CX_ASSERT_CONTAINS(error->message, cases[i].expect);
  }
}

/* The lowest value of each limit is accepted, and an int may be 0 or
 * negative. */
static void
test_options_accept_the_ends_of_their_ranges(void)
{
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_options_set(options, "retries", "0", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "memory-limit", "1", &error));
  CU_ASSERT_TRUE(cx_options_set(options, "processes", "1", &error));
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(cx_options_get_int(options, "retries", -1), 0);
  CU_ASSERT_EQUAL(cx_options_get_size(options, "memory-limit", 0), 1);
  CU_ASSERT_EQUAL(cx_options_get_int(options, "processes", 0), 1);
}

static void
test_options_empty_schema_takes_nothing(void)
{
  g_autoptr(cx_options) options = cx_options_new("bare", NULL);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_options_set(options, "x", "1", &error));
  CX_ASSERT_CONTAINS(error->message, "takes no options");
}

static void
test_run_options_env_later_assignment_wins(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  CU_ASSERT_TRUE(cx_run_options_add_env(run, "A=1"));
  CU_ASSERT_TRUE(cx_run_options_add_env(run, "AB=2"));
  CU_ASSERT_TRUE(cx_run_options_add_env(run, "A=3"));
  CU_ASSERT_FALSE(cx_run_options_add_env(run, "novalue"));
  CU_ASSERT_FALSE(cx_run_options_add_env(run, "=x"));
  const char *const *env = cx_run_options_get_env(run);
  CU_ASSERT_EQUAL_FATAL(g_strv_length((char **)env), 2);
  CU_ASSERT_STRING_EQUAL(env[0], "A=3");
  CU_ASSERT_STRING_EQUAL(env[1], "AB=2");
}

static void
test_run_options_mime_filter(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  CU_ASSERT_PTR_NULL(cx_run_options_get_allowed_mime_types(run));
  CU_ASSERT_TRUE(cx_run_options_mime_allowed(run, "image/png"));
  cx_run_options_add_allowed_mime_type(run, "text/plain");
  cx_run_options_add_allowed_mime_type(run, "text/plain");
  CU_ASSERT_TRUE(cx_run_options_mime_allowed(run, "text/plain"));
  CU_ASSERT_FALSE(cx_run_options_mime_allowed(run, "image/png"));
  CU_ASSERT_EQUAL(g_strv_length((char **)cx_run_options_get_allowed_mime_types(run)), 1);
}

static void
test_run_options_copy_and_json(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, "/tmp");
  cx_run_options_add_env(run, "DATASET_ROOT=/tmp/data");
  cx_run_options_set_timeout(run, 2.0);
  cx_run_options_set_use_subprocess(run, TRUE);
  g_autoptr(cx_run_options) copy = cx_run_options_copy(run);
  g_autoptr(JsonNode) node = cx_run_options_to_json_node(copy);
  g_autofree char *json = json_to_string(node, FALSE);
  CU_ASSERT_STRING_EQUAL(json, "{\"cwd\":\"/tmp\",\"env\":[\"DATASET_ROOT=/tmp/data\"],"
                               "\"timeout\":2.0,\"use_subprocess\":true,\"allowed_mime_types\":null}");
}


static void
test_suggest_finds_typos_only(void)
{
  const char *const words[] = { "timeout", "cwd", "memory-limit", NULL };
  CU_ASSERT_STRING_EQUAL(cx_suggest("timout", words), "timeout");
  CU_ASSERT_STRING_EQUAL(cx_suggest("timeuot", words), "timeout");
  CU_ASSERT_STRING_EQUAL(cx_suggest("memory_limit", words), "memory-limit");
  CU_ASSERT_PTR_NULL(cx_suggest("colour", words));
  CU_ASSERT_PTR_NULL(cx_suggest("x", NULL));
}

static void
test_timeout_parse_accepts_0_to_a_year_only(void)
{
  static const char *const good[] = { "0", "2.5", "1e3", "31536000" };
  for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
    double seconds = -1;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(cx_timeout_parse(good[i], &seconds, &error));
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_DOUBLE_EQUAL(seconds, g_ascii_strtod(good[i], NULL), 1e-9);
  }
  static const char *const bad[] = { "inf", "-inf", "nan", "-1", "-0.5", "1e13", "31536000.5",
                                     "1e999", "1e-999", "", "2s", "soon" };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    double seconds = 7;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(cx_timeout_parse(bad[i], &seconds, &error));
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    g_autofree char *quoted = g_strdup_printf("'%s'", bad[i]);
    CX_ASSERT_CONTAINS(error->message, quoted);
    CX_ASSERT_CONTAINS(error->message, "from 0 (no timeout) to 31536000 (365 days)");
    CU_ASSERT_DOUBLE_EQUAL(seconds, 7, 0);
  }
  CU_ASSERT_TRUE(cx_timeout_check(0, NULL));
  CU_ASSERT_TRUE(cx_timeout_check(CX_TIMEOUT_MAX, NULL));
  CU_ASSERT_FALSE(cx_timeout_check(NAN, NULL));
  CU_ASSERT_FALSE(cx_timeout_check(INFINITY, NULL));
  CU_ASSERT_FALSE(cx_timeout_check(-1, NULL));
}

static void
test_options_timeout_follows_the_timeout_rule(void)
{
  static const char *const bad[] = { "-1", "inf", "nan", "1e13" };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(cx_options) options = cx_options_new("demo", schema);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(cx_options_set(options, "timeout", bad[i], &error));
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    CX_ASSERT_CONTAINS(error->message, "from 0 (no timeout) to 31536000 (365 days)");
    CU_ASSERT_FALSE(cx_options_has(options, "timeout"));
  }
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  CU_ASSERT_TRUE(cx_options_set(options, "timeout", "0", NULL));
  CU_ASSERT_TRUE(cx_options_set(options, "timeout", "31536000", NULL));
}

static guint n_criticals;

static void
count_criticals(const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
  (void)domain, (void)message, (void)data;
  if (level & G_LOG_LEVEL_CRITICAL)
    n_criticals++;
}

static void
test_run_options_set_timeout_rejects_out_of_range(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 5);
  n_criticals = 0;
  GLogFunc saved = g_log_set_default_handler(count_criticals, NULL);
  cx_run_options_set_timeout(run, -3);
  cx_run_options_set_timeout(run, NAN);
  cx_run_options_set_timeout(run, INFINITY);
  cx_run_options_set_timeout(run, 1e13);
  g_log_set_default_handler(saved, NULL);
  CU_ASSERT_EQUAL(n_criticals, 4);
  CU_ASSERT_DOUBLE_EQUAL(cx_run_options_get_timeout(run), 5, 0);
  cx_run_options_set_timeout(run, 0);
  CU_ASSERT_DOUBLE_EQUAL(cx_run_options_get_timeout(run), 0, 0);
}

static void
test_options_env_parsing_is_linear(void)
{
  /* 30,000 variables took seconds when splitting and merging were
   * quadratic; linear, they take milliseconds (generous bound for valgrind). */
  enum { N = 30000 };
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < N; i++)
    g_string_append_printf(text, "VARIABLE_%u=%u;", i, i);
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_options) options = cx_options_new("demo", schema);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_options_set(options, "env", text->str, &error));
  CX_ASSERT_NO_ERROR(error);
  g_auto(GStrv) env = cx_options_get_env(options, "env");
  g_autoptr(cx_run_options) run = cx_run_options_new();
  for (char **item = env; *item != NULL; item++)
    cx_run_options_add_env(run, *item);
  cx_run_options_add_env(run, "VARIABLE_7=replaced");
  g_autoptr(cx_run_options) copy = cx_run_options_copy(run);
  gint64 elapsed = g_get_monotonic_time() - start;
  g_string_free(text, TRUE);
  CU_ASSERT_EQUAL(g_strv_length(env), N);
  const char *const *merged = cx_run_options_get_env(copy);
  CU_ASSERT_EQUAL_FATAL(g_strv_length((char **)merged), N);
  CU_ASSERT_STRING_EQUAL(merged[7], "VARIABLE_7=replaced");
  CU_ASSERT_STRING_EQUAL(merged[N - 1], "VARIABLE_29999=29999");
  if (elapsed > 3 * G_USEC_PER_SEC)
    fprintf(stderr, "\n  %d variables took %.1f s\n", N, elapsed / 1e6);
  CU_ASSERT_TRUE(elapsed < 3 * G_USEC_PER_SEC);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_options_start_with_the_schema_defaults", test_options_start_with_the_schema_defaults },
    { "test_options_parse_each_type", test_options_parse_each_type },
    { "test_options_unknown_key_suggests_the_closest", test_options_unknown_key_suggests_the_closest },
    { "test_options_unknown_key_far_from_all_lists_them", test_options_unknown_key_far_from_all_lists_them },
    { "test_options_bad_value_names_key_value_and_type", test_options_bad_value_names_key_value_and_type },
    { "test_options_accept_the_ends_of_their_ranges", test_options_accept_the_ends_of_their_ranges },
    { "test_options_empty_schema_takes_nothing", test_options_empty_schema_takes_nothing },
    { "test_run_options_env_later_assignment_wins", test_run_options_env_later_assignment_wins },
    { "test_run_options_mime_filter", test_run_options_mime_filter },
    { "test_run_options_copy_and_json", test_run_options_copy_and_json },
    { "test_suggest_finds_typos_only", test_suggest_finds_typos_only },
    { "test_timeout_parse_accepts_0_to_a_year_only", test_timeout_parse_accepts_0_to_a_year_only },
    { "test_options_timeout_follows_the_timeout_rule", test_options_timeout_follows_the_timeout_rule },
    { "test_run_options_set_timeout_rejects_out_of_range", test_run_options_set_timeout_rejects_out_of_range },
    { "test_options_env_parsing_is_linear", test_options_env_parsing_is_linear },
    { NULL, NULL }
  };
  cx_test_add_suite("options", tests);
}
