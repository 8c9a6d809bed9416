/* The fake backend's script: scripted responses and how a call picks one. */
#ifndef CX_FAKE_SCRIPT_H
#define CX_FAKE_SCRIPT_H

#include <cellexec/plugin.h>

typedef struct fake_script fake_script;

/* Load the responses file PATH: either a recording (JSON Lines written by
 * a recorder, cellexec/record.h) as it is, or a JSON array whose entries
 * are a result bundle (returned once, in order), {"match": REGEX,
 * "result": BUNDLE} (returned for every cell whose code REGEX matches, and
 * never consumed) or {"recording": FILE} (a recording to replay, relative
 * to PATH's directory).  PATH NULL gives an empty script. */
fake_script *fake_script_load(const char *path, GError **error);
void fake_script_free(fake_script *script);

/* The answer for CODE run as cell CELL of session SESSION (0, 0:
 * stateless): the first matching rule, else a recorded result (see
 * recording.h), else the next bundle in order.  TRUE when the script
 * answers: *RESULT is the result, or NULL with ERROR set when a recorded
 * call failed.  FALSE when it has nothing.  Not thread-safe: the caller
 * serialises. */
gboolean fake_script_next(fake_script *script, const char *code, guint session, guint cell,
                          cx_result **result, GError **error);

/* The recordings loaded ("a.jsonl"), or NULL when none. */
const char *fake_script_recordings(const fake_script *script);

/* How many ordered bundles are left. */
guint fake_script_remaining(const fake_script *script);

#endif /* CX_FAKE_SCRIPT_H */
