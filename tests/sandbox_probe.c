/* tests/sandbox_probe.c: running one probe cell with isolation = none and
 * isolation = sandbox (tests/sandbox_probe.h). */
#include "config.h"

#include <string.h>

#include "cx_test.h"
#include "tests/sandbox_probe.h"

/* Open the backend with isolation MODE and up to three more KEY, VALUE
 * pairs (NULL keys are skipped); NULL and *ERROR set when it refuses. */
cx_backend *
cx_test_sandbox_open(const char *mode, GError **error, const char *k1, const char *v1, const char *k2,
          const char *v2, const char *k3, const char *v3)
{
  const cx_plugin_info *info = cx_registry_lookup(cx_test_registry(), "subprocess", NULL);
  cx_options *options = cx_options_new("subprocess", cx_plugin_info_get_options(info));
  g_assert(cx_options_set(options, "isolation", mode, NULL));
  const char *pairs[][2] = { { k1, v1 }, { k2, v2 }, { k3, v3 } };
  for (guint i = 0; i < G_N_ELEMENTS(pairs); i++)
    if (pairs[i][0] != NULL)
      g_assert(cx_options_set(options, pairs[i][0], pairs[i][1], NULL));
  return cx_backend_open(cx_test_registry(), "subprocess", options, error);
}

/* Run CODE on BACKEND: its stdout, stripped, or "FAILED <type>". */
char *
cx_test_sandbox_probe(cx_backend *backend, const char *code)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 60);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, code, run, &error);
  CX_ASSERT_NO_ERROR(error);
  if (result == NULL)
    return g_strdup("FAILED (no result)");
  if (!cx_result_get_success(result))
    return g_strdup_printf("FAILED %s: %s", cx_result_get_error_type(result),
                           cx_result_get_error_message(result));
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  char *text = g_strstrip(g_strndup(out, len));
  /* CX_SANDBOX_VERBOSE=1: every probe's answer, the proof both ways. */
  if (g_getenv("CX_SANDBOX_VERBOSE") != NULL)
    g_printerr("\n    probe: %s", text);
  return text;
}

/* The probe CODE with isolation none (extra options K1 V1 for none, K2 V2
 * for sandbox): none must say ALLOWED, the sandbox DENIED. */
void
cx_test_sandbox_check_both(const char *code, const char *none_key, const char *none_value,
           const char *sandbox_key, const char *sandbox_value)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend =
      sandbox ? cx_test_sandbox_open("sandbox", &error, sandbox_key, sandbox_value, NULL, NULL, NULL, NULL)
              : cx_test_sandbox_open("none", &error, none_key, none_value, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    if (backend == NULL)
      continue;
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    const char *expected = sandbox ? "DENIED" : "ALLOWED";
    if (!g_str_has_prefix(out, expected))
      g_printerr("\n  isolation = %s: expected %s, the probe said: %s\n",
                 sandbox ? "sandbox" : "none", expected, out);
    CU_ASSERT_TRUE(g_str_has_prefix(out, expected));
  }
}
