/* Notebook parameters, as papermill injects them: a code cell of
 * assignments after the cell tagged "parameters". */
#include "config.h"

#include <string.h>

#include "lib/internal.h"
#include "lib/notebook_internal.h"

#define PARAMETERS_TAG "parameters"
#define INJECTED_TAG "injected-parameters"

/* Python's keyword.kwlist (3.11; later versions add only soft keywords,
 * which may be assigned to), and __debug__, which may not be assigned to
 * either: "NAME = VALUE" with one of them is a SyntaxError that would be
 * blamed on the injected cell. */
static const char *const unassignable_names[] = {
  "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
  "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
  "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
  "try", "while", "with", "yield", "__debug__", NULL
};

/* An ASCII Python identifier that "NAME = VALUE" can assign to. */
static gboolean
is_assignable_name(const char *name)
{
  if (!(g_ascii_isalpha(*name) || *name == '_'))
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!(g_ascii_isalnum(*c) || *c == '_'))
      return FALSE;
  return !g_strv_contains(unassignable_names, name);
}

/* A Python string literal for TEXT: JSON's string syntax is Python's too
 * (\uXXXX escapes included), and cx_json_to_string escapes every control
 * character. */
static void
append_python_string(GString *out, const char *text)
{
  g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
  json_node_set_string(node, text);
  g_autofree char *literal = cx_json_to_string(node, FALSE);
  g_string_append(out, literal);
}

/* NODE as a Python literal. */
static void
append_python_literal(GString *out, JsonNode *node)
{
  switch (JSON_NODE_TYPE(node)) {
  case JSON_NODE_NULL:
    g_string_append(out, "None");
    return;
  case JSON_NODE_ARRAY: {
    JsonArray *array = json_node_get_array(node);
    g_string_append_c(out, '[');
    for (guint i = 0; i < json_array_get_length(array); i++) {
      if (i > 0)
        g_string_append(out, ", ");
      append_python_literal(out, json_array_get_element(array, i));
    }
    g_string_append_c(out, ']');
    return;
  }
  case JSON_NODE_OBJECT: {
    JsonObjectIter iter;
    const char *name;
    JsonNode *member;
    gboolean first = TRUE;
    g_string_append_c(out, '{');
    json_object_iter_init(&iter, json_node_get_object(node));
    while (json_object_iter_next(&iter, &name, &member)) {
      g_string_append(out, first ? "" : ", ");
      first = FALSE;
      append_python_string(out, name);
      g_string_append(out, ": ");
      append_python_literal(out, member);
    }
    g_string_append_c(out, '}');
    return;
  }
  case JSON_NODE_VALUE:
  default:
    break;
  }
  GType type = json_node_get_value_type(node);
  if (type == G_TYPE_BOOLEAN) {
    g_string_append(out, json_node_get_boolean(node) ? "True" : "False");
  } else if (cx__json_kept_number(node) != NULL) {
    /* An integer beyond 64 bits (see beyond_a_double): its digits are
     * Python's int literal for it, exactly. */
    g_string_append(out, cx__json_kept_number(node));
  } else if (type == G_TYPE_STRING) {
    append_python_string(out, json_node_get_string(node));
  } else {
    /* Numbers: JSON's number syntax is Python's. */
    g_autofree char *literal = cx_json_to_string(node, FALSE);
    g_string_append(out, literal);
  }
}

/* The first number in NODE kept as text (cx__json_from_string_exact) that
 * is not an integer, so beyond a double's range, or NULL.  Python reads
 * such a literal as inf: not the number given, so it is refused. */
static const char *
beyond_a_double(JsonNode *node)
{
  if (JSON_NODE_HOLDS_ARRAY(node) || JSON_NODE_HOLDS_OBJECT(node)) {
    g_autoptr(GList) members = JSON_NODE_HOLDS_ARRAY(node)
                                 ? json_array_get_elements(json_node_get_array(node))
                                 : json_object_get_values(json_node_get_object(node));
    for (GList *member = members; member != NULL; member = member->next) {
      const char *found = beyond_a_double(member->data);
      if (found != NULL)
        return found;
    }
    return NULL;
  }
  const char *number = cx__json_kept_number(node);
  return number != NULL && strpbrk(number, ".eE") != NULL ? number : NULL;
}

/* CPython's tokenizer refuses more nested brackets (MAXLEVEL) with
 * "too many nested parentheses". */
#define PYTHON_MAX_NESTING 200

/* How many arrays and objects NODE nests (a scalar: 0), counted up to
 * LIMIT: no deeper recursion than that. */
static guint
nesting_depth(JsonNode *node, guint limit)
{
  if (limit == 0 || (!JSON_NODE_HOLDS_ARRAY(node) && !JSON_NODE_HOLDS_OBJECT(node)))
    return 0;
  g_autoptr(GList) members = JSON_NODE_HOLDS_ARRAY(node)
                               ? json_array_get_elements(json_node_get_array(node))
                               : json_object_get_values(json_node_get_object(node));
  guint deepest = 0;
  for (GList *member = members; member != NULL && deepest + 1 < limit; member = member->next) {
    guint depth = nesting_depth(member->data, limit - 1);
    if (depth > deepest)
      deepest = depth;
  }
  return deepest + 1;
}

/* VALUE (of the parameter ITEM) as a Python literal: its JSON value,
 * exactly, when it parses as JSON, else the string itself.  JSON nested
 * too deeply to read fails: taken as a string, it would silently mean
 * something else. */
static gboolean
append_parameter_value(GString *out, const char *item, const char *value, GError **error)
{
  /* Named without its value, which is too long to show. */
  g_autofree char *name = g_strndup(item, (gsize)(value - 1 - item));
  g_autoptr(GError) unbounded = NULL;
  if (!cx__json_check_bounds(value, strlen(value), &unbounded)) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "parameter '%s': %s", name, unbounded->message);
    return FALSE;
  }
  g_autoptr(GError) unreadable = NULL;
  g_autoptr(JsonNode) root =
    *value != '\0' ? cx__json_from_string_exact(value, -1, &unreadable) : NULL;
  if (root == NULL && g_error_matches(unreadable, CX_ERROR, CX_ERROR_UNSUPPORTED)) {
    /* Valid JSON that cannot be kept exactly: not a string to pass on. */
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "parameter '%s': %s", name,
                unreadable->message);
    return FALSE;
  }
  if (root == NULL) {
    append_python_string(out, value);
    return TRUE;
  }
  if (nesting_depth(root, PYTHON_MAX_NESTING + 1) > PYTHON_MAX_NESTING) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "parameter '%s': nested more than %d levels deep, more than Python reads in a "
                "literal; pass it as a file's path and read the file in the notebook",
                name, PYTHON_MAX_NESTING);
    return FALSE;
  }
  const char *huge = beyond_a_double(root);
  if (huge != NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                "parameter '%s': the number %s is beyond the range of a double (Python would "
                "read it as inf); give a finite number, or the value as a JSON string", item,
                huge);
    return FALSE;
  }
  append_python_literal(out, root);
  return TRUE;
}

static JsonObject *
new_parameters_cell(const char *source, gboolean with_id)
{
  JsonObject *cell = json_object_new();
  if (with_id) {
    g_autofree char *id = cx__notebook_new_cell_id();
    json_object_set_string_member(cell, "id", id);
  }
  json_object_set_string_member(cell, "cell_type", "code");
  JsonObject *metadata = json_object_new();
  JsonArray *tags = json_array_new();
  json_array_add_string_element(tags, INJECTED_TAG);
  json_object_set_array_member(metadata, "tags", tags);
  json_object_set_object_member(cell, "metadata", metadata);
  json_object_set_null_member(cell, "execution_count");
  json_object_set_string_member(cell, "source", source);
  json_object_set_array_member(cell, "outputs", json_array_new());
  return cell;
}

gboolean
cx_notebook_inject_parameters(cx_notebook *notebook, const char *const *assignments,
                              GError **error)
{
  g_return_val_if_fail(notebook != NULL, FALSE);
  if (assignments == NULL || *assignments == NULL)
    return TRUE;
  /* A name given twice takes its last value, in the place of its first, as
   * papermill's parameters dict does. */
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_autoptr(GHashTable) values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (const char *const *item = assignments; *item != NULL; item++) {
    const char *eq = strchr(*item, '=');
    g_autofree char *name = eq != NULL ? g_strndup(*item, (gsize)(eq - *item)) : g_strdup(*item);
    if (eq == NULL || !is_assignable_name(name)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION,
                  "parameter '%s': write NAME=VALUE with NAME a Python identifier that is "
                  "not a keyword", *item);
      return FALSE;
    }
    if (!g_hash_table_contains(values, name))
      g_ptr_array_add(names, name);
    g_hash_table_insert(values, g_steal_pointer(&name), (gpointer)*item);
  }
  g_autoptr(GString) source = g_string_new("# Parameters\n");
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    g_string_append_printf(source, "%s = ", name);
    const char *item = g_hash_table_lookup(values, name);
    if (!append_parameter_value(source, item, strchr(item, '=') + 1, error))
      return FALSE;
    g_string_append_c(source, '\n');
  }

  JsonArray *cells = cx__notebook_cells(notebook);
  guint position = 0; /* at the top when no cell is tagged */
  for (guint i = 0; i < json_array_get_length(cells); i++) {
    JsonObject *cell = json_array_get_object_element(cells, i);
    if (cell == NULL)
      continue;
    if (cx__notebook_cell_has_tag(cell, INJECTED_TAG)) {
      json_array_remove_element(cells, i); /* a run before injected it: replace */
      i--;
      continue;
    }
    if (position == 0 && cx__notebook_cell_has_tag(cell, PARAMETERS_TAG))
      position = i + 1;
  }
  JsonObject *cell = new_parameters_cell(source->str, cx__notebook_minor(notebook) >= 5);
  /* json-glib cannot insert in the middle: rebuild the array. */
  g_autoptr(JsonArray) rebuilt = json_array_sized_new(json_array_get_length(cells) + 1);
  for (guint i = 0; i <= json_array_get_length(cells); i++) {
    if (i == position)
      json_array_add_object_element(rebuilt, cell);
    if (i < json_array_get_length(cells))
      json_array_add_element(rebuilt, json_node_copy(json_array_get_element(cells, i)));
  }
  json_object_set_array_member(json_node_get_object(notebook->root), "cells",
                               json_array_ref(rebuilt));
  return TRUE;
}
