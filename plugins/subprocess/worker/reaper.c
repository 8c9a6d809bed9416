/* plugins/subprocess/worker/reaper.c: leave no process behind.
 *
 * The fork server and every cell process are child subreapers
 * (PR_SET_CHILD_SUBREAPER): a descendant whose parent dies, daemons made
 * with setsid included, is adopted by the nearest of them instead of
 * init.  So killing all of one's children, repeatedly until none are left,
 * kills every descendant.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/subprocess/worker/worker.h"

static void
add_pids_from(GArray *pids, const char *text)
{
  char *end;
  for (const char *p = text; *p != '\0'; p = end) {
    long pid = strtol(p, &end, 10);
    if (end == p) {
      end++;
      continue;
    }
    if (pid > 0) {
      pid_t value = (pid_t)pid;
      g_array_append_val(pids, value);
    }
  }
}

/* Parent pid of PID from /proc/PID/stat, or -1. */
static pid_t
parent_of(const char *pid)
{
  g_autofree char *path = g_strdup_printf("/proc/%s/stat", pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents(path, &stat, NULL, NULL))
    return -1;
  /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
  const char *after_comm = strrchr(stat, ')');
  char state;
  int ppid;
  if (after_comm == NULL || sscanf(after_comm + 1, " %c %d", &state, &ppid) != 2)
    return -1;
  return ppid;
}

/* The children of this process: /proc/self/task/TID/children of each
 * thread (adopted orphans may hang off any of them), else a scan of /proc. */
static GArray *
list_children(void)
{
  GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  gboolean listed = FALSE;
  g_autoptr(GDir) tasks = g_dir_open("/proc/self/task", 0, NULL);
  const char *tid;
  while (tasks != NULL && (tid = g_dir_read_name(tasks)) != NULL) {
    g_autofree char *path = g_strdup_printf("/proc/self/task/%s/children", tid);
    g_autofree char *text = NULL;
    if (g_file_get_contents(path, &text, NULL, NULL)) {
      add_pids_from(pids, text);
      listed = TRUE;
    }
  }
  if (listed)
    return pids;

  /* Kernels without CONFIG_PROC_CHILDREN. */
  pid_t self = getpid();
  g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
  const char *name;
  while (proc != NULL && (name = g_dir_read_name(proc)) != NULL) {
    if (g_ascii_isdigit(name[0]) && parent_of(name) == self) {
      pid_t pid = (pid_t)atol(name);
      g_array_append_val(pids, pid);
    }
  }
  return pids;
}

void
cx__worker_kill_descendants(void)
{
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 || (pid < 0 && errno == EINTR))
      continue;
    if (pid < 0)
      return; /* ECHILD: no child, so (as a subreaper) no descendant */
    /* Live children: kill them all; their own children come to us. */
    g_autoptr(GArray) children = list_children();
    for (guint i = 0; i < children->len; i++)
      kill(g_array_index(children, pid_t, i), SIGKILL);
    if (children->len == 0)
      g_usleep(1000); /* one is being reparented right now */
    else
      (void)waitpid(-1, &status, 0);
  }
}

void
cx__worker_kill_orphans(GHashTable *keep)
{
  for (;;) {
    g_autoptr(GArray) children = list_children();
    g_autoptr(GArray) orphans = g_array_new(FALSE, FALSE, sizeof(pid_t));
    for (guint i = 0; i < children->len; i++) {
      pid_t pid = g_array_index(children, pid_t, i);
      if (!g_hash_table_contains(keep, GINT_TO_POINTER(pid)) &&
          pid != cx__worker_pid_namespace_maker) {
        kill(pid, SIGKILL);
        g_array_append_val(orphans, pid);
      }
    }
    if (orphans->len == 0)
      return;
    for (guint i = 0; i < orphans->len; i++) {
      int status;
      while (waitpid(g_array_index(orphans, pid_t, i), &status, 0) < 0 && errno == EINTR)
        ;
    }
  }
}
