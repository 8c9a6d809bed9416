/* The cellexec program, run as a user would run it. */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "cx_test.h"

static void
test_cli_run_fake_json_prints_a_success_bundle(void)
{
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "--json", "-c", "print('noop')", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  CU_ASSERT_STRING_EQUAL(r.out, "{\"stdout\":\"\",\"stderr\":\"\",\"rich_outputs\":[],"
                                "\"success\":true,\"error\":null,\"outputs\":[]}\n");
  CU_ASSERT_STRING_EQUAL(r.err, "");
}

static void
test_cli_failed_cell_exits_1_and_prints_the_error(void)
{
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", "fail-with=TimeoutError", "-c", "x", NULL);
  CU_ASSERT_EQUAL(r.status, 1);
  CX_ASSERT_CONTAINS(r.err, "TimeoutError: injected failure");
}

static void
test_cli_human_mode_prints_streams_and_rich_text(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *file = cx_test_write_file(dir, "r.json",
    "[{\"stdout\": \"hello\\n\", \"stderr\": \"careful\\n\", \"rich_outputs\": [{\"text/plain\": \"2\"}, {\"image/png\": \"AAAA\"}]}]");
  g_autofree char *option = g_strdup_printf("responses=%s", file);
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", option, "-c", "x", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  CU_ASSERT_STRING_EQUAL(r.out, "hello\n2\n<rich output: image/png>\n");
  CU_ASSERT_STRING_EQUAL(r.err, "careful\n");
}

static void
test_cli_reads_code_from_stdin_and_files(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *record = g_build_filename(dir, "calls.jsonl", NULL);
  g_autofree char *option = g_strdup_printf("record=%s", record);
  g_autofree char *script = cx_test_write_file(dir, "cell.py", "from_file = 1\n");
  g_auto(cx_test_cli_run) a = cx_test_cellexec("from_stdin = 1\n", "run", "-b", "fake", "-o", option, "-", NULL);
  g_auto(cx_test_cli_run) b = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", option, script, NULL);
  CU_ASSERT_EQUAL(a.status, 0);
  CU_ASSERT_EQUAL(b.status, 0);
  g_autofree char *calls = NULL;
  g_file_get_contents(record, &calls, NULL, NULL);
  CX_ASSERT_CONTAINS(calls, "\"code\":\"from_stdin = 1\\n\"");
  CX_ASSERT_CONTAINS(calls, "\"code\":\"from_file = 1\\n\"");
}

static void
test_cli_code_backslash_n_is_a_line_break_outside_strings(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *record = g_build_filename(dir, "calls.jsonl", NULL);
  g_autofree char *option = g_strdup_printf("record=%s", record);
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", option, "-c",
                               "print('a\\nb')\\n1 + 1 # x\\ny", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  g_autofree char *calls = NULL;
  g_file_get_contents(record, &calls, NULL, NULL);
  /* JSON of: print('a\nb') <newline> 1 + 1 # x\ny */
  CX_ASSERT_CONTAINS(calls, "\"code\":\"print('a\\\\nb')\\n1 + 1 # x\\\\ny\"");
}

static void
test_cli_passes_run_options(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *record = g_build_filename(dir, "calls.jsonl", NULL);
  g_autofree char *option = g_strdup_printf("record=%s", record);
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", option, "--cwd", "/tmp", "-e",
                               "DATASET_ROOT=/tmp/data", "--timeout", "2", "--mime", "text/plain",
                               "--use-subprocess", "-c", "x", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  g_autofree char *calls = NULL;
  g_file_get_contents(record, &calls, NULL, NULL);
  CX_ASSERT_CONTAINS(calls, "\"options\":{\"cwd\":\"/tmp\",\"env\":[\"DATASET_ROOT=/tmp/data\"],"
                            "\"timeout\":2.0,\"use_subprocess\":true,\"allowed_mime_types\":[\"text/plain\"]}");
}

static void
test_cli_usage_errors_exit_2_with_one_line(void)
{
  static const char *const cases[][6] = {
    { "run", "-b", "nonexistent", "-c", "x", NULL },
    { "run", "-b", "fake", "-o", "colour=red", "-c" },
    { "run", "-b", "fake", NULL },
    { "run", "--bogus-flag", NULL },
    { "frobnicate", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *const *c = cases[i];
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, c[0], c[1], c[2], c[3], c[4], i == 1 ? "x" : NULL, NULL);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(g_str_has_prefix(r.err, "cellexec: "));
    CU_ASSERT_PTR_NOT_NULL(strchr(r.err, '\n'));
    CU_ASSERT_EQUAL(strchr(r.err, '\n')[1], '\0'); /* exactly one line */
    CU_ASSERT_STRING_EQUAL(r.out, "");
  }
}

/* -p NAME=VALUE with NAME a keyword (or __debug__) would inject a cell
 * that cannot compile: refused as a usage error before anything runs. */
static void
test_cli_notebook_refuses_a_keyword_parameter_name(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *input = cx_test_write_file(
    dir, "in.ipynb",
    "{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, "
    "\"outputs\": [], \"source\": \"print('ran')\"}], \"metadata\": {}, \"nbformat\": 4, "
    "\"nbformat_minor\": 4}\n");
  static const char *const names[] = { "class=5", "None=1", "__debug__=1", "async=1" };
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "notebook", "run", "-b", "local", input,
                                                 "-p", names[i], NULL);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(g_str_has_prefix(r.err, "cellexec: "));
    CX_ASSERT_CONTAINS(r.err, names[i]);
    CX_ASSERT_CONTAINS(r.err, "not a keyword");
    CU_ASSERT_PTR_NOT_NULL_FATAL(strchr(r.err, '\n'));
    CU_ASSERT_EQUAL(strchr(r.err, '\n')[1], '\0'); /* exactly one line */
    CU_ASSERT_STRING_EQUAL(r.out, "");
  }
  /* Soft keywords are names Python lets a cell assign to. */
  g_auto(cx_test_cli_run) soft = cx_test_cellexec(NULL, "notebook", "run", "-q", "-b", "local",
                                                  input, "-p", "match=1", NULL);
  CU_ASSERT_EQUAL(soft.status, 0);
}

/* A config whose plugin-path holds the usable echo and the FAULTY
 * newer_major test plugins. */
static char *
config_with_a_faulty_plugin(void)
{
  const char *const names[] = { "echo", "newer_major", NULL };
  g_autofree char *dir = cx_test_dir_with_plugins(names);
  g_autofree char *conf_dir = cx_test_tmpdir();
  g_autofree char *text = g_strdup_printf("[cellexec]\nplugin-path = %s\n", dir);
  return cx_test_write_file(conf_dir, "config", text);
}

static void
test_cli_plugins_lists_usable_and_faulty(void)
{
  g_autofree char *config = config_with_a_faulty_plugin();
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "plugins", "--json", "-C", config, NULL);
  CU_ASSERT_EQUAL_FATAL(r.status, 0);
  g_autoptr(JsonNode) root = json_from_string(r.out, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(root);
  JsonArray *plugins = json_object_get_array_member(json_node_get_object(root), "plugins");
  gboolean saw_fake = FALSE, saw_echo = FALSE, saw_faulty = FALSE;
  g_autofree char *abi = g_strdup_printf("%d.%d", CX_ABI_MAJOR, CX_ABI_MINOR);
  for (guint i = 0; i < json_array_get_length(plugins); i++) {
    JsonObject *p = json_array_get_object_element(plugins, i);
    const char *name = json_object_get_string_member(p, "name");
    const char *status = json_object_get_string_member(p, "status");
    if (strcmp(name, "fake") == 0)
      saw_fake = strcmp(status, "ok") == 0 &&
                 json_array_get_length(json_object_get_array_member(p, "options")) == 5;
    if (strcmp(name, "echo") == 0)
      saw_echo = strcmp(status, "ok") == 0 && strcmp(json_object_get_string_member(p, "abi"), abi) == 0;
    if (strcmp(name, "newer_major") == 0)
      saw_faulty = strcmp(status, "faulty") == 0 &&
                   strstr(json_object_get_string_member(p, "reason"), "ABI 2.0") != NULL;
  }
  CU_ASSERT_TRUE(saw_fake);
  CU_ASSERT_TRUE(saw_echo);
  CU_ASSERT_TRUE(saw_faulty);

  g_auto(cx_test_cli_run) human = cx_test_cellexec(NULL, "plugins", "-C", config, NULL);
  CX_ASSERT_CONTAINS(human.out, "newer_major (ABI 2.0): FAULTY");
  CX_ASSERT_CONTAINS(human.out, "reason: plugin ");
  CX_ASSERT_CONTAINS(human.out, "option responses (path, default unset)");
}

static void
test_cli_config_check(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *good = cx_test_write_file(dir, "good", "[cellexec]\nbackend = fake\n[fake]\ndefault = error\n");
  g_autofree char *bad = cx_test_write_file(dir, "bad", "[cellexec]\nbackend = fake\n[fake]\nrespones = x.json\n");
  g_auto(cx_test_cli_run) ok = cx_test_cellexec(NULL, "config", "check", good, NULL);
  CU_ASSERT_EQUAL(ok.status, 0);
  CX_ASSERT_CONTAINS(ok.out, "ok (backend 'fake')");
  g_auto(cx_test_cli_run) ko = cx_test_cellexec(NULL, "config", "check", bad, NULL);
  CU_ASSERT_EQUAL(ko.status, 2);
  CX_ASSERT_CONTAINS(ko.err, "unknown option 'respones' for backend 'fake'; did you mean 'responses'?");

  /* Every problem at once, one line each. */
  g_autofree char *typos = cx_test_write_file(
    dir, "typos", "[cellexec]\nbackend = fake\n[fak]\ndefault = error\n[fake]\nrespones = x.json\n"
                  "[local]\ncwdd = /tmp\n");
  g_auto(cx_test_cli_run) all = cx_test_cellexec(NULL, "config", "check", typos, NULL);
  CU_ASSERT_EQUAL(all.status, 2);
  CX_ASSERT_CONTAINS(all.err, "section [fak] names no installed backend; did you mean [fake]?");
  CX_ASSERT_CONTAINS(all.err, "\ncellexec: ");
  CX_ASSERT_CONTAINS(all.err, "unknown option 'respones' for backend 'fake'");
  CX_ASSERT_CONTAINS(all.err, "unknown option 'cwdd' for backend 'local'; did you mean 'cwd'?");
  g_auto(GStrv) lines = g_strsplit(all.err, "\n", -1);
  CU_ASSERT_EQUAL(g_strv_length(lines), 4); /* three, and the empty rest after the last */
}

static void
test_cli_run_refuses_a_misspelled_section(void)
{
  /* The limits of [subproces] would silently not apply: run says what
   * config check says, and runs nothing. */
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *config = cx_test_write_file(
    dir, "config", "[cellexec]\nbackend = fake\n[fake]\ndefault = success\n[subproces]\ntimeout = 1\n");
  g_auto(cx_test_cli_run) checked = cx_test_cellexec(NULL, "config", "check", config, NULL);
  g_auto(cx_test_cli_run) ran = cx_test_cellexec(NULL, "run", "-C", config, "-c", "1", NULL);
  CU_ASSERT_EQUAL(checked.status, 2);
  CU_ASSERT_EQUAL(ran.status, 2);
  CU_ASSERT_STRING_EQUAL(ran.out, "");
  CX_ASSERT_CONTAINS(ran.err, "section [subproces] names no installed backend; did you mean "
                              "[subprocess]?");
  CX_ASSERT_CONTAINS(checked.err, "section [subproces] names no installed backend");
}

static void
test_cli_every_command_has_help(void)
{
  static const char *const commands[] = { "run", "plugins", "config" };
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, commands[i], "--help", NULL);
    CU_ASSERT_EQUAL(r.status, 0);
    g_autofree char *usage = g_strdup_printf("Usage:\n  cellexec %s", commands[i]);
    CX_ASSERT_CONTAINS(r.out, usage);
  }
  g_auto(cx_test_cli_run) top = cx_test_cellexec(NULL, "--help", NULL);
  CU_ASSERT_EQUAL(top.status, 0);
  CX_ASSERT_CONTAINS(top.out, "Exit status");
  g_auto(cx_test_cli_run) version = cx_test_cellexec(NULL, "--version", NULL);
  CX_ASSERT_CONTAINS(version.out, CX_VERSION_STRING);
}

static void
test_cli_json_is_not_corrupted_by_fd_output(void)
{
  /* Output written to fds 1 and 2 directly must end up in the bundle, not
   * around the JSON document on our stdout. */
  static const char *const backends[] = { "local", "subprocess" };
  for (gsize i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", backends[i], "--json", "-c",
                                 "import os\\nos.system('echo x; echo e >&2')\\nos.write(1, b'y');",
                                 NULL);
    CU_ASSERT_EQUAL(r.status, 0);
    if (!g_str_has_prefix(r.out, "{"))
      fprintf(stderr, "\n  %s: stdout is \"%s\"\n", backends[i], r.out);
    CU_ASSERT_TRUE(g_str_has_prefix(r.out, "{") && g_str_has_suffix(r.out, "}\n"));
    /* One line: the document and its newline, nothing else. */
    const char *newline = strchr(r.out, '\n');
    CU_ASSERT_TRUE(newline != NULL && newline[1] == '\0');
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) root = json_from_string(r.out, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_TRUE_FATAL(root != NULL && JSON_NODE_HOLDS_OBJECT(root));
    JsonObject *bundle = json_node_get_object(root);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(bundle, "stdout"), "x\ny");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(bundle, "stderr"), "e\n");
    CU_ASSERT_STRING_EQUAL(r.err, "");
  }
}

static void
test_cli_json_survives_a_backend_that_leaves_fds_alone(void)
{
  /* Without fd capture the cell's raw write reaches the process's fd 1:
   * the CLI sends it to stderr, and stdout still holds the document alone. */
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "local", "-o", "capture-fds=false", "--json",
                               "-c", "import os\nos.write(1, b'raw\\n')\nprint('kept')", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = json_from_string(r.out, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE_FATAL(root != NULL && JSON_NODE_HOLDS_OBJECT(root));
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_node_get_object(root), "stdout"),
                         "kept\n");
  CU_ASSERT_STRING_EQUAL(r.err, "raw\n");
}

static void
close_stdin(gpointer data)
{
  (void)data;
  close(STDIN_FILENO);
}

/* Run `cellexec ARGS...` with stdin closed (CLOSED_STDIN) or /dev/null,
 * and stdout to the file STDOUT_PATH (NULL: a pipe, read into out).  A
 * process killed by a signal gets status 128 + the signal. */
static cx_test_cli_run
cellexec_io(gboolean closed_stdin, const char *stdout_path, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  g_auto(GStrv) argv = cx_test_cellexec_argv_valist(first, args);
  va_end(args);

  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
    G_SUBPROCESS_FLAGS_STDERR_PIPE | (stdout_path == NULL ? G_SUBPROCESS_FLAGS_STDOUT_PIPE : 0));
  if (stdout_path != NULL)
    g_subprocess_launcher_set_stdout_file_path(launcher, stdout_path);
  if (closed_stdin)
    g_subprocess_launcher_set_child_setup(launcher, close_stdin, NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process =
    g_subprocess_launcher_spawnv(launcher, (const char *const *)argv, &error);
  g_assert_no_error(error);
  cx_test_cli_run r = { 0 };
  g_subprocess_communicate_utf8(process, NULL, NULL, stdout_path == NULL ? &r.out : NULL, &r.err,
                                &error);
  g_assert_no_error(error);
  r.status = g_subprocess_get_if_exited(process) ? g_subprocess_get_exit_status(process)
                                                 : 128 + g_subprocess_get_term_sig(process);
  return r;
}

/* ERR is exactly one line starting "cellexec: " and holding NEEDLE. */
static void
assert_one_error_line(const char *err, const char *needle)
{
  CU_ASSERT_TRUE(g_str_has_prefix(err, "cellexec: "));
  const char *newline = strchr(err, '\n');
  CU_ASSERT_TRUE(newline != NULL && newline[1] == '\0');
  CX_ASSERT_CONTAINS(err, needle);
}

static void
test_cli_timeout_rejects_inf_nan_negative_and_huge(void)
{
  static const char *const bad[] = { "inf", "nan", "-1", "1e13", "31536001", "soon" };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "fake", "--timeout", bad[i], "-c", "x", NULL);
    CU_ASSERT_EQUAL(r.status, 2);
    assert_one_error_line(r.err, "--timeout: bad timeout");
    CX_ASSERT_CONTAINS(r.err, "from 0 (no timeout) to 31536000 (365 days)");
    g_autofree char *option = g_strdup_printf("timeout=%s", bad[i]);
    g_auto(cx_test_cli_run) o = cx_test_cellexec(NULL, "run", "-b", "local", "-o", option, "-c", "1", NULL);
    CU_ASSERT_EQUAL(o.status, 2);
    assert_one_error_line(o.err, "from 0 (no timeout) to 31536000 (365 days)");
  }
  g_auto(cx_test_cli_run) zero = cx_test_cellexec(NULL, "run", "-b", "fake", "--timeout", "0", "-c", "x", NULL);
  CU_ASSERT_EQUAL(zero.status, 0);
  g_auto(cx_test_cli_run) year = cx_test_cellexec(NULL, "run", "-b", "local", "--timeout", "31536000", "-c",
                                  "print('ran')", NULL);
  CU_ASSERT_EQUAL(year.status, 0);
  CU_ASSERT_STRING_EQUAL(year.out, "ran\n");
}

static void
test_cli_run_with_stdin_closed_is_a_usage_error(void)
{
  g_auto(cx_test_cli_run) r = cellexec_io(TRUE, NULL, "run", "-b", "fake", "-", NULL);
  CU_ASSERT_EQUAL(r.status, 2);
  assert_one_error_line(r.err, "cannot read the code from standard input: it is closed");
  CU_ASSERT_STRING_EQUAL(r.out, "");
}

static void
test_cli_write_errors_on_stdout_exit_3(void)
{
  if (!g_file_test("/dev/full", G_FILE_TEST_EXISTS))
    return;
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *good = cx_test_write_file(dir, "good", "[cellexec]\nbackend = fake\n");
  static const char *const cases[][6] = {
    { "run", "-b", "fake", "--json", "-c", "1" },
    { "run", "-b", "local", "-c", "1" },
    { "run", "-b", "local", "--json", "-c", "print('x' * 100000)" },
    { "plugins", NULL },
    { "plugins", "--json", NULL },
    { "config", "check", NULL },
    { "--help", NULL },
    { "run", "--help", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *const *c = cases[i];
    /* config check gets its file; the rest ignore a trailing NULL. */
    const char *extra = g_str_equal(c[0], "config") ? good : NULL;
    g_auto(cx_test_cli_run) r = c[1] == NULL ? cellexec_io(FALSE, "/dev/full", c[0], NULL)
                        : c[2] == NULL ? cellexec_io(FALSE, "/dev/full", c[0], c[1], extra, NULL)
                                       : cellexec_io(FALSE, "/dev/full", c[0], c[1], c[2], c[3],
                                                     c[4], c[5], NULL);
    if (r.status != 3)
      fprintf(stderr, "\n  case %" G_GSIZE_FORMAT ": status %d, stderr \"%s\"\n", i, r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 3);
    assert_one_error_line(r.err, "cannot write the output");
  }
}

static void
test_cli_config_check_rejects_non_utf8_and_duplicates(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *latin1 = cx_test_write_file(dir, "latin1", "[cellexec]\nbackend = f\xe2ke\n");
  g_autofree char *dup = cx_test_write_file(dir, "dup",
                                            "[cellexec]\nbackend = fake\n[fake]\ndefault = error\n"
                                            "[fake]\ndefault = success\n");
  g_auto(cx_test_cli_run) a = cx_test_cellexec(NULL, "config", "check", latin1, NULL);
  CU_ASSERT_EQUAL(a.status, 2);
  assert_one_error_line(a.err, "line 2 is not valid UTF-8");
  g_auto(cx_test_cli_run) b = cx_test_cellexec(NULL, "run", "-C", latin1, "-c", "1", NULL);
  CU_ASSERT_EQUAL(b.status, 2);
  assert_one_error_line(b.err, "line 2 is not valid UTF-8");
  g_auto(cx_test_cli_run) c = cx_test_cellexec(NULL, "config", "check", dup, NULL);
  CU_ASSERT_EQUAL(c.status, 2);
  assert_one_error_line(c.err, "key 'default' is set more than once in [fake]");
}

static void
test_cli_text_mode_prints_errors_shown_mid_cell(void)
{
  /* A display formatter that raises shows an error and the cell goes on:
   * text mode prints it where it happened, on stderr. */
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "run", "-b", "local", "-c",
                               "class Bad:\n"
                               "    def _repr_html_(self):\n"
                               "        raise ValueError('no html today')\n"
                               "display(Bad())\nprint('still here')", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  CX_ASSERT_CONTAINS(r.err, "ValueError: no html today");
  CX_ASSERT_CONTAINS(r.out, "still here\n");
}

static void
test_cli_a_reader_that_goes_away_is_exit_3(void)
{
  /* `cellexec run ... | head -1`: the pipe's reader is gone before the
   * output is written.  A write error (exit 3), not death by SIGPIPE. */
  static const char *const commands[][6] = {
    { "run", "-b", "local", "-c", "print('x\\n' * 200000)", NULL },
    { "run", "-b", "local", "--json", "-c", "print('x\\n' * 200000)" },
    { "plugins", "--json", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
    g_auto(GStrv) argv = NULL;
    const char *const *c = commands[i];
    argv = g_new0(char *, 8);
    argv[0] = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
    for (int j = 0; j < 6 && c[j] != NULL; j++)
      argv[j + 1] = g_strdup(c[j]);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) process = g_subprocess_newv(
      (const char *const *)argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
      &error);
    CX_ASSERT_NO_ERROR(error);
    g_input_stream_close(g_subprocess_get_stdout_pipe(process), NULL, NULL);
    g_subprocess_wait(process, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    if (!g_subprocess_get_if_exited(process))
      fprintf(stderr, "\n  %s: killed by signal %d\n", c[0], g_subprocess_get_term_sig(process));
    CU_ASSERT_TRUE(g_subprocess_get_if_exited(process) && g_subprocess_get_exit_status(process) == 3);
  }
}

/* Run `cellexec ARGS` with CELLEXEC_PLUGIN_PATH set to PATH. */
#define cellexec_on_path(path, ...)                                                  \
  ({                                                                                  \
    g_autofree char *saved_path_ = g_strdup(g_getenv("CELLEXEC_PLUGIN_PATH"));        \
    g_setenv("CELLEXEC_PLUGIN_PATH", (path), TRUE);                                   \
    cx_test_cli_run r_ = cx_test_cellexec(NULL, __VA_ARGS__);                                         \
    g_setenv("CELLEXEC_PLUGIN_PATH", saved_path_, TRUE);                              \
    r_;                                                                               \
  })

static void
test_cli_run_loads_only_the_plugin_it_uses(void)
{
  /* Before, every plugin on the path was loaded: a hanging one cost 10 s
   * and a chatty one's output landed in front of the JSON. */
  const char *const names[] = { "chatty_init", "init_hang", NULL };
  g_autofree char *others = cx_test_dir_with_plugins(names);
  g_autofree char *path = g_strjoin(":", cx_test_plugins_dir(), others, NULL);
  gint64 start = g_get_monotonic_time();
  g_auto(cx_test_cli_run) r = cellexec_on_path(path, "run", "-b", "fake", "--json", "-c", "x", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  CU_ASSERT_TRUE(g_str_has_prefix(r.out, "{\"stdout\""));
  CU_ASSERT_STRING_EQUAL(r.err, "");
  CU_ASSERT_TRUE(cx_test_seconds_since(start) < 5);
}

static void
test_cli_plugins_json_survives_a_chatty_plugin(void)
{
  /* A plugin printing while it loads in the host writes to stderr: the
   * listing stays one JSON document. */
  const char *const names[] = { "chatty_init", NULL };
  g_autofree char *dir = cx_test_dir_with_plugins(names);
  g_auto(cx_test_cli_run) r = cellexec_on_path(dir, "plugins", "--json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = json_from_string(r.out, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NULL(strstr(r.out, "chatty_init was here"));
  CX_ASSERT_CONTAINS(r.err, "chatty_init was here");
}

static void
test_cli_run_warns_when_its_backend_shadows_another(void)
{
  const char *const names[] = { "echo", NULL };
  g_autofree char *first = cx_test_dir_with_plugins(names);
  g_autofree char *second = cx_test_dir_with_plugins(names);
  g_autofree char *path = g_strjoin(":", first, second, NULL);
  g_auto(cx_test_cli_run) r = cellexec_on_path(path, "run", "-b", "echo", "-c", "x", NULL);
  CU_ASSERT_EQUAL(r.status, 0);
  CX_ASSERT_CONTAINS(r.err, "warning: backend 'echo' is ");
  CX_ASSERT_CONTAINS(r.err, first);
  CX_ASSERT_CONTAINS(r.err, "which shadows ");
  CX_ASSERT_CONTAINS(r.err, second);
  /* The listing shows both, and which shadows which. */
  g_auto(cx_test_cli_run) listed = cellexec_on_path(path, "plugins", NULL);
  g_autofree char *shadows = g_strdup_printf("  shadows: %s/echo.so", second);
  CX_ASSERT_CONTAINS(listed.out, shadows);
  g_autofree char *shadowed = g_strdup_printf("it is shadowed by %s/echo.so", first);
  CX_ASSERT_CONTAINS(listed.out, shadowed);
}

/* The optional methods of each plugin, in both listings. */
static void
test_cli_plugins_lists_optional_methods(void)
{
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "plugins", "--json", NULL);
  CU_ASSERT_EQUAL_FATAL(r.status, 0);
  g_autoptr(JsonNode) root = json_from_string(r.out, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(root);
  JsonArray *plugins = json_object_get_array_member(json_node_get_object(root), "plugins");
  gboolean saw_fake = FALSE, saw_local = FALSE;
  for (guint i = 0; i < json_array_get_length(plugins); i++) {
    JsonObject *p = json_array_get_object_element(plugins, i);
    JsonObject *methods = json_object_get_object_member(p, "methods");
    const char *name = json_object_get_string_member(p, "name");
    if (methods == NULL)
      continue;
    JsonArray *executor = json_object_get_array_member(methods, "executor");
    gboolean backend_methods = json_object_get_boolean_member(methods, "sessions") &&
                               json_object_get_boolean_member(methods, "interrupt") &&
                               json_object_get_boolean_member(methods, "query");
    if (strcmp(name, "fake") == 0)
      saw_fake = backend_methods && json_array_get_length(executor) == 0;
    if (strcmp(name, "local") == 0)
      saw_local = backend_methods && json_array_get_length(executor) > 0 &&
                  strcmp(json_array_get_string_element(executor, 0), "execute_prelude") == 0;
  }
  CU_ASSERT_TRUE(saw_fake);
  CU_ASSERT_TRUE(saw_local);

  g_auto(cx_test_cli_run) human = cx_test_cellexec(NULL, "plugins", NULL);
  CX_ASSERT_CONTAINS(human.out, "\nfake ");
  CX_ASSERT_CONTAINS(human.out, "  optional methods: sessions, interrupt, query\n  executor operations: none\n");
  CX_ASSERT_CONTAINS(human.out, "  executor operations: execute_prelude, execute_prelude_incremental, evaluate_inline");
}

/* A FAULTY plugin fails the listing only with --strict. */
static void
test_cli_plugins_strict_fails_on_a_faulty_plugin(void)
{
  g_autofree char *faulty = config_with_a_faulty_plugin();
  g_auto(cx_test_cli_run) listed = cx_test_cellexec(NULL, "plugins", "-C", faulty, NULL);
  g_auto(cx_test_cli_run) strict = cx_test_cellexec(NULL, "plugins", "--strict", "-C", faulty, NULL);
  g_auto(cx_test_cli_run) strict_json = cx_test_cellexec(NULL, "plugins", "--strict", "--json", "-C", faulty, NULL);
  g_auto(cx_test_cli_run) clean = cx_test_cellexec(NULL, "plugins", "--strict", NULL);
  CU_ASSERT_EQUAL(listed.status, 0);
  CU_ASSERT_EQUAL(strict.status, 1);
  CU_ASSERT_EQUAL(strict_json.status, 1);
  CU_ASSERT_EQUAL(clean.status, 0);
  /* The listing itself is the same. */
  CU_ASSERT_STRING_EQUAL(strict.out, listed.out);
  CX_ASSERT_CONTAINS(strict.out, ": FAULTY");
}

/* --check's own options, and what it refuses. */
static void
test_cli_plugins_check_usage(void)
{
  g_autofree char *echo = g_build_filename(cx_test_case_plugins_dir(), "echo.so", NULL);
  g_auto(cx_test_cli_run) ok = cx_test_cellexec(NULL, "plugins", "--check", echo, "-o", "count=3", NULL);
  CU_ASSERT_EQUAL(ok.status, 0);
  CX_ASSERT_CONTAINS(ok.out, "\nok - run_cell_returns_a_bundle\n");
  CX_ASSERT_CONTAINS(ok.out, " passed, 0 failed, ");
  g_auto(cx_test_cli_run) python = cx_test_cellexec(NULL, "plugins", "--check", echo, "--python", NULL);
  CU_ASSERT_EQUAL(python.status, 1);
  CX_ASSERT_CONTAINS(python.out, "FAIL - runs_python: the cell print(6 * 7) printed \"print(6 * 7)\\n");
  static const char *const refused[][6] = {
    { "plugins", "--check", "ECHO", "-o", "cuont=3", NULL },       /* an option echo lacks */
    { "plugins", "--check", "ECHO", "--json", NULL },              /* --check lists nothing */
    { "plugins", "--check", "ECHO", "--strict", NULL },
    { "plugins", "-o", "count=3", NULL },                          /* -o without --check */
    { "plugins", "--python", NULL },
    { "plugins", "--case-timeout", "5", NULL },                    /* without --check */
    { "plugins", "--check", "ECHO", "--case-timeout", "0", NULL }, /* no time at all */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(refused); i++) {
    const char *a[6];
    for (gsize j = 0; j < 6; j++)
      a[j] = refused[i][j] != NULL && strcmp(refused[i][j], "ECHO") == 0 ? echo : refused[i][j];
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, a[0], a[1], a[2], a[3], a[4], NULL);
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_STRING_EQUAL(r.out, "");
    CX_ASSERT_CONTAINS(r.err, "cellexec: ");
  }
  g_auto(cx_test_cli_run) typo = cx_test_cellexec(NULL, "plugins", "--check", echo, "-o", "cuont=3", NULL);
  CX_ASSERT_CONTAINS(typo.err, "did you mean 'count'?");
}

static void
test_cli_runs_several_cells_in_one_session(void)
{
  g_auto(cx_test_cli_run) two = cx_test_cellexec(NULL, "run", "-b", "local", "-c", "x = 20", "-c", "x + 1", NULL);
  CU_ASSERT_EQUAL(two.status, 0);
  CU_ASSERT_STRING_EQUAL(two.out, "21\n");

  /* --session: cells cut at "# %%" lines; the run stops at a failing cell. */
  g_auto(cx_test_cli_run) cut = cx_test_cellexec("x = 1\n# %% second\nprint('two')\nx + 1\n# %%\n1/0\n# %%\n"
                                 "print('never')\n",
                                 "run", "-b", "subprocess", "--session", "-", NULL);
  CU_ASSERT_EQUAL(cut.status, 1);
  CU_ASSERT_STRING_EQUAL(cut.out, "two\n2\n");
  CX_ASSERT_CONTAINS(cut.err, "ZeroDivisionError");
  CU_ASSERT_PTR_NULL(strstr(cut.out, "never"));

  g_auto(cx_test_cli_run) json = cx_test_cellexec(NULL, "run", "-b", "local", "--json", "-c", "y = 2", "-c", "y * 3",
                                  NULL);
  CU_ASSERT_EQUAL(json.status, 0);
  g_auto(GStrv) lines = g_strsplit(json.out, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 3);
  CX_ASSERT_CONTAINS(lines[1], "\"rich_outputs\":[{\"text/plain\":\"6\"}]");
}

/* A long cell's prints appear as they are printed: the cell waits for a
 * file this test creates only after reading the cell's first line. */
static void
test_cli_run_prints_output_as_the_cell_runs(void)
{
  const char *const backends[] = { "local", "subprocess" };
  for (gsize i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_autofree char *dir = cx_test_tmpdir();
    g_autofree char *flag = g_build_filename(dir, "go", NULL);
    g_autofree char *code = g_strdup_printf(
      "import os, time\nprint('started', flush=True)\n"
      "deadline = time.time() + 20\n"
      "while not os.path.exists('%s') and time.time() < deadline:\n    time.sleep(0.01)\n"
      "print('done' if os.path.exists('%s') else 'nobody saw it')", flag, flag);
    g_autofree char *program = g_build_filename(cx_test_builddir(), "tools", "cellexec", NULL);
    const char *argv[] = { program, "run", "-b", backends[i], "-c", code, NULL };
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) process =
      g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                        &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(GDataInputStream) out =
      g_data_input_stream_new(g_subprocess_get_stdout_pipe(process));
    g_autofree char *first = g_data_input_stream_read_line(out, NULL, NULL, &error);
    CU_ASSERT_STRING_EQUAL(first, "started");
    CU_ASSERT_TRUE(g_file_set_contents(flag, "", 0, NULL));
    g_autofree char *second = g_data_input_stream_read_line(out, NULL, NULL, &error);
    CU_ASSERT_STRING_EQUAL(second, "done");
    g_subprocess_wait(process, NULL, NULL);
    CU_ASSERT_EQUAL(g_subprocess_get_exit_status(process), 0);
  }
}

/* Start `cellexec run` with CELLS (a cell that says it started, sleeps,
 * then ARGS's other cells), SIGINT it once the cell runs, and return how it
 * ended. */
static cx_test_cli_run
interrupted_run(const char *backend, gboolean second_cell)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *started = g_build_filename(dir, "started", NULL);
  g_autofree char *code = g_strdup_printf("import pathlib, time\npathlib.Path('%s').touch()\n"
                                          "time.sleep(60)", started);
  g_autoptr(GSubprocess) host =
    second_cell ? cx_test_cellexec_start("run", "-b", backend, "-c", code, "-c", "print('second')", NULL)
                : cx_test_cellexec_start("run", "-b", backend, "-c", code, NULL);
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (!g_file_test(started, G_FILE_TEST_EXISTS) && g_get_monotonic_time() < deadline)
    g_usleep(20 * 1000);
  g_subprocess_send_signal(host, SIGINT);
  return cx_test_cellexec_finish(host, NULL);
}

/* SIGTERM ends `cellexec run` in its 5 s even while the program is stuck
 * writing a local cell's output to a pipe nobody reads: the cell holds
 * the interpreter's lock there, which its interrupt waits for. */
static void
test_cli_ends_on_sigterm_while_its_output_is_stuck(void)
{
  g_autoptr(GSubprocess) host =
    cx_test_cellexec_start("run", "-b", "local", "-c", "print('x' * 10**8)", NULL);
  g_usleep(G_USEC_PER_SEC); /* if it is not stuck yet, SIGTERM must end it all the same */
  double seconds;
  g_auto(cx_test_cli_run) run = cx_test_cellexec_terminate(host, &seconds);
  CU_ASSERT_EQUAL(run.status, 143);
  CX_ASSERT_CONTAINS(run.err, "still running 5 s after SIGTERM");
  /* Nothing reads the output until the program is gone: a hang guard. */
  CU_ASSERT_TRUE(seconds < 20); /* it ends at 5 s; a slow machine gets room */
}

/* Ctrl-C interrupts the running cell (its KeyboardInterrupt is printed),
 * runs no further cell, and exits 130 as a shell reports SIGINT. */
static void
test_cli_ctrl_c_interrupts_the_cell_and_stops(void)
{
  const char *const backends[] = { "local", "subprocess" };
  for (gsize i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_auto(cx_test_cli_run) run = interrupted_run(backends[i], FALSE);
    CU_ASSERT_EQUAL(run.status, 130);
    CX_ASSERT_CONTAINS(run.err, "KeyboardInterrupt");
  }
  g_auto(cx_test_cli_run) session = interrupted_run("subprocess", TRUE);
  CU_ASSERT_EQUAL(session.status, 130);
  CX_ASSERT_CONTAINS(session.err, "KeyboardInterrupt");
  CU_ASSERT_PTR_NULL(strstr(session.out, "second"));
}

/* The files `run` appends to (--record, --debug-export, and the config's
 * record and debug-export, which may be relative: in the cells' cwd) are
 * where a cell may have planted something for the next run.  A symbolic
 * link, a hard link to a file outside, or a named pipe there is refused
 * at once with one sentence naming the file, and the file outside is
 * unchanged. */
static void
test_cli_appends_through_no_planted_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *outside = cx_test_write_file(dir, "outside.pth", "keep\n");
  g_autofree char *target = g_build_filename(dir, "runtime-debug.md", NULL);
  static const struct { const char *plant, *kind; } plants[] = {
    { "os.symlink", "it is a symbolic link that is not the system's, so never followed" },
    { "os.link", "it has 2 hard links, so writing it would change a file elsewhere too" },
    { "os.mkfifo", "it is a named pipe, not a regular file" },
  };
  static const struct { const char *flag, *key, *what; } writers[] = {
    { "--record", "record", "the recording" },
    { "--debug-export", "debug-export", "the debug export" },
  };
  for (gsize p = 0; p < G_N_ELEMENTS(plants); p++) {
    for (gsize w = 0; w < G_N_ELEMENTS(writers) * 2; w++) {
      g_remove(target);
      g_autofree char *code = p == 2 ? g_strdup_printf("import os; os.mkfifo('%s')", target)
                                     : g_strdup_printf("import os; %s('%s', '%s')",
                                                       plants[p].plant, outside, target);
      g_auto(cx_test_cli_run) planted = cx_test_cellexec(NULL, "run", "-c", code, NULL);
      CU_ASSERT_EQUAL(planted.status, 0);
      /* The next run, given the file by its flag or by a config. */
      g_autofree char *config_text = g_strdup_printf("[cellexec]\n%s = %s\n",
                                                     writers[w % 2].key, target);
      g_autofree char *config = cx_test_write_file(dir, "config", config_text);
      g_auto(cx_test_cli_run) r =
        w < 2 ? cx_test_cellexec(NULL, "run", writers[w].flag, target, "-c", "print(1)", NULL)
              : cx_test_cellexec(NULL, "run", "-C", config, "-c", "print(1)", NULL);
      CU_ASSERT_EQUAL(r.status, 2);
      g_autofree char *expected = g_strdup_printf("cannot write %s %s: %s", writers[w % 2].what,
                                                  target, plants[p].kind);
      CX_ASSERT_CONTAINS(r.err, expected);
      g_autofree char *after = NULL;
      CU_ASSERT_TRUE_FATAL(g_file_get_contents(outside, &after, NULL, NULL));
      CU_ASSERT_STRING_EQUAL(after, "keep\n");
    }
  }
  /* A regular file of its own is appended to as before. */
  g_remove(target);
  g_auto(cx_test_cli_run) ok = cx_test_cellexec(NULL, "run", "--record", target, "-c", "1", NULL);
  CU_ASSERT_EQUAL(ok.status, 0);
  CU_ASSERT_TRUE(g_file_test(target, G_FILE_TEST_IS_REGULAR));
}

/* A file whose code holds a NUL byte: the cell fails with Python's own
 * error, as any other invalid source does, and nothing of it runs; a
 * backslash and a zero (-c 'print("a\0b")') is valid Python and runs.  -c
 * cannot give a NUL byte: an argument is a C string. */
static void
test_cli_code_with_nul_fails_as_python_fails(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *ran = g_build_filename(dir, "ran", NULL);
  g_autoptr(GString) code = g_string_new(NULL);
  g_string_append_printf(code, "open('%s', 'w').close(); print('a", ran);
  g_string_append_c(code, '\0');
  g_string_append(code, "b')\n");
  g_autofree char *script = g_build_filename(dir, "nul.py", NULL);
  CU_ASSERT_TRUE_FATAL(g_file_set_contents(script, code->str, (gssize)code->len, NULL));
  /* One cell of the file, and the file cut into cells (--json twice is
   * --json). */
  static const char *const modes[] = { "--json", "--session" };
  for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
    g_auto(cx_test_cli_run) r =
      cx_test_cellexec(NULL, "run", "-b", "local", "--json", modes[i], script, NULL);
    CU_ASSERT_EQUAL(r.status, 1);
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_result) result = cx_result_from_json(r.out, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(result);
    cx_test_assert_refused_as_python_refuses_nul(result);
    CU_ASSERT_FALSE(g_file_test(ran, G_FILE_TEST_EXISTS));
  }
  g_auto(cx_test_cli_run) literal =
    cx_test_cellexec(NULL, "run", "-b", "local", "-c", "print('a\\0b' == chr(97) + chr(0) + 'b')",
                     NULL);
  CU_ASSERT_EQUAL(literal.status, 0);
  CU_ASSERT_STRING_EQUAL(literal.out, "True\n");
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_cli_runs_several_cells_in_one_session", test_cli_runs_several_cells_in_one_session },
    { "test_cli_run_prints_output_as_the_cell_runs", test_cli_run_prints_output_as_the_cell_runs },
    { "test_cli_run_loads_only_the_plugin_it_uses", test_cli_run_loads_only_the_plugin_it_uses },
    { "test_cli_plugins_json_survives_a_chatty_plugin",
      test_cli_plugins_json_survives_a_chatty_plugin },
    { "test_cli_run_warns_when_its_backend_shadows_another",
      test_cli_run_warns_when_its_backend_shadows_another },
    { "test_cli_run_fake_json_prints_a_success_bundle", test_cli_run_fake_json_prints_a_success_bundle },
    { "test_cli_failed_cell_exits_1_and_prints_the_error", test_cli_failed_cell_exits_1_and_prints_the_error },
    { "test_cli_human_mode_prints_streams_and_rich_text", test_cli_human_mode_prints_streams_and_rich_text },
    { "test_cli_reads_code_from_stdin_and_files", test_cli_reads_code_from_stdin_and_files },
    { "test_cli_passes_run_options", test_cli_passes_run_options },
    { "test_cli_code_backslash_n_is_a_line_break_outside_strings", test_cli_code_backslash_n_is_a_line_break_outside_strings },
    { "test_cli_usage_errors_exit_2_with_one_line", test_cli_usage_errors_exit_2_with_one_line },
    { "test_cli_notebook_refuses_a_keyword_parameter_name",
      test_cli_notebook_refuses_a_keyword_parameter_name },
    { "test_cli_plugins_lists_usable_and_faulty", test_cli_plugins_lists_usable_and_faulty },
    { "test_cli_config_check", test_cli_config_check },
    { "test_cli_appends_through_no_planted_file", test_cli_appends_through_no_planted_file },
    { "test_cli_run_refuses_a_misspelled_section", test_cli_run_refuses_a_misspelled_section },
    { "test_cli_every_command_has_help", test_cli_every_command_has_help },
    { "test_cli_json_is_not_corrupted_by_fd_output", test_cli_json_is_not_corrupted_by_fd_output },
    { "test_cli_json_survives_a_backend_that_leaves_fds_alone",
      test_cli_json_survives_a_backend_that_leaves_fds_alone },
    { "test_cli_timeout_rejects_inf_nan_negative_and_huge", test_cli_timeout_rejects_inf_nan_negative_and_huge },
    { "test_cli_run_with_stdin_closed_is_a_usage_error", test_cli_run_with_stdin_closed_is_a_usage_error },
    { "test_cli_write_errors_on_stdout_exit_3", test_cli_write_errors_on_stdout_exit_3 },
    { "test_cli_a_reader_that_goes_away_is_exit_3", test_cli_a_reader_that_goes_away_is_exit_3 },
    { "test_cli_text_mode_prints_errors_shown_mid_cell", test_cli_text_mode_prints_errors_shown_mid_cell },
    { "test_cli_plugins_lists_optional_methods", test_cli_plugins_lists_optional_methods },
    { "test_cli_plugins_strict_fails_on_a_faulty_plugin", test_cli_plugins_strict_fails_on_a_faulty_plugin },
    { "test_cli_plugins_check_usage", test_cli_plugins_check_usage },
    { "test_cli_config_check_rejects_non_utf8_and_duplicates",
      test_cli_config_check_rejects_non_utf8_and_duplicates },
    { "test_cli_ends_on_sigterm_while_its_output_is_stuck",
      test_cli_ends_on_sigterm_while_its_output_is_stuck },
    { "test_cli_ctrl_c_interrupts_the_cell_and_stops", test_cli_ctrl_c_interrupts_the_cell_and_stops },
    { "test_cli_code_with_nul_fails_as_python_fails",
      test_cli_code_with_nul_fails_as_python_fails },
    { NULL, NULL }
  };
  cx_test_add_suite("cli", tests);
}
