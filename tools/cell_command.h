/* What the commands that run cells (run, notebook run) share: opening the
 * backend their -b, -C, options, --record and --debug-export ask for, and
 * the run options of each cell from --cwd, -e and --timeout. */
#ifndef CX_TOOLS_CELL_COMMAND_H
#define CX_TOOLS_CELL_COMMAND_H

#include <cellexec/cellexec.h>

typedef struct {
  const char *config;       /* -C FILE, or NULL: the search order */
  const char *backend;      /* -b NAME, or NULL: the config's */
  char **options;           /* KEY=VALUE backend options over the config's, or NULL */
  const char *record;       /* --record FILE, or NULL: the config's record */
  const char *debug_export; /* --debug-export FILE, or NULL: the config's */
  const char *const *defaults; /* KEY=VALUE where the config and -o leave KEY unset and
                                  the backend has KEY (a command's own defaults), or NULL */
} backend_request;

typedef struct {
  cx_backend *backend;
  cx_debug_exporter *exporter; /* set on BACKEND, or NULL */
} opened_backend;

/* Open what REQUEST names into OPENED: the config checked as `config check`
 * does for sections, the options applied, recording and the debug export
 * set up, a warning on stderr when the backend shadows another plugin, and
 * Ctrl-C made to interrupt its cells (interrupts.h) until it is cleared.
 * FALSE with ERROR (one line for the user) when anything is wrong. */
gboolean open_requested_backend(const backend_request *request, opened_backend *opened,
                                GError **error);

/* Detach the exporter and free both. */
void opened_backend_clear(opened_backend *opened);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(opened_backend, opened_backend_clear)

/* Run options with CWD (may be NULL), ENV ("KEY=VALUE" strings, may be
 * NULL) and TIMEOUT (seconds as the user wrote them, may be NULL); NULL
 * with a message naming the option when one is not valid. */
cx_run_options *cell_run_options_new(const char *cwd, char **env, const char *timeout,
                                     GError **error);

#endif /* CX_TOOLS_CELL_COMMAND_H */
