/* plugins/subprocess/worker/interrupt.c: the worker's signals, and the
 * interrupt state a cell's process shares between its SIGINT handler and
 * the code that runs the cell (worker.h says how it is used). */
#include "config.h"

#include <signal.h>

#include "plugins/subprocess/worker/worker.h"
#include "pyembed/pyembed-process.h"

volatile sig_atomic_t cx__worker_cell_running;
volatile sig_atomic_t cx__worker_interrupts;
static volatile sig_atomic_t interrupt_kept; /* a SIGINT before the cell ran */

static void
on_sigint(int signal_number)
{
  if (cx__worker_cell_running) {
    cx__worker_interrupts++;
    cx__py_interrupt_main_thread();
  } else {
    interrupt_kept = 1;
  }
}

void
cx__worker_forget_interrupt(void)
{
  interrupt_kept = 0;
}

void
cx__worker_take_interrupt(void)
{
  if (interrupt_kept) {
    interrupt_kept = 0;
    cx__worker_interrupts++;
    cx__py_interrupt_main_thread();
  }
}

gboolean
cx__worker_set_up_signals(GError **error)
{
  signal(SIGPIPE, SIG_IGN);  /* BrokenPipeError instead of death, as in python3 */
  signal(SIGXFSZ, SIG_IGN);  /* past file-size-limit, OSError(EFBIG) */
  if (!cx__py_route_sigint(error))
    return FALSE;
  /* Without SA_RESTART: a blocking call returns EINTR, then Python raises. */
  struct sigaction action = { .sa_handler = on_sigint };
  sigemptyset(&action.sa_mask);
  return sigaction(SIGINT, &action, NULL) == 0;
}
