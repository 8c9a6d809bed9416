/* Ctrl-C while cells run.  The first SIGINT or SIGTERM interrupts every
 * cell running on the watched backend (cx_backend_interrupt_all): the cell
 * ends with KeyboardInterrupt, the command runs no further cell, frees the
 * backend (so kernels it started, a gateway's included, are shut down) and
 * exits 128 + the signal's number.  A second signal ends the program at
 * once, as it would have the first time; 5 s after SIGTERM, so does the
 * program if it is still running (a cell that did not stop, output
 * written to a pipe nobody reads).  Exiting so, the backend is not freed:
 * the processes it started end with the program (workers see their
 * channel close, local kernels get PR_SET_PDEATHSIG), but a kernel a
 * Jupyter Server or gateway started for it stays until the server culls
 * it. */
#ifndef CX_TOOLS_INTERRUPTS_H
#define CX_TOOLS_INTERRUPTS_H

#include <cellexec/cellexec.h>

/* Install the handlers (once) and interrupt BACKEND's cells on a signal. */
void interrupts_watch(cx_backend *backend);
/* Stop interrupting the backend (before it is freed). */
void interrupts_unwatch(void);
/* The signal that came (SIGINT or SIGTERM), or 0. */
int interrupts_received(void);

/* For a program that stops on SIGTERM by ending its sessions (cellexec
 * serve, cellexec kernel): WHO ("cellexec serve") for the line that
 * interrupts_exit_within() writes.  Call once, before any cell runs. */
void interrupts_prepare_deadline(const char *who);
/* End the program SECONDS from now (exit status 128 + SIGTERM) unless it
 * has ended: a cell that ignores its interrupt and cannot be killed (in
 * the local backend's process) must not keep a program told to stop.  The
 * processes the backends started end with it, as above.  Safe in a
 * signal handler. */
void interrupts_exit_within(unsigned seconds);

#endif /* CX_TOOLS_INTERRUPTS_H */
