/* The fake backend's replay of recordings: matching calls to records. */
#include "config.h"

#include <string.h>

#include "plugins/fake/recording.h"

/* One record a code may be answered by. */
typedef struct {
  const cx_recording *recording; /* owned by the replay */
  guint index;
  gboolean replayed;
} candidate;

struct fake_replay {
  GPtrArray *recordings; /* cx_recording* */
  GHashTable *by_code;   /* code (borrowed from a recording) -> GArray of candidate */
  char *description;
};

fake_replay *
fake_replay_new(void)
{
  fake_replay *replay = g_new0(fake_replay, 1);
  replay->recordings = g_ptr_array_new_with_free_func((GDestroyNotify)cx_recording_free);
  replay->by_code = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                          (GDestroyNotify)g_array_unref);
  return replay;
}

void
fake_replay_free(fake_replay *replay)
{
  if (replay == NULL)
    return;
  g_hash_table_unref(replay->by_code);
  g_ptr_array_unref(replay->recordings);
  g_free(replay->description);
  g_free(replay);
}

static void
index_recording(fake_replay *replay, cx_recording *recording)
{
  g_ptr_array_add(replay->recordings, recording);
  for (guint i = 0; i < cx_recording_get_n_records(recording); i++) {
    const char *code = cx_recording_get_code(recording, i);
    GArray *candidates = g_hash_table_lookup(replay->by_code, code);
    if (candidates == NULL) {
      candidates = g_array_new(FALSE, TRUE, sizeof(candidate));
      g_hash_table_insert(replay->by_code, (gpointer)code, candidates);
    }
    candidate c = { recording, i, FALSE };
    g_array_append_val(candidates, c);
  }
  const char *origin = cx_recording_get_origin(recording);
  char *description = replay->description == NULL
                        ? g_strdup(origin)
                        : g_strdup_printf("%s and %s", replay->description, origin);
  g_free(replay->description);
  replay->description = description;
}

gboolean
fake_replay_add_data(fake_replay *replay, const char *path, const char *data, gsize len,
                     GError **error)
{
  cx_recording *recording = cx_recording_load_data(data, (gssize)len, path, error);
  if (recording == NULL)
    return FALSE;
  index_recording(replay, recording);
  return TRUE;
}

gboolean
fake_replay_add(fake_replay *replay, const char *path, GError **error)
{
  cx_recording *recording = cx_recording_load(path, error);
  if (recording == NULL)
    return FALSE;
  index_recording(replay, recording);
  return TRUE;
}

const char *
fake_replay_describe(const fake_replay *replay)
{
  return replay->description;
}

static gboolean
at_position(const candidate *c, guint session, guint cell)
{
  guint recorded_session = 0, recorded_cell = 0;
  cx_recording_get_session(c->recording, c->index, &recorded_session, &recorded_cell);
  return recorded_session == session && recorded_cell == cell;
}

gboolean
fake_replay_lookup(fake_replay *replay, const char *code, guint session, guint cell,
                   cx_result **result, GError **error)
{
  GArray *candidates = g_hash_table_lookup(replay->by_code, code);
  if (candidates == NULL)
    return FALSE;
  /* Same position first, if the recording has the code there. */
  gboolean positioned = FALSE;
  for (guint i = 0; i < candidates->len && !positioned; i++)
    positioned = at_position(&g_array_index(candidates, candidate, i), session, cell);
  candidate *chosen = NULL;
  for (guint i = 0; i < candidates->len; i++) {
    candidate *c = &g_array_index(candidates, candidate, i);
    if (positioned && !at_position(c, session, cell))
      continue;
    if (!c->replayed) {
      chosen = c;
      break;
    }
    chosen = c; /* all replayed: the last again */
  }
  chosen->replayed = TRUE;
  *result = cx_recording_replay(chosen->recording, chosen->index, error);
  return TRUE;
}
