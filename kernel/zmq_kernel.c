/* kernel/zmq_kernel.c: a kernel on a connection file's ZeroMQ sockets.
 *
 * One thread (the caller's) owns the shell, control, stdin and IOPub
 * sockets, since ZeroMQ sockets belong to one thread: it receives the
 * requests, answers control ones itself, queues shell ones for the
 * kernel's thread, and sends what the other threads give it through an
 * inproc "outbox" socket.  The heartbeat is echoed by its own thread
 * (on the REP socket), so a busy kernel still answers it.  What a peer
 * sends on any socket is bounded before it is looked at (receive_frames). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "jupyter_protocol/zmq_frames.h"
#include "kernel/kernel.h"
#include "kernel/zmq_kernel.h"
#include "lib/peer_json.h"

#define OUTBOX "inproc://cellexec-kernel-outbox"
/* The outbox's first frame: the channel, or this when serving must end. */
#define OUTBOX_STOP 0xFF
/* How long closing waits for the last replies to leave (ms). */
#define LINGER_MS 1000

typedef struct {
  void *zmq;
  void *sockets[JP_N_CHANNELS];
  void *outbox_in, *outbox_out; /* other threads send on _in, under outbox_lock */
  GMutex outbox_lock;
  GThread *io_thread;
  GThread *heartbeat;
  void *heartbeat_socket;      /* the heartbeat thread's, once it runs */
  char *key;
  char *session;               /* this kernel's session id, in every header */
  jp_zmq_bounds bounds;        /* on every message a peer sends */
  jp_counters counters;
  gboolean stopping;           /* a shutdown was answered, or SIGTERM came */
  gint kernel_freed;           /* atomic: cxk_kernel_free() returned */
} zmq_kernel;

/* ---- The connection file -------------------------------------------------------- */

static const char *const port_names[JP_N_CHANNELS] = { "shell_port", "iopub_port", "stdin_port",
                                                       "control_port", "hb_port" };

/* Bind S's sockets to what the connection file FILE names. */
static gboolean
bind_sockets(zmq_kernel *s, const char *file, GError **error)
{
  g_autoptr(GError) read_error = NULL;
  g_autoptr(JsonNode) root = jp_json_from_file(file, &read_error);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "connection file %s: %s", file,
                read_error != NULL ? read_error->message : "not a JSON object");
    return FALSE;
  }
  JsonObject *c = json_node_get_object(root);
  const char *transport = cx__peer_get_string(c, "transport", "tcp");
  const char *ip = cx__peer_get_string(c, "ip", "127.0.0.1");
  const char *scheme = cx__peer_get_string(c, "signature_scheme", "hmac-sha256");
  if (!g_str_equal(transport, "tcp") && !g_str_equal(transport, "ipc")) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "connection file %s: transport \"%s\" is neither tcp nor ipc", file, transport);
    return FALSE;
  }
  if (!g_str_equal(scheme, "hmac-sha256")) {
    g_set_error(error, CX_ERROR, CX_ERROR_CONFIG,
                "connection file %s: signature_scheme \"%s\" is not supported; use hmac-sha256",
                file, scheme);
    return FALSE;
  }
  s->key = g_strdup(cx__peer_get_string(c, "key", ""));
  /* IOPub is an XPUB, so that a front end's subscription is seen: it is
   * told the kernel's state at once, since what was published before its
   * subscription reached us is lost to it (jupyter_client's
   * wait_for_ready() starts over when no IOPub message follows its
   * kernel_info_reply). */
  static const int types[JP_N_CHANNELS] = { ZMQ_ROUTER, ZMQ_XPUB, ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_REP };
  for (int i = 0; i < JP_N_CHANNELS; i++) {
    gint64 port = cx__peer_get_int(c, port_names[i], -1);
    if (port <= 0 || port > 65535) {
      g_set_error(error, CX_ERROR, CX_ERROR_CONFIG, "connection file %s: no valid %s", file,
                  port_names[i]);
      return FALSE;
    }
    g_autofree char *endpoint = g_str_equal(transport, "tcp")
                                  ? g_strdup_printf("tcp://%s:%" G_GINT64_FORMAT, ip, port)
                                  : g_strdup_printf("ipc://%s-%" G_GINT64_FORMAT, ip, port);
    s->sockets[i] = zmq_socket(s->zmq, types[i]);
    int linger = LINGER_MS, verbose = 1;
    zmq_setsockopt(s->sockets[i], ZMQ_LINGER, &linger, sizeof linger);
    jp_zmq_set_max_frame_size(s->sockets[i], &s->bounds);
    if (types[i] == ZMQ_XPUB) /* every subscription, not only a topic's first */
      zmq_setsockopt(s->sockets[i], ZMQ_XPUB_VERBOSE, &verbose, sizeof verbose);
    if (zmq_bind(s->sockets[i], endpoint) != 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot listen on %s (%s): %s", endpoint,
                  jp_channel_names[i], zmq_strerror(zmq_errno()));
      return FALSE;
    }
  }
  return TRUE;
}

/* ---- Sending ---------------------------------------------------------------------- */

static void
sink_send(gpointer data, int channel, const jp_message *parent, const char *msg_type,
          JsonObject *content)
{
  zmq_kernel *s = data;
  g_autofree char *msg_id = NULL;
  g_autoptr(JsonObject) header = jp_header_new(s->session, "kernel", msg_type, &msg_id);
  g_autoptr(GPtrArray) topic = NULL;
  GPtrArray *identities = parent != NULL ? parent->identities : NULL;
  if (channel == JP_IOPUB) {
    /* Subscribers filter on the first frame: ipykernel's topic form. */
    g_autofree char *name = g_strdup_printf("kernel.%s.%s", s->session, msg_type);
    topic = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_ptr_array_add(topic, g_bytes_new(name, strlen(name)));
    identities = topic;
  }
  g_autoptr(GPtrArray) frames = jp_message_encode(s->key, identities, header,
                                                  parent != NULL ? parent->header_json : NULL,
                                                  NULL, content);
  if (g_thread_self() == s->io_thread) {
    jp_zmq_send_frames(s->sockets[channel], frames);
    return;
  }
  guint8 which = (guint8)channel;
  g_ptr_array_insert(frames, 0, g_bytes_new(&which, 1));
  g_mutex_lock(&s->outbox_lock);
  jp_zmq_send_frames(s->outbox_in, frames);
  g_mutex_unlock(&s->outbox_lock);
}

static void
sink_shutdown(gpointer data, gboolean restart)
{
  (void)restart; /* jupyter_client starts a new process to restart */
  zmq_kernel *s = data;
  if (g_thread_self() == s->io_thread) {
    s->stopping = TRUE;
    return;
  }
  guint8 stop = OUTBOX_STOP;
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_ptr_array_add(frames, g_bytes_new(&stop, 1));
  g_mutex_lock(&s->outbox_lock);
  jp_zmq_send_frames(s->outbox_in, frames);
  g_mutex_unlock(&s->outbox_lock);
}

/* Send what waits in the outbox; FLAGS 0 waits for one message. */
static void
forward_outbox(zmq_kernel *s, int flags)
{
  GPtrArray *frames;
  while ((frames = jp_zmq_recv_frames(s->outbox_out, flags)) != NULL) {
    flags = ZMQ_DONTWAIT;
    gsize len;
    const guint8 *which = g_bytes_get_data(frames->pdata[0], &len);
    if (len == 1 && *which == OUTBOX_STOP) {
      s->stopping = TRUE;
    } else if (len == 1 && *which < JP_N_CHANNELS) {
      int channel = *which;
      g_ptr_array_remove_index(frames, 0);
      jp_zmq_send_frames(s->sockets[channel], frames);
    }
    g_ptr_array_unref(frames);
  }
}

/* ---- Receiving -------------------------------------------------------------------- */

static void
say_dropped(zmq_kernel *s, int channel, const char *why)
{
  g_printerr("cellexec kernel: a message on %s was dropped (%s; %d so far)\n",
             jp_channel_names[channel], why,
             g_atomic_int_get(&s->counters.bad_signature) +
               g_atomic_int_get(&s->counters.malformed) +
               g_atomic_int_get(&s->counters.oversized));
}

/* The next message on SOCKET, CHANNEL's, within the bounds: its frames,
 * or NULL (nothing, FLAGS ZMQ_DONTWAIT; or dropped, *DROPPED set: counted
 * and said on stderr).  Frames are counted and thrown away as they are
 * read, before any signature is checked, so a peer without the key makes
 * the kernel hold no more than the bounds.  Any thread. */
static GPtrArray *
receive_frames(zmq_kernel *s, void *socket, int channel, int flags, gboolean *dropped)
{
  GPtrArray *frames = jp_zmq_recv_frames_within(socket, flags, &s->bounds, dropped);
  if (*dropped) {
    g_atomic_int_inc(&s->counters.oversized);
    say_dropped(s, channel, "over --max-frames or --max-message");
  }
  return frames;
}

/* The next message on CHANNEL, verified, or NULL (nothing, or dropped:
 * counted and said on stderr). */
static jp_message *
receive(zmq_kernel *s, int channel)
{
  gboolean dropped;
  g_autoptr(GPtrArray) frames =
    receive_frames(s, s->sockets[channel], channel, ZMQ_DONTWAIT, &dropped);
  if (frames == NULL)
    return NULL;
  jp_message *message = NULL;
  if (jp_message_decode(s->key, frames, &s->counters, &message) != JP_RECV_OK) {
    say_dropped(s, channel, "bad signature or not a Jupyter message");
    return NULL;
  }
  if (message->too_large != NULL) {
    /* A front end's request too large to read: not one to act on as {}. */
    g_printerr("cellexec kernel: a %s message on %s was dropped: %s\n", message->msg_type,
               jp_channel_names[channel], message->too_large);
    g_clear_pointer(&message, jp_message_free);
    return NULL;
  }
  return message;
}

/* Tell each front end that subscribed to IOPub the kernel's state. */
static void
welcome_subscribers(zmq_kernel *s, cxk_kernel *kernel)
{
  GPtrArray *frames;
  gboolean dropped;
  while ((frames = receive_frames(s, s->sockets[JP_IOPUB], JP_IOPUB, ZMQ_DONTWAIT, &dropped)) !=
         NULL) {
    gsize len;
    const guint8 *event = g_bytes_get_data(frames->pdata[0], &len);
    if (len >= 1 && event[0] == 1) /* a subscription (0: one ending) */
      cxk_kernel_welcome(kernel);
    g_ptr_array_unref(frames);
  }
}

/* Echo each heartbeat on the REP socket S->heartbeat_socket, within the
 * bounds: one over them has an empty reply, which lets REP read the next.
 * Returns once the context is shut down. */
static gpointer
heartbeat_thread(gpointer data)
{
  zmq_kernel *s = data;
  for (;;) {
    gboolean dropped;
    g_autoptr(GPtrArray) frames = receive_frames(s, s->heartbeat_socket, JP_HB, 0, &dropped);
    if (frames != NULL)
      jp_zmq_send_frames(s->heartbeat_socket, frames);
    else if (dropped)
      zmq_send(s->heartbeat_socket, "", 0, 0);
    else if (zmq_errno() != EINTR)
      break;
  }
  zmq_close(s->heartbeat_socket);
  return NULL;
}

static gpointer
free_kernel_thread(gpointer data)
{
  gpointer *args = data;
  cxk_kernel_free(args[0]);
  g_atomic_int_set(&((zmq_kernel *)args[1])->kernel_freed, 1);
  return NULL;
}

/* The process that started the kernel, when it says so: jupyter_client
 * sets JPY_PARENT_PID.  A kernel whose front end died without shutting it
 * down ends (as ipykernel's parent poller does), instead of living on as
 * an orphan with its workers. */
static pid_t
front_end_pid(void)
{
  const char *text = g_getenv("JPY_PARENT_PID");
  gint64 pid = text != NULL ? g_ascii_strtoll(text, NULL, 10) : 0;
  return pid > 1 && pid == getppid() ? (pid_t)pid : 0;
}

/* Serve KERNEL until it is told to stop. */
static void
serve(zmq_kernel *s, cxk_kernel *kernel, int signal_fd)
{
  pid_t parent = front_end_pid();
  zmq_pollitem_t items[] = {
    { s->sockets[JP_SHELL], 0, ZMQ_POLLIN, 0 },
    { s->sockets[JP_CONTROL], 0, ZMQ_POLLIN, 0 },
    { s->sockets[JP_STDIN], 0, ZMQ_POLLIN, 0 },
    { s->outbox_out, 0, ZMQ_POLLIN, 0 },
    { s->sockets[JP_IOPUB], 0, ZMQ_POLLIN, 0 },
    { NULL, signal_fd, ZMQ_POLLIN, 0 },
  };
  int n_items = signal_fd >= 0 ? 6 : 5;
  while (!s->stopping) {
    if (parent != 0 && getppid() != parent) {
      g_printerr("cellexec kernel: the process that started it (%d) is gone: ending\n",
                 (int)parent);
      return;
    }
    if (zmq_poll(items, n_items, parent != 0 ? 1000 : -1) < 0) {
      if (zmq_errno() == EINTR)
        continue;
      g_printerr("cellexec kernel: %s\n", zmq_strerror(zmq_errno()));
      return;
    }
    jp_message *m;
    if (items[1].revents & ZMQ_POLLIN)
      while (!s->stopping && (m = receive(s, JP_CONTROL)) != NULL) {
        cxk_kernel_control(kernel, m);
      }
    if (items[0].revents & ZMQ_POLLIN)
      while ((m = receive(s, JP_SHELL)) != NULL)
        cxk_kernel_submit(kernel, m);
    if (items[2].revents & ZMQ_POLLIN)
      while ((m = receive(s, JP_STDIN)) != NULL)
        cxk_kernel_stdin(kernel, m);
    if (items[3].revents & ZMQ_POLLIN)
      forward_outbox(s, ZMQ_DONTWAIT);
    if (items[4].revents & ZMQ_POLLIN)
      welcome_subscribers(s, kernel);
    if (n_items == 6 && (items[5].revents & ZMQ_POLLIN)) {
      char what = 0;
      if (read(signal_fd, &what, 1) == 1 && what == 'i') {
        cxk_kernel_interrupt(kernel);
      } else if (what == 't') {
        s->stopping = TRUE;
      }
    }
  }
}

gboolean
cxk_zmq_serve(const char *connection_file, const jp_zmq_bounds *bounds,
              cxk_backend_opener open_backend, gpointer data, int signal_fd, GError **error)
{
  zmq_kernel s = { 0 };
  s.bounds = *bounds;
  s.zmq = zmq_ctx_new();
  s.session = g_uuid_string_random();
  s.io_thread = g_thread_self();
  g_mutex_init(&s.outbox_lock);
  gboolean ok = bind_sockets(&s, connection_file, error);
  cxk_kernel *kernel = NULL;
  if (ok) {
    s.outbox_out = zmq_socket(s.zmq, ZMQ_PAIR);
    s.outbox_in = zmq_socket(s.zmq, ZMQ_PAIR);
    ok = zmq_bind(s.outbox_out, OUTBOX) == 0 && zmq_connect(s.outbox_in, OUTBOX) == 0;
    if (!ok)
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot open the kernel's outbox: %s",
                  zmq_strerror(zmq_errno()));
  }
  cx_backend *backend = ok ? open_backend(data, error) : NULL;
  ok = backend != NULL;
  if (ok) {
    cxk_sink sink = { sink_send, sink_shutdown, &s };
    kernel = cxk_kernel_new(backend, &sink, error);
    ok = kernel != NULL;
  }
  if (ok) {
    s.heartbeat_socket = s.sockets[JP_HB];
    s.sockets[JP_HB] = NULL;
    s.heartbeat = g_thread_new("cellexec-heartbeat", heartbeat_thread, &s);
    serve(&s, kernel, signal_fd);
    /* The kernel's thread may still send while it ends: keep forwarding. */
    gpointer args[2] = { kernel, &s };
    GThread *freeing = g_thread_new("cellexec-kernel-end", free_kernel_thread, args);
    while (!g_atomic_int_get(&s.kernel_freed)) {
      zmq_pollitem_t outbox = { s.outbox_out, 0, ZMQ_POLLIN, 0 };
      if (zmq_poll(&outbox, 1, 50) > 0)
        forward_outbox(&s, ZMQ_DONTWAIT);
    }
    g_thread_join(freeing);
    forward_outbox(&s, ZMQ_DONTWAIT);
  }
  zmq_ctx_shutdown(s.zmq);
  if (s.heartbeat != NULL)
    g_thread_join(s.heartbeat);
  for (int i = 0; i < JP_N_CHANNELS; i++)
    if (s.sockets[i] != NULL)
      zmq_close(s.sockets[i]);
  if (s.outbox_in != NULL)
    zmq_close(s.outbox_in);
  if (s.outbox_out != NULL)
    zmq_close(s.outbox_out);
  zmq_ctx_term(s.zmq);
  g_mutex_clear(&s.outbox_lock);
  g_free(s.key);
  g_free(s.session);
  return ok;
}
