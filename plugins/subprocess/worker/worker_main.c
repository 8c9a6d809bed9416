/* plugins/subprocess/worker/worker_main.c: cellexec-worker, the program the
 * subprocess backend runs cells in.
 *
 *   cellexec-worker [--isolated] [--preload MODULE,...] [--fd N]
 *
 * N (default 3) is a connected Unix stream socket to the host.  The worker
 * starts the embedded Python (pyembed, the runtime the local backend uses),
 * warms it up, says HELLO and serves as a fork server (forkserver.c).  Not
 * meant to be run by hand.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/subprocess/protocol.h"
#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

volatile sig_atomic_t cx_worker_cell_running;
volatile sig_atomic_t cx_worker_interrupts;

/* Imports most cells pay for otherwise: done once, before any fork.  Then
 * the --preload modules (checked to be dotted names by the host), each
 * skipped when not installed: with IPython, cells get its shell ready-made,
 * but every stateless cell costs more (a larger process to fork). */
static const char warm_up_code[] =
  "import asyncio, collections, datetime, io, json, math, re, tokenize, traceback\n"
  "for name in '%s'.split(','):\n"
  "    try:\n"
  "        __import__(name.strip()) if name.strip() else None\n"
  "    except ModuleNotFoundError:\n"
  "        pass\n"
  "import gc\n"
  /* Objects made so far are never collected: collections would touch them
   * and copy their pages in every forked process. */
  "gc.freeze()\n";

static void
on_sigint(int signal_number)
{
  /* Idle, a SIGINT is ignored: nothing to interrupt, and it must not
   * surface in the next cell. */
  if (cx_worker_cell_running) {
    cx_worker_interrupts++;
    cx_pyembed_interrupt_main_thread();
  }
}

/* Signals as python3 sets them up, the ones the host may have changed
 * reset first. */
static gboolean
set_up_signals(GError **error)
{
  signal(SIGPIPE, SIG_IGN);  /* BrokenPipeError instead of death, as in python3 */
  signal(SIGXFSZ, SIG_IGN);  /* past file-size-limit, OSError(EFBIG) */
  if (!cx_pyembed_route_sigint(error))
    return FALSE;
  /* Without SA_RESTART: a blocking call returns EINTR, then Python raises. */
  struct sigaction action = { .sa_handler = on_sigint };
  sigemptyset(&action.sa_mask);
  return sigaction(SIGINT, &action, NULL) == 0;
}

static int
fail(int control, const char *what, const GError *error)
{
  g_autofree char *message = g_strdup_printf("%s: %s", what, error->message);
  g_printerr("cellexec-worker: %s\n", message);
  JsonObject *object = json_object_new();
  json_object_set_string_member(object, "message", message);
  cx_protocol_send_object(control, CX_MSG_ERROR, object, -1, NULL);
  return 1;
}

int
main(int argc, char **argv)
{
  gboolean isolated = FALSE;
  const char *preload = "";
  int control = 3;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--isolated") == 0) {
      isolated = TRUE;
    } else if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
      control = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc &&
               strspn(argv[i + 1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_., ") == strlen(argv[i + 1])) {
      preload = argv[++i];
    } else {
      g_printerr("usage: %s [--isolated] [--preload MODULE,...] [--fd N]\n"
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
  if (!cx_pyembed_start(isolated, &error))
    return fail(control, "cannot start Python", error);
  if (!set_up_signals(&error) || !cx_pyembed_use_process_exit(cx_worker_before_exit, &error))
    return fail(control, "cannot set up the worker", error);

  g_autoptr(cx_run_options) run = cx_run_options_new();
  g_autofree char *warm_up = g_strdup_printf(warm_up_code, preload);
  g_autoptr(cx_result) warm = cx_pyembed_run_cell(NULL, NULL, warm_up, run,
                                                     CX_PYEMBED_RUN_DEFAULT, &error);
  if (warm == NULL)
    return fail(control, "cannot warm up Python", error);
  if (!cx_result_get_success(warm))
    g_printerr("cellexec-worker: warming up failed (%s: %s); carrying on\n",
               cx_result_get_error_type(warm), cx_result_get_error_message(warm));
  g_autoptr(cx_result) prewarm = cx_pyembed_run_cell(NULL, NULL, CX_WORKER_PREWARM_CELL, run,
                                                        CX_PYEMBED_RUN_DEFAULT, NULL);
  /* _exit: the interpreter is never finalised, so exit-time handlers have
   * nothing to do but report its heap as leaked (under LeakSanitizer, onto
   * the host's stderr). */
  _exit(cx_worker_serve(control));
}
