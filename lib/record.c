/* Recordings: the recorder that appends one JSON line per cell (attached to
 * backends and sessions by the core), and the reader and validator of such
 * files, shared by the fake backend's replay and `cellexec record`. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/internal.h"

/* ---- Writing ------------------------------------------------------------- */

struct cx_recorder {
  gint references;   /* atomic */
  int fd;            /* O_APPEND */
  char *path;
  GPtrArray *redact; /* GPatternSpec*, as the debug exports' */
  GMutex lock;       /* one line at a time from this process... */
};                   /* ...and flock(2) against the others */

cx_recorder *
cx_recorder_new(const char *path, const char *const *redact, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  int fd = cx__safe_file_open_append(path, "the recording", FALSE, error);
  if (fd < 0)
    return NULL;
  cx_recorder *recorder = g_new0(cx_recorder, 1);
  recorder->references = 1;
  recorder->fd = fd;
  recorder->path = g_strdup(path);
  recorder->redact = cx__redact_patterns_new(redact);
  g_mutex_init(&recorder->lock);
  return recorder;
}

cx_recorder *
cx_recorder_ref(cx_recorder *recorder)
{
  g_return_val_if_fail(recorder != NULL, NULL);
  g_atomic_int_inc(&recorder->references);
  return recorder;
}

void
cx_recorder_unref(cx_recorder *recorder)
{
  if (recorder == NULL || !g_atomic_int_dec_and_test(&recorder->references))
    return;
  close(recorder->fd);
  g_free(recorder->path);
  g_ptr_array_unref(recorder->redact);
  g_mutex_clear(&recorder->lock);
  g_free(recorder);
}

const char *
cx_recorder_get_path(const cx_recorder *recorder)
{
  g_return_val_if_fail(recorder != NULL, NULL);
  return recorder->path;
}

/* The run options as recorded: environment entries redacted. */
static JsonNode *
options_node(cx_recorder *recorder, const cx_run_options *run)
{
  g_autoptr(cx_run_options) none = run == NULL ? cx_run_options_new() : NULL;
  JsonNode *node = cx_run_options_to_json_node(run != NULL ? run : none);
  JsonArray *env = json_object_get_array_member(json_node_get_object(node), "env");
  for (guint i = 0; env != NULL && i < json_array_get_length(env); i++) {
    g_autofree char *hidden =
      cx__redact_assignment(recorder->redact, json_array_get_string_element(env, i));
    if (hidden != NULL)
      json_node_set_string(json_array_get_element(env, i), hidden);
  }
  return node;
}

/* The record as one line of text, ending with a line break.  The result
 * bundle goes in as cx_result_to_json() writes it, every byte kept. */
static char *
record_line(cx_recorder *recorder, const char *backend_name, const char *code,
            const cx_run_options *run, guint session, guint cell, const cx_result *result,
            const GError *failure)
{
  g_autoptr(JsonBuilder) builder = json_builder_new();
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "backend");
  json_builder_add_string_value(builder, backend_name);
  json_builder_set_member_name(builder, "session");
  if (session == 0) {
    json_builder_add_null_value(builder);
  } else {
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "id");
    json_builder_add_int_value(builder, session);
    json_builder_set_member_name(builder, "cell");
    json_builder_add_int_value(builder, cell);
    json_builder_end_object(builder);
  }
  json_builder_set_member_name(builder, "code");
  g_autofree char *text = cx__json_text_from_bytes(code, strlen(code), FALSE);
  json_builder_add_string_value(builder, text);
  json_builder_set_member_name(builder, "options");
  json_builder_add_value(builder, options_node(recorder, run));
  if (result == NULL) {
    json_builder_set_member_name(builder, "failure");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "code");
    json_builder_add_int_value(builder, failure->domain == CX_ERROR ? failure->code : CX_ERROR_FAILED);
    json_builder_set_member_name(builder, "message");
    json_builder_add_string_value(builder, failure->message);
    json_builder_end_object(builder);
  }
  json_builder_end_object(builder);
  g_autoptr(JsonNode) head = json_builder_get_root(builder);
  g_autofree char *head_text = cx_json_to_string(head, FALSE);
  if (result == NULL)
    return g_strconcat(head_text, "\n", NULL);
  /* The head ends with its closing brace: the bundle goes before it. */
  head_text[strlen(head_text) - 1] = '\0';
  g_autofree char *bundle = cx_result_to_json(result, FALSE);
  return g_strconcat(head_text, ",\"result\":", bundle, "}\n", NULL);
}

/* LEN bytes of LINE at the end of the file, whole or not at all. */
static gboolean
append_locked(cx_recorder *recorder, const char *line, gsize len, GError **error)
{
  while (flock(recorder->fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      int saved = errno;
      g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot lock the recording %s: %s",
                  recorder->path, g_strerror(saved));
      return FALSE;
    }
  off_t start = lseek(recorder->fd, 0, SEEK_END);
  gsize done = 0;
  int saved = 0;
  while (done < len) {
    ssize_t n = write(recorder->fd, line + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      saved = n < 0 ? errno : ENOSPC;
      break;
    }
    done += (gsize)n;
  }
  /* A line cut short would spoil the next one: take it back. */
  if (done < len && done > 0 && start >= 0 && ftruncate(recorder->fd, start) != 0)
    g_warning("cellexec: the recording %s now ends with a partial line", recorder->path);
  flock(recorder->fd, LOCK_UN);
  if (done == len)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot write to the recording %s: %s",
              recorder->path, g_strerror(saved));
  return FALSE;
}

gboolean
cx_recorder_append(cx_recorder *recorder, const char *backend_name, const char *code,
                   const cx_run_options *run, guint session, guint cell, const cx_result *result,
                   const GError *failure, GError **error)
{
  g_return_val_if_fail(recorder != NULL && backend_name != NULL && code != NULL, FALSE);
  g_return_val_if_fail(result != NULL || failure != NULL, FALSE);
  g_autofree char *line =
    record_line(recorder, backend_name, code, run, session, cell, result, failure);
  g_mutex_lock(&recorder->lock);
  gboolean ok = append_locked(recorder, line, strlen(line), error);
  g_mutex_unlock(&recorder->lock);
  return ok;
}

/* ---- Attaching to backends and sessions ---------------------------------- */

/* Guards the recorder pointers of every backend and session: swapping one
 * while another thread takes a reference to it. */
static GMutex attach_lock;

static void
swap_recorder(cx_recorder **slot, cx_recorder *recorder)
{
  if (recorder != NULL)
    cx_recorder_ref(recorder);
  g_mutex_lock(&attach_lock);
  cx_recorder *old = *slot;
  g_atomic_pointer_set(slot, recorder);
  g_mutex_unlock(&attach_lock);
  cx_recorder_unref(old);
}

static cx_recorder *
take_recorder(cx_recorder **slot)
{
  if (g_atomic_pointer_get(slot) == NULL)
    return NULL; /* every cell asks: no lock when nothing records */
  g_mutex_lock(&attach_lock);
  cx_recorder *recorder = *slot != NULL ? cx_recorder_ref(*slot) : NULL;
  g_mutex_unlock(&attach_lock);
  return recorder;
}

static void
on_session_opened(cx_backend *backend, cx_session *session)
{
  session->recorder = take_recorder(&backend->recorder);
}

/* A cell's outcome appended to the recorder of SESSION (NULL: stateless,
 * BACKEND's). */
static void
on_cell_done(cx_backend *backend, cx_session *session, guint cell, const char *code,
             const cx_run_options *run, const cx_result *result, const GError *failure)
{
  guint id = session != NULL ? session->number : 0;
  g_autoptr(cx_recorder) recorder =
    take_recorder(session != NULL ? &session->recorder : &backend->recorder);
  if (recorder == NULL)
    return;
  g_autoptr(GError) error = NULL;
  if (!cx_recorder_append(recorder, cx_backend_get_name(backend), code, run, id, cell, result,
                          failure, &error))
    g_warning("cellexec: %s", error->message);
}

static void
on_session_closed(cx_session *session)
{
  g_clear_pointer(&session->recorder, cx_recorder_unref);
}

static void
on_backend_closed(cx_backend *backend)
{
  g_clear_pointer(&backend->recorder, cx_recorder_unref);
}

static const cx__cell_observer recording_observer = {
  .session_opened = on_session_opened,
  .cell_done = on_cell_done,
  .session_closed = on_session_closed,
  .backend_closed = on_backend_closed,
};

void
cx_backend_set_recorder(cx_backend *backend, cx_recorder *recorder)
{
  g_return_if_fail(backend != NULL);
  /* Observed from the first recorder on: before it, no backend had one
   * to give its sessions. */
  cx__cell_observer_add(&recording_observer);
  swap_recorder(&backend->recorder, recorder);
}

gboolean
cx_backend_record(cx_backend *backend, const char *path, GError **error)
{
  g_return_val_if_fail(backend != NULL && path != NULL, FALSE);
  g_autoptr(cx_recorder) recorder = cx_recorder_new(path, NULL, error);
  if (recorder == NULL)
    return FALSE;
  cx_backend_set_recorder(backend, recorder);
  return TRUE;
}

void
cx_session_set_recorder(cx_session *session, cx_recorder *recorder)
{
  g_return_if_fail(session != NULL);
  cx__cell_observer_add(&recording_observer);
  swap_recorder(&session->recorder, recorder);
}

/* ---- Reading ------------------------------------------------------------- */

typedef struct {
  guint line;
  char *code;
  char *backend;
  guint session, cell; /* 0, 0: stateless */
  JsonNode *options;   /* an object, or a null node */
  cx_result *result;   /* NULL: FAILURE is set */
  GError *failure;
} record_entry;

struct cx_recording {
  char *origin;
  GPtrArray *records; /* record_entry* */
};

static void
record_entry_free(record_entry *entry)
{
  g_free(entry->code);
  g_free(entry->backend);
  if (entry->options != NULL)
    json_node_unref(entry->options);
  cx_result_free(entry->result);
  g_clear_error(&entry->failure);
  g_free(entry);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(record_entry, record_entry_free)

static const char record_shape[] =
  "a record is {\"backend\", \"session\", \"code\", \"options\", \"result\"}";

static gboolean G_GNUC_PRINTF(4, 5)
line_error(GError **error, const char *origin, guint line, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, CX_ERROR, CX_ERROR_JSON, "%s:%u: %s", origin, line, message);
  return FALSE;
}

static const char *
string_member(JsonObject *object, const char *key)
{
  JsonNode *node = json_object_get_member(object, key);
  return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
             json_node_get_value_type(node) == G_TYPE_STRING
           ? json_node_get_string(node) : NULL;
}

/* A positive integer member of OBJECT, or 0. */
static guint
count_member(JsonObject *object, const char *key)
{
  JsonNode *node = json_object_get_member(object, key);
  if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64)
    return 0;
  gint64 value = json_node_get_int(node);
  return value >= 1 && value <= G_MAXUINT ? (guint)value : 0;
}

static gboolean
read_session(JsonObject *object, record_entry *entry, const char *origin, GError **error)
{
  JsonNode *node = json_object_get_member(object, "session");
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (JSON_NODE_HOLDS_OBJECT(node)) {
    entry->session = count_member(json_node_get_object(node), "id");
    entry->cell = count_member(json_node_get_object(node), "cell");
  }
  if (entry->session == 0 || entry->cell == 0)
    return line_error(error, origin, entry->line,
                      "\"session\" must be null or {\"id\": K, \"cell\": N} with K, N from 1");
  return TRUE;
}

static gboolean
read_outcome(JsonObject *object, record_entry *entry, const char *origin, GError **error)
{
  JsonNode *result = json_object_get_member(object, "result");
  JsonNode *failure = json_object_get_member(object, "failure");
  if ((result == NULL) == (failure == NULL))
    return line_error(error, origin, entry->line,
                      result == NULL ? "missing key \"result\"; %s"
                                     : "both \"result\" and \"failure\"; %s", record_shape);
  if (result != NULL) {
    g_autoptr(GError) bad = NULL;
    entry->result = cx_result_from_json_node(result, &bad);
    if (entry->result == NULL)
      return line_error(error, origin, entry->line, "\"result\": %s", bad->message);
    return TRUE;
  }
  const char *message = JSON_NODE_HOLDS_OBJECT(failure)
                          ? string_member(json_node_get_object(failure), "message") : NULL;
  JsonNode *code = JSON_NODE_HOLDS_OBJECT(failure)
                     ? json_object_get_member(json_node_get_object(failure), "code") : NULL;
  if (message == NULL || code == NULL || !JSON_NODE_HOLDS_VALUE(code) ||
      json_node_get_value_type(code) != G_TYPE_INT64)
    return line_error(error, origin, entry->line,
                      "\"failure\" must be {\"code\": INTEGER, \"message\": STRING}");
  entry->failure = g_error_new_literal(CX_ERROR, (gint)json_node_get_int(code), message);
  return TRUE;
}

static record_entry *
read_record(const char *text, gsize len, guint line, gboolean cut_short, const char *origin,
            GError **error)
{
  g_autoptr(GError) parse_error = NULL;
  /* Nesting cx_json_from_string refuses is valid JSON: told apart. */
  if (!cx__json_check_bounds(text, len, &parse_error)) {
    line_error(error, origin, line, "%s", parse_error->message);
    return NULL;
  }
  g_autoptr(JsonNode) root = cx_json_from_string(text, (gssize)len, &parse_error);
  if (root == NULL) {
    if (cut_short)
      line_error(error, origin, line,
                 "the last line is cut short (no line break at its end, and not valid JSON: "
                 "%s): the recording was interrupted while it was written", parse_error->message);
    else
      line_error(error, origin, line, "not valid JSON: %s", parse_error->message);
    return NULL;
  }
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    line_error(error, origin, line, "not a JSON object; %s", record_shape);
    return NULL;
  }
  JsonObject *object = json_node_get_object(root);
  g_autoptr(record_entry) entry = g_new0(record_entry, 1);
  entry->line = line;
  static const char *const required[] = { "backend", "code", NULL };
  for (const char *const *key = required; *key != NULL; key++) {
    if (!json_object_has_member(object, *key)) {
      line_error(error, origin, line, "missing key \"%s\"; %s", *key, record_shape);
      return NULL;
    }
    if (string_member(object, *key) == NULL) {
      line_error(error, origin, line, "\"%s\" must be a string", *key);
      return NULL;
    }
  }
  entry->code = g_strdup(string_member(object, "code"));
  entry->backend = g_strdup(string_member(object, "backend"));
  JsonNode *options = json_object_get_member(object, "options");
  if (options != NULL && !JSON_NODE_HOLDS_OBJECT(options) && !JSON_NODE_HOLDS_NULL(options)) {
    line_error(error, origin, line, "\"options\" must be an object or null");
    return NULL;
  }
  entry->options = options != NULL ? json_node_copy(options)
                                   : json_node_init_null(json_node_alloc());
  if (!read_session(object, entry, origin, error) || !read_outcome(object, entry, origin, error))
    return NULL;
  return g_steal_pointer(&entry);
}

void
cx_recording_free(cx_recording *recording)
{
  if (recording == NULL)
    return;
  g_free(recording->origin);
  g_ptr_array_unref(recording->records);
  g_free(recording);
}

cx_recording *
cx_recording_load_data(const char *data, gssize len, const char *origin, GError **error)
{
  g_return_val_if_fail(data != NULL || len == 0, NULL);
  gsize size = len < 0 ? strlen(data) : (gsize)len;
  g_autoptr(cx_recording) recording = g_new0(cx_recording, 1);
  recording->origin = g_strdup(origin != NULL ? origin : "recording");
  recording->records = g_ptr_array_new_with_free_func((GDestroyNotify)record_entry_free);
  const char *p = data, *end = data + size;
  for (guint line = 1; p < end; line++) {
    const char *newline = memchr(p, '\n', (gsize)(end - p));
    const char *stop = newline != NULL ? newline : end;
    const char *c = p;
    while (c < stop && g_ascii_isspace(*c))
      c++;
    if (c < stop) { /* blank lines are skipped */
      if (memchr(p, '\0', (gsize)(stop - p)) != NULL) {
        line_error(error, recording->origin, line, "holds a NUL byte; a record is JSON text");
        return NULL;
      }
      record_entry *entry = read_record(p, (gsize)(stop - p), line, newline == NULL,
                                        recording->origin, error);
      if (entry == NULL)
        return NULL;
      g_ptr_array_add(recording->records, entry);
    }
    p = newline != NULL ? newline + 1 : end;
  }
  return g_steal_pointer(&recording);
}

cx_recording *
cx_recording_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *contents = NULL;
  gsize length = 0;
  if (!cx_file_get_contents(path, &contents, &length, error))
    return NULL;
  return cx_recording_load_data(contents, (gssize)length, path, error);
}

const char *
cx_recording_get_origin(const cx_recording *recording)
{
  g_return_val_if_fail(recording != NULL, NULL);
  return recording->origin;
}

guint
cx_recording_get_n_records(const cx_recording *recording)
{
  g_return_val_if_fail(recording != NULL, 0);
  return recording->records->len;
}

static const record_entry *
entry_at(const cx_recording *recording, guint index)
{
  g_return_val_if_fail(recording != NULL && index < recording->records->len, NULL);
  return g_ptr_array_index(recording->records, index);
}

guint
cx_recording_get_line(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->line : 0;
}

const char *
cx_recording_get_code(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->code : NULL;
}

const char *
cx_recording_get_backend(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->backend : NULL;
}

gboolean
cx_recording_get_session(const cx_recording *recording, guint index, guint *session, guint *cell)
{
  const record_entry *entry = entry_at(recording, index);
  if (session != NULL)
    *session = entry != NULL ? entry->session : 0;
  if (cell != NULL)
    *cell = entry != NULL ? entry->cell : 0;
  return entry != NULL && entry->session != 0;
}

JsonNode *
cx_recording_get_options(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->options : NULL;
}

const cx_result *
cx_recording_get_result(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->result : NULL;
}

const GError *
cx_recording_get_failure(const cx_recording *recording, guint index)
{
  const record_entry *entry = entry_at(recording, index);
  return entry != NULL ? entry->failure : NULL;
}

cx_result *
cx_recording_replay(const cx_recording *recording, guint index, GError **error)
{
  const record_entry *entry = entry_at(recording, index);
  if (entry == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "no record %u in the recording", index);
    return NULL;
  }
  if (entry->result != NULL)
    return cx_result_copy(entry->result);
  g_propagate_error(error, g_error_copy(entry->failure));
  return NULL;
}
