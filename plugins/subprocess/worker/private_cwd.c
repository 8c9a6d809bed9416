/* plugins/subprocess/worker/private_cwd.c: `cwd-per-session`.
 *
 * The cwd is sys.path[0] for cells: a module one session writes there
 * (colorsys.py) is what the next session's `import colorsys` runs.  With
 * cwd-per-session every process the server forks for a session or a
 * stateless cell gets a fresh directory under the cells' cwd
 * (cellexec-cwd-XXXXXX, the cwd's owner and mode), made by the server
 * before the fork and removed by it when the process has ended (unless
 * kept).  Without the sandbox the process works in it; in the sandbox it
 * is bound over the cwd itself in the process's own mount namespace
 * (sandbox.c), so no cell sees another's directory at all, stateless
 * cells' included: they would otherwise reach every session's.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"

static char *base;           /* NULL: cwd-per-session is off */
static gboolean keep;        /* leave the directories when their process ends */
static char *next;           /* made for the process forked next (its own, in it) */
static GHashTable *made;     /* pid -> its directory */

void
cx__worker_private_cwd_configure(const char *cwd, gboolean keep_them)
{
  base = g_strdup(cwd);
  keep = keep_them;
  made = g_hash_table_new_full(NULL, NULL, NULL, g_free);
}

const char *
cx__worker_private_cwd(void)
{
  return next;
}

gboolean
cx__worker_private_cwd_enter(GError **error)
{
  /* In the sandbox it is at the cwd's place already (sandbox.c). */
  if (next == NULL || cx__worker_sandboxed || chdir(next) == 0)
    return TRUE;
  int saved = errno;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cwd-per-session: %s: %s", next,
              g_strerror(saved));
  return FALSE;
}

gboolean
cx__worker_private_cwd_prepare(GError **error)
{
  g_clear_pointer(&next, g_free);
  if (base == NULL)
    return TRUE;
  struct stat st;
  g_autofree char *dir = g_build_filename(base, "cellexec-cwd-XXXXXX", NULL);
  gboolean created = stat(base, &st) == 0 && mkdtemp(dir) != NULL;
  if (!created || chown(dir, st.st_uid, st.st_gid) < 0 || chmod(dir, st.st_mode & 07777) < 0) {
    int saved = errno;
    if (created)
      rmdir(dir);
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "cwd-per-session: cannot make a directory in %s: %s; set `cwd` to a "
                "directory the worker may write, or cwd-per-session = false",
                base, g_strerror(saved));
    return FALSE;
  }
  next = g_steal_pointer(&dir);
  return TRUE;
}

static int
remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  remove(path);
  return 0;
}

static void
remove_dir(char *dir)
{
  if (!keep)
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  g_free(dir);
}

void
cx__worker_private_cwd_adopt(pid_t pid)
{
  if (next == NULL)
    return;
  if (pid > 0)
    g_hash_table_insert(made, GINT_TO_POINTER(pid), g_steal_pointer(&next));
  else
    remove_dir(g_steal_pointer(&next));
}

void
cx__worker_private_cwd_release(pid_t pid)
{
  gpointer dir;
  if (made != NULL && g_hash_table_steal_extended(made, GINT_TO_POINTER(pid), NULL, &dir))
    remove_dir(dir);
}
