/* kernel/requests.c: the requests of a Jupyter front end, answered by a
 * cellexec session (kernel.h). */
#include "config.h"

#include <string.h>

#include <gio/gio.h>

#include "jupyter_protocol/outputs.h"
#include "kernel/kernel.h"
#include "lib/peer_json.h"

/* What the shell queue holds besides requests: the end. */
static jp_message stop_marker;
/* What the stdin queue holds besides replies: stop waiting (an interrupt). */
static jp_message wake_marker;

struct cxk_kernel {
  cx_backend *backend;
  cx_session *session;
  GMutex session_lock;       /* session: replaced after a crash, interrupted from control */
  cxk_sink sink;
  GAsyncQueue *shell;        /* jp_message *, or &stop_marker */
  GThread *thread;
  gint64 execution_count;    /* the last cell's number */
  gint count_seen;           /* atomic: execution_count, for the other threads */
  gint busy;                 /* atomic: a shell request is being answered */
  JsonObject *language_info; /* kernel_info_reply's, made once */
  GAsyncQueue *stdin_replies; /* jp_message * from stdin, or &wake_marker */
  gint asking;               /* atomic: a cell waits for an input_reply */
  guint max_queued;          /* requests SHELL holds at most */
};

/* ---- Replies ------------------------------------------------------------------ */

static void
send_status(cxk_kernel *kernel, const jp_message *parent, const char *state)
{
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "execution_state", state);
  kernel->sink.send(kernel->sink.data, JP_IOPUB, parent, "status", content);
}

/* The reply type of request type TYPE: foo_request → foo_reply. */
static char *
reply_type(const char *type)
{
  gsize len = strlen(type);
  if (g_str_has_suffix(type, "_request"))
    len -= strlen("_request");
  return g_strdup_printf("%.*s_reply", (int)len, type);
}

static void
reply(cxk_kernel *kernel, int channel, const jp_message *request, JsonObject *content)
{
  g_autofree char *type = reply_type(request->msg_type);
  kernel->sink.send(kernel->sink.data, channel, request, type, content);
}

/* A request answered at once with CONTENT, between busy and idle as the
 * protocol wants every request to be. */
static void
reply_framed(cxk_kernel *kernel, int channel, const jp_message *request, JsonObject *content)
{
  send_status(kernel, request, "busy");
  reply(kernel, channel, request, content);
  send_status(kernel, request, "idle");
}

static JsonObject *
ok_content(void)
{
  JsonObject *content = json_object_new();
  json_object_set_string_member(content, "status", "ok");
  return content;
}

/* ---- kernel_info ---------------------------------------------------------------- */

/* The backend's Python version ("3.11.2"), from its "info"; "3" when it
 * does not say. */
static char *
python_version(cx_backend *backend)
{
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  JsonObject *object = info != NULL && JSON_NODE_HOLDS_OBJECT(info) ? json_node_get_object(info) : NULL;
  JsonObject *python = object != NULL ? cx__peer_get_object(object, "python") : NULL;
  const char *version = python != NULL ? cx__peer_get_string(python, "python_version", NULL) : NULL;
  return g_strdup(version != NULL ? version : "3");
}

static JsonObject *
language_info_new(cx_backend *backend)
{
  g_autofree char *version = python_version(backend);
  JsonObject *info = json_object_new();
  json_object_set_string_member(info, "name", "python");
  json_object_set_string_member(info, "version", version);
  json_object_set_string_member(info, "mimetype", "text/x-python");
  json_object_set_string_member(info, "file_extension", ".py");
  json_object_set_string_member(info, "pygments_lexer", "ipython3");
  JsonObject *codemirror = json_object_new();
  json_object_set_string_member(codemirror, "name", "ipython");
  json_object_set_int_member(codemirror, "version", 3);
  json_object_set_object_member(info, "codemirror_mode", codemirror);
  json_object_set_string_member(info, "nbconvert_exporter", "python");
  return info;
}

static JsonObject *
kernel_info_content(cxk_kernel *kernel)
{
  JsonObject *content = ok_content();
  json_object_set_string_member(content, "protocol_version", JP_PROTOCOL_VERSION);
  json_object_set_string_member(content, "implementation", "cellexec");
  json_object_set_string_member(content, "implementation_version", PACKAGE_VERSION);
  json_object_set_object_member(content, "language_info", json_object_ref(kernel->language_info));
  const char *python = cx__peer_get_string(kernel->language_info, "version", "3");
  g_autofree char *banner =
    g_strdup_printf("cellexec %s: Python %s on the %s backend\n", PACKAGE_VERSION, python,
                    cx_backend_get_name(kernel->backend));
  json_object_set_string_member(content, "banner", banner);
  JsonArray *links = json_array_new();
  JsonObject *link = json_object_new();
  json_object_set_string_member(link, "text", "cellexec");
  json_object_set_string_member(link, "url", "file://" CX_DOCDIR "/README.md");
  json_array_add_object_element(links, link);
  json_object_set_array_member(content, "help_links", links);
  return content;
}

/* ---- Answers from the session's interpreter ------------------------------------ */

/* The backend's answer to the request TYPE with CONTENT, or NULL where it
 * has none.  A front end asks these as the user types, so a failure is
 * said on stderr, never replied as an error. */
static JsonObject *
backend_answer(cxk_kernel *kernel, const char *type, JsonObject *content)
{
  g_autoptr(GError) error = NULL;
  JsonObject *answer = cx_session_request(kernel->session, type, content, &error);
  if (answer == NULL && !g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED))
    g_printerr("cellexec kernel: %s answered with nothing: %s\n", type, error->message);
  return answer;
}

/* execute_request's user_expressions, evaluated in the session after a
 * cell that succeeded, as ipykernel does; {} where the backend cannot. */
static JsonObject *
user_expressions(cxk_kernel *kernel, const jp_message *request)
{
  JsonObject *expressions = cx__peer_get_object(request->content, "user_expressions");
  if (expressions == NULL || json_object_get_size(expressions) == 0)
    return json_object_new();
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_object_member(content, "user_expressions", json_object_ref(expressions));
  g_autoptr(JsonObject) answer = backend_answer(kernel, CX_REQUEST_USER_EXPRESSIONS, content);
  JsonObject *values = cx__peer_get_object(answer, "user_expressions");
  return values != NULL ? json_object_ref(values) : json_object_new();
}

/* ---- execute -------------------------------------------------------------------- */

typedef struct {
  cxk_kernel *kernel;
  const jp_message *request;
  gboolean silent;
  gboolean for_comm;     /* a comm message's handler (deliver_comm_message) */
  JsonObject *last_error; /* the error output last sent to the sink, not yet sent */
} execution;

static void
send_last_error(execution *run)
{
  if (run->last_error == NULL)
    return;
  run->kernel->sink.send(run->kernel->sink.data, JP_IOPUB, run->request, "error",
                         run->last_error);
  g_clear_pointer(&run->last_error, json_object_unref);
}

static void
on_output(JsonObject *output, gpointer data)
{
  execution *run = data;
  const char *msg_type;
  g_autoptr(JsonObject) content = jp_iopub_of_output(output, &msg_type);
  if (content == NULL || (run->silent && g_str_equal(msg_type, "execute_result")))
    return;
  /* A comm handler's failure is the kernel's to log, as ipykernel logs
   * it: the front end sent no cell that could fail. */
  if (run->for_comm && g_str_equal(msg_type, "error"))
    return;
  send_last_error(run);
  /* An error output waits until the next output or the cell's end: when it
   * is the failure of a cell that took its session down, execute() adds
   * what happened to the session before it goes out. */
  if (g_str_equal(msg_type, "error")) {
    run->last_error = g_steal_pointer(&content);
    return;
  }
  run->kernel->sink.send(run->kernel->sink.data, JP_IOPUB, run->request, msg_type, content);
}

/* The options of a call for RUN: its outputs to on_output, with every NUL
 * a cell wrote kept, as ipykernel sends it (\u0000). */
static cx_run_options *
kernel_run_options(execution *run)
{
  cx_run_options *options = cx_run_options_new();
  cx_run_options_set_output_callback(options, on_output, run);
  cx_run_options_set_output_keeps_nul(options, TRUE);
  return options;
}

/* A cell's input(): an input_request to the front end on stdin, as a
 * child of the execute_request, and the value of its input_reply.  An
 * interrupt ends the wait (G_IO_ERROR_CANCELLED: KeyboardInterrupt in the
 * cell). */
static char *
ask_front_end(const char *prompt, gboolean password, gpointer data, GError **error)
{
  execution *run = data;
  cxk_kernel *kernel = run->kernel;
  jp_message *stale; /* replies to requests no cell waits for any more */
  while ((stale = g_async_queue_try_pop(kernel->stdin_replies)) != NULL)
    if (stale != &wake_marker)
      jp_message_free(stale);
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "prompt", prompt);
  json_object_set_boolean_member(content, "password", password);
  g_atomic_int_set(&kernel->asking, 1);
  kernel->sink.send(kernel->sink.data, JP_STDIN, run->request, "input_request", content);
  char *value = NULL;
  while (value == NULL) {
    jp_message *reply = g_async_queue_pop(kernel->stdin_replies);
    if (reply == &wake_marker) {
      g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                          "interrupted while waiting for input");
      break;
    }
    if (g_str_equal(reply->msg_type, "input_reply"))
      value = g_strdup(cx__peer_get_string(reply->content, "value", ""));
    jp_message_free(reply);
  }
  g_atomic_int_set(&kernel->asking, 0);
  return value;
}

/* Tell SESSION's interpreter that a front end uses it, in a cell of its
 * own kept out of the history: pyembed's shell then answers as
 * ipykernel's (its class name, its config, exit asking the front end to
 * end).  A real ipykernel behind the jupyter backend has no such module
 * and is one already. */
static void
face_front_end(cx_session *session)
{
  static const char code[] =
    "getattr(__import__('sys').modules.get('_cellexec_ipython'), 'serve_front_end', bool)()";
  g_autoptr(cx_run_options) options = cx_run_options_new();
  cx_run_options_set_store_history(options, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_session_run_cell(session, code, options, &error);
  if (result == NULL || !cx_result_get_success(result))
    g_printerr("cellexec kernel: the session's shell may not answer as ipykernel's: %s\n",
               result == NULL ? error->message : cx_result_get_error_message(result));
}

/* Replace a session a cell left untrustworthy; the sentence that says so,
 * for the front end (new). */
static char *
renew_session(cxk_kernel *kernel)
{
  g_autoptr(GError) error = NULL;
  cx_session *fresh = cx_session_open(kernel->backend, &error);
  g_mutex_lock(&kernel->session_lock);
  cx_session *old = kernel->session;
  kernel->session = fresh != NULL ? fresh : old;
  g_mutex_unlock(&kernel->session_lock);
  if (fresh == NULL)
    return g_strdup_printf("cellexec: the session was lost and no fresh one could be opened "
                           "(%s); restart the kernel\n", error->message);
  cx_session_close(old);
  face_front_end(fresh);
  kernel->execution_count = 0;
  g_atomic_int_set(&kernel->count_seen, 0);
  return g_strdup("cellexec: the kernel is still alive, with a fresh session: the state of the "
                  "cells before is gone; run them again\n");
}

static void
send_stderr(cxk_kernel *kernel, const jp_message *parent, const char *text)
{
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "name", "stderr");
  json_object_set_string_member(content, "text", text);
  kernel->sink.send(kernel->sink.data, JP_IOPUB, parent, "stream", content);
}

/* The error fields of a failed execute_reply: the traceback is LINES
 * (IPython's, as the error output shows it) when not NULL, else TEXT. */
static void
set_error_fields(JsonObject *content, const char *ename, const char *evalue,
                 const char *const *lines, const char *text)
{
  json_object_set_string_member(content, "status", "error");
  json_object_set_string_member(content, "ename", ename);
  json_object_set_string_member(content, "evalue", evalue);
  JsonArray *traceback = json_array_new();
  for (gsize i = 0; lines != NULL && lines[i] != NULL; i++)
    json_array_add_string_element(traceback, lines[i]);
  if (lines == NULL && text != NULL && *text != '\0')
    json_array_add_string_element(traceback, text);
  json_object_set_array_member(content, "traceback", traceback);
}

/* The traceback of a cell that took its session down (a crash, a time
 * limit): what the backend's says, or else ENAME and EVALUE as IPython
 * colours a line of them, then what became of the session (renewed here),
 * so that a front end shows why the cell ended and what follows. */
static char **
session_end_traceback(cxk_kernel *kernel, const cx_result *result, const char *ename,
                      const char *evalue)
{
  g_autoptr(GStrvBuilder) lines = g_strv_builder_new();
  const char *const *given = cx_result_get_error_output_traceback(result);
  const char *text = cx_result_get_error_traceback(result);
  if (given != NULL)
    g_strv_builder_addv(lines, (const char **)given);
  g_autofree char *line = g_strdup_printf("\x1b[0;31m%s\x1b[0m: %s", ename, evalue);
  if (given == NULL || given[0] == NULL)
    g_strv_builder_add(lines, text != NULL && *text != '\0' ? text : line);
  g_autofree char *note = renew_session(kernel);
  g_autofree char *note_line = g_strndup(note, strlen(note) - 1); /* a line: no newline */
  g_strv_builder_add(lines, note_line);
  return g_strv_builder_end(lines);
}

/* The error output RUN holds (made when it has none) with ENAME, EVALUE
 * and LINES. */
static void
set_last_error(execution *run, const char *ename, const char *evalue, const char *const *lines)
{
  if (run->last_error == NULL)
    run->last_error = json_object_new();
  json_object_set_string_member(run->last_error, "ename", ename);
  json_object_set_string_member(run->last_error, "evalue", evalue);
  JsonArray *traceback = json_array_new();
  for (gsize i = 0; lines[i] != NULL; i++)
    json_array_add_string_element(traceback, lines[i]);
  json_object_set_array_member(run->last_error, "traceback", traceback);
}

/* The cell's number from the backend's result, else the kernel's count. */
static gint64
number_of(cxk_kernel *kernel, const cx_result *result, gboolean counted)
{
  JsonNode *count = result != NULL ? cx_result_get_extra(result, "execution_count") : NULL;
  if (count != NULL && JSON_NODE_HOLDS_VALUE(count) && json_node_get_value_type(count) == G_TYPE_INT64)
    return json_node_get_int(count);
  return counted ? kernel->execution_count + 1 : kernel->execution_count;
}

/* What the shell queue holds now (jp_message *, &stop_marker included):
 * the requests behind a failed cell with stop_on_error, taken before its
 * reply goes out, so that one the front end sends once it has the reply
 * is never among them. */
static GPtrArray *
take_queued(cxk_kernel *kernel)
{
  GPtrArray *queued = g_ptr_array_new();
  jp_message *next;
  while ((next = g_async_queue_try_pop(kernel->shell)) != NULL)
    g_ptr_array_add(queued, next);
  return queued;
}

/* Run the execute_request REQUEST; FALSE when it failed.  *BEHIND gets
 * what was queued behind it when it failed with stop_on_error (else
 * stays NULL). */
static gboolean
execute(cxk_kernel *kernel, const jp_message *request, GPtrArray **behind)
{
  const char *code = cx__peer_get_string(request->content, "code", "");
  gboolean silent = cx__peer_get_boolean(request->content, "silent", FALSE);
  gboolean counted = !silent && cx__peer_get_boolean(request->content, "store_history", TRUE);
  if (!silent) {
    g_autoptr(JsonObject) input = json_object_new();
    json_object_set_string_member(input, "code", code);
    json_object_set_int_member(input, "execution_count", kernel->execution_count + 1);
    kernel->sink.send(kernel->sink.data, JP_IOPUB, request, "execute_input", input);
  }
  execution run = { kernel, request, silent };
  g_autoptr(cx_run_options) options = kernel_run_options(&run);
  cx_run_options_set_store_history(options, counted);
  /* Without allow_stdin, input() fails at once, as in ipykernel. */
  if (cx__peer_get_boolean(request->content, "allow_stdin", FALSE))
    cx_run_options_set_input_callback(options, ask_front_end, &run);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_session_run_cell(kernel->session, code, options, &error);
  gint64 number = number_of(kernel, result, counted);
  if (counted || number > kernel->execution_count)
    kernel->execution_count = number;
  g_atomic_int_set(&kernel->count_seen, (gint)MIN(kernel->execution_count, G_MAXINT));
  g_autoptr(JsonObject) content = ok_content();
  json_object_set_int_member(content, "execution_count", kernel->execution_count);
  if (result == NULL) {
    set_error_fields(content, "CellexecError", error->message, NULL, NULL);
    g_autofree char *line = g_strdup_printf("cellexec: %s\n", error->message);
    send_stderr(kernel, request, line);
  } else if (!cx_result_get_success(result)) {
    const char *ename = cx_result_has_error(result) ? cx_result_get_error_type(result) : "Error";
    const char *evalue = cx_result_has_error(result) ? cx_result_get_error_message(result) : "";
    if (cx_result_ends_session(result)) {
      g_auto(GStrv) lines = session_end_traceback(kernel, result, ename, evalue);
      set_error_fields(content, ename, evalue, (const char *const *)lines, NULL);
      set_last_error(&run, ename, evalue, (const char *const *)lines);
    } else {
      set_error_fields(content, ename, evalue, cx_result_get_error_output_traceback(result),
                       cx_result_get_error_traceback(result));
    }
  }
  send_last_error(&run);
  /* What the cell paged (`zip?`), the backend's "payload" extra, whatever
   * its outcome; user_expressions only after a success; both as ipykernel
   * replies. */
  JsonNode *payload = result != NULL ? cx_result_get_extra(result, "payload") : NULL;
  if (payload != NULL && JSON_NODE_HOLDS_ARRAY(payload))
    json_object_set_member(content, "payload", json_node_copy(payload));
  else
    json_object_set_array_member(content, "payload", json_array_new());
  gboolean ok = result != NULL && cx_result_get_success(result);
  json_object_set_object_member(content, "user_expressions",
                                ok ? user_expressions(kernel, request) : json_object_new());
  if (!ok && cx__peer_get_boolean(request->content, "stop_on_error", TRUE))
    *behind = take_queued(kernel);
  reply(kernel, JP_SHELL, request, content);
  return ok;
}

/* ---- Comms from the front end --------------------------------------------------- */

/* The comm message REQUEST (comm_open, comm_msg, comm_close from the front
 * end), handed to the comm manager of get_ipython().kernel in the
 * session's interpreter, as ipykernel's shell hands it: in a cell of its
 * own that stays out of the history, so that what the handler does
 * (prints, displays, sends on its comm) reaches IOPub as children of
 * REQUEST, under the backend's timeout and limits like any cell.  The same
 * code works in pyembed (local, subprocess) and in a real ipykernel
 * behind the jupyter backend.  No reply, as ipykernel sends none. */
static const char *const comm_messages[] = { "comm_open", "comm_msg", "comm_close", NULL };

static void
deliver_comm_message(cxk_kernel *kernel, const jp_message *request)
{
  g_autoptr(JsonObject) message = json_object_new();
  json_object_set_object_member(message, "header", json_object_ref(request->header));
  json_object_set_object_member(message, "parent_header",
                                request->parent != NULL ? json_object_ref(request->parent)
                                                        : json_object_new());
  json_object_set_object_member(message, "metadata",
                                request->metadata != NULL ? json_object_ref(request->metadata)
                                                          : json_object_new());
  json_object_set_object_member(message, "content", json_object_ref(request->content));
  json_object_set_array_member(message, "buffers", json_array_new());
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), message);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  /* Base64: no quoting of the message's text inside Python's. */
  g_autofree char *encoded = g_base64_encode((const guchar *)text, strlen(text));
  g_autofree char *code = g_strdup_printf(
    "get_ipython().kernel.comm_manager.%s(None, None, "
    "__import__('json').loads(__import__('base64').b64decode('%s')))",
    request->msg_type, encoded);
  execution run = { kernel, request, TRUE, TRUE };
  g_autoptr(cx_run_options) options = kernel_run_options(&run);
  cx_run_options_set_store_history(options, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_session_run_cell(kernel->session, code, options, &error);
  if (result == NULL || !cx_result_get_success(result))
    g_printerr("cellexec kernel: the session could not take a %s: %s\n", request->msg_type,
               result == NULL ? error->message
               : cx_result_has_error(result) ? cx_result_get_error_message(result)
                                             : "it failed");
  if (result != NULL && cx_result_ends_session(result)) {
    g_autofree char *note = renew_session(kernel);
    send_stderr(kernel, request, note);
  }
}

/* ---- The rest ------------------------------------------------------------------ */

/* What the requests beside execute get when the backend cannot answer
 * them: what ipykernel replies when it has nothing (no matches, not
 * found). */
static JsonObject *
empty_answer(const jp_message *request)
{
  JsonObject *content = ok_content();
  const char *type = request->msg_type;
  if (g_str_equal(type, "complete_request")) {
    gint64 cursor = cx__peer_get_int(request->content, "cursor_pos", 0);
    json_object_set_array_member(content, "matches", json_array_new());
    json_object_set_int_member(content, "cursor_start", cursor);
    json_object_set_int_member(content, "cursor_end", cursor);
    json_object_set_object_member(content, "metadata", json_object_new());
  } else if (g_str_equal(type, "inspect_request")) {
    json_object_set_boolean_member(content, "found", FALSE);
    json_object_set_object_member(content, "data", json_object_new());
    json_object_set_object_member(content, "metadata", json_object_new());
  } else if (g_str_equal(type, "is_complete_request")) {
    json_object_set_string_member(content, "status", "unknown");
  } else if (g_str_equal(type, "history_request")) {
    json_object_set_array_member(content, "history", json_array_new());
  } else if (g_str_equal(type, "comm_info_request")) {
    json_object_set_object_member(content, "comms", json_object_new());
  } else {
    json_object_unref(content);
    return NULL;
  }
  return content;
}

/* A request beside execute: answered by the backend in the session's
 * interpreter, or, where it cannot, as a kernel with nothing to offer
 * answers.  NULL for a type no kernel replies to. */
static JsonObject *
side_answer(cxk_kernel *kernel, const jp_message *request)
{
  JsonObject *answer = NULL;
  if (request->content != NULL && g_strv_contains(jp_session_requests, request->msg_type))
    answer = backend_answer(kernel, request->msg_type, request->content);
  return answer != NULL ? answer : empty_answer(request);
}

/* An execute_request queued behind a failed one with stop_on_error: not
 * run, as ipykernel aborts them. */
static void
abort_request(cxk_kernel *kernel, const jp_message *request)
{
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "status", "aborted");
  if (g_str_equal(request->msg_type, "execute_request"))
    json_object_set_int_member(content, "execution_count", kernel->execution_count);
  reply_framed(kernel, JP_SHELL, request, content);
}

/* Answer REQUEST on CHANNEL; *BEHIND (may be NULL on control) gets the
 * requests to abort behind an execute_request that failed (execute()). */
static void
answer(cxk_kernel *kernel, int channel, const jp_message *request, GPtrArray **behind)
{
  const char *type = request->msg_type;
  send_status(kernel, request, "busy");
  if (g_str_equal(type, "execute_request") && behind != NULL) {
    execute(kernel, request, behind);
  } else if (g_str_equal(type, "kernel_info_request")) {
    g_autoptr(JsonObject) content = kernel_info_content(kernel);
    reply(kernel, channel, request, content);
  } else if (g_str_equal(type, "shutdown_request")) {
    gboolean restart = cx__peer_get_boolean(request->content, "restart", FALSE);
    g_autoptr(JsonObject) content = ok_content();
    json_object_set_boolean_member(content, "restart", restart);
    reply(kernel, channel, request, content);
    kernel->sink.shutdown(kernel->sink.data, restart);
  } else if (g_str_equal(type, "interrupt_request")) {
    cxk_kernel_interrupt(kernel);
    g_autoptr(JsonObject) content = ok_content();
    reply(kernel, channel, request, content);
  } else if (channel == JP_SHELL && request->content != NULL
             && g_strv_contains(comm_messages, type)) {
    deliver_comm_message(kernel, request);
  } else {
    g_autoptr(JsonObject) content = side_answer(kernel, request);
    if (content != NULL)
      reply(kernel, channel, request, content);
    /* Unknown types: no reply, as ipykernel ignores them. */
  }
  send_status(kernel, request, "idle");
}

static gpointer
shell_thread(gpointer data)
{
  cxk_kernel *kernel = data;
  for (;;) {
    jp_message *request = g_async_queue_pop(kernel->shell);
    if (request == &stop_marker)
      return NULL;
    g_atomic_int_set(&kernel->busy, 1);
    g_autoptr(GPtrArray) behind = NULL;
    if (request->channel == JP_CONTROL)
      answer(kernel, JP_CONTROL, request, NULL); /* cxk_kernel_control() queued it */
    else
      answer(kernel, JP_SHELL, request, &behind);
    g_atomic_int_set(&kernel->busy, 0);
    jp_message_free(request);
    /* Abort the shell requests queued when the cell failed (what came later
     * runs); control's are answered, as they are not the cell's. */
    gboolean stop = FALSE;
    for (guint i = 0; behind != NULL && i < behind->len; i++) {
      jp_message *next = g_ptr_array_index(behind, i);
      if (next == &stop_marker) {
        stop = TRUE;
      } else {
        if (!stop && next->channel == JP_CONTROL)
          answer(kernel, JP_CONTROL, next, NULL);
        else if (!stop)
          abort_request(kernel, next);
        jp_message_free(next);
      }
    }
    if (stop)
      return NULL;
  }
}

/* ---- The kernel ---------------------------------------------------------------- */

cxk_kernel *
cxk_kernel_new(cx_backend *backend, const cxk_sink *sink, GError **error)
{
  cx_session *session = cx_session_open(backend, error);
  if (session == NULL)
    return NULL;
  face_front_end(session);
  cxk_kernel *kernel = g_new0(cxk_kernel, 1);
  kernel->backend = backend;
  kernel->session = session;
  g_mutex_init(&kernel->session_lock);
  kernel->sink = *sink;
  kernel->language_info = language_info_new(backend);
  kernel->shell = g_async_queue_new();
  kernel->max_queued = CXK_DEFAULT_MAX_QUEUED;
  kernel->stdin_replies = g_async_queue_new();
  kernel->thread = g_thread_new("cellexec-kernel", shell_thread, kernel);
  return kernel;
}

void
cxk_kernel_free(cxk_kernel *kernel)
{
  if (kernel == NULL)
    return;
  /* What waits goes now, not once the cell running has stopped. */
  jp_message *left;
  while ((left = g_async_queue_try_pop(kernel->shell)) != NULL)
    if (left != &stop_marker)
      jp_message_free(left);
  cxk_kernel_interrupt(kernel);
  g_async_queue_push_front(kernel->shell, &stop_marker);
  g_thread_join(kernel->thread);
  while ((left = g_async_queue_try_pop(kernel->shell)) != NULL)
    if (left != &stop_marker)
      jp_message_free(left);
  g_async_queue_unref(kernel->shell);
  while ((left = g_async_queue_try_pop(kernel->stdin_replies)) != NULL)
    if (left != &wake_marker)
      jp_message_free(left);
  g_async_queue_unref(kernel->stdin_replies);
  cx_session_close(kernel->session);
  g_mutex_clear(&kernel->session_lock);
  json_object_unref(kernel->language_info);
  g_free(kernel);
}

void
cxk_kernel_welcome(cxk_kernel *kernel)
{
  send_status(kernel, NULL, g_atomic_int_get(&kernel->busy) ? "busy" : "idle");
}

void
cxk_kernel_interrupt(cxk_kernel *kernel)
{
  /* The cell first, while it still waits: woken first, it could end and
   * the next cell start before the interrupt, which would then stop that
   * one instead. */
  gboolean asking = g_atomic_int_get(&kernel->asking);
  g_mutex_lock(&kernel->session_lock);
  cx_session_interrupt(kernel->session, NULL);
  g_mutex_unlock(&kernel->session_lock);
  if (asking)
    g_async_queue_push(kernel->stdin_replies, &wake_marker);
}

void
cxk_kernel_set_max_queued(cxk_kernel *kernel, guint max)
{
  kernel->max_queued = max > 0 ? max : CXK_DEFAULT_MAX_QUEUED;
}

/* Queue REQUEST (taken) for the kernel's thread, or, past max_queued,
 * answer it on CHANNEL with an error now, as a kernel may refuse work. */
static void
queue_request(cxk_kernel *kernel, int channel, jp_message *request)
{
  if (g_async_queue_length(kernel->shell) < (gint)kernel->max_queued) {
    g_async_queue_push(kernel->shell, request);
    return;
  }
  g_autoptr(JsonObject) content = json_object_new();
  g_autofree char *why = g_strdup_printf(
    "the kernel has %u requests queued, its limit: this one was not run; wait for their "
    "replies before sending more", kernel->max_queued);
  set_error_fields(content, "CellexecError", why, NULL, NULL);
  if (g_str_equal(request->msg_type, "execute_request"))
    json_object_set_int_member(content, "execution_count", g_atomic_int_get(&kernel->count_seen));
  reply_framed(kernel, channel, request, content);
  jp_message_free(request);
}

void
cxk_kernel_submit(cxk_kernel *kernel, jp_message *request)
{
  queue_request(kernel, JP_SHELL, request);
}

void
cxk_kernel_stdin(cxk_kernel *kernel, jp_message *message)
{
  if (g_atomic_int_get(&kernel->asking))
    g_async_queue_push(kernel->stdin_replies, message);
  else
    jp_message_free(message); /* nothing asked: nothing to answer */
}

void
cxk_kernel_control(cxk_kernel *kernel, jp_message *request)
{
  const char *type = request->msg_type;
  if (g_str_equal(type, "execute_request")) {
    /* Code on control would run beside the shell's cell: not here. */
    g_autoptr(JsonObject) content = json_object_new();
    set_error_fields(content, "CellexecError", "cellexec runs code sent on shell, not control", NULL,
                     NULL);
    reply_framed(kernel, JP_CONTROL, request, content);
    jp_message_free(request);
  } else if (g_str_equal(type, "interrupt_request") || g_str_equal(type, "shutdown_request") ||
             g_str_equal(type, "kernel_info_request")) {
    answer(kernel, JP_CONTROL, request, NULL);
    jp_message_free(request);
  } else {
    /* What the session answers waits for its lock, which a running cell
     * holds: the kernel's thread answers it, in turn, not the caller's,
     * which must go on reading (an input_reply, an interrupt). */
    request->channel = JP_CONTROL;
    queue_request(kernel, JP_CONTROL, request);
  }
}
