/* plugins/subprocess/output_buffer.h: one output stream of a cell, as the
 * host keeps it: in full up to output-limit, past it the head (first half)
 * and the tail (last half), so the host's memory stays bounded however
 * much a cell prints. */
#ifndef CX__SP_OUTPUT_BUFFER_H
#define CX__SP_OUTPUT_BUFFER_H

#include <cellexec/result.h>

G_BEGIN_DECLS

typedef struct {
  guint64 limit;      /* bytes kept at most; 0: everything */
  GString *head;
  guint8 *tail;       /* ring buffer of tail_size bytes; NULL until needed */
  gsize tail_size, tail_start, tail_len;
  guint64 total;      /* bytes the stream had, kept or not */
} cx__sp_output_buffer;

void cx__sp_output_buffer_init(cx__sp_output_buffer *buffer, guint64 limit);
void cx__sp_output_buffer_clear(cx__sp_output_buffer *buffer);

/* The stream went on with OMITTED bytes nobody sent (the worker already
 * left them out), then LEN bytes of DATA. */
void cx__sp_output_buffer_add(cx__sp_output_buffer *buffer, guint64 omitted, const guint8 *data,
                              gsize len);

/* Bytes of the stream not kept. */
guint64 cx__sp_output_buffer_omitted(const cx__sp_output_buffer *buffer);

/* Append what is kept to STREAM (1 stdout, 2 stderr) of RESULT: the head,
 * a line saying how much was left out, the tail. */
void cx__sp_output_buffer_write(const cx__sp_output_buffer *buffer, cx_result *result, int stream);

/* The same for the stream's bytes from offset FROM up to TO (offsets in
 * the whole stream, left-out bytes included; TO is clamped to the total):
 * writing consecutive ranges writes what cx__sp_output_buffer_write() does. */
void cx__sp_output_buffer_write_range(const cx__sp_output_buffer *buffer, cx_result *result,
                                      int stream, guint64 from, guint64 to);

G_END_DECLS

#endif /* CX__SP_OUTPUT_BUFFER_H */
