/* cellexec notebook run: run a Jupyter notebook's code cells on a backend. */
#include "config.h"

#include <fcntl.h>
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
  char **outputs;   /* -o FILE ("-": standard output): one at most */
  char *output;
  gboolean inplace;
  char *timeout;
  char *cwd;
  char **env;
  char **parameters; /* -p NAME=VALUE */
  gboolean allow_errors;
  gboolean json;
  gboolean quiet;
  char *record;
  char *debug_export;
  char **rest;
} notebook_args;

static void
notebook_args_clear(notebook_args *a)
{
  g_free(a->backend);
  g_free(a->config);
  g_strfreev(a->options);
  g_strfreev(a->outputs);
  g_free(a->timeout);
  g_free(a->cwd);
  g_strfreev(a->env);
  g_strfreev(a->parameters);
  g_free(a->record);
  g_free(a->debug_export);
  g_strfreev(a->rest);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(notebook_args, notebook_args_clear)

/* Progress on stderr: a bar redrawn in place on a terminal (its clock kept
 * moving by a thread during a long cell, its last state left on screen as
 * a summary), a line per cell otherwise, nothing with --quiet.  The --json
 * summary is built here too, one object per code cell. */
typedef struct {
  gboolean quiet;
  gboolean terminal;
  gint64 start;
  JsonArray *summary; /* NULL without --json */
  guint ran, failed, ended_sessions;
  guint first_ended;         /* code cell (from 1) that first ended its session; 0: none */
  char *first_ended_error;   /* its error type */
  /* The bar, with the lock: drawn by the callback and by the ticker. */
  GMutex lock;
  GCond stop_changed;
  gboolean stopping;
  char *bar;                 /* the bar's text before the clock, NULL: no cell running */
  char *bar_line;            /* the cell's first line, after the clock */
  GThread *ticker;
  /* Where it is drawn: a copy of stderr, made before any cell runs.  The
   * local backend points fd 2 at the running cell's capture. */
  FILE *out;
} progress;

/* With the lock held. */
static void
draw_bar(progress *p)
{
  if (p->bar == NULL)
    return;
  double elapsed = (double)(g_get_monotonic_time() - p->start) / G_USEC_PER_SEC;
  fprintf(p->out, "\r\033[K%s  %.0fs  %s", p->bar, elapsed, p->bar_line);
  fflush(p->out);
}

static gpointer
tick(gpointer data)
{
  progress *p = data;
  g_mutex_lock(&p->lock);
  while (!p->stopping) {
    g_cond_wait_until(&p->stop_changed, &p->lock, g_get_monotonic_time() + G_USEC_PER_SEC);
    if (!p->stopping)
      draw_bar(p);
  }
  g_mutex_unlock(&p->lock);
  return NULL;
}

static void
progress_begin(progress *p)
{
  int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  p->out = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (p->out == NULL) {
    if (fd >= 0)
      close(fd);
    p->out = stderr;
  }
  g_mutex_init(&p->lock);
  g_cond_init(&p->stop_changed);
  if (p->terminal && !p->quiet)
    p->ticker = g_thread_new("cellexec-progress", tick, p);
}

/* The bar's last state, as a summary line. */
static void
progress_end(progress *p, guint n_code_cells)
{
  if (p->ticker != NULL) {
    g_mutex_lock(&p->lock);
    p->stopping = TRUE;
    g_cond_signal(&p->stop_changed);
    g_mutex_unlock(&p->lock);
    g_thread_join(p->ticker);
  }
  if (p->terminal && !p->quiet) {
    double elapsed = (double)(g_get_monotonic_time() - p->start) / G_USEC_PER_SEC;
    fprintf(p->out, "\r\033[K%u of %u code cells run: %u failed, %u timed out or crashed, "
                    "%.1fs\n", p->ran, n_code_cells, p->failed, p->ended_sessions, elapsed);
  }
  if (p->out != stderr)
    fclose(p->out);
  g_free(p->bar);
  g_free(p->bar_line);
  g_free(p->first_ended_error);
  g_mutex_clear(&p->lock);
  g_cond_clear(&p->stop_changed);
}

static const char *
status_name(cx_notebook_cell_status status)
{
  switch (status) {
  case CX_NOTEBOOK_CELL_OK:
    return "ok";
  case CX_NOTEBOOK_CELL_FAILED:
    return "failed";
  case CX_NOTEBOOK_CELL_SKIPPED:
    return "skipped";
  case CX_NOTEBOOK_CELL_STARTED:
  default:
    return "running";
  }
}

/* The first line of code of SOURCE (a cell of comments only: its first
 * line), cut to fit WIDTH characters. */
static char *
first_line(const char *source, glong width)
{
  const char *start = NULL;
  for (const char *line = source; line != NULL && *line != '\0';) {
    const char *text = line + strspn(line, " \t");
    if (*text != '\n' && *text != '\0' && start == NULL)
      start = text; /* the first non-blank line, should all be comments */
    if (*text != '\n' && *text != '\0' && *text != '#') {
      start = text;
      break;
    }
    line = strchr(line, '\n');
    if (line != NULL)
      line++;
  }
  if (start == NULL)
    start = "";
  const char *end = strchr(start, '\n');
  g_autofree char *line = end != NULL ? g_strndup(start, (gsize)(end - start)) : g_strdup(start);
  /* Control characters would move the cursor of the terminal we draw on. */
  for (char *c = line; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      *c = ' ';
  if (!g_utf8_validate(line, -1, NULL))
    return g_strdup("(not UTF-8)");
  if (g_utf8_strlen(line, -1) <= width)
    return g_steal_pointer(&line);
  g_autofree char *cut = g_utf8_substring(line, 0, width - 1);
  return g_strconcat(cut, "…", NULL);
}

/* The report's session_replaced, where the core has it. */
static gboolean
ended_its_session(const cx_notebook_cell_report *report)
{
  return report->struct_size >= G_STRUCT_OFFSET(cx_notebook_cell_report, session_replaced) +
                                  sizeof report->session_replaced &&
         report->session_replaced;
}

static void
count_cell(progress *p, const cx_notebook_cell_report *report)
{
  if (report->status == CX_NOTEBOOK_CELL_OK || report->status == CX_NOTEBOOK_CELL_FAILED)
    p->ran++;
  if (report->status != CX_NOTEBOOK_CELL_FAILED)
    return;
  p->failed++;
  if (!ended_its_session(report))
    return;
  p->ended_sessions++;
  if (p->first_ended == 0) {
    p->first_ended = report->code_index + 1;
    p->first_ended_error = g_strdup(cx_result_get_error_type(report->result));
  }
}

/* The bar (on a terminal) or the line of a cell, with the lock held. */
static void
show_cell_line(progress *p, const cx_notebook_cell_report *report)
{
  if (p->terminal) {
    if (report->status == CX_NOTEBOOK_CELL_STARTED) {
      guint width = 24, done = width * report->code_index / MAX(report->n_code_cells, 1);
      g_autofree char *filled = g_strnfill(done, '#');
      g_autofree char *rest = g_strnfill(width - done, '.');
      g_free(p->bar);
      g_free(p->bar_line);
      p->bar = g_strdup_printf("[%s%s] cell %u/%u", filled, rest, report->code_index + 1,
                               report->n_code_cells);
      p->bar_line = first_line(report->source, 50);
      draw_bar(p);
    }
    return;
  }
  if (report->status == CX_NOTEBOOK_CELL_STARTED)
    return;
  g_autofree char *line = first_line(report->source, 60);
  if (report->status == CX_NOTEBOOK_CELL_FAILED)
    fprintf(p->out, "cell %u/%u %s (%.2fs) %s: %s%s\n", report->code_index + 1,
            report->n_code_cells, status_name(report->status), report->duration_s,
            cx_result_get_error_type(report->result), line,
            report->allowed_failure ? " [allowed]" : "");
  else
    fprintf(p->out, "cell %u/%u %s (%.2fs) %s\n", report->code_index + 1, report->n_code_cells,
            status_name(report->status), report->duration_s, line);
}

static void
show_progress(const cx_notebook_cell_report *report, gpointer data)
{
  progress *p = data;
  count_cell(p, report);
  if (p->summary != NULL && report->status != CX_NOTEBOOK_CELL_STARTED) {
    JsonObject *cell = json_object_new();
    json_object_set_int_member(cell, "index", report->index);
    json_object_set_string_member(cell, "status", status_name(report->status));
    json_object_set_double_member(cell, "duration_s", report->duration_s);
    if (report->status == CX_NOTEBOOK_CELL_FAILED)
      json_object_set_string_member(cell, "error", cx_result_get_error_type(report->result));
    else
      json_object_set_null_member(cell, "error");
    json_object_set_boolean_member(cell, "allowed", report->allowed_failure);
    json_array_add_object_element(p->summary, cell);
  }
  if (p->quiet)
    return;
  g_mutex_lock(&p->lock);
  if (p->terminal && ended_its_session(report))
    fprintf(p->out, "\r\033[K");
  show_cell_line(p, report);
  if (ended_its_session(report))
    fprintf(p->out, "cellexec: code cell %u ended its session (%s); the cells after it run "
                    "in a fresh one\n",
            report->code_index + 1, cx_result_get_error_type(report->result));
  g_mutex_unlock(&p->lock);
}

static guint
count_code_cells(const cx_notebook *notebook)
{
  guint n = 0;
  for (guint i = 0; i < cx_notebook_get_n_cells(notebook); i++)
    n += g_strcmp0(cx_notebook_get_cell_type(notebook, i), "code") == 0;
  return n;
}

/* TRUE when a cell of NOTEBOOK is tagged "parameters" (where -p values go). */
static gboolean
has_parameters_cell(const cx_notebook *notebook)
{
  for (guint i = 0; i < cx_notebook_get_n_cells(notebook); i++) {
    g_autoptr(JsonNode) cell = json_node_init_object(json_node_alloc(),
                                                     cx_notebook_get_cell(notebook, i));
    g_autoptr(JsonNode) tags = json_path_query("$.metadata.tags[*]", cell, NULL);
    JsonArray *list = tags != NULL ? json_node_get_array(tags) : NULL;
    for (guint t = 0; list != NULL && t < json_array_get_length(list); t++) {
      JsonNode *tag = json_array_get_element(list, t);
      if (json_node_get_value_type(tag) == G_TYPE_STRING &&
          strcmp(json_node_get_string(tag), "parameters") == 0)
        return TRUE;
    }
  }
  return FALSE;
}

static gboolean
write_notebook(const cx_notebook *notebook, const notebook_args *a, GError **error)
{
  const char *path = a->inplace ? a->rest[0] : a->output;
  if (path == NULL)
    return TRUE;
  if (strcmp(path, "-") != 0)
    return cx_notebook_save(notebook, path, error);
  g_autofree char *text = cx_notebook_to_json(notebook);
  fputs(text, stdout);
  return TRUE;
}

/* The command line of `notebook run` into A: -1 when it is right, else
 * the exit status, the reason said on stderr. */
static int
parse_run_args(int argc, char **argv, notebook_args *a)
{
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME_ARRAY, &a->outputs, "Write the executed notebook to FILE (- for standard output)", "FILE" },
    { "inplace", 0, 0, G_OPTION_ARG_NONE, &a->inplace, "Write the executed notebook over the input, atomically", NULL },
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a->backend, "Backend plugin to use (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a->config, "Config file to use instead of the search order", "FILE" },
    { "option", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a->options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "timeout", 0, 0, G_OPTION_ARG_STRING, &a->timeout, "Give each cell at most S seconds (0: no limit)", "S" },
    { "cwd", 0, 0, G_OPTION_ARG_FILENAME, &a->cwd, "Run the cells in directory DIR", "DIR" },
    { "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &a->env, "Set an environment variable for the cells (repeatable)", "KEY=VALUE" },
    { "parameter", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &a->parameters, "Inject NAME = VALUE after the cell tagged parameters (VALUE as JSON when it parses, else a string; repeatable)", "NAME=VALUE" },
    { "allow-errors", 0, 0, G_OPTION_ARG_NONE, &a->allow_errors, "Record failing cells and go on (after a timeout or a crash, in a fresh session)", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &a->json, "Print a JSON summary of the cells on standard output", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &a->quiet, "Print no progress", NULL },
    { "record", 0, 0, G_OPTION_ARG_FILENAME, &a->record, "Append each cell and its whole result to the recording FILE", "FILE" },
    { "debug-export", 0, 0, G_OPTION_ARG_FILENAME, &a->debug_export, "Log the run to FILE (Markdown; JSON Lines if FILE ends in .jsonl)", "FILE" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a->rest, NULL, NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("NOTEBOOK.ipynb");
  g_option_context_set_summary(context,
    "Run a Jupyter notebook's code cells in order, in one session of a backend, as\n"
    "`jupyter execute` (nbclient) does, and write the notebook with each code cell's\n"
    "outputs, execution count and timings.  Markdown and raw cells, and the notebook's\n"
    "metadata, are kept as they are.  The run stops at the first failing cell (its\n"
    "error is in its outputs, later cells are left as they were) unless --allow-errors;\n"
    "a cell tagged raises-exception may fail, one tagged skip-execution is skipped.\n"
    "Progress goes to stderr: a bar on a terminal, a line per cell otherwise.");
  g_option_context_set_description(context,
    "Examples:\n"
    "  cellexec notebook run analysis.ipynb -o executed.ipynb\n"
    "  cellexec notebook run -b subprocess --timeout 30 --allow-errors homework.ipynb --inplace\n"
    "  cellexec notebook run report.ipynb -p year=2024 -p region=north -o report-2024.ipynb\n"
    "  cellexec notebook run --json -q tests.ipynb\n"
    "\n"
    "Without -o or --inplace the executed notebook is not saved (as `jupyter execute`).\n"
    "The input is never modified unless --inplace, which writes to a temporary file\n"
    "and renames it over the input.  No symbolic link is written through, at the\n"
    "output's path or on its way, but the system's (root's, in a directory only root\n"
    "may change, as /dev/stdout), and a named pipe there is refused.\n"
    "\n"
    "After a cell that timed out or crashed its worker or kernel, the later cells run\n"
    "in a fresh session (with --allow-errors), and the first of them says so in a\n"
    "stderr output.\n"
    "\n"
    "Exit status: 0 every cell ran (allowed failures included), 1 a cell failed and\n"
    "the run stopped there, or a cell timed out or crashed even with --allow-errors\n"
    "(as nbclient), 2 usage, config, plugin or notebook error (one line on stderr\n"
    "says why), 3 the output could not be written.");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  guint n_rest = a->rest != NULL ? g_strv_length(a->rest) : 0;
  if (n_rest != 1)
    return fail_usage(n_rest == 0 ? "no notebook given (see `%s --help`)"
                                  : "one notebook at a time (see `%s --help`)", argv[0]);
  /* In `cellexec run`, -o sets a backend option; here it names the output
   * file.  A second -o, or a KEY=VALUE, is that mix-up, not a file name. */
  guint n_outputs = a->outputs != NULL ? g_strv_length(a->outputs) : 0;
  if (n_outputs > 1)
    return fail_usage("-o given %u times: it names the output notebook here; set backend "
                      "options with --option KEY=VALUE", n_outputs);
  a->output = n_outputs == 1 ? a->outputs[0] : NULL;
  if (a->output != NULL && g_regex_match_simple("^[a-z][a-z0-9-]*=", a->output, 0, 0))
    return fail_usage("-o %s: -o names the output notebook here; set backend options with "
                      "--option KEY=VALUE (for a file of that name, -o ./%s)", a->output, a->output);
  if (a->inplace && a->output != NULL)
    return fail_usage("give -o FILE or --inplace, not both");
  if (a->json && a->output != NULL && strcmp(a->output, "-") == 0)
    return fail_usage("--json and -o - both write to standard output; choose one");

  return -1;
}

/* The exit status of a run of PATH that COMPLETED, or stopped with ERROR;
 * ENDED_SESSIONS cells timed out or crashed their session, the first of
 * them code cell FIRST_ENDED with FIRST_ENDED_ERROR. */
static int
run_exit_status(const char *path, gboolean completed, const GError *error, guint ended_sessions,
                guint first_ended, const char *first_ended_error)
{
  /* Interrupted: the notebook holds what ran (with --allow-errors the
   * cells after the interrupted one ran too, as with nbclient). */
  if (interrupts_received() != 0)
    return 128 + interrupts_received();
  /* As nbclient raises CellTimeoutError and DeadKernelError even when it
   * allows errors. */
  if (completed && ended_sessions > 0) {
    fprintf(stderr, "cellexec: %s: %u code cell%s timed out or crashed %s session (the first: "
                    "code cell %u, %s)\n", path, ended_sessions,
            ended_sessions == 1 ? "" : "s", ended_sessions == 1 ? "its" : "their", first_ended,
            first_ended_error);
    return EXIT_CELL_FAILED;
  }
  if (completed)
    return EXIT_CELL_OK;
  if (g_error_matches(error, CX_ERROR, CX_ERROR_CELL)) {
    fprintf(stderr, "cellexec: %s\n", error->message);
    return EXIT_CELL_FAILED;
  }
  return fail_usage("%s", error->message);
}

static int
notebook_run(int argc, char **argv)
{
  g_auto(notebook_args) a = { 0 };
  int status = parse_run_args(argc, argv, &a);
  if (status >= 0)
    return status;
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load(a.rest[0], &error);
  if (notebook == NULL)
    return fail_usage("%s", error->message);
  /* A malformed -p is refused alone, with no warning before it. */
  if (!cx_notebook_inject_parameters(notebook, (const char *const *)a.parameters, &error))
    return fail_usage("%s", error->message);
  /* As papermill warns: the values may well not be where the notebook
   * expects them.  (The injected cell is tagged injected-parameters.) */
  if (a.parameters != NULL && !a.quiet && !has_parameters_cell(notebook))
    fprintf(stderr, "cellexec: warning: %s: no cell is tagged 'parameters'; the -p values "
                    "go in a new cell at the top\n", a.rest[0]);
  g_autoptr(cx_run_options) run = cell_run_options_new(a.cwd, a.env, a.timeout, &error);
  if (run == NULL)
    return fail_usage("%s", error->message);
  const backend_request request = { a.config, a.backend, a.options, a.record, a.debug_export };
  g_auto(opened_backend) opened = { 0 };
  if (!open_requested_backend(&request, &opened, &error))
    return fail_usage("%s", error->message);

  progress p = { .quiet = a.quiet, .terminal = isatty(STDERR_FILENO),
                 .start = g_get_monotonic_time(), .summary = a.json ? json_array_new() : NULL };
  g_autoptr(JsonArray) summary = p.summary;
  progress_begin(&p);
  gboolean completed =
    cx_notebook_run(notebook, opened.backend, run,
                    a.allow_errors ? CX_NOTEBOOK_ALLOW_ERRORS : CX_NOTEBOOK_DEFAULT,
                    show_progress, &p, &error);
  guint first_ended = p.first_ended;
  g_autofree char *first_ended_error = g_strdup(p.first_ended_error);
  guint ended_sessions = p.ended_sessions;
  progress_end(&p, count_code_cells(notebook));
  g_autoptr(GError) write_error = NULL;
  /* Saved even when a cell stopped the run: its error is in the notebook. */
  if ((completed || g_error_matches(error, CX_ERROR, CX_ERROR_CELL)) &&
      !write_notebook(notebook, &a, &write_error))
    return fail_usage("%s", write_error->message);

  if (summary != NULL) {
    g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), summary);
    g_autofree char *text = cx_json_to_string(node, FALSE);
    printf("%s\n", text);
  }
  return run_exit_status(a.rest[0], completed, error, ended_sessions, first_ended,
                         first_ended_error);
}

int
cmd_notebook(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "run") == 0) {
    g_autofree char *name = g_strdup_printf("%s run", argv[0]);
    argv[1] = name;
    return notebook_run(argc - 1, argv + 1);
  }
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("Usage:\n  %s run [OPTION...] NOTEBOOK.ipynb\n\n"
           "Run a Jupyter notebook on a backend; see `%s run --help`.\n",
           argv[0], argv[0]);
    return EXIT_CELL_OK;
  }
  return fail_usage("%s: expected `run` (see `%s --help`)", argv[0], argv[0]);
}
