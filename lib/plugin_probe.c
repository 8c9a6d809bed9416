/* Probing plugins in a separate process before the host loads them, and
 * remembering the verdicts (the approach of GStreamer's plugin scanner and
 * its registry cache).  Only what takes a process down is remembered (a
 * crash, a hang, an exit): every other way a plugin can be wrong the
 * registry finds by loading it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <glib/gstdio.h>

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
cx__probe_cache_save(cx__probe_cache *cache)
{
  if (!cache->dirty)
    return;
  save_news(cache->path, cache->news);
  g_key_file_unref(cache->news);
  cache->news = g_key_file_new();
  cache->dirty = FALSE;
}

void
cx__probe_cache_close(cx__probe_cache *cache)
{
  if (cache == NULL)
    return;
  cx__probe_cache_save(cache);
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

/* The probe's last line when the plugin loaded (and its init ran) without
 * taking the process down.  Anything else is a fault. */
#define PROBE_VERDICT CX__PROBE_VERDICT "\n"

/* Read what FD (non-blocking) holds into OUTPUT; FALSE at end of file. */
static gboolean
read_available(int fd, GString *output)
{
  char buffer[4096];
  for (;;) {
    ssize_t got = read(fd, buffer, sizeof buffer);
    if (got > 0) {
      /* Only the end matters: keep the last bytes of a chatty plugin. */
      g_string_append_len(output, buffer, got);
      if (output->len > 2 * sizeof buffer)
        g_string_erase(output, 0, output->len - sizeof buffer);
      continue;
    }
    return got < 0 && (errno == EAGAIN || errno == EINTR);
  }
}

/* Run the probe on PATH: NULL if the plugin loaded in it, else what went
 * wrong.  The host enforces the time limit: the plugin cannot block or
 * reset a signal that ends it. */
static char *
run_probe(const char *path, gboolean *ran)
{
  const char *argv[] = { probe_program(), path, NULL };
  GPid pid;
  int out = -1;
  g_autoptr(GError) spawn_error = NULL;
  *ran = g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                  G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                                  NULL, &pid, NULL, &out, NULL, &spawn_error);
  if (!*ran)
    /* Fail closed: loading it unprobed would let a crash in it take the
     * host down. */
    return g_strdup_printf("it cannot be checked before loading, so it was not loaded: the "
                           "probe program cannot run (%s); reinstall cellexec, or point "
                           "CELLEXEC_PROBE at its cellexec-probe", spawn_error->message);
  fcntl(out, F_SETFL, O_NONBLOCK);
  g_autoptr(GString) output = g_string_new(NULL);
  gint64 deadline = g_get_monotonic_time() + CX__PROBE_SECONDS * G_USEC_PER_SEC;
  int status = 0;
  gboolean open_end = TRUE, exited = FALSE, hung = FALSE;
  while (!exited) {
    if (open_end)
      open_end = read_available(out, output);
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (exited)
      break;
    gint64 left = deadline - g_get_monotonic_time();
    if (left <= 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung = TRUE;
      break;
    }
    /* Woken by output, else every 20 ms to see whether it has ended (a
     * process it started may hold the pipe open). */
    struct pollfd ready = { out, POLLIN, 0 };
    poll(&ready, open_end ? 1 : 0, (int)MIN(left / 1000 + 1, 20));
  }
  if (open_end)
    read_available(out, output);
  close(out);
  g_spawn_close_pid(pid);

  if (hung)
    return g_strdup_printf("did not finish loading within %d seconds (it hangs in its entry "
                           "or init)", CX__PROBE_SECONDS);
  if (WIFSIGNALED(status))
    return g_strdup_printf("crashed while loading (signal %d, %s)", WTERMSIG(status),
                           g_strsignal(WTERMSIG(status)));
  if (!g_str_has_suffix(output->str, PROBE_VERDICT))
    return g_strdup_printf("ended the process while loading (exit status %d), before its entry "
                           "and init returned: it calls exit() or _exit()",
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return NULL;
}

/* The reason for a remembered or new verdict CRASH (what the plugin did). */
static char *
plugin_fault(const char *crash)
{
  return g_strdup_printf("it %s when loaded in a probe process, so it was not loaded here; "
                         "fix or remove the plugin (this verdict is remembered until the file "
                         "changes: if that was a passing stall of a busy machine, run "
                         "`cellexec plugins --rescan`)", crash);
}

char *
cx__probe_plugin(cx__probe_cache *cache, const char *path)
{
  g_autofree char *identity = file_identity(path);
  if (identity == NULL)
    return NULL;
  g_autofree char *known = g_key_file_get_string(cache->verdicts, path, "identity", NULL);
  if (g_strcmp0(known, identity) == 0) {
    g_autofree char *crash = g_key_file_get_string(cache->verdicts, path, "crash", NULL);
    return crash != NULL && *crash != '\0' ? plugin_fault(crash) : NULL;
  }
  gboolean ran;
  g_autofree char *crash = run_probe(path, &ran);
  if (!ran)
    return g_steal_pointer(&crash); /* not the plugin's doing: nothing to remember */
  GKeyFile *files[] = { cache->verdicts, cache->news };
  for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
    g_key_file_set_string(files[i], path, "identity", identity);
    g_key_file_set_string(files[i], path, "crash", crash != NULL ? crash : "");
  }
  cache->dirty = TRUE;
  return crash != NULL ? plugin_fault(crash) : NULL;
}

gboolean
cx_registry_forget_probes(GError **error)
{
  g_autofree char *path = cache_path();
  if (g_unlink(path) == 0 || errno == ENOENT)
    return TRUE;
  int saved = errno;
  g_set_error(error, CX_ERROR, CX_ERROR_FAILED,
              "cannot remove the plugin probe cache %s: %s; remove it by hand", path,
              g_strerror(saved));
  return FALSE;
}
