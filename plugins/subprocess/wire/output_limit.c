/* plugins/subprocess/wire/output_limit.c: the output-limit rule applied
 * to the worker's events (see the header). */
#include "config.h"

#include "plugins/subprocess/wire/output_limit.h"
#include "plugins/subprocess/wire/protocol.h"

void
cx__wire_bound_event(JsonObject *event, guint64 limit, JsonArray *truncated)
{
  if (limit == 0)
    return;
  const char *kind = cx__peer_get_string(event, "event", "");
  if (g_str_equal(kind, "error")) {
    cx__output_bound_string(event, "evalue", "evalue", limit, truncated);
    cx__output_bound_lines(event, "traceback", "traceback", limit, truncated);
    return;
  }
  cx__output_bound_bundle(event, limit, truncated);
}
