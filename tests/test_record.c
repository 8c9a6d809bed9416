/* Recording real results on any backend (cellexec/record.h) and replaying
 * them with the fake backend: byte-identical bundles, concurrent writers,
 * malformed files, and the `cellexec record` command. */
#include "config.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cx_test.h"

/* ---- Helpers ------------------------------------------------------------- */

static char *
tmp_path(const char *name)
{
  g_autofree char *dir = cx_test_tmpdir();
  return g_build_filename(dir, name, NULL);
}

static char *
read_text(const char *path)
{
  char *contents = NULL;
  g_autoptr(GError) error = NULL;
  g_file_get_contents(path, &contents, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  return contents;
}

static guint
count_lines(const char *path)
{
  g_autofree char *text = read_text(path);
  guint n = 0;
  for (const char *c = text; *c != '\0'; c++)
    n += *c == '\n';
  return n;
}

static cx_recording *
load_ok(const char *path)
{
  g_autoptr(GError) error = NULL;
  cx_recording *recording = cx_recording_load(path, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(recording);
  return recording;
}

/* Assert that EXPECTED and ACTUAL, JSON texts of bundles perhaps megabytes
 * long, are the same bytes; print where they part otherwise. */
static void
assert_same_json(const char *what, const char *expected, const char *actual)
{
  if (strcmp(expected, actual) != 0) {
    gsize at = 0;
    while (expected[at] != '\0' && expected[at] == actual[at])
      at++;
    gsize from = at > 40 ? at - 40 : 0;
    fprintf(stderr, "\n  %s: replayed bundle differs at byte %zu:\n  recorded: %.80s\n  replayed: %.80s\n",
            what, at, expected + from, actual + from);
  }
  CU_ASSERT_STRING_EQUAL(expected, actual);
}

typedef struct {
  gint session;           /* 0: stateless; else the session (1, 2) to run it in */
  const char *code;
  double timeout;         /* 0: none */
  const char *error_type; /* what the real backend must say; NULL: success */
  const char *in_json;    /* a piece of its bundle's JSON, checked on the real run */
} cell_case;

/* The cells both real backends record: what the fake must give back. */
static const cell_case common_cells[] = {
  { 0, "print('x' * 1048575)", 0, NULL, "\"stdout\":\"xxxxxxxx" },
  { 0, "class Picture:\n"
       "    def _repr_png_(self): return bytes(range(256)) * 4\n"
       "    def __repr__(self): return 'Picture()'\n"
       "Picture()", 0, NULL, "\"image/png\":\"AAECAwQF" },
  { 0, "import sys\nprint('out')\nprint('err', file=sys.stderr)\ndisplay({'a': 1}, raw=False)\n"
       "def inner():\n    raise ValueError('boom')\ninner()", 0, "ValueError",
    "raise ValueError('boom')" },
  { 0, "import os\nos.urandom(8).hex()", 0, NULL, "\"text/plain\":\"'" },
  { 0, "import os\nos.urandom(8).hex()", 0, NULL, "\"text/plain\":\"'" },
  { 1, "x = 40", 0, NULL, "\"success\":true" },
  { 2, "x = 0", 0, NULL, "\"success\":true" },
  { 1, "x += 1\nx", 0, NULL, "\"text/plain\":\"41\"" },
  { 2, "x += 1\nx", 0, NULL, "\"text/plain\":\"1\"" },
  { 1, "x += 1\nx", 0, NULL, "\"text/plain\":\"42\"" },
  { 0, "import time\nprint('waiting')\ntime.sleep(30)", 1.0, "TimeoutError", "waiting" },
  { 0, NULL, 0, NULL, NULL }
};

static const cell_case subprocess_cells[] = {
  { 0, "print('bye', flush=True)\nimport os\nos.abort()", 0, "WorkerCrashed", "WorkerCrashed" },
  { 0, NULL, 0, NULL, NULL }
};

static const cell_case jupyter_cells[] = {
  { 0, "print('bye', flush=True)\nimport os\nos._exit(3)", 0, "KernelDied", "KernelDied" },
  { 0, NULL, 0, NULL, NULL }
};

/* Run CASES on BACKEND (sessions opened in order 1, 2 first); the JSON of
 * each result into JSONS.  With REAL, check each is what the case says. */
static void
run_cases(cx_backend *backend, const cell_case *cases, GPtrArray *jsons, gboolean real)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_session) one = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_session) two = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  for (const cell_case *c = cases; c->code != NULL; c++) {
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_timeout(run, c->timeout);
    cx_session *session = c->session == 1 ? one : c->session == 2 ? two : NULL;
    g_autoptr(cx_result) result = session != NULL
                                    ? cx_session_run_cell(session, c->code, run, &error)
                                    : cx_backend_run_cell(backend, c->code, run, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(result);
    char *json = cx_result_to_json(result, FALSE);
    if (real) {
      if (c->error_type != NULL)
        CX_ASSERT_ERROR_TYPE(result, c->error_type);
      else
        CX_ASSERT_CELL_OK(result);
      if (strstr(json, c->in_json) == NULL)
        fprintf(stderr, "\n  %.60s: expected %s in %.300s\n", c->code, c->in_json, json);
      CU_ASSERT_PTR_NOT_NULL(strstr(json, c->in_json));
    }
    g_ptr_array_add(jsons, json);
  }
}

/* Record CASES on backend NAME, replay them with the fake from the file as
 * it is, and compare every bundle byte for byte. */
static void
record_and_replay(const char *name, const cell_case *extra)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GPtrArray) recorded = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) replayed = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(cx_backend) real = cx_test_open_backend(name, NULL, NULL);
    CU_ASSERT_TRUE_FATAL(cx_backend_record(real, path, &error));
    run_cases(real, common_cells, recorded, TRUE);
    run_cases(real, extra, recorded, TRUE);
  }
  CU_ASSERT_EQUAL(count_lines(path), recorded->len);
  /* The 1 MiB stream went in whole. */
  CU_ASSERT_PTR_NOT_NULL(strstr(g_ptr_array_index(recorded, 0), "xxxx\\n\""));
  CU_ASSERT_TRUE(strlen(g_ptr_array_index(recorded, 0)) > 2 * 1048576);

  g_autoptr(cx_backend) fake = cx_test_open_backend("fake", "responses", path, NULL);
  run_cases(fake, common_cells, replayed, FALSE);
  run_cases(fake, extra, replayed, FALSE);
  CU_ASSERT_EQUAL_FATAL(replayed->len, recorded->len);
  for (guint i = 0; i < recorded->len; i++) {
    g_autofree char *what = g_strdup_printf("%s cell %u", name, i);
    assert_same_json(what, g_ptr_array_index(recorded, i), g_ptr_array_index(replayed, i));
  }
  /* The two runs of one stateless cell gave two results, replayed in order. */
  CU_ASSERT_STRING_NOT_EQUAL(g_ptr_array_index(recorded, 3), g_ptr_array_index(recorded, 4));
}

/* ---- Record and replay ---------------------------------------------------- */

static void
test_record_local_replays_identically(void)
{
  record_and_replay("local", subprocess_cells + 1 /* none */);
}

static void
test_record_subprocess_replays_identically(void)
{
  record_and_replay("subprocess", subprocess_cells);
}

static void
test_record_jupyter_replays_identically(void)
{
  /* The jupyter backend is built only where libzmq is. */
  if (cx_registry_lookup(cx_test_registry(), "jupyter", NULL) == NULL) {
    fprintf(stderr, " (no jupyter backend built: nothing to record) ");
    return;
  }
  record_and_replay("jupyter", jupyter_cells);
}

/* Session cells are matched by their position, whatever order the test
 * runs them in; stateless ones by code, then in order. */
static void
test_record_replay_matches_session_position_in_any_order(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(cx_backend) real = cx_test_open_backend("local", NULL, NULL);
    CU_ASSERT_TRUE_FATAL(cx_backend_record(real, path, &error));
    g_autoptr(GPtrArray) jsons = g_ptr_array_new_with_free_func(g_free);
    run_cases(real, common_cells + 5, jsons, TRUE); /* the session cells */
  }
  g_autoptr(cx_backend) fake = cx_test_open_backend("fake", "responses", path, NULL);
  g_autoptr(cx_session) one = cx_session_open(fake, &error);
  g_autoptr(cx_session) two = cx_session_open(fake, &error);
  CX_ASSERT_NO_ERROR(error);
  /* Session 2 first, then session 1. */
  g_autoptr(cx_result) b1 = cx_session_run_cell(two, "x = 0", NULL, &error);
  g_autoptr(cx_result) b2 = cx_session_run_cell(two, "x += 1\nx", NULL, &error);
  g_autoptr(cx_result) a1 = cx_session_run_cell(one, "x = 40", NULL, &error);
  g_autoptr(cx_result) a2 = cx_session_run_cell(one, "x += 1\nx", NULL, &error);
  g_autoptr(cx_result) a3 = cx_session_run_cell(one, "x += 1\nx", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(b2, 0), "text/plain"), "1");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(a2, 0), "text/plain"), "41");
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cx_result_get_output(a3, 0), "text/plain"), "42");
}

static void
test_record_writes_position_options_and_redacts_secrets(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  g_autofree char *responses = tmp_path("responses.json");
  g_file_set_contents(responses, "[{\"match\": \".\", \"result\": {\"stdout\": \"ok\"}}]", -1, NULL);
  {
    g_autoptr(cx_backend) backend = cx_test_open_backend("fake", "responses", responses, NULL);
    CU_ASSERT_TRUE_FATAL(cx_backend_record(backend, path, &error));
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_cwd(run, "/tmp");
    cx_run_options_add_env(run, "API_TOKEN=hunter2");
    cx_run_options_add_env(run, "db_password=swordfish");
    cx_run_options_add_env(run, "DATASET=/data");
    cx_run_options_set_timeout(run, 2.5);
    cx_run_options_add_allowed_mime_type(run, "image/png");
    g_autoptr(cx_result) r1 = cx_backend_run_cell(backend, "a", run, &error);
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    g_autoptr(cx_result) r2 = cx_session_run_cell(session, "b", NULL, &error);
    g_autoptr(cx_result) r3 = cx_session_run_cell(session, "c", NULL, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  g_autofree char *text = read_text(path);
  CU_ASSERT_PTR_NULL(strstr(text, "hunter2"));
  CU_ASSERT_PTR_NULL(strstr(text, "swordfish"));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  CU_ASSERT_EQUAL_FATAL(g_strv_length(lines), 4);
  CU_ASSERT_STRING_EQUAL(lines[0],
    "{\"backend\":\"fake\",\"session\":null,\"code\":\"a\",\"options\":{\"cwd\":\"/tmp\","
    "\"env\":[\"API_TOKEN=[redacted]\",\"db_password=[redacted]\",\"DATASET=/data\"],"
    "\"timeout\":2.5,\"use_subprocess\":false,\"allowed_mime_types\":[\"image/png\"]},"
    "\"result\":{\"stdout\":\"ok\",\"stderr\":\"\",\"rich_outputs\":[],\"success\":true,"
    "\"error\":null,\"outputs\":[{\"output_type\":\"stream\",\"name\":\"stdout\",\"text\":\"ok\"}]}}");
  CX_ASSERT_CONTAINS(lines[1], "{\"backend\":\"fake\",\"session\":{\"id\":1,\"cell\":1},\"code\":\"b\"");
  CX_ASSERT_CONTAINS(lines[2], "{\"backend\":\"fake\",\"session\":{\"id\":1,\"cell\":2},\"code\":\"c\"");
}

/* A recorder on one session records its cells only. */
static void
test_record_session_recorder_records_that_session_only(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recorder) recorder = cx_recorder_new(path, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_recorder_get_path(recorder), path);
  {
    g_autoptr(cx_backend) backend = cx_test_open_backend("fake", NULL, NULL);
    g_autoptr(cx_session) first = cx_session_open(backend, &error);
    g_autoptr(cx_session) second = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    cx_session_set_recorder(second, recorder);
    g_autoptr(cx_result) r1 = cx_test_run_cell(backend, "stateless", NULL);
    g_autoptr(cx_result) r2 = cx_session_run_cell(first, "first", NULL, &error);
    g_autoptr(cx_result) r3 = cx_session_run_cell(second, "second", NULL, &error);
    cx_session_set_recorder(second, NULL);
    g_autoptr(cx_result) r4 = cx_session_run_cell(second, "not recorded", NULL, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  g_autoptr(cx_recording) recording = load_ok(path);
  CU_ASSERT_EQUAL_FATAL(cx_recording_get_n_records(recording), 1);
  CU_ASSERT_STRING_EQUAL(cx_recording_get_code(recording, 0), "second");
  guint session = 0, cell = 0;
  CU_ASSERT_TRUE(cx_recording_get_session(recording, 0, &session, &cell));
  CU_ASSERT_EQUAL(session, 2);
  CU_ASSERT_EQUAL(cell, 1);
}

static void
test_record_config_key_records_every_cell(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "cells.jsonl", NULL);
  g_autofree char *text = g_strdup_printf("[cellexec]\nbackend = fake\nrecord = %s\n", path);
  g_autofree char *config = cx_test_write_file(dir, "config", text);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(cx_backend) backend = cx_backend_open_configured(config, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) r1 = cx_test_run_cell(backend, "first", NULL);
    g_autoptr(cx_result) r2 = cx_test_run_cell(backend, "second", NULL);
  }
  g_autoptr(cx_recording) recording = load_ok(path);
  CU_ASSERT_EQUAL_FATAL(cx_recording_get_n_records(recording), 2);
  CU_ASSERT_STRING_EQUAL(cx_recording_get_code(recording, 1), "second");
  CU_ASSERT_STRING_EQUAL(cx_recording_get_backend(recording, 1), "fake");

  g_autoptr(cx_config) loaded = cx_config_load_file(config, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_STRING_EQUAL(cx_config_get_record(loaded), path);
}

/* A call that gave no result at all is recorded as its failure, and the
 * fake gives the same error back. */
static void
test_record_failure_without_result_replays_as_error(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(cx_recorder) recorder = cx_recorder_new(path, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(GError) failure =
      g_error_new_literal(CX_ERROR, CX_ERROR_BACKEND, "the worker could not start");
    CU_ASSERT_TRUE(cx_recorder_append(recorder, "remote", "x = 1", NULL, 0, 0, NULL, failure, &error));
    CX_ASSERT_NO_ERROR(error);
  }
  g_autoptr(cx_recording) recording = load_ok(path);
  CU_ASSERT_PTR_NULL(cx_recording_get_result(recording, 0));
  CU_ASSERT_STRING_EQUAL(cx_recording_get_failure(recording, 0)->message, "the worker could not start");

  g_autoptr(cx_backend) fake = cx_test_open_backend("fake", "responses", path, NULL);
  g_autoptr(cx_result) result = cx_backend_run_cell(fake, "x = 1", NULL, &error);
  CU_ASSERT_PTR_NULL(result);
  CX_ASSERT_ERROR(error, CX_ERROR_BACKEND);
  CU_ASSERT_STRING_EQUAL(error->message, "the worker could not start");
}

/* A NUL byte in a stream is written as \u0000 and read back as U+FFFD, the
 * text after it kept. */
static void
test_record_nul_in_a_stream_does_not_cut_it(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_result_new();
  cx_result_append_stdout(result, "a\0b\\u0000c", 10);
  {
    g_autoptr(cx_recorder) recorder = cx_recorder_new(path, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_TRUE(cx_recorder_append(recorder, "local", "x", NULL, 0, 0, result, NULL, &error));
  }
  g_autofree char *text = read_text(path);
  CX_ASSERT_CONTAINS(text, "\"stdout\":\"a\\u0000b\\\\u0000c\"");
  g_autoptr(cx_recording) recording = load_ok(path);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(cx_recording_get_result(recording, 0), NULL),
                         "a\xef\xbf\xbd" "b\\u0000c");
}

/* ---- Concurrent writers ---------------------------------------------------- */

#define CELLS_PER_WRITER 60

/* Every line of PATH a record, EXPECTED of them, each code once. */
static void
assert_all_records(const char *path, guint expected)
{
  g_autoptr(cx_recording) recording = load_ok(path);
  CU_ASSERT_EQUAL(cx_recording_get_n_records(recording), expected);
  CU_ASSERT_EQUAL(count_lines(path), expected);
  g_autoptr(GHashTable) codes = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < cx_recording_get_n_records(recording); i++) {
    CU_ASSERT_EQUAL(cx_result_get_stdout(cx_recording_get_result(recording, i), NULL)[0], 'y');
    g_hash_table_add(codes, (gpointer)cx_recording_get_code(recording, i));
  }
  CU_ASSERT_EQUAL(g_hash_table_size(codes), expected);
}

/* A responses file answering every cell with SIZE bytes of stdout: lines
 * longer than any stdio buffer (BUFSIZ, 8 KiB) or a pipe's atomic write
 * (PIPE_BUF, 4 KiB), so a writer that wrote a line in pieces would
 * interleave. */
static char *
write_big_responses(gsize size)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(GString) script = g_string_new("[{\"match\": \"\", \"result\": {\"stdout\": \"");
  for (gsize i = 0; i < size; i++)
    g_string_append_c(script, 'y');
  g_string_append(script, "\"}}]");
  return cx_test_write_file(dir, "big.json", script->str);
}

static cx_backend *
open_big_fake(void)
{
  g_autofree char *path = write_big_responses(64 * 1024);
  return cx_test_open_backend("fake", "responses", path, NULL);
}

typedef struct {
  cx_backend *backend;
  const char *name;
} writer;

static gpointer
write_cells(gpointer data)
{
  writer *w = data;
  for (guint i = 0; i < CELLS_PER_WRITER; i++) {
    g_autofree char *code = g_strdup_printf("%s %u", w->name, i);
    cx_result_free(cx_backend_run_cell(w->backend, code, NULL, NULL));
  }
  return NULL;
}

static void
test_record_threads_never_interleave_lines(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(GError) error = NULL;
  /* Two threads share a backend; two more have another backend with a
   * recorder of its own on the same file. */
  g_autoptr(cx_backend) shared = open_big_fake();
  g_autoptr(cx_backend) other = open_big_fake();
  CU_ASSERT_TRUE_FATAL(cx_backend_record(shared, path, &error));
  CU_ASSERT_TRUE_FATAL(cx_backend_record(other, path, &error));
  writer writers[] = { { shared, "a" }, { shared, "b" }, { other, "c" }, { other, "d" } };
  GThread *threads[G_N_ELEMENTS(writers)];
  for (guint i = 0; i < G_N_ELEMENTS(writers); i++)
    threads[i] = g_thread_new("writer", write_cells, &writers[i]);
  for (guint i = 0; i < G_N_ELEMENTS(writers); i++)
    g_thread_join(threads[i]);
  assert_all_records(path, G_N_ELEMENTS(writers) * CELLS_PER_WRITER);
}

/* A writer child's end.  Under valgrind, exit's leak check would find in
 * the child what the parent's other threads hold (a jupyter kernel pool's
 * from an earlier test): they do not exist after fork(), so nothing there
 * refers to their memory.  exec ends the child without that check; the
 * parent runs the same code under it. */
static void G_GNUC_NORETURN
end_writer_child(gboolean ok)
{
  execl(ok ? "/bin/true" : "/bin/false", ok ? "true" : "false", (char *)NULL);
  _exit(ok ? 0 : 1);
}

static void
test_record_processes_never_interleave_lines(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_autoptr(cx_backend) backend = open_big_fake();
  pid_t children[2];
  for (guint i = 0; i < G_N_ELEMENTS(children); i++) {
    children[i] = fork();
    CU_ASSERT_TRUE_FATAL(children[i] >= 0);
    if (children[i] == 0) {
      /* Each process opens the file itself, as separate programs do. */
      gboolean recording = cx_backend_record(backend, path, NULL);
      if (recording) {
        writer w = { backend, i == 0 ? "first" : "second" };
        write_cells(&w);
      }
      end_writer_child(recording);
    }
  }
  g_autoptr(GError) error = NULL;
  CU_ASSERT_TRUE_FATAL(cx_backend_record(backend, path, &error));
  writer w = { backend, "parent" };
  write_cells(&w);
  for (guint i = 0; i < G_N_ELEMENTS(children); i++) {
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(children[i], &status, 0), children[i]);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  assert_all_records(path, 3 * CELLS_PER_WRITER);
}

/* ---- Reading malformed recordings ------------------------------------------ */

static const char valid_line[] =
  "{\"backend\":\"local\",\"session\":null,\"code\":\"1\",\"options\":null,"
  "\"result\":{\"stdout\":\"y\",\"stderr\":\"\",\"rich_outputs\":[],\"success\":true,\"error\":null}}\n";

/* Loading TEXT fails naming bad.jsonl, LINE, and saying WHAT. */
static void
assert_malformed(const char *text, guint line, const char *what)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = cx_test_write_file(dir, "bad.jsonl", text);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recording) recording = cx_recording_load(path, &error);
  CU_ASSERT_PTR_NULL(recording);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  g_autofree char *where = g_strdup_printf("%s:%u: ", path, line);
  CU_ASSERT_TRUE(g_str_has_prefix(error->message, where));
  if (!g_str_has_prefix(error->message, where))
    fprintf(stderr, "\n  expected \"%s\" to start with \"%s\"\n", error->message, where);
  CX_ASSERT_CONTAINS(error->message, what);

  /* The fake refuses it the same way. */
  g_autoptr(GError) open_error = NULL;
  const cx_plugin_info *fake = cx_registry_lookup(cx_test_registry(), "fake", NULL);
  g_autoptr(cx_options) options = cx_options_new("fake", cx_plugin_info_get_options(fake));
  CU_ASSERT_TRUE(cx_options_set(options, "responses", path, NULL));
  g_autoptr(cx_backend) backend =
    cx_backend_open(cx_test_registry(), "fake", g_steal_pointer(&options), &open_error);
  CU_ASSERT_PTR_NULL(backend);
  CU_ASSERT_PTR_NOT_NULL_FATAL(open_error);
  CX_ASSERT_CONTAINS(open_error->message, where);
}

static void
test_record_malformed_lines_name_their_line(void)
{
  g_autofree char *truncated = g_strdup_printf("%s%.*s", valid_line, 40, valid_line);
  assert_malformed(truncated, 2, "the last line is cut short");
  g_autofree char *bad_json = g_strdup_printf("%s\n{\"backend\": \"local\", \n%s", valid_line, valid_line);
  assert_malformed(bad_json, 3, "not valid JSON");
  assert_malformed("\"just text\"\n", 1, "not a JSON object");
  assert_malformed("{\"backend\":\"local\",\"result\":{}}\n", 1, "missing key \"code\"");
  assert_malformed("{\"code\":\"1\",\"result\":{}}\n", 1, "missing key \"backend\"");
  assert_malformed("{\"backend\":\"local\",\"code\":\"1\"}\n", 1, "missing key \"result\"");
  assert_malformed("{\"backend\":\"local\",\"code\":7,\"result\":{}}\n", 1, "\"code\" must be a string");
  assert_malformed("{\"backend\":\"local\",\"code\":\"1\",\"result\":{\"stdout\":5}}\n", 1,
                   "\"result\": result bundle: \"stdout\" must be a string");
  assert_malformed("{\"backend\":\"local\",\"code\":\"1\",\"session\":{\"id\":0},\"result\":{}}\n",
                   1, "\"session\" must be null or");
  assert_malformed("{\"backend\":\"local\",\"code\":\"1\",\"failure\":{\"code\":\"x\"}}\n", 1,
                   "\"failure\" must be");
}

static void
test_record_blank_lines_and_a_last_line_without_break_are_fine(void)
{
  g_autofree char *text = g_strdup_printf("\n%s  \n%.*s", valid_line,
                                          (int)strlen(valid_line) - 1, valid_line);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recording) recording = cx_recording_load_data(text, -1, "mine", &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(cx_recording_get_n_records(recording), 2);
  CU_ASSERT_EQUAL(cx_recording_get_line(recording, 0), 2);
  CU_ASSERT_EQUAL(cx_recording_get_line(recording, 1), 4);
  CU_ASSERT_STRING_EQUAL(cx_recording_get_origin(recording), "mine");
}

static void
test_record_unopenable_file_is_an_error(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recorder) recorder = cx_recorder_new("/nonexistent/dir/cells.jsonl", NULL, &error);
  CU_ASSERT_PTR_NULL(recorder);
  CX_ASSERT_ERROR(error, CX_ERROR_FAILED);
  CX_ASSERT_CONTAINS(error->message, "/nonexistent/dir/cells.jsonl");
}

/* ---- The command line ------------------------------------------------------- */

static void
test_record_cli_records_and_replays(void)
{
  g_autofree char *path = tmp_path("cells.jsonl");
  g_auto(cx_test_cli_run) real = cx_test_cellexec(NULL, "run", "--record", path, "--json", "-c", "print('hi')\\n6 * 7", NULL);
  CU_ASSERT_EQUAL(real.status, 0);
  CX_ASSERT_CONTAINS(real.out, "\"text/plain\":\"42\"");
  g_auto(cx_test_cli_run) failing = cx_test_cellexec(NULL, "run", "-b", "subprocess", "--record", path, "-c", "1/0", NULL);
  CU_ASSERT_EQUAL(failing.status, 1);

  g_autofree char *responses = g_strdup_printf("responses=%s", path);
  g_auto(cx_test_cli_run) replay = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", responses, "--json", "-c",
                                    "print('hi')\\n6 * 7", NULL);
  CU_ASSERT_EQUAL(replay.status, 0);
  CU_ASSERT_STRING_EQUAL(replay.out, real.out);
  g_auto(cx_test_cli_run) missing = cx_test_cellexec(NULL, "run", "-b", "fake", "-o", responses, "-c",
                                     "print('never recorded')\\nmore", NULL);
  CU_ASSERT_EQUAL(missing.status, 1);
  CX_ASSERT_CONTAINS(missing.err, "UnrecordedCell");
  CX_ASSERT_CONTAINS(missing.err, "\"print('never recorded')\"");
  CX_ASSERT_CONTAINS(missing.err, path);

  g_auto(cx_test_cli_run) show = cx_test_cellexec(NULL, "record", "show", path, NULL);
  CU_ASSERT_EQUAL(show.status, 0);
  g_autofree char *expected = g_strdup_printf(
    "%s: 2 cells (2 stateless, 0 in 0 sessions), 1 failed\n"
    "backends: local (1), subprocess (1)\n"
    "failures:\n"
    "  line 2: ZeroDivisionError: division by zero (1/0)\n", path);
  CU_ASSERT_STRING_EQUAL(show.out, expected);
  g_auto(cx_test_cli_run) check = cx_test_cellexec(NULL, "record", "check", path, NULL);
  CU_ASSERT_EQUAL(check.status, 0);
  g_autofree char *ok = g_strdup_printf("%s: ok (2 records)\n", path);
  CU_ASSERT_STRING_EQUAL(check.out, ok);
}

/* The "outputs" of every cell of the notebook at PATH, as one JSON text. */
static char *
notebook_outputs(const char *path)
{
  g_autofree char *text = read_text(path);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = cx_json_from_string(text, -1, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_PTR_NOT_NULL_FATAL(root);
  JsonArray *cells = json_object_get_array_member(json_node_get_object(root), "cells");
  g_autoptr(JsonArray) outputs = json_array_new();
  for (guint i = 0; i < json_array_get_length(cells); i++) {
    JsonObject *cell = json_array_get_object_element(cells, i);
    if (json_object_has_member(cell, "outputs"))
      json_array_add_element(outputs, json_node_copy(json_object_get_member(cell, "outputs")));
  }
  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), outputs);
  return cx_json_to_string(node, FALSE);
}

/* `cellexec notebook run --record`: a notebook's cells, recorded in its
 * session, replay through the fake into the same outputs. */
static void
test_record_cli_notebook_run_records_its_session(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *notebook = cx_test_write_file(dir, "in.ipynb",
    "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": [\n"
    " {\"cell_type\": \"code\", \"id\": \"a\", \"metadata\": {}, \"execution_count\": null,"
    "  \"outputs\": [], \"source\": \"x = 6\\nprint('set', x)\"},\n"
    " {\"cell_type\": \"markdown\", \"id\": \"b\", \"metadata\": {}, \"source\": \"# between\"},\n"
    " {\"cell_type\": \"code\", \"id\": \"c\", \"metadata\": {}, \"execution_count\": null,"
    "  \"outputs\": [], \"source\": \"display({'x': x}, raw=False)\\nx * 7\"}\n]}\n");
  g_autofree char *path = g_build_filename(dir, "cells.jsonl", NULL);
  g_autofree char *real_out = g_build_filename(dir, "real.ipynb", NULL);
  g_autofree char *replay_out = g_build_filename(dir, "replay.ipynb", NULL);
  g_auto(cx_test_cli_run) real = cx_test_cellexec(NULL, "notebook", "run", notebook, "-b", "subprocess",
                                                  "--record", path, "-o", real_out, "--quiet", NULL);
  CU_ASSERT_EQUAL(real.status, 0);
  CU_ASSERT_STRING_EQUAL(real.err, "");
  CU_ASSERT_EQUAL(count_lines(path), 2);

  g_auto(cx_test_cli_run) show = cx_test_cellexec(NULL, "record", "show", path, NULL);
  CU_ASSERT_EQUAL(show.status, 0);
  CX_ASSERT_CONTAINS(show.out, "2 cells (0 stateless, 2 in 1 session), 0 failed");

  g_autofree char *responses = g_strdup_printf("responses=%s", path);
  g_auto(cx_test_cli_run) replay = cx_test_cellexec(NULL, "notebook", "run", notebook, "-b", "fake",
                                                    "--option", responses, "-o", replay_out, "--quiet", NULL);
  CU_ASSERT_EQUAL(replay.status, 0);
  g_autofree char *recorded = notebook_outputs(real_out);
  g_autofree char *replayed = notebook_outputs(replay_out);
  CX_ASSERT_CONTAINS(recorded, "\"text\":[\"set 6\\n\"]");
  CX_ASSERT_CONTAINS(recorded, "\"text/plain\":[\"42\"]");
  assert_same_json("notebook outputs", recorded, replayed);
}

static void
test_record_cli_check_rejects_malformed_files(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *text = g_strdup_printf("%s%s{\"backend\":", valid_line, valid_line);
  g_autofree char *path = cx_test_write_file(dir, "bad.jsonl", text);
  for (guint i = 0; i < 2; i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "record", i == 0 ? "check" : "show", path, NULL);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_STRING_EQUAL(r.out, "");
    g_autofree char *where = g_strdup_printf("cellexec: %s:3: the last line is cut short", path);
    CX_ASSERT_CONTAINS(r.err, where);
  }
  g_auto(cx_test_cli_run) missing = cx_test_cellexec(NULL, "record", "check", "/nonexistent.jsonl", NULL);
  CU_ASSERT_EQUAL(missing.status, 1);
  CX_ASSERT_CONTAINS(missing.err, "/nonexistent.jsonl");
  g_auto(cx_test_cli_run) usage = cx_test_cellexec(NULL, "record", "verify", path, NULL);
  CU_ASSERT_EQUAL(usage.status, 2);
  g_auto(cx_test_cli_run) no_file = cx_test_cellexec(NULL, "record", "check", NULL);
  CU_ASSERT_EQUAL(no_file.status, 2);
  g_auto(cx_test_cli_run) help = cx_test_cellexec(NULL, "record", "--help", NULL);
  CU_ASSERT_EQUAL(help.status, 0);
  CX_ASSERT_CONTAINS(help.out, "show FILE");
}

/* Separate `cellexec run --record` processes into one file. */
static void
test_record_cli_processes_share_one_file(void)
{
  g_autofree char *big = write_big_responses(512 * 1024);
  g_autofree char *responses = g_strdup_printf("responses=%s", big);
  g_autofree char *path = tmp_path("cells.jsonl");
  GSubprocess *processes[8];
  for (guint i = 0; i < G_N_ELEMENTS(processes); i++) {
    g_autofree char *code = g_strdup_printf("cell %u", i);
    processes[i] = cx_test_cellexec_start("run", "-b", "fake", "-o", responses, "--record", path,
                                  "--json", "-c", code, NULL);
  }
  for (guint i = 0; i < G_N_ELEMENTS(processes); i++) {
    g_auto(cx_test_cli_run) r = cx_test_cellexec_finish(processes[i], NULL);
    CU_ASSERT_EQUAL(r.status, 0);
    g_object_unref(processes[i]);
  }
  assert_all_records(path, G_N_ELEMENTS(processes));
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_record_local_replays_identically", test_record_local_replays_identically },
    { "test_record_subprocess_replays_identically", test_record_subprocess_replays_identically },
    { "test_record_jupyter_replays_identically", test_record_jupyter_replays_identically },
    { "test_record_replay_matches_session_position_in_any_order", test_record_replay_matches_session_position_in_any_order },
    { "test_record_writes_position_options_and_redacts_secrets", test_record_writes_position_options_and_redacts_secrets },
    { "test_record_session_recorder_records_that_session_only", test_record_session_recorder_records_that_session_only },
    { "test_record_config_key_records_every_cell", test_record_config_key_records_every_cell },
    { "test_record_failure_without_result_replays_as_error", test_record_failure_without_result_replays_as_error },
    { "test_record_nul_in_a_stream_does_not_cut_it", test_record_nul_in_a_stream_does_not_cut_it },
    { "test_record_threads_never_interleave_lines", test_record_threads_never_interleave_lines },
    { "test_record_processes_never_interleave_lines", test_record_processes_never_interleave_lines },
    { "test_record_malformed_lines_name_their_line", test_record_malformed_lines_name_their_line },
    { "test_record_blank_lines_and_a_last_line_without_break_are_fine", test_record_blank_lines_and_a_last_line_without_break_are_fine },
    { "test_record_unopenable_file_is_an_error", test_record_unopenable_file_is_an_error },
    { "test_record_cli_records_and_replays", test_record_cli_records_and_replays },
    { "test_record_cli_notebook_run_records_its_session", test_record_cli_notebook_run_records_its_session },
    { "test_record_cli_check_rejects_malformed_files", test_record_cli_check_rejects_malformed_files },
    { "test_record_cli_processes_share_one_file", test_record_cli_processes_share_one_file },
    { NULL, NULL }
  };
  cx_test_add_suite("record", tests);
}
