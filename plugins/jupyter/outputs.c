/* plugins/jupyter: what a request's messages make of the result bundle.
 *
 * IOPub messages whose parent is the request (stream, display_data,
 * update_display_data, clear_output, execute_result, error) become the
 * result's outputs as they come; the execute_reply, once both it and the
 * idle status are in, gives the execution count, the payload and the
 * error.  No sockets here: execute.c (ZeroMQ) and gateway.c (WebSocket)
 * feed it the messages they received, and so does the fuzz target
 * (tests/fuzz/fuzz_jupyter.c). */
#include "config.h"

#include <string.h>

#include "lib/output_limit.h"
#include "plugins/jupyter/kernel-private.h"

char *
jk_strip_ansi(const char *text)
{
  static GRegex *ansi;
  if (g_once_init_enter(&ansi)) {
    /* Not G_REGEX_OPTIMIZE: PCRE's JIT code reads as uninitialised to memcheck.
     * Bytes, not UTF-8: text holding a NUL (CX_RESULT_NUL, C0 80) is not
     * valid UTF-8, and a UTF-8 regex would fail on it. */
    GRegex *regex = g_regex_new("\x1b\\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\\\-_]", G_REGEX_RAW, 0,
                                NULL);
    g_once_init_leave(&ansi, regex);
  }
  char *plain = g_regex_replace_literal(ansi, text, -1, 0, "", 0, NULL);
  return plain != NULL ? plain : g_strdup(text);
}

void
jk_exec_clear(jk_exec *exec)
{
  g_clear_pointer(&exec->reply, json_object_unref);
  g_clear_pointer(&exec->died_how, g_free);
}

/* At most this many outputs that could not be kept are listed: a kernel
 * may send odd messages without end. */
#define MAX_DROPPED_LISTED 1000

/* Note in STATE that WHAT of a MSG_TYPE message was not kept, and why. */
static void
note_dropped(jk_exec_state *state, const char *msg_type, const char *what)
{
  if (state->dropped == NULL)
    state->dropped = json_array_new();
  if (json_array_get_length(state->dropped) >= MAX_DROPPED_LISTED)
    return;
  JsonObject *entry = json_object_new();
  json_object_set_string_member(entry, "msg_type", msg_type);
  json_object_set_string_member(entry, "dropped", what);
  json_array_add_object_element(state->dropped, entry);
}

/* A MIME bundle's value as the protocol has it: text, or for a JSON type
 * any JSON value. */
static gboolean
bundle_value_ok(const char *mime, JsonNode *value)
{
  if (JSON_NODE_HOLDS_VALUE(value) && json_node_get_value_type(value) == G_TYPE_STRING)
    return TRUE;
  gboolean json_type = g_str_equal(mime, "application/json") || g_str_has_suffix(mime, "+json");
  return json_type && !JSON_NODE_HOLDS_NULL(value);
}

/* The "data" of a MSG_TYPE message C as a bundle to keep (a new
 * reference): its entries of the right types that RUN allows; the others
 * are noted as dropped.  NULL when C has no data object. */
static JsonObject *
kept_data(jk_exec_state *state, const char *msg_type, JsonObject *c)
{
  const cx_run_options *run = state->exec->run;
  JsonNode *node = json_object_get_member(c, "data");
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node)) {
    note_dropped(state, msg_type, "the whole output: its \"data\" is not a MIME bundle (an object)");
    return NULL;
  }
  JsonObject *data = json_node_get_object(node);
  JsonObject *kept = json_object_new();
  g_autoptr(GList) members = json_object_get_members(data);
  for (GList *m = members; m != NULL; m = m->next) {
    JsonNode *value = json_object_get_member(data, m->data);
    if (!bundle_value_ok(m->data, value)) {
      g_autofree char *what = g_strdup_printf("its \"%s\": not a string", (char *)m->data);
      note_dropped(state, msg_type, what);
    } else if (run == NULL || cx_run_options_mime_allowed(run, m->data)) {
      json_object_set_member(kept, m->data, json_node_copy(value));
    }
  }
  return kept;
}

static JsonObject *
object_member(JsonObject *object, const char *name)
{
  JsonNode *node = json_object_get_member(object, name);
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

/* The metadata of a MSG_TYPE message C, or NULL (noted when C has one that
 * is not an object). */
static JsonObject *
kept_metadata(jk_exec_state *state, const char *msg_type, JsonObject *c)
{
  JsonNode *node = json_object_get_member(c, "metadata");
  if (node != NULL && !JSON_NODE_HOLDS_OBJECT(node) && !JSON_NODE_HOLDS_NULL(node))
    note_dropped(state, msg_type, "its \"metadata\": not an object");
  return object_member(c, "metadata");
}

static const char *
display_id_of(JsonObject *content)
{
  return cx__peer_get_string(object_member(content, "transient"), "display_id", NULL);
}

static char *
traceback_text(JsonObject *content)
{
  JsonNode *node = json_object_get_member(content, "traceback");
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
    return g_strdup("");
  JsonArray *lines = json_node_get_array(node);
  g_autoptr(GString) text = g_string_new(NULL);
  for (guint i = 0; i < json_array_get_length(lines); i++) {
    JsonNode *line_node = json_array_get_element(lines, i);
    const char *line = JSON_NODE_HOLDS_VALUE(line_node) &&
                           json_node_get_value_type(line_node) == G_TYPE_STRING
                         ? json_node_get_string(line_node) : "";
    g_autofree char *plain = jk_strip_ansi(line);
    if (i > 0 && text->len > 0 && text->str[text->len - 1] != '\n')
      g_string_append_c(text, '\n');
    g_string_append(text, plain);
  }
  return g_string_free(g_steal_pointer(&text), FALSE);
}

static void
clear_error(jk_exec_state *state)
{
  g_clear_pointer(&state->ename, g_free);
  g_clear_pointer(&state->evalue, g_free);
  g_clear_pointer(&state->traceback, g_free);
  g_clear_pointer(&state->traceback_lines, g_strfreev);
  state->error_message_came = FALSE;
}

/* The error of CONTENT, an error message or (SHOWN FALSE) a reply that
 * says error when no error message came. */
static void
save_error(jk_exec_state *state, JsonObject *content, gboolean shown)
{
  clear_error(state);
  state->ename = g_strdup(cx__peer_get_string(content, "ename", "Error"));
  state->evalue = g_strdup(cx__peer_get_string(content, "evalue", ""));
  state->traceback = traceback_text(content);
  state->error_message_came = shown;
  /* The kernel's lines, unless they pass output-limit (colour codes
   * count): then the plain traceback, cut as the other backends cut it. */
  JsonNode *lines = json_object_get_member(content, "traceback");
  if (shown && lines != NULL && JSON_NODE_HOLDS_ARRAY(lines))
    state->traceback_lines = cx__output_lines(json_node_get_array(lines), state->exec->output_limit);
}

/* The error message saved last, which no output has followed yet, as an
 * error output where it came: it was a traceback the cell showed and went
 * on from (IPython's showtraceback()), not the one that ended it. */
static void
show_pending_error(jk_exec_state *state)
{
  if (state->ename == NULL)
    return;
  cx_result *result = state->exec->result;
  const char *const *lines = (const char *const *)state->traceback_lines;
  if (result != NULL && lines != NULL) {
    cx_result_add_error_output_lines(result, state->ename, state->evalue, lines);
  } else if (result != NULL) {
    guint64 omitted;
    g_autofree char *cut = cx__output_cut_text(state->traceback, strlen(state->traceback),
                                               state->exec->output_limit, &omitted);
    cx_result_add_error_output(result, state->ename, state->evalue,
                               cut != NULL ? cut : state->traceback);
  }
  clear_error(state);
}

/* IOPub messages that are not outputs, which a front end without widgets
 * or a debugger has no use for. */
static gboolean
is_not_output(const char *type)
{
  static const char *const types[] = { "comm_open", "comm_msg", "comm_close", "debug_event",
                                       "shutdown_reply", NULL };
  return g_strv_contains(types, type);
}

void
jk_exec_begin(jk_exec_state *state, jk_exec *exec)
{
  *state = (jk_exec_state){ .exec = exec };
  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_init(&state->streams[stream], exec->output_limit);
  state->cuts = json_array_new();
}

gboolean
jk_exec_idle_overdue(gint64 since_reply, gboolean drained)
{
  return since_reply > JK_IDLE_AFTER_REPLY_US &&
         (drained || since_reply > 15 * JK_IDLE_AFTER_REPLY_US);
}

void
jk_exec_idle_lost(jk_exec_state *state)
{
  note_dropped(state, "status",
               "what the kernel sent after its execute_reply: its status: idle did not come "
               "within 2 s of it, so the cell ended without the output still on its way");
}

jk_stop
jk_exec_stop_due(jk_exec_state *state, gint64 now, gint64 deadline)
{
  if (state->stopped || (now < deadline && state->over_limit == NULL))
    return JK_STOP_NONE;
  state->stopped = TRUE;
  state->for_output = now < deadline;
  return state->exec->msg_type != NULL ? JK_STOP_GIVE_UP : JK_STOP_INTERRUPT;
}

/* Stream text goes into the result as it comes while it is within the
 * stream's head; past it, into the tail kept in STATE, which joins the
 * result once the request is over (after the outputs shown meanwhile). */
static void
handle_stream(jk_exec_state *state, JsonObject *c)
{
  const char *name = cx__peer_get_string(c, "name", "");
  const char *text = cx__peer_get_string(c, "text", NULL);
  gboolean out = g_str_equal(name, "stdout"), err = g_str_equal(name, "stderr");
  if (text == NULL || !(out || err)) {
    note_dropped(state, "stream", text == NULL ? "the whole output: its \"text\" is not a string"
                                               : "the whole output: its \"name\" is neither "
                                                 "stdout nor stderr");
    return;
  }
  void (*append)(cx_result *, const char *, gssize) =
    err ? cx_result_append_stderr : cx_result_append_stdout;
  cx__output_buffer *buffer = &state->streams[err ? 2 : 1];
  /* A NUL the cell wrote came as CX_RESULT_NUL (message.c): the byte. */
  g_auto(GStrv) parts = strstr(text, CX_RESULT_NUL) != NULL ? g_strsplit(text, CX_RESULT_NUL, -1)
                                                           : NULL;
  g_autoptr(GString) with_nul = NULL;
  if (parts != NULL) {
    with_nul = g_string_new(parts[0]);
    for (char **part = parts + 1; *part != NULL; part++)
      g_string_append_len(g_string_append_c(with_nul, '\0'), *part, (gssize)strlen(*part));
    text = with_nul->str;
  }
  gsize len = with_nul != NULL ? with_nul->len : strlen(text);
  if (buffer->limit == 0) {
    append(state->exec->result, text, (gssize)len);
    return;
  }
  gsize head_before = buffer->head->len;
  cx__output_buffer_add(buffer, 0, (const guint8 *)text, len);
  gsize to_head = buffer->head->len - head_before;
  if (to_head > 0)
    append(state->exec->result, text, (gssize)to_head);
  guint64 stop_at = cx__output_stop_threshold(buffer->limit);
  if (state->over_limit == NULL && buffer->total > stop_at)
    state->over_limit = err ? "stderr" : "stdout";
}

void
jk_exec_unreadable(jk_exec_state *state, const jp_message *m)
{
  if (state->unreadable == NULL)
    state->unreadable = g_strdup_printf("the kernel's %s%smessage is too large to read: %s",
                                        m->msg_type, *m->msg_type != '\0' ? " " : "",
                                        m->too_large);
  if (state->over_limit == NULL)
    state->over_limit = "output";
}

/* One IOPub message of this request.  TRUE when it says idle. */
gboolean
jk_exec_handle_iopub(jk_exec_state *state, jp_message *m)
{
  cx_result *result = state->exec->result;
  JsonObject *c = m->content;
  const char *type = m->msg_type;
  if (m->too_large != NULL) {
    jk_exec_unreadable(state, m);
    return FALSE;
  }
  if (g_str_equal(type, "status"))
    return g_strcmp0(cx__peer_get_string(c, "execution_state", ""), "idle") == 0;
  if (g_str_equal(type, "error")) {
    show_pending_error(state); /* two in a row: the first was only shown */
    save_error(state, c, TRUE);
    return FALSE;
  }
  /* The cell's number comes before it runs: a kernel that dies running it
   * sends no reply to take it from. */
  if (g_str_equal(type, "execute_input")) {
    state->execution_count = cx__peer_get_int(c, "execution_count", 0);
    return FALSE;
  }
  if (result == NULL || cx_result_pass_message(result, type, c) || is_not_output(type))
    return FALSE; /* a comm's message goes on to the output callback, no output */
  show_pending_error(state);
  if (g_str_equal(type, "stream")) {
    handle_stream(state, c);
  } else if (g_str_equal(type, "clear_output")) {
    cx_result_clear_output(result, cx__peer_get_boolean(c, "wait", FALSE));
  } else if (g_str_equal(type, "execute_result") || g_str_equal(type, "display_data") ||
             g_str_equal(type, "update_display_data")) {
    g_autoptr(JsonObject) data = kept_data(state, type, c);
    JsonObject *metadata = kept_metadata(state, type, c);
    const char *display_id = display_id_of(c);
    if (data == NULL)
      return FALSE;
    if (m->nul_replaced)
      note_dropped(state, type, "a NUL character of its data or metadata: given as U+FFFD, "
                                "since a JSON-GLib string cannot hold one");
    /* Bounded as one output: its data and its metadata. */
    g_autoptr(JsonObject) output = json_object_new();
    json_object_set_object_member(output, "data", g_steal_pointer(&data));
    if (metadata != NULL)
      json_object_set_object_member(output, "metadata", json_object_ref(metadata));
    cx__output_bound_bundle(output, state->exec->output_limit, state->cuts);
    JsonObject *kept = json_object_get_object_member(output, "data");
    metadata = object_member(output, "metadata");
    if (g_str_equal(type, "execute_result"))
      cx_result_add_execute_result_with_id(result, kept, metadata,
                                           cx__peer_get_int(c, "execution_count", 0), display_id);
    else if (g_str_equal(type, "display_data"))
      cx_result_add_display(result, kept, metadata, display_id);
    else if (display_id != NULL)
      cx_result_update_display(result, display_id, kept, metadata);
    else
      note_dropped(state, type, "the whole output: it has no transient display_id");
  } else {
    note_dropped(state, type, "the whole message: no output type of a notebook is that");
  }
  return FALSE;
}

const char *
jk_input_prompt(const jp_message *m, const char *msg_id)
{
  if (m == NULL || g_strcmp0(m->parent_id, msg_id) != 0 || !g_str_equal(m->msg_type, "input_request"))
    return NULL;
  return cx__peer_get_string(m->content, "prompt", "");
}

JsonObject *
jk_exec_input_reply(jk_exec *exec, const char *msg_id, jp_message *m)
{
  const char *prompt = exec->on_input != NULL ? jk_input_prompt(m, msg_id) : NULL;
  if (prompt == NULL)
    return NULL;
  g_autofree char *value = exec->on_input(prompt, cx__peer_get_boolean(m->content, "password", FALSE),
                                          msg_id, exec->input_data);
  JsonObject *reply = json_object_new();
  json_object_set_string_member(reply, "value", value != NULL ? value : "");
  return reply;
}

const char *
jk_exec_request_type(const jk_exec *exec)
{
  return exec->msg_type != NULL ? exec->msg_type : "execute_request";
}

gboolean
jk_exec_is_reply(const jk_exec *exec, const char *msg_type)
{
  const char *request = jk_exec_request_type(exec);
  gsize stem = g_str_has_suffix(request, "_request") ? strlen(request) - strlen("_request")
                                                     : strlen(request);
  return strncmp(msg_type, request, stem) == 0 && g_str_equal(msg_type + stem, "_reply");
}

JsonObject *
jk_exec_request_content(const jk_exec *exec)
{
  if (exec->msg_type != NULL)
    return json_object_ref(exec->content);
  JsonObject *content = json_object_new();
  json_object_set_string_member(content, "code", exec->code);
  json_object_set_boolean_member(content, "silent", exec->silent);
  json_object_set_boolean_member(content, "store_history", exec->store_history);
  json_object_set_object_member(content, "user_expressions",
                                exec->user_expressions ? json_object_ref(exec->user_expressions)
                                                       : json_object_new());
  json_object_set_boolean_member(content, "allow_stdin", exec->on_input != NULL);
  json_object_set_boolean_member(content, "stop_on_error", FALSE);
  return content;
}

/* PAYLOAD (a reply's, borrowed) as a new node, each entry's "text/plain"
 * without ANSI colour codes. */
static JsonNode *
plain_payload(JsonArray *payload)
{
  JsonArray *plain = json_array_new();
  for (guint i = 0; i < json_array_get_length(payload); i++) {
    JsonNode *entry = json_node_copy(json_array_get_element(payload, i));
    JsonNode *data_node = JSON_NODE_HOLDS_OBJECT(entry)
                            ? json_object_get_member(json_node_get_object(entry), "data") : NULL;
    JsonObject *data = data_node != NULL && JSON_NODE_HOLDS_OBJECT(data_node)
                         ? json_node_get_object(data_node) : NULL;
    const char *text = data != NULL ? cx__peer_get_string(data, "text/plain", NULL)
                                    : NULL;
    if (text != NULL) {
      g_autofree char *stripped = jk_strip_ansi(text);
      json_object_set_string_member(data, "text/plain", stripped);
    }
    json_array_add_element(plain, entry);
  }
  JsonNode *node = json_node_init_array(json_node_alloc(), plain);
  json_array_unref(plain);
  return node;
}

/* The streams' tails, past output-limit, after what the request showed. */
static void
write_tails(jk_exec_state *state)
{
  for (int stream = 1; stream <= 2; stream++) {
    cx__output_buffer *buffer = &state->streams[stream];
    if (buffer->limit > 0)
      cx__output_buffer_write_range(buffer, state->exec->result, stream, buffer->head->len,
                                    buffer->total);
  }
}

/* The error's message and traceback bounded by output-limit, as the
 * subprocess backend bounds them: its cuts go to "truncated"'s "error". */
static void
bound_error(jk_exec_state *state, JsonArray *cuts)
{
  guint64 limit = state->exec->output_limit;
  char **texts[] = { &state->evalue, &state->traceback };
  const char *parts[] = { "message", "traceback" };
  for (int i = 0; i < 2; i++) {
    if (*texts[i] == NULL)
      continue;
    gsize len = strlen(*texts[i]);
    guint64 omitted;
    char *cut = cx__output_cut_text(*texts[i], len, limit, &omitted);
    if (cut == NULL)
      continue;
    cx__output_note_cut(cuts, parts[i], len, omitted);
    g_free(*texts[i]);
    *texts[i] = cut;
  }
}

/* "truncated": what output-limit cut, as the subprocess backend lists it. */
static void
mark_truncation(jk_exec_state *state, JsonArray *error_cuts)
{
  JsonObject *truncated = NULL;
  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_note(&state->streams[stream], stream == 1 ? "stdout" : "stderr", &truncated);
  JsonArray *cuts[] = { state->cuts, error_cuts };
  const char *names[] = { "outputs", "error" };
  for (int i = 0; i < 2; i++) {
    if (json_array_get_length(cuts[i]) == 0)
      continue;
    if (truncated == NULL)
      truncated = json_object_new();
    json_object_set_array_member(truncated, names[i], json_array_ref(cuts[i]));
  }
  if (truncated != NULL) {
    cx_result_set_extra(state->exec->result, "truncated",
                        json_node_init_object(json_node_alloc(), truncated));
    json_object_unref(truncated);
  }
}

/* The error of a request that was stopped: at its timeout, past
 * output-limit, or for an output too large to read. */
static void
set_stop_error(jk_exec_state *state)
{
  jk_exec *exec = state->exec;
  gboolean for_output = state->for_output || state->unreadable != NULL;
  const char *type = for_output ? CX_ERROR_TYPE_OUTPUT_LIMIT : CX_ERROR_TYPE_TIMEOUT;
  g_autofree char *why =
    state->unreadable != NULL ? g_strdup(state->unreadable)
    : for_output
      ? cx__output_stop_message(cx__output_stop_threshold(exec->output_limit), state->over_limit)
      : g_strdup_printf("cell exceeded its %g s timeout", exec->timeout);
  g_autofree char *message = g_strconcat(
    why,
    exec->killed      ? "; it did not stop when interrupted, so its kernel was killed"
    : exec->abandoned ? "; it did not stop when interrupted, and its kernel, not started by "
                        "cellexec, was left running it"
                      : "", NULL);
  const char *traceback = state->traceback ? state->traceback : "";
  g_autofree char *told = g_strdup_printf("%s%s%s: %s\n", traceback, *traceback ? "\n" : "",
                                          type, message);
  cx_result_set_error(exec->result, type, message, told);
}

static void
finish_result(jk_exec_state *state, jk_exec_outcome outcome)
{
  jk_exec *exec = state->exec;
  const char *status = exec->reply != NULL ? cx__peer_get_string(exec->reply, "status", NULL) : NULL;
  if (state->ename == NULL && g_strcmp0(status, "error") == 0)
    save_error(state, exec->reply, FALSE);
  if (exec->result == NULL)
    return;
  /* The kernel says the cell succeeded: an error it showed last was shown,
   * and the cell went on. */
  if (outcome != JK_EXEC_TIMEOUT && outcome != JK_EXEC_DIED && g_strcmp0(status, "ok") == 0)
    show_pending_error(state);
  if (state->dropped != NULL)
    cx_result_set_extra(exec->result, "dropped_outputs",
                        json_node_init_array(json_node_alloc(), state->dropped));
  if (exec->reply != NULL && json_object_has_member(exec->reply, "execution_count"))
    cx_result_set_extra(exec->result, "execution_count",
                        json_node_init_int(json_node_alloc(),
                                           cx__peer_get_int(exec->reply, "execution_count", 0)));
  else if (state->execution_count > 0)
    cx_result_set_extra(exec->result, "execution_count",
                        json_node_init_int(json_node_alloc(), state->execution_count));
  /* Pages (help from `len?`, `%pdoc`) come in the reply's payload: the
   * extra "payload", as the other backends give it, plain text without
   * the kernel's colour codes (as tracebacks). */
  JsonNode *payload = exec->reply != NULL ? json_object_get_member(exec->reply, "payload") : NULL;
  if (payload != NULL && JSON_NODE_HOLDS_ARRAY(payload) &&
      json_array_get_length(json_node_get_array(payload)) > 0)
    cx_result_set_extra(exec->result, "payload", plain_payload(json_node_get_array(payload)));
  write_tails(state);
  g_autoptr(JsonArray) error_cuts = json_array_new();
  bound_error(state, error_cuts);
  /* An output it could not read fails the cell, even one that ended
   * before it could be stopped. */
  if (outcome == JK_EXEC_TIMEOUT || (state->unreadable != NULL && outcome != JK_EXEC_DIED)) {
    set_stop_error(state);
  } else if (outcome == JK_EXEC_DIED) {
    g_autofree char *message = g_strdup_printf(
      "the kernel died while running the cell (%s); the next call gets a new kernel",
      exec->died_how ? exec->died_how : "heartbeat lost");
    cx_result_set_error(exec->result, CX_ERROR_TYPE_KERNEL_DIED, message, "");
  } else if (state->ename != NULL) {
    cx_result_set_error(exec->result, state->ename, state->evalue, state->traceback);
    /* The kernel's lines, unless the error passed output-limit: then the
     * plain traceback, cut as the other backends cut it.  No
     * error output for an error the kernel only printed, as ipykernel
     * does a UsageError; any other error the reply names without an
     * error message (one dropped as malformed) still gets one. */
    gboolean cut = json_array_get_length(error_cuts) > 0;
    gboolean shown = state->error_message_came || g_strcmp0(state->ename, "UsageError") != 0;
    cx_result_set_error_output(exec->result,
                               cut ? NULL : (const char *const *)state->traceback_lines, shown);
  } else if (g_strcmp0(status, "aborted") == 0) {
    cx_result_set_error(exec->result, CX_ERROR_TYPE_ABORTED, "the kernel aborted the request", "");
  } else if (exec->reply != NULL && g_strcmp0(status, "ok") != 0) {
    /* Not a success the kernel claimed: what happened is unknown. */
    g_autofree char *message =
      status != NULL
        ? g_strdup_printf("the kernel's execute_reply has status \"%s\", which is none of ok, "
                          "error and aborted: the cell's outcome is unknown", status)
        : g_strdup("the kernel's execute_reply has no string \"status\": the cell's outcome "
                   "is unknown");
    cx_result_set_error(exec->result, CX_ERROR_TYPE_KERNEL_PROTOCOL, message, "");
  }
  mark_truncation(state, error_cuts);
}

void
jk_exec_finish(jk_exec_state *state, jk_exec_outcome outcome)
{
  finish_result(state, outcome);
  clear_error(state);
  g_clear_pointer(&state->unreadable, g_free);
  g_clear_pointer(&state->dropped, json_array_unref);
  g_clear_pointer(&state->cuts, json_array_unref);
  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_clear(&state->streams[stream]);
}
