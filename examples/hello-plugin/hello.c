/* A minimal third-party cellexec backend: every cell "prints" a greeting
 * and evaluates to the length of its code.  Build it against an installed
 * cellexec with the Makefile beside it (pkg-config only). */
#include <string.h>

#include <cellexec/plugin.h>

static const cx_option_spec hello_options[] = {
  { "greeting", CX_OPTION_STRING, "hello", "what every cell prints" },
  { NULL, 0, NULL, NULL }
};

typedef struct {
  char *greeting;
} hello_backend;

static cx_backend_instance *
hello_create(const cx_options *options, GError **error)
{
  hello_backend *backend = g_new0(hello_backend, 1);
  /* Options are borrowed: copy what you keep. */
  backend->greeting = g_strdup(cx_options_get_string(options, "greeting", "hello"));
  return backend;
}

static void
hello_destroy(cx_backend_instance *instance)
{
  hello_backend *backend = instance;
  g_free(backend->greeting);
  g_free(backend);
}

static cx_result *
hello_run_cell(cx_backend_instance *instance, const char *code, const cx_run_options *run,
               GError **error)
{
  hello_backend *backend = instance;
  cx_result *result = cx_result_new();
  cx_result_append_stdout(result, backend->greeting, -1);
  cx_result_append_stdout(result, "\n", 1);
  g_autofree char *length = g_strdup_printf("%zu", strlen(code));
  cx_result_add_output_text(result, "text/plain", length);
  return result;
}

static const cx_backend_vtable hello_vtable = {
  .struct_size = sizeof(cx_backend_vtable),
  .create = hello_create,
  .destroy = hello_destroy,
  .run_cell = hello_run_cell,
};

CX_PLUGIN_DEFINE("hello", "1.0", "greets, and evaluates every cell to its length",
                 hello_options, &hello_vtable, NULL, NULL)
