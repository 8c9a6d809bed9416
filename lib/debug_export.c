/* Debug exports: the built-in Markdown and JSON Lines exporters, value
 * sanitising and redaction, and the emission of events by the core. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/internal.h"

#define DEFAULT_MAX_VALUE_BYTES 4096
#define MAX_ITEMS 200 /* list items or object members written per value */

typedef struct {
  cx_debug_exporter base;
  FILE *file;
  char *path;
  gboolean markdown;
  GPtrArray *redact;      /* GPatternSpec*, matched on lowercase names */
  gsize max_value_bytes;
  guint events;
} builtin_exporter;

static GMutex emit_lock;

/* ---- Sanitising ---------------------------------------------------------- */

/* TEXT cut to the size cap at a character boundary, saying how much was cut. */
static char *
capped_text(const builtin_exporter *self, const char *text)
{
  gsize length = strlen(text);
  if (length <= self->max_value_bytes)
    return g_strdup(text);
  const char *end = text + self->max_value_bytes;
  while (end > text && (*end & 0xC0) == 0x80) /* inside a UTF-8 sequence */
    end--;
  return g_strdup_printf("%.*s... [%zu more bytes]", (int)(end - text), text,
                         length - (gsize)(end - text));
}

static JsonNode *sanitise(const builtin_exporter *self, JsonNode *node);

static JsonNode *
string_node(const char *text)
{
  return json_node_init_string(json_node_alloc(), text);
}

static JsonNode *
sanitise_string(const builtin_exporter *self, const char *text)
{
  g_autofree char *hidden = cx__redact_assignment(self->redact, text);
  if (hidden != NULL)
    return string_node(hidden);
  g_autofree char *capped = capped_text(self, text);
  return string_node(capped);
}

static JsonNode *
sanitise_object(const builtin_exporter *self, JsonObject *object)
{
  JsonObject *out = json_object_new();
  JsonObjectIter iter;
  const char *key;
  JsonNode *value;
  guint written = 0, total = json_object_get_size(object);
  json_object_iter_init_ordered(&iter, object);
  while (json_object_iter_next_ordered(&iter, &key, &value) && written < MAX_ITEMS) {
    if (cx__redact_matches(self->redact, key))
      json_object_set_string_member(out, key, "[redacted]");
    else
      json_object_set_member(out, key, sanitise(self, value));
    written++;
  }
  if (written < total) {
    g_autofree char *note = g_strdup_printf("%u more members not shown", total - written);
    json_object_set_string_member(out, "...", note);
  }
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, out);
  return node;
}

static JsonNode *
sanitise_array(const builtin_exporter *self, JsonArray *array)
{
  JsonArray *out = json_array_new();
  guint total = json_array_get_length(array), shown = MIN(total, MAX_ITEMS);
  for (guint i = 0; i < shown; i++)
    json_array_add_element(out, sanitise(self, json_array_get_element(array, i)));
  if (shown < total) {
    g_autofree char *note = g_strdup_printf("... %u more items not shown", total - shown);
    json_array_add_string_element(out, note);
  }
  JsonNode *node = json_node_new(JSON_NODE_ARRAY);
  json_node_take_array(node, out);
  return node;
}

/* A copy of NODE fit for an export: redacted, and capped in size. */
static JsonNode *
sanitise(const builtin_exporter *self, JsonNode *node)
{
  if (node == NULL)
    return json_node_init_null(json_node_alloc());
  switch (json_node_get_node_type(node)) {
  case JSON_NODE_OBJECT:
    return sanitise_object(self, json_node_get_object(node));
  case JSON_NODE_ARRAY:
    return sanitise_array(self, json_node_get_array(node));
  case JSON_NODE_VALUE:
    if (json_node_get_value_type(node) == G_TYPE_STRING)
      return sanitise_string(self, json_node_get_string(node));
    return json_node_copy(node);
  case JSON_NODE_NULL:
    break;
  }
  return json_node_init_null(json_node_alloc());
}

/* ---- Formats --------------------------------------------------------------- */

static char *
iso_timestamp(gint64 timestamp_us)
{
  g_autoptr(GDateTime) time = g_date_time_new_from_unix_utc(timestamp_us / G_USEC_PER_SEC);
  g_autofree char *seconds = g_date_time_format(time, "%Y-%m-%dT%H:%M:%S");
  return g_strdup_printf("%s.%06dZ", seconds, (int)(timestamp_us % G_USEC_PER_SEC));
}

static JsonNode *
error_node(const builtin_exporter *self, const cx_debug_event *event)
{
  if (event->error_type == NULL)
    return json_node_init_null(json_node_alloc());
  JsonObject *error = json_object_new();
  json_object_set_string_member(error, "type", event->error_type);
  g_autofree char *message = capped_text(self, event->error_message ? event->error_message : "");
  json_object_set_string_member(error, "message", message);
  g_autofree char *traceback = capped_text(self, event->error_traceback ? event->error_traceback : "");
  json_object_set_string_member(error, "traceback", traceback);
  JsonNode *node = json_node_new(JSON_NODE_OBJECT);
  json_node_take_object(node, error);
  return node;
}

static void
write_jsonl(builtin_exporter *self, const cx_debug_event *event)
{
  g_autofree char *timestamp = iso_timestamp(event->timestamp_us);
  g_autofree char *code = capped_text(self, event->code != NULL ? event->code : "");
  JsonObject *line = json_object_new();
  json_object_set_string_member(line, "timestamp", timestamp);
  json_object_set_string_member(line, "executor", event->executor ? event->executor : "");
  json_object_set_string_member(line, "step", event->step ? event->step : "");
  json_object_set_string_member(line, "code", code);
  json_object_set_member(line, "inputs", sanitise(self, event->inputs));
  json_object_set_member(line, "environment", sanitise(self, event->environment));
  json_object_set_member(line, "outputs", sanitise(self, event->outputs));
  json_object_set_member(line, "error", error_node(self, event));
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), line);
  json_object_unref(line);
  g_autofree char *text = cx_json_to_string(node, FALSE);
  fprintf(self->file, "%s\n", text);
}

/* A Markdown code fence longer than any run of backticks in TEXT. */
static char *
fence_for(const char *text)
{
  gsize longest = 0, run = 0;
  for (const char *c = text; *c; c++) {
    run = *c == '`' ? run + 1 : 0;
    longest = MAX(longest, run);
  }
  return g_strnfill(MAX(3, longest + 1), '`');
}

static void
write_block(builtin_exporter *self, const char *title, const char *language, const char *text)
{
  g_autofree char *fence = fence_for(text);
  fprintf(self->file, "**%s**\n\n%s%s\n%s%s%s\n\n", title, fence, language, text,
          g_str_has_suffix(text, "\n") || *text == '\0' ? "" : "\n", fence);
}

static void
write_json_block(builtin_exporter *self, const char *title, JsonNode *value)
{
  if (value == NULL)
    return;
  g_autoptr(JsonNode) clean = sanitise(self, value);
  g_autofree char *text = cx_json_to_string(clean, TRUE);
  write_block(self, title, "json", text);
}

static void
write_markdown(builtin_exporter *self, const cx_debug_event *event)
{
  g_autofree char *timestamp = iso_timestamp(event->timestamp_us);
  fprintf(self->file, "## %u. %s\n\n- time: %s\n- executor: %s\n- step: %s\n- status: %s\n\n",
          self->events, event->step ? event->step : "?", timestamp,
          event->executor ? event->executor : "?", event->step ? event->step : "?",
          event->error_type != NULL ? "error" : "ok");
  if (event->code != NULL) {
    g_autofree char *code = capped_text(self, event->code);
    write_block(self, "Code", "python", code);
  }
  write_json_block(self, "Inputs", event->inputs);
  write_json_block(self, "Environment", event->environment);
  write_json_block(self, "Outputs", event->outputs);
  if (event->error_type != NULL) {
    g_autofree char *message = capped_text(self, event->error_message ? event->error_message : "");
    g_autofree char *traceback = capped_text(self, event->error_traceback ? event->error_traceback : "");
    g_autofree char *text = g_strdup_printf("%s: %s\n%s", event->error_type, message, traceback);
    write_block(self, "Error", "", text);
  }
}

static void
builtin_export_event(cx_debug_exporter *base, const cx_debug_event *event)
{
  builtin_exporter *self = (builtin_exporter *)base;
  self->events++;
  if (self->markdown)
    write_markdown(self, event);
  else
    write_jsonl(self, event);
  /* A crash later must not cost the events that led to it. */
  if (fflush(self->file) != 0)
    g_warning("cellexec: cannot write the debug export %s: %s", self->path, g_strerror(errno));
}

static void
builtin_flush(cx_debug_exporter *base)
{
  fflush(((builtin_exporter *)base)->file);
}

static void
builtin_destroy(cx_debug_exporter *base)
{
  builtin_exporter *self = (builtin_exporter *)base;
  fclose(self->file);
  g_free(self->path);
  g_ptr_array_unref(self->redact);
  g_free(self);
}

static cx_debug_exporter *
builtin_new(const char *path, gboolean markdown, const cx_debug_export_options *options,
            GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  int fd = cx__safe_file_open_append(path, "the debug export", TRUE, error);
  FILE *file = fd >= 0 ? fdopen(fd, "a") : NULL;
  if (file == NULL) {
    if (fd >= 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot write the debug export %s: %s", path,
                  g_strerror(errno));
      close(fd);
    }
    return NULL;
  }
  builtin_exporter *self = g_new0(builtin_exporter, 1);
  self->base.struct_size = sizeof(cx_debug_exporter);
  self->base.export_event = builtin_export_event;
  self->base.flush = builtin_flush;
  self->base.destroy = builtin_destroy;
  self->file = file;
  self->path = g_strdup(path);
  self->markdown = markdown;

  /* Options from an older caller may be shorter: read what it has. */
  cx_debug_export_options opts = { sizeof(opts), NULL, 0 };
  if (options != NULL)
    memcpy(&opts, options, MIN(options->struct_size, sizeof(opts)));
  self->redact = cx__redact_patterns_new(opts.redact);
  self->max_value_bytes = opts.max_value_bytes != 0 ? opts.max_value_bytes : DEFAULT_MAX_VALUE_BYTES;
  if (markdown)
    fprintf(file, "# cellexec debug export\n\nEvents of each executor step, oldest first. "
                  "Values matching the redact patterns are shown as [redacted]; "
                  "long values are cut where marked.\n\n");
  return &self->base;
}

cx_debug_exporter *
cx_debug_exporter_new_markdown(const char *path, const cx_debug_export_options *options,
                               GError **error)
{
  return builtin_new(path, TRUE, options, error);
}

cx_debug_exporter *
cx_debug_exporter_new_jsonl(const char *path, const cx_debug_export_options *options,
                            GError **error)
{
  return builtin_new(path, FALSE, options, error);
}

cx_debug_exporter *
cx_debug_exporter_new_for_path(const char *path, const cx_debug_export_options *options,
                               GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  gboolean jsonl = g_str_has_suffix(path, ".jsonl") || g_str_has_suffix(path, ".ndjson");
  return builtin_new(path, !jsonl, options, error);
}

void
cx_debug_exporter_free(cx_debug_exporter *exporter)
{
  if (exporter == NULL)
    return;
  if (CX_HAS(exporter, flush))
    exporter->flush(exporter);
  if (CX_HAS(exporter, destroy))
    exporter->destroy(exporter);
}

char *
cx_default_debug_export_path(const char *source_path)
{
  g_return_val_if_fail(source_path != NULL, NULL);
  g_autofree char *base = g_path_get_basename(source_path);
  char *dot = strrchr(base, '.');
  if (dot != NULL && dot != base)
    *dot = '\0';
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format(now, "%Y%m%dT%H%M%SZ");
  g_autofree char *name = g_strdup_printf("%s_debug_export_%s.md", base, stamp);
  g_autofree char *cwd = g_get_current_dir();
  return g_build_filename(cwd, name, NULL);
}

/* ---- Emission by the core ---------------------------------------------------- */

/* Stamp EVENT (its step's fields filled) and hand it to EXPORTER, one
 * event at a time across threads. */
static void
deliver(cx_debug_exporter *exporter, cx_debug_event *event)
{
  event->struct_size = sizeof(cx_debug_event);
  event->timestamp_us = g_get_real_time();
  g_mutex_lock(&emit_lock);
  exporter->export_event(exporter, event);
  g_mutex_unlock(&emit_lock);
}

void
cx__debug_emit(cx_debug_exporter *exporter, const char *executor, const char *step,
               const char *code, JsonNode *inputs, JsonNode *environment, JsonNode *outputs,
               const GError *error)
{
  if (exporter == NULL || !CX_HAS(exporter, export_event))
    return;
  const cx_python_error *python = cx_error_get_python(error);
  cx_debug_event event = {
    .executor = executor, .step = step, .code = code,
    .inputs = inputs, .environment = environment, .outputs = outputs,
    .error_type = python != NULL ? python->type : error != NULL ? "CellexecError" : NULL,
    .error_message = python != NULL ? python->message : error != NULL ? error->message : NULL,
    .error_traceback = python != NULL ? python->traceback : NULL,
  };
  deliver(exporter, &event);
}

void
cx__debug_emit_result(cx_debug_exporter *exporter, const char *executor, const char *step,
                      const char *code, JsonNode *inputs, const cx_result *result,
                      const GError *error)
{
  if (exporter == NULL || !CX_HAS(exporter, export_event))
    return;
  if (result == NULL) {
    cx__debug_emit(exporter, executor, step, code, inputs, NULL, NULL, error);
    return;
  }
  g_autoptr(JsonNode) outputs = cx_result_to_json_node(result);
  cx_debug_event event = {
    .executor = executor, .step = step, .code = code,
    .inputs = inputs, .outputs = outputs,
    .error_type = cx_result_get_error_type(result),
    .error_message = cx_result_get_error_message(result),
    .error_traceback = cx_result_get_error_traceback(result),
  };
  deliver(exporter, &event);
}

/* ---- Attaching to backends and sessions ---------------------------------- */

void
cx_session_set_debug_exporter(cx_session *session, cx_debug_exporter *exporter)
{
  g_return_if_fail(session != NULL);
  session->exporter = exporter;
  const cx_executor_vtable *vt = cx__executor_of(session);
  if (vt != NULL && CX_HAS(vt, set_debug_exporter))
    vt->set_debug_exporter(session->instance, exporter);
}

void
cx_backend_set_debug_exporter(cx_backend *backend, cx_debug_exporter *exporter)
{
  g_return_if_fail(backend != NULL);
  backend->exporter = exporter;
}
