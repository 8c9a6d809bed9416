/* tests/proc_table.h: what /proc says of this process and the others, for
 * the tests and the soak (bench/soak.c), which count what a run leaves
 * behind. */
#ifndef CX_TESTS_PROC_TABLE_H
#define CX_TESTS_PROC_TABLE_H

#include <glib.h>

typedef struct {
  int pid;
  int ppid;
  char state; /* as in /proc/PID/stat: 'R', 'S', 'Z', ... */
} proc_entry;

/* Every process /proc lists now (a new array of proc_entry). */
GArray *proc_table_read(void);

/* The descriptors this process has open. */
guint proc_count_open_fds(void);

#endif /* CX_TESTS_PROC_TABLE_H */
