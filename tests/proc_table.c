/* What /proc says of this process and the others (see proc_table.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/proc_table.h"

GArray *
proc_table_read(void)
{
  GArray *table = g_array_new(FALSE, FALSE, sizeof(proc_entry));
  g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
  const char *name;
  while (proc != NULL && (name = g_dir_read_name(proc)) != NULL) {
    if (!g_ascii_isdigit(name[0]))
      continue;
    g_autofree char *path = g_strdup_printf("/proc/%s/stat", name);
    g_autofree char *stat = NULL;
    if (!g_file_get_contents(path, &stat, NULL, NULL))
      continue;
    /* The command name may hold anything, ')' included: the fields
     * follow the last one. */
    const char *after = strrchr(stat, ')');
    proc_entry entry = { .pid = atoi(name) };
    if (after != NULL && sscanf(after + 1, " %c %d", &entry.state, &entry.ppid) == 2)
      g_array_append_val(table, entry);
  }
  return table;
}

guint
proc_count_open_fds(void)
{
  guint n = 0;
  g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
  while (dir != NULL && g_dir_read_name(dir) != NULL)
    n++;
  return n;
}
