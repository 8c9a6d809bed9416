/* plugins/subprocess/worker/sandbox.c: `isolation = sandbox`.
 *
 * Applied once, in cellexec-worker's main() before Python starts, and
 * inherited by every process the fork server forks:
 *
 *   namespaces   user, mount, network, IPC, UTS (the PID namespace is each
 *                spare's own, below)
 *   filesystem   a tmpfs root with bind mounts: /usr, /bin, /sbin, /lib*,
 *                /etc read-only (secrets hidden), the directories of the
 *                files the worker has mapped (its libraries) read-only,
 *                a minimal /dev (its /dev/shm empty and read-only), the
 *                cell's cwd writable, read-only-paths / writable-paths /
 *                hidden-paths; a /proc (hidepid=invisible, what runc
 *                masks masked) that each spare's own /proc is checked
 *                against by the kernel; pivot_root, the old root detached
 *   network      none (loopback down) unless network = loopback
 *   privileges   PR_SET_NO_NEW_PRIVS, the bounding set emptied, securebits
 *                locked
 *   limits       each spare (hence each cell or session) in a cgroup of
 *                its own (v2, else v1 memory + pids): memory and process
 *                count hold for its whole tree, and the tree is killed
 *                through it when the process ends (cgroup.c); bounded by
 *                default (options.c)
 *
 * and for each spare, so for each stateless cell and each session: a PID
 * namespace of its own, the spare as its pid 2 (pid_namespace.c), and
 * before any Python runs in it (cx__worker_sandbox_confine):
 *
 *   IPC          a namespace of its own: SysV shared memory, semaphores
 *                and message queues, POSIX message queues; destroyed with
 *                it
 *   mounts       a mount namespace of its own with /proc of its PID
 *                namespace (masked), a /dev/shm and a /tmp of its own
 *                (tmpfs, bounded, charged to its cgroup), and with
 *                cwd-per-session its own directory over the cwd
 *                (private_cwd.c); all gone with the process
 *   user         with a root host, the cells' user, uid and gid 65534 on
 *                the host too: what a cell creates is never root's, and
 *                the kernel's checks for root (sysctls go by file mode for
 *                uid 0) never pass; every capability dropped
 *   Landlock     a domain of its own: no process outside it (other cells,
 *                the spares, the init) can be traced, have its memory
 *                opened through /proc, be seen in /proc or, from Linux
 *                6.12, be signalled or reached on an abstract socket
 *   seccomp      the filter (seccomp.c), also loaded by each init
 *
 * Why a PID namespace per spare rather than one for the backend and a
 * seccomp filter on the calls that take a pid: Landlock scopes ptrace,
 * signals and abstract sockets, but not prlimit, setpriority,
 * sched_setaffinity, ioprio_set or the calls still to come; all cells are
 * one user in one namespace, so a filter would have to know every such
 * call and tell a cell's own children (which it may still manage:
 * subprocess, multiprocessing) from other sessions' processes by pid,
 * which it cannot.  In a namespace of its own a cell cannot name another
 * session's process at all, and PRIO_USER or kill(-1) stop at its
 * namespace too.  What it costs: the server must know the pids it and the
 * host signal (fork() in the server returns the host's, which the spare is
 * told in STARTED), orphans go to the namespace's init (killed, with the
 * rest of the namespace, when the spare ends), and each spare mounts a
 * /proc of its own; all of it is done while the spare waits for a cell,
 * and the namespaces are made ahead of need (pid_namespace.c).
 *
 * The fork server itself stays in the host's PID namespace and runs no
 * cell code; cells cannot see it, the host, or their namespace's init
 * (another user, another Landlock domain), and an init ignores the
 * signals a cell sends it.
 *
 * Fail closed: any step that fails stops the worker with a message naming
 * the measure, and the host refuses to open the backend.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/subprocess/wire/protocol.h"
#include "plugins/subprocess/worker/worker.h"

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#endif

/* Where the new root is assembled (in the worker's own mount namespace,
 * so the host never sees it). */
#define NEW_ROOT "/mnt"
/* Where a spare assembles its own /tmp before moving it over the shared
 * one (a directory of the new root). */
#define CELL_TMP "/.cell-tmp"
/* The cells' user and group when the host is root: "nobody" and
 * "nogroup", mapped to themselves, so a file a cell creates in a writable
 * path belongs to nobody on the host as well. */
#define CELL_ID 65534

/* What a spare needs from the server to confine itself. */
static struct {
  gboolean change_user; /* the host is root: become CELL_ID */
  gboolean private_tmp; /* FALSE when the config binds the host's /tmp itself */
  int landlock;         /* the Landlock ruleset each spare restricts itself by, or -1 */
  char *tmp_options;    /* the mount options of a spare's /tmp */
  GPtrArray *tmp_entries; /* what the shared /tmp holds, a directory's name ending in '/' */
  guint64 tmp_size;     /* bytes of the spare's /tmp */
  char *shm_options;    /* the mount options of a spare's /dev/shm */
  char *cwd;
} confinement;

gboolean cx__worker_sandboxed;

/* Files under /etc no cell may read. */
static const char *const etc_secrets[] = {
  "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
  "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd", NULL
};
/* Of /proc, what runc masks (covered with something empty) and what it
 * keeps read-only: the kernel's memory, keys, timers and debug output;
 * sysctls and the interfaces of hardware. */
static const char *const proc_masked[] = {
  "/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
  "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
  "/proc/scsi", "/proc/sysrq-trigger", "/proc/kallsyms", "/proc/kmsg", NULL
};
static const char *const proc_read_only[] = {
  "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/driver", NULL
};
static const char *const system_paths[] = {
  "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", NULL
};

/* ---- the filesystem view -------------------------------------------------------- */

static gboolean
fail_errno(GError **error, const char *measure, const char *path)
{
  int saved = errno;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s: %s%s%s", measure, path ? path : "",
              path ? ": " : "", g_strerror(saved));
  return FALSE;
}

static void
make_dirs(const char *path)
{
  g_mkdir_with_parents(path, 0755);
}

/* Bind SOURCE at the same path under the new root; WRITABLE or not. */
static gboolean
bind_path(const char *source, gboolean writable, const char *measure, GError **error)
{
  gboolean device = g_str_has_prefix(source, "/dev/");
  struct stat st;
  if (stat(source, &st) < 0)
    return fail_errno(error, measure, source);
  g_autofree char *target = g_strconcat(NEW_ROOT, source, NULL);
  if (S_ISDIR(st.st_mode)) {
    make_dirs(target);
  } else {
    g_autofree char *parent = g_path_get_dirname(target);
    make_dirs(parent);
    int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0)
      close(fd);
  }
  if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
    return fail_errno(error, measure, source);
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (device ? 0 : MS_NODEV) |
                        (writable ? 0 : MS_RDONLY);
  if (mount(NULL, target, NULL, flags, NULL) < 0)
    return fail_errno(error, measure, source);
  return TRUE;
}

/* Cover PATH (below ROOT, if it exists there) with something empty. */
static gboolean
hide_path_below(const char *root, const char *path, const char *measure, GError **error)
{
  g_autofree char *target = g_strconcat(root, path, NULL);
  struct stat st;
  if (lstat(target, &st) < 0) {
    if (errno == ENOENT)
      return TRUE; /* not in the view at all: hidden already */
    return fail_errno(error, measure, path);
  }
  if (S_ISDIR(st.st_mode)) {
    if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=000") < 0)
      return fail_errno(error, measure, path);
  } else if (mount("/dev/null", target, NULL, MS_BIND, NULL) < 0) {
    return fail_errno(error, measure, path);
  }
  return TRUE;
}

static gboolean
hide_path(const char *path, const char *measure, GError **error)
{
  return hide_path_below(NEW_ROOT, path, measure, error);
}

/* Make PATH (below ROOT, if it exists there) read-only. */
static gboolean
freeze_path(const char *root, const char *path, const char *measure, GError **error)
{
  g_autofree char *target = g_strconcat(root, path, NULL);
  if (access(target, F_OK) < 0)
    return errno == ENOENT || fail_errno(error, measure, path);
  if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0 ||
      mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
                                  MS_NOEXEC, NULL) < 0)
    return fail_errno(error, measure, path);
  return TRUE;
}

/* A /proc of this process's PID namespace at ROOT/proc, showing a
 * process only to those that may trace it (hidepid=invisible), and as
 * runc leaves it to a container: see proc_masked. */
static gboolean
mount_proc(const char *root, GError **error)
{
  g_autofree char *target = g_strconcat(root, "/proc", NULL);
  if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") < 0)
    return fail_errno(error, "/proc of the cell's PID namespace", NULL);
  for (const char *const *path = proc_masked; *path != NULL; path++)
    if (!hide_path_below(root, *path, "/proc (masking)", error))
      return FALSE;
  for (const char *const *path = proc_read_only; *path != NULL; path++)
    if (!freeze_path(root, *path, "/proc (read-only parts)", error))
      return FALSE;
  return TRUE;
}

static gboolean
bind_list(JsonObject *config, const char *key, gboolean writable, const char *measure,
          GError **error)
{
  JsonArray *list = cx__peer_get_array(config, key);
  for (guint i = 0; list != NULL && i < json_array_get_length(list); i++) {
    const char *path = json_array_get_string_element(list, i);
    if (path == NULL || path[0] != '/') {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s: \"%s\" is not an absolute path",
                  measure, path ? path : "");
      return FALSE;
    }
    if (!bind_path(path, writable, measure, error))
      return FALSE;
  }
  return TRUE;
}

/* The directories of the files the worker has mapped (its own program and
 * libraries, libpython) that the system paths do not cover. */
static gboolean
bind_mapped_files(GError **error)
{
  g_autofree char *maps = NULL;
  if (!g_file_get_contents("/proc/self/maps", &maps, NULL, NULL)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "filesystem view: cannot read /proc/self/maps");
    return FALSE;
  }
  g_autoptr(GHashTable) done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_auto(GStrv) lines = g_strsplit(maps, "\n", -1);
  for (char **line = lines; *line != NULL; line++) {
    const char *path = strchr(*line, '/');
    if (path == NULL || g_str_has_suffix(path, " (deleted)"))
      continue;
    gboolean covered = FALSE;
    for (const char *const *system = system_paths; *system != NULL; system++)
      covered = covered || (g_str_has_prefix(path, *system) && path[strlen(*system)] == '/');
    if (covered)
      continue;
    char *dir = g_path_get_dirname(path);
    if (g_hash_table_contains(done, dir)) {
      g_free(dir);
      continue;
    }
    g_hash_table_add(done, dir);
    if (!bind_path(dir, FALSE, "filesystem view (the worker's libraries)", error))
      return FALSE;
  }
  return TRUE;
}

/* TRUE when PATH is /, a system path, or inside or above one: binding it
 * writable would hand cells the host's system (or, for /, everything). */
static gboolean
covers_system(const char *path)
{
  if (g_str_equal(path, "/"))
    return TRUE;
  static const char *const others[] = { "/proc", "/sys", "/dev", "/boot", "/run", NULL };
  for (int list = 0; list < 2; list++) {
    for (const char *const *system = list == 0 ? system_paths : others; *system != NULL;
         system++) {
      gsize n = strlen(*system), m = strlen(path);
      if ((g_str_has_prefix(path, *system) && (path[n] == '\0' || path[n] == '/')) ||
          (g_str_has_prefix(*system, path) && (*system)[m] == '/'))
        return TRUE;
    }
  }
  return FALSE;
}

/* Refuse a cwd or writable path that would hand cells the host's system. */
static gboolean
check_writable(JsonObject *config, const char *cwd, GError **error)
{
  if (cwd != NULL && covers_system(cwd)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "filesystem view: the cells' cwd %s would make the host's system writable; "
                "set `cwd` to a directory of the cells' own", cwd);
    return FALSE;
  }
  JsonArray *writable = cx__peer_get_array(config, "writable");
  for (guint i = 0; writable != NULL && i < json_array_get_length(writable); i++) {
    const char *path = json_array_get_string_element(writable, i);
    if (path != NULL && covers_system(path)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "writable-paths: %s would make the host's system writable", path);
      return FALSE;
    }
  }
  return TRUE;
}

/* /dev: the harmless devices only; no terminal, no /dev/pts. */
static gboolean
build_dev(GError **error)
{
  if (mkdir(NEW_ROOT "/dev", 0755) < 0 ||
      mount("tmpfs", NEW_ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755") < 0)
    return fail_errno(error, "filesystem view (/dev)", NULL);
  static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                         "/dev/urandom", NULL };
  for (const char *const *device = devices; *device != NULL; device++)
    if (!bind_path(*device, TRUE, "filesystem view (/dev)", error))
      return FALSE;
  if (symlink("/proc/self/fd", NEW_ROOT "/dev/fd") < 0 ||
      symlink("/proc/self/fd/0", NEW_ROOT "/dev/stdin") < 0 ||
      symlink("/proc/self/fd/1", NEW_ROOT "/dev/stdout") < 0 ||
      symlink("/proc/self/fd/2", NEW_ROOT "/dev/stderr") < 0 ||
      mkdir(NEW_ROOT "/dev/shm", 0755) < 0 ||
      mount("tmpfs", NEW_ROOT "/dev/shm", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=4k,mode=755") < 0)
    return fail_errno(error, "filesystem view (/dev)", NULL);
  return TRUE;
}

/* What each spare rebinds below its /tmp (private_tmp()), listed once:
 * the shared /tmp is read-only and complete when the view is built. */
static gboolean
list_shared_tmp(GError **error)
{
  confinement.tmp_options =
    g_strdup_printf("mode=1777,size=%" G_GUINT64_FORMAT, confinement.tmp_size);
  confinement.tmp_entries = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) dir = g_dir_open(NEW_ROOT "/tmp", 0, NULL);
  const char *name;
  while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
    g_autofree char *path = g_build_filename(NEW_ROOT "/tmp", name, NULL);
    struct stat st;
    if (lstat(path, &st) < 0)
      return fail_errno(error, "private /tmp", path);
    if (S_ISLNK(st.st_mode)) {
      errno = ELOOP;
      return fail_errno(error, "private /tmp", path);
    }
    g_ptr_array_add(confinement.tmp_entries, g_strconcat(name, S_ISDIR(st.st_mode) ? "/" : "",
                                                         NULL));
  }
  return dir != NULL || fail_errno(error, "private /tmp", "/tmp");
}

static gboolean
is_tmp(const char *path)
{
  g_autofree char *canonical = path != NULL ? g_canonicalize_filename(path, "/") : NULL;
  return canonical != NULL && g_str_equal(canonical, "/tmp");
}

/* TRUE when the config asks for the host's /tmp itself (as the cwd, or in
 * writable-paths or read-only-paths): then that is the cells' /tmp. */
static gboolean
binds_host_tmp(JsonObject *config, const char *cwd)
{
  if (is_tmp(cwd))
    return TRUE;
  static const char *const lists[] = { "read_only", "writable" };
  for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
    JsonArray *list = cx__peer_get_array(config, lists[l]);
    for (guint i = 0; list != NULL && i < json_array_get_length(list); i++)
      if (is_tmp(json_array_get_string_element(list, i)))
        return TRUE;
  }
  return FALSE;
}

static gboolean
build_root(JsonObject *config, const char *cwd, GError **error)
{
  if (!check_writable(config, cwd, error))
    return FALSE;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return fail_errno(error, "mount namespace (private mounts)", NULL);
  struct stat st;
  if (stat(NEW_ROOT, &st) < 0 || !S_ISDIR(st.st_mode))
    return fail_errno(error, "filesystem view (mount point " NEW_ROOT ")", NULL);
  if (mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755") < 0)
    return fail_errno(error, "filesystem view (root tmpfs)", NULL);
  /* The private /tmp before anything is bound: paths under the host's
   * /tmp (the worker's own files when built there, the cwd, the lists)
   * are bound on top of it. */
  if (mkdir(NEW_ROOT "/tmp", 01777) < 0 ||
      mount("tmpfs", NEW_ROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
    return fail_errno(error, "filesystem view (private /tmp)", NULL);
  for (const char *const *path = system_paths; *path != NULL; path++) {
    char link[4096];
    gssize n = readlink(*path, link, sizeof link - 1);
    if (n > 0) {
      link[n] = '\0';
      g_autofree char *target = g_strconcat(NEW_ROOT, *path, NULL);
      if (symlink(link, target) < 0)
        return fail_errno(error, "filesystem view", *path);
    } else if (stat(*path, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (!bind_path(*path, FALSE, "filesystem view (system, read-only)", error))
        return FALSE;
    }
  }
  if (!bind_mapped_files(error))
    return FALSE;

  if (!build_dev(error))
    return FALSE;

  if (mkdir(NEW_ROOT "/proc", 0555) < 0)
    return fail_errno(error, "filesystem view (/proc)", NULL);

  if (!bind_list(config, "read_only", FALSE, "read-only-paths", error) ||
      !bind_list(config, "writable", TRUE, "writable-paths", error))
    return FALSE;
  /* The cells' cwd, writable. */
  if (cwd != NULL && !bind_path(cwd, TRUE, "filesystem view (the cells' cwd)", error))
    return FALSE;

  for (const char *const *secret = etc_secrets; *secret != NULL; secret++)
    if (!hide_path(*secret, "hidden-paths", error))
      return FALSE;
  JsonArray *hidden = cx__peer_get_array(config, "hidden");
  for (guint i = 0; hidden != NULL && i < json_array_get_length(hidden); i++) {
    const char *path = json_array_get_string_element(hidden, i);
    if (path == NULL || path[0] != '/') {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                  "hidden-paths: \"%s\" is not an absolute path", path ? path : "");
      return FALSE;
    }
    if (!hide_path(path, "hidden-paths", error))
      return FALSE;
  }
  /* Cells get a /tmp of their own (cx__worker_sandbox_confine); the
   * shared one only holds the paths bound below it, and the parents made
   * for them, which no cell may add to. */
  confinement.private_tmp = !binds_host_tmp(config, cwd);
  if (confinement.private_tmp &&
      (mkdir(NEW_ROOT CELL_TMP, 0755) < 0 ||
       mount(NULL, NEW_ROOT "/tmp", NULL,
             MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0))
    return fail_errno(error, "filesystem view (private /tmp)", NULL);
  return !confinement.private_tmp || list_shared_tmp(error);
}

static gboolean
switch_root(GError **error)
{
  if (chdir(NEW_ROOT) < 0 || mkdir(".old-root", 0700) < 0)
    return fail_errno(error, "filesystem view (pivot_root)", NULL);
  if (syscall(SYS_pivot_root, ".", ".old-root") < 0)
    return fail_errno(error, "filesystem view (pivot_root)", NULL);
  if (chdir("/") < 0 || umount2("/.old-root", MNT_DETACH) < 0 || rmdir("/.old-root") < 0)
    return fail_errno(error, "filesystem view (detaching the host's root)", NULL);
  if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
    return fail_errno(error, "filesystem view (read-only root)", NULL);
  return TRUE;
}

/* ---- children that set up and try the view ---------------------------------- */

#define REPORT_OK "ok"

/* A child's report to its parent on FD (then closed): FAILURE's message,
 * or REPORT_OK when it is NULL. */
static void
send_report(int fd, const GError *failure)
{
  const char *text = failure != NULL ? failure->message : REPORT_OK;
  if (write(fd, text, strlen(text)) < 0)
    _exit(1);
  close(fd);
}

/* The report on FD (then closed): TRUE for REPORT_OK, else *ERROR with
 * it, or naming WHAT when the child died before it said anything. */
static gboolean
receive_report(int fd, const char *what, GError **error)
{
  g_autoptr(GString) message = g_string_new(NULL);
  char buffer[512];
  gssize n;
  while ((n = read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    g_string_append_len(message, buffer, n);
  }
  close(fd);
  if (g_str_equal(message->str, REPORT_OK))
    return TRUE;
  if (message->len == 0)
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s: the process died before it said "
                "whether it could be set up", what);
  else
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "%s", message->str);
  return FALSE;
}

/* Run STEP in a child in a PID namespace of its own and wait for it: its
 * failure, reported through a pipe, is *ERROR (WHAT names it when the
 * child died without a word). */
static gboolean
run_in_child(gboolean (*step)(GError **error), const char *what, GError **error)
{
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) < 0)
    return fail_errno(error, what, NULL);
  pid_t pid = cx__worker_fork_in_new_namespace(fork, error);
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return FALSE;
  }
  if (pid == 0) {
    close(pipe_fds[0]);
    g_autoptr(GError) failure = NULL;
    step(&failure);
    send_report(pipe_fds[1], failure);
    _exit(0);
  }
  close(pipe_fds[1]);
  gboolean ok = receive_report(pipe_fds[0], what, error);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  cx__worker_pid_namespace_release(pid);
  return ok;
}

/* The view's /proc, before pivot_root: the mount every spare's own /proc
 * is checked against (the kernel lets a user namespace mount a proc only
 * where one is fully visible already), masked once here.  Mounted by a
 * child in a PID namespace of its own, for the server's is the host's,
 * which only the host's root may mount. */
static gboolean
mount_view_proc(GError **error)
{
  return mount_proc(NEW_ROOT, error);
}

/* ---- privileges ----------------------------------------------------------------- */

/* Every capability dropped.  The fork server KEEP_CAPABILITIES of its
 * user namespace (it is outside the cells' PID namespace and runs no cell
 * code): a spare needs them to mount its /tmp and become the cells' user
 * before it drops them all (drop_capabilities()).  The bounding set goes
 * either way, and the securebits are locked so that no execve gives
 * capabilities back and changing to a uid other than 0 clears them. */
static gboolean
drop_capabilities(GError **error)
{
  struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct data[2] = { { 0 } };
  if (syscall(SYS_capset, &header, data) < 0)
    return fail_errno(error, "dropping capabilities", NULL);
  return TRUE;
}

gboolean
cx__worker_drop_privileges(gboolean keep_capabilities, GError **error)
{
  for (int cap = 0; cap <= 63; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
      return fail_errno(error, "dropping capabilities (bounding set)", NULL);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED) < 0)
    return fail_errno(error, "dropping capabilities (securebits)", NULL);
  if (!keep_capabilities && !drop_capabilities(error))
    return FALSE;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return fail_errno(error, "PR_SET_NO_NEW_PRIVS", NULL);
  return TRUE;
}

/* ---- network ---------------------------------------------------------------------- */

static gboolean
loopback_up(GError **error)
{
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq request = { 0 };
  g_strlcpy(request.ifr_name, "lo", IFNAMSIZ);
  gboolean ok = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  request.ifr_flags |= IFF_UP | IFF_RUNNING;
  ok = ok && ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  int saved = errno;
  if (fd >= 0)
    close(fd);
  errno = saved;
  return ok || fail_errno(error, "network = loopback (bringing up lo)", NULL);
}

static gboolean
write_file(const char *path, const char *text)
{
  return g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_NONE, 0, NULL);
}

/* ---- the user namespace ---------------------------------------------------------- */

/* Map this process's user namespace.  Not root: itself as 0 (an
 * unprivileged user may map only its own ids).  Root: 0 as root (the
 * server needs it for the cgroups and the view) and CELL_ID as itself,
 * for the cells; a process may not write a map of two ids for its own
 * namespace, so a child left in the host's namespace writes it. */
static gboolean
enter_user_namespace(GError **error)
{
  /* Not CLONE_NEWPID: each spare gets a PID namespace of its own
   * (pid_namespace.c). */
  int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!confinement.change_user) {
    g_autofree char *uid_map = g_strdup_printf("0 %u 1\n", (unsigned)getuid());
    g_autofree char *gid_map = g_strdup_printf("0 %u 1\n", (unsigned)getgid());
    if (unshare(flags) < 0)
      return fail_errno(error, "namespaces (user, mount, network, IPC, UTS)", NULL);
    if (!write_file("/proc/self/setgroups", "deny") ||
        !write_file("/proc/self/uid_map", uid_map) || !write_file("/proc/self/gid_map", gid_map)) {
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "user namespace: cannot map the user");
      return FALSE;
    }
    return TRUE;
  }
  int go[2];
  if (pipe2(go, O_CLOEXEC) < 0)
    return fail_errno(error, "user namespace", NULL);
  pid_t parent = getpid();
  pid_t mapper = fork();
  if (mapper < 0) {
    int saved = errno;
    close(go[0]);
    close(go[1]);
    errno = saved;
    return fail_errno(error, "user namespace", NULL);
  }
  if (mapper == 0) {
    close(go[1]);
    char byte;
    if (read(go[0], &byte, 1) != 1)
      _exit(1);
    g_autofree char *dir = g_strdup_printf("/proc/%d", (int)parent);
    g_autofree char *map = g_strdup_printf("0 0 1\n%d %d 1\n", CELL_ID, CELL_ID);
    g_autofree char *uid_path = g_build_filename(dir, "uid_map", NULL);
    g_autofree char *gid_path = g_build_filename(dir, "gid_map", NULL);
    _exit(write_file(uid_path, map) && write_file(gid_path, map) ? 0 : 1);
  }
  close(go[0]);
  int saved = 0;
  if (unshare(flags) < 0)
    saved = errno;
  gboolean told = saved == 0 && write(go[1], "m", 1) == 1;
  close(go[1]);
  int status = 0;
  while (waitpid(mapper, &status, 0) < 0 && errno == EINTR)
    ;
  if (saved != 0) {
    errno = saved;
    return fail_errno(error, "namespaces (user, mount, network, IPC, UTS)", NULL);
  }
  if (!told || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || setresgid(0, 0, 0) < 0 ||
      setresuid(0, 0, 0) < 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "user namespace: cannot map root and the cells' user (uid %d)", CELL_ID);
    return FALSE;
  }
  return TRUE;
}

/* ---- Landlock ---------------------------------------------------------------------- */

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

/* The ruleset attributes as of Landlock ABI 6 (Linux 6.12); older kernels
 * take a prefix of it. */
struct landlock_attr {
  guint64 handled_access_fs;
  guint64 handled_access_net;
  guint64 scoped;
};

/* Landlock's ABI version, or 0 when the kernel has none (or disabled). */
static int
landlock_abi(void)
{
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? (int)abi : 0;
}

/* The ruleset of every spare's Landlock domain (confinement.landlock),
 * made once: it handles one right (making block devices, which no cell
 * may do anyway) and allows it nowhere, for the domain is what counts:
 * the kernel lets no process in it trace, open the memory of, or (with
 * hidepid) see a process outside it, and from ABI 6 signal one or reach
 * its abstract sockets.  -1 without Landlock. */
static gboolean
prepare_landlock(GError **error)
{
  confinement.landlock = -1;
  int abi = landlock_abi();
  if (abi == 0)
    return TRUE;
  struct landlock_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK };
  gsize size = sizeof attr.handled_access_fs;
  if (abi >= 6) {
    attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
    size = sizeof attr;
  }
  confinement.landlock = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  return confinement.landlock >= 0 || fail_errno(error, "Landlock (ruleset)", NULL);
}

/* A Landlock domain of this process's own.  Without Landlock the process
 * is made non-dumpable, which does as much for it but not for the
 * programs it executes.  (The ruleset's descriptor goes with the others
 * a spare closes before any cell runs.) */
static gboolean
enter_landlock_domain(GError **error)
{
  if (confinement.landlock < 0)
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 || fail_errno(error, "non-dumpable", NULL);
  return syscall(SYS_landlock_restrict_self, confinement.landlock, 0) == 0 ||
         fail_errno(error, "Landlock (domain)", NULL);
}

/* ---- entry ---------------------------------------------------------------------- */

gboolean
cx__worker_sandbox_enter(const char *spec, GPtrArray *measures, GError **error)
{
  g_autoptr(JsonNode) root = cx_json_from_string(spec, -1, NULL);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "the sandbox description is not a JSON object");
    return FALSE;
  }
  JsonObject *config = json_node_get_object(root);
  gboolean loopback = g_strcmp0(cx__peer_get_string(config, "network",
                                                                           "none"), "loopback") == 0;
  guint64 memory = MAX(cx__peer_get_int(config, "memory", 0), 0);
  guint64 processes = MAX(cx__peer_get_int(config, "processes", 0), 0);
  g_autofree char *cwd = g_strdup(cx__peer_get_string(config, "cwd", NULL));
  if (cwd == NULL)
    cwd = g_get_current_dir();

  if (!cx__worker_cgroups_open(memory, processes, measures, error))
    return FALSE;

  if (!cx__worker_seccomp_prepare(error) || !prepare_landlock(error))
    return FALSE;
  confinement.change_user = getuid() == 0;
  /* By default half the memory limit for /tmp and a quarter for /dev/shm
   * (options.c): full, they are an OSError (ENOSPC) the cell can handle,
   * not a kill by the cgroup their pages are charged to. */
  confinement.tmp_size = MAX(cx__peer_get_int(config, "tmp_size", 0), 0);
  if (confinement.tmp_size == 0)
    confinement.tmp_size = memory > 0 ? memory / 2 : 256 * 1024 * 1024;
  gint64 shm_size = cx__peer_get_int(config, "shm_size", 0);
  confinement.shm_options = g_strdup_printf(
    "mode=1777,size=%" G_GUINT64_FORMAT,
    shm_size > 0 ? (guint64)shm_size : memory > 0 ? memory / 4 : 64 * 1024 * 1024);
  confinement.cwd = g_strdup(cwd);
  if (!enter_user_namespace(error))
    return FALSE;
  g_ptr_array_add(measures, g_strdup("user-namespace"));
  if (confinement.change_user)
    g_ptr_array_add(measures, g_strdup("cells-user-nobody"));
  g_ptr_array_add(measures, g_strdup("mount-namespace"));
  g_ptr_array_add(measures, g_strdup("pid-namespace"));
  g_ptr_array_add(measures, g_strdup("pid-namespace-per-cell"));
  g_ptr_array_add(measures, g_strdup("network-namespace"));
  g_ptr_array_add(measures, g_strdup("ipc-namespace"));
  g_ptr_array_add(measures, g_strdup("ipc-namespace-per-cell"));
  g_ptr_array_add(measures, g_strdup("private-shm"));
  g_ptr_array_add(measures, g_strdup("uts-namespace"));
  if (sethostname("cellexec", 8) < 0)
    return fail_errno(error, "UTS namespace (hostname)", NULL);
  if (loopback && !loopback_up(error))
    return FALSE;
  g_ptr_array_add(measures, g_strdup(loopback ? "network-loopback" : "network-none"));

  if (!build_root(config, cwd, error) || !cx__worker_pid_namespaces_start(error) ||
      !run_in_child(mount_view_proc, "/proc of the view", error) || !switch_root(error))
    return FALSE;
  if (chdir(cwd) < 0)
    return fail_errno(error, "filesystem view (the cells' cwd)", cwd);
  g_ptr_array_add(measures, g_strdup("filesystem-view"));
  g_ptr_array_add(measures, g_strdup("private-proc"));
  g_ptr_array_add(measures, g_strdup("proc-masked"));
  if (confinement.private_tmp)
    g_ptr_array_add(measures, g_strdup("private-tmp"));

  if (!cx__worker_drop_privileges(TRUE, error))
    return FALSE;
  g_ptr_array_add(measures, g_strdup("no-new-privs"));
  g_ptr_array_add(measures, g_strdup("capabilities-dropped"));
  cx__worker_sandboxed = TRUE;
  /* Confine a child as every spare will: a measure that cannot be had
   * fails opening the backend, naming it, instead of every cell later. */
  if (!run_in_child(cx__worker_sandbox_confine, "a cell's confinement", error))
    return FALSE;
  g_ptr_array_add(measures, g_strdup(confinement.landlock >= 0 ? "landlock-domain" : "non-dumpable"));
  g_ptr_array_add(measures, g_strdup("seccomp"));
  return TRUE;
}

/* ---- each spare ------------------------------------------------------------------ */

/* A tmpfs of the spare's own over the shared /tmp, with the paths bound
 * below the shared one (the cwd, the worker's libraries when they live
 * there: confinement.tmp_entries) bound again below it.  Its pages are
 * charged to the cgroup of the process that writes them, the cell's. */
static gboolean
private_tmp(GError **error)
{
  if (mount("tmpfs", CELL_TMP, "tmpfs", MS_NOSUID | MS_NODEV, confinement.tmp_options) < 0)
    return fail_errno(error, "private /tmp", NULL);
  for (guint i = 0; i < confinement.tmp_entries->len; i++) {
    const char *name = g_ptr_array_index(confinement.tmp_entries, i);
    gboolean dir = g_str_has_suffix(name, "/");
    g_autofree char *source = g_build_filename("/tmp", name, NULL);
    g_autofree char *target = g_build_filename(CELL_TMP, name, NULL);
    int fd = -1;
    gboolean ok = dir ? mkdir(target, 0755) == 0
                      : (fd = open(target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0 &&
                          close(fd) == 0;
    if (!ok || mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
      return fail_errno(error, "private /tmp", source);
  }
  if (mount(CELL_TMP, "/tmp", NULL, MS_MOVE, NULL) < 0)
    return fail_errno(error, "private /tmp", NULL);
  return TRUE;
}

/* The spare's own mounts and IPC, in namespaces of its own that go with
 * it: /proc of its PID namespace, /dev/shm, /tmp, and with
 * cwd-per-session its own directory at the cells' cwd, so that it sees
 * no other's (private_cwd.c).  SysV IPC objects and POSIX message queues
 * live in the IPC namespace, and are destroyed with it. */
static gboolean
private_mounts(GError **error)
{
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC) < 0)
    return fail_errno(error, "the cell's mount and IPC namespaces", NULL);
  if (!mount_proc("", error))
    return FALSE;
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, confinement.shm_options) < 0)
    return fail_errno(error, "private /dev/shm", NULL);
  if (confinement.private_tmp && !private_tmp(error))
    return FALSE;
  const char *own_cwd = cx__worker_private_cwd();
  if (own_cwd != NULL && mount(own_cwd, confinement.cwd, NULL, MS_BIND | MS_REC, NULL) < 0)
    return fail_errno(error, "cwd-per-session", own_cwd);
  /* The cwd again, through the new mounts. */
  if (chdir(confinement.cwd) < 0)
    return fail_errno(error, "filesystem view (the cells' cwd)", confinement.cwd);
  return TRUE;
}

static const char *cells_home; /* set by cx__worker_sandbox_confine() */

const char *
cx__worker_sandbox_home(void)
{
  return cells_home;
}

gboolean
cx__worker_sandbox_confine(GError **error)
{
  if (!cx__worker_sandboxed)
    return TRUE;
  if (!private_mounts(error))
    return FALSE;
  if (confinement.change_user &&
      (setgroups(0, NULL) < 0 || setresgid(CELL_ID, CELL_ID, CELL_ID) < 0 ||
       setresuid(CELL_ID, CELL_ID, CELL_ID) < 0))
    return fail_errno(error, "the cells' user (uid and gid 65534)", NULL);
  /* A home the cells can write, where programs keep their config and
   * caches (matplotlib, IPython, pip): the host's is read-only here, or
   * not theirs.  Their own /tmp, so nothing in it outlives the process. */
  const char *home = getenv("HOME");
  cells_home = confinement.private_tmp && (home == NULL || access(home, W_OK) != 0)
                 ? "/tmp" : NULL;
  return drop_capabilities(error) && enter_landlock_domain(error) &&
         cx__worker_seccomp_load(error);
}
