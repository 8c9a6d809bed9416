/* tests/test_sandbox_sessions.c: the sessions and stateless cells of one
 * sandboxed backend (one fork server) kept from each other: IPC (POSIX
 * and SysV shared memory, message queues), the calls that take another
 * process's pid, the cwd as sys.path[0]; and the bounds a sandboxed cell
 * has by default.  Each isolation test shows the attack working with
 * isolation = none (or the shared cwd) before the sandbox must stop it
 * (tests/sandbox_probe.h). */
#define _GNU_SOURCE
#include "config.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cx_test.h"
#include "tests/sandbox_probe.h"

/* The victim's code below prints "NAME SECRET": what it left where NAME
 * says.  A probe prints ALLOWED when it read SECRET back. */
#define SECRET_CODE "secret = 'cx-secret-' + os.urandom(6).hex()\n"

/* PRINTED: "PATH SECRET" in /dev/shm. */
static char *
posix_shm_probe(const char *printed, const char *pids)
{
  g_auto(GStrv) parts = g_strsplit(printed, " ", 2);
  if (g_strv_length(parts) != 2)
    return NULL;
  return g_strdup_printf("import os\n"
                         "try:\n"
                         "    found = open('%s').read()\n"
                         "    os.unlink('%s')\n"
                         "    print('ALLOWED' if found == '%s' else 'DENIED (other bytes)')\n"
                         "except OSError as e:\n"
                         "    print('DENIED', e)\n",
                         parts[0], parts[0], parts[1]);
}

/* /dev/shm (shm_open, multiprocessing.shared_memory) is a session's own. */
static void
test_sessions_share_no_posix_shared_memory(void)
{
  cx_test_sandbox_check_across_sessions(
    NULL, NULL,
    "import os\n" SECRET_CODE
    "path = '/dev/shm/cx-test-%d' % os.getpid()\n"
    "open(path, 'w').write(secret)\n"
    "print(path, secret)\n",
    posix_shm_probe, NULL);
}

/* The libc calls the SysV and message queue probes make through ctypes. */
#define LIBC_CODE                                                                         \
  "import ctypes, os\n"                                                                   \
  "libc = ctypes.CDLL(None, use_errno=True)\n"                                            \
  "libc.shmat.restype = ctypes.c_void_p\n"                                                \
  "libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n"

/* PRINTED: "KEY SECRET": a SysV segment of that key holds SECRET. */
static char *
sysv_shm_probe(const char *printed, const char *pids)
{
  g_auto(GStrv) parts = g_strsplit(printed, " ", 2);
  if (g_strv_length(parts) != 2)
    return NULL;
  return g_strdup_printf(LIBC_CODE
                         "shmid = libc.shmget(%s, 0, 0)\n"
                         "if shmid < 0:\n"
                         "    print('DENIED', os.strerror(ctypes.get_errno()))\n"
                         "else:\n"
                         "    found = ctypes.string_at(libc.shmat(shmid, None, 0), %d)\n"
                         "    libc.shmctl(shmid, 0, None)  # IPC_RMID\n"
                         "    print('ALLOWED' if found == b'%s' else 'DENIED (other bytes)')\n",
                         parts[0], (int)strlen(parts[1]), parts[1]);
}

/* SysV shared memory (shmget) is a session's own. */
static void
test_sessions_share_no_sysv_shared_memory(void)
{
  cx_test_sandbox_check_across_sessions(
    NULL, NULL,
    LIBC_CODE SECRET_CODE
    "key = 0x63780000 + os.getpid() % 0xffff\n"
    "shmid = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600\n"
    "assert shmid >= 0, os.strerror(ctypes.get_errno())\n"
    "ctypes.memmove(libc.shmat(shmid, None, 0), secret.encode(), len(secret))\n"
    "print(key, secret)\n",
    sysv_shm_probe, NULL);
}

/* PRINTED: "NAME SECRET": the POSIX message queue NAME holds SECRET. */
static char *
message_queue_probe(const char *printed, const char *pids)
{
  g_auto(GStrv) parts = g_strsplit(printed, " ", 2);
  if (g_strv_length(parts) != 2)
    return NULL;
  return g_strdup_printf(LIBC_CODE
                         "queue = libc.mq_open(b'%s', os.O_RDONLY | os.O_NONBLOCK)\n"
                         "if queue < 0:\n"
                         "    print('DENIED', os.strerror(ctypes.get_errno()))\n"
                         "else:\n"
                         "    buffer = ctypes.create_string_buffer(65536)\n"
                         "    n = libc.mq_receive(queue, buffer, 65536, None)\n"
                         "    libc.mq_unlink(b'%s')\n"
                         "    print('ALLOWED' if buffer.raw[:max(n, 0)] == b'%s' else 'DENIED')\n",
                         parts[0], parts[0], parts[1]);
}

/* POSIX message queues (mq_open) are a session's own. */
static void
test_sessions_share_no_message_queues(void)
{
  cx_test_sandbox_check_across_sessions(
    NULL, NULL,
    LIBC_CODE SECRET_CODE
    "name = b'/cx-test-%d' % os.getpid()\n"
    "queue = libc.mq_open(name, os.O_CREAT | os.O_WRONLY, 0o600, None)\n"
    "assert queue >= 0, os.strerror(ctypes.get_errno())\n"
    "assert libc.mq_send(queue, secret.encode(), len(secret), 0) == 0\n"
    "print(name.decode(), secret)\n",
    message_queue_probe, NULL);
}

/* Lower RLIMIT_NOFILE of the process PIDS name to 4, and lower its
 * priority (PRINTED says which isolation the victim found).  With the sandbox it tries every pid its namespace could
 * name (a bounded scan) as an attacker would; without, only the victim's,
 * for the host's other processes are the tests' own. */
static char *
resource_probe(const char *printed, const char *pids)
{
  g_autofree char *set = g_strdelimit(g_strdup(pids), " ", ',');
  return g_strdup_printf(
    "import os, resource\n"
    "targets = {%s}\n"
    "if %s:\n"
    "    targets |= set(range(1, 65536))\n"
    "hit = []\n"
    /* Its own threads and its namespace's init are its own business. */
    "own = {1} | {int(task) for task in os.listdir('/proc/self/task')}\n"
    "for pid in sorted(targets - own):\n"
    "    try:\n"
    "        resource.prlimit(pid, resource.RLIMIT_NOFILE, (4, 4))\n"
    "        os.setpriority(os.PRIO_PROCESS, pid, 19)\n"
    "        hit.append(pid)\n"
    "    except OSError:\n"
    "        pass\n"
    "print('ALLOWED' if hit else 'DENIED', hit[:8])\n",
    set, g_str_equal(printed, "sandbox") ? "True" : "False");
}

/* What the victim's session sees after the probe: ALLOWED when its
 * limits were changed from outside. */
#define RESOURCES_AFTER                                                                     \
  "import os, resource\n"                                                                   \
  "changed = resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 4 or os.getpriority(os.PRIO_PROCESS, 0) == 19\n" \
  "print('ALLOWED' if changed else 'DENIED')\n"

/* prlimit() and setpriority() on another session's process (the cells of
 * one backend are one user) do not reach it; and the spares waiting for
 * the next cells are out of reach too (a stateless cell after it runs). */
static void
test_sessions_cannot_set_each_others_limits(void)
{
  cx_test_sandbox_check_across_sessions(
    NULL, NULL,
    "import os, resource\n"
    /* In the sandbox the server is outside the cell's PID namespace. */
    "print('sandbox' if os.getppid() == 0 else 'none')\n",
    resource_probe, RESOURCES_AFTER);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *scan = resource_probe("sandbox", "1 1");
  g_autofree char *scanned = cx_test_sandbox_probe(backend, scan);
  CU_ASSERT_TRUE(g_str_has_prefix(scanned, "DENIED"));
  g_autofree char *next = cx_test_sandbox_probe(backend, RESOURCES_AFTER);
  CU_ASSERT_STRING_EQUAL(next, "DENIED");
}

/* The module a cell of one session leaves in its cwd, which is
 * sys.path[0]; the probe imports it in another. */
#define PLANT_MODULE                                                                        \
  "open('colorsys.py', 'w').write('planted = True\\n')\n"                                     \
  "print('planted')\n"
#define IMPORT_MODULE                                                                       \
  "import colorsys\n"                                                                        \
  "print('ALLOWED' if getattr(colorsys, 'planted', False) else 'DENIED', colorsys.__file__)\n"

/* Plant the module in one session of a backend opened with isolation
 * MODE, cwd CWD and cwd-per-session PER_SESSION; import it in another:
 * what that says. */
static char *
import_across_sessions(const char *mode, const char *cwd, const char *per_session)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_test_sandbox_open(mode, &error, "cwd", cwd,
                                                       "cwd-per-session", per_session, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  if (backend == NULL)
    return g_strdup("FAILED to open");
  g_autoptr(cx_session) planter = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) planted = cx_session_run_cell(planter, PLANT_MODULE, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  CU_ASSERT_TRUE(planted != NULL && cx_result_get_success(planted));
  g_autoptr(cx_session) importer = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) imported = cx_session_run_cell(importer, IMPORT_MODULE, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  gsize len = 0;
  const char *out = imported != NULL ? cx_result_get_stdout(imported, &len) : "";
  return g_strstrip(g_strndup(out, len));
}

/* The shared cwd is a shared sys.path[0]: with cwd-per-session, another
 * session imports the standard module, with and without the sandbox. */
static void
test_sessions_private_cwd_keeps_modules_apart(void)
{
  static const char *const modes[] = { "none", "sandbox" };
  for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
    g_autofree char *shared_cwd = cx_test_tmpdir();
    g_autofree char *shared = import_across_sessions(modes[i], shared_cwd, "false");
    CU_ASSERT_TRUE(g_str_has_prefix(shared, "ALLOWED"));
    g_autofree char *own_cwd = cx_test_tmpdir();
    g_autofree char *own = import_across_sessions(modes[i], own_cwd, "true");
    if (!g_str_has_prefix(own, "DENIED"))
      g_printerr("\n  isolation = %s, cwd-per-session: %s\n", modes[i], own);
    CU_ASSERT_TRUE(g_str_has_prefix(own, "DENIED"));
    /* Both directories went with their sessions. */
    g_autoptr(GDir) dir = g_dir_open(own_cwd, 0, NULL);
    CU_ASSERT_PTR_NULL(dir != NULL ? g_dir_read_name(dir) : NULL);
  }
}

/* In the sandbox a session cannot reach another's directory at all: it
 * sees its own at the cwd's place, and nothing of the others'. */
static void
test_sessions_cannot_reach_each_others_cwd(void)
{
  g_autofree char *cwd = cx_test_tmpdir();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend = cx_test_sandbox_open("sandbox", &error, "cwd", cwd,
                                                       "cwd-per-session", "true", NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_session) victim = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) planted =
    cx_session_run_cell(victim, "open('secret.txt', 'w').write('mine')", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  /* The host sees it in a directory of the victim's under the cwd (the
   * spares waiting for cells have theirs). */
  g_autoptr(GDir) dir = g_dir_open(cwd, 0, NULL);
  g_autofree char *name = NULL, *secret = NULL;
  const char *entry;
  while (secret == NULL && dir != NULL && (entry = g_dir_read_name(dir)) != NULL) {
    g_autofree char *path = g_build_filename(cwd, entry, "secret.txt", NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS)) {
      name = g_strdup(entry);
      secret = g_steal_pointer(&path);
    }
  }
  CU_ASSERT_PTR_NOT_NULL_FATAL(secret);
  g_autofree char *code = g_strdup_printf(
    "import os\n"
    "found = [p for p in ('%s', '%s/%s', 'secret.txt') if os.path.exists(p)]\n"
    "found += [n for n in os.listdir('%s') if n == '%s']\n"
    "print('ALLOWED' if found else 'DENIED', found)\n",
    secret, cwd, name, cwd, name);
  g_autoptr(cx_session) prober = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) probed = cx_session_run_cell(prober, code, NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  gsize len = 0;
  const char *out = probed != NULL ? cx_result_get_stdout(probed, &len) : "";
  CU_ASSERT_TRUE(g_str_has_prefix(out, "DENIED"));
  if (!g_str_has_prefix(out, "DENIED"))
    g_printerr("\n  %.*s", (int)len, out);
  g_autofree char *stateless = cx_test_sandbox_probe(backend, code);
  CU_ASSERT_TRUE(g_str_has_prefix(stateless, "DENIED"));
}

/* keep-session-cwd leaves the directory when the session ends. */
static void
test_sessions_private_cwd_can_be_kept(void)
{
  g_autofree char *cwd = cx_test_tmpdir();
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(
      "none", &error, "cwd", cwd, "cwd-per-session", "true", "keep-session-cwd", "true");
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_session) session = cx_session_open(backend, &error);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(cx_result) wrote =
      cx_session_run_cell(session, "open('kept.txt', 'w').write('x')", NULL, &error);
    CX_ASSERT_NO_ERROR(error);
  }
  g_autoptr(GDir) dir = g_dir_open(cwd, 0, NULL);
  gboolean kept = FALSE;
  const char *name;
  while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
    g_autofree char *file = g_build_filename(cwd, name, "kept.txt", NULL);
    kept = kept || g_file_test(file, G_FILE_TEST_EXISTS);
  }
  CU_ASSERT_TRUE(kept);
}

/* ---- bounds by default ---------------------------------------------------- */

/* A sandboxed cell with nothing configured forks at most the default
 * number of processes (256).  The test's own cap: 600 forks at most, each
 * child gone with the cell (its cgroup is killed). */
static void
test_sandbox_bounds_processes_by_default(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *out =
    cx_test_sandbox_probe(backend, CX_TEST_FORK_SLEEPERS(600) "print(len(children))\n");
  gint64 forked = g_ascii_strtoll(out, NULL, 10);
  CU_ASSERT_TRUE(forked > 0 && forked < 256);
  if (!(forked > 0 && forked < 256))
    g_printerr("\n  forked: %s\n", out);
}

/* What a sandboxed cell has by default: RLIMIT_NOFILE 4096 (hard too), a
 * /tmp of half and a /dev/shm of a quarter of the default memory limit
 * (1 GiB); tmp-size, shm-size and max-open-files override them. */
static void
test_sandbox_bounds_files_by_default(void)
{
  static const char *const code =
    "import os, resource\n"
    "size = lambda p: os.statvfs(p).f_blocks * os.statvfs(p).f_frsize >> 20\n"
    "print(resource.getrlimit(resource.RLIMIT_NOFILE)[1], size('/tmp'), size('/dev/shm'))\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) defaults =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *bounds = cx_test_sandbox_probe(defaults, code);
  CU_ASSERT_STRING_EQUAL(bounds, "4096 512 256");
  g_autoptr(cx_backend) configured = cx_test_sandbox_open(
    "sandbox", &error, "max-open-files", "100", "tmp-size", "8M", "shm-size", "4M");
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *set = cx_test_sandbox_probe(configured, code);
  CU_ASSERT_STRING_EQUAL(set, "100 8 4");
}

/* The default memory bound is the cell's cgroup's: a cell that touches
 * 1.5 GiB is stopped (by the kernel's OOM killer: WorkerCrashed). */
static void
test_sandbox_bounds_memory_by_default(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *out =
    cx_test_sandbox_probe(backend, "data = b'x' * (1536 << 20)\nprint('allocated')\n");
  CU_ASSERT_TRUE(g_str_has_prefix(out, "FAILED WorkerCrashed"));
  if (!g_str_has_prefix(out, "FAILED WorkerCrashed"))
    g_printerr("\n  %s\n", out);
}

/* A fork server whose maker of PID namespaces is gone could fork no more
 * spares, and every cell after the last spare would fail: it ends, and the
 * next call gets a new server. */
static void
test_sandbox_server_without_its_maker_is_replaced(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  pid_t server = (pid_t)json_object_get_int_member(json_node_get_object(info), "server_pid");
  pid_t maker = (pid_t)cx_test_sandbox_child_named(server, "cellexec-pidns");
  CU_ASSERT_NOT_EQUAL_FATAL(maker, 0);
  CU_ASSERT_EQUAL(kill(maker, SIGKILL), 0);
  /* The server ends (bounded: 20 s); the host has it then as a zombie. */
  g_autofree char *stat_path = g_strdup_printf("/proc/%d/stat", server);
  gboolean ended = FALSE;
  for (int i = 0; i < 200 && !ended; i++) {
    g_autofree char *stat = NULL;
    ended = !g_file_get_contents(stat_path, &stat, NULL, NULL) || strstr(stat, ") Z ") != NULL;
    if (!ended)
      g_usleep(100 * 1000);
  }
  CU_ASSERT_TRUE(ended);
  for (int i = 0; i < 8; i++) {
    g_autofree char *out = cx_test_sandbox_probe(backend, "print('ran')");
    CU_ASSERT_STRING_EQUAL(out, "ran");
  }
}

/* keep-session-cwd means nothing without cwd-per-session: refused. */
static void
test_sessions_keep_cwd_needs_cwd_per_session(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("none", &error, "keep-session-cwd", "true", NULL, NULL, NULL, NULL);
  CU_ASSERT_PTR_NULL(backend);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, "keep-session-cwd applies with cwd-per-session = true");
}

void
cx_test_register(void)
{
  static const cx_test_case cases[] = {
    { "test_sessions_share_no_posix_shared_memory", test_sessions_share_no_posix_shared_memory },
    { "test_sessions_share_no_sysv_shared_memory", test_sessions_share_no_sysv_shared_memory },
    { "test_sessions_share_no_message_queues", test_sessions_share_no_message_queues },
    { "test_sessions_cannot_set_each_others_limits", test_sessions_cannot_set_each_others_limits },
    { "test_sessions_private_cwd_keeps_modules_apart",
      test_sessions_private_cwd_keeps_modules_apart },
    { "test_sessions_cannot_reach_each_others_cwd", test_sessions_cannot_reach_each_others_cwd },
    { "test_sessions_private_cwd_can_be_kept", test_sessions_private_cwd_can_be_kept },
    { "test_sessions_keep_cwd_needs_cwd_per_session",
      test_sessions_keep_cwd_needs_cwd_per_session },
    { "test_sandbox_server_without_its_maker_is_replaced",
      test_sandbox_server_without_its_maker_is_replaced },
    { "test_sandbox_bounds_processes_by_default", test_sandbox_bounds_processes_by_default },
    { "test_sandbox_bounds_files_by_default", test_sandbox_bounds_files_by_default },
    { "test_sandbox_bounds_memory_by_default", test_sandbox_bounds_memory_by_default },
    { NULL }
  };
  cx_test_add_suite("subprocess sandbox: sessions apart, bounded", cases);
}
