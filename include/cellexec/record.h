/* cellexec/record.h: recording real results, and reading recordings back.
 * All of it is ABI 1.1.
 *
 * NAME
 *   cx_recorder, cx_recording - record cells run on any backend; read the
 *   recording for replay (the fake backend's responses = FILE) and checks.
 *
 * SYNOPSIS
 *   g_autoptr(GError) error = NULL;
 *   g_autoptr(cx_backend) backend = cx_backend_open_configured(NULL, "local", &error);
 *   if (!cx_backend_record(backend, "cells.jsonl", &error)) ...
 *   g_autoptr(cx_result) r = cx_backend_run_cell(backend, "1 + 1", NULL, &error);
 *   ...
 *   // later, in a test, without Python:
 *   //   [fake]
 *   //   responses = cells.jsonl
 *   g_autoptr(cx_backend) fake = cx_backend_open_configured(NULL, "fake", &error);
 *
 * DESCRIPTION
 *   A recorder appends one JSON Lines record per run_cell, stateless or in a
 *   session, of every backend it is attached to (the core writes it, so
 *   third-party backends are recorded too).  A record is one line:
 *
 *     {"backend": "local", "session": null | {"id": K, "cell": N},
 *      "code": "...", "options": {"cwd", "env", "timeout",
 *      "use_subprocess", "allowed_mime_types"},
 *      "result": BUNDLE}              (or, when the backend ran nothing,
 *      "failure": {"code": C, "message": "..."} instead of "result")
 *
 *   "session" is null for a stateless cell, else the session's number on
 *   its backend (1 for the first opened) and the cell's number in it (1
 *   for its first cell).  "options" are the run options the backend saw
 *   (the backend's cwd, env and timeout defaults merged in).  BUNDLE is
 *   the whole result bundle as cx_result_to_json() writes it, extra keys
 *   included: nothing is cut, binary MIME data neither.  "failure" is the
 *   GError of a call that returned no result (its CX_ERROR code).
 *
 *   Environment entries whose name matches a redact pattern (by default
 *   cx_debug_default_redact(): *TOKEN*, *SECRET*, *PASSWORD*, *API_KEY*,
 *   *CREDENTIAL*, ignoring case) are written as "NAME=[redacted]", by the
 *   same rule as the debug exports.  Code and outputs are written as they
 *   are: a recording can hold whatever the cells printed.
 *
 *   Each record is written with one write(2) on a file opened with
 *   O_APPEND, under a process-wide mutex and flock(2): threads and
 *   processes recording into one file never interleave lines (over NFS,
 *   flock may not hold).  A write that fails part way is cut off again,
 *   so the file keeps whole lines.
 *
 *   A recording is read back whole: every line must be a record (blank
 *   lines are skipped).  A line that is not one is an error naming the
 *   file and line number, e.g. "calls.jsonl:3: not valid JSON: ..." or
 *   "calls.jsonl:7: the last line is cut short (no line break at its
 *   end): the recording was interrupted".
 *
 * LIMITS
 *   A NUL byte in stdout or stderr is written as \u0000 but read back as
 *   U+FFFD (a JsonNode string cannot hold NUL; the rest of the text is
 *   kept).
 *
 * THREADS
 *   A recorder may be shared by backends and sessions in several threads.
 *   Attach recorders before running cells; a cell running while its
 *   recorder is replaced is recorded by one or the other.  A recording is
 *   read-only once loaded and may be shared.
 */
#ifndef CELLEXEC_RECORD_H
#define CELLEXEC_RECORD_H

#include <cellexec/common.h>

G_BEGIN_DECLS

typedef struct cx_recorder cx_recorder;
typedef struct cx_recording cx_recording;
/* (declared in cellexec.h too) */
typedef struct cx_backend cx_backend;
typedef struct cx_session cx_session;

/* ---- Writing ------------------------------------------------------------- */

/* A recorder appending to PATH (created when missing, never truncated).
 * REDACT: glob patterns of environment names to hide (NULL-terminated;
 * NULL: cx_debug_default_redact()).  Fails with CX_ERROR_FAILED naming
 * PATH when it cannot be opened.  Reference-counted. */
CX_EXPORT cx_recorder *cx_recorder_new(const char *path, const char *const *redact,
                                       GError **error);
CX_EXPORT cx_recorder *cx_recorder_ref(cx_recorder *recorder);
CX_EXPORT void cx_recorder_unref(cx_recorder *recorder);
CX_EXPORT const char *cx_recorder_get_path(const cx_recorder *recorder);

/* Append one record: BACKEND_NAME ran CODE with RUN (may be NULL), as
 * stateless (SESSION 0) or as cell CELL of session SESSION; RESULT, or
 * when it is NULL, FAILURE (must then be set).  The core calls this for
 * every cell of a backend or session with a recorder; call it yourself to
 * write records of your own.  FALSE with ERROR when the file could not be
 * written (nothing of the line stays in it). */
CX_EXPORT gboolean cx_recorder_append(cx_recorder *recorder, const char *backend_name,
                                      const char *code, const cx_run_options *run,
                                      guint session, guint cell, const cx_result *result,
                                      const GError *failure, GError **error);

/* Record every cell run on BACKEND from now on (stateless, and in the
 * sessions opened from now on) with RECORDER; NULL stops.  The backend
 * takes a reference.  A recorder that cannot write warns (g_warning) and
 * the cell's result is returned all the same.  [cellexec] record = FILE in
 * a config (cx_backend_open_configured) and `cellexec run --record FILE`
 * do this. */
CX_EXPORT void cx_backend_set_recorder(cx_backend *backend, cx_recorder *recorder);
/* Shorthand: a new recorder for PATH (default redaction) set on BACKEND. */
CX_EXPORT gboolean cx_backend_record(cx_backend *backend, const char *path, GError **error);
/* The recorder of SESSION only (a session starts with its backend's). */
CX_EXPORT void cx_session_set_recorder(cx_session *session, cx_recorder *recorder);

/* ---- Reading ------------------------------------------------------------- */

/* Read and check the recording PATH (or DATA of LEN bytes, -1: NUL-
 * terminated, named ORIGIN in messages).  Fails with CX_ERROR_JSON, the
 * message starting "FILE:LINE: ", at the first line that is not a record:
 * not JSON, not an object, a key missing or of the wrong type, a result
 * that is not a valid bundle, the last line cut short; CX_ERROR_FAILED
 * when the file cannot be read. */
CX_EXPORT cx_recording *cx_recording_load(const char *path, GError **error);
CX_EXPORT cx_recording *cx_recording_load_data(const char *data, gssize len,
                                               const char *origin, GError **error);
CX_EXPORT void cx_recording_free(cx_recording *recording);

/* The file (or origin) it was read from. */
CX_EXPORT const char *cx_recording_get_origin(const cx_recording *recording);
/* The records, in file order; INDEX counts from 0.  Strings and nodes are
 * owned by RECORDING. */
CX_EXPORT guint cx_recording_get_n_records(const cx_recording *recording);
/* The line of the file the record is on (from 1). */
CX_EXPORT guint cx_recording_get_line(const cx_recording *recording, guint index);
CX_EXPORT const char *cx_recording_get_code(const cx_recording *recording, guint index);
CX_EXPORT const char *cx_recording_get_backend(const cx_recording *recording, guint index);
/* TRUE for a session cell, with its session's number and its own; FALSE
 * (and 0s) for a stateless one.  SESSION and CELL may be NULL. */
CX_EXPORT gboolean cx_recording_get_session(const cx_recording *recording, guint index,
                                            guint *session, guint *cell);
/* The recorded run options (an object; borrowed). */
CX_EXPORT JsonNode *cx_recording_get_options(const cx_recording *recording, guint index);
/* The recorded result (borrowed; read-only), or NULL when the call
 * failed: then cx_recording_get_failure() gives its error. */
CX_EXPORT const cx_result *cx_recording_get_result(const cx_recording *recording, guint index);
CX_EXPORT const GError *cx_recording_get_failure(const cx_recording *recording, guint index);
/* What replaying the record gives: a new copy of its result, or NULL with
 * its recorded failure in ERROR. */
CX_EXPORT cx_result *cx_recording_replay(const cx_recording *recording, guint index,
                                         GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_recorder, cx_recorder_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cx_recording, cx_recording_free)

G_END_DECLS

#endif /* CELLEXEC_RECORD_H */
