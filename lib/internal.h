/* Declarations shared between the core's own files; not installed. */
#ifndef CX_LIB_INTERNAL_H
#define CX_LIB_INTERNAL_H

#include <cellexec/cellexec.h>

/* A usable plugin's vtables, copied into zero-padded structures of this
 * core's size (see plugin.h, VERSIONING). */
typedef struct {
  const cx_plugin *descriptor;
  cx_backend_vtable backend;
  cx_executor_vtable executor;
  gboolean has_executor;
} cx__loaded_plugin;

/* The loaded plugin behind a usable registry entry (NULL if faulty). */
const cx__loaded_plugin *cx__plugin_info_get_loaded(const cx_plugin_info *info);

/* Parse VALUE as TYPE; on failure set ERROR with a message naming TYPE. */
gboolean cx__option_value_check(cx_option_type type, const char *value, GError **error);

#endif /* CX_LIB_INTERNAL_H */
