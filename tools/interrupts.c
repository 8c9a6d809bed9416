/* Ctrl-C while cells run (see interrupts.h).  A signal handler may do
 * next to nothing: it notes the signal and writes a byte to a pipe; a
 * thread reading the pipe does the interrupting, which takes locks.  No
 * signal is blocked anywhere: processes the cells start inherit the mask,
 * and a kernel or worker with SIGINT blocked could not be interrupted. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <glib-unix.h>

#include "tools/interrupts.h"

static volatile sig_atomic_t received;
static int wake_pipe[2] = { -1, -1 };
static GMutex lock;
static GCond unwatched;     /* signalled when WATCHED goes */
static cx_backend *watched; /* under LOCK */

/* After SIGTERM, how long the cells have to stop before the program ends
 * without them.  SIGTERM comes from a supervisor, which sends it once and
 * expects the program gone; a cell that ignores its interrupt (a kernel
 * with SIGINT ignored) must not keep it.  Kernels and workers the backends
 * started die with the program (PR_SET_PDEATHSIG). */
#define TERM_WAIT_SECONDS 5

static void
on_signal(int signal_number)
{
  if (received != 0) {
    /* Asked twice: do what the signal does by default. */
    signal(signal_number, SIG_DFL);
    raise(signal_number);
    return;
  }
  received = signal_number;
  int saved = errno;
  char byte = 1;
  ssize_t ignored = write(wake_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

static gpointer
interrupter(gpointer data)
{
  (void)data;
  char byte;
  while (read(wake_pipe[0], &byte, 1) < 0 && errno == EINTR)
    ;
  g_mutex_lock(&lock);
  if (watched != NULL)
    cx_backend_interrupt_all(watched, NULL); /* a backend without interrupts: the cell goes on */
  if (received == SIGTERM) {
    gint64 until = g_get_monotonic_time() + TERM_WAIT_SECONDS * G_USEC_PER_SEC;
    while (watched != NULL && g_cond_wait_until(&unwatched, &lock, until))
      ;
    if (watched != NULL) {
      fprintf(stderr, "cellexec: the running cell did not stop within %d s of SIGTERM; exiting "
                      "without waiting for it\n", TERM_WAIT_SECONDS);
      _exit(128 + SIGTERM);
    }
  }
  g_mutex_unlock(&lock);
  return NULL;
}

void
interrupts_watch(cx_backend *backend)
{
  g_mutex_lock(&lock);
  watched = backend;
  g_mutex_unlock(&lock);
  if (wake_pipe[0] >= 0 || !g_unix_open_pipe(wake_pipe, FD_CLOEXEC, NULL))
    return;
  g_thread_unref(g_thread_new("cellexec-interrupts", interrupter, NULL));
  struct sigaction action = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
}

void
interrupts_unwatch(void)
{
  g_mutex_lock(&lock);
  watched = NULL;
  g_cond_broadcast(&unwatched);
  g_mutex_unlock(&lock);
}

int
interrupts_received(void)
{
  return received;
}
