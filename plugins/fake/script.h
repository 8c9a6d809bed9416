/* The fake backend's script: scripted responses and how a call picks one. */
#ifndef CX_FAKE_SCRIPT_H
#define CX_FAKE_SCRIPT_H

#include <cellexec/plugin.h>

typedef struct fake_script fake_script;

/* Load the responses file PATH: a JSON array whose entries are either a
 * result bundle (returned once, in order) or {"match": REGEX, "result":
 * BUNDLE} (returned for every cell whose code REGEX matches, and never
 * consumed).  PATH NULL gives an empty script. */
fake_script *fake_script_load(const char *path, GError **error);
void fake_script_free(fake_script *script);

/* The result for CODE: the first matching rule, else the next bundle in
 * order, else NULL.  Not thread-safe: the caller serialises. */
cx_result *fake_script_next(fake_script *script, const char *code);

/* How many ordered bundles are left. */
guint fake_script_remaining(const fake_script *script);

#endif /* CX_FAKE_SCRIPT_H */
