/* Writing files where a cell may have written first: the cells' cwd is
 * theirs to write (isolation = sandbox makes it so, and it is the host's
 * own cwd by default), so a notebook, recording or debug export there may
 * meet a symbolic link, a named pipe or a hard link a cell planted.  No
 * open blocks, and no link is followed, in the directories of the path or
 * at its end, but the system's own: a link root made in a directory only
 * root may change (/var/run, /dev/stdout), which no cell can plant, since
 * cells never run as root outside isolation = none, where they are the
 * host's user anyway. */
#define _GNU_SOURCE /* O_PATH */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/internal.h"

#define OPEN_DIRECTORY (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
/* Links followed on one path at most, as the kernel's ELOOP limit. */
#define MAX_LINKS 40

/* TRUE when NAME in DIR is a symbolic link of the system's: root's, in a
 * directory that is root's and that no one else may write. */
static gboolean
system_link(int dir, const char *name)
{
  struct stat link, parent;
  return fstatat(dir, name, &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode) &&
         link.st_uid == 0 && fstat(dir, &parent) == 0 && parent.st_uid == 0 &&
         (parent.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static const char *
kind_of(mode_t mode)
{
  if (S_ISLNK(mode))
    return "a symbolic link that is not the system's, so never followed; name the file it "
           "points to";
  if (S_ISDIR(mode))
    return "a directory; name a file";
  if (S_ISFIFO(mode))
    return "a named pipe, not a regular file; remove it or name another file";
  if (S_ISSOCK(mode))
    return "a socket, not a regular file; remove it or name another file";
  return "a device, not a regular file; name another file";
}

static void
refuse(GError **error, const char *what, const char *path, const char *format, ...)
  G_GNUC_PRINTF(4, 5);

static void
refuse(GError **error, const char *what, const char *path, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *reason = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot write %s %s: %s", what, path, reason);
}

/* Where the link NAME in DIR points, or NULL. */
static char *
read_link_at(int dir, const char *name)
{
  char target[PATH_MAX];
  ssize_t len = readlinkat(dir, name, target, sizeof target - 1);
  if (len < 0)
    return NULL;
  target[len] = '\0';
  return g_strdup(target);
}

/* Put the names of PATH at the head of NAMES, in order. */
static void
push_names(GQueue *names, const char *path)
{
  g_auto(GStrv) parts = g_strsplit(path, "/", -1);
  for (guint i = g_strv_length(parts); i > 0; i--)
    g_queue_push_head(names, g_strdup(parts[i - 1]));
}

/* A descriptor (O_PATH) of the directory PATH's last name is in, each
 * directory on the way opened with O_NOFOLLOW from the one before (as
 * openat2's RESOLVE_NO_SYMLINKS would, on every kernel and naming the link
 * it met); the system's links are walked the same way, name by name, from
 * where they point.  *NAME gets the last name.  -1 with ERROR set on
 * failure. */
static int
open_parent(const char *path, const char *what, char **name, GError **error)
{
  *name = g_path_get_basename(path);
  if (strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0 || strcmp(*name, "/") == 0 ||
      g_str_has_suffix(path, "/")) {
    refuse(error, what, path, "it is a directory; name a file");
    return -1;
  }
  g_autofree char *dir = g_path_get_dirname(path);
  int fd = open(g_path_is_absolute(dir) ? "/" : ".", OPEN_DIRECTORY);
  g_autoptr(GString) reached = g_string_new(g_path_is_absolute(dir) ? "/" : "");
  GQueue names = G_QUEUE_INIT;
  push_names(&names, dir);
  int links = 0;
  while (fd >= 0 && !g_queue_is_empty(&names)) {
    g_autofree char *part = g_queue_pop_head(&names);
    if (*part == '\0' || strcmp(part, ".") == 0)
      continue;
    if (reached->len > 0 && reached->str[reached->len - 1] != '/')
      g_string_append_c(reached, '/');
    g_string_append(reached, part);
    int next = openat(fd, part, OPEN_DIRECTORY);
    int saved = errno;
    struct stat st;
    gboolean link = next < 0 && fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode);
    g_autofree char *target = link && system_link(fd, part) && links++ < MAX_LINKS
                                ? read_link_at(fd, part) : NULL;
    if (target != NULL) {
      if (g_path_is_absolute(target)) {
        close(fd);
        fd = open("/", OPEN_DIRECTORY);
      }
      push_names(&names, target);
      continue;
    }
    if (link)
      refuse(error, what, path, "%s, a directory on its path, is a symbolic link that is not "
             "the system's, so never followed; give the path without links", reached->str);
    else if (next < 0)
      refuse(error, what, path, "cannot open the directory %s (%s)", reached->str,
             g_strerror(saved));
    close(fd);
    fd = next;
  }
  g_queue_clear_full(&names, g_free);
  if (fd < 0 && error != NULL && *error == NULL)
    refuse(error, what, path, "cannot open its directory (%s)", g_strerror(errno));
  if (fd < 0)
    g_clear_pointer(name, g_free);
  return fd;
}

/* Write all of DATA to FD; 0 or an errno value. */
static int
write_all(int fd, const char *data, gsize length)
{
  gsize done = 0;
  while (done < length) {
    ssize_t wrote = write(fd, data + done, length - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return wrote < 0 ? errno : ENOSPC;
    done += (gsize)wrote;
  }
  return 0;
}

/* DATA written in place into NAME: a character device (a terminal,
 * /dev/null: no rename may replace a device, and no cell without
 * CAP_MKNOD can make one), or, THROUGH_LINK, what a system link leads to
 * (/dev/stdout: a terminal, a pipe or a file, which is emptied first). */
static gboolean
write_in_place(int dir, const char *name, gboolean through_link, const char *path,
               const char *what, const char *data, gsize length, GError **error)
{
  int fd = openat(dir, name, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                               (through_link ? 0 : O_NOFOLLOW));
  struct stat st;
  int saved = fd < 0 ? errno : 0;
  if (fd >= 0 && fstat(fd, &st) != 0)
    saved = errno;
  gboolean fits = saved != 0 || S_ISCHR(st.st_mode) ||
                  (through_link && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)));
  if (!fits) {
    refuse(error, what, path, "it is %s", kind_of(st.st_mode)); /* swapped meanwhile */
    close(fd);
    return FALSE;
  }
  if (saved == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    saved = errno;
  if (saved == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)
    saved = errno;
  if (saved == 0)
    saved = write_all(fd, data, length);
  if (fd >= 0 && close(fd) != 0 && saved == 0)
    saved = errno;
  if (saved != 0)
    refuse(error, what, path, "%s", g_strerror(saved));
  return saved == 0;
}

/* A new file NAME.XXXXXX beside NAME in DIR, never an existing one or
 * through a link; mode 0666 less the umask.  *TEMP gets its name. */
static int
create_temporary(int dir, const char *name, char **temp)
{
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    g_free(*temp);
    *temp = g_strdup_printf(".%s.%06x", name, g_random_int_range(0, 0x1000000));
    fd = openat(dir, *temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  return fd;
}

gboolean
cx__safe_file_replace(const char *path, const char *what, const char *data, gsize length,
                      GError **error)
{
  g_autofree char *name = NULL;
  int dir = open_parent(path, what, &name, error);
  if (dir < 0)
    return FALSE;
  struct stat existing;
  gboolean exists = fstatat(dir, name, &existing, AT_SYMLINK_NOFOLLOW) == 0;
  gboolean through_link = exists && S_ISLNK(existing.st_mode) && system_link(dir, name);
  if (exists && (S_ISCHR(existing.st_mode) || through_link)) {
    gboolean ok = write_in_place(dir, name, through_link, path, what, data, length, error);
    close(dir);
    return ok;
  }
  if (exists && !S_ISREG(existing.st_mode)) {
    refuse(error, what, path, "it is %s", kind_of(existing.st_mode));
    close(dir);
    return FALSE;
  }
  g_autofree char *temp = NULL;
  int fd = create_temporary(dir, name, &temp);
  int saved = fd < 0 ? errno : 0;
  /* A replaced file keeps its permissions, and for root its owner; not a
   * set-user or set-group id bit, which a file of a cell's may carry. */
  if (saved == 0 && exists) {
    if (fchmod(fd, existing.st_mode & 01777) != 0)
      saved = errno;
    else if (fchown(fd, existing.st_uid, existing.st_gid) != 0 && errno != EPERM)
      saved = errno;
  }
  if (saved == 0)
    saved = write_all(fd, data, length);
  if (saved == 0 && fsync(fd) != 0)
    saved = errno;
  if (fd >= 0 && close(fd) != 0 && saved == 0)
    saved = errno;
  /* renameat() replaces whatever NAME is by then, a link included, and
   * never writes through it. */
  if (saved == 0 && renameat(dir, temp, dir, name) != 0)
    saved = errno;
  if (saved != 0) {
    if (fd >= 0)
      unlinkat(dir, temp, 0);
    refuse(error, what, path, "%s; it was left as it was", g_strerror(saved));
  }
  close(dir);
  return saved == 0;
}

int
cx__safe_file_open_append(const char *path, const char *what, gboolean truncate,
                          GError **error)
{
  g_autofree char *name = NULL;
  int dir = open_parent(path, what, &name, error);
  if (dir < 0)
    return -1;
  /* O_NONBLOCK: a named pipe with no reader fails (ENXIO) instead of
   * blocking; it does nothing to a regular file, the only kind kept. */
  int fd = openat(dir, name,
                  O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                    (system_link(dir, name) ? 0 : O_NOFOLLOW),
                  0666);
  int saved = errno;
  struct stat st;
  gboolean described = fd < 0 ? fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0
                              : fstat(fd, &st) == 0;
  close(dir);
  if (described && !S_ISREG(st.st_mode)) {
    refuse(error, what, path, "it is %s", kind_of(st.st_mode));
  } else if (fd < 0 || !described) {
    refuse(error, what, path, "%s", g_strerror(fd < 0 ? saved : errno));
  } else if (st.st_nlink > 1) {
    /* Another name of the same file may be anywhere on this filesystem. */
    refuse(error, what, path, "it has %ju hard links, so writing it would change a file "
           "elsewhere too; remove it or name another file", (uintmax_t)st.st_nlink);
  } else if (truncate && ftruncate(fd, 0) != 0) {
    refuse(error, what, path, "%s", g_strerror(errno));
  } else {
    return fd;
  }
  if (fd >= 0)
    close(fd);
  return -1;
}
