/* plugins/subprocess/wire/output_limit.h: the output-limit rule, in one
 * place for both ends (docs/worker-protocol.md, "Limits").
 *
 * A stream or a text over LIMIT bytes keeps its head (the first
 * LIMIT - LIMIT / 2 bytes) and its tail (the last LIMIT / 2), with a line
 * saying how much was left out between them.  The cell's process applies
 * it before sending (worker/cell_process.c), the host again on what it
 * receives (output_buffer.c, cell_call.c): a cell can write frames to its
 * channel itself.  Other data over LIMIT, which a cut would corrupt, is
 * left out with a placeholder in its stead.  LIMIT 0: no limit.
 */
#ifndef CX__WIRE_OUTPUT_LIMIT_H
#define CX__WIRE_OUTPUT_LIMIT_H

#include <cellexec/common.h>

#include "plugins/subprocess/wire/frame.h"

G_BEGIN_DECLS

/* Bytes kept at the head and at the tail of what passes LIMIT (> 0). */
static inline guint64
cx__wire_head_size(guint64 limit)
{
  return limit - limit / 2;
}

static inline guint64
cx__wire_tail_size(guint64 limit)
{
  return limit / 2;
}

/* A stream that had BEFORE bytes goes on with LEN more: its first *IN_HEAD
 * belong to the head; of the rest, the first *OMITTED can never be part of
 * the tail (whatever follows), the others may. */
void cx__wire_split_output(guint64 limit, guint64 before, gsize len, gsize *in_head,
                           gsize *omitted);

/* The line that stands where OMITTED bytes of a stream or a text were left
 * out (a new string): the one wording, wherever a cut is made. */
char *cx__wire_omitted_line(guint64 omitted);

/* TEXT (LEN bytes) cut to LIMIT, its head and tail moved to UTF-8
 * character boundaries, or NULL when it fits; *OMITTED the bytes left out. */
char *cx__wire_cut_text(const char *text, gsize len, guint64 limit, guint64 *omitted);

/* Largest part an event or a result whose frame would be too long keeps,
 * whatever output-limit says. */
#define CX__WIRE_PART_MAX (CX__WIRE_MAX_PAYLOAD / 4)

/* Bound the MIME values and metadata of a DISPLAY event, or the evalue
 * and traceback of an error event, to LIMIT.  Each cut adds {"part",
 * "total_bytes", "omitted_bytes"} to TRUNCATED (may be NULL). */
void cx__wire_bound_event(JsonObject *event, guint64 limit, JsonArray *truncated);
/* Bound the member KEY (a string) of OBJECT, recorded as PART. */
void cx__wire_bound_string(JsonObject *object, const char *key, const char *part,
                           guint64 limit, JsonArray *truncated);

G_END_DECLS

#endif /* CX__WIRE_OUTPUT_LIMIT_H */
