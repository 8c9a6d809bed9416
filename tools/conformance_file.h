/* `cellexec plugins --check FILE.so`: one plugin file, loaded in isolation,
 * checked against the conformance tables. */
#ifndef CX_TOOLS_CONFORMANCE_FILE_H
#define CX_TOOLS_CONFORMANCE_FILE_H

#include <glib.h>

G_BEGIN_DECLS

/* The seconds one case may take by default before the plugin counts as hung. */
#define CONFORMANCE_CASE_TIMEOUT 60

/* Load FILE alone (through a registry over a private directory holding only
 * a link to it, with a private probe cache, so it is always probed afresh
 * and nothing else on the plugin path is loaded), then run every case that
 * applies, printing one line per case and a summary on stdout.  The plugin
 * runs in child processes: a case in which it crashes, exits or takes more
 * than CASE_TIMEOUT seconds fails, and the check goes on.  OPTIONS:
 * "KEY=VALUE" backend options of every case (may be NULL).  REQUIRE_PYTHON:
 * the Python cases run even if the plugin does not seem to run Python.
 * Returns the exit status: 0 all passed, 1 a case failed, 2 the file could
 * not be checked, with ERROR set (for a file the registry refuses, its own
 * sentence). */
int conformance_check_file(const char *file, const char *const *options, gboolean require_python,
                           double case_timeout, GError **error);

G_END_DECLS

#endif /* CX_TOOLS_CONFORMANCE_FILE_H */
