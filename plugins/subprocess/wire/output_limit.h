/* plugins/subprocess/wire/output_limit.h: the output-limit rule on the
 * wire (docs/worker-protocol.md, "Limits").  The rule itself is the
 * core's (lib/output_limit.h); here is what the worker channel adds.
 *
 * The cell's process applies it before sending (worker/cell_process.c),
 * the host again on what it receives (cell_call.c, with
 * lib/output_buffer.c): a cell can write frames to its channel itself.
 */
#ifndef CX__WIRE_OUTPUT_LIMIT_H
#define CX__WIRE_OUTPUT_LIMIT_H

#include <cellexec/common.h>

#include "lib/output_limit.h"
#include "plugins/subprocess/wire/frame.h"

G_BEGIN_DECLS

/* Largest part an event or a result whose frame would be too long keeps,
 * whatever output-limit says. */
#define CX__WIRE_PART_MAX (CX__WIRE_MAX_PAYLOAD / 4)

/* Bound the MIME values and metadata of a DISPLAY event, or the evalue
 * and traceback of an error event, to LIMIT.  Each cut adds {"part",
 * "total_bytes", "omitted_bytes"} to TRUNCATED (may be NULL). */
void cx__wire_bound_event(JsonObject *event, guint64 limit, JsonArray *truncated);

G_END_DECLS

#endif /* CX__WIRE_OUTPUT_LIMIT_H */
