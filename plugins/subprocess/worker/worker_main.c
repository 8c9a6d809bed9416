/* plugins/subprocess/worker/worker_main.c: cellexec-worker, the program the
 * subprocess backend runs cells in.
 *
 *   cellexec-worker [--isolated] [--preload MODULE,...] [--sandbox JSON] [--fd N]
 *                   [--private-cwd DIR [--keep-private-cwd]]
 *
 * N (default 3) is a connected Unix stream socket to the host.  The worker
 * starts the embedded Python (pyembed, the runtime the local backend uses),
 * warms it up, says HELLO and serves as a fork server (forkserver.c).  Not
 * meant to be run by hand.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/warm_up-py.h" /* cx__py_warm_up_source: generated */
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

static int
fail(int control, const char *what, const GError *error)
{
  g_autofree char *message = g_strdup_printf("%s: %s", what, error->message);
  /* The host reports what it is sent; printing it too would say it twice. */
  if (!cx__wire_send_error(control, message, NULL))
    g_printerr("cellexec-worker: %s\n", message);
  return 1;
}

int
main(int argc, char **argv)
{
  gboolean isolated = FALSE;
  const char *preload = "";
  const char *sandbox = NULL;
  int control = 3;
  const char *private_cwd = NULL;
  gboolean keep_private_cwd = FALSE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--isolated") == 0) {
      isolated = TRUE;
    } else if (strcmp(argv[i], "--private-cwd") == 0 && i + 1 < argc) {
      private_cwd = argv[++i];
    } else if (strcmp(argv[i], "--keep-private-cwd") == 0) {
      keep_private_cwd = TRUE;
    } else if (strcmp(argv[i], "--sandbox") == 0 && i + 1 < argc) {
      sandbox = argv[++i];
    } else if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
      control = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc &&
               strspn(argv[i + 1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_., ") == strlen(argv[i + 1])) {
      preload = argv[++i];
    } else {
      g_printerr("usage: %s [--isolated] [--preload MODULE,...] [--sandbox JSON] [--fd N] "
                 "[--private-cwd DIR [--keep-private-cwd]]\n"
                 "cellexec's subprocess worker: started by the subprocess backend, "
                 "not by hand.\n", argv[0]);
      return 2;
    }
  }
  int type = 0;
  socklen_t type_len = sizeof type;
  if (getsockopt(control, SOL_SOCKET, SO_TYPE, &type, &type_len) < 0 || type != SOCK_STREAM) {
    g_printerr("cellexec-worker: descriptor %d is not a stream socket; this program is "
               "started by cellexec's subprocess backend\n", control);
    return 2;
  }

  g_autoptr(GError) error = NULL;
  if (private_cwd != NULL)
    cx__worker_private_cwd_configure(private_cwd, keep_private_cwd);
  /* The sandbox first, while the process is single-threaded and before
   * anything of Python's runs: every process forked later inherits it. */
  g_autoptr(GPtrArray) measures = NULL;
  if (sandbox != NULL) {
    measures = g_ptr_array_new_with_free_func(g_free);
    if (!cx__worker_sandbox_enter(sandbox, measures, &error))
      return fail(control, "isolation = sandbox: cannot apply", error);
  }
  /* Cells run on the main thread of each process; every process forked
   * after threading is imported would run its at-fork handler. */
  cx__py_import_threading_on_demand();
  if (!cx__py_start(isolated, &error))
    return fail(control, "cannot start Python", error);
  if (!cx__worker_set_up_signals(&error) || !cx__py_use_process_exit(cx__worker_before_exit, &error) ||
      !cx__py_set_cwd_importable(FALSE, &error))
    return fail(control, "cannot set up the worker", error);

  g_autoptr(cx_run_options) run = cx_run_options_new();
  /* Imports most cells pay for otherwise, done once before any fork
   * (warm_up.py).  PRELOAD holds dotted names and commas only. */
  g_autofree char *warm_up = g_strdup_printf("%s\n_cellexec_warm_up('%s')\n", cx__py_warm_up_source,
                                             preload);
  g_autoptr(cx_result) warm = cx__py_run_cell(NULL, NULL, warm_up, run, CX__PY_RUN_DEFAULT,
                                              &error);
  if (warm == NULL)
    return fail(control, "cannot warm up Python", error);
  if (!cx_result_get_success(warm))
    g_printerr("cellexec-worker: warming up failed (%s: %s); carrying on\n",
               cx_result_get_error_type(warm), cx_result_get_error_message(warm));
  /* A cell through the whole path once: what it sets up on first use is
   * then shared by every process forked later.  Each spare runs one more
   * of its own (prewarm() in cell_process.c). */
  g_autoptr(cx_result) sample = cx__py_run_cell(NULL, NULL, "None", run, CX__PY_RUN_DEFAULT,
                                                NULL);
  cx__worker_warm_cell_paths(sample);
  /* _exit: the interpreter is never finalised, so exit-time handlers have
   * nothing to do but report its heap as leaked (under LeakSanitizer, onto
   * the host's stderr). */
  _exit(cx__worker_serve(control, measures));
}
