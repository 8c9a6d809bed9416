/* Probing plugins in a separate process before the host loads them, and
 * remembering the verdicts (the approach of GStreamer's plugin scanner and
 * its registry cache).  Only a crash is remembered: every other way a
 * plugin can be wrong the registry finds by loading it. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "lib/internal.h"

struct cx__probe_cache {
  char *path;         /* the cache file */
  GKeyFile *verdicts; /* [plugin path] identity = ..., crash = ... */
  GKeyFile *news;     /* the verdicts this scan reached, to merge on close */
  gboolean dirty;
};

static char *
cache_path(void)
{
  const char *xdg = g_getenv("XDG_CACHE_HOME");
  if (xdg != NULL && g_path_is_absolute(xdg))
    return g_build_filename(xdg, "cellexec", "plugin-probes", NULL);
  return g_build_filename(g_get_home_dir(), ".cache", "cellexec", "plugin-probes", NULL);
}

cx__probe_cache *
cx__probe_cache_open(void)
{
  cx__probe_cache *cache = g_new0(cx__probe_cache, 1);
  cache->path = cache_path();
  cache->verdicts = g_key_file_new();
  cache->news = g_key_file_new();
  /* A missing or unreadable cache only costs probes. */
  g_key_file_load_from_file(cache->verdicts, cache->path, G_KEY_FILE_NONE, NULL);
  return cache;
}

/* Merge NEWS into the cache file under an exclusive lock: processes
 * scanning at the same time must not lose each other's verdicts. */
static void
save_news(const char *path, GKeyFile *news)
{
  g_autofree char *dir = g_path_get_dirname(path);
  g_mkdir_with_parents(dir, 0700);
  g_autofree char *lock_path = g_strconcat(path, ".lock", NULL);
  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    if (lock >= 0)
      close(lock);
    return; /* best effort: the verdicts are found again next time */
  }
  g_autoptr(GKeyFile) current = g_key_file_new();
  g_key_file_load_from_file(current, path, G_KEY_FILE_NONE, NULL);
  g_auto(GStrv) groups = g_key_file_get_groups(news, NULL);
  for (char **group = groups; *group != NULL; group++) {
    g_auto(GStrv) keys = g_key_file_get_keys(news, *group, NULL, NULL);
    for (char **key = keys; key != NULL && *key != NULL; key++) {
      g_autofree char *value = g_key_file_get_value(news, *group, *key, NULL);
      g_key_file_set_value(current, *group, *key, value);
    }
  }
  g_key_file_save_to_file(current, path, NULL);
  close(lock); /* releases the lock */
}

void
cx__probe_cache_close(cx__probe_cache *cache)
{
  if (cache == NULL)
    return;
  if (cache->dirty)
    save_news(cache->path, cache->news);
  g_key_file_unref(cache->news);
  g_key_file_unref(cache->verdicts);
  g_free(cache->path);
  g_free(cache);
}

/* What identifies this build of the file: device, inode, size, mtime, and
 * the core that judged it. */
static char *
file_identity(const char *path)
{
  struct stat st;
  if (stat(path, &st) != 0)
    return NULL;
  return g_strdup_printf("%ju:%ju:%jd:%jd.%09ld:%s", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                         (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
                         (long)st.st_mtim.tv_nsec, PACKAGE_VERSION);
}

static const char *
probe_program(void)
{
  const char *override = g_getenv("CELLEXEC_PROBE");
  return override != NULL && *override != '\0' ? override : CX_PROBE_PATH;
}

/* Run the probe on PATH: NULL if it did not crash (or could not run at
 * all), else how it died. */
static char *
run_probe(const char *path)
{
  const char *argv[] = { probe_program(), path, NULL };
  int status = 0;
  if (!g_spawn_sync(NULL, (char **)argv, NULL,
                    G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL,
                    NULL, &status, NULL))
    return NULL; /* no probe installed: load in-process, as without probing */
  if (!WIFSIGNALED(status))
    return NULL;
  int signal = WTERMSIG(status);
  if (signal == SIGALRM)
    return g_strdup("did not finish loading within 10 seconds (it hangs in its entry or init)");
  return g_strdup_printf("crashed while loading (signal %d, %s)", signal, g_strsignal(signal));
}

char *
cx__probe_plugin(cx__probe_cache *cache, const char *path)
{
  g_autofree char *identity = file_identity(path);
  if (identity == NULL)
    return NULL;
  g_autofree char *known = g_key_file_get_string(cache->verdicts, path, "identity", NULL);
  if (g_strcmp0(known, identity) == 0) {
    char *crash = g_key_file_get_string(cache->verdicts, path, "crash", NULL);
    if (crash != NULL && *crash == '\0')
      g_clear_pointer(&crash, g_free);
    return crash;
  }
  char *crash = run_probe(path);
  GKeyFile *files[] = { cache->verdicts, cache->news };
  for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
    g_key_file_set_string(files[i], path, "identity", identity);
    g_key_file_set_string(files[i], path, "crash", crash != NULL ? crash : "");
  }
  cache->dirty = TRUE;
  return crash;
}
