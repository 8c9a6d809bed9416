/* Redaction by name, shared by debug exports (debug_export.c) and
 * recordings (record.c): globs matched against names ignoring case, and
 * "KEY=VALUE" environment entries hidden by KEY. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

const char *const *
cx_debug_default_redact(void)
{
  static const char *const patterns[] = { "*TOKEN*", "*SECRET*", "*PASSWORD*", "*API_KEY*",
                                          "*CREDENTIAL*", NULL };
  return patterns;
}

GPtrArray *
cx__redact_patterns_new(const char *const *globs)
{
  GPtrArray *patterns = g_ptr_array_new_with_free_func((GDestroyNotify)g_pattern_spec_free);
  for (const char *const *p = globs != NULL ? globs : cx_debug_default_redact(); *p != NULL; p++) {
    g_autofree char *lower = g_ascii_strdown(*p, -1);
    g_ptr_array_add(patterns, g_pattern_spec_new(lower));
  }
  return patterns;
}

gboolean
cx__redact_matches(GPtrArray *patterns, const char *name)
{
  g_autofree char *lower = g_ascii_strdown(name, -1);
  for (guint i = 0; i < patterns->len; i++)
    if (g_pattern_spec_match_string(g_ptr_array_index(patterns, i), lower))
      return TRUE;
  return FALSE;
}

/* "KEY=VALUE" strings (environment lists) are redacted by KEY. */
char *
cx__redact_assignment(GPtrArray *patterns, const char *text)
{
  const char *eq = strchr(text, '=');
  if (eq == NULL || eq == text || strchr(text, '\n') != NULL)
    return NULL;
  g_autofree char *key = g_strndup(text, (gsize)(eq - text));
  return cx__redact_matches(patterns, key) ? g_strdup_printf("%s=[redacted]", key) : NULL;
}
