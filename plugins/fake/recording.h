/* The fake backend's replay of recordings (cellexec/record.h): which
 * recorded result answers a call. */
#ifndef CX_FAKE_RECORDING_H
#define CX_FAKE_RECORDING_H

#include <cellexec/cellexec.h>

typedef struct fake_replay fake_replay;

fake_replay *fake_replay_new(void);
void fake_replay_free(fake_replay *replay);

/* Add the records of the recording PATH (errors name its line). */
gboolean fake_replay_add(fake_replay *replay, const char *path, GError **error);
/* Add the recording DATA read from PATH already. */
gboolean fake_replay_add_data(fake_replay *replay, const char *path, const char *data, gsize len,
                              GError **error);
/* The files added, for messages ("a.jsonl", "a.jsonl and b.jsonl"); NULL
 * when none. */
const char *fake_replay_describe(const fake_replay *replay);

/* The record answering CODE, run as cell CELL of session SESSION (0, 0:
 * stateless).  A call is matched by its code; when several records have
 * that code, those at the same session position are preferred, then the
 * first not replayed yet (the last again once all were).  TRUE when one
 * answers: *RESULT is a new copy of its result, or NULL with ERROR set to
 * its recorded failure.  FALSE when none does.  Not thread-safe. */
gboolean fake_replay_lookup(fake_replay *replay, const char *code, guint session, guint cell,
                            cx_result **result, GError **error);

#endif /* CX_FAKE_RECORDING_H */
