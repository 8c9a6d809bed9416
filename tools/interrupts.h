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

#endif /* CX_TOOLS_INTERRUPTS_H */
