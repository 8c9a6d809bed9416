/* `cellexec plugins --check FILE.so`: see conformance_file.h.
 *
 * The plugin under test never runs in this process.  Whatever it does on a
 * cell (abort, segfault, exit, hang) must cost the case it did it in, not
 * the check: so the check runs in a child process, and this process (the
 * parent) only forks, watches and tallies.
 *
 * The parent makes the private directory, then forks a child that loads
 * the plugin, runs the steps in order (loading, seeing whether it runs
 * Python, then each case), prints their lines itself, and tells the parent
 * over a pipe the step it starts ("step N"), each outcome ("pass", "fail",
 * "skip") and, at the end, "done".  When the child dies, or overruns the
 * per-case time limit, before "done", the parent prints a FAIL line for the
 * step it was in and forks a fresh child that resumes at the next step.
 *
 * fork(), not re-exec: the parent never loads the plugin and starts no
 * thread, so each child is a safe copy of it that already holds everything
 * the earlier children learnt (the next step, whether the plugin runs
 * Python), with no command line to pass it on.  The parent alone removes
 * the private directory, where the cases make their temporary directories
 * too: after a crash, and when SIGINT, SIGTERM or SIGHUP ends the check. */
#define _GNU_SOURCE /* ppoll, sigabbrev_np */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "tools/conformance.h"
#include "tools/conformance_file.h"

/* The steps of a check, in order; the cases of the backend table, then of
 * the executor table, follow the first two. */
enum { STEP_LOAD, STEP_DETECT_PYTHON, STEP_FIRST_CASE };

typedef struct {
  const char *file;           /* the plugin file as the user named it */
  const char *dir;            /* the private directory */
  const char *const *options; /* -o KEY=VALUE */
  gboolean require_python;    /* --python */
  double case_timeout;        /* seconds a step may take */
  /* What the children have learnt, kept by the parent for the next one. */
  guint next_step;
  gboolean python;
  guint passed, failed, skipped;
  /* In the child: the write end of the pipe to the parent, and the path
   * the registry knows the plugin by (a link in DIR); -1 and NULL in the
   * parent. */
  int pipe;
  const char *link;
} checker;

static guint
table_length(const conformance_case *table)
{
  guint n = 0;
  while (table[n].name != NULL)
    n++;
  return n;
}

/* The case of STEP, or NULL past the last.  *EXECUTOR (may be NULL): whether
 * it is an executor case. */
static const conformance_case *
step_case(guint step, gboolean *executor)
{
  guint i = step - STEP_FIRST_CASE, n_backend = table_length(conformance_backend_cases);
  if (executor != NULL)
    *executor = i >= n_backend;
  if (i < n_backend)
    return &conformance_backend_cases[i];
  i -= n_backend;
  return i < table_length(conformance_executor_cases) ? &conformance_executor_cases[i] : NULL;
}

static const char *
step_name(const checker *c, guint step)
{
  if (step == STEP_LOAD)
    return "loads_with_a_valid_descriptor_and_option_schema";
  if (step == STEP_DETECT_PYTHON)
    return c->require_python ? "runs_python" : "runs_the_python_detection_cell";
  return step_case(step, NULL)->name;
}

/* MESSAGE naming the plugin as the user did, not by the private link the
 * registry loaded it through (g_free). */
static char *
for_user(const checker *c, const char *message)
{
  g_autoptr(GString) text = g_string_new(message);
  if (c->link != NULL)
    g_string_replace(text, c->link, c->file, 0);
  return g_string_free(g_steal_pointer(&text), FALSE);
}

/* ---- The child ---------------------------------------------------------- */

/* One line to the parent, after what the child printed so far. */
static void G_GNUC_PRINTF(2, 3)
tell_parent(const checker *c, const char *format, ...)
{
  g_autoptr(GString) line = g_string_new(NULL);
  va_list args;
  va_start(args, format);
  g_string_append_vprintf(line, format, args);
  va_end(args);
  g_string_append_c(line, '\n');
  fflush(stdout);
  while (write(c->pipe, line->str, line->len) < 0 && errno == EINTR)
    ;
}

static void
report(checker *c, const char *name, conformance_outcome outcome, const char *reason)
{
  g_autofree char *shown = reason != NULL ? for_user(c, reason) : NULL;
  switch (outcome) {
  case CONFORMANCE_PASS:
    printf("ok - %s\n", name);
    c->passed++;
    break;
  case CONFORMANCE_FAIL:
    printf("FAIL - %s: %s\n", name, shown);
    c->failed++;
    break;
  case CONFORMANCE_SKIP:
    printf("skip - %s: %s\n", name, shown);
    c->skipped++;
    break;
  }
  fflush(stdout);
  if (c->pipe >= 0) {
    static const char *const words[] = { [CONFORMANCE_PASS] = "pass", [CONFORMANCE_FAIL] = "fail",
                                         [CONFORMANCE_SKIP] = "skip" };
    tell_parent(c, "%s", words[outcome]);
  }
}

static void
print_header(const char *file, const cx_plugin_info *info, const conformance_methods *methods)
{
  guint major, minor;
  cx_plugin_info_get_abi(info, &major, &minor);
  printf("checking %s: plugin %s %s (ABI %u.%u)\n", file, cx_plugin_info_get_name(info),
         cx_plugin_info_get_version(info), major, minor);
  if (methods->known) {
    g_autofree char *backend = conformance_methods_describe_backend(methods);
    g_autofree char *executor = conformance_methods_describe_executor(methods);
    printf("optional methods: %s\nexecutor operations: %s\n", backend, executor);
  }
}

static void
detect_python(checker *c, const conformance_target *target)
{
  g_autofree char *found = NULL;
  c->python = conformance_detect_python(target, &found);
  g_autofree char *evidence = for_user(c, found);
  if (c->python)
    printf("# the plugin runs Python (%s): the Python cases apply\n", evidence);
  else if (c->require_python)
    report(c, "runs_python", CONFORMANCE_FAIL, evidence);
  else
    printf("# the plugin does not run Python (%s): only the result bundle's contract applies; "
           "--python insists on Python\n", evidence);
  tell_parent(c, "python %d", c->python);
}

/* Load the plugin and run the steps from C->next_step on.  FALSE with
 * ERROR when the file cannot be checked at all. */
static gboolean
run_steps(checker *c, GError **error)
{
  const char *const path[] = { c->dir, NULL };
  g_autoptr(cx_registry) registry = cx_registry_new_for_path(path);
  const cx_plugin_info *info = cx_registry_get_plugin(registry, 0);
  if (info == NULL || cx_registry_get_n_plugins(registry) != 1) {
    g_set_error(error, CX_ERROR, CX_ERROR_NOT_FOUND, "%s was not found as a plugin file", c->file);
    return FALSE;
  }
  c->link = cx_plugin_info_get_path(info);
  const GError *fault = cx_plugin_info_get_error(info);
  if (fault != NULL) {
    /* The registry's own sentence (descriptor, vtables, option schema). */
    g_autofree char *message = for_user(c, fault->message);
    g_set_error_literal(error, fault->domain, fault->code, message);
    return FALSE;
  }
  conformance_target target;
  if (!conformance_target_init(&target, registry, cx_plugin_info_get_name(info), c->options, error))
    return FALSE;
  target.tmpdir = c->dir; /* removed by the parent, whatever happens to us */

  if (c->next_step == STEP_LOAD) {
    print_header(c->file, info, &target.methods);
    report(c, step_name(c, STEP_LOAD), CONFORMANCE_PASS, NULL);
    c->next_step = STEP_DETECT_PYTHON;
  }
  if (c->next_step == STEP_DETECT_PYTHON) {
    tell_parent(c, "step %u", c->next_step);
    detect_python(c, &target);
    c->next_step = STEP_FIRST_CASE;
  }
  target.python = c->python || c->require_python;
  const conformance_case *kase;
  gboolean executor;
  for (; (kase = step_case(c->next_step, &executor)) != NULL; c->next_step++) {
    if (executor && !target.methods.executor) {
      printf("# no executor vtable: the executor cases do not apply\n");
      break;
    }
    tell_parent(c, "step %u", c->next_step);
    g_autofree char *reason = NULL;
    conformance_outcome outcome = conformance_run_case(&target, kase, &reason);
    report(c, kase->name, outcome, reason);
  }
  conformance_target_clear(&target);
  return TRUE;
}

G_GNUC_NORETURN static void
child_main(checker *c)
{
  g_autoptr(GError) error = NULL;
  if (run_steps(c, &error))
    tell_parent(c, "done");
  else {
    g_autofree char *escaped = g_strescape(error->message, NULL);
    tell_parent(c, "error %s", escaped);
  }
  fflush(stdout);
  /* _exit: no atexit handler or destructor of the plugin runs here. */
  _exit(0);
}

/* ---- The parent --------------------------------------------------------- */

/* How a child ended. */
typedef enum {
  CHILD_DONE,        /* every step ran */
  CHILD_ERROR,       /* the file cannot be checked: *error set */
  CHILD_LOST,        /* it died or hung in step c->next_step: *why says how */
  CHILD_INTERRUPTED, /* a signal asked the check to stop */
} child_end;

static volatile sig_atomic_t stop_signal; /* SIGINT, SIGTERM or SIGHUP received */

static void
on_signal(int signal_number)
{
  if (signal_number != SIGCHLD)
    stop_signal = signal_number;
  /* SIGCHLD only has to interrupt ppoll(). */
}

static const int watched_signals[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP };

typedef struct {
  sigset_t mask;
  struct sigaction actions[G_N_ELEMENTS(watched_signals)];
} saved_signals;

/* Catch the watched signals, blocked except while the parent waits in
 * ppoll(), so that none is missed between a check and the wait. */
static void
watch_signals(saved_signals *saved)
{
  sigset_t blocked;
  sigemptyset(&blocked);
  struct sigaction action = { .sa_handler = on_signal };
  sigemptyset(&action.sa_mask);
  for (gsize i = 0; i < G_N_ELEMENTS(watched_signals); i++) {
    sigaction(watched_signals[i], NULL, &saved->actions[i]);
    if (saved->actions[i].sa_handler == SIG_IGN && watched_signals[i] != SIGCHLD)
      continue; /* ignored on purpose (nohup, a background job): stays so */
    sigaddset(&blocked, watched_signals[i]);
    sigaction(watched_signals[i], &action, NULL);
  }
  sigprocmask(SIG_BLOCK, &blocked, &saved->mask);
}

static void
restore_signals(const saved_signals *saved)
{
  for (gsize i = 0; i < G_N_ELEMENTS(watched_signals); i++)
    sigaction(watched_signals[i], &saved->actions[i], NULL);
  sigprocmask(SIG_SETMASK, &saved->mask, NULL);
}

static double
now(void)
{
  return g_get_monotonic_time() / 1e6;
}

/* Act on one line from the child. */
static void
handle_line(checker *c, const char *line, char **error_message, gboolean *done, double *deadline)
{
  unsigned value;
  if (sscanf(line, "step %u", &value) == 1) {
    c->next_step = value;
    *deadline = now() + c->case_timeout;
  } else if (sscanf(line, "python %u", &value) == 1)
    c->python = value != 0;
  else if (strcmp(line, "pass") == 0)
    c->passed++;
  else if (strcmp(line, "fail") == 0)
    c->failed++;
  else if (strcmp(line, "skip") == 0)
    c->skipped++;
  else if (strcmp(line, "done") == 0)
    *done = TRUE;
  else if (g_str_has_prefix(line, "error "))
    *error_message = g_strcompress(line + strlen("error "));
}

/* Read what the child has written so far into PENDING and act on each whole
 * line.  FALSE at the end of the pipe. */
static gboolean
read_child(checker *c, int fd, GString *pending, char **error_message, gboolean *done,
           double *deadline)
{
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0)
    g_string_append_len(pending, buffer, n);
  char *newline;
  while ((newline = strchr(pending->str, '\n')) != NULL) {
    *newline = '\0';
    handle_line(c, pending->str, error_message, done, deadline);
    g_string_erase(pending, 0, newline - pending->str + 1);
  }
  return n != 0;
}

/* Why a child that never said "done" ended (g_free). */
static char *
describe_loss(int status, gboolean hung, double limit)
{
  if (hung)
    return g_strdup_printf("the plugin did not finish within %g s (--case-timeout)", limit);
  if (WIFSIGNALED(status)) {
    const char *abbrev = sigabbrev_np(WTERMSIG(status));
    return g_strdup_printf("the plugin crashed (signal %d, SIG%s)", WTERMSIG(status),
                           abbrev != NULL ? abbrev : "?");
  }
  return g_strdup_printf("the plugin exited with status %d: it calls exit() or _exit()",
                         WEXITSTATUS(status));
}

/* Fork a child that runs the steps from C->next_step on, and wait for it.
 * SAVED: the signal state the child restores. */
static child_end
run_child(checker *c, const saved_signals *saved, char **why, GError **error)
{
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot make a pipe: %s", g_strerror(errno));
    return CHILD_ERROR;
  }
  fflush(stdout); /* or the child would print our buffered lines again */
  pid_t pid = fork();
  if (pid < 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot fork: %s", g_strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return CHILD_ERROR;
  }
  if (pid == 0) {
    restore_signals(saved);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan goes on checking */
#endif
    close(fds[0]);
    c->pipe = fds[1];
    child_main(c);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);

  /* Wait for the child's exit, not for the end of the pipe: a process the
   * plugin forked may hold the pipe open after the child is gone. */
  g_autoptr(GString) pending = g_string_new(NULL);
  g_autofree char *error_message = NULL;
  gboolean done = FALSE, open_end = TRUE, hung = FALSE;
  double deadline = now() + c->case_timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    double left = deadline - now();
    if (stop_signal != 0 || left <= 0) {
      hung = stop_signal == 0;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    struct pollfd poll_fd = { .fd = open_end ? fds[0] : -1, .events = POLLIN };
    struct timespec wait = { .tv_sec = (time_t)left, .tv_nsec = (long)((left - (time_t)left) * 1e9) };
    if (ppoll(&poll_fd, 1, &wait, &saved->mask) > 0)
      open_end = read_child(c, fds[0], pending, &error_message, &done, &deadline);
  }
  read_child(c, fds[0], pending, &error_message, &done, &deadline); /* what it said last */
  close(fds[0]);

  if (stop_signal != 0)
    return CHILD_INTERRUPTED;
  if (error_message != NULL) {
    g_set_error_literal(error, CX_ERROR, CX_ERROR_PLUGIN_LOAD, error_message);
    return CHILD_ERROR;
  }
  if (done && !hung && WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return CHILD_DONE;
  *why = describe_loss(status, hung, c->case_timeout);
  return CHILD_LOST;
}

/* Run the steps in as many children as it takes; 0, 1 or 2 as
 * conformance_check_file returns. */
static int
run_children(checker *c, GError **error)
{
  saved_signals saved;
  watch_signals(&saved);
  child_end end;
  g_autofree char *why = NULL;
  while ((end = run_child(c, &saved, &why, error)) == CHILD_LOST) {
    report(c, step_name(c, c->next_step), CONFORMANCE_FAIL, why);
    g_clear_pointer(&why, g_free);
    /* A plugin that does not load leaves nothing to check. */
    if (c->next_step == STEP_LOAD)
      break;
    c->next_step++;
  }
  restore_signals(&saved);
  if (end == CHILD_INTERRUPTED) {
    conformance_remove_tree(c->dir);
    signal(stop_signal, SIG_DFL);
    raise(stop_signal); /* end as the signal would have ended us */
    return 2;
  }
  if (end == CHILD_ERROR)
    return 2;
  printf("%u passed, %u failed, %u skipped\n", c->passed, c->failed, c->skipped);
  return c->failed == 0 ? 0 : 1;
}

/* A private directory holding only a link to FILE under its own name, as
 * it would lie in a plugins directory. */
static char *
isolate(const char *file, GError **error)
{
  g_autofree char *absolute = g_canonicalize_filename(file, NULL);
  g_autofree char *base = g_path_get_basename(file);
  char *dir = g_dir_make_tmp("cellexec-check-XXXXXX", error);
  if (dir == NULL)
    return NULL;
  g_autofree char *link = g_build_filename(dir, base, NULL);
  if (symlink(absolute, link) != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot link %s into %s: %s", absolute, dir,
                g_strerror(errno));
    conformance_remove_tree(dir);
    g_free(dir);
    return NULL;
  }
  return dir;
}

int
conformance_check_file(const char *file, const char *const *options, gboolean require_python,
                       double case_timeout, GError **error)
{
  if (!g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, CX_ERROR, CX_ERROR_NOT_FOUND, "%s: no such file", file);
    return 2;
  }
  if (!g_str_has_suffix(file, ".so")) {
    g_set_error(error, CX_ERROR, CX_ERROR_PLUGIN_LOAD,
                "%s: a plugin file is named NAME.so, NAME being the plugin's name", file);
    return 2;
  }
  g_autofree char *dir = isolate(file, error);
  if (dir == NULL)
    return 2;
  /* Probe afresh, and leave no verdict about a temporary path in the
   * user's probe cache; the children share this cache, so the plugin is
   * probed once. */
  g_autofree char *saved_cache = g_strdup(g_getenv("XDG_CACHE_HOME"));
  g_autofree char *cache = g_build_filename(dir, "cache", NULL);
  g_setenv("XDG_CACHE_HOME", cache, TRUE);
  checker c = { .file = file, .dir = dir, .options = options, .require_python = require_python,
                .case_timeout = case_timeout, .next_step = STEP_LOAD, .pipe = -1 };
  int status = run_children(&c, error);
  if (saved_cache != NULL)
    g_setenv("XDG_CACHE_HOME", saved_cache, TRUE);
  else
    g_unsetenv("XDG_CACHE_HOME");
  conformance_remove_tree(dir);
  return status;
}
