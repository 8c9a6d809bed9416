/* The conformance kit's runner and the checks its cases share: see
 * conformance.h.  The cases themselves are in conformance_cases.c (the
 * backend vtable) and conformance_executor.c (the executor vtable). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>

#include "tools/conformance.h"

static cx_backend *
open_backend(const conformance_target *target, GError **error)
{
  const cx_plugin_info *info = cx_registry_lookup(target->registry, target->name, error);
  if (info == NULL)
    return NULL;
  cx_options *options = cx_config_get_backend_options(target->config, info, error);
  return options != NULL ? cx_backend_open(target->registry, target->name, options, error) : NULL;
}

gboolean
conformance_target_init(conformance_target *target, cx_registry *registry, const char *name,
                        const char *const *options, GError **error)
{
  memset(target, 0, sizeof *target);
  const cx_plugin_info *info = cx_registry_lookup(registry, name, error);
  if (info == NULL)
    return FALSE;
  /* OPTIONS as the plugin's section of a config: checked as a config's are. */
  g_autoptr(GString) section = g_string_new(NULL);
  g_string_append_printf(section, "[%s]\n", name);
  for (const char *const *option = options; option != NULL && *option != NULL; option++) {
    if (strchr(*option, '=') == NULL || strchr(*option, '\n') != NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "-o %s: write KEY=VALUE", *option);
      return FALSE;
    }
    g_string_append_printf(section, "%s\n", *option);
  }
  g_autoptr(cx_config) config = cx_config_load_data(section->str, "-o", error);
  g_autoptr(cx_options) checked = config != NULL ? cx_config_get_backend_options(config, info, error) : NULL;
  if (checked == NULL)
    return FALSE;
  target->registry = cx_registry_ref(registry);
  target->name = g_strdup(name);
  target->config = g_steal_pointer(&config);
  conformance_methods_read(info, &target->methods);
  return TRUE;
}

void
conformance_target_clear(conformance_target *target)
{
  g_clear_pointer(&target->registry, cx_registry_unref);
  g_clear_pointer(&target->name, g_free);
  g_clear_pointer(&target->config, cx_config_free);
}

gboolean
conformance_detect_python(const conformance_target *target, char **evidence)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = open_backend(target, &error);
  g_autoptr(cx_result) result = backend != NULL ? cx_backend_run_cell(backend, "print(6 * 7)", NULL, &error) : NULL;
  const char *out = result != NULL ? cx_result_get_stdout(result, NULL) : NULL;
  gboolean python = result != NULL && cx_result_get_success(result) && g_strcmp0(out, "42\n") == 0;
  if (evidence != NULL) {
    if (result == NULL)
      *evidence = g_strdup_printf("the cell print(6 * 7) did not run: %s",
                                  error != NULL ? error->message : "no result");
    else {
      g_autofree char *printed = g_strescape(out, NULL);
      *evidence = g_strdup_printf("the cell print(6 * 7) printed \"%s\"", printed);
    }
  }
  return python;
}

static const char *
unmet_need(const conformance_target *target, conformance_needs needs)
{
  const conformance_methods *m = &target->methods;
  if ((needs & CONFORMANCE_NEEDS_PYTHON) && !target->python)
    return "the plugin does not run Python";
  if ((needs & (CONFORMANCE_NEEDS_SESSIONS | CONFORMANCE_NEEDS_EXECUTOR)) && !m->sessions)
    return "the plugin has no sessions";
  if ((needs & CONFORMANCE_NEEDS_INTERRUPT) && !m->interrupt)
    return "the plugin has no interrupt method";
  if ((needs & CONFORMANCE_NEEDS_QUERY) && !m->query)
    return "the plugin has no query method";
  if ((needs & CONFORMANCE_NEEDS_EXECUTOR) && !m->executor)
    return "the plugin has no executor vtable";
  return NULL;
}

static int
remove_entry(const char *path, const struct stat *info, int type, struct FTW *walk)
{
  remove(path); /* best effort: remove what can be, and go on */
  return 0;
}

void
conformance_remove_tree(const char *path)
{
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

conformance_outcome
conformance_run_case(const conformance_target *target, const conformance_case *kase, char **reason)
{
  const char *unmet = unmet_need(target, kase->needs);
  if (unmet != NULL) {
    if (reason != NULL)
      *reason = g_strdup(unmet);
    return CONFORMANCE_SKIP;
  }
  conformance_check check = {
    .name = target->name, .python = target->python, .methods = &target->methods,
    .tmpdirs = g_ptr_array_new_with_free_func(g_free), .tmp_parent = target->tmpdir,
  };
  g_autoptr(GError) error = NULL;
  check.backend = open_backend(target, &error);
  if (check.backend == NULL)
    conformance_fail(&check, "the backend did not open: %s", error->message);
  else if (kase->needs & CONFORMANCE_NEEDS_EXECUTOR)
    check.session = conformance_open_session(&check);
  if (!conformance_done(&check))
    kase->run(&check);
  g_clear_pointer(&check.session, cx_session_close);
  g_clear_pointer(&check.backend, cx_backend_free);
  for (guint i = 0; i < check.tmpdirs->len; i++)
    conformance_remove_tree(g_ptr_array_index(check.tmpdirs, i));
  g_ptr_array_unref(check.tmpdirs);

  conformance_outcome outcome = check.failure != NULL   ? CONFORMANCE_FAIL
                                : check.skipped != NULL ? CONFORMANCE_SKIP
                                                        : CONFORMANCE_PASS;
  if (reason != NULL)
    *reason = g_strdup(check.failure != NULL ? check.failure : check.skipped);
  g_free(check.failure);
  g_free(check.skipped);
  return outcome;
}

/* ---- For the cases ------------------------------------------------------ */

/* Record why the case ended in *SLOT, unless it has already ended. */
static void
end_case(conformance_check *check, char **slot, const char *format, va_list args)
{
  if (!conformance_done(check))
    *slot = g_strdup_vprintf(format, args);
}

void
conformance_fail(conformance_check *check, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  end_case(check, &check->failure, format, args);
  va_end(args);
}

void
conformance_skip(conformance_check *check, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  end_case(check, &check->skipped, format, args);
  va_end(args);
}

gboolean
conformance_done(const conformance_check *check)
{
  return check->failure != NULL || check->skipped != NULL;
}

gboolean
conformance_no_error(conformance_check *check, GError *error, const char *what)
{
  if (error == NULL)
    return TRUE;
  /* Only executor cases have a session of their own: each executor
   * operation is optional. */
  if (g_error_matches(error, CX_ERROR, CX_ERROR_UNSUPPORTED) && check->session != NULL)
    conformance_skip(check, "%s: %s", what, error->message);
  else
    conformance_fail(check, "%s failed: %s", what, error->message);
  g_error_free(error);
  return FALSE;
}

/* Why the JSON form of a result breaks the bundle's schema, or NULL. */
static char *
bundle_fault(const cx_result *result)
{
  g_autoptr(JsonNode) node = cx_result_to_json_node(result);
  JsonObject *o = json_node_get_object(node);
  static const char *const strings[] = { "stdout", "stderr" };
  for (gsize i = 0; i < G_N_ELEMENTS(strings); i++)
    if (!json_object_has_member(o, strings[i]) ||
        json_node_get_value_type(json_object_get_member(o, strings[i])) != G_TYPE_STRING)
      return g_strdup_printf("its \"%s\" is not a string", strings[i]);
  JsonNode *rich = json_object_get_member(o, "rich_outputs");
  if (rich == NULL || !JSON_NODE_HOLDS_ARRAY(rich))
    return g_strdup("its \"rich_outputs\" is not an array");
  for (guint i = 0; i < json_array_get_length(json_node_get_array(rich)); i++) {
    JsonNode *bundle = json_array_get_element(json_node_get_array(rich), i);
    if (!JSON_NODE_HOLDS_OBJECT(bundle) || json_object_get_size(json_node_get_object(bundle)) == 0)
      return g_strdup_printf("rich output %u is not a non-empty MIME bundle", i);
    g_autoptr(GList) mimes = json_object_get_members(json_node_get_object(bundle));
    for (GList *m = mimes; m != NULL; m = m->next)
      if (strchr(m->data, '/') == NULL)
        return g_strdup_printf("rich output %u has the key \"%s\", which is not a MIME type", i,
                               (const char *)m->data);
  }
  gboolean success = cx_result_get_success(result);
  if (success && cx_result_has_error(result))
    return g_strdup("it says success and has an error");
  if (!success && !cx_result_has_error(result))
    return g_strdup("it says failure without an error (set one with cx_result_set_error)");
  if (!success && *cx_result_get_error_type(result) == '\0')
    return g_strdup("its error has an empty type");
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) back = cx_result_from_json_node(node, &error);
  if (back == NULL)
    return g_strdup_printf("its JSON form does not read back: %s", error->message);
  return NULL;
}

/* CODE as messages show it: its first line, escaped, cut at 60 bytes. */
static char *
shown_code(const char *code)
{
  gsize line = strcspn(code, "\n");
  gsize shown = MIN(line, 60);
  g_autofree char *head = g_strndup(code, shown);
  g_autofree char *escaped = g_strescape(head, NULL);
  return g_strconcat(escaped, shown < strlen(code) ? "..." : "", NULL);
}

cx_result *
conformance_run_cell(conformance_check *check, cx_session *session, const char *code,
                     const cx_run_options *run)
{
  GError *error = NULL;
  cx_result *result = session != NULL ? cx_session_run_cell(session, code, run, &error)
                                      : cx_backend_run_cell(check->backend, code, run, &error);
  g_autofree char *shown = shown_code(code);
  if (result == NULL) {
    conformance_fail(check, "%s of \"%s\" gave no result: %s",
                     session != NULL ? "session_run_cell" : "run_cell", shown, error->message);
    g_error_free(error);
    return NULL;
  }
  g_autofree char *fault = bundle_fault(result);
  if (fault != NULL) {
    conformance_fail(check, "the result of \"%s\" is not a well-formed bundle: %s", shown, fault);
    cx_result_free(result);
    return NULL;
  }
  return result;
}

cx_session *
conformance_open_session(conformance_check *check)
{
  g_autoptr(GError) error = NULL;
  cx_session *session = cx_session_open(check->backend, &error);
  if (session == NULL)
    conformance_fail(check, "session_open failed: %s", error->message);
  return session;
}

/* The error of RESULT as one line, for messages. */
static char *
describe_error(const cx_result *result)
{
  if (!cx_result_has_error(result))
    return g_strdup("no error");
  return g_strdup_printf("%s: %s", cx_result_get_error_type(result),
                         cx_result_get_error_message(result));
}

void
conformance_expect_stdout(conformance_check *check, const cx_result *result, const char *expected)
{
  if (result == NULL || conformance_done(check))
    return;
  if (!cx_result_get_success(result)) {
    g_autofree char *why = describe_error(result);
    conformance_fail(check, "the cell failed (%s)", why);
    return;
  }
  const char *out = cx_result_get_stdout(result, NULL);
  if (strcmp(out, expected) != 0) {
    g_autofree char *want = g_strescape(expected, NULL);
    g_autofree char *got = g_strescape(out, NULL);
    conformance_fail(check, "stdout is \"%s\", expected \"%s\"", got, want);
  }
}

void
conformance_expect_error_type(conformance_check *check, const cx_result *result, const char *type)
{
  if (result == NULL || conformance_done(check))
    return;
  if (cx_result_get_success(result))
    conformance_fail(check, "the cell succeeded, expected it to fail with %s", type);
  else if (strcmp(cx_result_get_error_type(result), type) != 0) {
    g_autofree char *why = describe_error(result);
    conformance_fail(check, "the cell failed with %s, expected %s", why, type);
  }
}

const char *
conformance_tmpdir(conformance_check *check)
{
  g_autoptr(GError) error = NULL;
  char *dir;
  if (check->tmp_parent != NULL) {
    dir = g_build_filename(check->tmp_parent, "case-XXXXXX", NULL);
    if (g_mkdtemp(dir) == NULL) {
      g_set_error(&error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", dir,
                  g_strerror(errno));
      g_clear_pointer(&dir, g_free);
    }
  } else
    dir = g_dir_make_tmp("cellexec-check-XXXXXX", &error);
  if (dir == NULL) {
    conformance_fail(check, "cannot make a temporary directory: %s", error->message);
    return NULL;
  }
  g_ptr_array_add(check->tmpdirs, dir);
  return dir;
}
