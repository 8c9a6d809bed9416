/* plugins/jupyter: one execute_request, start to end.
 *
 * Sent on shell with stop_on_error false and allow_stdin false (input()
 * raises StdinNotImplementedError in the kernel, it never waits on us).
 * IOPub messages whose parent is this request become the result's
 * outputs as they come; the request is over once both its execute_reply
 * and its status: idle have arrived.  Meanwhile the kernel's life is
 * watched (its process through a pidfd, or the heartbeat for a kernel we
 * did not start) and the deadline kept: interrupt, then after the grace
 * period kill. */
#include "config.h"

#include <string.h>
#include <zmq.h>

#include "plugins/jupyter/kernel-private.h"

/* Heartbeat of an attached kernel while a cell runs: a ping every
 * HB_PERIOD after the last answer; dead when one is unanswered for
 * HB_TIMEOUT (jupyter_client's time_to_dead).  A kernel that dies is so
 * noticed within HB_TIMEOUT + HB_PERIOD: the heartbeat's 1 s and 100 ms. */
#define HB_PERIOD_US (100 * 1000)
#define HB_TIMEOUT_US (1000 * 1000)
/* Without a pidfd, how often the process is looked at. */
#define PROCESS_CHECK_US (10 * 1000)

char *
jk_strip_ansi(const char *text)
{
  static GRegex *ansi;
  if (g_once_init_enter(&ansi)) {
    /* Not G_REGEX_OPTIMIZE: PCRE's JIT code reads as uninitialised to memcheck. */
    GRegex *regex = g_regex_new("\x1b\\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\\\-_]", 0, 0, NULL);
    g_once_init_leave(&ansi, regex);
  }
  return g_regex_replace_literal(ansi, text, -1, 0, "", 0, NULL);
}

void
jk_exec_clear(jk_exec *exec)
{
  g_clear_pointer(&exec->reply, json_object_unref);
  g_clear_pointer(&exec->died_how, g_free);
}

/* DATA with only the MIME types RUN allows (a new reference). */
static JsonObject *
filtered(JsonObject *data, const cx_run_options *run)
{
  if (run == NULL || cx_run_options_get_allowed_mime_types(run) == NULL)
    return json_object_ref(data);
  JsonObject *kept = json_object_new();
  g_autoptr(GList) members = json_object_get_members(data);
  for (GList *m = members; m != NULL; m = m->next)
    if (cx_run_options_mime_allowed(run, m->data))
      json_object_set_member(kept, m->data, json_node_copy(json_object_get_member(data, m->data)));
  return kept;
}

static JsonObject *
object_member(JsonObject *object, const char *name)
{
  JsonNode *node = json_object_get_member(object, name);
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

static const char *
display_id_of(JsonObject *content)
{
  JsonObject *transient = object_member(content, "transient");
  return transient != NULL ? json_object_get_string_member_with_default(transient, "display_id", NULL)
                           : NULL;
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
    const char *line = json_node_get_string(json_array_get_element(lines, i));
    g_autofree char *plain = jk_strip_ansi(line ? line : "");
    if (i > 0 && text->len > 0 && text->str[text->len - 1] != '\n')
      g_string_append_c(text, '\n');
    g_string_append(text, plain);
  }
  return g_string_free(g_steal_pointer(&text), FALSE);
}

static void
save_error(jk_exec_state *state, JsonObject *content)
{
  g_free(state->ename);
  g_free(state->evalue);
  g_free(state->traceback);
  state->ename = g_strdup(json_object_get_string_member_with_default(content, "ename", "Error"));
  state->evalue = g_strdup(json_object_get_string_member_with_default(content, "evalue", ""));
  state->traceback = traceback_text(content);
}

/* One IOPub message of this request.  TRUE when it says idle. */
gboolean
jk_exec_handle_iopub(jk_exec_state *state, jk_message *m)
{
  cx_result *result = state->exec->result;
  const cx_run_options *run = state->exec->run;
  JsonObject *c = m->content;
  const char *type = m->msg_type;
  if (g_str_equal(type, "status"))
    return g_strcmp0(json_object_get_string_member_with_default(c, "execution_state", ""), "idle") == 0;
  if (g_str_equal(type, "error")) {
    save_error(state, c);
    return FALSE;
  }
  /* The cell's number comes before it runs: a kernel that dies running it
   * sends no reply to take it from. */
  if (g_str_equal(type, "execute_input")) {
    state->execution_count = json_object_get_int_member_with_default(c, "execution_count", 0);
    return FALSE;
  }
  if (result == NULL)
    return FALSE;
  JsonObject *data = object_member(c, "data");
  JsonObject *metadata = object_member(c, "metadata");
  if (g_str_equal(type, "stream")) {
    const char *text = json_object_get_string_member_with_default(c, "text", "");
    if (g_strcmp0(json_object_get_string_member_with_default(c, "name", ""), "stderr") == 0)
      cx_result_append_stderr(result, text, -1);
    else
      cx_result_append_stdout(result, text, -1);
  } else if (g_str_equal(type, "execute_result") && data != NULL) {
    g_autoptr(JsonObject) kept = filtered(data, run);
    if (json_object_get_size(kept) > 0)
      cx_result_add_execute_result(result, kept, metadata,
                                   json_object_get_int_member_with_default(c, "execution_count", 0));
  } else if (g_str_equal(type, "display_data") && data != NULL) {
    g_autoptr(JsonObject) kept = filtered(data, run);
    cx_result_add_display(result, kept, metadata, display_id_of(c));
  } else if (g_str_equal(type, "update_display_data") && data != NULL && display_id_of(c) != NULL) {
    g_autoptr(JsonObject) kept = filtered(data, run);
    cx_result_update_display(result, display_id_of(c), kept, metadata);
  } else if (g_str_equal(type, "clear_output")) {
    cx_result_clear_output(result, json_object_get_boolean_member_with_default(c, "wait", FALSE));
  }
  return FALSE;
}

const char *
jk_input_prompt(const jk_message *m, const char *msg_id)
{
  if (m == NULL || g_strcmp0(m->parent_id, msg_id) != 0 || !g_str_equal(m->msg_type, "input_request"))
    return NULL;
  return json_object_get_string_member_with_default(m->content, "prompt", "");
}

JsonObject *
jk_exec_input_reply(jk_exec *exec, const char *msg_id, jk_message *m)
{
  const char *prompt = exec->on_input != NULL ? jk_input_prompt(m, msg_id) : NULL;
  if (prompt == NULL)
    return NULL;
  g_autofree char *value = exec->on_input(prompt, msg_id, exec->input_data);
  JsonObject *reply = json_object_new();
  json_object_set_string_member(reply, "value", value != NULL ? value : "");
  return reply;
}

JsonObject *
jk_exec_request_content(const jk_exec *exec)
{
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
    const char *text = data != NULL ? json_object_get_string_member_with_default(data, "text/plain", NULL)
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

static void
finish_result(jk_exec_state *state, jk_exec_outcome outcome)
{
  jk_exec *exec = state->exec;
  if (exec->reply != NULL && state->ename == NULL &&
      g_strcmp0(json_object_get_string_member_with_default(exec->reply, "status", "ok"), "error") == 0)
    save_error(state, exec->reply);
  if (exec->result == NULL)
    return;
  if (exec->reply != NULL && json_object_has_member(exec->reply, "execution_count"))
    cx_result_set_extra(exec->result, "execution_count",
                        json_node_init_int(json_node_alloc(),
                                           json_object_get_int_member_with_default(exec->reply, "execution_count", 0)));
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
  if (outcome == JK_EXEC_TIMEOUT) {
    g_autofree char *message = g_strdup_printf(
      "cell exceeded its %g s timeout%s", exec->timeout,
      exec->killed ? "; it did not stop when interrupted, so its kernel was killed" : "");
    const char *traceback = state->traceback ? state->traceback : "";
    g_autofree char *told = g_strdup_printf("%s%sTimeoutError: %s\n", traceback,
                                            *traceback ? "\n" : "", message);
    cx_result_set_error(exec->result, "TimeoutError", message, told);
  } else if (outcome == JK_EXEC_DIED) {
    g_autofree char *message = g_strdup_printf(
      "the kernel died while running the cell (%s); the next call gets a new kernel",
      exec->died_how ? exec->died_how : "heartbeat lost");
    cx_result_set_error(exec->result, "KernelDied", message, "");
  } else if (state->ename != NULL) {
    cx_result_set_error(exec->result, state->ename, state->evalue, state->traceback);
  } else if (exec->reply != NULL &&
             g_strcmp0(json_object_get_string_member_with_default(exec->reply, "status", "ok"), "aborted") == 0) {
    cx_result_set_error(exec->result, "Aborted", "the kernel aborted the request", "");
  }
}

void
jk_exec_finish(jk_exec_state *state, jk_exec_outcome outcome)
{
  finish_result(state, outcome);
  g_clear_pointer(&state->ename, g_free);
  g_clear_pointer(&state->evalue, g_free);
  g_clear_pointer(&state->traceback, g_free);
}

jk_exec_outcome
jk_kernel_execute(jk_kernel *kernel, jk_exec *exec)
{
  if (kernel->gateway != NULL)
    return jk_gateway_execute(kernel, exec);
  jk_exec_state state = { exec, NULL, NULL, NULL };
  g_autofree char *msg_id = NULL;
  g_autoptr(JsonObject) content = jk_exec_request_content(exec);
  if (!jk_kernel_alive(kernel)) {
    exec->died_how = g_strdup(kernel->died_how ? kernel->died_how : "dead before the cell");
    jk_exec_finish(&state, JK_EXEC_DIED);
    return JK_EXEC_DIED;
  }
  if (!jk_message_send(kernel, JK_SHELL, "execute_request", content, &msg_id, NULL))
    return JK_EXEC_SEND_FAILED;

  gint64 start = g_get_monotonic_time();
  gint64 deadline = exec->timeout > 0 ? start + (gint64)(exec->timeout * G_USEC_PER_SEC) : G_MAXINT64;
  gint64 kill_at = G_MAXINT64, replied_at = 0;
  gint64 hb_sent = 0, hb_next = start + HB_PERIOD_US;
  gboolean attached = kernel->pid <= 0, hb_waiting = FALSE;
  gboolean idle = FALSE, timed_out = FALSE;
  jk_exec_outcome outcome = JK_EXEC_DONE;

  while (exec->reply == NULL || !idle) {
    gint64 now = g_get_monotonic_time();
    if (now >= deadline && !timed_out) {
      timed_out = TRUE;
      jk_kernel_interrupt(kernel, NULL);
      kill_at = now + (gint64)(exec->grace * G_USEC_PER_SEC);
    }
    if (now >= kill_at) {
      if (!attached) {
        jk_kernel_kill(kernel);
        exec->killed = TRUE;
      }
      outcome = JK_EXEC_TIMEOUT;
      break;
    }
    if (exec->reply != NULL && now - replied_at > JK_IDLE_AFTER_REPLY_US)
      break; /* the idle status was lost: the reply is the word that counts */
    if (attached) {
      if (hb_waiting && now - hb_sent > HB_TIMEOUT_US) {
        kernel->dead = TRUE;
        exec->died_how = g_strdup_printf("no heartbeat for %d ms", HB_TIMEOUT_US / 1000);
        outcome = JK_EXEC_DIED;
        break;
      }
      if (!hb_waiting && now >= hb_next) {
        hb_waiting = zmq_send(kernel->sockets[JK_HB], "ping", 4, ZMQ_DONTWAIT) == 4;
        hb_sent = now;
      }
    } else if (!jk_kernel_alive(kernel)) {
      exec->died_how = g_strdup(kernel->died_how);
      outcome = JK_EXEC_DIED;
      break;
    }

    gint64 wake = MIN(deadline, kill_at);
    if (exec->reply != NULL)
      wake = MIN(wake, replied_at + JK_IDLE_AFTER_REPLY_US);
    if (attached)
      wake = MIN(wake, hb_waiting ? hb_sent + HB_TIMEOUT_US : hb_next);
    else if (kernel->pidfd < 0)
      wake = MIN(wake, now + PROCESS_CHECK_US);
    long timeout_ms = wake == G_MAXINT64 ? -1 : (long)MAX(0, (wake - now + 999) / 1000);
    zmq_pollitem_t items[5] = {
      { kernel->sockets[JK_IOPUB], 0, ZMQ_POLLIN, 0 },
      { kernel->sockets[JK_SHELL], 0, ZMQ_POLLIN, 0 },
      { kernel->sockets[JK_STDIN], 0, ZMQ_POLLIN, 0 },
      { kernel->sockets[JK_HB], 0, ZMQ_POLLIN, 0 },
      { NULL, kernel->pidfd, ZMQ_POLLIN, 0 },
    };
    int n_items = 4 + (!attached && kernel->pidfd >= 0);
    if (zmq_poll(items, n_items, timeout_ms) < 0 && zmq_errno() != EINTR)
      g_usleep(1000);

    jk_message *m;
    jk_recv_status status;
    while ((status = jk_message_recv(kernel, JK_IOPUB, ZMQ_DONTWAIT, &m)) != JK_RECV_NONE) {
      if (m == NULL)
        continue;
      if (g_strcmp0(m->parent_id, msg_id) != 0) {
        /* Another request's: an earlier one of ours that ended late, or
         * another client's on a shared kernel.  Counted, never used. */
        if (!jk_kernel_sent_recently(kernel, m->parent_id) || !g_str_equal(m->msg_type, "status"))
          g_atomic_int_inc(&kernel->counters->wrong_parent);
      } else if (jk_exec_handle_iopub(&state, m)) {
        idle = TRUE;
      }
      jk_message_free(m);
    }
    while ((status = jk_message_recv(kernel, JK_SHELL, ZMQ_DONTWAIT, &m)) != JK_RECV_NONE) {
      if (m == NULL)
        continue;
      if (g_strcmp0(m->parent_id, msg_id) == 0 && g_str_equal(m->msg_type, "execute_reply")) {
        g_clear_pointer(&exec->reply, json_object_unref);
        exec->reply = json_object_ref(m->content);
        replied_at = g_get_monotonic_time();
      } else if (!jk_kernel_sent_recently(kernel, m->parent_id)) {
        g_atomic_int_inc(&kernel->counters->wrong_parent);
      }
      jk_message_free(m);
    }
    while ((status = jk_message_recv(kernel, JK_STDIN, ZMQ_DONTWAIT, &m)) != JK_RECV_NONE) {
      g_autoptr(JsonObject) reply = m != NULL ? jk_exec_input_reply(exec, msg_id, m) : NULL;
      if (reply != NULL)
        jk_message_send(kernel, JK_STDIN, "input_reply", reply, NULL, NULL);
      g_clear_pointer(&m, jk_message_free);
    }
    if (attached && hb_waiting && jk_message_recv(kernel, JK_HB, ZMQ_DONTWAIT, &m) == JK_RECV_OK) {
      hb_waiting = FALSE;
      hb_next = g_get_monotonic_time() + HB_PERIOD_US;
    }
  }
  if (outcome == JK_EXEC_DONE && timed_out)
    outcome = JK_EXEC_TIMEOUT;
  if (hb_waiting && outcome == JK_EXEC_DONE)
    jk_kernel_reopen_heartbeat(kernel); /* a REQ socket must not keep a ping unanswered */
  jk_exec_finish(&state, outcome);
  return outcome;
}

char *
jk_kernel_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value, double timeout,
                         GError **error)
{
  if (kernel->gateway != NULL)
    return jk_gateway_stdin_exchange(kernel, msg_id, value, timeout, error);
  g_autoptr(JsonObject) reply = json_object_new();
  json_object_set_string_member(reply, "value", value);
  if (!jk_message_send(kernel, JK_STDIN, "input_reply", reply, NULL, error))
    return NULL;
  gint64 deadline = timeout > 0 ? g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC) : G_MAXINT64;
  /* Only stdin is read here: IOPub and shell wait in their sockets for the
   * request's own loop. */
  while (g_get_monotonic_time() < deadline && jk_kernel_alive(kernel)) {
    zmq_pollitem_t item = { kernel->sockets[JK_STDIN], 0, ZMQ_POLLIN, 0 };
    zmq_poll(&item, 1, 20);
    jk_message *m;
    while (jk_message_recv(kernel, JK_STDIN, ZMQ_DONTWAIT, &m) != JK_RECV_NONE) {
      char *prompt = g_strdup(jk_input_prompt(m, msg_id));
      g_clear_pointer(&m, jk_message_free);
      if (prompt != NULL)
        return prompt;
    }
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel %s during a host function's call",
              jk_kernel_alive(kernel) ? "did not answer in time" : "died");
  return NULL;
}
