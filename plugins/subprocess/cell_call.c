/* plugins/subprocess/cell_call.c: the host's side of one cell.
 *
 * Deadline: at the deadline the cell's process gets SIGINT (a
 * KeyboardInterrupt, which the result turns into TimeoutError); if no
 * result came STOP_GRACE later, its whole process group gets SIGKILL and
 * the fork server sweeps up what escaped the group.  The call returns at
 * most STOP_GRACE + KILL_WAIT after the deadline, with the output streamed
 * so far.
 */
#include "config.h"

#include <gio/gio.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "plugins/subprocess/cell_call.h"
#include "lib/output_buffer.h"
#include "plugins/subprocess/wire/output_limit.h"
#include "plugins/subprocess/wire/protocol.h"

/* Long enough for a loaded machine to unwind a KeyboardInterrupt and send
 * its traceback (40 ms was not, with the test suite running on 2 cores);
 * short beside any timeout a person sets. */
#define STOP_GRACE_US (250 * 1000)
#define KILL_WAIT_US (40 * 1000)

typedef enum {
  STOP_NONE,
  STOP_TIMEOUT,
  STOP_OUTPUT_LIMIT,
  STOP_INTERRUPT_IGNORED,    /* still running interrupt_grace after its interrupt */
} stop_reason;

typedef struct {
  const cx__sp_call_params *params;
  int channel;
  gint *pid;
  cx__output_buffer streams[3];
  int last_stream;           /* of the last OUTPUT frame; 0: none yet */
  guint stream_switches;     /* between stdout and stderr frames so far */
  GPtrArray *events;         /* of output_event, in order */
  JsonNode *result;          /* the RESULT payload */
  JsonNode *exited;          /* the EXITED payload */
  char *worker_error;        /* an ERROR message */
  char *protocol_error;      /* the channel broke the protocol */
  JsonArray *truncated_outputs; /* what the worker cut out of DISPLAY events */
  /* Streaming (an output callback in the run options): DISPLAY events are
   * also applied here as they come, which gives them to the callback;
   * stream text goes to it directly.  NULL: not streaming. */
  cx_result *live;
  /* Bytes of each stream given to the callback so far: what is sure to be
   * kept (the head); past output-limit, the rest is given once the cell is
   * over, as the result keeps it (the worker sends bytes that may later
   * fall out of the tail). */
  guint64 live_sent[3];
  gboolean started, eof, finished;
  gboolean server_lost;      /* the fork server went before the process started */

  stop_reason stop;
  char *stop_message;
  gint64 kill_at;            /* SIGKILL time once stopping; 0: not yet */
  gboolean killed;
  gint64 give_up_at;         /* stop waiting for EXITED; 0: not yet */
  gint64 interrupted_kill_at; /* an interrupt came: SIGKILL then; 0: none came */
} call_state;

#define MAX_STREAM_SWITCHES 4096

/* A DISPLAY frame, or a switch from one stream's OUTPUT to the other's
 * (EVENT NULL), and where the streams were when it came: it goes between
 * those bytes and the next. */
typedef struct {
  JsonNode *event;
  guint64 stream_at[3];
} output_event;

static void
output_event_free(output_event *event)
{
  g_clear_pointer(&event->event, json_node_unref);
  g_free(event);
}

static void
add_event(call_state *call, JsonNode *node)
{
  output_event *event = g_new(output_event, 1);
  event->event = node;
  for (int stream = 1; stream <= 2; stream++)
    event->stream_at[stream] = call->streams[stream].total;
  g_ptr_array_add(call->events, event);
}

/* Room for the omission line the cell's process puts in what it cuts:
 * the host cuts again only what came past that. */
#define HOST_BOUND_SLACK 256

/* Keep the list of cuts of an event: {"part", "total_bytes",
 * "omitted_bytes"}, checked, as the channel is not to be trusted. */
static void
copy_cuts(JsonArray *cuts, JsonArray *to)
{
  for (guint i = 0; cuts != NULL && i < json_array_get_length(cuts); i++) {
    JsonNode *node = json_array_get_element(cuts, i);
    JsonObject *cut = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    const char *part = cx__peer_get_string(cut, "part", NULL);
    if (part == NULL || json_array_get_length(to) >= CX__OUTPUT_MAX_CUTS_LISTED)
      continue;
    JsonObject *entry = json_object_new();
    json_object_set_string_member(entry, "part", part);
    json_object_set_int_member(entry, "total_bytes",
                               cx__peer_get_int(cut, "total_bytes", 0));
    json_object_set_int_member(entry, "omitted_bytes",
                               cx__peer_get_int(cut, "omitted_bytes", 0));
    json_array_add_object_element(to, entry);
  }
}

static void
note_truncated_event(call_state *call, JsonObject *event)
{
  copy_cuts(cx__peer_get_array(event, "truncated"), call->truncated_outputs);
}

static void
signal_process(call_state *call, int signal_number, gboolean whole_group)
{
  gint pid = g_atomic_int_get(call->pid);
  if (pid > 0)
    kill(whole_group ? -pid : pid, signal_number);
}

static void
begin_stop(call_state *call, stop_reason reason, char *message)
{
  if (call->stop != STOP_NONE) {
    g_free(message);
    return;
  }
  call->stop = reason;
  call->stop_message = message;
  signal_process(call, SIGINT, FALSE);
  call->kill_at = g_get_monotonic_time() + STOP_GRACE_US;
}

static void apply_event(cx_result *result, JsonObject *event);

/* A DISPLAY frame that could not be read: one too large for the host to
 * read (CX_ERROR_TOO_LARGE: a display of millions of values) is output
 * past a limit, and the cell is stopped with OutputLimitExceeded saying
 * which; any other fault breaks the protocol.  (Only a cell that forges
 * them sends other frames that large: they break it too.) */
static void
display_unreadable(call_state *call, const GError *error)
{
  if (g_error_matches(error, CX_ERROR, CX_ERROR_TOO_LARGE))
    begin_stop(call, STOP_OUTPUT_LIMIT, g_strdup(error->message));
  else
    call->protocol_error = g_strdup(error->message);
}

/* DATA made valid UTF-8 (a character cut between two writes shows as
 * U+FFFD in the chunks; the result keeps the bytes).  g_utf8_make_valid()
 * replaces a NUL too, which a JSON string in a JsonNode cannot hold; with
 * KEEPS_NUL (cx_run_options_set_output_keeps_nul) a NUL is CX_RESULT_NUL
 * instead. */
static char *
live_text(const guint8 *data, gsize len, gboolean keeps_nul)
{
  if (!keeps_nul || memchr(data, '\0', len) == NULL)
    return g_utf8_make_valid((const char *)data, (gssize)len);
  GString *text = g_string_sized_new(len + 1);
  gsize start = 0;
  for (gsize i = 0; i <= len; i++) {
    if (i < len && data[i] != '\0')
      continue;
    g_autofree char *part = g_utf8_make_valid((const char *)data + start, (gssize)(i - start));
    g_string_append(text, part);
    if (i < len)
      g_string_append(text, CX_RESULT_NUL);
    start = i + 1;
  }
  return g_string_free(text, FALSE);
}

/* Give a chunk of stream text to the output callback (live_text). */
static void
stream_live(call_state *call, int stream, const guint8 *data, gsize len)
{
  if (call->live == NULL || len == 0)
    return;
  g_autofree char *text =
    live_text(data, len, cx_run_options_get_output_keeps_nul(call->params->run));
  JsonObject *output = json_object_new();
  json_object_set_string_member(output, "output_type", "stream");
  json_object_set_string_member(output, "name", stream == 1 ? "stdout" : "stderr");
  json_object_set_string_member(output, "text", text);
  cx_run_options_emit_output(call->params->run, output);
  json_object_unref(output);
}

/* Give the callback what it has not had of each stream (past output-limit:
 * the line saying what was left out, and the tail). */
static void
stream_live_rest(call_state *call)
{
  for (int stream = 1; stream <= 2 && call->live != NULL; stream++) {
    cx__output_buffer *buffer = &call->streams[stream];
    if (call->live_sent[stream] >= buffer->total)
      continue;
    g_autoptr(cx_result) rest = cx_result_new();
    cx__output_buffer_write_range(buffer, rest, stream, call->live_sent[stream], buffer->total);
    gsize len;
    const char *text = stream == 1 ? cx_result_get_stdout(rest, &len)
                                   : cx_result_get_stderr(rest, &len);
    stream_live(call, stream, (const guint8 *)text, len);
    call->live_sent[stream] = buffer->total;
  }
}

/* A bundle the process did not finish (it died, was killed, broke the
 * protocol) still has what every bundle has: the cell's number and how
 * long it ran, as the host saw it. */
static void
complete_bundle(cx_result *result, guint cell_number, gint64 started_us)
{
  if (cx_result_get_extra(result, "execution_count") == NULL)
    cx_result_set_extra(result, "execution_count", json_node_init_int(json_node_alloc(), cell_number));
  if (cx_result_get_extra(result, "duration_ms") == NULL) {
    double ms = (double)(g_get_monotonic_time() - started_us) / 1000.0;
    cx_result_set_extra(result, "duration_ms", json_node_init_double(json_node_alloc(), ms));
  }
}

/* TRUE once the cell's output began to arrive. */
static gboolean
wrote_output(const call_state *call)
{
  return call->last_stream != 0 || call->events->len > 0;
}

/* STARTED: the cell's process runs as PID; an interrupt or a deadline that
 * came before reaches it now. */
static void
on_started(call_state *call, const guint8 *payload, gsize len)
{
  g_autoptr(JsonNode) node = cx__wire_parse_object(payload, len, "STARTED", NULL);
  gint64 pid = node != NULL ? cx__peer_get_int(json_node_get_object(node), "pid", 0) : 0;
  if (pid <= 1 || pid > G_MAXINT || call->started) {
    call->protocol_error = g_strdup("malformed or repeated STARTED message");
    return;
  }
  call->started = TRUE;
  gboolean interrupted = g_atomic_int_exchange(call->pid, (gint)pid) == CX__SP_INTERRUPT_PENDING;
  /* The deadline passed, or an interrupt came, before it started. */
  if (call->stop != STOP_NONE || interrupted)
    signal_process(call, SIGINT, FALSE);
}

static void
on_output(call_state *call, const guint8 *payload, gsize len)
{
  g_autoptr(GError) error = NULL;
  int stream;
  guint64 omitted;
  const guint8 *data;
  gsize data_len;
  if (!cx__wire_decode_output(payload, len, &stream, &omitted, &data, &data_len, &error)) {
    call->protocol_error = g_strdup(error->message);
    return;
  }
  /* The worker sends the streams in the order they were written; a
   * channel cannot make the host keep more than MAX_STREAM_SWITCHES of
   * them (past it, order is kept per stream). */
  if (call->last_stream != 0 && call->last_stream != stream &&
      call->stream_switches++ < MAX_STREAM_SWITCHES)
    add_event(call, NULL);
  call->last_stream = stream;
  cx__output_buffer *buffer = &call->streams[stream];
  gsize head_before = buffer->head->len;
  cx__output_buffer_add(buffer, omitted, data, data_len);
  gsize to_head = buffer->head->len - head_before;
  if (to_head > 0 && call->live_sent[stream] == head_before) {
    stream_live(call, stream, data, to_head);
    call->live_sent[stream] += to_head;
  }
}

static void
on_display(call_state *call, const guint8 *payload, gsize len)
{
  /* The cell's process bounds what it sends, but a cell can write frames
   * to its channel itself: past the limit, the host bounds the event
   * again (a copy it can change). */
  g_autoptr(GError) error = NULL;
  guint64 limit = call->params->output_limit;
  gboolean bound = limit > 0 && len > limit + HOST_BOUND_SLACK;
  JsonNode *node = bound ? cx__wire_parse_mutable_object(payload, len, "DISPLAY", &error)
                         : cx__wire_parse_object(payload, len, "DISPLAY", &error);
  if (node == NULL) {
    display_unreadable(call, error);
    return;
  }
  note_truncated_event(call, json_node_get_object(node));
  if (bound)
    cx__wire_bound_event(json_node_get_object(node), limit + HOST_BOUND_SLACK,
                         call->truncated_outputs);
  if (call->live != NULL)
    apply_event(call->live, json_node_get_object(node));
  add_event(call, node);
}

/* INPUT: the cell's input() asks; the run options' input callback answers
 * (the cell waits, and its deadline with it, until it has). */
static void
on_input(call_state *call, JsonObject *request)
{
  const char *prompt = cx__peer_get_string(request, "prompt", "");
  gboolean password = cx__peer_get_boolean(request, "password", FALSE);
  g_autoptr(GError) failure = NULL;
  g_autofree char *line = cx_run_options_ask_input(call->params->run, prompt, password, &failure);
  JsonObject *reply = json_object_new();
  if (line != NULL) {
    json_object_set_string_member(reply, "value", line);
  } else {
    json_object_set_string_member(reply, "error", failure->message);
    json_object_set_boolean_member(reply, "cancelled",
                                   g_error_matches(failure, G_IO_ERROR, G_IO_ERROR_CANCELLED));
  }
  /* A process that died meanwhile: its EXITED or EOF says so next. */
  cx__wire_send_object(call->channel, CX__WIRE_MSG_INPUT_REPLY, reply, -1, NULL);
}

/* ERROR: the worker cannot run the cell, said before its code runs. */
static void
on_worker_error(call_state *call, JsonObject *object)
{
  const char *message = cx__wire_error_message(object);
  /* After the cell's output, the cell wrote it on its channel itself. */
  if (wrote_output(call)) {
    call->protocol_error = g_strdup_printf("an ERROR after the cell's output: %s", message);
    return;
  }
  call->worker_error = g_strdup(message);
  call->finished = TRUE;
}

static void
handle_frame(call_state *call, guint8 type, const guint8 *payload, gsize len)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = NULL;
  switch (type) {
  case CX__WIRE_MSG_STARTED:
    on_started(call, payload, len);
    return;
  case CX__WIRE_MSG_OUTPUT:
    on_output(call, payload, len);
    return;
  case CX__WIRE_MSG_DISPLAY:
    on_display(call, payload, len);
    return;
  case CX__WIRE_MSG_RESULT:
    call->result = cx__wire_parse_result(payload, len, &error);
    break;
  case CX__WIRE_MSG_LIMIT:
    node = cx__wire_parse_object(payload, len, "LIMIT", &error);
    break;
  case CX__WIRE_MSG_EXITED:
    node = cx__wire_parse_object(payload, len, "EXITED", &error);
    break;
  case CX__WIRE_MSG_ERROR:
    node = cx__wire_parse_object(payload, len, "ERROR", &error);
    break;
  case CX__WIRE_MSG_INPUT:
    node = cx__wire_parse_object(payload, len, "INPUT", &error);
    break;
  default:
    call->protocol_error = g_strdup_printf("unknown message type 0x%02x", type);
    return;
  }
  /* RESULT and EXITED end the call, even malformed. */
  if (type == CX__WIRE_MSG_RESULT || type == CX__WIRE_MSG_EXITED)
    call->finished = TRUE;
  if (error != NULL) {
    call->protocol_error = g_strdup(error->message);
    return;
  }
  if (type == CX__WIRE_MSG_EXITED)
    call->exited = g_steal_pointer(&node);
  else if (type == CX__WIRE_MSG_LIMIT)
    begin_stop(call, STOP_OUTPUT_LIMIT,
               g_strdup(cx__peer_get_string(json_node_get_object(node), "message",
                                            "the cell wrote too much output")));
  else if (type == CX__WIRE_MSG_ERROR)
    on_worker_error(call, json_node_get_object(node));
  else if (type == CX__WIRE_MSG_INPUT)
    on_input(call, json_node_get_object(node));
}

/* Read and handle what is there.  FALSE when the call is over. */
static gboolean
pump(call_state *call, int channel, cx__wire_reader *reader)
{
  for (;;) {
    guint8 type;
    const guint8 *payload;
    gsize len;
    g_autoptr(GError) error = NULL;
    while (!call->finished && call->protocol_error == NULL &&
           cx__wire_reader_next(reader, &type, &payload, &len, &error))
      handle_frame(call, type, payload, len);
    if (error != NULL && call->protocol_error == NULL)
      call->protocol_error = g_strdup(error->message);
    if (call->finished || call->protocol_error != NULL)
      return FALSE;
    switch (cx__wire_reader_fill(reader, FALSE, &error)) {
    case CX__WIRE_READ_DATA:
      continue;
    case CX__WIRE_READ_AGAIN:
      return TRUE;
    case CX__WIRE_READ_EOF:
      if (cx__wire_reader_pending(reader) > 0)
        call->protocol_error = g_strdup("the channel closed in the middle of a message");
      call->eof = TRUE;
      return FALSE;
    case CX__WIRE_READ_ERROR:
      call->protocol_error = g_strdup(error->message);
      return FALSE;
    }
  }
}

/* Steps the deadline sequence; returns the next time something is due. */
static gint64
check_deadlines(call_state *call, gint64 start, gint64 now)
{
  double timeout = call->params->timeout;
  if (timeout > 0 && call->stop == STOP_NONE) {
    gint64 deadline = start + (gint64)(timeout * G_USEC_PER_SEC);
    if (now < deadline)
      return deadline;
    begin_stop(call, STOP_TIMEOUT,
               g_strdup_printf("cell exceeded its %g s timeout", timeout));
  }
  if (call->stop == STOP_NONE && call->interrupted_kill_at != 0) {
    if (now < call->interrupted_kill_at)
      return call->interrupted_kill_at;
    call->stop = STOP_INTERRUPT_IGNORED;
    call->stop_message = g_strdup_printf(
      "the cell did not stop within interrupt-grace (%g s) of its interrupt: its process was "
      "killed, and the session's state with it", call->params->interrupt_grace);
    call->kill_at = now;
  }
  if (call->stop == STOP_NONE)
    return G_MAXINT64;
  if (!call->killed) {
    if (now < call->kill_at)
      return call->kill_at;
    signal_process(call, SIGKILL, TRUE);
    call->killed = TRUE;
    call->give_up_at = now + KILL_WAIT_US;
  }
  return call->give_up_at;
}

/* The cell was interrupted (PARAMS' wake_fd): it has interrupt_grace to
 * stop.  The first interrupt sets the time; the ones after it do not
 * move it. */
static void
note_interrupt(call_state *call)
{
  guint64 count;
  while (read(call->params->wake_fd, &count, sizeof count) > 0)
    ;
  if (call->params->interrupt_grace > 0 && call->interrupted_kill_at == 0)
    call->interrupted_kill_at =
      g_get_monotonic_time() + (gint64)(call->params->interrupt_grace * G_USEC_PER_SEC);
}

/* ---- The result ---------------------------------------------------------------- */

/* How the error shows (the RESULT frame's "error_output", see
 * docs/worker-protocol.md): from a process that runs untrusted code, so
 * what makes no sense, or passes LIMIT, leaves the plain traceback's lines. */
static void
set_error_output(cx_result *result, JsonNode *shown, guint64 limit)
{
  if (shown == NULL)
    return;
  if (JSON_NODE_HOLDS_VALUE(shown) && json_node_get_value_type(shown) == G_TYPE_BOOLEAN) {
    cx_result_set_error_output(result, NULL, json_node_get_boolean(shown));
    return;
  }
  if (!JSON_NODE_HOLDS_OBJECT(shown))
    return;
  g_auto(GStrv) lines = cx__output_lines(cx__peer_get_array(json_node_get_object(shown),
                                                           "traceback"), limit);
  cx_result_set_error_output(result, (const char *const *)lines, TRUE);
}

/* Copy the error and extras of the worker's RESULT into RESULT (its outputs
 * came as OUTPUT and DISPLAY frames). */
static gboolean
merge_worker_result(cx_result *result, call_state *call, JsonNode *node, GError **error)
{
  g_autoptr(cx_result) worker = cx_result_from_json_node(node, error);
  if (worker == NULL)
    return FALSE;
  if (cx_result_has_error(worker)) {
    /* Bounded by the cell's process, unless the cell forged the frame. */
    guint64 limit = call->params->output_limit > 0
                      ? call->params->output_limit + HOST_BOUND_SLACK : 0;
    const char *message = cx_result_get_error_message(worker);
    const char *traceback = cx_result_get_error_traceback(worker);
    guint64 omitted;
    g_autofree char *cut_message = cx__output_cut_text(message, strlen(message), limit, &omitted);
    g_autofree char *cut_traceback = cx__output_cut_text(traceback, strlen(traceback), limit,
                                                       &omitted);
    cx_result_set_error(result, cx_result_get_error_type(worker),
                        cut_message != NULL ? cut_message : message,
                        cut_traceback != NULL ? cut_traceback : traceback);
    set_error_output(result, cx_result_get_extra(worker, "error_output"), limit);
  }
  else
    cx_result_set_success(result, cx_result_get_success(worker));
  g_auto(GStrv) extras = cx_result_list_extras(worker);
  /* "truncated" is the host's to say (mark_truncation()); "error_output"
   * is read above. */
  for (char **key = extras; *key != NULL; key++)
    if (!g_str_equal(*key, "truncated") && !g_str_equal(*key, "error_output"))
      cx_result_set_extra(result, *key, json_node_copy(cx_result_get_extra(worker, *key)));
  return TRUE;
}

/* An event of the cell (see cx__py_output_func) applied to RESULT.
 * Events come from a process that runs untrusted code: one that makes no
 * sense is dropped. */
static void
apply_event(cx_result *result, JsonObject *event)
{
  const char *kind = cx__peer_get_string(event, "event", "");
  if (g_str_equal(kind, "clear")) {
    cx_result_clear_output(result, cx__peer_get_boolean(event, "wait",
                                                                               FALSE));
    return;
  }
  if (g_str_equal(kind, "error")) {
    const char *ename = cx__peer_get_string(event, "ename", NULL);
    const char *evalue = cx__peer_get_string(event, "evalue", NULL);
    g_auto(GStrv) lines = cx__output_lines(cx__peer_get_array(event, "traceback"), 0);
    if (ename != NULL && evalue != NULL)
      cx_result_add_error_output_lines(result, ename, evalue, (const char *const *)lines);
    return;
  }
  if (g_str_equal(kind, "message")) {
    const char *msg_type = cx__peer_get_string(event, "msg_type", "");
    JsonObject *content = cx__peer_get_object(event, "content");
    if (content != NULL)
      cx_result_pass_message(result, msg_type, content); /* comms' only */
    return;
  }
  JsonObject *data = cx__peer_get_object(event, "data");
  JsonObject *metadata = cx__peer_get_object(event, "metadata");
  const char *display_id = cx__peer_get_string(event, "display_id", NULL);
  if (data == NULL)
    return;
  if (g_str_equal(kind, "display"))
    cx_result_add_display(result, data, metadata, display_id);
  else if (g_str_equal(kind, "update") && display_id != NULL)
    cx_result_update_display(result, display_id, data, metadata);
  else if (g_str_equal(kind, "execute_result"))
    cx_result_add_execute_result_with_id(
      result, data, metadata, cx__peer_get_int(event, "execution_count", 0), display_id);
}

/* The streams and events, in the order the cell made them. */
static void
write_outputs(cx_result *result, call_state *call)
{
  guint64 written[3] = { 0 };
  for (guint i = 0; i <= call->events->len; i++) {
    output_event *event = i < call->events->len ? g_ptr_array_index(call->events, i) : NULL;
    for (int stream = 1; stream <= 2; stream++) {
      guint64 up_to = event != NULL ? event->stream_at[stream] : G_MAXUINT64;
      cx__output_buffer_write_range(&call->streams[stream], result, stream, written[stream],
                                       up_to);
      written[stream] = MAX(written[stream], MIN(up_to, call->streams[stream].total));
    }
    if (event != NULL && event->event != NULL)
      apply_event(result, json_node_get_object(event->event));
  }
}

/* "truncated": the streams the host cut, the parts of outputs the worker
 * cut ("outputs"), and those of the error ("error", from the worker's
 * result). */
static void
mark_truncation(cx_result *result, call_state *call)
{
  JsonObject *truncated = NULL;
  JsonObject *from_worker = call->result != NULL && call->protocol_error == NULL
    ? cx__peer_get_object(json_node_get_object(call->result), "truncated") : NULL;
  JsonArray *error_cuts = json_array_new();
  copy_cuts(cx__peer_get_array(from_worker, "error"), error_cuts);
  if (json_array_get_length(error_cuts) > 0) {
    truncated = json_object_new();
    json_object_set_array_member(truncated, "error", json_array_ref(error_cuts));
  }
  json_array_unref(error_cuts);
  if (json_array_get_length(call->truncated_outputs) > 0) {
    if (truncated == NULL)
      truncated = json_object_new();
    json_object_set_array_member(truncated, "outputs", json_array_ref(call->truncated_outputs));
  }
  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_note(&call->streams[stream], stream == 1 ? "stdout" : "stderr", &truncated);
  if (truncated != NULL) {
    cx_result_set_extra(result, "truncated", json_node_init_object(json_node_alloc(), truncated));
    json_object_unref(truncated);
  }
}

static void
set_crash_error(cx_result *result, call_state *call)
{
  if (call->protocol_error != NULL) {
    g_autofree char *message = g_strdup_printf(
      "the cell's process broke the worker protocol (%s) and was killed",
      call->protocol_error);
    cx_result_set_error(result, CX_ERROR_TYPE_WORKER_CRASHED, message, "");
    return;
  }
  if (call->exited == NULL) {
    cx_result_set_error(result, CX_ERROR_TYPE_WORKER_CRASHED,
                        "the cell's process ended without a result, and the worker did not "
                        "say how (the fork server itself died?); the next call starts a new one",
                        "");
    return;
  }
  JsonObject *exited = json_node_get_object(call->exited);
  if (cx__wire_exit_signal(exited) == SIGXCPU) {
    cx_result_set_error(result, CX_ERROR_TYPE_CPU_TIME,
                        "the cell used up its CPU time (cpu-limit) and was stopped with SIGXCPU",
                        "");
    return;
  }
  g_autofree char *how = cx__wire_describe_exit(exited);
  g_autofree char *message = g_strdup_printf("the cell's process %s", how);
  cx_result_set_error(result, CX_ERROR_TYPE_WORKER_CRASHED, message, "");
  cx_result_set_extra(result, "exit", json_node_copy(call->exited));
}

static cx_result *
make_result(call_state *call, GError **error)
{
  g_autoptr(cx_result) result = cx_result_new();
  write_outputs(result, call);
  g_autoptr(GError) merge_error = NULL;
  if (call->result != NULL && call->protocol_error == NULL &&
      !merge_worker_result(result, call, call->result, &merge_error))
    call->protocol_error = g_strdup(merge_error->message);

  if (call->stop != STOP_NONE) {
    /* Keep the traceback of the KeyboardInterrupt: it shows where the cell
     * was.  Its last line says what happened in words, as Python's do. */
    const char *type = call->stop == STOP_TIMEOUT           ? CX_ERROR_TYPE_TIMEOUT
                       : call->stop == STOP_INTERRUPT_IGNORED ? CX_ERROR_TYPE_WORKER_CRASHED
                                                              : CX_ERROR_TYPE_OUTPUT_LIMIT;
    const char *traceback = cx_result_has_error(result) ? cx_result_get_error_traceback(result) : "";
    g_autofree char *told = g_strdup_printf("%s%s%s: %s\n", traceback,
                                            traceback[0] != '\0' ? "\n" : "", type,
                                            call->stop_message);
    cx_result_set_error(result, type, call->stop_message, told);
  } else if (call->result == NULL || call->protocol_error != NULL) {
    set_crash_error(result, call);
  }
  mark_truncation(result, call);
  return g_steal_pointer(&result);
}

cx_result *
cx__sp_cell_call_run(int channel, cx__wire_reader *reader, gint *pid,
                     const cx__sp_call_params *params, cx__sp_call_outcome *outcome,
                     GError **error)
{
  call_state call = { .params = params, .channel = channel, .pid = pid };
  call.events = g_ptr_array_new_with_free_func((GDestroyNotify)output_event_free);
  call.truncated_outputs = json_array_new();
  call.started = g_atomic_int_get(pid) > 0;
  if (params->run != NULL && cx_run_options_get_output_callback(params->run, NULL) != NULL)
    call.live = cx_result_new_streaming(params->run);
  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_init(&call.streams[stream], params->output_limit);

  gint64 start = g_get_monotonic_time();
  gint64 next_server_check = start + CX__SP_SERVER_CHECK_US;
  while (pump(&call, channel, reader)) {
    gint64 now = g_get_monotonic_time();
    gint64 due = check_deadlines(&call, start, now);
    if (call.killed && now >= call.give_up_at)
      break; /* killed, EXITED late: go with what we have */
    /* A server that cannot start the cell (stopped by an earlier cell)
     * must not make it wait forever: the caller retries on a new one. */
    if (!call.started && params->server_alive != NULL) {
      if (now >= next_server_check) {
        if (!params->server_alive(params->server_data)) {
          call.server_lost = TRUE;
          break;
        }
        next_server_check = now + CX__SP_SERVER_CHECK_US;
      }
      due = MIN(due, next_server_check);
    }
    int wait_ms = due == G_MAXINT64 ? -1 : (int)MAX((due - now + 999) / 1000, 0);
    struct pollfd fds[2] = { { channel, POLLIN, 0 }, { params->wake_fd, POLLIN, 0 } };
    if (poll(fds, params->wake_fd >= 0 ? 2 : 1, wait_ms) < 0 && errno != EINTR)
      break;
    if (params->wake_fd >= 0 && (fds[1].revents & POLLIN))
      note_interrupt(&call);
    check_deadlines(&call, start, g_get_monotonic_time());
  }

  if (call.protocol_error != NULL && !call.killed) {
    /* Whatever sent it can no longer be trusted to talk sense. */
    signal_process(&call, SIGKILL, TRUE);
    call.killed = TRUE;
  }

  cx_result *result = NULL;
  if (!call.started && (call.eof || call.server_lost) && call.worker_error == NULL) {
    *outcome = CX__SP_CALL_NEVER_STARTED;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "the subprocess worker closed the channel before running the cell");
  } else if (call.worker_error != NULL && call.stop == STOP_NONE) {
    *outcome = call.started && !params->one_shot ? CX__SP_CALL_DONE : CX__SP_CALL_PROCESS_GONE;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the subprocess worker cannot run the cell: %s",
                call.worker_error);
  } else {
    gboolean gone = params->one_shot || call.exited != NULL || call.eof || call.killed ||
                    call.protocol_error != NULL || call.result == NULL;
    *outcome = gone ? CX__SP_CALL_PROCESS_GONE : CX__SP_CALL_DONE;
    stream_live_rest(&call);
    result = make_result(&call, error);
    if (result != NULL)
      complete_bundle(result, params->cell_number, start);
    if (result != NULL && call.live != NULL)
      cx_result_set_streamed(result);
  }

  for (int stream = 1; stream <= 2; stream++)
    cx__output_buffer_clear(&call.streams[stream]);
  g_ptr_array_unref(call.events);
  json_array_unref(call.truncated_outputs);
  g_clear_pointer(&call.live, cx_result_free);
  g_clear_pointer(&call.result, json_node_unref);
  g_clear_pointer(&call.exited, json_node_unref);
  g_free(call.worker_error);
  g_free(call.protocol_error);
  g_free(call.stop_message);
  return result;
}
