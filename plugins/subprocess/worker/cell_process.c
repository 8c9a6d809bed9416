/* plugins/subprocess/worker/cell_process.c: the process that serves one cell
 * (forked per stateless cell) or one session (forked per session).
 *
 * The cell runs in this process's main thread, so signals and signal.signal()
 * behave as in python3.  A second thread, the streamer, sends the output
 * the cell has written every STREAM_INTERVAL while it runs: a cell killed
 * at its deadline or crashed still shows what it printed.  It also asks the
 * host to stop a cell that writes without end (LIMIT).
 */
#define _GNU_SOURCE /* close_range */
#include "config.h"

#include <gio/gio.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cellexec/options.h>
#include <cellexec/result.h>

#include "plugins/subprocess/wire/output_limit.h"
#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

#define STREAM_INTERVAL_US (20 * 1000)
/* Largest OUTPUT frame. */
#define OUTPUT_CHUNK (1024 * 1024)

/* The channel fd once the process is set up. */
#define CHANNEL_FD 3

typedef struct {
  int channel;
  pid_t pid;                        /* this process (not a forked grandchild) */
  GMutex write_lock;                /* frames come from two threads */
  guint64 output_limit;             /* per stream; 0: none */
  guint64 written[3];               /* bytes of [1] stdout, [2] stderr so far */
  gboolean limit_reported;

  /* Streamer state, under state_lock. */
  GMutex state_lock;
  GCond state_changed;
  gboolean active;                  /* a cell runs: stream its output */
  gboolean peeking;                 /* the streamer is between peek and send */
  gboolean streamer_idle;           /* in its untimed wait: a cell must wake it */
  cx__py_output_cursor cursor;  /* under the GIL */
} channel_state;

static channel_state *the_channel;   /* for the fatal-signal handler and os._exit */

/* ---- Sending output ---------------------------------------------------------- */

static void
send_chunk_locked(channel_state *channel, int stream, guint64 omitted, const char *data,
                  gsize len)
{
  do {
    gsize n = MIN(len, OUTPUT_CHUNK);
    guint8 header[CX__WIRE_OUTPUT_HEADER_SIZE];
    cx__wire_encode_output_header(header, stream, omitted);
    struct iovec parts[] = { { header, sizeof header }, { (void *)data, n } };
    /* A failed send means the host is gone; the exit follows soon. */
    if (!cx__wire_sendv(channel->channel, CX__WIRE_MSG_OUTPUT, parts, 2, -1, NULL))
      return;
    omitted = 0;
    data += n;
    len -= n;
  } while (len > 0);
}

/* Send LEN more bytes of STREAM, leaving out the middle of what exceeds
 * output-limit: the head (first half) goes out as written, and of the rest
 * only what could still be part of the tail (last half).  The host keeps
 * head and tail the same way.  With write_lock held. */
static void
send_output_locked(channel_state *channel, int stream, const char *data, gsize len)
{
  guint64 before = channel->written[stream];
  channel->written[stream] += len;
  gsize in_head, omitted;
  cx__output_split(channel->output_limit, before, len, &in_head, &omitted);
  if (in_head == len) {
    send_chunk_locked(channel, stream, 0, data, len);
    return;
  }
  if (in_head > 0)
    send_chunk_locked(channel, stream, 0, data, in_head);
  data += in_head;
  len -= in_head;
  /* With no tail (output-limit 1) nothing is left to send, but the host
   * must still hear of what was left out: an empty chunk says it. */
  send_chunk_locked(channel, stream, omitted, data + omitted, len - omitted);
}

/* Output copied under the GIL, in order: a run of one stream's bytes, or
 * one event (stream 0). */
typedef struct {
  int stream;
  GByteArray *data;
} output_chunk;

static void
output_chunk_free(output_chunk *chunk)
{
  g_byte_array_unref(chunk->data);
  g_free(chunk);
}

static void
collect_output(int stream, const char *data, gsize len, gpointer user_data)
{
  GPtrArray *chunks = user_data;
  output_chunk *last = chunks->len > 0 ? g_ptr_array_index(chunks, chunks->len - 1) : NULL;
  if (last == NULL || last->stream != stream || stream == 0) {
    last = g_new(output_chunk, 1);
    last->stream = stream;
    last->data = g_byte_array_new();
    g_ptr_array_add(chunks, last);
  }
  g_byte_array_append(last->data, (const guint8 *)data, len);
}

/* The event JSON (LEN bytes) with each part bounded by output-limit, and
 * by CX__WIRE_PART_MAX if it would not fit a frame; what was cut is
 * listed in its "truncated" member. */
static char *
bound_event_text(guint64 limit, const char *json, gsize len)
{
  g_autoptr(JsonNode) node =
    cx__wire_parse_mutable_object((const guint8 *)json, len, "DISPLAY", NULL);
  if (node == NULL)
    return g_strdup("{\"event\": \"display\", \"data\": {\"text/plain\": "
                    "\"[cellexec: an unreadable output was omitted]\"}}");
  JsonObject *event = json_node_get_object(node);
  JsonArray *truncated = json_array_new();
  json_object_set_array_member(event, "truncated", truncated);
  cx__wire_bound_event(event, limit, truncated);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  if (strlen(text) > CX__WIRE_MAX_PAYLOAD) {
    cx__wire_bound_event(event, CX__WIRE_PART_MAX, truncated);
    g_free(text);
    text = cx_json_to_string(node, FALSE);
  }
  if (strlen(text) > CX__WIRE_MAX_PAYLOAD) {
    /* Too many large parts: the event says so instead. */
    g_autofree char *placeholder = g_strdup_printf(
      "[cellexec: an output of %" G_GSIZE_FORMAT " bytes was omitted: too large for the "
      "worker channel]", len);
    gboolean error = g_str_equal(cx__peer_get_string(event, "event", ""), "error");
    json_object_remove_member(event, "metadata");
    if (error) {
      json_object_set_string_member(event, "evalue", placeholder);
      json_object_set_array_member(event, "traceback", json_array_new());
    } else {
      JsonObject *data = json_object_new();
      json_object_set_string_member(data, "text/plain", placeholder);
      json_object_set_object_member(event, "data", data);
    }
    JsonArray *all = json_array_new();
    JsonObject *entry = json_object_new();
    json_object_set_string_member(entry, "part", error ? "evalue" : "data");
    json_object_set_int_member(entry, "total_bytes", (gint64)len);
    json_object_set_int_member(entry, "omitted_bytes", (gint64)len);
    json_array_add_object_element(all, entry);
    json_object_set_array_member(event, "truncated", all);
    g_free(text);
    text = cx_json_to_string(node, FALSE);
  } else if (json_array_get_length(truncated) == 0) {
    json_object_remove_member(event, "truncated");
    g_free(text);
    text = cx_json_to_string(node, FALSE);
  }
  return g_steal_pointer(&text);
}

static void
send_event_locked(channel_state *channel, const char *json, gsize len)
{
  /* No part of an event can pass the limit unless the whole does. */
  g_autofree char *bounded = NULL;
  if ((channel->output_limit > 0 && len > channel->output_limit) || len > CX__WIRE_MAX_PAYLOAD) {
    bounded = bound_event_text(channel->output_limit, json, len);
    json = bounded;
    len = strlen(bounded);
  }
  struct iovec part = { (void *)json, len };
  cx__wire_sendv(channel->channel, CX__WIRE_MSG_DISPLAY, &part, 1, -1, NULL);
}

/* Called where the process dies at once (with the GIL held or in a fatal
 * signal handler of the cell's thread), and for the end of a cell, with
 * write_lock held. */
static void
send_output_directly(int stream, const char *data, gsize len, gpointer user_data)
{
  if (stream == 0)
    send_event_locked(user_data, data, len);
  else
    send_output_locked(user_data, stream, data, len);
}

static void
report_output_limit(channel_state *channel)
{
  if (channel->limit_reported || channel->output_limit == 0)
    return;
  guint64 stop_at = cx__output_stop_threshold(channel->output_limit);
  int stream = channel->written[1] > stop_at ? 1 : channel->written[2] > stop_at ? 2 : 0;
  if (stream == 0)
    return;
  channel->limit_reported = TRUE;
  JsonObject *limit = json_object_new();
  json_object_set_string_member(limit, "type", CX_ERROR_TYPE_OUTPUT_LIMIT);
  g_autofree char *message =
    cx__output_stop_message(stop_at, stream == 1 ? "stdout" : "stderr");
  json_object_set_string_member(limit, "message", message);
  cx__wire_send_object(channel->channel, CX__WIRE_MSG_LIMIT, limit, -1, NULL);
}

/* ---- The streamer thread ------------------------------------------------------ */

static void
stream_once(channel_state *channel)
{
  g_autoptr(GPtrArray) chunks = g_ptr_array_new_with_free_func((GDestroyNotify)output_chunk_free);
  /* Copy under the GIL, send without it: the host may be slow to read. */
  cx__py_peek_output(&channel->cursor, collect_output, chunks);
  g_mutex_lock(&channel->write_lock);
  for (guint i = 0; i < chunks->len; i++) {
    output_chunk *chunk = g_ptr_array_index(chunks, i);
    send_output_directly(chunk->stream, (const char *)chunk->data->data, chunk->data->len,
                         channel);
  }
  report_output_limit(channel);
  g_mutex_unlock(&channel->write_lock);
}

/* stream_once() with the state lock held (and held again on return): one
 * peek at a time, the streamer's or a cell's input() sending what is
 * pending before it asks. */
static void
stream_once_locked(channel_state *channel)
{
  while (channel->peeking)
    g_cond_wait(&channel->state_changed, &channel->state_lock);
  channel->peeking = TRUE;
  g_mutex_unlock(&channel->state_lock);
  stream_once(channel);
  g_mutex_lock(&channel->state_lock);
  channel->peeking = FALSE;
  g_cond_broadcast(&channel->state_changed);
}

static void *
streamer_main(void *data)
{
  channel_state *channel = data;
  g_mutex_lock(&channel->state_lock);
  for (;;) {
    while (!channel->active) {
      channel->streamer_idle = TRUE;
      g_cond_wait(&channel->state_changed, &channel->state_lock);
      channel->streamer_idle = FALSE;
    }
    gint64 next = g_get_monotonic_time() + STREAM_INTERVAL_US;
    while (channel->active && g_cond_wait_until(&channel->state_changed, &channel->state_lock, next))
      ;
    if (!channel->active)
      continue;
    stream_once_locked(channel);
  }
  return NULL;
}

static void
start_streamer(channel_state *channel)
{
  int failed = cx__py_start_thread(streamer_main, channel);
  if (failed)
    g_warning("cellexec-worker: no output streaming (%s): output of a cell that is "
              "killed will be lost", g_strerror(failed));
}

static void
set_streaming(channel_state *channel, gboolean active)
{
  g_mutex_lock(&channel->state_lock);
  channel->active = active;
  if (active)
    channel->cursor = (cx__py_output_cursor){ 0 };
  /* Waking the streamer costs two context switches per cell: only when it
   * waits without a deadline.  In its timed wait it sees the new state at
   * its next tick (an ended cell: it goes idle; a new one: it streams). */
  if (active && channel->streamer_idle)
    g_cond_broadcast(&channel->state_changed);
  /* Stopping: wait until a peek in progress has been sent, so the final
   * output follows it in order. */
  while (!active && channel->peeking)
    g_cond_wait(&channel->state_changed, &channel->state_lock);
  g_mutex_unlock(&channel->state_lock);
}

/* ---- Input --------------------------------------------------------------------- */

/* Send what the streamer has not sent yet, now, as it would. */
static void
stream_pending(channel_state *channel)
{
  g_mutex_lock(&channel->state_lock);
  stream_once_locked(channel);
  g_mutex_unlock(&channel->state_lock);
}

/* The cell's input callback when the host answers input (RUN's "stdin"):
 * INPUT to the host, after what the cell wrote before, and its
 * INPUT_REPLY.  Called without the GIL. */
static char *
ask_host(const char *prompt, gboolean password, gpointer data, GError **error)
{
  channel_state *channel = data;
  stream_pending(channel);
  JsonObject *request = json_object_new();
  json_object_set_string_member(request, "prompt", prompt);
  json_object_set_boolean_member(request, "password", password);
  g_mutex_lock(&channel->write_lock);
  gboolean sent = cx__wire_send_object(channel->channel, CX__WIRE_MSG_INPUT, request, -1, error);
  g_mutex_unlock(&channel->write_lock);
  if (!sent)
    return NULL;
  /* Nothing else comes on the channel while the cell runs. */
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(channel->channel);
  guint8 type;
  const guint8 *payload;
  gsize len;
  g_autoptr(GError) read_error = NULL;
  if (!cx__wire_read_blocking(reader, &type, &payload, &len, &read_error) ||
      type != CX__WIRE_MSG_INPUT_REPLY) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "no answer to input() from the host: %s",
                read_error != NULL ? read_error->message : "another message came");
    return NULL;
  }
  g_autoptr(JsonNode) node = cx__wire_parse_object(payload, len, "INPUT_REPLY", error);
  JsonObject *reply = node != NULL ? json_node_get_object(node) : NULL;
  const char *value = cx__peer_get_string(reply, "value", NULL);
  if (value != NULL)
    return g_strdup(value);
  if (reply != NULL)
    g_set_error_literal(error, cx__peer_get_boolean(reply, "cancelled", FALSE) ? G_IO_ERROR : CX_ERROR,
                        cx__peer_get_boolean(reply, "cancelled", FALSE) ? G_IO_ERROR_CANCELLED
                                                                         : CX_ERROR_FAILED,
                        cx__peer_get_string(reply, "error", "no answer"));
  return NULL;
}

/* ---- Process exits the cell causes -------------------------------------------- */

void
cx__worker_before_exit(int status)
{
  channel_state *channel = the_channel;
  if (channel == NULL || getpid() != channel->pid || !cx__worker_cell_running)
    return; /* e.g. a process the cell forked */
  g_mutex_lock(&channel->write_lock);
  cx__py_peek_output_gil_held(&channel->cursor, send_output_directly, channel);
  g_mutex_unlock(&channel->write_lock);
}

static void
on_fatal_signal(int signal_number)
{
  channel_state *channel = the_channel;
  /* Best effort: send what was printed since the streamer's last round,
   * unless a frame is half written.  Only in the cell's own thread: a
   * signal the cell sent itself (abort(), os.kill) or caused (a fault). */
  if (channel != NULL && getpid() == channel->pid && gettid() == channel->pid &&
      cx__worker_cell_running && g_mutex_trylock(&channel->write_lock)) {
    cx__py_peek_streams_in_signal_handler(&channel->cursor, send_output_directly, channel);
    g_mutex_unlock(&channel->write_lock);
  }
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

static void
catch_fatal_signals(void)
{
  /* On a stack of its own, for a cell that overflowed the main one. */
  static char alternate_stack[64 * 1024];
  stack_t stack = { .ss_sp = alternate_stack, .ss_size = sizeof alternate_stack };
  sigaltstack(&stack, NULL);
  struct sigaction action = { .sa_handler = on_fatal_signal,
                              .sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER };
  sigemptyset(&action.sa_mask);
  const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGHUP, SIGQUIT,
                        SIGUSR1, SIGUSR2, SIGALRM };
  for (guint i = 0; i < G_N_ELEMENTS(fatal); i++)
    sigaction(fatal[i], &action, NULL);
}

/* ---- Running a cell ---------------------------------------------------------- */

static cx_run_options *
run_options_from(JsonObject *cell, GError **error)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  const char *cwd = cx__peer_get_string(cell, "cwd", NULL);
  if (cwd != NULL)
    cx_run_options_set_cwd(run, cwd);
  JsonArray *env = cx__peer_get_array(cell, "env");
  for (guint i = 0; env != NULL && i < json_array_get_length(env); i++) {
    const char *assignment = json_array_get_string_element(env, i);
    if (assignment == NULL || !cx_run_options_add_env(run, assignment)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "malformed env entry in a RUN request");
      return NULL;
    }
  }
  JsonArray *mime = cx__peer_get_array(cell, "mime_types");
  for (guint i = 0; mime != NULL && i < json_array_get_length(mime); i++) {
    const char *type = json_array_get_string_element(mime, i);
    if (type != NULL)
      cx_run_options_add_allowed_mime_type(run, type);
  }
  return g_steal_pointer(&run);
}

static void
send_error(channel_state *channel, const char *message)
{
  g_mutex_lock(&channel->write_lock);
  cx__wire_send_error(channel->channel, message, NULL);
  g_mutex_unlock(&channel->write_lock);
}

static void
bound_error(JsonObject *error, guint64 limit, JsonArray *truncated)
{
  cx__output_bound_string(error, "message", "message", limit, truncated);
  cx__output_bound_string(error, "traceback", "traceback", limit, truncated);
}

/* Bound the error message and traceback of the RESULT payload OBJECT as
 * outputs are (the cut listed in its "truncated" extra, under "error");
 * a result that still does not fit a frame becomes an error saying so,
 * never a frame the host would not get. */
static void
bound_result(guint64 limit, JsonObject *object)
{
  JsonObject *error = cx__peer_get_object(object, "error");
  g_autoptr(JsonArray) truncated = json_array_new();
  if (error != NULL)
    bound_error(error, limit, truncated);
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  gsize size = cx__wire_json_size(node);
  if (size > CX__WIRE_MAX_PAYLOAD && error != NULL) {
    bound_error(error, CX__WIRE_PART_MAX, truncated);
    size = cx__wire_json_size(node);
  }
  if (size > CX__WIRE_MAX_PAYLOAD) {
    /* Extras too large: keep only the error of it. */
    g_autoptr(GList) members = json_object_get_members(object);
    for (GList *l = members; l != NULL; l = l->next) {
      const char *key = l->data;
      if (!g_str_equal(key, "success") && !g_str_equal(key, "error") &&
          !g_str_equal(key, "stdout") && !g_str_equal(key, "stderr") &&
          !g_str_equal(key, "rich_outputs") && !g_str_equal(key, "outputs"))
        json_object_remove_member(object, key);
    }
    g_autofree char *message = g_strdup_printf(
      "the cell's result (%" G_GSIZE_FORMAT " bytes) is too large for the worker channel "
      "(%u MiB at most)", size, CX__WIRE_MAX_PAYLOAD / (1024 * 1024));
    JsonObject *replaced = json_object_new();
    json_object_set_string_member(replaced, "type", CX_ERROR_TYPE_OUTPUT_LIMIT);
    json_object_set_string_member(replaced, "message", message);
    g_autofree char *traceback = g_strdup_printf("OutputLimitExceeded: %s\n", message);
    json_object_set_string_member(replaced, "traceback", traceback);
    json_object_set_object_member(object, "error", replaced);
    json_object_remove_member(object, "error_output"); /* it was the old error's */
    json_object_set_boolean_member(object, "success", FALSE);
  }
  if (json_array_get_length(truncated) > 0) {
    JsonObject *extra = json_object_new();
    json_object_set_array_member(extra, "error", json_array_ref(truncated));
    json_object_set_object_member(object, "truncated", extra);
  }
}

/* The node form reads a NUL of the error's message and traceback as
 * U+FFFD; the frame carries them with CX_RESULT_NUL, which the frame's
 * writer gives as \u0000 and the host reads back (cx__wire_parse_result). */
static void
keep_error_nul(JsonObject *object, const cx_result *result)
{
  JsonObject *error = cx__peer_get_object(object, "error");
  const char *message = cx_result_get_error_message(result);
  const char *traceback = cx_result_get_error_traceback(result);
  if (error == NULL || message == NULL)
    return;
  if (strstr(message, CX_RESULT_NUL) != NULL)
    json_object_set_string_member(error, "message", message);
  if (traceback != NULL && strstr(traceback, CX_RESULT_NUL) != NULL)
    json_object_set_string_member(error, "traceback", traceback);
}

/* How the error of RESULT shows (cx_result_set_error_output), for the
 * host: "error_output" false when it has no error output, {"traceback":
 * [lines]} when those are not the error's traceback, cut at its line
 * breaks.  Lines longer in all than LIMIT (or a frame's part) are left to
 * the plain traceback, which bound_result() cuts. */
static void
set_error_output(JsonObject *object, const cx_result *result, guint64 limit)
{
  if (!cx_result_has_error(result))
    return;
  if (!cx_result_get_error_output_shown(result)) {
    json_object_set_boolean_member(object, "error_output", FALSE);
    return;
  }
  const char *const *lines = cx_result_get_error_output_traceback(result);
  if (lines == NULL)
    return;
  guint64 total = 0; /* each line with its break, as the text they make */
  JsonArray *array = json_array_new();
  for (const char *const *line = lines; *line != NULL; line++) {
    total += strlen(*line) + 1;
    json_array_add_string_element(array, *line);
  }
  g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), array);
  json_array_unref(array);
  if ((limit > 0 && total > limit) || cx__wire_json_size(node) > CX__WIRE_PART_MAX)
    return;
  JsonObject *output = json_object_new();
  json_object_set_member(output, "traceback", g_steal_pointer(&node));
  json_object_set_object_member(object, "error_output", output);
}

/* Send the output the streamer has not, then the result without it. */
static void
send_result(channel_state *channel, cx_result *result)
{
  g_mutex_lock(&channel->write_lock);
  cx__py_peek_finished(&channel->cursor, result, send_output_directly, channel);
  g_autoptr(JsonNode) node = cx_result_to_json_node(result);
  JsonObject *object = json_node_get_object(node);
  keep_error_nul(object, result);
  json_object_set_string_member(object, "stdout", "");
  json_object_set_string_member(object, "stderr", "");
  json_object_set_array_member(object, "rich_outputs", json_array_new());
  json_object_set_array_member(object, "outputs", json_array_new());
  set_error_output(object, result, channel->output_limit);
  bound_result(channel->output_limit, object);
  cx__wire_send_object(channel->channel, CX__WIRE_MSG_RESULT, json_object_ref(object), -1, NULL);
  g_mutex_unlock(&channel->write_lock);
}

/* Runs the cell CELL ({"code", "cwd", "env", "mime_types"}) and sends its
 * output and result.  SESSION NULL: a fresh namespace. */
static void
run_cell(channel_state *channel, JsonObject *cell, cx__py_session *session,
         const cx__worker_limits *limits)
{
  g_autoptr(GError) error = NULL;
  const char *code = cx__peer_get_string(cell, "code", NULL);
  g_autofree char *decoded = NULL;
  const char *encoded = cx__peer_get_string(cell, "code_base64", NULL);
  if (code == NULL && encoded != NULL) {
    /* Code that is not UTF-8: Python says what is wrong with it. */
    gsize len;
    guchar *bytes = g_base64_decode(encoded, &len);
    decoded = g_realloc(bytes, len + 1);
    decoded[len] = '\0';
    code = decoded;
  }
  if (code == NULL) {
    send_error(channel, "a RUN request without \"code\"");
    return;
  }
  g_autoptr(cx_run_options) run = run_options_from(cell, &error);
  if (run == NULL || !cx__worker_limits_arm_cpu(limits, session == NULL, &error)) {
    send_error(channel, error->message);
    return;
  }
  if (cx__peer_get_boolean(cell, "stdin", FALSE))
    cx_run_options_set_input_callback(run, ask_host, channel);
  cx_run_options_set_store_history(run, cx__peer_get_boolean(cell, "store_history", TRUE));
  channel->written[1] = channel->written[2] = 0;
  channel->limit_reported = FALSE;
  sig_atomic_t interrupts_before = cx__worker_interrupts;

  set_streaming(channel, TRUE);
  cx__worker_cell_running = 1;
  cx__worker_take_interrupt(); /* one that came since the request */
  /* Outputs other than the streams go to the host as events, in order. */
  cx__py_run_flags flags = CX__PY_RUN_CAPTURE_FDS | CX__PY_RUN_RECORD_EVENTS;
  g_autoptr(cx_result) result = cx__py_run_cell(channel, session, code, run, flags, &error);
  cx__worker_cell_running = 0;
  set_streaming(channel, FALSE);

  if (cx__worker_interrupts != interrupts_before)
    cx__py_discard_interrupt(); /* one that came after the cell's last bytecode */
  cx__worker_forget_interrupt(); /* and one that came after that */
  if (result != NULL)
    send_result(channel, result);
  else
    send_error(channel, error->message);
}

/* ---- A session ------------------------------------------------------------- */

typedef struct {
  channel_state *channel;
  cx__py_session *session;
  const cx__worker_limits *limits;
  cx__worker_executor *executor;
} session_state;

/* Run the cell of a RUN frame in the session; anything else is an error
 * the host hears of, and FALSE. */
static gboolean
serve_cell_frame(guint8 type, const guint8 *payload, gsize len, gpointer user_data)
{
  session_state *state = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node =
    type == CX__WIRE_MSG_RUN ? cx__wire_parse_object(payload, len, "RUN", &error) : NULL;
  if (node == NULL) {
    send_error(state->channel, error != NULL ? error->message : "unexpected message in a session");
    return FALSE;
  }
  run_cell(state->channel, json_node_get_object(node), state->session, state->limits);
  return TRUE;
}

/* ---- The process ------------------------------------------------------------- */

/* Make this fresh child of the fork server a process of its own. */
static void
become_cell_process(int channel, pid_t server)
{
  /* Its own process group: the host signals the cell and what it starts. */
  setpgid(0, 0);
  /* Die with the fork server (which dies with the host). */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != server)
    _exit(1);
  /* Adopt orphaned descendants, to kill them when the cell ends. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  /* Keep only stdio and the channel: not the control channel, nor the
   * channels of other cells. */
  if (channel != CHANNEL_FD) {
    dup2(channel, CHANNEL_FD);
    close(channel);
  }
  close_range(CHANNEL_FD + 1, ~0U, 0);

  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, NULL);
  catch_fatal_signals();
}

static void
discard_output(int stream, const char *data, gsize len, gpointer user_data)
{
}

/* Runs in a spare right after the fork, before any request: pays for the
 * copy-on-write faults every cell would take on the same pages, while no
 * caller waits.  So it takes the path of a cell that prints and has a
 * value: compiling (its source is not in the server's compile cache), the
 * captured streams, an execute_result event, and the result written as
 * send_result() writes it; then the real cell faults in a few pages only
 * (bench/README.md).  What it leaves behind is a compile cache entry;
 * every trace of its output goes with its result.  Capturing fds here also
 * makes the pipes and their reader thread while no process limit
 * (max-processes) stands in the way. */
static void
prewarm(void)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx__py_run_flags flags = CX__PY_RUN_CAPTURE_FDS | CX__PY_RUN_RECORD_EVENTS;
  g_autoptr(cx_result) result = cx__py_run_cell(NULL, NULL, "print(0)\n0", run, flags, NULL);
  if (result == NULL)
    return;
  cx__py_output_cursor cursor = { 0 };
  cx__py_peek_finished(&cursor, result, discard_output, NULL);
  cx__worker_warm_cell_paths(result);
}

void
cx__worker_warm_cell_paths(const cx_result *sample)
{
  static const char request[] = "{\"kind\":\"cell\",\"limits\":{},\"output_limit\":0,"
                                "\"cell\":{\"code\":\"None\",\"env\":[]}}";
  g_autoptr(JsonNode) parsed =
    cx__wire_parse_object((const guint8 *)request, sizeof request - 1, "RUN", NULL);
  if (sample == NULL)
    return;
  /* Written as cx__wire_send_object() writes it, to nowhere. */
  g_autoptr(JsonNode) result = cx_result_to_json_node(sample);
  (void)cx__wire_json_size(result);
}

/* Wait for the open request the server forwards: its payload, with the
 * cell's channel as descriptor.  NULL when the server is gone. */
static JsonNode *
receive_request(int server_socket, int *channel_fd, gint64 *host_pid)
{
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(server_socket);
  guint8 type;
  const guint8 *payload;
  gsize len;
  g_autoptr(GError) error = NULL;
  if (!cx__wire_read_blocking(reader, &type, &payload, &len, &error))
    return NULL;
  /* In the sandbox, the server first says which pid the host knows this
   * process by. */
  if (type == CX__WIRE_MSG_STARTED) {
    g_autoptr(JsonNode) pid = cx__wire_parse_object(payload, len, "STARTED", &error);
    if (pid == NULL)
      return NULL;
    *host_pid = cx__peer_get_int(json_node_get_object(pid), "pid", 0);
    if (!cx__wire_read_blocking(reader, &type, &payload, &len, &error))
      return NULL;
  }
  if (type != CX__WIRE_MSG_RUN)
    return NULL;
  *channel_fd = cx__wire_reader_take_fd(reader);
  if (*channel_fd < 0)
    return NULL;
  return cx__wire_parse_object(payload, len, "RUN", &error);
}

/* This process is a session's: serve its cells and executor requests
 * until the host closes the channel, then exit. */
static G_GNUC_NORETURN void
serve_session(channel_state *channel, cx__worker_limits *limits)
{
  g_autoptr(GError) error = NULL;
  cx__py_session *session = cx__py_session_new(&error);
  if (session == NULL) {
    send_error(channel, error->message);
    _exit(1);
  }
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(channel->channel);
  session_state state = { channel, session, limits, NULL };
  state.executor = cx__worker_executor_new(channel->channel, &channel->write_lock, reader, session,
                                           serve_cell_frame, &state);
  guint8 type;
  const guint8 *payload;
  gsize len;
  while (cx__wire_read_blocking(reader, &type, &payload, &len, &error)) {
    if (type == CX__WIRE_MSG_EXECUTOR_REQUEST)
      cx__worker_executor_serve(state.executor, payload, len);
    else if (!serve_cell_frame(type, payload, len, &state))
      break;
  }
  /* The host closed the session. */
  cx__worker_kill_descendants();
  _exit(0);
}

void
cx__worker_spare_main(int server_socket, pid_t server)
{
  /* Confined before the warm-up or any cell runs here (only Python's own
   * at-fork handlers ran, in cx__py_fork); first, for changing the user
   * clears the parent-death signal set below. */
  g_autoptr(GError) setup_error = NULL;
  gboolean confined = cx__worker_sandbox_confine(&setup_error);
  if (!confined)
    g_prefix_error(&setup_error, "isolation = sandbox: cannot confine the cell's process: ");
  confined = confined && cx__worker_private_cwd_enter(&setup_error);
  /* The server's socket sits where the channel will: nothing else stays open. */
  become_cell_process(server_socket, server);

  static channel_state channel;
  channel.channel = CHANNEL_FD;
  channel.pid = getpid();
  g_mutex_init(&channel.write_lock);
  g_mutex_init(&channel.state_lock);
  g_cond_init(&channel.state_changed);
  the_channel = &channel;
  /* The cells' own modules import, as in python3 (not in the server). */
  gboolean ready = confined && cx__py_set_cwd_importable(TRUE, &setup_error) &&
                   (cx__worker_sandbox_home() == NULL ||
                    cx__py_setenv("HOME", cx__worker_sandbox_home(), &setup_error));
  if (confined && !ready)
    g_prefix_error(&setup_error, "cannot set up the cell's process: ");
  if (ready) {
    /* While this is the only thread: later the kernel would make the first
     * cell wait for it (see the function). */
    cx__py_fdcapture_reserve();
    /* The streamer first: under a memory or process limit it might not start. */
    start_streamer(&channel);
    prewarm();
  }

  int channel_fd = -1;
  gint64 host_pid = channel.pid;
  g_autoptr(JsonNode) request_node = receive_request(CHANNEL_FD, &channel_fd, &host_pid);
  if (request_node == NULL)
    _exit(0); /* the server shut down, or its request was broken */
  cx__worker_forget_interrupt(); /* kept from before this cell was asked for */
  dup2(channel_fd, CHANNEL_FD); /* closes the server's socket */
  close(channel_fd);
  JsonObject *request = json_node_get_object(request_node);
  channel.output_limit =
    (guint64)MAX(cx__peer_get_int(request, "output_limit", 0), 0);

  JsonObject *started = json_object_new();
  json_object_set_int_member(started, "pid", host_pid);
  if (!cx__wire_send_object(channel.channel, CX__WIRE_MSG_STARTED, started, -1, NULL))
    _exit(0); /* the host gave up on this cell already */
  if (!ready) {
    send_error(&channel, setup_error->message);
    _exit(1);
  }

  g_autoptr(GError) error = NULL;
  cx__worker_limits limits;
  if (!cx__worker_limits_parse(cx__peer_get_object(request, "limits"), &limits, &error) ||
      !cx__worker_limits_apply(&limits, &error)) {
    send_error(&channel, error->message);
    _exit(1);
  }

  const char *kind = cx__peer_get_string(request, "kind", "");
  if (g_str_equal(kind, "cell")) {
    JsonObject *cell = cx__peer_get_object(request, "cell");
    if (cell != NULL)
      run_cell(&channel, cell, NULL, &limits);
    else
      send_error(&channel, "a cell request without \"cell\"");
    cx__worker_kill_descendants();
    _exit(0);
  }

  serve_session(&channel, &limits);
}
