/* tests/test_sandbox_sessions.c: the sessions and stateless cells of one
 * sandboxed backend (one fork server) kept from each other: IPC (POSIX
 * and SysV shared memory, message queues), the calls that take another
 * process's pid; and the bounds a sandboxed cell has by default.  Each
 * isolation test shows the attack working with isolation = none before
 * the sandbox must stop it (tests/sandbox_probe.h). */
#define _GNU_SOURCE
#include "config.h"

#include <glib/gstdio.h>
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

void
cx_test_register(void)
{
  static const cx_test_case cases[] = {
    { "test_sessions_share_no_posix_shared_memory", test_sessions_share_no_posix_shared_memory },
    { "test_sessions_share_no_sysv_shared_memory", test_sessions_share_no_sysv_shared_memory },
    { "test_sessions_share_no_message_queues", test_sessions_share_no_message_queues },
    { "test_sessions_cannot_set_each_others_limits", test_sessions_cannot_set_each_others_limits },
    { "test_sandbox_bounds_processes_by_default", test_sandbox_bounds_processes_by_default },
    { "test_sandbox_bounds_files_by_default", test_sandbox_bounds_files_by_default },
    { "test_sandbox_bounds_memory_by_default", test_sandbox_bounds_memory_by_default },
    { NULL }
  };
  cx_test_add_suite("subprocess sandbox: sessions apart, bounded", cases);
}
