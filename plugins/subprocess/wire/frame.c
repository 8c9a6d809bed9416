/* plugins/subprocess/wire/frame.c: length-prefixed frames (see frame.h). */
#include "config.h"

#include <poll.h>

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cellexec/common.h>

#include "plugins/subprocess/wire/frame.h"

struct cx__wire_reader {
  int socket;
  GByteArray *buffer;   /* received, not yet consumed */
  gsize consumed;       /* bytes at the front of BUFFER already returned */
  GQueue fds;           /* received descriptors, as GINT_TO_POINTER */
};

#define MAX_PARTS 8
#define READ_CHUNK (64 * 1024)

gboolean
cx__wire_sendv(int socket, guint8 type, const struct iovec *parts, int n_parts, int fd_to_pass,
               GError **error)
{
  g_return_val_if_fail(n_parts >= 0 && n_parts < MAX_PARTS, FALSE);
  gsize len = 0;
  for (int i = 0; i < n_parts; i++)
    len += parts[i].iov_len;
  if (len > CX__WIRE_MAX_PAYLOAD) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "a worker message of %" G_GSIZE_FORMAT " bytes exceeds the protocol's limit of %u",
                len, CX__WIRE_MAX_PAYLOAD);
    return FALSE;
  }
  guint8 header[CX__WIRE_HEADER_SIZE] = {
    (guint8)(len >> 24), (guint8)(len >> 16), (guint8)(len >> 8), (guint8)len, type
  };
  struct iovec iov[MAX_PARTS + 1];
  iov[0] = (struct iovec){ header, sizeof header };
  memcpy(iov + 1, parts, sizeof(struct iovec) * n_parts);
  int n_iov = n_parts + 1;

  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n_iov };
  if (fd_to_pass >= 0) {
    memset(&control, 0, sizeof control);
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd_to_pass, sizeof(int));
  }

  struct iovec *cursor = iov;
  while (n_iov > 0) {
    msg.msg_iov = cursor;
    msg.msg_iovlen = n_iov;
    ssize_t sent = sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR)
        continue;
      int saved = errno;
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot send to the worker: %s",
                  g_strerror(saved));
      return FALSE;
    }
    /* The descriptor went with the first bytes. */
    msg.msg_control = NULL;
    msg.msg_controllen = 0;
    while (n_iov > 0 && (size_t)sent >= cursor->iov_len) {
      sent -= cursor->iov_len;
      cursor++;
      n_iov--;
    }
    if (n_iov > 0) {
      cursor->iov_base = (char *)cursor->iov_base + sent;
      cursor->iov_len -= sent;
    }
  }
  return TRUE;
}

gboolean
cx__wire_send(int socket, guint8 type, const void *payload, gsize len, GError **error)
{
  struct iovec part = { (void *)payload, len };
  return cx__wire_sendv(socket, type, &part, len > 0 ? 1 : 0, -1, error);
}

cx__wire_reader *
cx__wire_reader_new(int socket)
{
  cx__wire_reader *reader = g_new0(cx__wire_reader, 1);
  reader->socket = socket;
  reader->buffer = g_byte_array_new();
  g_queue_init(&reader->fds);
  return reader;
}

void
cx__wire_reader_free(cx__wire_reader *reader)
{
  if (reader == NULL)
    return;
  int fd;
  while ((fd = cx__wire_reader_take_fd(reader)) >= 0)
    close(fd);
  g_byte_array_unref(reader->buffer);
  g_free(reader);
}

static void
queue_fds(cx__wire_reader *reader, struct msghdr *msg)
{
  for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL; cmsg = CMSG_NXTHDR(msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
      continue;
    gsize n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (gsize i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
      g_queue_push_tail(&reader->fds, GINT_TO_POINTER(fd));
    }
  }
}

cx__wire_read_status
cx__wire_reader_fill(cx__wire_reader *reader, gboolean blocking, GError **error)
{
  /* Drop what was consumed before growing the buffer. */
  if (reader->consumed > 0) {
    g_byte_array_remove_range(reader->buffer, 0, reader->consumed);
    reader->consumed = 0;
  }
  gsize old_len = reader->buffer->len;
  g_byte_array_set_size(reader->buffer, old_len + READ_CHUNK);
  struct iovec iov = { reader->buffer->data + old_len, READ_CHUNK };
  union {
    char buf[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } control;
  struct msghdr msg = {
    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf
  };
  ssize_t got;
  do
    got = recvmsg(reader->socket, &msg, MSG_CMSG_CLOEXEC | (blocking ? 0 : MSG_DONTWAIT));
  while (got < 0 && errno == EINTR);
  int saved = errno;
  g_byte_array_set_size(reader->buffer, old_len + MAX(got, 0));
  if (got < 0) {
    if (saved == EAGAIN || saved == EWOULDBLOCK)
      return CX__WIRE_READ_AGAIN;
    if (saved == ECONNRESET)
      return CX__WIRE_READ_EOF;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot read from the worker: %s",
                g_strerror(saved));
    return CX__WIRE_READ_ERROR;
  }
  queue_fds(reader, &msg);
  return got == 0 ? CX__WIRE_READ_EOF : CX__WIRE_READ_DATA;
}

gboolean
cx__wire_reader_next(cx__wire_reader *reader, guint8 *type, const guint8 **payload, gsize *len,
                     GError **error)
{
  gsize available = reader->buffer->len - reader->consumed;
  if (available < CX__WIRE_HEADER_SIZE)
    return FALSE;
  const guint8 *header = reader->buffer->data + reader->consumed;
  guint32 size = ((guint32)header[0] << 24) | ((guint32)header[1] << 16) |
                 ((guint32)header[2] << 8) | header[3];
  if (size > CX__WIRE_MAX_PAYLOAD) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "malformed message from the worker: a frame of %u bytes (at most %u allowed)",
                size, CX__WIRE_MAX_PAYLOAD);
    return FALSE;
  }
  if (available < CX__WIRE_HEADER_SIZE + (gsize)size)
    return FALSE;
  *type = header[4];
  *payload = header + CX__WIRE_HEADER_SIZE;
  *len = size;
  reader->consumed += CX__WIRE_HEADER_SIZE + size;
  return TRUE;
}

gsize
cx__wire_reader_pending(const cx__wire_reader *reader)
{
  return reader->buffer->len - reader->consumed;
}

int
cx__wire_reader_take_fd(cx__wire_reader *reader)
{
  if (g_queue_is_empty(&reader->fds))
    return -1;
  return GPOINTER_TO_INT(g_queue_pop_head(&reader->fds));
}

gboolean
cx__wire_read_within(cx__wire_reader *reader, gint64 deadline, guint8 *type,
                     const guint8 **payload, gsize *len, gboolean *timed_out, GError **error)
{
  if (timed_out != NULL)
    *timed_out = FALSE;
  for (;;) {
    GError *malformed = NULL;
    if (cx__wire_reader_next(reader, type, payload, len, &malformed))
      return TRUE;
    if (malformed != NULL) {
      g_propagate_error(error, malformed);
      return FALSE;
    }
    if (deadline > 0) {
      gint64 left_ms = (deadline - g_get_monotonic_time() + 999) / 1000;
      struct pollfd fd = { reader->socket, POLLIN, 0 };
      if (left_ms <= 0 || poll(&fd, 1, (int)MIN(left_ms, G_MAXINT)) == 0) {
        if (timed_out != NULL)
          *timed_out = TRUE;
        g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "no message within the deadline");
        return FALSE;
      }
    }
    switch (cx__wire_reader_fill(reader, deadline <= 0, error)) {
    case CX__WIRE_READ_DATA:
    case CX__WIRE_READ_AGAIN:
      break;
    case CX__WIRE_READ_EOF:
      if (cx__wire_reader_pending(reader) > 0) {
        g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                    "the channel closed in the middle of a message (%" G_GSIZE_FORMAT " bytes)",
                    cx__wire_reader_pending(reader));
      }
      return FALSE;
    case CX__WIRE_READ_ERROR:
      return FALSE;
    }
  }
}

gboolean
cx__wire_read_blocking(cx__wire_reader *reader, guint8 *type, const guint8 **payload, gsize *len,
                       GError **error)
{
  return cx__wire_read_within(reader, 0, type, payload, len, NULL, error);
}
