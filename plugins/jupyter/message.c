/* plugins/jupyter: this connection's side of the messages (the codec is
 * jupyter_protocol/message.c): our session's headers, sending on the
 * kernel's sockets, receiving from them, and the ids of our requests. */
#include "config.h"

#include <string.h>
#include <zmq.h>

#include "jupyter_protocol/zmq_frames.h"
#include "plugins/jupyter/kernel-private.h"

#define RECENT_MAX 32

void
jk_kernel_remember(jk_kernel *kernel, const char *msg_id)
{
  g_mutex_lock(&kernel->recent_lock);
  g_queue_push_tail(kernel->recent, g_strdup(msg_id));
  while (g_queue_get_length(kernel->recent) > RECENT_MAX)
    g_free(g_queue_pop_head(kernel->recent));
  g_mutex_unlock(&kernel->recent_lock);
}

gboolean
jk_kernel_sent_recently(jk_kernel *kernel, const char *msg_id)
{
  if (msg_id == NULL || *msg_id == '\0')
    return FALSE;
  g_mutex_lock(&kernel->recent_lock);
  gboolean found = g_queue_find_custom(kernel->recent, msg_id, (GCompareFunc)strcmp) != NULL;
  g_mutex_unlock(&kernel->recent_lock);
  return found;
}

JsonObject *
jk_message_header(jk_kernel *kernel, const char *msg_type, char **msg_id)
{
  JsonObject *header = jp_header_new(kernel->session, "cellexec", msg_type, msg_id);
  jk_kernel_remember(kernel, *msg_id);
  return header;
}

gboolean
jk_message_send(jk_kernel *kernel, int channel, const char *msg_type, JsonObject *content,
                char **msg_id, GError **error)
{
  g_autofree char *id = NULL;
  g_autoptr(JsonObject) header = jk_message_header(kernel, msg_type, &id);
  g_autoptr(GPtrArray) frames = jp_message_encode(kernel->key, NULL, header, NULL, NULL, content);
  gboolean ok = jp_zmq_send_frames(kernel->sockets[channel], frames);
  if (!ok) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: cannot send %s: %s", msg_type,
                zmq_strerror(zmq_errno()));
    return FALSE;
  }
  if (msg_id != NULL)
    *msg_id = g_steal_pointer(&id);
  return TRUE;
}

jp_recv_status
jk_message_recv(jk_kernel *kernel, int channel, int flags, jp_message **message)
{
  *message = NULL;
  g_autoptr(GPtrArray) frames = jp_zmq_recv_frames(kernel->sockets[channel], flags);
  if (frames == NULL)
    return JP_RECV_NONE;
  if (channel == JP_HB)
    return JP_RECV_OK; /* the echo: no message */
  return jp_message_decode(kernel->key, frames, kernel->counters, message);
}
