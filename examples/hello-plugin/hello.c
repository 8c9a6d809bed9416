/* A small third-party cellexec backend: every cell "prints" a greeting and
 * evaluates to the length of its code.  It runs no Python, yet it keeps
 * the whole contract of a backend, which `cellexec plugins --check hello.so`
 * verifies: well-formed result bundles, sessions that keep state (here, a
 * count of their cells, which cells kept out of history do not advance)
 * and are isolated from each other, interrupt, and query("info").  Build
 * it against an installed cellexec with the Makefile beside it
 * (pkg-config only). */
#include <string.h>

#include <cellexec/plugin.h>

static const cx_option_spec hello_options[] = {
  { "greeting", CX_OPTION_STRING, "hello", "what every cell prints" },
  { NULL, 0, NULL, NULL }
};

/* Methods of one backend may be called from several threads at once (an
 * interrupt while a cell runs, say): the counters take a lock. */
typedef struct {
  char *greeting;
  GMutex lock;
  guint cells;      /* cells run, stateless and in sessions */
  guint sessions;   /* sessions opened */
  guint interrupts; /* interrupt requests */
} hello_backend;

typedef struct {
  hello_backend *backend;
  gint64 execution_count; /* the state a session keeps: its cells so far */
} hello_session;

static cx_backend_instance *
hello_create(const cx_options *options, GError **error)
{
  hello_backend *backend = g_new0(hello_backend, 1);
  /* Options are borrowed: copy what you keep. */
  backend->greeting = g_strdup(cx_options_get_string(options, "greeting", "hello"));
  g_mutex_init(&backend->lock);
  return (cx_backend_instance *)backend;
}

static void
hello_destroy(cx_backend_instance *instance)
{
  hello_backend *backend = (hello_backend *)instance;
  g_mutex_clear(&backend->lock);
  g_free(backend->greeting);
  g_free(backend);
}

/* The result of CODE: the greeting on stdout, the length of the code as a
 * rich output.  hello runs no code, so the run options cwd and env have
 * nothing to apply to, and its cells end at once, within any timeout. */
static cx_result *
greet(hello_backend *backend, const char *code)
{
  g_mutex_lock(&backend->lock);
  backend->cells++;
  g_mutex_unlock(&backend->lock);
  cx_result *result = cx_result_new();
  cx_result_append_stdout(result, backend->greeting, -1);
  cx_result_append_stdout(result, "\n", 1);
  g_autofree char *length = g_strdup_printf("%zu", strlen(code));
  cx_result_add_output_text(result, "text/plain", length);
  return result;
}

static cx_result *
hello_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
               GError **error)
{
  return greet((hello_backend *)instance, code); /* stateless: nothing is kept */
}

static cx_session_instance *
hello_session_open(cx_backend_instance *instance, GError **error)
{
  hello_backend *backend = (hello_backend *)instance;
  g_mutex_lock(&backend->lock);
  backend->sessions++;
  g_mutex_unlock(&backend->lock);
  hello_session *session = g_new0(hello_session, 1);
  session->backend = backend;
  return (cx_session_instance *)session;
}

static cx_result *
hello_session_run_cell(cx_session_instance *instance, const char *code,
                       const cx_run_options *run, GError **error)
{
  hello_session *session = (hello_session *)instance; /* the core runs one cell of a session at a time */
  cx_result *result = greet(session->backend, code);
  /* The cell's number in its session, as a kernel counts: a cell kept out
   * of the history (ABI 1.2; a kernel's silent request) takes none, and
   * carries the last one. */
  if (cx_run_options_get_store_history(run))
    session->execution_count++;
  cx_result_set_extra(result, "execution_count",
                      json_node_init_int(json_node_alloc(), session->execution_count));
  return result;
}

static void
hello_session_close(cx_session_instance *session)
{
  g_free(session);
}

/* hello's cells end at once: there is never one to stop, and a request
 * with nothing running is delivered (and harmless) by definition. */
static gboolean
hello_interrupt(cx_backend_instance *instance, cx_session_instance *session, GError **error)
{
  hello_backend *backend = (hello_backend *)instance;
  g_mutex_lock(&backend->lock);
  backend->interrupts++;
  g_mutex_unlock(&backend->lock);
  return TRUE;
}

/* query("info"): what this backend has done so far. */
static JsonNode *
hello_query(cx_backend_instance *instance, const char *what, GError **error)
{
  hello_backend *backend = (hello_backend *)instance;
  if (strcmp(what, "info") != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_UNSUPPORTED,
                "the hello backend answers the query \"info\" only, not \"%s\"", what);
    return NULL;
  }
  JsonObject *info = json_object_new();
  g_mutex_lock(&backend->lock);
  json_object_set_string_member(info, "greeting", backend->greeting);
  json_object_set_int_member(info, "cells", backend->cells);
  json_object_set_int_member(info, "sessions", backend->sessions);
  json_object_set_int_member(info, "interrupts", backend->interrupts);
  g_mutex_unlock(&backend->lock);
  JsonNode *node = json_node_init_object(json_node_alloc(), info);
  json_object_unref(info);
  return node;
}

static const cx_backend_vtable hello_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = hello_create,
  .destroy = hello_destroy,
  .run_cell = hello_run_cell,
  .session_open = hello_session_open,
  .session_run_cell = hello_session_run_cell,
  .session_close = hello_session_close,
  .interrupt = hello_interrupt,
  .query = hello_query,
};

/* cx_run_options_get_store_history() is ABI 1.2's: an older core refuses
 * the plugin with a clear reason instead of failing to load it. */
CX_PLUGIN_DESCRIBE(.name = "hello", .version = "1.2",
                   .description = "greets, and evaluates every cell to its length",
                   .options = hello_options, .backend = &hello_vtable,
                   .min_core_abi_minor = 2)
