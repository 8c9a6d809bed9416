/* tests/test_sandbox_escapes.c: ways out of `isolation = sandbox` that
 * an attacker's cell tries, each shown to work with isolation = none
 * before the sandbox must stop it (tests/sandbox_probe.h).  Beside
 * tests/test_sandbox.c, which covers the measures one by one. */
#define _GNU_SOURCE
#include "config.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <linux/landlock.h>
#include <unistd.h>

#include "cx_test.h"
#include "tests/sandbox_probe.h"

/* The kernel checks a sysctl write by the file's mode for uid 0, whatever
 * the capabilities: a cell that is root on the host may write the host's
 * sysctls.  The probe writes back the value it read. */
static void
test_escape_no_host_sysctl_write(void)
{
  if (geteuid() != 0) {
    cx_test_skip("without root, no cell may write a sysctl anyway");
    return;
  }
  cx_test_sandbox_check_both(
    "done = []\n"
    "path = '/proc/sys/kernel/printk_ratelimit_burst'\n"
    "try:\n"
    "    value = open(path).read()\n"
    "    with open(path, 'w') as f:\n"
    "        f.write(value)\n"
    "    done.append('printk_ratelimit_burst')\n"
    "except OSError as e:\n"
    "    pass\n"
    "try:\n"
    "    open('/proc/sys/kernel/core_pattern', 'r+').close()\n"
    "    done.append('core_pattern')\n"
    "except OSError:\n"
    "    pass\n"
    "print('ALLOWED' if done else 'DENIED', done)\n",
    NULL, NULL, NULL, NULL);
}

/* What runc masks of /proc (the kernel's memory, the SysRq trigger) is not
 * there, and what it makes read-only (/proc/sys, /proc/irq, /proc/bus) is
 * a read-only mount: the user namespace alone (test above) would not
 * keep a later kernel's new writable file from a cell. */
static void
test_escape_proc_is_masked(void)
{
  cx_test_sandbox_check_both(
    "import os\n"
    "seen = [p for p in ('/proc/kcore', '/proc/sysrq-trigger') if os.path.exists(p)]\n"
    "writable = [p for p in ('/proc/sys', '/proc/irq', '/proc/bus')\n"
    "            if os.path.exists(p) and not os.statvfs(p).f_flag & os.ST_RDONLY]\n"
    "print('ALLOWED' if seen or writable else 'DENIED', seen, writable)\n",
    NULL, NULL, NULL, NULL);
}

/* The cell's writable cwd is mounted nosuid and nodev: no set-id program
 * and no device node made there means anything, whoever owns it. */
static void
test_escape_writable_mounts_are_nosuid_and_nodev(void)
{
  g_autofree char *cwd = cx_test_tmpdir();
  struct statvfs host;
  CU_ASSERT_EQUAL_FATAL(statvfs(cwd, &host), 0);
  if ((host.f_flag & ST_NOSUID) && (host.f_flag & ST_NODEV)) {
    cx_test_skip("%s is nosuid,nodev on the host already", cwd);
    g_rmdir(cwd);
    return;
  }
  cx_test_sandbox_check_both(
    "import os\n"
    "flags = os.statvfs('.').f_flag\n"
    "print('DENIED' if flags & os.ST_NOSUID and flags & os.ST_NODEV else 'ALLOWED', flags)\n",
    "cwd", cwd, "cwd", cwd);
  g_rmdir(cwd);
}

/* A copy of a program with the setuid bit, made by a cell in a writable
 * cwd, must not be root's: run on the host by anyone, it would be root. */
static void
test_escape_no_setuid_root_file(void)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autofree char *cwd = cx_test_tmpdir();
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                         "cwd", cwd, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *out = cx_test_sandbox_probe(
      backend, "import os, shutil\n"
               "shutil.copy('/usr/bin/id', 'id-copy')\n"
               "os.chmod('id-copy', 0o4755)\n"
               "print('made')\n");
    CU_ASSERT_STRING_EQUAL(out, "made");
    g_autofree char *copy = g_build_filename(cwd, "id-copy", NULL);
    GStatBuf st;
    CU_ASSERT_EQUAL_FATAL(g_stat(copy, &st), 0);
    gboolean setuid_root = st.st_uid == 0 && (st.st_mode & S_ISUID) != 0;
    /* With none the cell is the host's user: root's only when that is root. */
    if (!sandbox && geteuid() != 0)
      fprintf(stderr, "\n  (not root: the copy is %u's)\n", (unsigned)st.st_uid);
    CU_ASSERT_TRUE(sandbox ? !setuid_root : setuid_root || geteuid() != 0);
    g_unlink(copy);
  }
}

/* The memory of any process but the cell's own, opened for writing
 * through /proc: the namespace's init, the spares waiting for later
 * cells, other sessions' processes. */
static void
test_escape_no_other_process_memory(void)
{
  cx_test_sandbox_check_both(
    "import os\n"
    "mine = {os.getpid()}\n"
    "opened = []\n"
    "# pid 1 by name too: the view may list no other process.\n"
    "for name in set(os.listdir('/proc')) | {'1'}:\n"
    "    if not name.isdigit() or int(name) in mine:\n"
    "        continue\n"
    "    try:\n"
    "        open('/proc/%s/mem' % name, 'r+b').close()\n"
    "        opened.append(int(name))\n"
    "    except OSError:\n"
    "        pass\n"
    "print('ALLOWED' if opened else 'DENIED', sorted(opened)[:5])\n",
    NULL, NULL, NULL, NULL);
}

/* The children of PID (as /proc/PID/task/PID/children lists them). */
static GStrv
children_of(const char *pid)
{
  g_autofree char *path = g_strdup_printf("/proc/%s/task/%s/children", pid, pid);
  g_autofree char *children = NULL;
  if (!g_file_get_contents(path, &children, NULL, NULL))
    return g_new0(char *, 1);
  return g_strsplit_set(g_strstrip(children), " ", -1);
}

/* The status of PID when its name is NAME, else NULL. */
static char *
status_if_named(const char *pid, const char *name)
{
  g_autofree char *path = g_strdup_printf("/proc/%s/status", pid);
  g_autofree char *status = NULL;
  g_autofree char *prefix = g_strdup_printf("Name:\t%s\n", name);
  if (!g_file_get_contents(path, &status, NULL, NULL) || !g_str_has_prefix(status, prefix))
    return NULL;
  return g_steal_pointer(&status);
}

/* The init of each cell's PID namespace (its pid 1) runs under the filter
 * like every other process there: the host sees its seccomp mode.  The
 * inits are children of the maker of namespaces, a child of the server
 * (pid_namespace.c), one per spare. */
static void
test_escape_init_is_under_the_filter(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  /* A session's namespace is there as long as the session. */
  g_autoptr(cx_session) session = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_result) started = cx_session_run_cell(session, "pass", NULL, &error);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  g_autofree char *server = g_strdup_printf(
    "%" G_GINT64_FORMAT, json_object_get_int_member(json_node_get_object(info), "server_pid"));
  g_auto(GStrv) children = children_of(server);
  int inits = 0;
  for (char **child = children; *child != NULL; child++) {
    g_autofree char *maker = status_if_named(*child, "cellexec-pidns");
    if (maker == NULL)
      continue;
    g_auto(GStrv) maker_children = children_of(*child);
    for (char **init = maker_children; *init != NULL; init++) {
      g_autofree char *status = status_if_named(*init, "cellexec-init");
      if (status == NULL)
        continue;
      inits++;
      CX_ASSERT_CONTAINS(status, "\nSeccomp:\t2\n");
    }
  }
  CU_ASSERT_TRUE(inits >= 1);
}

/* PRINTED: "ADDRESS SECRET": read SECRET at ADDRESS of the memory of the
 * process PIDS name. */
static char *
memory_probe(const char *printed, const char *pids)
{
  g_auto(GStrv) where = g_strsplit(printed, " ", 2);
  if (g_strv_length(where) != 2)
    return NULL;
  g_autofree char *set = g_strdelimit(g_strdup(pids), " ", ',');
  return g_strdup_printf(
    "import os\n"
    "result = 'DENIED'\n"
    "for pid in {%s} - {os.getpid()}:\n"
    "    try:\n"
    "        with open('/proc/%%d/mem' %% pid, 'rb') as f:\n"
    "            f.seek(%s)\n"
    "            if f.read(%d) == b'%s':\n"
    "                result = 'ALLOWED'\n"
    "    except OSError as e:\n"
    "        pass\n"
    "print(result)\n",
    set, where[0], (int)strlen(where[1]), where[1]);
}

static void
test_escape_no_memory_of_another_session(void)
{
  cx_test_sandbox_check_across_sessions(
    NULL, NULL,
    "import os, sys\n"
    "secret = b'cx-session-secret-' + os.urandom(8).hex().encode()\n"
    /* A bytes object's data starts after its header. */
    "print(id(secret) + sys.getsizeof(b'') - 1, secret.decode())\n",
    memory_probe, NULL);
}

/* Landlock's ABI on this kernel (0: none). */
static long
landlock_abi(void)
{
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? abi : 0;
}

/* Send signal 0 to the process PIDS name. */
static char *
signal_probe(const char *printed, const char *pids)
{
  g_autofree char *set = g_strdelimit(g_strdup(pids), " ", ',');
  return g_strdup_printf("import os\n"
                         "result = 'DENIED'\n"
                         "for pid in {%s} - {os.getpid()}:\n"
                         "    try:\n"
                         "        os.kill(pid, 0)\n"
                         "        result = 'ALLOWED'\n"
                         "    except OSError as e:\n"
                         "        pass\n"
                         "print(result)\n", set);
}

/* A cell cannot signal another session's process: its cells run as the
 * same user, and only a Landlock domain with signal scoping (ABI 6, Linux
 * 6.12) keeps kill() inside it.  Signal 0 asks whether it may, harming
 * nothing. */
static void
test_escape_no_signal_to_another_session(void)
{
  if (landlock_abi() < 6) {
    cx_test_skip("Landlock ABI %ld here; signals are scoped from ABI 6 "
                 "(Linux 6.12), see plugins/subprocess/README.md", landlock_abi());
    return;
  }
  cx_test_sandbox_check_across_sessions(NULL, NULL, "print('placed')", signal_probe, NULL);
}

/* One stateless cell's /tmp is not the next one's. */
static void
test_escape_no_tmp_shared_between_cells(void)
{
  g_autofree char *name = g_strdup_printf("/tmp/cx-escape-%d", (int)getpid());
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                         NULL, NULL, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *write = g_strdup_printf("open('%s', 'w').write('left')\nprint('written')",
                                             name);
    g_autofree char *written = cx_test_sandbox_probe(backend, write);
    CU_ASSERT_STRING_EQUAL(written, "written");
    g_autofree char *read = g_strdup_printf(
      "try:\n    print('ALLOWED', open('%s').read())\nexcept OSError as e:\n    print('DENIED', e)\n",
      name);
    g_autofree char *out = cx_test_sandbox_probe(backend, read);
    CU_ASSERT_TRUE(g_str_has_prefix(out, sandbox ? "DENIED" : "ALLOWED"));
    g_unlink(name);
  }
}

/* A stateless cell's /tmp holds at most half its memory limit, and goes
 * with the cell: what one cell left there never adds up with the next. */
static void
test_escape_tmp_is_bounded_and_goes_with_the_cell(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, "memory-limit", "200M", NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  static const char fill[] =
    "import os\n"
    "block = b'x' * (1 << 20)\n"
    "left = sorted(name for name in os.listdir('/tmp') if name.startswith('fill'))\n"
    "written = 0\n"
    "try:\n"
    "    with open('/tmp/fill-%d' % os.getpid(), 'wb') as f:\n"
    "        for _ in range(150):\n"
    "            f.write(block)\n"
    "            written += 1\n"
    "        f.flush()\n"
    "    print('ALLOWED', written, left)\n"
    "except OSError as e:\n"
    "    print('DENIED', written, e.strerror, left)\n";
  for (int cell = 0; cell < 3; cell++) {
    g_autofree char *out = cx_test_sandbox_probe(backend, fill);
    if (!g_str_has_prefix(out, "DENIED") || !g_str_has_suffix(out, "[]"))
      g_printerr("\n  cell %d said: %s\n", cell, out);
    CU_ASSERT_TRUE(g_str_has_prefix(out, "DENIED") && g_str_has_suffix(out, "[]"));
  }
}

/* A module a cell leaves in its working directory, named like one the
 * fork server imports when it starts (tokenize), must not run in the next
 * fork server, which is outside every cell's confinement; the cells' own
 * modules still import from there, as in python3. */
static void
test_escape_no_module_planted_for_the_server(void)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autofree char *cwd = cx_test_tmpdir();
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) planter = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                         "cwd", cwd, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *planted = cx_test_sandbox_probe(
      planter, "open('tokenize.py', 'w').write(\"open('ran-in-server', 'w').write('x')\\n\")\n"
               "open('mine.py', 'w').write('x = 42\\n')\n"
               "print('planted')\n");
    CU_ASSERT_STRING_EQUAL(planted, "planted");
    g_autoptr(cx_backend) next = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error, "cwd",
                                                      cwd, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *mine = cx_test_sandbox_probe(next, "import mine\nprint(mine.x)");
    CU_ASSERT_STRING_EQUAL(mine, "42");
    g_autofree char *marker = g_build_filename(cwd, "ran-in-server", NULL);
    CU_ASSERT_FALSE(g_file_test(marker, G_FILE_TEST_EXISTS));
  }
}

/* max-processes bounds each cell's own tree (its cgroup), not every
 * process of the cells' user together: one session's children leave the
 * next session its whole limit. */
static void
test_escape_process_limit_is_per_cell(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, "max-processes", "12", NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  static const char spawn[] =
    "import subprocess\n"
    "children = []\n"
    "try:\n"
    "    for _ in range(8):\n"
    "        children.append(subprocess.Popen(['sleep', '60']))\n"
    "except OSError as e:\n"
    "    print('refused after', len(children), e)\n"
    "else:\n"
    "    print('started', len(children))\n";
  g_autoptr(cx_session) first = cx_session_open(backend, &error);
  g_autoptr(cx_session) second = cx_session_open(backend, &error);
  CX_ASSERT_NO_ERROR(error);
  for (int i = 0; i < 2; i++) {
    g_autoptr(cx_result) result = cx_session_run_cell(i == 0 ? first : second, spawn, NULL, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(result);
    CX_ASSERT_STDOUT(result, "started 8\n");
  }
}

/* io_uring's operations do not pass through the filter. */
static void
test_escape_no_io_uring(void)
{
  cx_test_sandbox_check_both(
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "params = ctypes.create_string_buffer(120)\n"
    "fd = libc.syscall(425, 4, params)\n"
    "if fd >= 0:\n"
    "    os.close(fd)\n"
    "    print('ALLOWED')\n"
    "else:\n"
    "    print('DENIED', os.strerror(ctypes.get_errno()))\n",
    NULL, NULL, NULL, NULL);
}

/* AF_VSOCK reaches the hypervisor; netlink's uevents are the host's. */
static void
test_escape_no_vsock_nor_uevents(void)
{
  cx_test_sandbox_check_both(
    "import socket\n"
    "made = []\n"
    "for name, family, kind, proto in (('vsock', 40, socket.SOCK_STREAM, 0),\n"
    "                                  ('uevent', socket.AF_NETLINK, socket.SOCK_RAW, 15)):\n"
    "    try:\n"
    "        socket.socket(family, kind, proto).close()\n"
    "        made.append(name)\n"
    "    except OSError:\n"
    "        pass\n"
    /* The kernel reads an int argument's low 32 bits: high ones set must
     * not get the call past the filter. */
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "for name, args in (('vsock, high bits', (1 << 32 | 40, 1, 0)),\n"
    "                   ('uevent, high bits', (16, 3, 1 << 32 | 15))):\n"
    "    fd = libc.syscall(41, *(ctypes.c_long(a) for a in args))\n"
    "    if fd >= 0:\n"
    "        os.close(fd)\n"
    "        made.append(name)\n"
    "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()  # routing stays\n"
    "print('ALLOWED' if made else 'DENIED', made)\n",
    NULL, NULL, NULL, NULL);
}

/* A system call of another ABI (x32's getpid: the x86_64 number with bit
 * 30 set) on a thread of the cell: it must end the whole process at once,
 * not that thread only, which left the cell waiting for it until its
 * timeout.  With none the kernel answers it (ENOSYS where x32 is not
 * built) and the cell goes on.  i386's int 0x80 takes the same way
 * through the filter; it cannot be shown here, where the kernel itself
 * refuses it (ia32_emulation off). */
static void
test_escape_foreign_abi_call_ends_the_cell(void)
{
  static const char code[] =
    "import ctypes, threading\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "answer = []\n"
    "thread = threading.Thread(target=lambda: answer.append(libc.syscall(0x40000000 | 39)))\n"
    "thread.start()\n"
    "thread.join()\n"
    "print('ALLOWED', answer)\n";
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                         NULL, NULL, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    if (sandbox)
      CX_ASSERT_CONTAINS(out, "FAILED WorkerCrashed");
    else
      CU_ASSERT_TRUE(g_str_has_prefix(out, "ALLOWED"));
  }
}

/* A cell that stops the spares waiting for later cells (its siblings,
 * with isolation = none) must not make the next cells hang. */
static void
test_escape_stopped_spares_are_replaced(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("none", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *stopped = cx_test_sandbox_probe(
    backend, "import os, signal\n"
             "parent, stopped = os.getppid(), 0\n"
             "for name in os.listdir('/proc'):\n"
             "    if name.isdigit() and int(name) != os.getpid():\n"
             "        try:\n"
             "            fields = open('/proc/%s/stat' % name).read().rsplit(')', 1)[1].split()\n"
             "        except OSError:\n"
             "            continue\n"
             "        if int(fields[1]) == parent:\n"
             "            os.kill(int(name), signal.SIGSTOP)\n"
             "            stopped += 1\n"
             "print(stopped)\n");
  CU_ASSERT_TRUE(atoi(stopped) > 0);
  for (int i = 0; i < 8; i++) {
    g_autoptr(cx_run_options) run = cx_run_options_new();
    cx_run_options_set_timeout(run, 20);
    g_autoptr(cx_result) result = cx_backend_run_cell(backend, "print('next')", run, &error);
    CX_ASSERT_NO_ERROR(error);
    CU_ASSERT_TRUE_FATAL(result != NULL);
    if (!cx_result_get_success(result))
      g_printerr("\n  cell %d: %s\n", i, cx_result_get_error_type(result));
    CU_ASSERT_TRUE(cx_result_get_success(result));
  }
}

/* The worker keeps copies of its fds 1 and 2 while a cell runs, to put
 * them back after: in the sandbox neither may be the host's stderr file,
 * which a cell could then read, truncate or rewrite. */
static void
test_escape_no_descriptor_of_the_host_stderr(void)
{
  struct stat host;
  CU_ASSERT_EQUAL_FATAL(fstat(STDERR_FILENO, &host), 0);
  g_autofree char *code = g_strdup_printf(
    "import os\n"
    "found = []\n"
    "for fd in range(4096):\n"
    "    try:\n"
    "        st = os.fstat(fd)\n"
    "    except OSError:\n"
    "        continue\n"
    "    if (st.st_dev, st.st_ino) == (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "):\n"
    "        found.append(fd)\n"
    "print('ALLOWED' if found else 'DENIED', found)\n",
    (guint64)host.st_dev, (guint64)host.st_ino);
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
}

/* A sandboxed run with nothing configured prints nothing of its own: the
 * fork server's warm-up failed there on every run once ("warming up
 * failed (AttributeError: ); carrying on"), looking for the cells' modules
 * in a directory the view does not show. */
static void
test_escape_sandboxed_run_says_nothing_of_its_own(void)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_auto(cx_test_cli_run) run = cx_test_cellexec(
      NULL, "run", "-b", "subprocess", "-o", sandbox ? "isolation=sandbox" : "isolation=none",
      "-c", "print(1)", NULL);
    CU_ASSERT_EQUAL(run.status, 0);
    CU_ASSERT_STRING_EQUAL(run.out, "1\n");
    CU_ASSERT_STRING_EQUAL(run.err, "");
  }
}

/* What a session's process writes on its own stderr between cells (here
 * a thread a cell left behind) still reaches the host's stderr, through
 * the relay in the sandbox. */
static void
test_escape_host_stderr_still_gets_the_worker_output(void)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autofree char *dir = cx_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "stderr", NULL);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CU_ASSERT_TRUE_FATAL(saved >= 0 && file >= 0);
    dup2(file, STDERR_FILENO);
    close(file);
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error,
                                                           NULL, NULL, NULL, NULL, NULL, NULL);
      CX_ASSERT_NO_ERROR(error);
      g_autoptr(cx_session) session = backend ? cx_session_open(backend, &error) : NULL;
      CX_ASSERT_NO_ERROR(error);
      if (session != NULL) {
        g_autoptr(cx_result) left = cx_session_run_cell(
          session, "import os, threading, time\n"
                   "threading.Thread(target=lambda: (time.sleep(0.3), "
                   "os.write(2, b'written-between-cells\\n'))).start()\n",
          NULL, &error);
        CX_ASSERT_NO_ERROR(error);
        /* No cell runs while it writes: a cell's fd 2 is its capture. */
        g_usleep(G_USEC_PER_SEC);
      }
    }
    dup2(saved, STDERR_FILENO);
    close(saved);
    g_autofree char *written = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(path, &written, NULL, NULL));
    CX_ASSERT_CONTAINS(written, "written-between-cells\n");
    g_unlink(path);
  }
}

void
cx_test_register(void)
{
  static const cx_test_case cases[] = {
    { "test_escape_no_host_sysctl_write", test_escape_no_host_sysctl_write },
    { "test_escape_no_setuid_root_file", test_escape_no_setuid_root_file },
    { "test_escape_proc_is_masked", test_escape_proc_is_masked },
    { "test_escape_writable_mounts_are_nosuid_and_nodev",
      test_escape_writable_mounts_are_nosuid_and_nodev },
    { "test_escape_no_other_process_memory", test_escape_no_other_process_memory },
    { "test_escape_init_is_under_the_filter", test_escape_init_is_under_the_filter },
    { "test_escape_no_memory_of_another_session", test_escape_no_memory_of_another_session },
    { "test_escape_no_signal_to_another_session", test_escape_no_signal_to_another_session },
    { "test_escape_no_tmp_shared_between_cells", test_escape_no_tmp_shared_between_cells },
    { "test_escape_tmp_is_bounded_and_goes_with_the_cell",
      test_escape_tmp_is_bounded_and_goes_with_the_cell },
    { "test_escape_no_module_planted_for_the_server",
      test_escape_no_module_planted_for_the_server },
    { "test_escape_process_limit_is_per_cell", test_escape_process_limit_is_per_cell },
    { "test_escape_no_io_uring", test_escape_no_io_uring },
    { "test_escape_no_vsock_nor_uevents", test_escape_no_vsock_nor_uevents },
    { "test_escape_foreign_abi_call_ends_the_cell", test_escape_foreign_abi_call_ends_the_cell },
    { "test_escape_stopped_spares_are_replaced", test_escape_stopped_spares_are_replaced },
    { "test_escape_no_descriptor_of_the_host_stderr",
      test_escape_no_descriptor_of_the_host_stderr },
    { "test_escape_sandboxed_run_says_nothing_of_its_own",
      test_escape_sandboxed_run_says_nothing_of_its_own },
    { "test_escape_host_stderr_still_gets_the_worker_output",
      test_escape_host_stderr_still_gets_the_worker_output },
    { NULL }
  };
  cx_test_add_suite("subprocess sandbox escapes", cases);
}
