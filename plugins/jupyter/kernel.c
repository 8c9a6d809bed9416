/* plugins/jupyter: a kernel's life (ports, connection file, process) and
 * its five channels; its kernelspec is found by kernelspec.c.  Messages are signed and checked in
 * message.c; one execute_request is run by execute.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <zmq.h>

#include "plugins/jupyter/kernel-private.h"

/* ---- Ports -------------------------------------------------------------------- */

/* Ports handed to kernels of this process that are still alive: two
 * kernels started at once never get the same one.  Another process may
 * still take a port between our probe and the kernel's bind; the kernel
 * then exits at once and the launch is retried with new ports. */
static GMutex ports_lock;
static GHashTable *ports_taken;

static int
probe_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

static gboolean
reserve_ports(int ports[JP_N_CHANNELS], GError **error)
{
  g_mutex_lock(&ports_lock);
  if (ports_taken == NULL)
    ports_taken = g_hash_table_new(NULL, NULL);
  int n = 0;
  for (int tries = 0; n < JP_N_CHANNELS && tries < 200; tries++) {
    int port = probe_port();
    if (port <= 0 || g_hash_table_contains(ports_taken, GINT_TO_POINTER(port)))
      continue;
    g_hash_table_add(ports_taken, GINT_TO_POINTER(port));
    ports[n++] = port;
  }
  if (n < JP_N_CHANNELS) {
    for (int i = 0; i < n; i++)
      g_hash_table_remove(ports_taken, GINT_TO_POINTER(ports[i]));
    g_mutex_unlock(&ports_lock);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: no free TCP ports on 127.0.0.1");
    return FALSE;
  }
  g_mutex_unlock(&ports_lock);
  return TRUE;
}

static void
release_ports(const int ports[JP_N_CHANNELS])
{
  g_mutex_lock(&ports_lock);
  for (int i = 0; i < JP_N_CHANNELS; i++)
    if (ports[i] > 0 && ports_taken != NULL)
      g_hash_table_remove(ports_taken, GINT_TO_POINTER(ports[i]));
  g_mutex_unlock(&ports_lock);
}

/* ---- Connection files ------------------------------------------------------------ */

static const char *const channel_names[JP_N_CHANNELS] = {
  "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"
};

static char *
runtime_dir(void)
{
  const char *dir = g_getenv("JUPYTER_RUNTIME_DIR");
  if (dir != NULL && *dir != '\0')
    return g_strdup(dir);
  return g_build_filename(g_get_user_runtime_dir(), "cellexec-jupyter", NULL);
}

static gboolean
write_connection_file(jk_kernel *kernel, GError **error)
{
  g_autofree char *dir = runtime_dir();
  if (g_mkdir_with_parents(dir, 0700) < 0) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot create %s: %s", dir,
                g_strerror(saved));
    return FALSE;
  }
  g_autofree char *id = g_uuid_string_random();
  kernel->connection_file = g_strdup_printf("%s/kernel-cellexec-%s.json", dir, id);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  for (int i = 0; i < JP_N_CHANNELS; i++) {
    json_builder_set_member_name(b, channel_names[i]);
    json_builder_add_int_value(b, kernel->ports[i]);
  }
  json_builder_set_member_name(b, "ip");
  json_builder_add_string_value(b, kernel->ip);
  json_builder_set_member_name(b, "key");
  json_builder_add_string_value(b, kernel->key);
  json_builder_set_member_name(b, "transport");
  json_builder_add_string_value(b, "tcp");
  json_builder_set_member_name(b, "signature_scheme");
  json_builder_add_string_value(b, "hmac-sha256");
  json_builder_set_member_name(b, "kernel_name");
  json_builder_add_string_value(b, kernel->spec_name ? kernel->spec_name : "");
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = cx_json_to_string(root, TRUE);
  /* 0600 from the start: the key is a password. */
  int fd = open(kernel->connection_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  gsize len = strlen(text);
  gboolean ok = fd >= 0 && write(fd, text, len) == (gssize)len;
  int saved = errno;
  if (fd >= 0)
    close(fd);
  if (!ok) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot write %s: %s",
                kernel->connection_file, g_strerror(saved));
    unlink(kernel->connection_file);
    g_clear_pointer(&kernel->connection_file, g_free);
    return FALSE;
  }
  return TRUE;
}

static gboolean
read_connection_file(jk_kernel *kernel, const char *path, GError **error)
{
  g_autoptr(GError) parse_error = NULL;
  g_autoptr(JsonNode) root = jp_json_from_file(path, &parse_error);
  if (root == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot read the connection file %s: %s",
                path, parse_error->message);
    return FALSE;
  }
  JsonObject *o = root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
  for (int i = 0; o != NULL && i < JP_N_CHANNELS; i++)
    kernel->ports[i] = (int)json_object_get_int_member_with_default(o, channel_names[i], 0);
  const char *transport = o ? json_object_get_string_member_with_default(o, "transport", "tcp") : NULL;
  const char *scheme = o ? json_object_get_string_member_with_default(o, "signature_scheme", "hmac-sha256") : NULL;
  gboolean ok = o != NULL && g_strcmp0(transport, "tcp") == 0;
  for (int i = 0; ok && i < JP_N_CHANNELS; i++)
    ok = kernel->ports[i] > 0 && kernel->ports[i] < 65536;
  if (!ok) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: %s is not a connection file for TCP (ports and \"transport\": \"tcp\")", path);
    return FALSE;
  }
  if (g_strcmp0(scheme, "hmac-sha256") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: %s uses signature_scheme \"%s\"; only hmac-sha256 is supported", path, scheme);
    return FALSE;
  }
  kernel->ip = g_strdup(json_object_get_string_member_with_default(o, "ip", "127.0.0.1"));
  kernel->key = g_strdup(json_object_get_string_member_with_default(o, "key", ""));
  kernel->connection_file = g_strdup(path);
  return TRUE;
}

/* ---- Channels ------------------------------------------------------------------ */

/* Have kernel->stdin_monitor hear when SOCKET's connection is made. */
static void
watch_connection(jk_kernel *kernel, void *socket)
{
  g_autofree char *address = g_strdup_printf("inproc://cellexec-stdin-%p", (void *)kernel);
  if (zmq_socket_monitor(socket, address, ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0)
    return; /* not watched: jk_kernel_stdin_ready() trusts it */
  kernel->stdin_monitor = zmq_socket(kernel->zmq, ZMQ_PAIR);
  if (kernel->stdin_monitor != NULL && zmq_connect(kernel->stdin_monitor, address) != 0)
    g_clear_pointer(&kernel->stdin_monitor, zmq_close);
}

static void
stop_watching(jk_kernel *kernel)
{
  if (kernel->stdin_monitor == NULL)
    return;
  zmq_socket_monitor(kernel->sockets[JP_STDIN], NULL, 0);
  zmq_close(kernel->stdin_monitor);
  kernel->stdin_monitor = NULL;
}

gboolean
jk_kernel_stdin_ready(jk_kernel *kernel, double timeout)
{
  if (kernel->stdin_monitor == NULL)
    return TRUE;
  zmq_pollitem_t item = { kernel->stdin_monitor, 0, ZMQ_POLLIN, 0 };
  if (zmq_poll(&item, 1, (long)(timeout * 1000)) <= 0)
    return FALSE;
  stop_watching(kernel); /* the one event watched came */
  return TRUE;
}

static void *
open_socket(jk_kernel *kernel, int type, int channel, GError **error)
{
  void *socket = zmq_socket(kernel->zmq, type);
  if (socket == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: zmq_socket: %s", zmq_strerror(zmq_errno()));
    return NULL;
  }
  int zero = 0;
  zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
  /* A peer that is no kernel (its greeting is not ZMTP) leaves a socket
   * with no pipe to send on, and a send would wait for one for ever. */
  zmq_setsockopt(socket, ZMQ_SNDTIMEO, &kernel->send_timeout_ms, sizeof kernel->send_timeout_ms);
  if (type == ZMQ_SUB)
    zmq_setsockopt(socket, ZMQ_SUBSCRIBE, "", 0);
  /* One identity for shell, stdin and control, as jupyter_client does: the
   * kernel sends a cell's input_request to the identity its
   * execute_request came from, on the stdin channel. */
  if (type == ZMQ_DEALER)
    zmq_setsockopt(socket, ZMQ_ROUTING_ID, kernel->session, strlen(kernel->session));
  if (channel == JP_STDIN)
    watch_connection(kernel, socket);
  g_autofree char *endpoint = g_strdup_printf("tcp://%s:%d", kernel->ip, kernel->ports[channel]);
  if (zmq_connect(socket, endpoint) != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot connect to %s: %s", endpoint,
                zmq_strerror(zmq_errno()));
    zmq_close(socket);
    return NULL;
  }
  return socket;
}

static gboolean
open_channels(jk_kernel *kernel, GError **error)
{
  static const int types[JP_N_CHANNELS] = { ZMQ_DEALER, ZMQ_SUB, ZMQ_DEALER, ZMQ_DEALER, ZMQ_REQ };
  for (int i = 0; i < JP_N_CHANNELS; i++) {
    kernel->sockets[i] = open_socket(kernel, types[i], i, error);
    if (kernel->sockets[i] == NULL)
      return FALSE;
  }
  return TRUE;
}

void
jk_kernel_reopen_heartbeat(jk_kernel *kernel)
{
  if (kernel->sockets[JP_HB] != NULL)
    zmq_close(kernel->sockets[JP_HB]);
  kernel->sockets[JP_HB] = open_socket(kernel, ZMQ_REQ, JP_HB, NULL);
}

static void
close_channels(jk_kernel *kernel)
{
  stop_watching(kernel);
  for (int i = 0; i < JP_N_CHANNELS; i++)
    if (kernel->sockets[i] != NULL) {
      zmq_close(kernel->sockets[i]);
      kernel->sockets[i] = NULL;
    }
}

/* ---- Process state ------------------------------------------------------------- */

static void
set_died_how(jk_kernel *kernel, int status)
{
  g_free(kernel->died_how);
  if (WIFSIGNALED(status))
    kernel->died_how = g_strdup_printf("killed by signal %d (%s)", WTERMSIG(status),
                                       g_strsignal(WTERMSIG(status)));
  else
    kernel->died_how = g_strdup_printf("exited with status %d", WEXITSTATUS(status));
}

gboolean
jk_kernel_alive(jk_kernel *kernel)
{
  if (kernel->dead)
    return FALSE;
  if (kernel->pid <= 0)
    return TRUE;
  g_mutex_lock(&kernel->process_lock);
  int status;
  pid_t got = kernel->reaped ? kernel->pid : waitpid(kernel->pid, &status, WNOHANG);
  if (got == kernel->pid && !kernel->reaped) {
    kernel->reaped = TRUE;
    set_died_how(kernel, status);
  }
  g_mutex_unlock(&kernel->process_lock);
  if (got == kernel->pid)
    kernel->dead = TRUE;
  return !kernel->dead;
}

void
jk_kernel_kill(jk_kernel *kernel)
{
  if (kernel->transport != NULL && kernel->transport->kill != NULL)
    kernel->transport->kill(kernel);
  if (kernel->pid <= 0)
    return;
  g_mutex_lock(&kernel->process_lock);
  if (!kernel->reaped) {
    kill(-kernel->pid, SIGKILL); /* its group: what the kernel started goes too */
    kill(kernel->pid, SIGKILL);
    int status;
    if (waitpid(kernel->pid, &status, 0) == kernel->pid && kernel->died_how == NULL)
      set_died_how(kernel, status);
    kernel->reaped = TRUE;
  }
  g_mutex_unlock(&kernel->process_lock);
  kernel->dead = TRUE;
}

gboolean
jk_zmq_interrupt(jk_kernel *kernel, GError **error)
{
  if (kernel->pid > 0 && kernel->signal_interrupt) {
    g_mutex_lock(&kernel->process_lock);
    if (!kernel->reaped)
      kill(kernel->pid, SIGINT);
    g_mutex_unlock(&kernel->process_lock);
    return TRUE;
  }
  g_mutex_lock(&kernel->control_lock);
  /* Replies to earlier interrupts: read and forget. */
  jp_message *old;
  while (jk_message_recv(kernel, JP_CONTROL, ZMQ_DONTWAIT, &old) != JP_RECV_NONE)
    g_clear_pointer(&old, jp_message_free);
  g_autoptr(JsonObject) content = json_object_new();
  gboolean ok = jk_message_send(kernel, JP_CONTROL, "interrupt_request", content, NULL, error);
  g_mutex_unlock(&kernel->control_lock);
  return ok;
}

gboolean
jk_kernel_launched(const jk_kernel *kernel)
{
  return kernel->pid > 0;
}

pid_t
jk_kernel_pid(const jk_kernel *kernel)
{
  return kernel->pid;
}

const char *
jk_kernel_connection_file(const jk_kernel *kernel)
{
  return kernel->connection_file;
}

JsonObject *
jk_kernel_info(const jk_kernel *kernel)
{
  return kernel->info;
}

/* ---- Start --------------------------------------------------------------------- */

jk_kernel *
jk_kernel_new(void *zmq, jp_counters *counters)
{
  jk_kernel *kernel = g_new0(jk_kernel, 1);
  kernel->zmq = zmq;
  kernel->counters = counters;
  kernel->session = g_uuid_string_random();
  kernel->pidfd = -1;
  kernel->send_timeout_ms = 60 * 1000;
  kernel->recent = g_queue_new();
  g_mutex_init(&kernel->process_lock);
  g_mutex_init(&kernel->control_lock);
  g_mutex_init(&kernel->recent_lock);
  return kernel;
}

void
jk_kernel_free(jk_kernel *kernel)
{
  if (kernel == NULL)
    return;
  if (kernel->transport != NULL && kernel->transport->close != NULL)
    kernel->transport->close(kernel);
  close_channels(kernel);
  if (kernel->pid > 0) {
    jk_kernel_kill(kernel);
    if (kernel->connection_file != NULL)
      unlink(kernel->connection_file);
    release_ports(kernel->ports);
  }
  if (kernel->pidfd >= 0)
    close(kernel->pidfd);
  g_free(kernel->connection_file);
  g_free(kernel->ip);
  g_free(kernel->key);
  g_free(kernel->session);
  g_free(kernel->spec_name);
  g_free(kernel->died_how);
  g_clear_pointer(&kernel->info, json_object_unref);
  g_queue_free_full(kernel->recent, g_free);
  g_mutex_clear(&kernel->process_lock);
  g_mutex_clear(&kernel->control_lock);
  g_mutex_clear(&kernel->recent_lock);
  g_free(kernel);
}

static char *
random_key(void)
{
  guint8 bytes[32];
  for (gsize i = 0; i < sizeof bytes; i += 4) {
    guint32 r = g_random_int();
    memcpy(bytes + i, &r, 4);
  }
  /* g_random_int is seeded from /dev/urandom; mix in a fresh uuid too. */
  g_autofree char *uuid = g_uuid_string_random();
  g_autofree char *key = g_compute_checksum_for_data(G_CHECKSUM_SHA256, bytes, sizeof bytes);
  return g_compute_hmac_for_string(G_CHECKSUM_SHA256, (const guchar *)key, strlen(key), uuid, -1);
}

/* Send kernel_info_request until the reply comes and IOPub has been seen
 * to work (a SUB socket misses what is published before it is connected),
 * the process dies, or DEADLINE passes. */
static gboolean
wait_ready(jk_kernel *kernel, gint64 deadline, const gint *cancel, GError **error)
{
  gboolean replied = FALSE, iopub = FALSE;
  gint64 resend = 0;
  while (!(replied && iopub)) {
    gint64 now = g_get_monotonic_time();
    if (cancel != NULL && g_atomic_int_get(cancel)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel's start was cancelled");
      return FALSE;
    }
    if (now >= deadline) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "jupyter: the kernel did not answer kernel_info_request in time");
      return FALSE;
    }
    if (!jk_kernel_alive(kernel)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: the kernel %s while starting",
                  kernel->died_how ? kernel->died_how : "died");
      return FALSE;
    }
    if (now >= resend) {
      g_autoptr(JsonObject) content = json_object_new();
      g_autofree char *id = NULL;
      /* The send too must end by the deadline. */
      int left_ms = (int)MAX(1, (deadline - now) / 1000);
      zmq_setsockopt(kernel->sockets[JP_SHELL], ZMQ_SNDTIMEO, &left_ms, sizeof left_ms);
      gboolean sent = jk_message_send(kernel, JP_SHELL, "kernel_info_request", content, &id, NULL);
      zmq_setsockopt(kernel->sockets[JP_SHELL], ZMQ_SNDTIMEO, &kernel->send_timeout_ms,
                     sizeof kernel->send_timeout_ms);
      if (!sent) {
        g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                    "jupyter: the kernel did not take kernel_info_request in time (is it a "
                    "Jupyter kernel?)");
        return FALSE;
      }
      resend = now + (replied ? 50 : 250) * 1000;
    }
    zmq_pollitem_t items[3] = {
      { kernel->sockets[JP_SHELL], 0, ZMQ_POLLIN, 0 },
      { kernel->sockets[JP_IOPUB], 0, ZMQ_POLLIN, 0 },
      { NULL, kernel->pidfd, ZMQ_POLLIN, 0 },
    };
    long wait_ms = MAX(1, MIN(resend, deadline) - now) / 1000;
    /* Without a pidfd, to see the process die soon; with a cancel, to see
     * a cancellation soon. */
    if (kernel->pidfd < 0 || cancel != NULL)
      wait_ms = MIN(wait_ms, 20);
    zmq_poll(items, kernel->pidfd >= 0 ? 3 : 2, wait_ms);
    jp_message *message;
    jp_recv_status status;
    while ((status = jk_message_recv(kernel, JP_SHELL, ZMQ_DONTWAIT, &message)) != JP_RECV_NONE) {
      if (message != NULL && g_strcmp0(message->msg_type, "kernel_info_reply") == 0 &&
          jk_kernel_sent_recently(kernel, message->parent_id)) {
        replied = TRUE;
        g_clear_pointer(&kernel->info, json_object_unref);
        kernel->info = json_object_ref(message->content);
      }
      g_clear_pointer(&message, jp_message_free);
    }
    while ((status = jk_message_recv(kernel, JP_IOPUB, ZMQ_DONTWAIT, &message)) != JP_RECV_NONE) {
      if (message != NULL && jk_kernel_sent_recently(kernel, message->parent_id))
        iopub = TRUE;
      g_clear_pointer(&message, jp_message_free);
    }
  }
  /* Let the idle status of the last request arrive, so that the first cell
   * does not see it (it would count as someone else's). */
  g_usleep(2000);
  jp_message *message;
  while (jk_message_recv(kernel, JP_IOPUB, ZMQ_DONTWAIT, &message) != JP_RECV_NONE)
    g_clear_pointer(&message, jp_message_free);
  return TRUE;
}

/* Kernels are started by one thread that lives as long as the process:
 * each gets PR_SET_PDEATHSIG, which fires when the thread that started it
 * ends, so a kernel dies with its host however the host ends (SIGKILL
 * included), never with a worker thread that merely went idle. */
typedef struct {
  char **argv, **envp;
  const char *cwd;
  GPid pid;
  GError *error;
  GMutex lock;
  GCond done;
  gboolean finished;
} spawn_request;

static GOnce spawner_once = G_ONCE_INIT;
static GAsyncQueue *spawn_requests;

static void
kernel_child_setup(gpointer data)
{
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static gpointer
spawner_thread(gpointer data)
{
  for (;;) {
    spawn_request *request = g_async_queue_pop(spawn_requests);
    GSpawnFlags flags = G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                        G_SPAWN_STDERR_TO_DEV_NULL | G_SPAWN_STDIN_FROM_DEV_NULL;
    if (strchr(request->argv[0], '/') == NULL)
      flags |= G_SPAWN_SEARCH_PATH;
    GPid pid = 0;
    GError *error = NULL;
    if (!g_spawn_async(request->cwd, request->argv, request->envp, flags, kernel_child_setup, NULL,
                       &pid, &error))
      pid = 0;
    g_mutex_lock(&request->lock);
    request->pid = pid;
    request->error = error;
    request->finished = TRUE;
    g_cond_signal(&request->done);
    g_mutex_unlock(&request->lock);
  }
  return NULL;
}

static gpointer
spawner_start(gpointer data)
{
  spawn_requests = g_async_queue_new();
  g_thread_unref(g_thread_new("cellexec-jupyter-spawner", spawner_thread, NULL));
  return NULL;
}

static pid_t
spawn_kernel(const jk_spec *spec, const char *connection_file, const char *cwd, GError **error)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
  for (char **arg = spec->argv; *arg != NULL; arg++) {
    g_auto(GStrv) parts = g_strsplit(*arg, "{connection_file}", -1);
    char *joined = g_strjoinv(connection_file, parts);
    if (spec->resource_dir != NULL && strstr(joined, "{resource_dir}") != NULL) {
      g_auto(GStrv) more = g_strsplit(joined, "{resource_dir}", -1);
      g_free(joined);
      joined = g_strjoinv(spec->resource_dir, more);
    }
    g_ptr_array_add(argv, joined);
  }
  /* An ipykernel of ours keeps its input history in memory: the kernel is
   * private and short-lived, and the shared history.sqlite of the user
   * costs every cell a write, and kernels running at once its lock.  Not
   * where the kernelspec names a history file itself: traitlets refuses
   * the option twice, and the kernel would not start. */
  if (spec->memory_history) {
    gboolean ipykernel = FALSE, named = FALSE;
    for (guint i = 0; i < argv->len; i++) {
      ipykernel |= strstr(argv->pdata[i], "ipykernel") != NULL;
      named |= g_str_has_prefix(argv->pdata[i], "--HistoryManager.hist_file");
    }
    if (ipykernel && !named)
      g_ptr_array_add(argv, g_strdup("--HistoryManager.hist_file=:memory:"));
  }
  g_ptr_array_add(argv, NULL);
  g_auto(GStrv) envp = g_get_environ();
  for (char **var = spec->env; var != NULL && *var != NULL; var++) {
    g_auto(GStrv) kv = g_strsplit(*var, "=", 2);
    envp = g_environ_setenv(envp, kv[0], kv[1] ? kv[1] : "", TRUE);
  }
  /* ipykernel exits when its parent does (ParentPollerUnix). */
  g_autofree char *parent = g_strdup_printf("%d", (int)getpid());
  envp = g_environ_setenv(envp, "JPY_PARENT_PID", parent, TRUE);
  spawn_request request = { .argv = (char **)argv->pdata, .envp = envp, .cwd = cwd };
  g_mutex_init(&request.lock);
  g_cond_init(&request.done);
  g_once(&spawner_once, spawner_start, NULL);
  g_mutex_lock(&request.lock);
  g_async_queue_push(spawn_requests, &request);
  while (!request.finished)
    g_cond_wait(&request.done, &request.lock);
  g_mutex_unlock(&request.lock);
  g_mutex_clear(&request.lock);
  g_cond_clear(&request.done);
  GPid pid = request.pid;
  g_autoptr(GError) spawn_error = request.error;
  gboolean ok = pid > 0;
  g_ptr_array_unref(argv);
  if (!ok) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot start the kernel %s: %s",
                spec->name, spawn_error->message);
    return 0;
  }
  return pid;
}

/* ZMQ_SNDTIMEO for START_TIMEOUT seconds: at least 1 ms, since 0 would
 * make every send fail at once when it cannot go out immediately. */
static int
send_timeout_ms(double start_timeout)
{
  return (int)MAX(1.0, start_timeout * 1000);
}

static jk_kernel *
launch_once(void *zmq, const jk_spec *spec, const char *cwd, double start_timeout,
            const gint *cancel, jp_counters *counters, gboolean *retry, GError **error)
{
  *retry = FALSE;
  jk_kernel *kernel = jk_kernel_new(zmq, counters);
  kernel->ip = g_strdup("127.0.0.1");
  kernel->key = random_key();
  kernel->spec_name = g_strdup(spec->name);
  kernel->signal_interrupt = spec->signal_interrupt;
  kernel->send_timeout_ms = send_timeout_ms(start_timeout);
  if (!reserve_ports(kernel->ports, error)) {
    jk_kernel_free(kernel);
    return NULL;
  }
  if (!write_connection_file(kernel, error) || !open_channels(kernel, error)) {
    release_ports(kernel->ports);
    if (kernel->connection_file)
      unlink(kernel->connection_file);
    jk_kernel_free(kernel);
    return NULL;
  }
  kernel->pid = spawn_kernel(spec, kernel->connection_file, cwd, error);
  if (kernel->pid <= 0) {
    unlink(kernel->connection_file);
    release_ports(kernel->ports);
    kernel->pid = 0;
    jk_kernel_free(kernel);
    return NULL;
  }
#ifdef SYS_pidfd_open
  kernel->pidfd = (int)syscall(SYS_pidfd_open, kernel->pid, 0);
#endif
  gint64 deadline = g_get_monotonic_time() + (gint64)(start_timeout * G_USEC_PER_SEC);
  if (!wait_ready(kernel, deadline, cancel, error)) {
    /* Dead at once: most likely a port taken by another process
     * between our probe and its bind. */
    *retry = kernel->dead;
    jk_kernel_free(kernel);
    return NULL;
  }
  /* It has read its connection file: nothing needs it any more, and
   * nothing is left behind however the host ends. */
  unlink(kernel->connection_file);
  return kernel;
}

jk_kernel *
jk_kernel_launch(void *zmq, const jk_spec *spec, const char *cwd, double start_timeout,
                 const gint *cancel, jp_counters *counters, GError **error)
{
  for (int attempt = 0;; attempt++) {
    gboolean retry;
    g_autoptr(GError) attempt_error = NULL;
    jk_kernel *kernel =
      launch_once(zmq, spec, cwd, start_timeout, cancel, counters, &retry, &attempt_error);
    if (kernel != NULL)
      return kernel;
    if (!retry || attempt >= 2) {
      g_propagate_error(error, g_steal_pointer(&attempt_error));
      return NULL;
    }
  }
}

jk_kernel *
jk_kernel_attach(void *zmq, const char *connection_file, double start_timeout,
                 jp_counters *counters, GError **error)
{
  jk_kernel *kernel = jk_kernel_new(zmq, counters);
  kernel->send_timeout_ms = send_timeout_ms(start_timeout);
  if (!read_connection_file(kernel, connection_file, error) || !open_channels(kernel, error)) {
    jk_kernel_free(kernel);
    return NULL;
  }
  kernel->signal_interrupt = FALSE; /* not our process: ask on control */
  gint64 deadline = g_get_monotonic_time() + (gint64)(start_timeout * G_USEC_PER_SEC);
  g_autoptr(GError) ready_error = NULL;
  if (!wait_ready(kernel, deadline, NULL, &ready_error)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "jupyter: the kernel of %s did not answer within %g s (is it running, and is the "
                "key right?)", connection_file, start_timeout);
    jk_kernel_free(kernel);
    return NULL;
  }
  return kernel;
}
