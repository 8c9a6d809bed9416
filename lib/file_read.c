/* Reading a whole input file (a notebook, a recording, a fake backend's
 * responses) that may be hostile or a mistake: bounded in size, and only
 * a regular file.  A device such as /dev/zero never ends, and a FIFO may
 * never be written: g_file_get_contents() would read the one until memory
 * runs out and wait on the other forever. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "lib/internal.h"

/* What the file at PATH is, when it is not a regular file. */
static const char *
file_kind(mode_t mode)
{
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

static gboolean
fail_errno(GError **error, const char *path, int saved)
{
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED, "cannot read %s: %s", path, g_strerror(saved));
  return FALSE;
}

static gboolean
fail_too_large(GError **error, const char *path)
{
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED,
              "cannot read %s: it is larger than %d MiB, the most cellexec reads from one file",
              path, CX_FILE_MAX_SIZE / (1024 * 1024));
  return FALSE;
}

char *
cx__read_fd_bounded(int fd, gsize max, gsize size_hint, gsize *length, int *saved)
{
  gsize capacity = MIN(size_hint, max) + 1, size = 0;
  char *data = g_malloc(capacity + 1);
  for (;;) {
    if (size == capacity) {
      if (capacity > max)
        break;
      capacity = MIN(capacity * 2, max + 1);
      data = g_realloc(data, capacity + 1);
    }
    gssize n = read(fd, data + size, capacity - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *saved = errno;
      g_free(data);
      return NULL;
    }
    if (n == 0)
      break;
    size += (gsize)n;
  }
  data[size] = '\0';
  *length = size;
  return data;
}

gboolean
cx_file_get_contents(const char *path, char **contents, gsize *length, GError **error)
{
  g_return_val_if_fail(path != NULL && contents != NULL, FALSE);
  *contents = NULL;
  /* O_NONBLOCK: opening a FIFO no one writes to returns at once, to be
   * refused below (it changes nothing for a regular file). */
  int fd = g_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
  if (fd < 0)
    return fail_errno(error, path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int saved = errno;
    close(fd);
    return fail_errno(error, path, saved);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    g_set_error(error, CX_ERROR, CX_ERROR_FAILED,
                "cannot read %s: it is %s, not a regular file; save its contents to a file and "
                "give that", path, file_kind(st.st_mode));
    return FALSE;
  }
  if (st.st_size > CX_FILE_MAX_SIZE) {
    close(fd);
    return fail_too_large(error, path);
  }
  gsize size = 0;
  int saved = 0;
  char *data = cx__read_fd_bounded(fd, CX_FILE_MAX_SIZE, (gsize)st.st_size, &size, &saved);
  close(fd);
  if (data == NULL)
    return fail_errno(error, path, saved);
  if (size > CX_FILE_MAX_SIZE) { /* it grew while read */
    g_free(data);
    return fail_too_large(error, path);
  }
  *contents = data;
  if (length != NULL)
    *length = size;
  return TRUE;
}
