/* lib/output_buffer.c: head and tail of a stream (see the header). */
#include "config.h"

#include <string.h>

#include "lib/output_buffer.h"
#include "lib/output_limit.h"

void
cx__output_buffer_init(cx__output_buffer *buffer, guint64 limit)
{
  *buffer = (cx__output_buffer){ .limit = limit, .head = g_string_new(NULL) };
  buffer->tail_size = (gsize)cx__output_tail_size(limit);
  /* The tail is allocated when a stream first passes the head: it is
   * output-limit / 2 (5 MB by default), which malloc takes from the heap's
   * top and gives back after each cell, costing system calls and page
   * faults per cell to most cells, which never fill their head. */
}

void
cx__output_buffer_clear(cx__output_buffer *buffer)
{
  g_string_free(buffer->head, TRUE);
  g_free(buffer->tail);
  *buffer = (cx__output_buffer){ 0 };
}

static void
push_tail(cx__output_buffer *buffer, const guint8 *data, gsize len)
{
  gsize size = buffer->tail_size;
  if (size == 0 || len == 0)
    return;
  if (buffer->tail == NULL)
    buffer->tail = g_malloc(size);
  if (len >= size) {
    memcpy(buffer->tail, data + len - size, size);
    buffer->tail_start = 0;
    buffer->tail_len = size;
    return;
  }
  /* Drop the oldest bytes to make room, then write behind the newest. */
  gsize overflow = buffer->tail_len + len > size ? buffer->tail_len + len - size : 0;
  buffer->tail_start = (buffer->tail_start + overflow) % size;
  buffer->tail_len -= overflow;
  gsize end = (buffer->tail_start + buffer->tail_len) % size;
  gsize first = MIN(len, size - end);
  memcpy(buffer->tail + end, data, first);
  memcpy(buffer->tail, data + first, len - first);
  buffer->tail_len += len;
}

void
cx__output_buffer_add(cx__output_buffer *buffer, guint64 omitted, const guint8 *data,
                         gsize len)
{
  guint64 before = buffer->total;
  buffer->total += omitted + len;
  if (buffer->limit == 0) {
    g_string_append_len(buffer->head, (const char *)data, len);
    return;
  }
  gsize in_head, never_tail;
  cx__output_split(buffer->limit, before, len, &in_head, &never_tail);
  /* The head holds the stream's first bytes only while nothing was left out. */
  if (omitted == 0 && before == buffer->head->len && in_head > 0) {
    g_string_append_len(buffer->head, (const char *)data, in_head);
    data += in_head;
    len -= in_head;
  }
  if (omitted > 0)
    buffer->tail_len = 0; /* what the tail held is no longer the stream's end */
  push_tail(buffer, data, len);
}

guint64
cx__output_buffer_omitted(const cx__output_buffer *buffer)
{
  return buffer->total - buffer->head->len - buffer->tail_len;
}

void
cx__output_buffer_write_range(const cx__output_buffer *buffer, cx_result *result,
                                 int stream, guint64 from, guint64 to)
{
  void (*append)(cx_result *, const char *, gssize) =
    stream == 1 ? cx_result_append_stdout : cx_result_append_stderr;
  to = MIN(to, buffer->total);
  if (from >= to)
    return;
  guint64 head_len = buffer->head->len;
  if (from < head_len)
    append(result, buffer->head->str + from, (gssize)(MIN(to, head_len) - from));
  guint64 omitted = cx__output_buffer_omitted(buffer);
  if (omitted > 0 && from <= head_len && to > head_len) {
    g_autofree char *marker = cx__output_omitted_line(omitted);
    append(result, marker, -1);
  }
  /* The tail holds the stream's last tail_len bytes, in a ring. */
  guint64 tail_begin = buffer->total - buffer->tail_len;
  for (guint64 at = MAX(from, MAX(tail_begin, head_len)); at < to;) {
    gsize ring = (buffer->tail_start + (gsize)(at - tail_begin)) % MAX(buffer->tail_size, 1);
    gsize n = (gsize)MIN(to - at, (guint64)(buffer->tail_size - ring));
    append(result, (const char *)buffer->tail + ring, (gssize)n);
    at += n;
  }
}

void
cx__output_buffer_write(const cx__output_buffer *buffer, cx_result *result, int stream)
{
  cx__output_buffer_write_range(buffer, result, stream, 0, buffer->total);
}

void
cx__output_buffer_note(const cx__output_buffer *buffer, const char *name, JsonObject **truncated)
{
  guint64 omitted = cx__output_buffer_omitted(buffer);
  if (omitted == 0)
    return;
  if (*truncated == NULL)
    *truncated = json_object_new();
  JsonObject *detail = json_object_new();
  json_object_set_int_member(detail, "total_bytes", (gint64)buffer->total);
  json_object_set_int_member(detail, "omitted_bytes", (gint64)omitted);
  json_object_set_object_member(*truncated, name, detail);
}
