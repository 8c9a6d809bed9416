/* bench/backend_options.h: opening the measured backend with the options a
 * benchmark was given on its command line (-o KEY=VALUE, repeatable). */
#ifndef CX_BENCH_BACKEND_OPTIONS_H
#define CX_BENCH_BACKEND_OPTIONS_H

#include <cellexec/cellexec.h>

/* Backend NAME of REGISTRY with the KEY=VALUE strings of OPTIONS (NULL or
 * empty: its defaults), then those of MORE (may be NULL). */
cx_backend *bench_open_backend(cx_registry *registry, const char *name, char **options,
                               const char *const *more, GError **error);

#endif /* CX_BENCH_BACKEND_OPTIONS_H */
