/* Untrusted JSON and untrusted files cannot crash or exhaust the host.
 *
 * json-glib's parser recurses once per level of arrays and objects: about
 * 100,000 levels of "[" overflowed the stack and killed the process
 * (SIGSEGV) wherever JSON came in.  cx_json_from_string refuses nesting
 * deeper than CX_JSON_MAX_DEPTH with an error, and every way JSON comes
 * into the host goes through it: each is tried here with HOSTILE_LEVELS,
 * which crashed the test program before.
 *
 * json-glib builds the whole tree, up to a hundred times the size of the
 * text: 60 MB of "[]," took 2.4 GB and aborted the host (GLib aborts when
 * an allocation fails).  cx_json_from_string refuses more than
 * CX_JSON_MAX_VALUES values and CX_JSON_MAX_BYTES bytes before json-glib
 * starts (CX_ERROR_TOO_LARGE); the tests here read the limit itself, not
 * a hostile size, so that the old code read them and failed the test.
 *
 * Notebooks, recordings and responses files are read with
 * cx_file_get_contents: only regular files, at most CX_FILE_MAX_SIZE
 * (`cellexec record check /dev/zero` grew to 4.7 GB in 8 s; a FIFO no one
 * writes to blocked forever).
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cx_test.h"

#define HOSTILE_LEVELS 100000

/* LEVELS arrays and objects in turn ("[{"k":[0]}]" for 3), and in
 * *DEEPEST the byte at which the last of them opens. */
static char *
nested_mixed(guint levels, gsize *deepest)
{
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < levels; i++) {
    *deepest = text->len;
    g_string_append(text, i % 2 == 0 ? "[" : "{\"k\":");
  }
  g_string_append_c(text, '0');
  for (guint i = levels; i > 0; i--)
    g_string_append_c(text, (i - 1) % 2 == 0 ? ']' : '}');
  return g_string_free(text, FALSE);
}

static void
assert_too_deep(const GError *error)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  g_autofree char *expected =
    g_strdup_printf("JSON nested deeper than %d levels at byte ", CX_JSON_MAX_DEPTH);
  CX_ASSERT_CONTAINS(error->message, expected);
}

/* Why the fake backend with responses=PATH does not open (it must not). */
static GError *
fake_open_error(const char *path)
{
  const cx_plugin_info *fake = cx_registry_lookup(cx_test_registry(), "fake", NULL);
  g_autoptr(cx_options) options = cx_options_new("fake", cx_plugin_info_get_options(fake));
  CU_ASSERT_TRUE(cx_options_set(options, "responses", path, NULL));
  GError *error = NULL;
  g_autoptr(cx_backend) backend =
    cx_backend_open(cx_test_registry(), "fake", g_steal_pointer(&options), &error);
  CU_ASSERT_PTR_NULL(backend);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  return error;
}

static void
test_json_from_string_refuses_hostile_nesting(void)
{
  g_autofree char *text = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text, -1, &error);
  CU_ASSERT_PTR_NULL(node);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  assert_too_deep(error);
}

/* CX_JSON_MAX_DEPTH levels are read, one more is refused at the bracket
 * that opens it; objects count as arrays do. */
static void
test_json_from_string_reads_up_to_the_limit(void)
{
  gsize deepest = 0;
  g_autofree char *at_limit = nested_mixed(CX_JSON_MAX_DEPTH, &deepest);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(at_limit, -1, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(JSON_NODE_HOLDS_ARRAY(node));

  g_autofree char *beyond = nested_mixed(CX_JSON_MAX_DEPTH + 1, &deepest);
  g_autoptr(JsonNode) refused = cx_json_from_string(beyond, -1, &error);
  CU_ASSERT_PTR_NULL(refused);
  CX_ASSERT_ERROR(error, CX_ERROR_JSON);
  g_autofree char *where = g_strdup_printf("at byte %" G_GSIZE_FORMAT ",", deepest);
  CX_ASSERT_CONTAINS(error->message, where);
}

/* Brackets in strings are text, whatever the escapes before them. */
static void
test_json_brackets_in_strings_do_not_nest(void)
{
  g_autofree char *brackets = g_strnfill(2 * CX_JSON_MAX_DEPTH, '[');
  g_autofree char *braces = g_strnfill(2 * CX_JSON_MAX_DEPTH, '{');
  g_autofree char *text =
    g_strdup_printf("[\"a\\\\\", \"%s\", \"\\\"%s\\\\\\\"\", [\"\\\\\\\\\"]]", brackets, braces);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text, -1, &error);
  CX_ASSERT_NO_ERROR(error);
  JsonArray *array = json_node_get_array(node);
  CU_ASSERT_STRING_EQUAL(json_array_get_string_element(array, 0), "a\\");
  CU_ASSERT_EQUAL(strlen(json_array_get_string_element(array, 1)), 2 * CX_JSON_MAX_DEPTH);
  CU_ASSERT_TRUE(g_str_has_prefix(json_array_get_string_element(array, 2), "\"{{"));
  CU_ASSERT_TRUE(g_str_has_suffix(json_array_get_string_element(array, 2), "{\\\""));
}

static void
test_result_json_refuses_hostile_nesting(void)
{
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "{}");
  g_autofree char *text = g_strdup_printf("{\"stdout\": \"\", \"rich_outputs\": %s}", deep);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_result_from_json(text, &error);
  CU_ASSERT_PTR_NULL(result);
  assert_too_deep(error);
}

/* An empty notebook whose metadata is {MEMBERS} (a new string). */
static char *
notebook_with_metadata(const char *members)
{
  return g_strdup_printf(
    "{\"cells\": [], \"metadata\": {%s}, \"nbformat\": 4, \"nbformat_minor\": 5}", members);
}

/* An array of COUNT copies of ITEM ("[0,0,0]" for "0" and 3). */
static GString *
array_of(const char *item, guint count)
{
  GString *text = g_string_sized_new((strlen(item) + 1) * count + 2);
  g_string_append_c(text, '[');
  for (guint i = 0; i < count; i++) {
    if (i > 0)
      g_string_append_c(text, ',');
    g_string_append(text, item);
  }
  g_string_append_c(text, ']');
  return text;
}

static void
assert_too_many_values(const GError *error)
{
  CX_ASSERT_ERROR(error, CX_ERROR_TOO_LARGE);
  g_autofree char *expected =
    g_strdup_printf("JSON of more than %d values (arrays, objects, strings, numbers) at byte ",
                    CX_JSON_MAX_VALUES);
  CX_ASSERT_CONTAINS(error->message, expected);
  CX_ASSERT_CONTAINS(error->message, "send the data in smaller parts");
}

/* CX_JSON_MAX_VALUES values are read (the array and its numbers), one
 * more is refused at the comma that brings it, before json-glib builds
 * anything. */
static void
test_json_from_string_reads_values_up_to_the_limit(void)
{
  g_autoptr(GString) at_limit = array_of("0", CX_JSON_MAX_VALUES - 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(at_limit->str, (gssize)at_limit->len, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_EQUAL(json_array_get_length(json_node_get_array(node)), CX_JSON_MAX_VALUES - 1);

  g_autoptr(GString) beyond = array_of("0", CX_JSON_MAX_VALUES);
  g_autoptr(JsonNode) refused = cx_json_from_string(beyond->str, (gssize)beyond->len, &error);
  CU_ASSERT_PTR_NULL(refused);
  assert_too_many_values(error);
  g_autofree char *where = g_strdup_printf("at byte %" G_GSIZE_FORMAT ",", beyond->len - 3);
  CX_ASSERT_CONTAINS(error->message, where);
}

/* Empty arrays and objects are one value each (the hostile shape, "[],"
 * over and over); one that is not empty holds one more than its commas;
 * whitespace between brackets is still empty. */
static void
test_json_values_counted_as_the_tree_holds_them(void)
{
  guint pairs = CX_JSON_MAX_VALUES / 4;
  g_autoptr(GString) empties = array_of("[], { }", pairs); /* 1 + 2 * pairs values */
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(empties->str, (gssize)empties->len, &error);
  CX_ASSERT_NO_ERROR(error);
  /* 1 + 4 * pairs = CX_JSON_MAX_VALUES + 1: the array, and in each [0] and {"k":0}
   * the container and its value. */
  g_autoptr(GString) full = array_of("[0],{\"k\":0}", pairs);
  g_autoptr(JsonNode) refused = cx_json_from_string(full->str, (gssize)full->len, &error);
  CU_ASSERT_PTR_NULL(refused);
  assert_too_many_values(error);
}

/* Commas in strings are text: one string of two million commas is one
 * value, as a picture in base64 or a table's HTML is. */
static void
test_json_commas_in_strings_are_one_value(void)
{
  g_autofree char *commas = g_strnfill(2 * CX_JSON_MAX_VALUES, ',');
  g_autofree char *text = g_strdup_printf("{\"text/html\": \"\\\\\\\"%s\"}", commas);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text, -1, &error);
  CX_ASSERT_NO_ERROR(error);
  const char *html = json_object_get_string_member(json_node_get_object(node), "text/html");
  CU_ASSERT_EQUAL(strlen(html), 2 + 2 * CX_JSON_MAX_VALUES);
}

/* A reader that knows its input holds few values bounds them lower (the
 * server's request bodies); never higher than CX_JSON_MAX_VALUES. */
static void
test_json_from_string_bounded_reads_at_most_what_it_is_told(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) ten =
    cx_json_from_string_bounded("[1,2,3,4,5,6,7,8,9]", -1, 10, CX_JSON_READ_DEFAULT, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) eleven =
    cx_json_from_string_bounded("[1,2,3,4,5,6,7,8,9,10]", -1, 10, CX_JSON_READ_DEFAULT, &error);
  CU_ASSERT_PTR_NULL(eleven);
  CX_ASSERT_ERROR(error, CX_ERROR_TOO_LARGE);
  CX_ASSERT_CONTAINS(error->message, "JSON of more than 10 values (arrays, objects, strings, "
                                     "numbers) at byte 18,");
  g_clear_error(&error);
  g_autoptr(GString) beyond = array_of("0", CX_JSON_MAX_VALUES);
  g_autoptr(JsonNode) clamped =
    cx_json_from_string_bounded(beyond->str, (gssize)beyond->len, G_MAXUINT, CX_JSON_READ_DEFAULT,
                                &error);
  CU_ASSERT_PTR_NULL(clamped);
  assert_too_many_values(error);
}

/* A text longer than CX_JSON_MAX_BYTES is refused by its length, before a
 * byte of it is read (zero pages: they take no memory until written). */
static void
test_json_from_string_refuses_text_past_max_bytes(void)
{
  gsize len = (gsize)CX_JSON_MAX_BYTES + 1;
  char *text = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CU_ASSERT_FATAL(text != MAP_FAILED);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx_json_from_string(text, (gssize)len, &error);
  munmap(text, len);
  CU_ASSERT_PTR_NULL(node);
  CX_ASSERT_ERROR(error, CX_ERROR_TOO_LARGE);
  g_autofree char *expected = g_strdup_printf("JSON text of %" G_GSIZE_FORMAT " bytes, more than "
                                              "the %d cellexec reads in one piece", len,
                                              CX_JSON_MAX_BYTES);
  CX_ASSERT_CONTAINS(error->message, expected);
}

/* A notebook too wide is refused naming its file; the limit is cellexec's,
 * not Jupyter's (which reads any width). */
static void
test_notebook_with_wide_metadata_is_refused(void)
{
  g_autoptr(GString) wide = array_of("[]", CX_JSON_MAX_VALUES);
  g_autofree char *members = g_strdup_printf("\"x\": %s", wide->str);
  g_autofree char *text = notebook_with_metadata(members);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "wide.ipynb", &error);
  CU_ASSERT_PTR_NULL(notebook);
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  CX_ASSERT_CONTAINS(error->message, "wide.ipynb: JSON of more than ");
  CX_ASSERT_CONTAINS(error->message, "more than cellexec reads in one piece");
}

/* A parameter too wide fails: taken as a string, it would silently mean
 * something else. */
static void
test_notebook_parameter_too_wide_fails(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(
    "{\"cells\": [], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}", -1, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(GString) wide = array_of("0", CX_JSON_MAX_VALUES);
  g_autofree char *assignment = g_strdup_printf("x=%s", wide->str);
  const char *const assignments[] = { assignment, NULL };
  CU_ASSERT_FALSE(cx_notebook_inject_parameters(notebook, assignments, &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, "parameter 'x': JSON of more than ");
}

/* A notebook whose metadata holds 100 KB of nested arrays: read, it became
 * 2.5 GB of output (nbformat's layout indents each level). */
static void
test_notebook_with_deep_metadata_is_refused(void)
{
  g_autofree char *deep = cx_test_nested_json(50000, "0");
  g_autofree char *members = g_strdup_printf("\"x\": %s", deep);
  g_autofree char *text = notebook_with_metadata(members);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "deep.ipynb", &error);
  CU_ASSERT_PTR_NULL(notebook);
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  CX_ASSERT_CONTAINS(error->message, "deep.ipynb: ");
  CX_ASSERT_CONTAINS(error->message, "JSON nested deeper than 1000 levels at byte ");
  CX_ASSERT_CONTAINS(error->message, "Jupyter (Python's json module)");
}

/* A notebook may nest as deeply as Jupyter reads (Python's json module:
 * 998 levels) and is written back as it came; deeper is refused, well
 * before writing it back, one indent per level, makes its size grow with
 * the square of the depth (three chains 9990 deep, 60 KB, gave 300 MB). */
static void
test_notebook_nests_as_deep_as_jupyter_reads(void)
{
  g_autofree char *deep = cx_test_nested_json(998, "0");
  g_autofree char *members = g_strdup_printf("\"x\": %s", deep);
  g_autofree char *text = notebook_with_metadata(members);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(text, -1, "deep.ipynb", &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *written = notebook != NULL ? cx_notebook_to_json(notebook) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(written);
  /* Without its layout (a GRegex takes minutes on these 500 KB). */
  g_autoptr(GString) compact = g_string_sized_new(strlen(written));
  for (const char *c = written; *c != '\0'; c++)
    if (!g_ascii_isspace(*c))
      g_string_append_c(compact, *c);
  CX_ASSERT_CONTAINS(compact->str, deep);

  g_autofree char *chain = cx_test_nested_json(9990, "0");
  g_autofree char *three = g_strdup_printf("\"a\": %s, \"b\": %s, \"c\": %s", chain, chain, chain);
  g_autofree char *wide = notebook_with_metadata(three);
  g_autoptr(GError) too_deep = NULL;
  g_autoptr(cx_notebook) refused = cx_notebook_load_data(wide, -1, "wide.ipynb", &too_deep);
  CU_ASSERT_PTR_NULL(refused);
  CX_ASSERT_ERROR(too_deep, CX_ERROR_NOTEBOOK);
  CX_ASSERT_CONTAINS(too_deep->message, "JSON nested deeper than 1000 levels at byte ");
}

static void
test_notebook_run_refuses_hostile_file(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *text = g_strdup_printf(
    "{\"cells\": [{\"cell_type\": \"code\", \"source\": \"1\", \"metadata\": {}, "
    "\"outputs\": %s, \"execution_count\": null}], \"metadata\": {}, \"nbformat\": 4, "
    "\"nbformat_minor\": 4}", deep);
  g_autofree char *path = cx_test_write_file(dir, "hostile.ipynb", text);
  g_autofree char *out = g_build_filename(dir, "out.ipynb", NULL);
  g_auto(cx_test_cli_run) run =
    cx_test_cellexec(NULL, "notebook", "run", "-b", "fake", path, "-o", out, NULL);
  CU_ASSERT_EQUAL(run.status, 2);
  CX_ASSERT_CONTAINS(run.err, "nested deeper than");
  CU_ASSERT_PTR_EQUAL(strchr(run.err, '\n'), run.err + strlen(run.err) - 1); /* one line */
  CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS));
}

static void
test_notebook_parameter_too_deep_fails(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load_data(
    "{\"cells\": [], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}", -1, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *assignment = g_strdup_printf("x=%s", deep);
  const char *const assignments[] = { assignment, NULL };
  CU_ASSERT_FALSE(cx_notebook_inject_parameters(notebook, assignments, &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, "parameter 'x': ");
  assert_too_deep(error);
}

static void
test_record_check_refuses_hostile_line(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *line = g_strdup_printf(
    "{\"backend\": \"local\", \"code\": \"1\", \"result\": {\"stdout\": \"\", \"x\": %s}}\n", deep);
  g_autofree char *path = cx_test_write_file(dir, "hostile.jsonl", line);
  for (guint i = 0; i < 2; i++) {
    g_auto(cx_test_cli_run) r =
      cx_test_cellexec(NULL, "record", i == 0 ? "check" : "show", path, NULL);
    CU_ASSERT_EQUAL(r.status, 1);
    g_autofree char *where = g_strdup_printf("%s:1: ", path);
    CX_ASSERT_CONTAINS(r.err, where);
    CX_ASSERT_CONTAINS(r.err, "nested deeper than");
  }
}

static void
test_fake_refuses_hostile_responses(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "{}");
  g_autofree char *path = cx_test_write_file(dir, "responses.json", deep);
  g_autoptr(GError) error = fake_open_error(path);
  CX_ASSERT_CONTAINS(error->message, path);
  assert_too_deep(error);
}

static void
test_record_check_refuses_dev_zero(void)
{
  g_auto(cx_test_cli_run) r = cx_test_cellexec(NULL, "record", "check", "/dev/zero", NULL);
  CU_ASSERT_EQUAL(r.status, 1);
  CU_ASSERT_STRING_EQUAL(r.err, "cellexec: cannot read /dev/zero: it is a character device, not a "
                                "regular file; save its contents to a file and give that\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recording) recording = cx_recording_load("/dev/zero", &error);
  CU_ASSERT_PTR_NULL(recording);
  CX_ASSERT_ERROR(error, CX_ERROR_FAILED);
}

/* A FIFO no one writes to: refused at once, where opening it waited. */
static void
test_notebook_from_fifo_is_refused(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "fifo.ipynb", NULL);
  CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load(path, &error);
  CU_ASSERT_PTR_NULL(notebook);
  CX_ASSERT_ERROR(error, CX_ERROR_NOTEBOOK);
  g_autofree char *expected = g_strdup_printf("cannot read %s: it is a FIFO, not a regular file", path);
  CX_ASSERT_CONTAINS(error->message, expected);
}

static void
test_fake_responses_directory_is_refused(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autoptr(GError) error = fake_open_error(dir);
  g_autofree char *expected = g_strdup_printf("cannot read %s: it is a directory", dir);
  CX_ASSERT_CONTAINS(error->message, expected);
}

/* A file past the limit is refused by its size, before a byte is read (a
 * sparse file: it takes no disk). */
static void
test_file_larger_than_limit_is_refused(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *path = g_build_filename(dir, "huge.ipynb", NULL);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(ftruncate(fd, (off_t)CX_FILE_MAX_SIZE + 1), 0);
  close(fd);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load(path, &error);
  CU_ASSERT_PTR_NULL(notebook);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  g_autofree char *expected = g_strdup_printf("cannot read %s: it is larger than 256 MiB", path);
  CX_ASSERT_CONTAINS(error->message, expected);

  /* Within the limit, the same file is read whole. */
  fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  CU_ASSERT_EQUAL(ftruncate(fd, 16), 0);
  close(fd);
  g_autofree char *contents = NULL;
  gsize length = 0;
  CU_ASSERT_TRUE(cx_file_get_contents(path, &contents, &length, NULL));
  CU_ASSERT_EQUAL(length, 16);
}

void
cx_test_register(void)
{
  static const cx_test_case json_tests[] = {
    { "test_json_from_string_refuses_hostile_nesting", test_json_from_string_refuses_hostile_nesting },
    { "test_json_from_string_reads_up_to_the_limit", test_json_from_string_reads_up_to_the_limit },
    { "test_json_brackets_in_strings_do_not_nest", test_json_brackets_in_strings_do_not_nest },
    { "test_result_json_refuses_hostile_nesting", test_result_json_refuses_hostile_nesting },
    { NULL, NULL },
  };
  cx_test_add_suite("json_depth", json_tests);
  static const cx_test_case width_tests[] = {
    { "test_json_from_string_reads_values_up_to_the_limit",
      test_json_from_string_reads_values_up_to_the_limit },
    { "test_json_values_counted_as_the_tree_holds_them",
      test_json_values_counted_as_the_tree_holds_them },
    { "test_json_commas_in_strings_are_one_value", test_json_commas_in_strings_are_one_value },
    { "test_json_from_string_bounded_reads_at_most_what_it_is_told",
      test_json_from_string_bounded_reads_at_most_what_it_is_told },
    { "test_json_from_string_refuses_text_past_max_bytes",
      test_json_from_string_refuses_text_past_max_bytes },
    { "test_notebook_with_wide_metadata_is_refused", test_notebook_with_wide_metadata_is_refused },
    { "test_notebook_parameter_too_wide_fails", test_notebook_parameter_too_wide_fails },
    { NULL, NULL },
  };
  cx_test_add_suite("json_width", width_tests);
  static const cx_test_case input_tests[] = {
    { "test_notebook_with_deep_metadata_is_refused", test_notebook_with_deep_metadata_is_refused },
    { "test_notebook_nests_as_deep_as_jupyter_reads", test_notebook_nests_as_deep_as_jupyter_reads },
    { "test_notebook_run_refuses_hostile_file", test_notebook_run_refuses_hostile_file },
    { "test_notebook_parameter_too_deep_fails", test_notebook_parameter_too_deep_fails },
    { "test_record_check_refuses_hostile_line", test_record_check_refuses_hostile_line },
    { "test_fake_refuses_hostile_responses", test_fake_refuses_hostile_responses },
    { NULL, NULL },
  };
  cx_test_add_suite("hostile_inputs", input_tests);
  static const cx_test_case file_tests[] = {
    { "test_record_check_refuses_dev_zero", test_record_check_refuses_dev_zero },
    { "test_notebook_from_fifo_is_refused", test_notebook_from_fifo_is_refused },
    { "test_fake_responses_directory_is_refused", test_fake_responses_directory_is_refused },
    { "test_file_larger_than_limit_is_refused", test_file_larger_than_limit_is_refused },
    { NULL, NULL },
  };
  cx_test_add_suite("input_files", file_tests);
}
