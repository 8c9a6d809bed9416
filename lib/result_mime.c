/* The run options' allowed MIME types applied to a result: each bundle
 * keeps only those types, and an output left with none goes. */
#include "config.h"

#include "lib/result_private.h"

/* Keep, in every bundle, only the MIME types RUN allows; drop what is left
 * without data (an execute_result, a display without an id). */
void
cx__result_filter_mime(cx_result *result, const cx_run_options *run)
{
  if (cx_run_options_get_allowed_mime_types(run) == NULL)
    return;
  gboolean changed = FALSE;
  for (guint i = 0; i < result->items->len;) {
    output_item *item = g_ptr_array_index(result->items, i);
    if (item->data == NULL) {
      i++;
      continue;
    }
    JsonObject *kept = cx__run_options_filter_bundle(run, item->data);
    if (kept != NULL) {
      json_object_unref(item->data);
      item->data = kept;
      changed = TRUE;
    }
    if (json_object_get_size(item->data) == 0 &&
        (item->kind == ITEM_EXECUTE_RESULT || (item->kind == ITEM_DISPLAY && item->display_id == NULL))) {
      g_ptr_array_remove_index(result->items, i);
      changed = TRUE;
      continue;
    }
    i++;
  }
  if (changed)
    cx__result_rebuild_rich_outputs(result);
}
