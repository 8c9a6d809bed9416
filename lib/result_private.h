/* lib/result_private.h: the result bundle's representation, shared by the
 * files that build it (result.c), read it from JSON (result_json.c) and
 * filter its MIME types (result_mime.c).  Internal to libcellexec. */
#ifndef CX_LIB_RESULT_PRIVATE_H
#define CX_LIB_RESULT_PRIVATE_H

#include "lib/internal.h"

/* One entry of the ordered outputs.  The error output is not one: it is
 * made from the error fields, always last. */
typedef enum {
  ITEM_STREAM,
  ITEM_DISPLAY,
  ITEM_EXECUTE_RESULT,
  ITEM_SHOWN_ERROR, /* an error shown, not the cell's failure */
} item_kind;

typedef struct {
  item_kind kind;
  int stream;           /* ITEM_STREAM: 1 stdout, 2 stderr */
  GString *text;        /* ITEM_STREAM: its bytes */
  char *ename, *evalue; /* ITEM_SHOWN_ERROR */
  char **traceback;     /* ITEM_SHOWN_ERROR: the lines of its "traceback" */
  JsonObject *data;     /* the others: the MIME bundle (possibly empty) */
  JsonObject *metadata; /* never NULL for them */
  char *display_id;     /* ITEM_DISPLAY, ITEM_EXECUTE_RESULT: NULL when it has none */
  gint64 execution_count;
} output_item;

struct cx_result {
  GString *out;
  GString *err;
  GPtrArray *items;   /* output_item*, in the order they happened */
  GPtrArray *outputs; /* rich_outputs: the bundles of the non-empty items, borrowed */
  gboolean clear_pending; /* clear_output(wait=True) waits for the next output */
  gboolean success;
  char *error_type; /* NULL when no error */
  char *error_message;
  char *error_traceback;
  /* How the error shows in the outputs: its output's traceback lines
   * (NULL: those of error_traceback), or no output at all. */
  char **error_output_lines;
  gboolean error_output_hidden;
  JsonObject *extras; /* extra top-level keys, in insertion order */
  /* Every update_display_data of the cell, in order ({display_id, data,
   * metadata}), whether or not it matched an output of this cell: a
   * later cell may update an earlier cell's display (notebook_run.c).
   * NULL while there is none. */
  JsonArray *display_updates;
  /* Streaming: each output goes to the output callback of LISTENER_RUN as
   * it is added (cx_result_new_streaming), or a plugin gave them itself;
   * either way the core does not give them again. */
  cx_run_options *listener_run;
  gboolean streamed;
};

/* A new item of KIND with BUNDLE and METADATA (referenced; NULL: {}),
 * after any clear_output(wait=True) it was waiting for; non-empty
 * bundles are rich_outputs too. */
output_item *cx__result_add_bundle_item(cx_result *result, item_kind kind, JsonObject *bundle,
                                        JsonObject *metadata);

/* LEN bytes of DATA on STREAM (1 stdout, 2 stderr): to the stream's text
 * and to the ordered outputs, joined with the stream's last output. */
void cx__result_append_stream(cx_result *result, int stream, const char *data, gsize len);

/* TEXT of an error (NUL as CX_RESULT_NUL) for a JsonNode: as it is when
 * KEEP_NUL (cx_json_to_string writes the marker as \u0000), else with each
 * NUL as U+FFFD, as set_text_member() does.  A new string. */
char *cx__result_error_text(const char *text, gboolean keep_nul);

/* The lines of TRACEBACK, as an error output lists them (a new vector). */
char **cx__result_traceback_lines(const char *traceback);

/* rich_outputs follows the items: rebuilt after a change to their data. */
void cx__result_rebuild_rich_outputs(cx_result *result);

/* TEXT is UTF-8; with NUL_MARKER, CX_RESULT_NUL in it stands for a NUL. */
gboolean cx__result_text_is_valid(const char *text, gboolean nul_marker);

/* KEY is one of the bundle's own members (stdout, stderr, rich_outputs,
 * success, error, outputs), which cx_result_set_extra() refuses. */
gboolean cx__result_key_is_reserved(const char *key);

#endif /* CX_LIB_RESULT_PRIVATE_H */
