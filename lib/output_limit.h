/* lib/output_limit.h: the output-limit rule, in one place for every
 * backend that bounds what a cell shows (the subprocess backend's worker
 * and host, the jupyter backend).  Internal: a convenience library
 * (libcxoutput.la) linked into each of them, not part of libcellexec's ABI.
 *
 * A stream or a text over LIMIT bytes keeps its head (the first
 * LIMIT - LIMIT / 2 bytes) and its tail (the last LIMIT / 2), with a line
 * saying how much was left out between them.  Other data over LIMIT,
 * which a cut would corrupt, is left out with a placeholder in its stead.
 * Every cut is listed in the result's "truncated".  A cell that writes
 * more than CX__OUTPUT_STOP_FACTOR times LIMIT (and at least
 * CX__OUTPUT_STOP_FLOOR bytes) to one stream is stopped with
 * OutputLimitExceeded.  LIMIT 0: no limit.
 */
#ifndef CX__OUTPUT_LIMIT_H
#define CX__OUTPUT_LIMIT_H

#include <cellexec/common.h>

G_BEGIN_DECLS

/* Bytes kept at the head and at the tail of what passes LIMIT (> 0). */
static inline guint64
cx__output_head_size(guint64 limit)
{
  return limit - limit / 2;
}

static inline guint64
cx__output_tail_size(guint64 limit)
{
  return limit / 2;
}

/* A stream that had BEFORE bytes goes on with LEN more: its first *IN_HEAD
 * belong to the head; of the rest, the first *OMITTED can never be part of
 * the tail (whatever follows), the others may. */
void cx__output_split(guint64 limit, guint64 before, gsize len, gsize *in_head, gsize *omitted);

/* The line that stands where OMITTED bytes of a stream or a text were left
 * out (a new string): the one wording, wherever a cut is made. */
char *cx__output_omitted_line(guint64 omitted);

/* TEXT (LEN bytes) cut to LIMIT, its head and tail moved to UTF-8
 * character boundaries, or NULL when it fits; *OMITTED the bytes left out. */
char *cx__output_cut_text(const char *text, gsize len, guint64 limit, guint64 *omitted);

/* At most this many cuts are listed in one array: a cell may show things
 * without end. */
#define CX__OUTPUT_MAX_CUTS_LISTED 1000

/* Add {"part", "total_bytes", "omitted_bytes"} to TRUNCATED (may be NULL)
 * while it has fewer than CX__OUTPUT_MAX_CUTS_LISTED. */
void cx__output_note_cut(JsonArray *truncated, const char *part, guint64 total, guint64 omitted);

/* Bound the member KEY (a string) of OBJECT, recorded as PART. */
void cx__output_bound_string(JsonObject *object, const char *key, const char *part,
                             guint64 limit, JsonArray *truncated);

/* The strings of ARRAY, an error output's traceback from a process that
 * runs untrusted code (a worker, a kernel), as a new vector; NULL when
 * ARRAY is NULL, holds anything but strings, or its lines, each with a
 * line break, pass LIMIT bytes (0: no limit). */
char **cx__output_lines(JsonArray *array, guint64 limit);

/* The same for a member KEY that is a list of lines (an error output's
 * traceback): past LIMIT in all, they are cut as one text of lines. */
void cx__output_bound_lines(JsonObject *object, const char *key, const char *part,
                            guint64 limit, JsonArray *truncated);

/* Bound the MIME bundle "data" and the "metadata" of OUTPUT (a display,
 * a value) to LIMIT: text types are cut, other values over it left out
 * (said in text/plain), metadata over it replaced by {}.  Each cut is
 * noted in TRUNCATED (may be NULL). */
void cx__output_bound_bundle(JsonObject *output, guint64 limit, JsonArray *truncated);

/* A cell is stopped once one stream passed this many times output-limit,
 * and at least CX__OUTPUT_STOP_FLOOR bytes: a backend holds a cell's
 * output (or reads it) until it ends.  The floor keeps a small limit from
 * stopping ordinary cells. */
#define CX__OUTPUT_STOP_FACTOR 16
#define CX__OUTPUT_STOP_FLOOR (16 * 1024 * 1024)

/* The bytes of one stream past which a cell is stopped (0: never). */
guint64 cx__output_stop_threshold(guint64 limit);

/* The message of the OutputLimitExceeded that stops a cell which wrote
 * more than STOP_AT bytes to STREAM ("stdout", "stderr"); new. */
char *cx__output_stop_message(guint64 stop_at, const char *stream);

G_END_DECLS

#endif /* CX__OUTPUT_LIMIT_H */
