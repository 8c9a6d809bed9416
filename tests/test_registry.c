/* The registry: every way a plugin file can be right or wrong. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "cx_test.h"

/* The single entry of a registry made of the test plugin NAME. */
static const cx_plugin_info *
only_entry(cx_registry *registry)
{
  CU_ASSERT_EQUAL_FATAL(cx_registry_get_n_plugins(registry), 1);
  return cx_registry_get_plugin(registry, 0);
}

/* A registry over SEARCH with every entry examined (probed and loaded). */
static cx_registry *
examined_registry(const char *const *search)
{
  cx_registry *registry = cx_registry_new_for_path(search);
  for (guint i = 0; i < cx_registry_get_n_plugins(registry); i++)
    cx_registry_get_plugin(registry, i);
  return registry;
}

/* Assert that the lone plugin NAME is faulty with CODE and a reason that
 * names the file and contains NEEDLE. */
static void
assert_faulty(const char *name, cx_error_code code, const char *needle)
{
  const char *const names[] = { name, NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *info = only_entry(registry);
  CU_ASSERT_FALSE(cx_plugin_info_is_usable(info));
  const GError *why = cx_plugin_info_get_error(info);
  CX_ASSERT_ERROR(why, code);
  CX_ASSERT_CONTAINS(why->message, cx_plugin_info_get_path(info));
  CX_ASSERT_CONTAINS(why->message, needle);
}

static void
test_registry_loads_a_good_plugin(void)
{
  const char *const names[] = { "echo", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *info = only_entry(registry);
  CU_ASSERT_TRUE(cx_plugin_info_is_usable(info));
  CU_ASSERT_PTR_NULL(cx_plugin_info_get_error(info));
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(info), "echo");
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_version(info), "1.0");
  guint major, minor;
  cx_plugin_info_get_abi(info, &major, &minor);
  CU_ASSERT_EQUAL(major, CX_ABI_MAJOR);
  CU_ASSERT_EQUAL(minor, CX_ABI_MINOR);
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_options(info)[0].name, "count");
  CU_ASSERT_FALSE(cx_plugin_info_has_executor(info));
}

static void
test_registry_rejects_not_a_shared_object(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = cx_test_write_file(dir, "garbage.so", "this is not an ELF file\n");
  const char *const search[] = { dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  const cx_plugin_info *info = only_entry(registry);
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(info), "garbage");
  const GError *why = cx_plugin_info_get_error(info);
  CX_ASSERT_ERROR(why, CX_ERROR_PLUGIN_LOAD);
  CX_ASSERT_CONTAINS(why->message, path);
  CX_ASSERT_CONTAINS(why->message, "not a loadable shared object");
}

static void
test_registry_rejects_unresolved_symbol(void)
{
  assert_faulty("unresolved", CX_ERROR_PLUGIN_LOAD, "cx_function_that_does_not_exist");
  assert_faulty("unresolved", CX_ERROR_PLUGIN_LOAD, "unresolved symbol");
}

static void
test_registry_rejects_missing_entry(void)
{
  assert_faulty("no_entry", CX_ERROR_NO_ENTRY, "no entry point cellexec_plugin_entry");
}

static void
test_registry_rejects_newer_major(void)
{
  assert_faulty("newer_major", CX_ERROR_ABI_MISMATCH, "built for plugin ABI 2.0");
  g_autofree char *ours = g_strdup_printf("this cellexec has ABI %d.%d", CX_ABI_MAJOR, CX_ABI_MINOR);
  assert_faulty("newer_major", CX_ERROR_ABI_MISMATCH, ours);
  assert_faulty("newer_major", CX_ERROR_ABI_MISMATCH, "rebuild it against cellexec");
}

static void
test_registry_rejects_older_major(void)
{
  assert_faulty("older_major", CX_ERROR_ABI_MISMATCH, "ABI");
}

static void
test_registry_accepts_newer_minor(void)
{
  const char *const names[] = { "newer_minor", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *info = only_entry(registry);
  CU_ASSERT_TRUE_FATAL(cx_plugin_info_is_usable(info));
  guint minor;
  cx_plugin_info_get_abi(info, NULL, &minor);
  CU_ASSERT_EQUAL(minor, CX_ABI_MINOR + 1);

  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "newer_minor", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "x = 1", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_result_get_success(result));
}

static void
test_registry_rejects_struct_sizes_no_cellexec_struct_has(void)
{
  /* SIZE_MAX: before, accepted, and every field a later ABI adds would be
   * read from past the plugin's structure. */
  assert_faulty("huge_descriptor", CX_ERROR_INVALID_PLUGIN, "descriptor claims");
  assert_faulty("huge_vtable", CX_ERROR_INVALID_PLUGIN, "backend vtable claims");
}

static void
test_registry_rejects_short_descriptor(void)
{
  assert_faulty("short_descriptor", CX_ERROR_INVALID_PLUGIN, "descriptor is");
}

static void
test_registry_rejects_short_backend_vtable(void)
{
  assert_faulty("short_vtable", CX_ERROR_INVALID_PLUGIN, "backend vtable is");
}

static void
test_registry_rejects_null_required_method(void)
{
  assert_faulty("null_method", CX_ERROR_INVALID_PLUGIN, "required backend method run_cell is NULL");
}

static void
test_registry_rejects_partial_sessions(void)
{
  assert_faulty("partial_sessions", CX_ERROR_INVALID_PLUGIN, "all three or none");
}

static void
test_registry_rejects_bad_option_default(void)
{
  assert_faulty("bad_default", CX_ERROR_INVALID_PLUGIN, "'three' of option 'retries'");
}

static void
test_registry_reports_init_refusal(void)
{
  assert_faulty("init_refused", CX_ERROR_INIT_REFUSED, "needs a GPU and found none");
}

static void
test_registry_reports_duplicate_name(void)
{
  const char *const names[] = { "echo", NULL };
  g_autofree char *first = cx_test_dir_with_plugins(names);
  g_autofree char *second = cx_test_dir_with_plugins(names);
  const char *const search[] = { first, second, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  CU_ASSERT_EQUAL_FATAL(cx_registry_get_n_plugins(registry), 2);
  const cx_plugin_info *winner = cx_registry_get_plugin(registry, 0);
  const cx_plugin_info *loser = cx_registry_get_plugin(registry, 1);
  CU_ASSERT_TRUE(cx_plugin_info_is_usable(winner));
  CX_ASSERT_ERROR(cx_plugin_info_get_error(loser), CX_ERROR_DUPLICATE);
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(loser)->message, cx_plugin_info_get_path(winner));
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(loser)->message, "shadowed by");
  CU_ASSERT_PTR_EQUAL(cx_registry_lookup(registry, "echo", NULL), winner);
  /* The winner says what it shadows; the shadowed file is never loaded. */
  const char *const *shadowed = cx_plugin_info_get_shadowed_paths(winner);
  CU_ASSERT_PTR_NOT_NULL_FATAL(shadowed);
  CU_ASSERT_STRING_EQUAL(shadowed[0], cx_plugin_info_get_path(loser));
  CU_ASSERT_PTR_NULL(shadowed[1]);
  CU_ASSERT_PTR_NULL(cx_plugin_info_get_shadowed_paths(loser));
  CU_ASSERT_PTR_NULL(cx_plugin_info_get_version(loser));
}

static void
test_registry_same_directory_twice_is_no_duplicate(void)
{
  const char *const names[] = { "echo", NULL };
  g_autofree char *dir = cx_test_dir_with_plugins(names);
  const char *const search[] = { dir, dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  CU_ASSERT_EQUAL(cx_registry_get_n_plugins(registry), 1);
}

static void
test_registry_faulty_plugin_fails_when_selected(void)
{
  const char *const names[] = { "init_refused", "echo", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  CU_ASSERT_EQUAL(cx_registry_get_n_plugins(registry), 2);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "init_refused", NULL, &error);
  CU_ASSERT_PTR_NULL(backend);
  CX_ASSERT_ERROR(error, CX_ERROR_INIT_REFUSED);
  CX_ASSERT_CONTAINS(error->message, "needs a GPU and found none");
  /* The others still work. */
  g_autoptr(cx_backend) echo = cx_backend_open(registry, "echo", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL(echo);
}

static void
test_registry_unknown_name_suggests_closest(void)
{
  const char *const names[] = { "echo", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_PTR_NULL(cx_registry_lookup(registry, "ecko", &error));
  CX_ASSERT_ERROR(error, CX_ERROR_NOT_FOUND);
  CX_ASSERT_CONTAINS(error->message, "did you mean 'echo'");
  CX_ASSERT_CONTAINS(error->message, cx_registry_get_search_path(registry)[0]);
}

static void
test_registry_missing_directory_is_ignored(void)
{
  const char *const search[] = { "/nonexistent/cellexec/plugins", cx_test_plugins_dir(), NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  CU_ASSERT_PTR_NOT_NULL(cx_registry_lookup(registry, "fake", NULL));
}

static void
test_registry_env_path_comes_before_extra_dirs(void)
{
  const char *const names[] = { "echo", NULL };
  g_autofree char *from_env = cx_test_dir_with_plugins(names);
  g_autofree char *from_config = cx_test_dir_with_plugins(names);
  g_autofree char *saved = g_strdup(g_getenv("CELLEXEC_PLUGIN_PATH"));
  g_setenv("CELLEXEC_PLUGIN_PATH", from_env, TRUE);
  const char *const extra[] = { from_config, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new(extra);
  g_setenv("CELLEXEC_PLUGIN_PATH", saved, TRUE);

  const char *const *path = cx_registry_get_search_path(registry);
  CU_ASSERT_STRING_EQUAL(path[0], from_env);
  CU_ASSERT_STRING_EQUAL(path[1], from_config);
  CU_ASSERT_STRING_EQUAL(path[2], cx_plugins_dir());
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  CU_ASSERT_TRUE(g_str_has_prefix(cx_plugin_info_get_path(echo), from_env));
}

static void
test_registry_lists_every_entry_in_order(void)
{
  const char *const names[] = { "echo", "no_entry", "newer_major", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  CU_ASSERT_EQUAL_FATAL(cx_registry_get_n_plugins(registry), 3);
  /* Files of one directory load in name order. */
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(cx_registry_get_plugin(registry, 0)), "echo");
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(cx_registry_get_plugin(registry, 1)), "newer_major");
  CU_ASSERT_STRING_EQUAL(cx_plugin_info_get_name(cx_registry_get_plugin(registry, 2)), "no_entry");
}

static void
test_registry_survives_a_plugin_crashing_in_its_entry(void)
{
  assert_faulty("entry_crash", CX_ERROR_PLUGIN_LOAD, "crashed while loading (signal 11");
  assert_faulty("entry_crash", CX_ERROR_PLUGIN_LOAD, "was not loaded here");
}

static void
test_registry_survives_a_plugin_crashing_in_init(void)
{
  assert_faulty("init_crash", CX_ERROR_PLUGIN_LOAD, "crashed while loading (signal 6");
}

static void
test_registry_survives_a_plugin_exiting_while_it_loads(void)
{
  /* Before, the probe's exit status 0 read as "loaded": the host then
   * loaded the plugin itself and ended with no output and status 0. */
  assert_faulty("entry_exit", CX_ERROR_PLUGIN_LOAD, "calls exit() or _exit()");
  assert_faulty("init_exit", CX_ERROR_PLUGIN_LOAD, "calls exit() or _exit()");
}

static void
test_registry_kills_a_probe_that_hangs_with_sigalrm_blocked(void)
{
  gint64 start = g_get_monotonic_time();
  assert_faulty("init_hang", CX_ERROR_PLUGIN_LOAD, "did not finish loading within 10 seconds");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 30);
}

/* The cache line of PATH in the probe cache, or NULL. */
static char *
cached_verdict(const char *path)
{
  g_autofree char *file = g_build_filename(g_getenv("XDG_CACHE_HOME"), "cellexec", "plugin-probes", NULL);
  g_autoptr(GKeyFile) cache = g_key_file_new();
  if (!g_key_file_load_from_file(cache, file, G_KEY_FILE_NONE, NULL))
    return NULL;
  return g_key_file_get_string(cache, path, "identity", NULL);
}

/* A copy of the test-only plugin NAME in DIR, as a file the probe cache has
 * not seen: its path; *CONTENTS (g_free it) the bytes it holds, LENGTH long. */
static char *
copy_case_plugin(const char *dir, const char *name, char **contents, gsize *length)
{
  g_autofree char *file = g_strconcat(name, ".so", NULL);
  g_autofree char *source = g_build_filename(cx_test_case_plugins_dir(), file, NULL);
  char *copy = g_build_filename(dir, file, NULL);
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(source, contents, length, NULL));
  CU_ASSERT_TRUE_FATAL(g_file_set_contents(copy, *contents, (gssize)*length, NULL));
  return copy;
}

static void
test_registry_remembers_probes_until_the_file_changes(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *contents = NULL;
  gsize length;
  g_autofree char *copy = copy_case_plugin(dir, "entry_crash", &contents, &length);
  const char *const search[] = { dir, NULL };

  cx_registry_unref(examined_registry(search));
  g_autofree char *first = cached_verdict(copy);
  CU_ASSERT_PTR_NOT_NULL_FATAL(first);

  /* Rewritten (a rebuild): probed again, under its new identity. */
  g_usleep(10000);
  CU_ASSERT_TRUE_FATAL(g_file_set_contents(copy, contents, length, NULL));
  g_autoptr(cx_registry) again = cx_registry_new_for_path(search);
  CX_ASSERT_ERROR(cx_plugin_info_get_error(cx_registry_get_plugin(again, 0)), CX_ERROR_PLUGIN_LOAD);
  g_autofree char *second = cached_verdict(copy);
  CU_ASSERT_PTR_NOT_NULL_FATAL(second);
  CU_ASSERT_STRING_NOT_EQUAL(first, second);
}

static void
test_registry_fails_closed_without_its_probe(void)
{
  /* A file the probe cache has not seen (a copy), with no probe to run:
   * not loaded unprobed, and nothing remembered. */
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *contents = NULL;
  gsize length;
  g_autofree char *copy = copy_case_plugin(dir, "echo", &contents, &length);
  g_autofree char *probe = g_strdup(g_getenv("CELLEXEC_PROBE"));
  g_setenv("CELLEXEC_PROBE", "/nonexistent/cellexec-probe", TRUE);
  const char *const search[] = { dir, NULL };
  g_autoptr(cx_registry) registry = examined_registry(search);
  g_setenv("CELLEXEC_PROBE", probe, TRUE);
  const cx_plugin_info *info = only_entry(registry);
  CU_ASSERT_FALSE(cx_plugin_info_is_usable(info));
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(info)->message, "cannot be checked before loading");
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(info)->message, "CELLEXEC_PROBE");
  g_autofree char *remembered = cached_verdict(copy);
  CU_ASSERT_PTR_NULL(remembered);
  /* With the probe back, it loads. */
  g_autoptr(cx_registry) again = cx_registry_new_for_path(search);
  CU_ASSERT_TRUE(cx_plugin_info_is_usable(only_entry(again)));
}

static void
test_registry_runs_init_once_per_process(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *log = g_build_filename(dir, "inits", NULL);
  g_setenv("CELLEXEC_TEST_INIT_LOG", log, TRUE);
  const char *const names[] = { "counting_init", NULL };
  g_autofree char *plugins = cx_test_dir_with_plugins(names);
  const char *const search[] = { plugins, NULL };
  cx_registry_unref(examined_registry(search));
  cx_registry_unref(examined_registry(search));
  g_autoptr(cx_registry) third = examined_registry(search);
  g_unsetenv("CELLEXEC_TEST_INIT_LOG");
  CU_ASSERT_TRUE(cx_plugin_info_is_usable(cx_registry_get_plugin(third, 0)));
  g_autofree char *contents = NULL;
  CU_ASSERT_TRUE_FATAL(g_file_get_contents(log, &contents, NULL, NULL));
  /* Once in this process; the probe process may have run it once more. */
  guint lines = 0;
  for (const char *c = contents; *c; c++)
    lines += *c == '\n';
  CU_ASSERT_TRUE(lines == 1 || lines == 2);
}


static void
test_registry_requires_the_file_to_carry_the_plugin_name(void)
{
  /* Found by its file name, a plugin must be what the name says: before,
   * an impostor.so naming itself "echo" took over "echo". */
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *target = g_build_filename(cx_test_case_plugins_dir(), "echo.so", NULL);
  g_autofree char *link = g_build_filename(dir, "impostor.so", NULL);
  CU_ASSERT_EQUAL_FATAL(symlink(target, link), 0);
  const char *const search[] = { dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  CU_ASSERT_PTR_NULL(cx_registry_lookup(registry, "echo", NULL));
  const cx_plugin_info *info = cx_registry_lookup(registry, "impostor", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(info);
  CX_ASSERT_ERROR(cx_plugin_info_get_error(info), CX_ERROR_INVALID_PLUGIN);
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(info)->message, "rename the file to echo.so");
}

static void
test_registry_rejects_a_descriptor_without_version(void)
{
  assert_faulty("null_version", CX_ERROR_INVALID_PLUGIN, "has no version");
}

static void
test_registry_rejects_a_descriptor_without_description(void)
{
  assert_faulty("null_description", CX_ERROR_INVALID_PLUGIN, "has no description");
}

static void
test_registry_rejects_an_option_name_no_key_can_spell(void)
{
  assert_faulty("bad_option_name", CX_ERROR_INVALID_PLUGIN, "option name 'Max Retries'");
}

static void
test_registry_refuses_a_plugin_needing_a_newer_core(void)
{
  g_autofree char *needed = g_strdup_printf("needs cellexec ABI %d.%d or newer", CX_ABI_MAJOR,
                                            CX_ABI_MINOR + 1);
  assert_faulty("needs_newer_core", CX_ERROR_ABI_MISMATCH, needed);
}

static void
test_registry_lists_optional_methods(void)
{
  const char *const names[] = { "echo", "no_result", NULL };
  g_autoptr(cx_registry) registry = cx_test_registry_with(names);
  const cx_plugin_info *echo = cx_registry_lookup(registry, "echo", NULL);
  CU_ASSERT_PTR_NULL(cx_plugin_info_get_optional_methods(echo)[0]);
  const char *const *methods =
    cx_plugin_info_get_optional_methods(cx_registry_lookup(registry, "no_result", NULL));
  CU_ASSERT_TRUE(g_strv_contains(methods, "session_open"));
  CU_ASSERT_TRUE(g_strv_contains(methods, "interrupt"));
  CU_ASSERT_TRUE(g_strv_contains(methods, "query"));
  CU_ASSERT_FALSE(g_strv_contains(methods, "evaluate_inline"));
  const char *const *builtin =
    cx_plugin_info_get_optional_methods(cx_registry_lookup(cx_test_registry(), "local", NULL));
  CU_ASSERT_TRUE(g_strv_contains(builtin, "evaluate_inline"));
  CU_ASSERT_TRUE(g_strv_contains(builtin, "create_dynamic_function"));
}

static void
test_registry_examines_only_the_plugin_asked_for(void)
{
  /* Before, every plugin on the path was probed and loaded by every
   * command: a hanging one cost `run -b local` 10 s each. */
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *contents = NULL;
  gsize length;
  g_autofree char *hang = copy_case_plugin(dir, "init_hang", &contents, &length);
  g_autofree char *echo_target = g_build_filename(cx_test_case_plugins_dir(), "echo.so", NULL);
  g_autofree char *echo = g_build_filename(dir, "echo.so", NULL);
  CU_ASSERT_EQUAL_FATAL(symlink(echo_target, echo), 0);
  const char *const search[] = { dir, NULL };
  gint64 start = g_get_monotonic_time();
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(search);
  CU_ASSERT_EQUAL(cx_registry_get_n_plugins(registry), 2);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_backend_open(registry, "echo", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 5);
  g_autofree char *verdict = cached_verdict(hang);
  CU_ASSERT_PTR_NULL(verdict);
}

static void
test_registry_forgets_probes_on_request(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *contents = NULL;
  gsize length;
  g_autofree char *copy = copy_case_plugin(dir, "entry_crash", &contents, &length);
  const char *const search[] = { dir, NULL };
  g_autoptr(cx_registry) registry = examined_registry(search);
  CX_ASSERT_CONTAINS(cx_plugin_info_get_error(cx_registry_get_plugin(registry, 0))->message,
                     "cellexec plugins --rescan");
  g_autofree char *before = cached_verdict(copy);
  CU_ASSERT_PTR_NOT_NULL(before);
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE(cx_registry_forget_probes(&error));
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *after = cached_verdict(copy);
  CU_ASSERT_PTR_NULL(after);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_registry_loads_a_good_plugin", test_registry_loads_a_good_plugin },
    { "test_registry_requires_the_file_to_carry_the_plugin_name",
      test_registry_requires_the_file_to_carry_the_plugin_name },
    { "test_registry_rejects_a_descriptor_without_version",
      test_registry_rejects_a_descriptor_without_version },
    { "test_registry_rejects_a_descriptor_without_description",
      test_registry_rejects_a_descriptor_without_description },
    { "test_registry_rejects_an_option_name_no_key_can_spell",
      test_registry_rejects_an_option_name_no_key_can_spell },
    { "test_registry_refuses_a_plugin_needing_a_newer_core",
      test_registry_refuses_a_plugin_needing_a_newer_core },
    { "test_registry_lists_optional_methods", test_registry_lists_optional_methods },
    { "test_registry_examines_only_the_plugin_asked_for",
      test_registry_examines_only_the_plugin_asked_for },
    { "test_registry_forgets_probes_on_request", test_registry_forgets_probes_on_request },
    { "test_registry_rejects_not_a_shared_object", test_registry_rejects_not_a_shared_object },
    { "test_registry_rejects_unresolved_symbol", test_registry_rejects_unresolved_symbol },
    { "test_registry_rejects_missing_entry", test_registry_rejects_missing_entry },
    { "test_registry_rejects_newer_major", test_registry_rejects_newer_major },
    { "test_registry_rejects_older_major", test_registry_rejects_older_major },
    { "test_registry_accepts_newer_minor", test_registry_accepts_newer_minor },
    { "test_registry_rejects_short_descriptor", test_registry_rejects_short_descriptor },
    { "test_registry_rejects_struct_sizes_no_cellexec_struct_has",
      test_registry_rejects_struct_sizes_no_cellexec_struct_has },
    { "test_registry_rejects_short_backend_vtable", test_registry_rejects_short_backend_vtable },
    { "test_registry_rejects_null_required_method", test_registry_rejects_null_required_method },
    { "test_registry_rejects_partial_sessions", test_registry_rejects_partial_sessions },
    { "test_registry_rejects_bad_option_default", test_registry_rejects_bad_option_default },
    { "test_registry_reports_init_refusal", test_registry_reports_init_refusal },
    { "test_registry_reports_duplicate_name", test_registry_reports_duplicate_name },
    { "test_registry_same_directory_twice_is_no_duplicate", test_registry_same_directory_twice_is_no_duplicate },
    { "test_registry_faulty_plugin_fails_when_selected", test_registry_faulty_plugin_fails_when_selected },
    { "test_registry_unknown_name_suggests_closest", test_registry_unknown_name_suggests_closest },
    { "test_registry_missing_directory_is_ignored", test_registry_missing_directory_is_ignored },
    { "test_registry_env_path_comes_before_extra_dirs", test_registry_env_path_comes_before_extra_dirs },
    { "test_registry_lists_every_entry_in_order", test_registry_lists_every_entry_in_order },
    { "test_registry_survives_a_plugin_crashing_in_its_entry", test_registry_survives_a_plugin_crashing_in_its_entry },
    { "test_registry_survives_a_plugin_crashing_in_init", test_registry_survives_a_plugin_crashing_in_init },
    { "test_registry_survives_a_plugin_exiting_while_it_loads",
      test_registry_survives_a_plugin_exiting_while_it_loads },
    { "test_registry_kills_a_probe_that_hangs_with_sigalrm_blocked",
      test_registry_kills_a_probe_that_hangs_with_sigalrm_blocked },
    { "test_registry_remembers_probes_until_the_file_changes", test_registry_remembers_probes_until_the_file_changes },
    { "test_registry_fails_closed_without_its_probe", test_registry_fails_closed_without_its_probe },
    { "test_registry_runs_init_once_per_process", test_registry_runs_init_once_per_process },
    { NULL, NULL }
  };
  cx_test_add_suite("registry", tests);
}
