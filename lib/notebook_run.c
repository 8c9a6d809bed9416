/* Running a notebook's code cells in one session, as nbclient does. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"
#include "lib/notebook_internal.h"

/* An ISO 8601 UTC timestamp with microseconds, as nbclient writes them. */
static char *
timestamp_now(void)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  return g_date_time_format(now, "%Y-%m-%dT%H:%M:%S.%fZ");
}

/* OBJECT's metadata object (a cell's or the notebook's), made when
 * missing. */
static JsonObject *
metadata_of(JsonObject *object)
{
  JsonNode *metadata = json_object_get_member(object, "metadata");
  if (metadata == NULL || !JSON_NODE_HOLDS_OBJECT(metadata)) {
    json_object_set_object_member(object, "metadata", json_object_new());
    metadata = json_object_get_member(object, "metadata");
  }
  return json_node_get_object(metadata);
}

/* metadata.execution: nbclient's four timestamps.  Without a kernel's
 * messages, busy = execute_input = the start, and reply = idle = the end. */
static void
set_execution_timing(JsonObject *cell, const char *started, const char *ended)
{
  JsonObject *execution = json_object_new();
  json_object_set_string_member(execution, "iopub.status.busy", started);
  json_object_set_string_member(execution, "iopub.execute_input", started);
  json_object_set_string_member(execution, "shell.execute_reply", ended);
  json_object_set_string_member(execution, "iopub.status.idle", ended);
  json_object_set_object_member(metadata_of(cell), "execution", execution);
}

/* The cell's outputs and execution count from RESULT.  A NUL the cell
 * wrote stays one: the notebook writes it back as \u0000, as nbclient
 * stores a kernel's. */
static void
store_result(JsonObject *cell, const cx_result *result)
{
  json_object_set_array_member(cell, "outputs", cx__result_list_outputs_keeping_nul(result));
  JsonNode *count = cx_result_get_extra(result, "execution_count");
  if (count != NULL && json_node_get_value_type(count) == G_TYPE_INT64)
    json_object_set_int_member(cell, "execution_count", json_node_get_int(count));
  else
    json_object_set_null_member(cell, "execution_count");
}

/* ---- Displays updated by later cells -------------------------------------------- */

/* Display id -> GPtrArray of the output objects (borrowed from the
 * notebook's cells) that show it, as nbclient keeps them: a later cell's
 * update_display_data replaces their data and metadata. */
typedef GHashTable display_index;

static display_index *
display_index_new(void)
{
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)g_ptr_array_unref);
}

/* RESULT's updates applied to the displays of earlier cells in INDEX,
 * then CELL's own displays (stored from RESULT) added to it. */
static void
update_displays(display_index *index, JsonObject *cell, const cx_result *result)
{
  JsonArray *updates = cx__result_display_updates(result);
  for (guint i = 0; updates != NULL && i < json_array_get_length(updates); i++) {
    JsonObject *update = json_array_get_object_element(updates, i);
    GPtrArray *shown = g_hash_table_lookup(index, json_object_get_string_member(update, "display_id"));
    for (guint j = 0; shown != NULL && j < shown->len; j++) {
      JsonObject *output = g_ptr_array_index(shown, j);
      json_object_set_object_member(output, "data",
                                    cx__json_object_deep_copy(json_object_get_object_member(update, "data")));
      json_object_set_object_member(output, "metadata",
                                    cx__json_object_deep_copy(json_object_get_object_member(update, "metadata")));
    }
  }
  JsonArray *outputs = json_object_get_array_member(cell, "outputs");
  for (guint i = 0; i < json_array_get_length(outputs); i++) {
    const char *id = cx__result_output_display_id(result, i);
    if (id == NULL)
      continue;
    GPtrArray *shown = g_hash_table_lookup(index, id);
    if (shown == NULL) {
      shown = g_ptr_array_new();
      g_hash_table_insert(index, g_strdup(id), shown);
    }
    g_ptr_array_add(shown, json_array_get_object_element(outputs, i));
  }
}

/* ---- Running ---------------------------------------------------------------------- */

typedef struct {
  cx_notebook_cell_func callback;
  gpointer user_data;
  cx_notebook_cell_report report;
} reporter;

static void
report(reporter *to, cx_notebook_cell_status status, const cx_result *result, double seconds)
{
  if (to->callback == NULL)
    return;
  to->report.status = status;
  to->report.result = result;
  to->report.duration_s = seconds;
  to->callback(&to->report, to->user_data);
}

static guint
count_code_cells(JsonArray *cells)
{
  guint n = 0;
  for (guint i = 0; i < json_array_get_length(cells); i++) {
    JsonObject *cell = json_array_get_object_element(cells, i);
    n += strcmp(json_object_get_string_member(cell, "cell_type"), "code") == 0;
  }
  return n;
}

/* Cells whose source is only whitespace do not run, as in nbclient. */
static gboolean
is_blank(const char *source)
{
  for (const char *c = source; *c; c++)
    if (!g_ascii_isspace(*c))
      return FALSE;
  return TRUE;
}

/* Refuse a notebook whose kernelspec (or, without one, language_info)
 * names a language other than Python: its cells would fail as Python. */
static gboolean
check_language(const cx_notebook *notebook, GError **error)
{
  JsonObject *metadata = cx__notebook_member_object(json_node_get_object(notebook->root), "metadata");
  JsonObject *kernelspec = cx__notebook_member_object(metadata, "kernelspec");
  const char *kernel = kernelspec != NULL
                         ? json_object_get_string_member_with_default(kernelspec, "name", NULL)
                         : NULL;
  const char *language = kernelspec != NULL
                           ? json_object_get_string_member_with_default(kernelspec, "language", NULL)
                           : NULL;
  JsonObject *info = cx__notebook_member_object(metadata, "language_info");
  if (language == NULL && info != NULL)
    language = json_object_get_string_member_with_default(info, "name", NULL);
  if (language == NULL || g_ascii_strcasecmp(language, "python") == 0)
    return TRUE;
  if (kernel != NULL)
    g_set_error(error, CX_ERROR, CX_ERROR_NOTEBOOK,
                "%s: its kernel is %s (language %s); cellexec runs Python notebooks only",
                notebook->origin, kernel, language);
  else
    g_set_error(error, CX_ERROR, CX_ERROR_NOTEBOOK,
                "%s: its language is %s; cellexec runs Python notebooks only",
                notebook->origin, language);
  return FALSE;
}

/* The version of SESSION's Python ("3.11.2"), asked through an environment
 * of its own, so that no cell runs (and no execution count moves); NULL
 * when the backend cannot evaluate expressions. */
static char *
python_version(cx_session *session)
{
  cx_env *env = cx_session_execute_prelude(session, "import sys", NULL);
  if (env == NULL)
    return NULL;
  g_autoptr(JsonNode) version = cx_env_evaluate_inline(env, "sys.version.split()[0]", NULL, NULL);
  cx_env_free(env);
  if (version == NULL || !JSON_NODE_HOLDS_VALUE(version) ||
      json_node_get_value_type(version) != G_TYPE_STRING)
    return NULL;
  return g_strdup(json_node_get_string(version));
}

/* metadata.language_info as ipykernel reports it for Python 3 and
 * nbclient writes it (replacing what was there); without a VERSION, the
 * rest. */
static void
set_language_info(cx_notebook *notebook, const char *version)
{
  JsonObject *info = json_object_new();
  JsonObject *codemirror = json_object_new();
  json_object_set_string_member(codemirror, "name", "ipython");
  json_object_set_int_member(codemirror, "version", 3);
  json_object_set_object_member(info, "codemirror_mode", codemirror);
  json_object_set_string_member(info, "file_extension", ".py");
  json_object_set_string_member(info, "mimetype", "text/x-python");
  json_object_set_string_member(info, "name", "python");
  json_object_set_string_member(info, "nbconvert_exporter", "python");
  json_object_set_string_member(info, "pygments_lexer", "ipython3");
  if (version != NULL)
    json_object_set_string_member(info, "version", version);
  json_object_set_object_member(metadata_of(json_node_get_object(notebook->root)),
                                "language_info", info);
}

/* NOTE (consumed) as a stderr stream in front of CELL's outputs: what the
 * cell's session is, before what it printed. */
static void
note_restart(JsonObject *cell, char *note)
{
  JsonObject *stream = json_object_new();
  json_object_set_string_member(stream, "output_type", "stream");
  json_object_set_string_member(stream, "name", "stderr");
  json_object_set_string_member(stream, "text", note);
  JsonArray *outputs = json_object_get_array_member(cell, "outputs");
  g_autoptr(JsonArray) noted = json_array_sized_new(json_array_get_length(outputs) + 1);
  json_array_add_object_element(noted, stream);
  for (guint i = 0; i < json_array_get_length(outputs); i++)
    json_array_add_element(noted, json_node_copy(json_array_get_element(outputs, i)));
  json_object_set_array_member(cell, "outputs", json_array_ref(noted));
  g_free(note);
}

/* ERROR for the run stopped by the failure RESULT of the cell REPORT is of. */
static void
stopped_at(const cx_notebook *notebook, const cx_notebook_cell_report *report,
           const cx_result *result, GError **error)
{
  /* A message is text for a terminal: a NUL in it (CX_RESULT_NUL, not
   * UTF-8) is shown as the escape JSON and Python write for it. */
  g_auto(GStrv) parts = g_strsplit(cx_result_get_error_message(result), CX_RESULT_NUL, -1);
  g_autofree char *message = g_strjoinv("\\u0000", parts);
  g_set_error(error, CX_ERROR, CX_ERROR_CELL,
              "%s: code cell %u (cell %u of the file) failed, so the run stopped there: %s: %s",
              notebook->origin, report->code_index + 1, report->index + 1,
              cx_result_get_error_type(result), message);
}

/* The cell REPORT is of ended *SESSION (RESULT says how): a fresh one of
 * BACKEND takes its place, and *RESTART_NOTE says so to the next cell. */
static gboolean
replace_session(const cx_notebook *notebook, cx_backend *backend, cx_session **session,
                const cx_notebook_cell_report *report, const cx_result *result,
                char **restart_note, GError **error)
{
  g_autoptr(GError) open_error = NULL;
  cx_session *fresh = cx_session_open(backend, &open_error);
  if (fresh == NULL) {
    g_propagate_prefixed_error(error, g_steal_pointer(&open_error),
                               "%s: cannot open a fresh session after cell %u: ",
                               notebook->origin, report->index + 1);
    return FALSE;
  }
  cx_session_close(*session);
  *session = fresh;
  *restart_note = g_strdup_printf(
    "cellexec: a fresh session runs this cell and the ones after it: code cell %u "
    "ended its session (%s)\n", report->code_index + 1, cx_result_get_error_type(result));
  return TRUE;
}

/* Run NOTEBOOK's code cells in *SESSION.  With BACKEND (may be NULL),
 * a session a cell left untrustworthy is replaced by a fresh one of it. */
static gboolean
run_cells(cx_notebook *notebook, cx_session **session, cx_backend *backend,
          const cx_run_options *run, cx_notebook_flags flags, cx_notebook_cell_func callback,
          gpointer user_data, GError **error)
{
  JsonArray *cells = cx__notebook_cells(notebook);
  g_autofree char *version = python_version(*session);
  set_language_info(notebook, version);
  reporter to = { callback, user_data, { .struct_size = sizeof(cx_notebook_cell_report) } };
  to.report.n_code_cells = count_code_cells(cells);
  guint code_index = 0;
  g_autofree char *restart_note = NULL; /* for the next cell that runs */
  g_autoptr(GHashTable) displays = display_index_new();
  for (guint i = 0; i < json_array_get_length(cells); i++) {
    JsonObject *cell = json_array_get_object_element(cells, i);
    if (strcmp(json_object_get_string_member(cell, "cell_type"), "code") != 0)
      continue;
    g_autofree char *source = cx__notebook_join_multiline(json_object_get_member(cell, "source"));
    to.report.index = i;
    to.report.code_index = code_index++;
    to.report.source = source;
    to.report.allowed_failure = FALSE;
    to.report.session_replaced = FALSE;
    if (cx__notebook_cell_has_tag(cell, "skip-execution") || is_blank(source)) {
      report(&to, CX_NOTEBOOK_CELL_SKIPPED, NULL, 0);
      continue;
    }
    report(&to, CX_NOTEBOOK_CELL_STARTED, NULL, 0);

    g_autofree char *started = timestamp_now();
    gint64 start = g_get_monotonic_time();
    g_autoptr(GError) run_error = NULL;
    /* A source holding a NUL (the NUL marker, as the notebook was read)
     * fails there as Python fails it, running nothing. */
    g_autoptr(cx_result) result = cx_session_run_cell(*session, source, run, &run_error);
    double seconds = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
    g_autofree char *ended = timestamp_now();
    if (result == NULL) {
      g_propagate_prefixed_error(error, g_steal_pointer(&run_error), "%s: cell %u: ",
                                 notebook->origin, i + 1);
      return FALSE;
    }
    store_result(cell, result);
    update_displays(displays, cell, result);
    if (restart_note != NULL)
      note_restart(cell, g_steal_pointer(&restart_note));
    set_execution_timing(cell, started, ended);
    if (cx_result_get_success(result)) {
      report(&to, CX_NOTEBOOK_CELL_OK, result, seconds);
      continue;
    }

    to.report.allowed_failure = (flags & CX_NOTEBOOK_ALLOW_ERRORS) ||
                                cx__notebook_cell_has_tag(cell, "raises-exception");
    to.report.session_replaced =
      to.report.allowed_failure && backend != NULL &&
      cx_result_ends_session(result);
    report(&to, CX_NOTEBOOK_CELL_FAILED, result, seconds);
    if (!to.report.allowed_failure) {
      stopped_at(notebook, &to.report, result, error);
      return FALSE;
    }
    if (to.report.session_replaced &&
        !replace_session(notebook, backend, session, &to.report, result, &restart_note, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
cx_notebook_run(cx_notebook *notebook, cx_backend *backend, const cx_run_options *run,
                cx_notebook_flags flags, cx_notebook_cell_func callback, gpointer user_data,
                GError **error)
{
  g_return_val_if_fail(notebook != NULL && backend != NULL, FALSE);
  if (!check_language(notebook, error))
    return FALSE;
  g_autoptr(GError) open_error = NULL;
  cx_session *session = cx_session_open(backend, &open_error);
  if (session == NULL) {
    g_propagate_prefixed_error(error, g_steal_pointer(&open_error),
                               "%s: a notebook runs in a session: ", notebook->origin);
    return FALSE;
  }
  gboolean completed = run_cells(notebook, &session, backend, run, flags, callback, user_data,
                                 error);
  cx_session_close(session);
  return completed;
}

gboolean
cx_notebook_run_in_session(cx_notebook *notebook, cx_session *session,
                           const cx_run_options *run, cx_notebook_flags flags,
                           cx_notebook_cell_func callback, gpointer user_data, GError **error)
{
  g_return_val_if_fail(notebook != NULL && session != NULL, FALSE);
  if (!check_language(notebook, error))
    return FALSE;
  return run_cells(notebook, &session, NULL, run, flags, callback, user_data, error);
}
