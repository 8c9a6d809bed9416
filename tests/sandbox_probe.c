/* tests/sandbox_probe.c: running one probe cell with isolation = none and
 * isolation = sandbox (tests/sandbox_probe.h). */
#include "config.h"

#include <string.h>
#include <unistd.h>

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

/* RESULT's stdout, stripped, or "FAILED <type>: <message>". */
static char *
answer_of(cx_result *result)
{
  if (result == NULL)
    return g_strdup("FAILED (no result)");
  if (!cx_result_get_success(result))
    return g_strdup_printf("FAILED %s: %s", cx_result_get_error_type(result),
                           cx_result_get_error_message(result));
  gsize len;
  const char *out = cx_result_get_stdout(result, &len);
  return g_strstrip(g_strndup(out, len));
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
  char *text = answer_of(result);
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

gint64
cx_test_sandbox_child_named(gint64 server, const char *name)
{
  g_autofree char *children_path =
    g_strdup_printf("/proc/%d/task/%d/children", (int)server, (int)server);
  g_autofree char *children = NULL;
  if (!g_file_get_contents(children_path, &children, NULL, NULL))
    return 0;
  g_auto(GStrv) pids = g_strsplit(g_strstrip(children), " ", -1);
  for (char **pid = pids; *pid != NULL; pid++) {
    g_autofree char *comm_path = g_strdup_printf("/proc/%s/comm", *pid);
    g_autofree char *comm = NULL;
    if (g_file_get_contents(comm_path, &comm, NULL, NULL) &&
        g_str_equal(g_strstrip(comm), name))
      return g_ascii_strtoll(*pid, NULL, 10);
  }
  return 0;
}

/* Run CODE in SESSION: its stdout, stripped (or the failure). */
static char *
session_probe(cx_session *session, const char *code)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_session_run_cell(session, code, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  return answer_of(result);
}

static void
expect(gboolean sandbox, const char *what, const char *out)
{
  const char *expected = sandbox ? "DENIED" : "ALLOWED";
  if (!g_str_has_prefix(out, expected))
    g_printerr("\n  isolation = %s, %s: expected %s: %s\n", sandbox ? "sandbox" : "none",
               what, expected, out);
  CU_ASSERT_TRUE(g_str_has_prefix(out, expected));
}

void
cx_test_sandbox_check_across_sessions(const char *key, const char *value,
                                      const char *victim_code,
                                      char *(*probe_for)(const char *printed, const char *pids),
                                      const char *after_probe)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                         key, value, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(backend);
    g_autoptr(cx_session) victim = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    /* A name the host finds its process by. */
    g_autofree char *own_pid = session_probe(
      victim, "import ctypes, os\nctypes.CDLL(None).prctl(15, b'cx-victim')  # PR_SET_NAME\n"
              "print(os.getpid())\n");
    g_autofree char *printed = session_probe(victim, victim_code);
    g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
    gint64 host_pid = cx_test_sandbox_child_named(json_object_get_int_member(json_node_get_object(info),
                                                             "server_pid"), "cx-victim");
    CU_ASSERT_NOT_EQUAL_FATAL(host_pid, 0);
    g_autofree char *pids = g_strdup_printf("%s %" G_GINT64_FORMAT, own_pid, host_pid);
    g_autofree char *code = probe_for(printed, pids);
    CU_ASSERT_PTR_NOT_NULL_FATAL(code);
    g_autoptr(cx_session) prober = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *probed = session_probe(prober, code);
    expect(sandbox, "the probe", probed);
    if (after_probe != NULL) {
      g_autofree char *after = session_probe(victim, after_probe);
      expect(sandbox, "the victim after the probe", after);
    }
  }
}
