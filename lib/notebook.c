/* Notebooks: reading, checking and writing nbformat 4 documents, and
 * papermill-style parameters.  Running them is notebook_run.c. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"
#include "lib/notebook_internal.h"

/* The deepest nesting a notebook may have: a little more than Python's
 * json module reads under its default recursion limit (998 levels), which
 * is where Jupyter's own reader stops. */
#define NOTEBOOK_MAX_DEPTH 1000

/* The minors of nbformat 4 this code reads and writes (4.5 added cell ids). */
#define NBFORMAT_MINOR_MAX 5

G_GNUC_PRINTF(3, 4)
static void
notebook_error(GError **error, const char *origin, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *problem = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, CX_ERROR, CX_ERROR_NOTEBOOK, "%s: %s", origin, problem);
}

/* The integer member KEY of OBJECT, or -1 when it is missing or not one. */
static gint64
member_int(JsonObject *object, const char *key)
{
  JsonNode *node = json_object_get_member(object, key);
  if (node == NULL || json_node_get_value_type(node) != G_TYPE_INT64)
    return -1;
  return json_node_get_int(node);
}

/* A source is a string or a list of strings (nbformat's "multiline_string"). */
static gboolean
is_multiline_string(JsonNode *node)
{
  if (node == NULL)
    return FALSE;
  if (JSON_NODE_HOLDS_VALUE(node))
    return cx__json_node_is_text(node);
  if (!JSON_NODE_HOLDS_ARRAY(node))
    return FALSE;
  JsonArray *lines = json_node_get_array(node);
  for (guint i = 0; i < json_array_get_length(lines); i++) {
    if (!cx__json_node_is_text(json_array_get_element(lines, i)))
      return FALSE;
  }
  return TRUE;
}

char *
cx__notebook_join_multiline(JsonNode *node)
{
  if (JSON_NODE_HOLDS_VALUE(node))
    return g_strdup(json_node_get_string(node));
  GString *text = g_string_new(NULL);
  JsonArray *lines = json_node_get_array(node);
  for (guint i = 0; i < json_array_get_length(lines); i++)
    g_string_append(text, json_array_get_string_element(lines, i));
  return g_string_free(text, FALSE);
}

/* Check what running and writing rely on; the nbformat schema is the
 * authority on the rest, and what is not understood here is kept. */
static gboolean
check_notebook(JsonNode *root, const char *origin, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    notebook_error(error, origin, "not a Jupyter notebook (the JSON is not an object)");
    return FALSE;
  }
  JsonObject *document = json_node_get_object(root);
  gint64 major = member_int(document, "nbformat");
  gint64 minor = member_int(document, "nbformat_minor");
  if (major < 0) {
    notebook_error(error, origin, "not a Jupyter notebook (no integer \"nbformat\" key)");
    return FALSE;
  }
  if (major < 4) {
    notebook_error(error, origin,
                   "an nbformat %" G_GINT64_FORMAT " notebook; convert it first with "
                   "`jupyter nbconvert --to notebook --nbformat 4 FILE`",
                   major);
    return FALSE;
  }
  if (major > 4 || minor < 0 || minor > NBFORMAT_MINOR_MAX) {
    notebook_error(error, origin,
                   "nbformat %" G_GINT64_FORMAT ".%" G_GINT64_FORMAT " is not supported; "
                   "cellexec reads nbformat 4.0 to 4.%d",
                   major, minor, NBFORMAT_MINOR_MAX);
    return FALSE;
  }
  JsonNode *cells = json_object_get_member(document, "cells");
  if (cells == NULL || !JSON_NODE_HOLDS_ARRAY(cells)) {
    notebook_error(error, origin, "not a Jupyter notebook (no \"cells\" list)");
    return FALSE;
  }
  JsonArray *list = json_node_get_array(cells);
  for (guint i = 0; i < json_array_get_length(list); i++) {
    JsonNode *cell = json_array_get_element(list, i);
    JsonObject *object = JSON_NODE_HOLDS_OBJECT(cell) ? json_node_get_object(cell) : NULL;
    JsonNode *type_node = object != NULL ? json_object_get_member(object, "cell_type") : NULL;
    const char *type = cx__json_node_is_text(type_node) ? json_node_get_string(type_node) : NULL;
    if (type == NULL) {
      notebook_error(error, origin, "cell %u has no \"cell_type\"", i + 1);
      return FALSE;
    }
    if (!is_multiline_string(json_object_get_member(object, "source"))) {
      notebook_error(error, origin, "cell %u has no \"source\" string or list of strings", i + 1);
      return FALSE;
    }
  }
  return TRUE;
}

cx_notebook *
cx_notebook_load_data(const char *data, gssize length, const char *origin, GError **error)
{
  g_return_val_if_fail(data != NULL, NULL);
  if (origin == NULL)
    origin = "notebook";
  gsize size = length < 0 ? strlen(data) : (gsize)length;
  if (!g_utf8_validate_len(data, size, NULL)) {
    notebook_error(error, origin, "not UTF-8 text, so not a notebook");
    return NULL;
  }
  gsize blank = 0;
  while (blank < size && g_ascii_isspace(data[blank]))
    blank++;
  if (blank == size) {
    notebook_error(error, origin, "an empty file, not a notebook");
    return NULL;
  }
  g_autoptr(GError) parse_error = NULL;
  /* Nesting cx_json_from_string refuses is valid JSON: told apart.  A
   * notebook stops sooner, where Jupyter's own reader (Python's json
   * module, under its recursion limit) stops: deeper data is no notebook
   * anyone opened, and written back with an indent per level it grows
   * with the square of its depth (100 KB made 2.5 GB). */
  if (!cx__json_check_bounds_at_depth(data, size, NOTEBOOK_MAX_DEPTH,
                                      "Jupyter (Python's json module)", &parse_error)) {
    notebook_error(error, origin, "%s", parse_error->message);
    return NULL;
  }
  g_autoptr(JsonNode) root = cx__json_from_string_exact(data, (gssize)size, &parse_error);
  if (root == NULL && !g_error_matches(parse_error, CX_ERROR, CX_ERROR_JSON)) {
    notebook_error(error, origin, "%s", parse_error->message); /* JSON it cannot keep */
    return NULL;
  }
  if (root == NULL) {
    notebook_error(error, origin, "not valid JSON (%s)", parse_error->message);
    return NULL;
  }
  if (!check_notebook(root, origin, error))
    return NULL;
  cx_notebook *notebook = g_new0(cx_notebook, 1);
  notebook->root = g_steal_pointer(&root);
  notebook->origin = g_strdup(origin);
  return notebook;
}

cx_notebook *
cx_notebook_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *data = NULL;
  gsize length = 0;
  g_autoptr(GError) read_error = NULL;
  if (!cx_file_get_contents(path, &data, &length, &read_error)) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_NOTEBOOK, read_error->message);
    return NULL;
  }
  cx_notebook *notebook = cx_notebook_load_data(data, (gssize)length, path, error);
  if (notebook != NULL) {
    g_free(notebook->path);
    notebook->path = g_strdup(path);
  }
  return notebook;
}

void
cx_notebook_free(cx_notebook *notebook)
{
  if (notebook == NULL)
    return;
  json_node_unref(notebook->root);
  g_free(notebook->origin);
  g_free(notebook->path);
  g_free(notebook);
}

JsonArray *
cx__notebook_cells(const cx_notebook *notebook)
{
  return json_object_get_array_member(json_node_get_object(notebook->root), "cells");
}

guint
cx_notebook_get_n_cells(const cx_notebook *notebook)
{
  g_return_val_if_fail(notebook != NULL, 0);
  return json_array_get_length(cx__notebook_cells(notebook));
}

JsonObject *
cx_notebook_get_cell(const cx_notebook *notebook, guint index)
{
  g_return_val_if_fail(notebook != NULL, NULL);
  JsonArray *cells = cx__notebook_cells(notebook);
  return index < json_array_get_length(cells) ? json_array_get_object_element(cells, index) : NULL;
}

const char *
cx_notebook_get_cell_type(const cx_notebook *notebook, guint index)
{
  JsonObject *cell = cx_notebook_get_cell(notebook, index);
  return cell != NULL ? json_object_get_string_member(cell, "cell_type") : NULL;
}

char *
cx_notebook_get_cell_source(const cx_notebook *notebook, guint index)
{
  JsonObject *cell = cx_notebook_get_cell(notebook, index);
  return cell != NULL ? cx__notebook_join_multiline(json_object_get_member(cell, "source")) : NULL;
}

gint64
cx__notebook_minor(const cx_notebook *notebook)
{
  return member_int(json_node_get_object(notebook->root), "nbformat_minor");
}

/* The length of the line end at P, as Python's str.splitlines() knows
 * them, or 0. */
static gsize
line_end_length(const char *p)
{
  static const char *const ends[] = { "\r\n", "\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e",
                                      "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9" };
  for (gsize i = 0; i < G_N_ELEMENTS(ends); i++)
    if (g_str_has_prefix(p, ends[i]))
      return strlen(ends[i]);
  return 0;
}

/* OBJECT's string member KEY (if it is one) as its lines, line ends kept,
 * as nbformat's split_lines() does: str.splitlines(True). */
static void
split_member(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  if (!cx__json_node_is_text(node))
    return;
  JsonArray *lines = json_array_new();
  const char *start = json_node_get_string(node);
  for (const char *p = start; *p != '\0';) {
    gsize end = line_end_length(p);
    p += end > 0 ? end : 1;
    if (end > 0 || *p == '\0') {
      g_autofree char *line = g_strndup(start, (gsize)(p - start));
      json_array_add_string_element(lines, line);
      start = p;
    }
  }
  json_object_set_array_member(object, key, lines);
}

JsonObject *
cx__notebook_member_object(JsonObject *object, const char *key)
{
  JsonNode *node = object != NULL ? json_object_get_member(object, key) : NULL;
  return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

/* The text members of a MIME bundle nbformat splits: text/ types, and two
 * others. */
static void
split_mime_bundle(JsonObject *bundle)
{
  if (bundle == NULL)
    return;
  GList *types = json_object_get_members(bundle);
  for (GList *type = types; type != NULL; type = type->next)
    if (g_str_has_prefix(type->data, "text/") || strcmp(type->data, "image/svg+xml") == 0 ||
        strcmp(type->data, "application/javascript") == 0)
      split_member(bundle, type->data);
  g_list_free(types);
}

/* The multiline strings of CELL split into lines, where nbformat's
 * split_lines() splits them when it writes a notebook (nbformat/v4/rwbase.py). */
static void
split_cell_lines(JsonObject *cell)
{
  split_member(cell, "source");
  JsonObject *attachments = cx__notebook_member_object(cell, "attachments");
  GList *names = attachments != NULL ? json_object_get_members(attachments) : NULL;
  for (GList *name = names; name != NULL; name = name->next)
    split_mime_bundle(cx__notebook_member_object(attachments, name->data));
  g_list_free(names);
  JsonNode *outputs = json_object_get_member(cell, "outputs");
  if (g_strcmp0(json_object_get_string_member_with_default(cell, "cell_type", NULL), "code") != 0 ||
      outputs == NULL || !JSON_NODE_HOLDS_ARRAY(outputs))
    return;
  JsonArray *list = json_node_get_array(outputs);
  for (guint i = 0; i < json_array_get_length(list); i++) {
    JsonNode *node = json_array_get_element(list, i);
    JsonObject *output = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    const char *type = output != NULL
                         ? json_object_get_string_member_with_default(output, "output_type", "")
                         : "";
    if (strcmp(type, "execute_result") == 0 || strcmp(type, "display_data") == 0)
      split_mime_bundle(cx__notebook_member_object(output, "data"));
    else if (strcmp(type, "stream") == 0)
      split_member(output, "text");
  }
}

/* nbformat's own layout (nbformat.write()), so that a notebook it wrote
 * comes back byte for byte and a rerun is a small diff: multiline strings
 * split into lines, json.dumps(sort_keys=True, indent=1,
 * ensure_ascii=False), a final newline.  The lines are split in a copy: the
 * notebook keeps its strings as they were. */
char *
cx_notebook_to_json(const cx_notebook *notebook)
{
  g_return_val_if_fail(notebook != NULL, NULL);
  g_autoptr(JsonNode) written = cx__json_deep_copy(notebook->root);
  JsonArray *cells = json_object_get_array_member(json_node_get_object(written), "cells");
  for (guint i = 0; i < json_array_get_length(cells); i++)
    split_cell_lines(json_array_get_object_element(cells, i));
  g_autofree char *text = cx__json_to_python_text(written, 1);
  return g_strconcat(text, "\n", NULL);
}

gboolean
cx_notebook_save(const cx_notebook *notebook, const char *path, GError **error)
{
  g_return_val_if_fail(notebook != NULL && path != NULL, FALSE);
  g_autofree char *text = cx_notebook_to_json(notebook);
  g_autoptr(GError) write_error = NULL;
  if (cx__safe_file_replace(path, "the notebook", text, strlen(text), &write_error))
    return TRUE;
  g_set_error_literal(error, CX_ERROR, CX_ERROR_NOTEBOOK, write_error->message);
  return FALSE;
}

gboolean
cx__notebook_cell_has_tag(JsonObject *cell, const char *tag)
{
  JsonNode *metadata = json_object_get_member(cell, "metadata");
  if (metadata == NULL || !JSON_NODE_HOLDS_OBJECT(metadata))
    return FALSE;
  JsonNode *tags = json_object_get_member(json_node_get_object(metadata), "tags");
  if (tags == NULL || !JSON_NODE_HOLDS_ARRAY(tags))
    return FALSE;
  JsonArray *list = json_node_get_array(tags);
  for (guint i = 0; i < json_array_get_length(list); i++) {
    JsonNode *item = json_array_get_element(list, i);
    if (cx__json_node_is_text(item) && strcmp(json_node_get_string(item), tag) == 0)
      return TRUE;
  }
  return FALSE;
}

char *
cx__notebook_new_cell_id(void)
{
  return g_strdup_printf("%08x", g_random_int());
}
