/* Config files: search order, [cellexec] keys, backend sections. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

static cx_registry *
echo_registry(void)
{
  const char *const names[] = { "echo", "init_refused", NULL };
  return cx_test_registry_with(names);
}

static cx_config *
config_from(const char *text)
{
  g_autoptr(GError) error = NULL;
  cx_config *config = cx_config_load_data(text, "test.conf", &error);
  CX_ASSERT_NO_ERROR(error);
  return config;
}

/* Set VAR to VALUE (NULL: unset it); returns the old value for restore_env. */
static char *
swap_env(const char *var, const char *value)
{
  char *saved = g_strdup(g_getenv(var));
  if (value != NULL)
    g_setenv(var, value, TRUE);
  else
    g_unsetenv(var);
  return saved;
}

static void
restore_env(const char *var, char *saved)
{
  g_free(swap_env(var, saved));
  g_free(saved);
}

static void
test_config_defaults_to_local_without_a_file(void)
{
  g_autofree char *empty_home = cx_test_tmpdir();
  g_autoptr(GError) error = NULL;
  char *saved_config = swap_env("CELLEXEC_CONFIG", NULL);
  char *saved_xdg = swap_env("XDG_CONFIG_HOME", empty_home);
  g_autoptr(cx_config) config = cx_config_load(NULL, &error);
  restore_env("CELLEXEC_CONFIG", saved_config);
  restore_env("XDG_CONFIG_HOME", saved_xdg);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(config), "local");
  CU_ASSERT_PTR_NULL(cx_config_get_path(config));
  CU_ASSERT_PTR_NULL(cx_config_get_plugin_path(config)[0]);
}

static void
test_config_search_order(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *xdg = g_build_filename(dir, "xdg", "cellexec", NULL);
  g_mkdir_with_parents(xdg, 0700);
  g_autofree char *xdg_file = cx_test_write_file(xdg, "config", "[cellexec]\nbackend = from-xdg\n");
  g_autofree char *env_file = cx_test_write_file(dir, "env.conf", "[cellexec]\nbackend = from-env\n");
  g_autofree char *explicit_file = cx_test_write_file(dir, "explicit.conf", "[cellexec]\nbackend = from-explicit\n");
  g_autofree char *xdg_home = g_build_filename(dir, "xdg", NULL);

  char *saved_xdg = swap_env("XDG_CONFIG_HOME", xdg_home);
  char *saved_config = swap_env("CELLEXEC_CONFIG", env_file);
  g_autoptr(cx_config) explicit_wins = cx_config_load(explicit_file, NULL);
  g_autoptr(cx_config) env_next = cx_config_load(NULL, NULL);
  g_unsetenv("CELLEXEC_CONFIG");
  g_autoptr(cx_config) xdg_last = cx_config_load(NULL, NULL);
  restore_env("CELLEXEC_CONFIG", saved_config);
  restore_env("XDG_CONFIG_HOME", saved_xdg);
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(explicit_wins), "from-explicit");
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(env_next), "from-env");
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(xdg_last), "from-xdg");
  CU_ASSERT_STRING_EQUAL(cx_config_get_path(xdg_last), xdg_file);
}

static void
test_config_missing_explicit_file_is_an_error(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load("/nonexistent/cellexec.conf", &error);
  CU_ASSERT_PTR_NULL(config);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "/nonexistent/cellexec.conf");
}

static void
test_config_syntax_error_names_the_file(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load_data("[cellexec\nbackend=x\n", "broken.conf", &error);
  CU_ASSERT_PTR_NULL(config);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "broken.conf");
}

static void
test_config_unknown_main_key_suggests_the_closest(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) config = cx_config_load_data("[cellexec]\nbakend = local\n", "my.conf", &error);
  CU_ASSERT_PTR_NULL(config);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "unknown key 'bakend' in [cellexec]; did you mean 'backend'?");
}

static void
test_config_plugin_path_splits_on_separators(void)
{
  g_autoptr(cx_config) config = config_from("[cellexec]\nplugin-path = /a;/b:/c\n");
  const char *const *path = cx_config_get_plugin_path(config);
  CU_ASSERT_EQUAL_FATAL(g_strv_length((char **)path), 3);
  CU_ASSERT_STRING_EQUAL(path[2], "/c");
}

static void
test_config_backend_section_sets_options(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[echo]\ncount = 7\nmemory = 1G\nverbose = on\n");
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_options) options = cx_config_get_backend_options(config, echo, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(cx_options_get_int(options, "count", 0), 7);
  CU_ASSERT_EQUAL(cx_options_get_size(options, "memory", 0), 1ull << 30);
  CU_ASSERT_TRUE(cx_options_get_bool(options, "verbose", FALSE));
  CU_ASSERT_DOUBLE_EQUAL(cx_options_get_double(options, "ratio", 0), 0.5, 1e-9); /* default */
}

static void
test_config_unknown_option_suggests_the_closest(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[echo]\ntimout = 2\n");
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_options) options = cx_config_get_backend_options(config, echo, &error);
  CU_ASSERT_PTR_NULL(options);
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CU_ASSERT_STRING_EQUAL(error->message, "test.conf: [echo] unknown option 'timout' for backend "
                                         "'echo'; did you mean 'timeout'?");
}

static void
test_config_bad_value_names_section_key_and_value(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[echo]\ncount = many\n");
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_options) options = cx_config_get_backend_options(config, echo, &error);
  CU_ASSERT_PTR_NULL(options);
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
  CX_ASSERT_CONTAINS(error->message, "[echo]");
  CX_ASSERT_CONTAINS(error->message, "bad value 'many' for option 'count'");
  CX_ASSERT_CONTAINS(error->message, "an integer");
}

static void
test_config_check_accepts_a_good_config(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[cellexec]\nbackend = echo\n\n[echo]\ntimeout = 2.0\n");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_config_check(config, registry, &error));
  CX_ASSERT_NO_ERROR(error);
}

static void
test_config_check_rejects_an_unknown_section(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[cellexec]\nbackend = echo\n\n[ecko]\ncount = 1\n");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_config_check(config, registry, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "section [ecko] names no installed backend; did you mean [echo]?");
}

static void
test_config_open_configured_rejects_an_unknown_section(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = cx_test_write_file(dir, "config",
                                             "[cellexec]\nbackend = fake\n\n[fak]\ndefault = error\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open_configured(path, NULL, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "section [fak] names no installed backend; did you mean [fake]?");
}

static void
test_config_check_rejects_a_missing_backend(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[cellexec]\nbackend = nothing\n");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_config_check(config, registry, &error));
  CX_ASSERT_CONTAINS(error->message, "no backend plugin named 'nothing'");
}

static void
test_config_check_rejects_a_faulty_backend(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[cellexec]\nbackend = init_refused\n");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_config_check(config, registry, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_INIT_REFUSED);
  CX_ASSERT_CONTAINS(error->message, "needs a GPU");
}

static void
test_config_check_rejects_a_bad_option(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  g_autoptr(cx_config) config = config_from("[cellexec]\nbackend = echo\n[echo]\nverbose = perhaps\n");
  g_autoptr(GError) error = NULL;
  CU_ASSERT_FALSE(cx_config_check(config, registry, &error));
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
}

/* A limit that can only fail is refused by config check and when a
 * backend is opened from the config, naming the key, the value and the
 * range, before any cell runs. */
static void
test_config_limits_out_of_range_are_refused_early(void)
{
  static const struct { const char *text, *expected; } cases[] = {
    { "[cellexec]\nbackend = subprocess\n[subprocess]\nmemory-limit = 0\n",
      "bad value '0' for option 'memory-limit' of backend 'subprocess': expected a size of "
      "at least 1 byte, such as 4096, 512K or 2G (leave the option unset for no limit)" },
    { "[cellexec]\nbackend = subprocess\n[subprocess]\nmax-processes = -5\n",
      "bad value '-5' for option 'max-processes' of backend 'subprocess': expected an integer "
      "from 1 (leave the option unset for no limit)" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(cx_config) config = config_from(cases[i].text);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(cx_config_check(config, cx_test_registry(), &error));
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    CX_ASSERT_CONTAINS(error->message, cases[i].expected);

    g_autofree char *dir = cx_test_tmpdir();
    g_autofree char *path = cx_test_write_file(dir, "config", cases[i].text);
    g_clear_error(&error);
    g_autoptr(cx_backend) backend = cx_backend_open_configured(path, NULL, &error);
    CU_ASSERT_PTR_NULL(backend);
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    CX_ASSERT_CONTAINS(error->message, cases[i].expected);
  }
}

static void
test_config_plugin_path_is_searched(void)
{
  const char *const names[] = { "echo", NULL };
  g_autofree char *dir = cx_test_dir_with_plugins(names);
  g_autofree char *text = g_strdup_printf("[cellexec]\nbackend = echo\nplugin-path = %s\n[echo]\ncount = 5\n", dir);
  g_autofree char *conf_dir = cx_test_tmpdir();
  g_autofree char *path = cx_test_write_file(conf_dir, "config", text);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open_configured(path, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_backend_get_name(backend), "echo");
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "x", NULL, &error);
  CX_ASSERT_CONTAINS(json_object_get_string_member(cx_result_get_output(result, 0), "text/plain"), "count=5");
}

/* Write LEN bytes of DATA to DIR/NAME (may hold NUL); returns the path. */
static char *
write_bytes(const char *dir, const char *name, const char *data, gsize len)
{
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
  return path;
}

static void
test_config_larger_than_1_mib_is_refused(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  GString *text = g_string_new("[cellexec]\nbackend = echo\n");
  while (text->len <= 1024 * 1024)
    g_string_append(text, "# padding padding padding padding padding padding padding\n");
  g_autofree char *big = write_bytes(dir, "big.conf", text->str, text->len);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) from_file = cx_config_load_file(big, &error);
  CU_ASSERT_PTR_NULL(from_file);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "big.conf: larger than 1048576 bytes");
  g_clear_error(&error);
  g_autoptr(cx_config) from_data = cx_config_load_data(text->str, "big", &error);
  g_string_free(text, TRUE);
  CU_ASSERT_PTR_NULL(from_data);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "larger than 1048576 bytes");
  g_clear_error(&error);
  /* A byte order mark does not buy room: the file was cut after the
   * limit's byte, and what is left must not pass for all of it. */
  GString *marked = g_string_new("\xEF\xBB\xBF[cellexec]\nbackend = echo\n");
  while (marked->len < 1024 * 1024)
    g_string_append(marked, "# padding padding padding padding padding padding padding\n");
  g_string_truncate(marked, 1024 * 1024);
  g_string_append(marked, "\n[cut]\nkey = 1\n"); /* the limit's byte ends a line */
  g_autofree char *marked_path = write_bytes(dir, "marked.conf", marked->str, marked->len);
  g_string_free(marked, TRUE);
  g_autoptr(cx_config) from_marked = cx_config_load_file(marked_path, &error);
  CU_ASSERT_PTR_NULL(from_marked);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "marked.conf: larger than 1048576 bytes");
  g_clear_error(&error);
  /* A device that never ends is read no further than the limit. */
  if (g_file_test("/dev/zero", G_FILE_TEST_EXISTS)) {
    g_autoptr(cx_config) zero = cx_config_load_file("/dev/zero", &error);
    CU_ASSERT_PTR_NULL(zero);
    CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
    CX_ASSERT_CONTAINS(error->message, "larger than 1048576 bytes");
  }
}

static void
test_config_non_utf8_and_nul_are_errors(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  static const char latin1[] = "[cellexec]\nbackend = \xe9" "cho\n";
  static const char nul[] = "[cellexec]\nbackend = echo\0junk\n";
  g_autofree char *latin1_path = write_bytes(dir, "latin1.conf", latin1, sizeof latin1 - 1);
  g_autofree char *nul_path = write_bytes(dir, "nul.conf", nul, sizeof nul - 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) a = cx_config_load_file(latin1_path, &error);
  CU_ASSERT_PTR_NULL(a);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "latin1.conf: line 2 is not valid UTF-8");
  g_clear_error(&error);
  g_autoptr(cx_config) b = cx_config_load_data(latin1, "data", &error);
  CU_ASSERT_PTR_NULL(b);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  g_clear_error(&error);
  g_autoptr(cx_config) c = cx_config_load_file(nul_path, &error);
  CU_ASSERT_PTR_NULL(c);
  CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
  CX_ASSERT_CONTAINS(error->message, "nul.conf: line 2 contains a NUL byte");
}

/* A UTF-8 byte order mark at the start is skipped, in a file and in text;
 * the line numbers of later errors stay those an editor shows. */
static void
test_config_byte_order_mark_is_skipped(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  static const char text[] = "\xEF\xBB\xBF[cellexec]\nbackend = echo\n";
  g_autofree char *path = write_bytes(dir, "bom.conf", text, sizeof text - 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_config) from_file = cx_config_load_file(path, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(from_file), "echo");
  g_autoptr(cx_config) from_data = config_from(text);
  CU_ASSERT_STRING_EQUAL(cx_config_get_backend(from_data), "echo");
  g_autoptr(cx_config) broken = cx_config_load_data("\xEF\xBB\xBF[cellexec]\nbackend = \xe9\n",
                                                    "bom.conf", &error);
  CU_ASSERT_PTR_NULL(broken);
  CX_ASSERT_CONTAINS(error->message, "bom.conf: line 2 is not valid UTF-8");
}

static void
test_config_duplicate_keys_are_errors(void)
{
  static const char *const texts[] = {
    "[cellexec]\nbackend = echo\nbackend = local\n",
    "[echo]\ncount = 1\n\n[echo]\ncount = 2\n",
  };
  static const char *const expected[] = {
    "dup.conf: key 'backend' is set more than once in [cellexec]",
    "dup.conf: key 'count' is set more than once in [echo]",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_config) config = cx_config_load_data(texts[i], "dup.conf", &error);
    CU_ASSERT_PTR_NULL(config);
    CX_ASSERT_ERROR(error, CX_ERROR_CONFIG);
    CX_ASSERT_CONTAINS(error->message, expected[i]);
  }
  /* The same key in two sections is not a duplicate. */
  g_autoptr(cx_config) config = config_from("[echo]\ntimeout = 1\n[local]\ntimeout = 1\n");
  CU_ASSERT_PTR_NOT_NULL(config);
}

static void
test_config_timeout_option_follows_the_timeout_rule(void)
{
  g_autoptr(cx_registry) registry = echo_registry();
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  static const char *const bad[] = { "[echo]\ntimeout = -1\n", "[echo]\ntimeout = inf\n",
                                     "[echo]\ntimeout = nan\n", "[echo]\ntimeout = 1e13\n" };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(cx_config) config = config_from(bad[i]);
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_options) options = cx_config_get_backend_options(config, echo, &error);
    CU_ASSERT_PTR_NULL(options);
    CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
    CX_ASSERT_CONTAINS(error->message, "test.conf: [echo] bad value");
    CX_ASSERT_CONTAINS(error->message, "from 0 (no timeout) to 31536000 (365 days)");
  }
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_config_defaults_to_local_without_a_file", test_config_defaults_to_local_without_a_file },
    { "test_config_search_order", test_config_search_order },
    { "test_config_missing_explicit_file_is_an_error", test_config_missing_explicit_file_is_an_error },
    { "test_config_syntax_error_names_the_file", test_config_syntax_error_names_the_file },
    { "test_config_unknown_main_key_suggests_the_closest", test_config_unknown_main_key_suggests_the_closest },
    { "test_config_plugin_path_splits_on_separators", test_config_plugin_path_splits_on_separators },
    { "test_config_backend_section_sets_options", test_config_backend_section_sets_options },
    { "test_config_unknown_option_suggests_the_closest", test_config_unknown_option_suggests_the_closest },
    { "test_config_bad_value_names_section_key_and_value", test_config_bad_value_names_section_key_and_value },
    { "test_config_byte_order_mark_is_skipped", test_config_byte_order_mark_is_skipped },
    { "test_config_check_accepts_a_good_config", test_config_check_accepts_a_good_config },
    { "test_config_check_rejects_an_unknown_section", test_config_check_rejects_an_unknown_section },
    { "test_config_open_configured_rejects_an_unknown_section",
      test_config_open_configured_rejects_an_unknown_section },
    { "test_config_check_rejects_a_missing_backend", test_config_check_rejects_a_missing_backend },
    { "test_config_check_rejects_a_faulty_backend", test_config_check_rejects_a_faulty_backend },
    { "test_config_check_rejects_a_bad_option", test_config_check_rejects_a_bad_option },
    { "test_config_limits_out_of_range_are_refused_early",
      test_config_limits_out_of_range_are_refused_early },
    { "test_config_plugin_path_is_searched", test_config_plugin_path_is_searched },
    { "test_config_larger_than_1_mib_is_refused", test_config_larger_than_1_mib_is_refused },
    { "test_config_non_utf8_and_nul_are_errors", test_config_non_utf8_and_nul_are_errors },
    { "test_config_duplicate_keys_are_errors", test_config_duplicate_keys_are_errors },
    { "test_config_timeout_option_follows_the_timeout_rule", test_config_timeout_option_follows_the_timeout_rule },
    { NULL, NULL }
  };
  cx_test_add_suite("config", tests);
}
