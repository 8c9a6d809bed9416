/* Output as it happens (cx_run_options_set_output_callback): a cell's
 * outputs reach the callback while it runs, on the backends that stream
 * (local, subprocess), and all at the end on the others, with the result
 * still holding everything.
 *
 * "While it runs" is shown without timing: the cell waits for a file the
 * callback creates when it sees the cell's first output, so a backend that
 * gave its output only at the end would leave the cell waiting until its
 * timeout. */
#include "config.h"

#include <string.h>

#include "cx_test.h"

typedef struct {
  GPtrArray *outputs; /* compact JSON text of each output received */
  char *signal_file;  /* created when the first output arrives, if set */
} collector;

static void
collect(JsonObject *output, gpointer data)
{
  collector *c = data;
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), output);
  g_ptr_array_add(c->outputs, json_to_string(node, FALSE));
  if (c->signal_file != NULL)
    g_file_set_contents(c->signal_file, "seen", -1, NULL);
}

static void
collector_clear(collector *c)
{
  g_ptr_array_unref(c->outputs);
  g_free(c->signal_file);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(collector, collector_clear)

static char *
joined(const collector *c)
{
  GString *all = g_string_new(NULL);
  for (guint i = 0; i < c->outputs->len; i++)
    g_string_append_printf(all, "%s\n", (const char *)g_ptr_array_index(c->outputs, i));
  return g_string_free(all, FALSE);
}

/* The text of every stream output received for NAME, in order (a backend
 * may cut a stream into chunks anywhere). */
static char *
stream_text(const collector *c, const char *name)
{
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < c->outputs->len; i++) {
    g_autoptr(JsonNode) node = json_from_string(g_ptr_array_index(c->outputs, i), NULL);
    JsonObject *output = json_node_get_object(node);
    if (g_str_equal(json_object_get_string_member(output, "output_type"), "stream") &&
        g_str_equal(json_object_get_string_member(output, "name"), name))
      g_string_append(text, json_object_get_string_member(output, "text"));
  }
  return g_string_free(text, FALSE);
}

/* A cell that prints, then waits (up to its timeout) for SIGNAL_FILE. */
static char *
waiting_cell(const char *signal_file)
{
  return g_strdup_printf("import os, sys, time\n"
                         "print('started', flush=True)\n"
                         "while not os.path.exists(%s):\n"
                         "    time.sleep(0.01)\n"
                         "print('the host saw it')\n",
                         signal_file);
}

/* Run the waiting cell on BACKEND, or in SESSION when it is not NULL; the
 * host's callback must see "started" while the cell still runs. */
static void
assert_streams_while_running(cx_backend *backend, cx_session *session)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free),
                          g_build_filename(dir, "seen", NULL) };
  g_autoptr(JsonNode) path = json_node_init_string(json_node_alloc(), c.signal_file);
  g_autofree char *quoted = json_to_string(path, FALSE);
  g_autofree char *code = waiting_cell(quoted);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 20);
  cx_run_options_set_output_callback(run, collect, &c);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = session != NULL ? cx_session_run_cell(session, code, run, &error)
                                                : cx_test_run_cell(backend, code, run);
  CX_ASSERT_NO_ERROR(error);
  CX_ASSERT_CELL_OK(result);
  CU_ASSERT_STRING_EQUAL(cx_result_get_stdout(result, NULL), "started\nthe host saw it\n");
  g_autofree char *streamed = stream_text(&c, "stdout");
  CU_ASSERT_STRING_EQUAL(streamed, "started\nthe host saw it\n");
}

static void
test_streaming_local_gives_output_while_the_cell_runs(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  assert_streams_while_running(backend, NULL);
}

static void
test_streaming_subprocess_gives_output_while_the_cell_runs(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", NULL, NULL);
  assert_streams_while_running(backend, NULL);
}

static void
test_streaming_in_a_session(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", NULL, NULL);
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  assert_streams_while_running(backend, session);
  cx_session_close(session);
}

/* Displays, updates and clears stream as the Jupyter messages they are;
 * the cell's failure comes last; the MIME filter applies. */
static void
test_streaming_rich_outputs_in_order(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("local", NULL, NULL);
  g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free), NULL };
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, collect, &c);
  cx_run_options_add_allowed_mime_type(run, "text/plain");
  g_autoptr(cx_result) result = cx_test_run_cell(backend,
    "from IPython.display import display, HTML, clear_output\n"
    "h = display(HTML('<b>1</b>'), display_id='d')\n"
    "h.update(HTML('<b>2</b>'))\n"
    "clear_output(wait=True)\n"
    "print('x')\n"
    "raise ValueError('late')\n", run);
  CX_ASSERT_ERROR_TYPE(result, "ValueError");
  /* The kinds in order, a run of stream chunks counted once. */
  GString *kinds = g_string_new(NULL);
  for (guint i = 0; i < c.outputs->len; i++) {
    g_autoptr(JsonNode) node = json_from_string(g_ptr_array_index(c.outputs, i), NULL);
    const char *kind = json_object_get_string_member(json_node_get_object(node), "output_type");
    if (!(g_str_equal(kind, "stream") && g_str_has_suffix(kinds->str, "stream ")))
      g_string_append_printf(kinds, "%s ", kind);
  }
  CU_ASSERT_STRING_EQUAL(kinds->str,
                         "display_data update_display_data clear_output stream error ");
  g_string_free(kinds, TRUE);
  CX_ASSERT_CONTAINS(g_ptr_array_index(c.outputs, 0), "\"transient\":{\"display_id\":\"d\"}");
  /* The MIME filter applies to what streams, too. */
  g_autofree char *all = joined(&c);
  CU_ASSERT_PTR_NULL(strstr(all, "text/html"));
  CU_ASSERT_STRING_EQUAL(g_ptr_array_index(c.outputs, 2),
                         "{\"output_type\":\"clear_output\",\"wait\":true}");
  g_autofree char *printed = stream_text(&c, "stdout");
  CU_ASSERT_STRING_EQUAL(printed, "x\n");
}

/* A later cell's update of a display an earlier cell showed streams as
 * update_display_data, as ipykernel sends it, so a front end updates the
 * earlier cell; on both Python backends. */
static void
test_streaming_update_of_an_earlier_cells_display(void)
{
  static const char *const backends[] = { "local", "subprocess" };
  for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
    g_autoptr(cx_backend) backend = cx_test_open_backend(backends[i], NULL, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) shown =
      cx_test_run_session_cell(session, "h = display('first', display_id='early')", NULL);
    g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free), NULL };
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_output_callback(run, collect, &c);
    g_autoptr(cx_result) updated = cx_test_run_session_cell(session, "h.update('second')", run);
    CX_ASSERT_CELL_OK(updated);
    g_autoptr(JsonArray) outputs = cx_result_list_outputs(updated); /* the earlier cell's */
    CU_ASSERT_EQUAL(json_array_get_length(outputs), 0);
    CU_ASSERT_EQUAL_FATAL(c.outputs->len, 1);
    CX_ASSERT_CONTAINS(g_ptr_array_index(c.outputs, 0), "\"output_type\":\"update_display_data\"");
    CX_ASSERT_CONTAINS(g_ptr_array_index(c.outputs, 0), "\"text/plain\":\"'second'\"");
    CX_ASSERT_CONTAINS(g_ptr_array_index(c.outputs, 0), "\"transient\":{\"display_id\":\"early\"}");
  }
}

/* Past output-limit, what the callback got of a stream is what the result
 * kept: the head, the line saying how much was left out, the tail (the
 * worker sends bytes that later fall out of the tail: those are not given). */
static void
test_streaming_past_the_output_limit_gives_what_the_result_keeps(void)
{
  g_autoptr(cx_backend) backend = cx_test_open_backend("subprocess", "output-limit", "1000", NULL);
  g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free), NULL };
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, collect, &c);
  g_autoptr(cx_result) result = cx_test_run_cell(
    backend, "import sys\nfor i in range(50):\n    sys.stdout.write(str(i % 10) * 400 + '\\n')\n"
             "    sys.stdout.flush()\nprint('end')", run);
  CX_ASSERT_CELL_OK(result);
  const char *kept = cx_result_get_stdout(result, NULL);
  CX_ASSERT_CONTAINS(kept, "bytes omitted");
  g_autofree char *streamed = stream_text(&c, "stdout");
  CU_ASSERT_STRING_EQUAL(streamed, kept);
}

/* What cx_json_to_string() writes of each output (collect's JSON text is
 * json-glib's, which would write a NUL's C0 80 raw). */
static void
collect_json_text(JsonObject *output, gpointer data)
{
  collector *c = data;
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), output);
  g_ptr_array_add(c->outputs, cx_json_to_string(node, FALSE));
}

/* With cx_run_options_set_output_keeps_nul(), a NUL a cell writes reaches
 * the callback as CX_RESULT_NUL (\u0000 in JSON text), in a stream and in
 * the failure; without, as U+FFFD. */
static void
test_streaming_keeps_a_nul_when_asked(void)
{
  static const char *const backends[] = { "local", "subprocess" };
  for (gsize b = 0; b < G_N_ELEMENTS(backends); b++) {
    g_autoptr(cx_backend) backend = cx_test_open_backend(backends[b], NULL, NULL);
    for (int keeps = 0; keeps <= 1; keeps++) {
      g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free), NULL };
      g_autoptr(cx_run_options) run = cx_run_options_new();
      cx_run_options_set_output_callback(run, collect_json_text, &c);
      cx_run_options_set_output_keeps_nul(run, keeps);
      g_autoptr(cx_result) result =
        cx_test_run_cell(backend, "print('a\\0b', flush=True)\nraise ValueError('c\\0d')", run);
      CX_ASSERT_ERROR_TYPE(result, "ValueError");
      g_autofree char *all = joined(&c);
      CX_ASSERT_CONTAINS(all, keeps ? "\"a\\u0000b" : "\"a\xef\xbf\xbd" "b");
      CX_ASSERT_CONTAINS(all, keeps ? "\"evalue\":\"c\\u0000d\""
                                    : "\"evalue\":\"c\xef\xbf\xbd" "d\"");
    }
  }
}

/* A backend that does not stream (the fake) still gives every output to
 * the callback, once the cell is over, in order. */
static void
test_streaming_backends_that_do_not_stream_give_everything_at_the_end(void)
{
  g_autofree char *dir = cx_test_tmpdir();
  g_autofree char *responses = cx_test_write_file(dir, "r.json",
    "[{\"stdout\": \"out\\n\", \"stderr\": \"err\\n\", \"rich_outputs\": [{\"text/plain\": \"2\"}],"
    " \"success\": false, \"error\": {\"type\": \"E\", \"message\": \"m\", \"traceback\": \"\"}}]");
  g_autoptr(cx_backend) backend = cx_test_open_backend("fake", "responses", responses, NULL);
  g_auto(collector) c = { g_ptr_array_new_with_free_func(g_free), NULL };
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_output_callback(run, collect, &c);
  g_autoptr(cx_result) result = cx_test_run_cell(backend, "x", run);
  g_autofree char *all = joined(&c);
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  CU_ASSERT_EQUAL(c.outputs->len, json_array_get_length(outputs));
  CX_ASSERT_CONTAINS(all, "\"text\":\"out\\n\"");
  CX_ASSERT_CONTAINS(all, "\"ename\":\"E\"");
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_streaming_local_gives_output_while_the_cell_runs",
      test_streaming_local_gives_output_while_the_cell_runs },
    { "test_streaming_subprocess_gives_output_while_the_cell_runs",
      test_streaming_subprocess_gives_output_while_the_cell_runs },
    { "test_streaming_in_a_session", test_streaming_in_a_session },
    { "test_streaming_rich_outputs_in_order", test_streaming_rich_outputs_in_order },
    { "test_streaming_update_of_an_earlier_cells_display",
      test_streaming_update_of_an_earlier_cells_display },
    { "test_streaming_past_the_output_limit_gives_what_the_result_keeps",
      test_streaming_past_the_output_limit_gives_what_the_result_keeps },
    { "test_streaming_keeps_a_nul_when_asked", test_streaming_keeps_a_nul_when_asked },
    { "test_streaming_backends_that_do_not_stream_give_everything_at_the_end",
      test_streaming_backends_that_do_not_stream_give_everything_at_the_end },
    { NULL, NULL }
  };
  cx_test_add_suite("streaming", tests);
}
