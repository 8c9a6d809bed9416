/* plugins/jupyter: one execute_request (or another shell request, waited
 * for the same way), start to end.
 *
 * Sent on shell with stop_on_error false, and allow_stdin false unless
 * the request has an input callback (jk_exec.on_input): without one,
 * input() raises StdinNotImplementedError in the kernel and never waits
 * on us.
 * IOPub messages whose parent is this request become the result's
 * outputs as they come (outputs.c); the request is over once both its
 * execute_reply and its status: idle have arrived.  Meanwhile the
 * kernel's life is watched (its process through a pidfd, or the heartbeat
 * for a kernel we did not start) and the deadline kept: interrupt, then
 * after the grace period kill. */
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
/* How long a cell that may ask for input waits for the stdin channel. */
#define STDIN_CONNECT_TIMEOUT_S 5.0
/* Messages read from one socket before the deadlines are looked at again:
 * a kernel that floods IOPub must not keep the loop from its timeout. */
#define RECV_BATCH 64
/* How long a cell's question waits for output still on its way (below). */
#define INPUT_CATCH_UP_MS 5

/* One execute_request's wait on the kernel's sockets. */
typedef struct {
  jk_kernel *kernel;
  jk_exec *exec;
  jk_exec_state *state;
  const char *msg_id;
  gint64 deadline, kill_at, replied_at;
  gint64 hb_sent, hb_next;  /* attached kernels: the heartbeat */
  gboolean attached, hb_waiting;
  gboolean idle, timed_out, iopub_drained;
} zmq_wait;

/* The deadlines, the grace and the kernel's life at NOW: FALSE when the
 * wait is over (*OUTCOME says why, or stays JK_EXEC_DONE). */
static gboolean
wait_goes_on(zmq_wait *w, gint64 now, jk_exec_outcome *outcome)
{
  jk_exec *exec = w->exec;
  jk_stop stop = jk_exec_stop_due(w->state, now, w->deadline);
  if (stop == JK_STOP_GIVE_UP) {
    *outcome = JK_EXEC_TIMEOUT;
    return FALSE;
  }
  if (stop == JK_STOP_INTERRUPT) {
    w->timed_out = TRUE;
    jk_zmq_interrupt(w->kernel, NULL);
    w->kill_at = now + (gint64)(exec->grace * G_USEC_PER_SEC);
    w->deadline = G_MAXINT64; /* passed: the loop now waits for kill_at */
  }
  if (now >= w->kill_at) {
    if (!w->attached) {
      jk_kernel_kill(w->kernel);
      exec->killed = TRUE;
    } else {
      exec->abandoned = TRUE;
    }
    *outcome = JK_EXEC_TIMEOUT;
    return FALSE;
  }
  if (exec->reply != NULL && jk_exec_idle_overdue(now - w->replied_at, w->iopub_drained)) {
    jk_exec_idle_lost(w->state); /* the reply is the word that counts, and says so */
    return FALSE;
  }
  if (w->attached) {
    if (w->hb_waiting && now - w->hb_sent > HB_TIMEOUT_US) {
      w->kernel->dead = TRUE;
      exec->died_how = g_strdup_printf("no heartbeat for %d ms", HB_TIMEOUT_US / 1000);
      *outcome = JK_EXEC_DIED;
      return FALSE;
    }
    if (!w->hb_waiting && now >= w->hb_next) {
      w->hb_waiting = zmq_send(w->kernel->sockets[JP_HB], "ping", 4, ZMQ_DONTWAIT) == 4;
      w->hb_sent = now;
    }
  } else if (!jk_kernel_alive(w->kernel)) {
    exec->died_how = g_strdup(w->kernel->died_how);
    *outcome = JK_EXEC_DIED;
    return FALSE;
  }
  return TRUE;
}

/* Sleep until a socket (or the kernel's pidfd) is readable or the next
 * thing to check is due. */
static void
wait_for_sockets(zmq_wait *w, gint64 now)
{
  jk_kernel *kernel = w->kernel;
  gint64 wake = MIN(w->deadline, w->kill_at);
  if (w->exec->reply != NULL)
    wake = MIN(wake, w->replied_at + JK_IDLE_AFTER_REPLY_US);
  if (w->attached)
    wake = MIN(wake, w->hb_waiting ? w->hb_sent + HB_TIMEOUT_US : w->hb_next);
  else if (kernel->pidfd < 0)
    wake = MIN(wake, now + PROCESS_CHECK_US);
  long timeout_ms = wake == G_MAXINT64 ? -1 : (long)MAX(0, (wake - now + 999) / 1000);
  zmq_pollitem_t items[5] = {
    { kernel->sockets[JP_IOPUB], 0, ZMQ_POLLIN, 0 },
    { kernel->sockets[JP_SHELL], 0, ZMQ_POLLIN, 0 },
    { kernel->sockets[JP_STDIN], 0, ZMQ_POLLIN, 0 },
    { kernel->sockets[JP_HB], 0, ZMQ_POLLIN, 0 },
    { NULL, kernel->pidfd, ZMQ_POLLIN, 0 },
  };
  int n_items = 4 + (!w->attached && kernel->pidfd >= 0);
  if (zmq_poll(items, n_items, timeout_ms) < 0 && zmq_errno() != EINTR)
    g_usleep(1000);
}

/* What came on IOPub, RECV_BATCH messages at most. */
static void
read_iopub(zmq_wait *w)
{
  jk_kernel *kernel = w->kernel;
  jp_message *m;
  int n_iopub = 0;
  for (; n_iopub < RECV_BATCH &&
         jk_message_recv(kernel, JP_IOPUB, ZMQ_DONTWAIT, &m) != JP_RECV_NONE;
       n_iopub++) {
    if (m == NULL)
      continue;
    if (g_strcmp0(m->parent_id, w->msg_id) != 0) {
      /* Another request's: an earlier one of ours that ended late, or
       * another client's on a shared kernel.  Counted, never used. */
      if (!jk_kernel_sent_recently(kernel, m->parent_id) || !g_str_equal(m->msg_type, "status"))
        g_atomic_int_inc(&kernel->counters->wrong_parent);
    } else if (jk_exec_handle_iopub(w->state, m)) {
      w->idle = TRUE;
    }
    jp_message_free(m);
  }
  w->iopub_drained = n_iopub < RECV_BATCH;
}

/* Before a cell's question goes to a caller that streams output, what the
 * cell wrote before asking: the kernel flushed it first (ipykernel does,
 * before any input_request), but on IOPub, another socket, which may not
 * have been read yet.  A moment's wait keeps output and questions in the
 * cell's order. */
static void
catch_up_on_iopub(zmq_wait *w, const jp_message *m)
{
  if (w->exec->run == NULL || jk_input_prompt(m, w->msg_id) == NULL ||
      cx_run_options_get_output_callback(w->exec->run, NULL) == NULL)
    return;
  zmq_pollitem_t item = { w->kernel->sockets[JP_IOPUB], 0, ZMQ_POLLIN, 0 };
  if (zmq_poll(&item, 1, INPUT_CATCH_UP_MS) > 0)
    read_iopub(w);
}

/* What came on IOPub, shell, stdin and the heartbeat, RECV_BATCH at most
 * from each. */
static void
read_sockets(zmq_wait *w)
{
  jk_kernel *kernel = w->kernel;
  jp_message *m;
  read_iopub(w);
  for (int n = 0;
       n < RECV_BATCH && jk_message_recv(kernel, JP_SHELL, ZMQ_DONTWAIT, &m) != JP_RECV_NONE; n++) {
    if (m == NULL)
      continue;
    if (g_strcmp0(m->parent_id, w->msg_id) == 0 && jk_exec_is_reply(w->exec, m->msg_type)) {
      if (m->too_large != NULL)
        jk_exec_unreadable(w->state, m);
      g_clear_pointer(&w->exec->reply, json_object_unref);
      w->exec->reply = json_object_ref(m->content);
      w->replied_at = g_get_monotonic_time();
    } else if (!jk_kernel_sent_recently(kernel, m->parent_id)) {
      g_atomic_int_inc(&kernel->counters->wrong_parent);
    }
    jp_message_free(m);
  }
  for (int n = 0;
       n < RECV_BATCH && jk_message_recv(kernel, JP_STDIN, ZMQ_DONTWAIT, &m) != JP_RECV_NONE; n++) {
    if (m != NULL && w->exec->on_input != NULL)
      catch_up_on_iopub(w, m);
    g_autoptr(JsonObject) reply = m != NULL ? jk_exec_input_reply(w->exec, w->msg_id, m) : NULL;
    if (reply != NULL)
      jk_message_send(kernel, JP_STDIN, "input_reply", reply, NULL, NULL);
    g_clear_pointer(&m, jp_message_free);
  }
  if (w->attached && w->hb_waiting &&
      jk_message_recv(kernel, JP_HB, ZMQ_DONTWAIT, &m) == JP_RECV_OK) {
    w->hb_waiting = FALSE;
    w->hb_next = g_get_monotonic_time() + HB_PERIOD_US;
  }
}

jk_exec_outcome
jk_zmq_execute(jk_kernel *kernel, jk_exec *exec)
{
  jk_exec_state state;
  jk_exec_begin(&state, exec);
  g_autofree char *msg_id = NULL;
  /* A kernel just started may not have met our stdin socket yet, and
   * would drop its input_request: the cell would wait for ever.  Without
   * the connection, input() fails at once in the kernel instead. */
  if (exec->on_input != NULL && !jk_kernel_stdin_ready(kernel, STDIN_CONNECT_TIMEOUT_S))
    exec->on_input = NULL;
  g_autoptr(JsonObject) content = jk_exec_request_content(exec);
  if (!jk_kernel_alive(kernel)) {
    exec->died_how = g_strdup(kernel->died_how ? kernel->died_how : "dead before the cell");
    jk_exec_finish(&state, JK_EXEC_DIED);
    return JK_EXEC_DIED;
  }
  if (!jk_message_send(kernel, JP_SHELL, jk_exec_request_type(exec), content, &msg_id, NULL)) {
    jk_exec_finish(&state, JK_EXEC_SEND_FAILED);
    return JK_EXEC_SEND_FAILED;
  }

  gint64 start = g_get_monotonic_time();
  zmq_wait w = {
    .kernel = kernel, .exec = exec, .state = &state, .msg_id = msg_id,
    .deadline = exec->timeout > 0 ? start + (gint64)(exec->timeout * G_USEC_PER_SEC) : G_MAXINT64,
    .kill_at = G_MAXINT64, .hb_next = start + HB_PERIOD_US,
    .attached = kernel->pid <= 0, .iopub_drained = TRUE,
  };
  jk_exec_outcome outcome = JK_EXEC_DONE;
  while (exec->reply == NULL || !w.idle) {
    gint64 now = g_get_monotonic_time();
    if (!wait_goes_on(&w, now, &outcome))
      break;
    wait_for_sockets(&w, now);
    read_sockets(&w);
  }
  /* A stream may pass the stop threshold in the read that brought the
   * reply: the cell is over, but it wrote more than it may. */
  if (outcome == JK_EXEC_DONE
      && (w.timed_out || jk_exec_stop_due(&state, 0, G_MAXINT64) != JK_STOP_NONE))
    outcome = JK_EXEC_TIMEOUT;
  if (w.hb_waiting && outcome == JK_EXEC_DONE)
    jk_kernel_reopen_heartbeat(kernel); /* a REQ socket must not keep a ping unanswered */
  jk_exec_finish(&state, outcome);
  return outcome;
}

char *
jk_zmq_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value, double timeout,
                      GError **error)
{
  g_autoptr(JsonObject) reply = json_object_new();
  json_object_set_string_member(reply, "value", value);
  if (!jk_message_send(kernel, JP_STDIN, "input_reply", reply, NULL, error))
    return NULL;
  gint64 deadline = timeout > 0 ? g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC) : G_MAXINT64;
  /* Only stdin is read here: IOPub and shell wait in their sockets for the
   * request's own loop. */
  while (g_get_monotonic_time() < deadline && jk_kernel_alive(kernel)) {
    zmq_pollitem_t item = { kernel->sockets[JP_STDIN], 0, ZMQ_POLLIN, 0 };
    zmq_poll(&item, 1, 20);
    jp_message *m;
    while (jk_message_recv(kernel, JP_STDIN, ZMQ_DONTWAIT, &m) != JP_RECV_NONE) {
      char *prompt = g_strdup(jk_input_prompt(m, msg_id));
      g_clear_pointer(&m, jp_message_free);
      if (prompt != NULL)
        return prompt;
    }
  }
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel %s during a host function's call",
              jk_kernel_alive(kernel) ? "did not answer in time" : "died");
  return NULL;
}

const jk_transport jk_zmq_transport = {
  .execute = jk_zmq_execute,
  .stdin_exchange = jk_zmq_stdin_exchange,
  .interrupt = jk_zmq_interrupt,
};
