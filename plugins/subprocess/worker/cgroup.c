/* plugins/subprocess/worker/cgroup.c: the sandbox's cgroups.  Each spare
 * (hence each cell or session) gets a cgroup of its own under the
 * worker's (v2, else v1 memory + pids): memory and process count hold for
 * its whole tree, and the tree is killed through it when the process
 * ends. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/subprocess/worker/worker.h"

/* v2: one directory; v1: the memory and pids hierarchies.  Descriptors of
 * the worker's own cgroup directories, opened before pivot_root: only the
 * fork server holds them (a spare closes every descriptor past its
 * channel), so no cell can raise its own limits. */
static struct {
  int v2;            /* directory descriptor, or -1 */
  int memory, pids;  /* v1 directory descriptors, or -1 */
  guint64 memory_limit, process_limit;
  guint serial;
  GHashTable *cells; /* pid -> cgroup name (char *) */
} cg = { -1, -1, -1, 0, 0, 0, NULL };

static char *
own_cgroup(const char *controller)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/self/cgroup", &text, NULL, NULL))
    return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **line = lines; *line != NULL; line++) {
    g_auto(GStrv) fields = g_strsplit(*line, ":", 3);
    if (g_strv_length(fields) != 3)
      continue;
    g_auto(GStrv) names = g_strsplit(fields[1], ",", -1);
    if ((controller == NULL && fields[1][0] == '\0' && g_str_equal(fields[0], "0")) ||
        (controller != NULL && g_strv_contains((const char *const *)names, controller)))
      return g_strdup(fields[2]);
  }
  return NULL;
}

static gboolean
write_at(int dir, const char *file, const char *value)
{
  int fd = openat(dir, file, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return FALSE;
  gssize n = write(fd, value, strlen(value));
  int saved = errno;
  close(fd);
  errno = saved;
  return n == (gssize)strlen(value);
}

/* The directories the worker's cgroups are made in, to remove them at
 * the end: descriptors and names. */
static int cg_parents[3] = { -1, -1, -1 };
static char cg_name[64];

/* Remove the cgroups of workers that died without removing theirs (killed):
 * under PARENT, cellexec-worker-PID of a PID that is gone, and its cells'. */
static void
sweep_stale(const char *parent)
{
  g_autoptr(GDir) dir = g_dir_open(parent, 0, NULL);
  const char *name;
  while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
    if (!g_str_has_prefix(name, "cellexec-worker-"))
      continue;
    pid_t pid = (pid_t)atol(name + strlen("cellexec-worker-"));
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    g_autofree char *path = g_build_filename(parent, name, NULL);
    g_autoptr(GDir) cells = g_dir_open(path, 0, NULL);
    const char *cell;
    while (cells != NULL && (cell = g_dir_read_name(cells)) != NULL) {
      g_autofree char *cell_path = g_build_filename(path, cell, NULL);
      if (g_str_has_prefix(cell, "cell-"))
        rmdir(cell_path);
    }
    rmdir(path);
  }
}

/* mkdir + open a directory for this worker under MOUNT/OWN. */
static int
make_worker_cgroup(const char *mount_point, const char *own)
{
  g_autofree char *parent = g_strdup_printf("%s%s", mount_point, g_str_equal(own, "/") ? "" : own);
  sweep_stale(parent);
  g_snprintf(cg_name, sizeof cg_name, "cellexec-worker-%d", (int)getpid());
  for (guint i = 0; i < G_N_ELEMENTS(cg_parents); i++) {
    if (cg_parents[i] < 0) {
      cg_parents[i] = open(parent, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
      break;
    }
  }
  g_autofree char *path = g_build_filename(parent, cg_name, NULL);
  if (mkdir(path, 0700) < 0 && errno != EEXIST)
    return -1;
  return open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
}

void
cx__worker_sandbox_finish(void)
{
  if (!cx__worker_sandboxed)
    return;
  GHashTableIter iter;
  gpointer pid;
  g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  g_hash_table_iter_init(&iter, cg.cells);
  while (g_hash_table_iter_next(&iter, &pid, NULL)) {
    pid_t p = GPOINTER_TO_INT(pid);
    g_array_append_val(pids, p);
  }
  for (guint i = 0; i < pids->len; i++)
    cx__worker_sandbox_release(g_array_index(pids, pid_t, i));
  for (guint i = 0; i < G_N_ELEMENTS(cg_parents); i++)
    if (cg_parents[i] >= 0)
      unlinkat(cg_parents[i], cg_name, AT_REMOVEDIR);
}

gboolean
cx__worker_cgroups_open(guint64 memory, guint64 processes, GPtrArray *measures,
                        GError **error)
{
  cg.memory_limit = memory;
  cg.process_limit = processes;
  cg.cells = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  g_autofree char *v2 = own_cgroup(NULL);
  g_autofree char *controllers = NULL;
  if (v2 != NULL &&
      g_file_get_contents("/sys/fs/cgroup/cgroup.controllers", &controllers, NULL, NULL) &&
      strstr(controllers, "memory") != NULL && strstr(controllers, "pids") != NULL) {
    cg.v2 = make_worker_cgroup("/sys/fs/cgroup", v2);
    /* Controllers for the cells' cgroups below it. */
    if (cg.v2 >= 0 && write_at(cg.v2, "cgroup.subtree_control", "+memory +pids"))
      return TRUE;
    if (cg.v2 >= 0)
      close(cg.v2);
    cg.v2 = -1;
  }
  g_autofree char *memory_own = own_cgroup("memory");
  g_autofree char *pids_own = own_cgroup("pids");
  if (pids_own != NULL)
    cg.pids = make_worker_cgroup("/sys/fs/cgroup/pids", pids_own);
  if (memory_own != NULL)
    cg.memory = make_worker_cgroup("/sys/fs/cgroup/memory", memory_own);
  if (cg.pids < 0 || (memory > 0 && cg.memory < 0)) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "cgroup: no cgroup this worker may create children in (%s: %s); the sandbox "
                "needs one per cell to bound and kill the cell's whole process tree",
                cg.pids < 0 ? "pids controller" : "memory controller", g_strerror(saved));
    return FALSE;
  }
  g_ptr_array_add(measures, g_strdup(cg.v2 >= 0 ? "cgroup-v2" : "cgroup-v1"));
  if (memory > 0)
    g_ptr_array_add(measures, g_strdup("cgroup-memory"));
  if (processes > 0)
    g_ptr_array_add(measures, g_strdup("cgroup-pids"));
  return TRUE;
}

static gboolean
join_one(int parent, const char *name, pid_t pid, const char *limit_file, guint64 limit)
{
  if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
    return FALSE;
  int dir = openat(parent, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dir < 0)
    return FALSE;
  char value[32];
  gboolean ok = TRUE;
  if (limit > 0) {
    g_snprintf(value, sizeof value, "%" G_GUINT64_FORMAT, limit);
    ok = write_at(dir, limit_file, value);
  }
  g_snprintf(value, sizeof value, "%d", (int)pid);
  ok = ok && write_at(dir, "cgroup.procs", value);
  close(dir);
  return ok;
}

gboolean
cx__worker_sandbox_adopt(pid_t pid, GError **error)
{
  if (!cx__worker_sandboxed)
    return TRUE;
  char *name = g_strdup_printf("cell-%u", ++cg.serial);
  gboolean ok;
  if (cg.v2 >= 0) {
    ok = join_one(cg.v2, name, pid, "memory.max", cg.memory_limit) &&
         (cg.process_limit == 0 ||
          join_one(cg.v2, name, pid, "pids.max", cg.process_limit));
  } else {
    ok = join_one(cg.pids, name, pid, "pids.max", cg.process_limit) &&
         (cg.memory < 0 || join_one(cg.memory, name, pid, "memory.limit_in_bytes",
                                    cg.memory_limit));
  }
  if (!ok) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "cgroup: cannot put a cell's process in a cgroup of its own: %s",
                g_strerror(saved));
  }
  g_hash_table_insert(cg.cells, GINT_TO_POINTER(pid), name);
  return ok;
}

/* Kill every process of the cgroup NAME under PARENT, then remove it. */
static void
empty_cgroup(int parent, const char *name)
{
  int dir = openat(parent, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dir < 0)
    return;
  if (cg.v2 >= 0 && write_at(dir, "cgroup.kill", "1")) {
    /* done */
  } else {
    for (int round = 0; round < 1000; round++) {
      int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        break;
      char buffer[4096];
      gssize n = read(fd, buffer, sizeof buffer - 1);
      close(fd);
      if (n <= 0)
        break;
      buffer[n] = '\0';
      for (char *p = buffer; *p != '\0';) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
          break;
        if (pid > 0)
          kill((pid_t)pid, SIGKILL);
        p = end + (*end != '\0');
      }
      g_usleep(200);
    }
  }
  close(dir);
  /* The dead are reaped by the namespace's init; the directory goes once
   * they are. */
  for (int attempt = 0; attempt < 50 && unlinkat(parent, name, AT_REMOVEDIR) < 0 &&
                        errno == EBUSY; attempt++)
    g_usleep(1000);
}

void
cx__worker_sandbox_release(pid_t pid)
{
  if (!cx__worker_sandboxed)
    return;
  g_autofree char *name = NULL;
  if (!g_hash_table_steal_extended(cg.cells, GINT_TO_POINTER(pid), NULL, (gpointer *)&name))
    return;
  if (cg.v2 >= 0) {
    empty_cgroup(cg.v2, name);
  } else {
    empty_cgroup(cg.pids, name);
    if (cg.memory >= 0)
      unlinkat(cg.memory, name, AT_REMOVEDIR);
  }
}
