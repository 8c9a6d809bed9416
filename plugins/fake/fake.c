/* The fake backend: records every call and replays scripted results, so
 * users can test code that runs cells without running Python.
 *
 * Options:
 *   responses = FILE        scripted results, or a recording to replay (see
 *                           script.h and recording.h)
 *   unmatched = error|default  a call a recording has no result for fails
 *                           (error), or gets what `default` says
 *   record = FILE.jsonl     also append every call to this JSON Lines file
 *   default = success|error what a call gets when the script has nothing
 *   fail-with = TYPE        every call fails with error TYPE (e.g. TimeoutError)
 *
 * query("calls") returns [{"code", "options", "session"}, ...] in call order,
 * query("codes") just the code strings, query("info") counters.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plugins/fake/script.h"
#include "plugins/fake/recording.h"

typedef struct {
  GMutex lock;            /* guards everything below */
  fake_script *script;
  JsonArray *calls;
  FILE *record;           /* NULL: no record file */
  char *record_path;
  gboolean default_error;
  gboolean unmatched_default; /* unmatched = default */
  char *fail_with;        /* NULL: no injected failure */
  guint next_session;
  guint interrupts;
} fake_backend;

typedef struct {
  fake_backend *backend;
  guint id;
  guint cells; /* run so far: the core runs one at a time */
} fake_session;

static const cx_option_spec fake_options[] = {
  { "responses", CX_OPTION_PATH, NULL, "JSON file of scripted result bundles and match rules, or a recording (cellexec run --record) to replay" },
  { "unmatched", CX_OPTION_STRING, "error", "a call the recording has no result for: error (fails the cell) or default" },
  { "record", CX_OPTION_PATH, NULL, "append every call to this JSON Lines file" },
  { "default", CX_OPTION_STRING, "success", "result when no scripted response is left: success or error" },
  { "fail-with", CX_OPTION_STRING, NULL, "make every call fail with this error type, e.g. TimeoutError" },
  { NULL, 0, NULL, NULL }
};

static void fake_destroy(cx_backend_instance *instance);

/* Option KEY, one of FIRST (its default) and SECOND: into *IS_SECOND. */
static gboolean
read_choice(const cx_options *options, const char *key, const char *first, const char *second,
            gboolean *is_second, GError **error)
{
  const char *value = cx_options_get_string(options, key, first);
  *is_second = strcmp(value, second) == 0;
  if (*is_second || strcmp(value, first) == 0)
    return TRUE;
  g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
              "option '%s' of backend 'fake' must be '%s' or '%s', not '%s'", key, first, second,
              value);
  return FALSE;
}

static cx_backend_instance *
fake_create(const cx_options *options, GError **error)
{
  gboolean default_error = FALSE, unmatched_default = FALSE;
  if (!read_choice(options, "default", "success", "error", &default_error, error) ||
      !read_choice(options, "unmatched", "error", "default", &unmatched_default, error))
    return NULL;
  fake_backend *backend = g_new0(fake_backend, 1);
  backend->unmatched_default = unmatched_default;
  g_mutex_init(&backend->lock);
  backend->calls = json_array_new();
  backend->default_error = default_error;
  const char *fail_with = cx_options_get_string(options, "fail-with", NULL);
  backend->fail_with = fail_with != NULL && *fail_with != '\0' ? g_strdup(fail_with) : NULL;

  backend->script = fake_script_load(cx_options_get_string(options, "responses", NULL), error);
  if (backend->script == NULL) {
    fake_destroy((cx_backend_instance *)backend);
    return NULL;
  }
  const char *record = cx_options_get_string(options, "record", NULL);
  if (record != NULL) {
    backend->record = fopen(record, "a");
    if (backend->record == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot open record file %s: %s", record,
                  g_strerror(errno));
      fake_destroy((cx_backend_instance *)backend);
      return NULL;
    }
    backend->record_path = g_strdup(record);
  }
  return (cx_backend_instance *)backend;
}

static void
fake_destroy(cx_backend_instance *instance)
{
  fake_backend *backend = (fake_backend *)instance;
  if (backend->record != NULL)
    fclose(backend->record);
  g_free(backend->record_path);
  fake_script_free(backend->script);
  json_array_unref(backend->calls);
  g_free(backend->fail_with);
  g_mutex_clear(&backend->lock);
  g_free(backend);
}

/* Record one call; with the lock held. */
static void
record_call(fake_backend *backend, const char *code, const cx_run_options *run, guint session)
{
  JsonObject *call = json_object_new();
  json_object_set_string_member(call, "code", code);
  json_object_set_member(call, "options", cx_run_options_to_json_node(run));
  if (session != 0)
    json_object_set_int_member(call, "session", session);
  else
    json_object_set_null_member(call, "session");
  json_array_add_object_element(backend->calls, json_object_ref(call));

  if (backend->record != NULL) {
    g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), call);
    g_autofree char *line = cx_json_to_string(node, FALSE);
    /* One line per call, flushed, so a crash later loses nothing. */
    if (fprintf(backend->record, "%s\n", line) < 0 || fflush(backend->record) != 0)
      g_warning("fake backend: cannot write to record file %s: %s", backend->record_path,
                g_strerror(errno));
  }
  json_object_unref(call);
}

/* A call no recording answers: the error that names it. */
static cx_result *
unrecorded(const char *code, const char *recordings)
{
  const char *newline = strchr(code, '\n');
  g_autofree char *first = g_strndup(code, newline != NULL ? (gsize)(newline - code) : strlen(code));
  g_autofree char *message = g_strdup_printf(
    "no recorded result for the cell whose first line is \"%s\" in the recording %s; record "
    "it again against the real backend, or set the fake backend option unmatched = default",
    first, recordings);
  cx_result *result = cx_result_new();
  cx_result_set_error(result, CX_ERROR_TYPE_UNRECORDED_CELL, message, "");
  return result;
}

static cx_result *
respond(fake_backend *backend, const char *code, const cx_run_options *run, guint session,
        guint cell, GError **error)
{
  g_mutex_lock(&backend->lock);
  record_call(backend, code, run, session);
  cx_result *result = NULL;
  if (backend->fail_with != NULL) {
    result = cx_result_new();
    g_autofree char *message =
      g_strdup_printf("injected failure (fake backend option fail-with = %s)", backend->fail_with);
    cx_result_set_error(result, backend->fail_with, message, "");
  } else if (fake_script_next(backend->script, code, session, cell, &result, error)) {
    g_mutex_unlock(&backend->lock);
    return result; /* NULL: a recorded failure, in ERROR */
  } else if (fake_script_recordings(backend->script) != NULL && !backend->unmatched_default) {
    result = unrecorded(code, fake_script_recordings(backend->script));
  }
  if (result == NULL) {
    result = cx_result_new();
    if (backend->default_error)
      cx_result_set_error(result, "FakeBackendError",
                          "no scripted response left for this cell (fake backend default = error)",
                          "");
  }
  g_mutex_unlock(&backend->lock);
  return result;
}

static cx_result *
fake_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
              GError **error)
{
  return respond((fake_backend *)instance, code, run, 0, 0, error);
}

static cx_session_instance *
fake_session_open(cx_backend_instance *instance, GError **error)
{
  fake_backend *backend = (fake_backend *)instance;
  fake_session *session = g_new0(fake_session, 1);
  session->backend = backend;
  g_mutex_lock(&backend->lock);
  session->id = ++backend->next_session;
  g_mutex_unlock(&backend->lock);
  return (cx_session_instance *)session;
}

static cx_result *
fake_session_run_cell(cx_session_instance *instance, const char *code, const cx_run_options *run,
                      GError **error)
{
  fake_session *session = (fake_session *)instance;
  return respond(session->backend, code, run, session->id, ++session->cells, error);
}

static void
fake_session_close(cx_session_instance *session)
{
  g_free(session);
}

static gboolean
fake_interrupt(cx_backend_instance *instance, cx_session_instance *session, GError **error)
{
  fake_backend *backend = (fake_backend *)instance;
  g_mutex_lock(&backend->lock);
  backend->interrupts++;
  g_mutex_unlock(&backend->lock);
  return TRUE;
}

static JsonNode *
fake_query(cx_backend_instance *instance, const char *what, GError **error)
{
  fake_backend *backend = (fake_backend *)instance;
  g_autoptr(JsonBuilder) builder = json_builder_new();
  g_mutex_lock(&backend->lock);
  if (strcmp(what, "calls") == 0) {
    /* A deep copy (json_node_copy shares the array), through text; the
     * node lets go of the array before the lock does (json-glib's
     * reference counts are not atomic). */
    JsonNode *calls = json_node_init_array(json_node_alloc(), backend->calls);
    g_autofree char *text = cx_json_to_string(calls, FALSE);
    json_node_unref(calls);
    g_mutex_unlock(&backend->lock);
    return cx_json_from_string(text, -1, error);
  }
  if (strcmp(what, "codes") == 0) {
    json_builder_begin_array(builder);
    for (guint i = 0; i < json_array_get_length(backend->calls); i++)
      json_builder_add_string_value(
        builder, json_object_get_string_member(json_array_get_object_element(backend->calls, i), "code"));
    json_builder_end_array(builder);
  } else if (strcmp(what, "info") == 0) {
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "calls");
    json_builder_add_int_value(builder, json_array_get_length(backend->calls));
    json_builder_set_member_name(builder, "responses_left");
    json_builder_add_int_value(builder, fake_script_remaining(backend->script));
    json_builder_set_member_name(builder, "sessions_opened");
    json_builder_add_int_value(builder, backend->next_session);
    json_builder_set_member_name(builder, "interrupts");
    json_builder_add_int_value(builder, backend->interrupts);
    json_builder_end_object(builder);
  } else {
    g_mutex_unlock(&backend->lock);
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the fake backend answers the queries calls, codes and info, not '%s'", what);
    return NULL;
  }
  g_mutex_unlock(&backend->lock);
  return json_builder_get_root(builder);
}

static const cx_backend_vtable fake_backend_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = fake_create,
  .destroy = fake_destroy,
  .run_cell = fake_run_cell,
  .session_open = fake_session_open,
  .session_run_cell = fake_session_run_cell,
  .session_close = fake_session_close,
  .interrupt = fake_interrupt,
  .query = fake_query,
};

/* A test double records use_subprocess like every other run option. */
CX_PLUGIN_DESCRIBE(.name = "fake", .version = PACKAGE_VERSION,
                   .description = "records calls and replays scripted results, for tests",
                   .options = fake_options, .backend = &fake_backend_vtable,
                   .flags = CX_PLUGIN_HANDLES_USE_SUBPROCESS)
