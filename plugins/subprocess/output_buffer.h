/* plugins/subprocess/output_buffer.h: one output stream of a cell, as the
 * host keeps it: in full up to output-limit, past it the head (first half)
 * and the tail (last half), so the host's memory stays bounded however
 * much a cell prints. */
#ifndef CX_SUBPROCESS_OUTPUT_BUFFER_H
#define CX_SUBPROCESS_OUTPUT_BUFFER_H

#include <cellexec/result.h>

G_BEGIN_DECLS

typedef struct {
  guint64 limit;      /* bytes kept at most; 0: everything */
  GString *head;
  guint8 *tail;       /* ring buffer of tail_size bytes */
  gsize tail_size, tail_start, tail_len;
  guint64 total;      /* bytes the stream had, kept or not */
} cx_output_buffer;

void cx_output_buffer_init(cx_output_buffer *buffer, guint64 limit);
void cx_output_buffer_clear(cx_output_buffer *buffer);

/* The stream went on with OMITTED bytes nobody sent (the worker already
 * left them out), then LEN bytes of DATA. */
void cx_output_buffer_add(cx_output_buffer *buffer, guint64 omitted, const guint8 *data,
                          gsize len);

/* Bytes of the stream not kept. */
guint64 cx_output_buffer_omitted(const cx_output_buffer *buffer);

/* Append what is kept to STREAM (1 stdout, 2 stderr) of RESULT: the head,
 * a line saying how much was left out, the tail. */
void cx_output_buffer_write(const cx_output_buffer *buffer, cx_result *result, int stream);

/* The same for the stream's bytes from offset FROM up to TO (offsets in
 * the whole stream, left-out bytes included; TO is clamped to the total):
 * writing consecutive ranges writes what cx_output_buffer_write() does. */
void cx_output_buffer_write_range(const cx_output_buffer *buffer, cx_result *result, int stream,
                                  guint64 from, guint64 to);

G_END_DECLS

#endif /* CX_SUBPROCESS_OUTPUT_BUFFER_H */
