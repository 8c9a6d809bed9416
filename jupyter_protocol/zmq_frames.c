/* jupyter_protocol/zmq_frames.c: multipart messages on ZeroMQ sockets. */
#include "config.h"

#include <errno.h>
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

void
jp_zmq_set_max_frame_size(void *socket, const jp_zmq_bounds *bounds)
{
  /* A frame over the bound closes its peer's connection before ZeroMQ
   * buffers it; no frame can be over a bound on the whole message. */
  gint64 max_frame = bounds->max_bytes > G_MAXINT64 ? -1 : (gint64)bounds->max_bytes;
  zmq_setsockopt(socket, ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame);
}

GPtrArray *
jp_zmq_recv_frames_within(void *socket, int flags, const jp_zmq_bounds *bounds,
                          gboolean *dropped)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  guint64 n_frames = 0, n_bytes = 0;
  gboolean within = TRUE;
  if (dropped != NULL)
    *dropped = FALSE;
  for (;;) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket, n_frames == 0 ? flags : 0) < 0) {
      int why = zmq_errno();
      zmq_msg_close(&part);
      g_ptr_array_unref(frames);
      errno = why; /* for zmq_errno() */
      return NULL;
    }
    n_frames++;
    n_bytes += zmq_msg_size(&part);
    if (within && bounds != NULL &&
        (n_frames > bounds->max_frames || n_bytes > bounds->max_bytes)) {
      within = FALSE; /* the rest is read only to be thrown away */
      g_ptr_array_set_size(frames, 0);
    }
    if (within)
      g_ptr_array_add(frames, g_bytes_new(zmq_msg_data(&part), zmq_msg_size(&part)));
    gboolean more = zmq_msg_more(&part);
    zmq_msg_close(&part);
    if (!more && within)
      return frames;
    if (!more) {
      g_ptr_array_unref(frames);
      if (dropped != NULL)
        *dropped = TRUE;
      return NULL;
    }
  }
}

GPtrArray *
jp_zmq_recv_frames(void *socket, int flags)
{
  return jp_zmq_recv_frames_within(socket, flags, NULL, NULL);
}
