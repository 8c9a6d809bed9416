/* lib/output_buffer.h: one output stream of a cell, as a backend's host
 * side keeps it: in full up to output-limit, past it the head (first
 * half) and the tail (last half), so the host's memory stays bounded
 * however much a cell prints.  Part of libcxoutput.la (lib/output_limit.h). */
#ifndef CX__OUTPUT_BUFFER_H
#define CX__OUTPUT_BUFFER_H

#include <cellexec/result.h>

G_BEGIN_DECLS

typedef struct {
  guint64 limit;      /* bytes kept at most; 0: everything */
  GString *head;
  guint8 *tail;       /* ring buffer of tail_size bytes; NULL until needed */
  gsize tail_size, tail_start, tail_len;
  guint64 total;      /* bytes the stream had, kept or not */
} cx__output_buffer;

void cx__output_buffer_init(cx__output_buffer *buffer, guint64 limit);
void cx__output_buffer_clear(cx__output_buffer *buffer);

/* The stream went on with OMITTED bytes nobody sent (the worker already
 * left them out), then LEN bytes of DATA. */
void cx__output_buffer_add(cx__output_buffer *buffer, guint64 omitted, const guint8 *data,
                              gsize len);

/* Bytes of the stream not kept. */
guint64 cx__output_buffer_omitted(const cx__output_buffer *buffer);

/* Append what is kept to STREAM (1 stdout, 2 stderr) of RESULT: the head,
 * a line saying how much was left out, the tail. */
void cx__output_buffer_write(const cx__output_buffer *buffer, cx_result *result, int stream);

/* The same for the stream's bytes from offset FROM up to TO (offsets in
 * the whole stream, left-out bytes included; TO is clamped to the total):
 * writing consecutive ranges writes what cx__output_buffer_write() does. */
void cx__output_buffer_write_range(const cx__output_buffer *buffer, cx_result *result,
                                      int stream, guint64 from, guint64 to);

/* What BUFFER, stream NAME ("stdout", "stderr"), left out, as
 * {"total_bytes", "omitted_bytes"} under NAME in *TRUNCATED (created when
 * NULL): the result's "truncated" says it so; nothing when it left out
 * nothing. */
void cx__output_buffer_note(const cx__output_buffer *buffer, const char *name,
                            JsonObject **truncated);

G_END_DECLS

#endif /* CX__OUTPUT_BUFFER_H */
