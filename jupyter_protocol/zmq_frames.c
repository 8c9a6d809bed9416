/* jupyter_protocol/zmq_frames.c: multipart messages on ZeroMQ sockets. */
#include "config.h"

#include <zmq.h>

#include "jupyter_protocol/zmq_frames.h"

gboolean
jp_zmq_send_frames(void *socket, GPtrArray *frames)
{
  for (guint i = 0; i < frames->len; i++) {
    gsize len;
    const void *data = g_bytes_get_data(frames->pdata[i], &len);
    if (zmq_send(socket, data, len, i + 1 < frames->len ? ZMQ_SNDMORE : 0) < 0)
      return FALSE;
  }
  return TRUE;
}

GPtrArray *
jp_zmq_recv_frames(void *socket, int flags)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  for (;;) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket, frames->len == 0 ? flags : 0) < 0) {
      zmq_msg_close(&part);
      g_ptr_array_unref(frames);
      return NULL;
    }
    g_ptr_array_add(frames, g_bytes_new(zmq_msg_data(&part), zmq_msg_size(&part)));
    gboolean more = zmq_msg_more(&part);
    zmq_msg_close(&part);
    if (!more)
      return frames;
  }
}
