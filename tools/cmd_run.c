/* cellexec run: run cells and print their output or their result bundles. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/cell_command.h"
#include "tools/interrupts.h"
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
  char *record;     /* --record FILE */
  char **code;      /* -c CODE, repeatable */
  gboolean session; /* split each input into cells at "# %%" lines */
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
  g_strfreev(a->code);
  g_free(a->debug_export);
  g_free(a->record);
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

/* The text of FILE, or of standard input for "-". */
/* DATA (LEN bytes, taken) as code: each NUL byte as CX_RESULT_NUL, so that
 * the cell fails as Python fails such source (cx_backend_run_cell()),
 * instead of running what comes before the NUL. */
static char *
code_of_bytes(char *data, gsize len)
{
  if (memchr(data, '\0', len) == NULL)
    return data;
  GString *code = g_string_sized_new(len + 1);
  for (gsize i = 0; i < len; i++) {
    if (data[i] == '\0')
      g_string_append(code, CX_RESULT_NUL);
    else
      g_string_append_c(code, data[i]);
  }
  g_free(data);
  return g_string_free(code, FALSE);
}

static char *
read_input(const char *file, GError **error)
{
  char *contents = NULL;
  gsize length = 0;
  if (strcmp(file, "-") == 0) {
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
  } else if (!g_file_get_contents(file, &contents, &length, error)) {
    return NULL;
  }
  return code_of_bytes(contents, length);
}

/* The marker line that starts a cell in --session input, as in the
 * "percent" format of Jupytext, VS Code and Spyder. */
#define CELL_MARKER "# %%"

/* TEXT cut into cells at marker lines (the marker lines dropped); blank
 * cells are left out. */
static void
split_cells(GPtrArray *cells, const char *text)
{
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GString) cell = g_string_new(NULL);
  for (char **line = lines;; line++) {
    if (*line == NULL || g_str_has_prefix(*line, CELL_MARKER)) {
      g_autofree char *stripped = g_strstrip(g_strdup(cell->str));
      if (*stripped != '\0')
        g_ptr_array_add(cells, g_strdup(cell->str));
      g_string_truncate(cell, 0);
      if (*line == NULL)
        break;
      continue;
    }
    g_string_append_printf(cell, "%s%s", *line, line[1] != NULL ? "\n" : "");
  }
}

/* The cells to run, in order: each -c CODE, then each FILE ("-": standard
 * input); with --session each input is cut into cells at marker lines. */
static GPtrArray *
read_cells(const run_args *a, GError **error)
{
  g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);
  for (char **code = a->code; code != NULL && *code != NULL; code++) {
    g_autofree char *expanded = expand_line_breaks(*code);
    if (a->session)
      split_cells(cells, expanded);
    else
      g_ptr_array_add(cells, g_steal_pointer(&expanded));
  }
  guint stdin_uses = 0;
  for (char **file = a->rest; file != NULL && *file != NULL; file++) {
    if (strcmp(*file, "-") == 0 && stdin_uses++ > 0) {
      g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "standard input (-) can be read only once");
      return NULL;
    }
    g_autofree char *text = read_input(*file, error);
    if (text == NULL)
      return NULL;
    if (a->session)
      split_cells(cells, text);
    else
      g_ptr_array_add(cells, g_steal_pointer(&text));
  }
  if (cells->len == 0 && !a->session) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED,
                "no code to run: give -c CODE, a FILE, or - for standard input");
    return NULL;
  }
  return g_steal_pointer(&cells);
}

static cx_run_options *
make_run_options(const run_args *a, GError **error)
{
  cx_run_options *run = cell_run_options_new(a->cwd, a->env, a->timeout, error);
  if (run == NULL)
    return NULL;
  cx_run_options_set_use_subprocess(run, a->use_subprocess);
  for (char **mime = a->mime; mime != NULL && *mime != NULL; mime++)
    cx_run_options_add_allowed_mime_type(run, *mime);
  return run;
}

/* Human mode prints each output the moment the backend gives it (see
 * cx_run_options_set_output_callback), on copies of our stdout and stderr
 * made before any cell runs: a backend capturing fds 1 and 2 in this
 * process (local) would otherwise take what we print back into the cell. */
typedef struct {
  FILE *out;
  FILE *err;
} live_printer;

/* BUNDLE's text/plain, or what it holds when it has none. */
static void
print_bundle_text(FILE *out, JsonObject *bundle)
{
  JsonNode *plain = json_object_get_member(bundle, "text/plain");
  if (plain != NULL && JSON_NODE_HOLDS_VALUE(plain) &&
      json_node_get_value_type(plain) == G_TYPE_STRING) {
    fprintf(out, "%s\n", json_node_get_string(plain));
  } else {
    g_autoptr(GList) types = json_object_get_members(bundle);
    fprintf(out, "<rich output: %s>\n", types != NULL ? (const char *)types->data : "?");
  }
}

/* An error output's traceback LINE for STREAM: IPython's lines may end in
 * a line break of their own, and carry colour codes a file or a pipe has
 * no use for. */
static void
print_traceback_line(FILE *stream, const char *line)
{
  static GRegex *colour;
  g_autofree char *plain = NULL;
  if (!isatty(fileno(stream))) {
    if (g_once_init_enter(&colour))
      g_once_init_leave(&colour, g_regex_new("\x1b\\[[0-9;?]*[ -/]*[@-~]", G_REGEX_RAW, 0, NULL));
    line = plain = g_regex_replace_literal(colour, line, -1, 0, "", 0, NULL);
  }
  fputs(line, stream);
  if (!g_str_has_suffix(line, "\n"))
    fputc('\n', stream);
}

/* One output: streams to ours, rich outputs (displays, updates, the value
 * of the last expression) as text, errors as their traceback on stderr. */
static void
print_output(JsonObject *output, gpointer data)
{
  live_printer *printer = data;
  const char *type = json_object_get_string_member(output, "output_type");
  if (g_str_equal(type, "stream")) {
    gboolean to_stderr = g_str_equal(json_object_get_string_member(output, "name"), "stderr");
    fflush(to_stderr ? printer->out : printer->err);
    fputs(json_object_get_string_member(output, "text"), to_stderr ? printer->err : printer->out);
  } else if (g_str_equal(type, "error")) {
    fflush(printer->out);
    JsonArray *lines = json_object_get_array_member(output, "traceback");
    for (guint j = 0; j < json_array_get_length(lines); j++)
      print_traceback_line(printer->err, json_array_get_string_element(lines, j));
    if (json_array_get_length(lines) == 0)
      fprintf(printer->err, "%s: %s\n", json_object_get_string_member(output, "ename"),
              json_object_get_string_member(output, "evalue"));
  } else if (json_object_has_member(output, "data") &&
             json_object_get_size(json_object_get_object_member(output, "data")) > 0) {
    fflush(printer->err);
    print_bundle_text(printer->out, json_object_get_object_member(output, "data"));
  }
  fflush(printer->out);
  fflush(printer->err);
}

/* What is printed once the cell is over: the pages (`len?`) it asked for. */
static void
print_pages(const live_printer *printer, const cx_result *result)
{
  JsonNode *payload = cx_result_get_extra(result, "payload");
  for (guint i = 0; payload != NULL && JSON_NODE_HOLDS_ARRAY(payload) &&
                    i < json_array_get_length(json_node_get_array(payload)); i++) {
    JsonNode *page = json_array_get_element(json_node_get_array(payload), i);
    JsonNode *data = JSON_NODE_HOLDS_OBJECT(page)
                       ? json_object_get_member(json_node_get_object(page), "data") : NULL;
    if (data != NULL && JSON_NODE_HOLDS_OBJECT(data))
      print_bundle_text(printer->out, json_node_get_object(data));
  }
  fflush(printer->out);
}

/* A copy of FD as a stream of its own. */
static FILE *
stream_copy(int fd, FILE *fallback)
{
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  FILE *stream = copy >= 0 ? fdopen(copy, "w") : NULL;
  if (stream == NULL && copy >= 0)
    close(copy);
  return stream != NULL ? stream : fallback;
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

/* Run CELLS on BACKEND, each with RUN: one stateless cell, or several in
 * one session.  Prints as the mode says; returns the exit status. */
static int
run_cells(cx_backend *backend, GPtrArray *cells, cx_run_options *run, gboolean json,
          int *document_fd)
{
  g_autoptr(GError) error = NULL;
  live_printer printer = { NULL, NULL };
  if (!json) {
    printer.out = stream_copy(STDOUT_FILENO, stdout);
    printer.err = stream_copy(STDERR_FILENO, stderr);
    cx_run_options_set_output_callback(run, print_output, &printer);
  }
  cx_session *session = NULL;
  if (cells->len > 1 && (session = cx_session_open(backend, &error)) == NULL)
    return fail_usage("%s", error->message);

  int status = EXIT_CELL_OK;
  for (guint i = 0; i < cells->len && status == EXIT_CELL_OK && !interrupts_received(); i++) {
    const char *code = g_ptr_array_index(cells, i);
    g_autoptr(cx_result) result = session != NULL
                                    ? cx_session_run_cell(session, code, run, &error)
                                    : cx_backend_run_cell(backend, code, run, &error);
    if (result == NULL) {
      status = fail_usage("%s", error->message);
      break;
    }
    if (json) {
      /* Our stdout for the document, then away again for the next cell. */
      restore_stdout(*document_fd);
      g_autofree char *text = cx_result_to_json(result, FALSE);
      printf("%s\n", text);
      fflush(stdout);
      *document_fd = i + 1 < cells->len ? divert_stdout() : -1;
    } else {
      print_pages(&printer, result);
    }
    if (!cx_result_get_success(result))
      status = EXIT_CELL_FAILED;
  }
  cx_session_close(session);
  /* As for stdout itself (cellexec.c): a lost write is exit 3. */
  if (printer.out != NULL && printer.out != stdout) {
    errno = 0;
    gboolean lost = ferror(printer.out) != 0;
    lost = fclose(printer.out) != 0 || lost;
    if (lost) {
      fprintf(stderr, "cellexec: cannot write the output: %s\n",
              errno != 0 ? g_strerror(errno) : "a write failed");
      status = EXIT_OUTPUT;
    }
  }
  if (printer.err != NULL && printer.err != stderr)
    fclose(printer.err);
  return status;
}

int
cmd_run(int argc, char **argv)
{
  g_auto(run_args) a = { 0 };
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a.backend, "Backend plugin to use (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a.config, "Config file to use instead of the search order", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &a.options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "timeout", 0, 0, G_OPTION_ARG_STRING, &a.timeout, "Give each cell at most S seconds (0: no limit; at most 31536000, a year)", "S" },
    { "cwd", 0, 0, G_OPTION_ARG_FILENAME, &a.cwd, "Run the cells in directory DIR", "DIR" },
    { "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &a.env, "Set an environment variable for the cells (repeatable)", "KEY=VALUE" },
    { "mime", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.mime, "Keep only rich outputs of this MIME type (repeatable)", "TYPE" },
    { "use-subprocess", 0, 0, G_OPTION_ARG_NONE, &a.use_subprocess, "Run each cell in a separate process", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &a.json, "Print each cell's result bundle as one line of JSON", NULL },
    { "debug-export", 0, 0, G_OPTION_ARG_FILENAME, &a.debug_export, "Log the run to FILE (Markdown; JSON Lines if FILE ends in .jsonl)", "FILE" },
    { "record", 0, 0, G_OPTION_ARG_FILENAME, &a.record, "Append each cell and its whole result to the recording FILE (JSON Lines), for replay with -b fake -o responses=FILE", "FILE" },
    { "code", 'c', 0, G_OPTION_ARG_STRING_ARRAY, &a.code, "Run CODE (\\n outside strings is a line break; repeat for more cells)", "CODE" },
    { "session", 's', 0, G_OPTION_ARG_NONE, &a.session, "Cut each input into cells at lines starting with \"" CELL_MARKER "\" and run them in one session", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a.rest, NULL, NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("[-c CODE]... [FILE | -]...");
  g_option_context_set_summary(context,
    "Run Python cells on a backend.  A cell's outputs are printed as it makes them:\n"
    "its stdout and stderr go to ours, each rich output (display() calls, the value\n"
    "of the last expression) and each help page (len?) is printed as its text/plain\n"
    "form, and a failure prints the traceback on stderr.  With --json, print the\n"
    "result bundle instead, once the cell is over:\n"
    "  {\"stdout\", \"stderr\", \"rich_outputs\", \"success\", \"error\", \"outputs\", ...}\n"
    "where \"outputs\" lists them in order as nbformat outputs, and every byte of\n"
    "the streams is kept (text output shows invalid UTF-8 as U+FFFD).\n"
    "\n"
    "One cell (one -c, or one FILE) runs in a fresh namespace.  Several (-c repeated,\n"
    "several FILEs, or --session) run in order in one session, so later cells see\n"
    "what earlier ones defined; the run stops at the first cell that fails, and\n"
    "--json prints one line per cell.");
  g_option_context_set_description(context,
    "Examples:\n"
    "  cellexec run -c 'print(\"hello\")'\n"
    "  cellexec run --json -c \"print('hello')\\n1 + 1\"\n"
    "  cellexec run -c 'x = 20' -c 'x + 1'                  # one session: prints 21\n"
    "  printf 'x = 1\\n# %%%%\\nx + 1\\n' | cellexec run --session -\n"
    "  cellexec run -b fake -o responses=replies.json --json script.py\n"
    "  echo 'import os; print(os.getcwd())' | cellexec run --cwd /tmp -\n"
    "  cellexec run --debug-export run.md -c 'x = 1'\n"
    "  cellexec run --record cells.jsonl -c '1 + 1'         # record once\n"
    "  cellexec run -b fake -o responses=cells.jsonl -c '1 + 1'   # replay\n"
    "\n"
    "Exit status: 0 every cell succeeded, 1 a cell failed, 2 usage, config or\n"
    "plugin error (nothing ran; one line on stderr says why), 3 the output could\n"
    "not be written (the cells ran; their results are lost).");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;

  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) cells = read_cells(&a, &error);
  if (cells == NULL)
    return fail_usage("%s", error->message);
  g_autoptr(cx_run_options) run = make_run_options(&a, &error);
  if (run == NULL)
    return fail_usage("%s", error->message);
  int document_fd = a.json ? divert_stdout() : -1;
  const backend_request request = { a.config, a.backend, a.options, a.record, a.debug_export };
  g_auto(opened_backend) opened = { 0 };
  if (!open_requested_backend(&request, &opened, &error))
    return fail_usage("%s", error->message);
  int status = run_cells(opened.backend, cells, run, a.json, &document_fd);
  restore_stdout(document_fd);
  /* Interrupted: the cell's KeyboardInterrupt is printed; say it as a
   * shell would, once the backend and its kernels are gone. */
  return interrupts_received() != 0 ? 128 + interrupts_received() : status;
}
