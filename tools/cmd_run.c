/* cellexec run: run one cell and print its output or its result bundle. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"

typedef struct {
  char *backend;
  char *config;
  char **options;   /* KEY=VALUE backend options */
  char *timeout;    /* seconds, as given: cx_timeout_parse() checks it */
  char *cwd;
  char **env;       /* KEY=VALUE */
  char **mime;
  gboolean use_subprocess;
  gboolean json;
  char *debug_export;
  char *code;
  char **rest;
} run_args;

static void
run_args_clear(run_args *a)
{
  g_free(a->backend);
  g_free(a->config);
  g_strfreev(a->options);
  g_free(a->timeout);
  g_free(a->cwd);
  g_strfreev(a->env);
  g_strfreev(a->mime);
  g_free(a->code);
  g_free(a->debug_export);
  g_strfreev(a->rest);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(run_args, run_args_clear)

/* CODE with each backslash-n outside string literals and comments turned
 * into a line break, so that a one-line shell command can hold a
 * multi-line cell: -c "print('hello')\n1 + 1".  Outside a string a
 * backslash may only end a line in Python, so this changes no valid
 * program; inside strings nothing is touched. */
static char *
expand_line_breaks(const char *code)
{
  GString *out = g_string_sized_new(strlen(code));
  char quote = 0;        /* the quote character of the string we are in */
  gboolean triple = FALSE;
  for (const char *c = code; *c != '\0'; c++) {
    if (quote != 0) {
      g_string_append_c(out, *c);
      if (*c == '\\' && c[1] != '\0') {
        g_string_append_c(out, *++c); /* an escaped character never closes */
      } else if (*c == quote && (!triple || (c[1] == quote && c[2] == quote))) {
        if (triple) {
          g_string_append_len(out, c + 1, 2);
          c += 2;
        }
        quote = 0;
      } else if (*c == '\n' && !triple) {
        quote = 0; /* an unterminated string: Python reports it */
      }
    } else if (*c == '\'' || *c == '"') {
      quote = *c;
      triple = c[1] == *c && c[2] == *c;
      g_string_append_len(out, c, triple ? 3 : 1);
      c += triple ? 2 : 0;
    } else if (*c == '#') {
      const char *end = strchr(c, '\n');
      gsize length = end != NULL ? (gsize)(end - c) : strlen(c);
      g_string_append_len(out, c, length);
      c += length - 1;
    } else if (*c == '\\' && c[1] == 'n') {
      g_string_append_c(out, '\n');
      c++;
    } else {
      g_string_append_c(out, *c);
    }
  }
  return g_string_free(out, FALSE);
}

/* The cell's code from -c, a file, or standard input ("-"). */
static char *
read_code(const run_args *a, GError **error)
{
  guint n_rest = a->rest != NULL ? g_strv_length(a->rest) : 0;
  if (a->code != NULL && n_rest > 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "give the code either with -c or as FILE, not both");
    return NULL;
  }
  if (a->code != NULL)
    return expand_line_breaks(a->code);
  if (n_rest != 1) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED,
                n_rest == 0 ? "no code to run: give -c CODE, a FILE, or - for standard input"
                            : "more than one FILE given; run one cell at a time");
    return NULL;
  }
  char *contents = NULL;
  gsize length = 0;
  if (strcmp(a->rest[0], "-") == 0) {
    /* GIOChannel fails on a closed or write-only fd without setting
     * ERROR: check first. */
    int flags = fcntl(STDIN_FILENO, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY) {
      g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot read the code from standard input: %s",
                  flags < 0 ? "it is closed" : "it is not open for reading");
      return NULL;
    }
    g_autoptr(GIOChannel) in = g_io_channel_unix_new(STDIN_FILENO);
    if (g_io_channel_set_encoding(in, NULL, error) != G_IO_STATUS_NORMAL ||
        g_io_channel_read_to_end(in, &contents, &length, error) != G_IO_STATUS_NORMAL) {
      if (*error == NULL)
        g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot read the code from standard input");
      return NULL;
    }
  } else if (!g_file_get_contents(a->rest[0], &contents, &length, error)) {
    return NULL;
  }
  if (memchr(contents, '\0', length) != NULL) {
    g_free(contents);
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "the code contains a NUL byte; give Python source text");
    return NULL;
  }
  return contents;
}

/* Open the backend; *DEBUG_EXPORT receives the export path that applies
 * (--debug-export, else the config's), or NULL. */
static cx_backend *
open_backend(const run_args *a, char **debug_export, GError **error)
{
  g_autoptr(cx_config) config = cx_config_load(a->config, error);
  if (config == NULL)
    return NULL;
  *debug_export = g_strdup(a->debug_export != NULL ? a->debug_export
                                                   : cx_config_get_debug_export(config));
  g_autoptr(cx_registry) registry = cx_registry_new(cx_config_get_plugin_path(config));
  if (!cx_config_check_sections(config, registry, error))
    return NULL; /* as `config check` says: a misspelled section's limits would not apply */
  const char *name = a->backend != NULL ? a->backend : cx_config_get_backend(config);
  const cx_plugin_info *plugin = cx_registry_lookup(registry, name, error);
  if (plugin == NULL)
    return NULL;
  if (!cx_plugin_info_is_usable(plugin))
    return cx_backend_open(registry, name, NULL, error); /* fails with the reason */

  g_autoptr(cx_options) options = cx_config_get_backend_options(config, plugin, error);
  if (options == NULL)
    return NULL;
  for (char **item = a->options; item != NULL && *item != NULL; item++) {
    const char *eq = strchr(*item, '=');
    if (eq == NULL) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "-o %s: write KEY=VALUE", *item);
      return NULL;
    }
    g_autofree char *key = g_strndup(*item, (gsize)(eq - *item));
    if (!cx_options_set(options, key, eq + 1, error))
      return NULL;
  }
  return cx_backend_open(registry, name, g_steal_pointer(&options), error);
}

static cx_run_options *
make_run_options(const run_args *a, GError **error)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  if (a->cwd != NULL)
    cx_run_options_set_cwd(run, a->cwd);
  for (char **item = a->env; item != NULL && *item != NULL; item++)
    if (!cx_run_options_add_env(run, *item)) {
      g_set_error(error, CX_ERROR, CX_ERROR_OPTION, "-e %s: write KEY=VALUE", *item);
      return NULL;
    }
  double timeout = 0;
  if (a->timeout != NULL && !cx_timeout_parse(a->timeout, &timeout, error)) {
    g_prefix_error(error, "--timeout: ");
    return NULL;
  }
  cx_run_options_set_timeout(run, timeout);
  cx_run_options_set_use_subprocess(run, a->use_subprocess);
  for (char **mime = a->mime; mime != NULL && *mime != NULL; mime++)
    cx_run_options_add_allowed_mime_type(run, *mime);
  return g_steal_pointer(&run);
}

/* BUNDLE's text/plain on stdout, or what it holds when it has none. */
static void
print_bundle_text(JsonObject *bundle)
{
  JsonNode *plain = json_object_get_member(bundle, "text/plain");
  if (plain != NULL && JSON_NODE_HOLDS_VALUE(plain) &&
      json_node_get_value_type(plain) == G_TYPE_STRING) {
    printf("%s\n", json_node_get_string(plain));
  } else {
    g_autoptr(GList) types = json_object_get_members(bundle);
    printf("<rich output: %s>\n", types != NULL ? (const char *)types->data : "?");
  }
}

/* Human mode: the cell's outputs in the order it made them, its streams to
 * ours, rich outputs and pages (`len?`) as text, the traceback last. */
static void
print_human(const cx_result *result)
{
  g_autoptr(JsonArray) outputs = cx_result_list_outputs(result);
  for (guint i = 0; i < json_array_get_length(outputs); i++) {
    JsonObject *output = json_array_get_object_element(outputs, i);
    const char *type = json_object_get_string_member(output, "output_type");
    if (g_str_equal(type, "stream")) {
      gboolean to_stderr = g_str_equal(json_object_get_string_member(output, "name"), "stderr");
      fflush(to_stderr ? stdout : stderr);
      fputs(json_object_get_string_member(output, "text"), to_stderr ? stderr : stdout);
    } else if (g_str_equal(type, "error")) {
      /* The cell's own failure is last and printed below; this one was
       * shown without ending the cell (a display formatter that raised). */
      if (i + 1 < json_array_get_length(outputs) || !cx_result_has_error(result)) {
        fflush(stdout);
        JsonArray *lines = json_object_get_array_member(output, "traceback");
        for (guint j = 0; j < json_array_get_length(lines); j++)
          fprintf(stderr, "%s\n", json_array_get_string_element(lines, j));
      }
    } else if (json_object_get_size(json_object_get_object_member(output, "data")) > 0) {
      fflush(stderr);
      print_bundle_text(json_object_get_object_member(output, "data"));
    }
  }
  JsonNode *payload = cx_result_get_extra(result, "payload");
  for (guint i = 0; payload != NULL && JSON_NODE_HOLDS_ARRAY(payload) &&
                    i < json_array_get_length(json_node_get_array(payload)); i++) {
    JsonNode *page = json_array_get_element(json_node_get_array(payload), i);
    JsonNode *data = JSON_NODE_HOLDS_OBJECT(page)
                       ? json_object_get_member(json_node_get_object(page), "data") : NULL;
    if (data != NULL && JSON_NODE_HOLDS_OBJECT(data))
      print_bundle_text(json_node_get_object(data));
  }
  fflush(stdout);
  if (cx_result_has_error(result)) {
    const char *traceback = cx_result_get_error_traceback(result);
    if (traceback != NULL && *traceback != '\0')
      fprintf(stderr, "%s%s", traceback, g_str_has_suffix(traceback, "\n") ? "" : "\n");
    else
      fprintf(stderr, "%s: %s\n", cx_result_get_error_type(result),
              cx_result_get_error_message(result));
  }
}

/* With --json, standard output carries one document and nothing else:
 * while the backend is opened and the cell runs, whatever is written to
 * fd 1 (a backend that does not capture fds, a plugin that prints) goes to
 * stderr instead.  Returns the saved stdout, or -1 (left as it is). */
static int
divert_stdout(void)
{
  fflush(stdout);
  int saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    close(saved);
    saved = -1;
  }
  return saved;
}

static void
restore_stdout(int saved)
{
  fflush(stdout);
  if (saved < 0)
    return;
  dup2(saved, STDOUT_FILENO);
  close(saved);
}

int
cmd_run(int argc, char **argv)
{
  g_auto(run_args) a = { 0 };
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a.backend, "Backend plugin to use (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a.config, "Config file to use instead of the search order", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &a.options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "timeout", 0, 0, G_OPTION_ARG_STRING, &a.timeout, "Give the cell at most S seconds (0: no limit; at most 31536000, a year)", "S" },
    { "cwd", 0, 0, G_OPTION_ARG_FILENAME, &a.cwd, "Run the cell in directory DIR", "DIR" },
    { "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &a.env, "Set an environment variable for the cell (repeatable)", "KEY=VALUE" },
    { "mime", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.mime, "Keep only rich outputs of this MIME type (repeatable)", "TYPE" },
    { "use-subprocess", 0, 0, G_OPTION_ARG_NONE, &a.use_subprocess, "Run the cell in a separate process", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &a.json, "Print the result bundle as one JSON document", NULL },
    { "debug-export", 0, 0, G_OPTION_ARG_FILENAME, &a.debug_export, "Log the run to FILE (Markdown; JSON Lines if FILE ends in .jsonl)", "FILE" },
    { "code", 'c', 0, G_OPTION_ARG_STRING, &a.code, "Run CODE (\\n outside strings is a line break)", "CODE" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a.rest, NULL, NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("(-c CODE | FILE | -)");
  g_option_context_set_summary(context,
    "Run one Python cell on a backend.  Its outputs are printed in the order the\n"
    "cell made them: its stdout and stderr go to ours, each rich output (display()\n"
    "calls, the value of the last expression) and each help page (len?) is printed\n"
    "as its text/plain form, and a failure prints the traceback on stderr.  With --json,\n"
    "print the result bundle instead:\n"
    "  {\"stdout\", \"stderr\", \"rich_outputs\", \"success\", \"error\", \"outputs\", ...}\n"
    "where \"outputs\" lists them in order as nbformat outputs, and every byte of\n"
    "the streams is kept (text output shows invalid UTF-8 as U+FFFD).");
  g_option_context_set_description(context,
    "Examples:\n"
    "  cellexec run -c 'print(\"hello\")'\n"
    "  cellexec run --json -c \"print('hello')\\n1 + 1\"\n"
    "  cellexec run --json -c '1 + 1'\n"
    "  cellexec run -b fake -o responses=replies.json --json script.py\n"
    "  echo 'import os; print(os.getcwd())' | cellexec run --cwd /tmp -\n"
    "  cellexec run --debug-export run.md -c 'x = 1'\n"
    "\n"
    "Exit status: 0 the cell succeeded, 1 the cell failed, 2 usage, config or\n"
    "plugin error (nothing ran; one line on stderr says why), 3 the output could\n"
    "not be written (the cell ran; its result is lost).");
  g_option_context_add_main_entries(context, entries, NULL);
  g_set_prgname(argv[0]);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;

  g_autoptr(GError) error = NULL;
  g_autofree char *code = read_code(&a, &error);
  if (code == NULL)
    return fail_usage("%s", error->message);
  g_autoptr(cx_run_options) run = make_run_options(&a, &error);
  if (run == NULL)
    return fail_usage("%s", error->message);
  g_autofree char *debug_export = NULL;
  int document_fd = a.json ? divert_stdout() : -1;
  g_autoptr(cx_backend) backend = open_backend(&a, &debug_export, &error);
  if (backend == NULL)
    return fail_usage("%s", error->message);
  cx_debug_exporter *exporter = NULL;
  if (debug_export != NULL) {
    exporter = cx_debug_exporter_new_for_path(debug_export, NULL, &error);
    if (exporter == NULL)
      return fail_usage("%s", error->message);
    cx_backend_set_debug_exporter(backend, exporter);
  }
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, code, run, &error);
  cx_backend_set_debug_exporter(backend, NULL);
  cx_debug_exporter_free(exporter);
  if (result == NULL)
    return fail_usage("%s", error->message);

  /* A reader that went away (`| head`) is a write error to report (exit 3),
   * not a signal that kills us; set only now, so cells' children keep the
   * default. */
  signal(SIGPIPE, SIG_IGN);
  if (a.json) {
    restore_stdout(document_fd);
    g_autofree char *json = cx_result_to_json(result, FALSE);
    printf("%s\n", json);
  } else {
    print_human(result);
  }
  return cx_result_get_success(result) ? EXIT_CELL_OK : EXIT_CELL_FAILED;
}
