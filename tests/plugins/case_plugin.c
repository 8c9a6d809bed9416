/* Test-only plugins: one source, one plugin per way a plugin can be right or
 * wrong, selected by a CASE_* macro from tests/tests.mk.
 *
 * The usable cases are an "echo" backend: run_cell prints the code and the
 * run options it received as JSON on stdout, which lets tests see exactly
 * what the core passed.
 */
#include "config.h"

#include <string.h>

#include <cellexec/plugin.h>

G_GNUC_UNUSED static const cx_option_spec echo_options[] = {
  { "count", CX_OPTION_INT, "1", "an integer" },
  { "ratio", CX_OPTION_DOUBLE, "0.5", "a number" },
  { "verbose", CX_OPTION_BOOL, "false", "a flag" },
  { "memory", CX_OPTION_SIZE, "64M", "a size" },
  { "timeout", CX_OPTION_DOUBLE, NULL, "seconds per cell" },
  { "cwd", CX_OPTION_PATH, NULL, "directory of the cell" },
  { "env", CX_OPTION_ENV, NULL, "variables of the cell" },
  { "label", CX_OPTION_STRING, NULL, "free text" },
  { NULL, 0, NULL, NULL }
};

typedef struct {
  gint64 count;
  double ratio;
  gboolean verbose;
  guint64 memory;
} echo_backend;

G_GNUC_UNUSED static cx_backend_instance *
echo_create(const cx_options *options, GError **error)
{
  echo_backend *backend = g_new0(echo_backend, 1);
  backend->count = cx_options_get_int(options, "count", -1);
  backend->ratio = cx_options_get_double(options, "ratio", -1);
  backend->verbose = cx_options_get_bool(options, "verbose", FALSE);
  backend->memory = cx_options_get_size(options, "memory", 0);
  return (cx_backend_instance *)backend;
}

G_GNUC_UNUSED static void
echo_destroy(cx_backend_instance *backend)
{
  g_free(backend);
}

G_GNUC_UNUSED static cx_result *
echo_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
              GError **error)
{
#ifdef CASE_NO_RESULT
  return NULL; /* breaks the contract: no result and no error */
#endif
  echo_backend *backend = (echo_backend *)instance;
  cx_result *result = cx_result_new();
  g_autoptr(JsonNode) options = cx_run_options_to_json_node(run);
  g_autofree char *text = json_to_string(options, FALSE);
  cx_result_append_stdout(result, code, -1);
  cx_result_append_stdout(result, "\n", 1);
  cx_result_append_stdout(result, text, -1);
  g_autofree char *plain = g_strdup_printf("count=%" G_GINT64_FORMAT " ratio=%g verbose=%d memory=%" G_GUINT64_FORMAT,
                                           backend->count, backend->ratio, backend->verbose, backend->memory);
  cx_result_add_output_text(result, "text/plain", plain);
  return result;
}

#ifdef CASE_NEWER_MINOR
/* A plugin from the future: a longer descriptor and vtable than this core's. */
typedef struct {
  cx_backend_vtable base;
  void *(*method_from_the_future)(void);
} future_vtable;
static const future_vtable vtable = {
  .base = { .struct_size = sizeof(future_vtable), .create = echo_create,
            .destroy = echo_destroy, .run_cell = echo_run_cell },
};
typedef struct {
  cx_plugin base;
  const char *field_from_the_future;
} future_descriptor;
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  static const future_descriptor descriptor = {
    .base = { CX_ABI_MAJOR, CX_ABI_MINOR + 1, sizeof(future_descriptor), "newer_minor", "9.9",
              "built against a newer minor ABI", echo_options, &vtable.base, NULL, NULL },
    .field_from_the_future = "ignored",
  };
  return &descriptor.base;
}

#elif defined(CASE_OTHER_MAJOR)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  static const cx_plugin descriptor = { CASE_OTHER_MAJOR, 0, sizeof(cx_plugin), "other-major",
                                        "1.0", "built for another major ABI", NULL, &vtable,
                                        NULL, NULL };
  return &descriptor;
}

#elif defined(CASE_SHORT_DESCRIPTOR)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  static const cx_plugin descriptor = { CX_ABI_MAJOR, CX_ABI_MINOR,
                                        offsetof(cx_plugin, options), "short_descriptor", "1.0",
                                        "descriptor cut short", NULL, &vtable, NULL, NULL };
  return &descriptor;
}

#elif defined(CASE_HUGE_DESCRIPTOR)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  static const cx_plugin descriptor = { CX_ABI_MAJOR, CX_ABI_MINOR, SIZE_MAX, "huge_descriptor",
                                        "1.0", "descriptor claims SIZE_MAX bytes", NULL, &vtable,
                                        NULL, NULL };
  return &descriptor;
}

#elif defined(CASE_HUGE_VTABLE)
static const cx_backend_vtable vtable = { SIZE_MAX, echo_create, echo_destroy, echo_run_cell };
CX_PLUGIN_DEFINE("huge_vtable", "1.0", "backend vtable claims SIZE_MAX bytes", NULL, &vtable,
                 NULL, NULL)

#elif defined(CASE_SHORT_VTABLE)
static const cx_backend_vtable vtable = { offsetof(cx_backend_vtable, run_cell), echo_create,
                                          echo_destroy, echo_run_cell };
CX_PLUGIN_DEFINE("short_vtable", "1.0", "backend vtable cut short", NULL, &vtable, NULL, NULL)

#elif defined(CASE_NULL_METHOD)
static const cx_backend_vtable vtable = { .struct_size = sizeof(cx_backend_vtable),
                                          .create = echo_create, .destroy = echo_destroy };
CX_PLUGIN_DEFINE("null_method", "1.0", "run_cell left NULL", NULL, &vtable, NULL, NULL)

#elif defined(CASE_PARTIAL_SESSIONS)
static cx_session_instance *
open_session(cx_backend_instance *backend, GError **error)
{
  return (cx_session_instance *)backend; /* any non-NULL handle */
}
static const cx_backend_vtable vtable = { .struct_size = sizeof(cx_backend_vtable),
                                          .create = echo_create, .destroy = echo_destroy,
                                          .run_cell = echo_run_cell, .session_open = open_session };
CX_PLUGIN_DEFINE("partial_sessions", "1.0", "session_open without the rest", NULL, &vtable, NULL, NULL)

#elif defined(CASE_INIT_REFUSED)
static gboolean
refuse(GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "needs a GPU and found none");
  return FALSE;
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("init_refused", "1.0", "refuses to load", NULL, &vtable, NULL, refuse)

#elif defined(CASE_ENTRY_CRASH)
#include <signal.h>
/* A plugin whose entry crashes: the registry must survive it. */
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  raise(SIGSEGV);
  return NULL;
}

#elif defined(CASE_INIT_CRASH)
#include <stdlib.h>
static gboolean
crash_in_init(GError **error)
{
  abort();
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("init_crash", "1.0", "aborts in its init", NULL, &vtable, NULL, crash_in_init)

#elif defined(CASE_ENTRY_EXIT)
#include <stdio.h>
#include <stdlib.h>
/* A plugin whose entry ends the process, quietly and "successfully". */
CX_PLUGIN_EXPORT const cx_plugin *cellexec_plugin_entry(void);
CX_PLUGIN_EXPORT const cx_plugin *
cellexec_plugin_entry(void)
{
  printf("entry_exit prints on stdout\n");
  exit(0);
}

#elif defined(CASE_INIT_EXIT)
#include <unistd.h>
static gboolean
exit_in_init(GError **error)
{
  _exit(0);
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("init_exit", "1.0", "calls _exit in its init", NULL, &vtable, NULL, exit_in_init)

#elif defined(CASE_INIT_HANG)
#include <signal.h>
#include <unistd.h>
/* Hangs in init with SIGALRM blocked and ignored: only the host's own
 * deadline can end it. */
G_GNUC_NORETURN static gboolean
hang_in_init(GError **error)
{
  signal(SIGALRM, SIG_IGN);
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  sigprocmask(SIG_BLOCK, &alarm_only, NULL);
  for (;;)
    pause();
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("init_hang", "1.0", "hangs in its init", NULL, &vtable, NULL, hang_in_init)

#elif defined(CASE_COUNTING_INIT)
#include <stdio.h>
/* Appends a line to $CELLEXEC_TEST_INIT_LOG each time its init runs. */
static gboolean
count_init(GError **error)
{
  const char *log = g_getenv("CELLEXEC_TEST_INIT_LOG");
  FILE *file = log != NULL ? fopen(log, "a") : NULL;
  if (file != NULL) {
    fprintf(file, "init\n");
    fclose(file);
  }
  return TRUE;
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("counting_init", "1.0", "counts its inits", NULL, &vtable, NULL, count_init)

#elif defined(CASE_RUN_CELL_ABORT) || defined(CASE_RUN_CELL_EXIT) || defined(CASE_RUN_CELL_HANG)
#include <stdlib.h>
#include <unistd.h>
/* Loads cleanly, then takes the process down with the first cell it runs:
 * `cellexec plugins --check` must report each case and carry on. */
G_GNUC_NORETURN static cx_result *
fatal_run_cell(cx_backend_instance *backend, const char *code, const cx_run_options *run,
               GError **error)
{
#if defined(CASE_RUN_CELL_ABORT)
  abort();
#elif defined(CASE_RUN_CELL_EXIT)
  _exit(7);
#else
  for (;;)
    pause();
#endif
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          fatal_run_cell };
#if defined(CASE_RUN_CELL_ABORT)
CX_PLUGIN_DEFINE("run_cell_abort", "1.0", "aborts in run_cell", echo_options, &vtable, NULL, NULL)
#elif defined(CASE_RUN_CELL_EXIT)
CX_PLUGIN_DEFINE("run_cell_exit", "1.0", "calls _exit(7) in run_cell", echo_options, &vtable, NULL, NULL)
#else
CX_PLUGIN_DEFINE("run_cell_hang", "1.0", "never returns from run_cell", echo_options, &vtable, NULL, NULL)
#endif

#elif defined(CASE_NONCONFORMING)
/* Loads, but breaks the contract at run time: every cell "fails" without
 * an error, and query("info") is not a JSON object.  `cellexec plugins
 * --check` must say so. */
static cx_result *
failing_run_cell(cx_backend_instance *backend, const char *code, const cx_run_options *run,
                 GError **error)
{
  cx_result *result = cx_result_new();
  cx_result_set_success(result, FALSE);
  return result;
}
static JsonNode *
string_query(cx_backend_instance *backend, const char *what, GError **error)
{
  return json_node_init_string(json_node_alloc(), "not an object");
}
static const cx_backend_vtable vtable = { .struct_size = sizeof(cx_backend_vtable),
                                          .create = echo_create, .destroy = echo_destroy,
                                          .run_cell = failing_run_cell, .query = string_query };
CX_PLUGIN_DEFINE("nonconforming", "1.0", "fails cells without an error", echo_options, &vtable,
                 NULL, NULL)

#elif defined(CASE_NO_ENTRY)
/* A shared object that is not a plugin: it exports something else. */
CX_PLUGIN_EXPORT int not_a_plugin(void);
CX_PLUGIN_EXPORT int
not_a_plugin(void)
{
  return 42;
}

#elif defined(CASE_UNRESOLVED)
/* Links against a function no library provides. */
extern void cx_function_that_does_not_exist(void);
static cx_result *
unresolved_run_cell(cx_backend_instance *backend, const char *code, const cx_run_options *run,
                    GError **error)
{
  cx_function_that_does_not_exist();
  return cx_result_new();
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          unresolved_run_cell };
CX_PLUGIN_DEFINE("unresolved", "1.0", "has an unresolved symbol", NULL, &vtable, NULL, NULL)

#elif defined(CASE_BAD_DEFAULT)
static const cx_option_spec bad_options[] = {
  { "retries", CX_OPTION_INT, "three", "an int whose default is not one" },
  { NULL, 0, NULL, NULL }
};
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("bad_default", "1.0", "an option default of the wrong type", bad_options,
                 &vtable, NULL, NULL)

#elif defined(CASE_NULL_VERSION)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("null_version", NULL, "declares no version", NULL, &vtable, NULL, NULL)

#elif defined(CASE_NULL_DESCRIPTION)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("null_description", "1.0", NULL, NULL, &vtable, NULL, NULL)

#elif defined(CASE_BAD_OPTION_NAME)
static const cx_option_spec badly_named_options[] = {
  { "Max Retries", CX_OPTION_INT, "3", "a name no config key can spell" },
  { NULL, 0, NULL, NULL }
};
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("bad_option_name", "1.0", "an option name that is not a key",
                 badly_named_options, &vtable, NULL, NULL)

#elif defined(CASE_NEEDS_NEWER_CORE)
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DESCRIBE(.name = "needs_newer_core", .version = "1.0",
                   .description = "needs a core minor newer than this one",
                   .backend = &vtable, .min_core_abi_minor = CX_ABI_MINOR + 1)

#elif defined(CASE_CHATTY_INIT)
#include <stdio.h>
/* Writes to the host's stdout and stderr while it loads. */
static gboolean
chatter(GError **error)
{
  printf("chatty_init was here\n");
  fflush(stdout);
  fprintf(stderr, "chatty_init on stderr\n");
  return TRUE;
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("chatty_init", "1.0", "prints while it loads", NULL, &vtable, NULL, chatter)

#else /* CASE_ECHO, CASE_NO_RESULT */
#ifdef CASE_NO_RESULT
/* Every method fails without saying why: the core must say it instead. */
static cx_session_instance *
silent_session_open(cx_backend_instance *backend, GError **error)
{
  return NULL;
}
static cx_result *
silent_session_run_cell(cx_session_instance *session, const char *code,
                        const cx_run_options *run, GError **error)
{
  return NULL;
}
static void
silent_session_close(cx_session_instance *session)
{
}
static gboolean
silent_interrupt(cx_backend_instance *backend, cx_session_instance *session, GError **error)
{
  return FALSE;
}
static JsonNode *
silent_query(cx_backend_instance *backend, const char *what, GError **error)
{
  return NULL;
}
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell, silent_session_open,
                                          silent_session_run_cell, silent_session_close,
                                          silent_interrupt, silent_query };
CX_PLUGIN_DEFINE("no_result", "1.0", "returns neither a result nor an error", echo_options,
                 &vtable, NULL, NULL)
#else
static const cx_backend_vtable vtable = { sizeof(cx_backend_vtable), echo_create, echo_destroy,
                                          echo_run_cell };
CX_PLUGIN_DEFINE("echo", "1.0", "prints the code and run options it gets", echo_options,
                 &vtable, NULL, NULL)
#endif
#endif
