/* cellexec kernel: serve a backend as a Jupyter kernel, and install
 * kernelspecs that start it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib-unix.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "kernel/zmq_kernel.h"
#include "tools/cell_command.h"
#include "tools/commands.h"
#include "tools/interrupts.h"

/* The bounds on what a peer sends, before its signature can be checked:
 * more than any front end's message (a big cell, a comm's buffers). */
#define DEFAULT_MAX_MESSAGE "64M"
#define DEFAULT_MAX_FRAMES 1024

typedef struct {
  char *connection_file;
  char *backend;
  char *config;
  char **options;
  char *max_message;
  gint64 max_frames;
  /* install */
  gboolean user;
  char *prefix;
  char *name;
  char *display_name;
  char *executable;
  char **rest;
} kernel_args;

static void
kernel_args_clear(kernel_args *a)
{
  g_free(a->connection_file);
  g_free(a->backend);
  g_free(a->config);
  g_strfreev(a->options);
  g_free(a->max_message);
  g_free(a->prefix);
  g_free(a->name);
  g_free(a->display_name);
  g_free(a->executable);
  g_strfreev(a->rest);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(kernel_args, kernel_args_clear)

/* ---- Serving ---------------------------------------------------------------------- */

static int signal_pipe[2] = { -1, -1 };

/* After SIGTERM, how long the kernel has to end its session (its cell
 * interrupted, a subprocess cell killed after interrupt-grace) before it
 * exits at once. */
#define TERM_WAIT_SECONDS 5

/* SIGINT interrupts the cell (interrupt_mode "signal"); SIGTERM ends the
 * kernel cleanly, within TERM_WAIT_SECONDS. */
static void
on_signal(int signal_number)
{
  int saved = errno;
  if (signal_number == SIGTERM)
    interrupts_exit_within(TERM_WAIT_SECONDS);
  char what = signal_number == SIGINT ? 'i' : 't';
  ssize_t ignored = write(signal_pipe[1], &what, 1);
  (void)ignored;
  errno = saved;
}

typedef struct {
  const backend_request *request;
  opened_backend opened;
} kernel_backend;

/* The backend, opened once the kernel's sockets are bound; then SIGINT
 * and SIGTERM are the kernel's (signal_pipe), not the commands' Ctrl-C
 * (stop after this cell) that opening it set up: a kernel goes on. */
static cx_backend *
open_kernel_backend(gpointer data, GError **error)
{
  kernel_backend *kb = data;
  if (!open_requested_backend(kb->request, &kb->opened, error))
    return NULL;
  interrupts_unwatch();
  interrupts_prepare_deadline("cellexec kernel");
  struct sigaction action = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  return kb->opened.backend;
}

static int
serve_kernel(kernel_args *a)
{
  const backend_request request = { a->config, a->backend, a->options, NULL, NULL };
  kernel_backend kb = { &request, { 0 } };
  g_autoptr(GError) error = NULL;
  gsize max_message = 0;
  if (!parse_size("kernel", "max-message",
                  a->max_message != NULL ? a->max_message : DEFAULT_MAX_MESSAGE, &max_message,
                  &error))
    return fail_usage("--max-message: %s", error->message);
  if (a->max_frames < 7)
    return fail_usage("--max-frames %" G_GINT64_FORMAT ": a message has at least 7 frames; give "
                      "7 or more", a->max_frames);
  const jp_zmq_bounds bounds = { max_message, (guint64)a->max_frames };
  if (!g_unix_open_pipe(signal_pipe, FD_CLOEXEC, &error) ||
      !g_unix_set_fd_nonblocking(signal_pipe[1], TRUE, &error))
    return fail_usage("%s", error->message);
  gboolean served = cxk_zmq_serve(a->connection_file, &bounds, open_kernel_backend, &kb,
                                  signal_pipe[0], &error);
  opened_backend_clear(&kb.opened);
  if (!served)
    return fail_usage("%s", error->message);
  return EXIT_CELL_OK;
}

/* ---- Installing a kernelspec ------------------------------------------------------ */

/* This program's own path, for a kernelspec's argv.  In a build tree the
 * program runs from .libs/, put there by libtool's wrapper script, which
 * finds the build's libraries: the kernelspec names the wrapper. */
static char *
own_path(void)
{
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  if (exe == NULL)
    return g_build_filename(BINDIR, "cellexec", NULL);
  g_autofree char *dir = g_path_get_dirname(exe);
  g_autofree char *dir_name = g_path_get_basename(dir);
  if (g_str_equal(dir_name, ".libs")) {
    g_autofree char *top = g_path_get_dirname(dir);
    char *wrapper = g_build_filename(top, "cellexec", NULL);
    if (g_file_test(wrapper, G_FILE_TEST_IS_REGULAR | G_FILE_TEST_IS_EXECUTABLE))
      return wrapper;
    g_free(wrapper);
  }
  return g_steal_pointer(&exe);
}

/* Where kernelspecs go: --prefix DIR, --user, else this installation's
 * prefix (as `python3 -m ipykernel install` installs system-wide): Jupyter
 * searches PREFIX/share/jupyter for the prefixes it knows. */
static char *
kernels_dir(const kernel_args *a)
{
  if (a->prefix != NULL)
    return g_build_filename(a->prefix, "share", "jupyter", "kernels", NULL);
  if (a->user) {
    const char *data = g_getenv("JUPYTER_DATA_DIR");
    if (data != NULL && *data != '\0')
      return g_build_filename(data, "kernels", NULL);
    return g_build_filename(g_get_user_data_dir(), "jupyter", "kernels", NULL);
  }
  return g_build_filename(PREFIX, "share", "jupyter", "kernels", NULL);
}

static JsonObject *
kernelspec_new(const kernel_args *a, const char *display_name)
{
  JsonArray *argv = json_array_new();
  g_autofree char *self = a->executable != NULL ? g_canonicalize_filename(a->executable, NULL)
                                                : own_path();
  json_array_add_string_element(argv, self);
  json_array_add_string_element(argv, "kernel");
  json_array_add_string_element(argv, "-f");
  json_array_add_string_element(argv, "{connection_file}");
  if (a->config != NULL) {
    g_autofree char *config = g_canonicalize_filename(a->config, NULL);
    json_array_add_string_element(argv, "-C");
    json_array_add_string_element(argv, config);
  }
  if (a->backend != NULL) {
    json_array_add_string_element(argv, "-b");
    json_array_add_string_element(argv, a->backend);
  }
  for (char **o = a->options; o != NULL && *o != NULL; o++) {
    json_array_add_string_element(argv, "-o");
    json_array_add_string_element(argv, *o);
  }
  if (a->max_message != NULL) {
    json_array_add_string_element(argv, "--max-message");
    json_array_add_string_element(argv, a->max_message);
  }
  if (a->max_frames != DEFAULT_MAX_FRAMES) {
    g_autofree char *frames = g_strdup_printf("%" G_GINT64_FORMAT, a->max_frames);
    json_array_add_string_element(argv, "--max-frames");
    json_array_add_string_element(argv, frames);
  }
  JsonObject *spec = json_object_new();
  json_object_set_array_member(spec, "argv", argv);
  json_object_set_string_member(spec, "display_name", display_name);
  json_object_set_string_member(spec, "language", "python");
  json_object_set_string_member(spec, "interrupt_mode", "message");
  JsonObject *metadata = json_object_new();
  json_object_set_boolean_member(metadata, "debugger", FALSE);
  json_object_set_object_member(spec, "metadata", metadata);
  return spec;
}

/* The logos installed in CX_KERNEL_LOGO_DIR, into DIR; none when this
 * cellexec is not installed. */
static void
copy_logos(const char *dir)
{
  static const char *const logos[] = { "logo-32x32.png", "logo-64x64.png" };
  for (gsize i = 0; i < G_N_ELEMENTS(logos); i++) {
    g_autofree char *from_path = g_build_filename(CX_KERNEL_LOGO_DIR, logos[i], NULL);
    g_autofree char *to_path = g_build_filename(dir, logos[i], NULL);
    g_autoptr(GFile) from = g_file_new_for_path(from_path);
    g_autoptr(GFile) to = g_file_new_for_path(to_path);
    g_file_copy(from, to, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, NULL);
  }
}

static int
install_kernelspec(kernel_args *a)
{
  const char *name = a->name != NULL ? a->name : "cellexec";
  if (!g_regex_match_simple("^[A-Za-z0-9._-]+$", name, 0, 0))
    return fail_usage("--name %s: a kernel name has only letters, digits, '.', '_' and '-'", name);
  if (a->user && a->prefix != NULL)
    return fail_usage("give --user or --prefix DIR, not both");
  g_autofree char *default_display =
    g_strdup_printf("Python (cellexec%s%s)", a->backend != NULL ? ", " : "",
                    a->backend != NULL ? a->backend : "");
  const char *display = a->display_name != NULL ? a->display_name : default_display;
  g_autofree char *parent = kernels_dir(a);
  g_autofree char *dir = g_build_filename(parent, name, NULL);
  if (g_mkdir_with_parents(dir, 0755) != 0)
    return fail_usage("cannot make %s: %s", dir, g_strerror(errno));
  g_autoptr(JsonObject) spec = kernelspec_new(a, display);
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), spec);
  g_autofree char *text = cx_json_to_string(node, TRUE);
  g_autofree char *file = g_build_filename(dir, "kernel.json", NULL);
  g_autofree char *with_newline = g_strconcat(text, "\n", NULL);
  g_autoptr(GError) error = NULL;
  /* 0644, not 0666 less the umask: a spec any user may read and only its
   * owner may change, as its directories are 0755 (a stricter umask still
   * narrows both). */
  if (!g_file_set_contents_full(file, with_newline, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                &error)) {
    fprintf(stderr, "cellexec: %s\n", error->message);
    return EXIT_OUTPUT;
  }
  copy_logos(dir);
  printf("Installed kernelspec %s in %s\n", name, dir);
  return EXIT_CELL_OK;
}

/* ---- The command ---------------------------------------------------------------- */

int
cmd_kernel(int argc, char **argv)
{
  g_auto(kernel_args) a = { .max_frames = DEFAULT_MAX_FRAMES };
  const GOptionEntry entries[] = {
    { "connection-file", 'f', 0, G_OPTION_ARG_FILENAME, &a.connection_file, "Serve on the sockets the connection FILE names (as a front end writes it)", "FILE" },
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &a.backend, "Backend plugin to use (default: the config's, else local)", "NAME" },
    { "config", 'C', 0, G_OPTION_ARG_FILENAME, &a.config, "Config file to use instead of the search order", "FILE" },
    { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &a.options, "Set a backend option, overriding the config (repeatable)", "KEY=VALUE" },
    { "max-message", 0, 0, G_OPTION_ARG_STRING, &a.max_message, "The largest message a peer may send, its frames together (default " DEFAULT_MAX_MESSAGE ")", "SIZE" },
    { "max-frames", 0, 0, G_OPTION_ARG_INT64, &a.max_frames, "The most frames a message may have (default " G_STRINGIFY(DEFAULT_MAX_FRAMES) ")", "N" },
    { "user", 0, 0, G_OPTION_ARG_NONE, &a.user, "install: in your own Jupyter data directory", NULL },
    { "prefix", 0, 0, G_OPTION_ARG_FILENAME, &a.prefix, "install: under DIR/share/jupyter/kernels", "DIR" },
    { "name", 0, 0, G_OPTION_ARG_STRING, &a.name, "install: the kernel's name (default: cellexec)", "NAME" },
    { "display-name", 0, 0, G_OPTION_ARG_STRING, &a.display_name, "install: the name front ends show", "TEXT" },
    { "executable", 0, 0, G_OPTION_ARG_FILENAME, &a.executable, "install: the cellexec the kernel runs (default: this one; for staged installs)", "PATH" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.rest, NULL, NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new("-f CONNECTION_FILE | install");
  g_option_context_set_summary(context,
    "Serve one session of a backend as a Jupyter kernel (messaging protocol 5.3), so\n"
    "that JupyterLab, Notebook, VS Code, `jupyter console`, nbclient and Jupyter Server\n"
    "run their cells on it: a cell that crashes its worker or times out fails with\n"
    "WorkerCrashed or TimeoutError, and the kernel goes on in a fresh session.\n"
    "Front ends start it from a kernelspec; `cellexec kernel install` writes one.");
  g_option_context_set_description(context,
    "Examples:\n"
    "  cellexec kernel install --user --name cellexec-sandbox -b subprocess -o isolation=sandbox\n"
    "  jupyter execute --kernel_name=cellexec-sandbox homework.ipynb\n"
    "  cellexec kernel -f /run/user/1000/jupyter/kernel-1234.json -b subprocess\n"
    "\n"
    "install writes NAME/kernel.json under the Jupyter data directory (--user),\n"
    "DIR/share/jupyter/kernels (--prefix DIR; list it with JUPYTER_PATH=DIR/share/jupyter\n"
    "jupyter kernelspec list) or this installation's share/jupyter/kernels; the kernel\n"
    "it starts uses the -C, -b, -o, --max-message and --max-frames given to install.\n"
    "\n"
    "Bounds: anyone who reaches the kernel's ports can send before the signature\n"
    "is checked, so a message over --max-message (default " DEFAULT_MAX_MESSAGE ", all its\n"
    "frames together) or --max-frames (default " G_STRINGIFY(DEFAULT_MAX_FRAMES) ") is dropped as it is read,\n"
    "and a frame over --max-message closes its sender's connection before it is\n"
    "read.  Raise them for cells or comm buffers that are larger.  ZeroMQ itself\n"
    "holds a message whole before the kernel reads it (some 64 bytes a frame\n"
    "beyond its data): bind the connection file to 127.0.0.1 or ipc, or cap the\n"
    "kernel's memory, where untrusted peers could reach it.\n"
    "\n"
    "Requests answered: kernel_info, execute (streams as they are written, displays,\n"
    "results, errors; stop_on_error aborts the requests queued behind a failure),\n"
    "interrupt (interrupt_mode message, or SIGINT), shutdown; complete, inspect,\n"
    "is_complete, history, comm_info and user_expressions answered in the session\n"
    "(as ipykernel does when it has nothing, by a backend that cannot); comm_open,\n"
    "comm_msg and comm_close handed to the session's comm manager; input() asks\n"
    "the front end over stdin when it allows stdin.  SIGTERM ends the kernel\n"
    "cleanly: its cell is interrupted (the subprocess backend kills it after\n"
    "interrupt-grace); still running 5 s later, it exits at once (status 143) and\n"
    "its workers with it.  Requests queued past 1000 are answered at once with an\n"
    "error instead of waiting.\n"
    "\n"
    "Exit status: 0 the kernel was shut down, 2 usage, config, plugin or connection\n"
    "file error (one line on stderr says why), 3 install could not write the spec,\n"
    "143 still running 5 s after SIGTERM.");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  guint n_rest = a.rest != NULL ? g_strv_length(a.rest) : 0;
  if (n_rest == 1 && strcmp(a.rest[0], "install") == 0) {
    if (a.connection_file != NULL)
      return fail_usage("install takes no -f");
    return install_kernelspec(&a);
  }
  if (n_rest > 0)
    return fail_usage("unexpected argument '%s' (see `%s --help`)", a.rest[0], argv[0]);
  if (a.user || a.prefix != NULL || a.name != NULL || a.display_name != NULL ||
      a.executable != NULL)
    return fail_usage("--user, --prefix, --name, --display-name and --executable are for "
                      "`%s install`", argv[0]);
  if (a.connection_file == NULL)
    return fail_usage("no connection file given: -f FILE (see `%s --help`)", argv[0]);
  return serve_kernel(&a);
}
