/* Ctrl-C while cells run (see interrupts.h).  A signal handler may do
 * next to nothing: it notes the signal and writes a byte to a pipe; a
 * thread reading the pipe does the interrupting, which takes locks.  No
 * signal is blocked anywhere: processes the cells start inherit the mask,
 * and a kernel or worker with SIGINT blocked could not be interrupted. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib-unix.h>

#include "tools/interrupts.h"

static volatile sig_atomic_t received;
static int wake_pipe[2] = { -1, -1 };
/* The program's stderr as it was before any cell ran: while a local cell
 * runs, fd 2 is its capture. */
static int saved_stderr = -1;
static GMutex lock;
static cx_backend *watched; /* under LOCK */

/* After SIGTERM, how long the program has to end before it ends at once.
 * SIGTERM comes from a supervisor, which sends it once and expects the
 * program gone: neither a cell that ignores its interrupt (a kernel with
 * SIGINT ignored) nor a write to a pipe nobody reads may keep it.  Workers
 * and local kernels the backends started die with the program. */
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

/* Ends the program TERM_WAIT_SECONDS after SIGTERM, whatever the rest of
 * it is doing: the interrupt itself may wait (for the embedded
 * interpreter's lock, held by a cell whose output is being written to a
 * pipe nobody reads). */
static gpointer
term_deadline(gpointer data)
{
  (void)data;
  g_usleep(TERM_WAIT_SECONDS * G_USEC_PER_SEC);
  g_autofree char *line =
    g_strdup_printf("cellexec: still running %d s after SIGTERM (a cell that did not stop, or "
                    "output nobody reads); exiting without waiting\n", TERM_WAIT_SECONDS);
  ssize_t ignored = write(saved_stderr >= 0 ? saved_stderr : STDERR_FILENO, line, strlen(line));
  (void)ignored;
  _exit(128 + SIGTERM);
}

static gpointer
interrupter(gpointer data)
{
  (void)data;
  char byte;
  while (read(wake_pipe[0], &byte, 1) < 0 && errno == EINTR)
    ;
  if (received == SIGTERM)
    g_thread_unref(g_thread_new("cellexec-term", term_deadline, NULL));
  g_mutex_lock(&lock);
  if (watched != NULL)
    cx_backend_interrupt_all(watched, NULL); /* a backend without interrupts: the cell goes on */
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
  saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
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
  g_mutex_unlock(&lock);
}

int
interrupts_received(void)
{
  return received;
}

/* ---- A deadline for programs that stop on SIGTERM ------------------------------ */

static char deadline_line[256];
static int deadline_fd = -1;

static void
on_deadline(int signal_number)
{
  (void)signal_number;
  ssize_t ignored = write(deadline_fd >= 0 ? deadline_fd : STDERR_FILENO, deadline_line,
                          strlen(deadline_line));
  (void)ignored;
  _exit(128 + SIGTERM);
}

void
interrupts_prepare_deadline(const char *who)
{
  if (deadline_fd < 0)
    deadline_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  g_snprintf(deadline_line, sizeof deadline_line,
             "%s: sessions still ending after SIGTERM (a cell that ignores its interrupt and "
             "could not be killed); exiting without waiting\n", who);
  struct sigaction action = { .sa_handler = on_deadline };
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, NULL);
}

void
interrupts_exit_within(unsigned seconds)
{
  unsigned left = alarm(MAX(seconds, 1));
  if (left != 0 && left < seconds)
    alarm(left); /* an earlier deadline stands */
}
