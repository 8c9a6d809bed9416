/* tests/test_sandbox.c: the subprocess backend's `isolation = sandbox`.
 *
 * Each test runs the same probe cell with isolation = none and with
 * isolation = sandbox and asserts opposite outcomes: the probe prints
 * ALLOWED when the forbidden thing worked (what none does today, so the
 * test proves something) and DENIED otherwise (what the sandbox must do).
 */
#define _GNU_SOURCE
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cx_test.h"
#include "tests/sandbox_probe.h"

/* A secret in this (the host) process's memory and environment. */
static char host_secret[] = "cx-sandbox-host-secret-4c1d";

/* A TCP listener on ADDRESS (host byte order); its port. */
static int
listen_on(guint32 address, int *port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(address) };
  socklen_t len = sizeof in;
  g_assert(bind(fd, (struct sockaddr *)&in, sizeof in) == 0 && listen(fd, 16) == 0);
  g_assert(getsockname(fd, (struct sockaddr *)&in, &len) == 0);
  *port = ntohs(in.sin_port);
  return fd;
}

static void
test_sandbox_no_connection_to_host_loopback(void)
{
  int port;
  int fd = listen_on(INADDR_LOOPBACK, &port);
  g_autofree char *code = g_strdup_printf(
    "import socket\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', %d), timeout=3).close()\n"
    "    print('ALLOWED')\n"
    "except OSError as e:\n"
    "    print('DENIED', e)\n", port);
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
  /* A private loopback is not the host's either. */
  cx_test_sandbox_check_both(code, NULL, NULL, "network", "loopback");
  close(fd);
}

static void
test_sandbox_no_other_address(void)
{
  /* This machine's own non-loopback addresses: reachable from any process
   * on the host network. */
  struct ifaddrs *list = NULL;
  g_assert(getifaddrs(&list) == 0);
  g_autoptr(GString) addresses = g_string_new("");
  for (struct ifaddrs *a = list; a != NULL; a = a->ifa_next) {
    if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET)
      continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, text, sizeof text);
    if (!g_str_has_prefix(text, "127."))
      g_string_append_printf(addresses, "'%s', ", text);
  }
  freeifaddrs(list);
  int port;
  int fd = listen_on(INADDR_ANY, &port);
  g_autofree char *code = g_strdup_printf(
    "import socket\n"
    "names = [n for _, n in socket.if_nameindex()]\n"
    "reached = []\n"
    "for address in [%s]:\n"
    "    try:\n"
    "        socket.create_connection((address, %d), timeout=3).close()\n"
    "        reached.append(address)\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    socket.getaddrinfo('example.com', 80)\n"
    "    reached.append('dns')\n"
    "except OSError:\n"
    "    pass\n"
    "print('ALLOWED' if reached or names != ['lo'] else 'DENIED', names, reached)\n",
    addresses->str, port);
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
  close(fd);
}

static void
test_sandbox_no_write_outside_cwd_and_tmp(void)
{
  g_autoptr(GError) error = NULL;
  /* Outside /tmp: /var/tmp is the host's, not the sandbox's private one. */
  g_autofree char *dir = g_build_filename("/var/tmp", "cellexec-sandbox-XXXXXX", NULL);
  g_assert(g_mkdtemp(dir) != NULL);
  g_autofree char *code = g_strdup_printf(
    "import os\n"
    "ok = []\n"
    "for path in ['%s/written', '/usr/cellexec-written', '/etc/cellexec-written']:\n"
    "    try:\n"
    "        open(path, 'w').write('x')\n"
    "        ok.append(path)\n"
    "        os.unlink(path) if path.startswith('/usr') or path.startswith('/etc') else None\n"
    "    except OSError:\n"
    "        pass\n"
    "open('cwd-file', 'w').write('x'); os.unlink('cwd-file')\n"
    "open('/tmp/tmp-file', 'w').write('x')\n"
    "print('ALLOWED' if ok else 'DENIED', ok)\n", dir);
  g_autofree char *cwd = cx_test_tmpdir();
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(cx_backend) backend =
      cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error, "cwd", cwd, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    CU_ASSERT_TRUE(g_str_has_prefix(out, sandbox ? "DENIED" : "ALLOWED"));
    g_autofree char *written = g_build_filename(dir, "written", NULL);
    CU_ASSERT_EQUAL(g_file_test(written, G_FILE_TEST_EXISTS), !sandbox);
    g_unlink(written);
  }
  g_rmdir(dir);
}

static void
test_sandbox_no_hidden_path_nor_shadow(void)
{
  g_autofree char *dir = g_build_filename("/var/tmp", "cellexec-sandbox-XXXXXX", NULL);
  g_assert(g_mkdtemp(dir) != NULL);
  g_autofree char *secret = g_build_filename(dir, "secret", NULL);
  g_assert(g_file_set_contents(secret, "SECRET", -1, NULL));
  g_autofree char *code = g_strdup_printf(
    "read = []\n"
    "for path in ['%s', '/etc/shadow']:\n"
    "    try:\n"
    "        text = open(path).read()\n"
    "        if 'SECRET' in text or 'root:' in text:\n"
    "            read.append(path)\n"
    "    except OSError:\n"
    "        pass\n"
    "print('ALLOWED' if read else 'DENIED', read)\n", secret);
  /* The directory readable, the file in it hidden. */
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend =
      sandbox ? cx_test_sandbox_open("sandbox", &error, "read-only-paths", dir, "hidden-paths", secret,
                          NULL, NULL)
              : cx_test_sandbox_open("none", &error, NULL, NULL, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    CU_ASSERT_TRUE(g_str_has_prefix(out, sandbox ? "DENIED" : "ALLOWED"));
  }
  g_unlink(secret);
  g_rmdir(dir);
}

static void
test_sandbox_no_host_processes(void)
{
  g_autofree char *code = g_strdup_printf(
    "import os\n"
    "pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
    "try:\n"
    "    host = b'test_sandbox' in open('/proc/%d/cmdline', 'rb').read()\n"
    "except OSError:\n"
    "    host = False\n"
    "print('ALLOWED' if host or len(pids) > 10 else 'DENIED', len(pids), host)\n",
    (int)getpid());
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
}

static void
test_sandbox_no_host_environ_or_memory(void)
{
  /* /proc/PID/environ shows the environment the host started with. */
  g_autofree char *code = g_strdup_printf(
    "found = []\n"
    "try:\n"
    "    if open('/proc/%d/environ', 'rb').read():\n"
    "        found.append('environ')\n"
    "except OSError:\n"
    "    pass\n"
    "try:\n"
    "    with open('/proc/%d/mem', 'rb') as f:\n"
    "        f.seek(%" G_GUINTPTR_FORMAT ")\n"
    "        if f.read(%d) == b'%s':\n"
    "            found.append('mem')\n"
    "except (OSError, ValueError, OverflowError):\n"
    "    pass\n"
    "print('ALLOWED' if found else 'DENIED', found)\n",
    (int)getpid(), (int)getpid(), (guintptr)host_secret,
    (int)strlen(host_secret), host_secret);
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
}

static void
test_sandbox_no_signal_to_host_or_server(void)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend =
      cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error, NULL, NULL, NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
    gint64 server = json_object_get_int_member(json_node_get_object(info), "server_pid");
    /* Signal 0: the permission check of a real signal, harmless. */
    g_autofree char *code = g_strdup_printf(
      "import os\n"
      "reached = []\n"
      "for pid in (%d, %d, os.getppid()):\n"
      "    try:\n"
      "        if pid > 1:\n"
      "            os.kill(pid, 0)\n"
      "            reached.append(pid)\n"
      "    except OSError:\n"
      "        pass\n"
      "print('ALLOWED' if reached else 'DENIED', reached)\n",
      (int)getpid(), (int)server);
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    CU_ASSERT_TRUE(g_str_has_prefix(out, sandbox ? "DENIED" : "ALLOWED"));
    if (sandbox) {
      /* What a cell sees as pid 1 (the namespace's init) refuses it (not
       * the cell's user, not its Landlock domain), or ignores it. */
      g_autofree char *killed = cx_test_sandbox_probe(backend,
        "import os, signal\nfor s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):\n"
        "    try:\n        os.kill(1, s)\n    except PermissionError:\n        pass\n"
        "print('sent')");
      CU_ASSERT_STRING_EQUAL(killed, "sent");
      g_autofree char *next = cx_test_sandbox_probe(backend, "print('next')");
      CU_ASSERT_STRING_EQUAL(next, "next");
    }
  }
}

static void
test_sandbox_no_ptrace(void)
{
  cx_test_sandbox_check_both(
    "import ctypes, os, signal, time\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "child = os.fork()\n"
    "if child == 0:\n"
    "    time.sleep(30)\n"
    "    os._exit(0)\n"
    "attached = libc.ptrace(16, child, None, None) == 0  # PTRACE_ATTACH\n"
    "err = ctypes.get_errno()\n"
    "os.kill(child, signal.SIGKILL)\n"
    "os.waitpid(child, 0)\n"
    "print('ALLOWED' if attached else 'DENIED', os.strerror(err))\n",
    NULL, NULL, NULL, NULL);
}

static void
test_sandbox_no_tiocsti(void)
{
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  g_assert(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
  g_autofree char *code = g_strdup_printf(
    "import fcntl, os, termios\n"
    "try:\n"
    "    fd = os.open('%s', os.O_RDWR | os.O_NOCTTY)\n"
    "    fcntl.ioctl(fd, termios.TIOCSTI, b'x')\n"
    "    print('ALLOWED')\n"
    "except OSError as e:\n"
    "    print('DENIED', e)\n", ptsname(master));
  cx_test_sandbox_check_both(code, NULL, NULL, NULL, NULL);
  close(master);
}

/* CODE under the limit KEY = VALUE, both ways: it gets past the limit
 * with isolation none (ALLOWED), not in the sandbox; either way the next
 * cell works.  In the sandbox the cell itself may be what the limit kills
 * (the OOM killer's pick), which counts as contained. */
static void
check_contained(const char *code, const char *key, const char *value)
{
  for (int sandbox = 0; sandbox < 2; sandbox++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(cx_backend) backend = cx_test_sandbox_open(sandbox ? "sandbox" : "none", &error, key, value,
                                              NULL, NULL, NULL, NULL);
    CX_ASSERT_NO_ERROR(error);
    g_autofree char *out = cx_test_sandbox_probe(backend, code);
    gboolean escaped = g_str_has_prefix(out, "ALLOWED");
    if (escaped == sandbox)
      g_printerr("\n  %s = %s (isolation %s): %s\n", key, value, sandbox ? "sandbox" : "none",
                 out);
    CU_ASSERT_TRUE(escaped != sandbox);
    g_autofree char *next = cx_test_sandbox_probe(backend, "print('next')");
    CU_ASSERT_STRING_EQUAL(next, "next");
  }
}

static void
test_sandbox_fork_bomb_is_contained(void)
{
  static const char code[] =
    CX_TEST_FORK_SLEEPERS(150)
    "print('ALLOWED' if len(children) >= 150 else 'DENIED', len(children))\n";
  check_contained(code, "max-processes", "40");
}

static void
test_sandbox_memory_hog_is_contained(void)
{
  if (g_getenv("CELLEXEC_SANITIZED") != NULL) {
    cx_test_skip("in a sanitizer build: RLIMIT_AS and ASan exclude each other");
    return;
  }
  /* Four children of 120 MB each under a 300 MB limit: RLIMIT_AS bounds
   * each process only; the sandbox's cgroup bounds the four together. */
  static const char code[] =
    "import os, time\n"
    "children = []\n"
    "for i in range(4):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        try:\n"
    "            block = bytearray(b'\\x01') * (120 << 20)\n"
    "            time.sleep(3)\n"
    "            os._exit(0)\n"
    "        except MemoryError:\n"
    "            os._exit(1)\n"
    "    children.append(pid)\n"
    "held = sum(1 for pid in children if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0)\n"
    "print('ALLOWED' if held == 4 else 'DENIED', held)\n";
  check_contained(code, "memory-limit", "300M");
}

static void
test_sandbox_environment_is_the_allowlist(void)
{
  g_setenv("CX_SANDBOX_HOST_SECRET", host_secret, TRUE);
  static const char code[] =
    "import os\n"
    "allowed = {'PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'GIVEN'}\n"
    "extra = sorted(n for n in os.environ if n not in allowed and not n.startswith('LC_'))\n"
    "print('ALLOWED' if extra else 'DENIED', extra)\n";
  /* With isolation none, inherit-env hands a cell the host's secrets. */
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) none = cx_test_sandbox_open("none", &error, "inherit-env", "true", "env",
                                         "GIVEN=1", NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *out = cx_test_sandbox_probe(none, code);
  CU_ASSERT_TRUE(g_str_has_prefix(out, "ALLOWED"));
  /* The sandbox refuses it... */
  g_autoptr(cx_backend) refused = cx_test_sandbox_open("sandbox", &error, "inherit-env", "true", "env",
                                            "GIVEN=1", NULL, NULL);
  CU_ASSERT_PTR_NULL(refused);
  CU_ASSERT_TRUE(error != NULL && strstr(error->message, "inherit-env") != NULL);
  g_clear_error(&error);
  /* ...and shows the allowlist and `env` only. */
  g_autoptr(cx_backend) sandbox = cx_test_sandbox_open("sandbox", &error, "env", "GIVEN=1", NULL, NULL,
                                            NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autofree char *sandboxed = cx_test_sandbox_probe(sandbox, code);
  CU_ASSERT_TRUE(g_str_has_prefix(sandboxed, "DENIED"));
  g_unsetenv("CX_SANDBOX_HOST_SECRET");
}

/* Cells get a home they can write (config and caches: matplotlib,
 * IPython, pip), their own: what one cell leaves there the next cannot
 * see. */
static void
test_sandbox_home_is_writable_and_private(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) sandbox = cx_test_sandbox_open("sandbox", &error, NULL, NULL, NULL, NULL,
                                                       NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  static const char leaves[] =
    "import os\nhome = os.path.expanduser('~')\n"
    "print('seen' if os.path.exists(os.path.join(home, 'left-by-a-cell')) else 'none')\n"
    "open(os.path.join(home, 'left-by-a-cell'), 'w').close()\n"
    "print(os.access(home, os.W_OK))\n";
  g_autofree char *first = cx_test_sandbox_probe(sandbox, leaves);
  CU_ASSERT_STRING_EQUAL(first, "none\nTrue");
  g_autofree char *second = cx_test_sandbox_probe(sandbox, leaves);
  CU_ASSERT_STRING_EQUAL(second, "none\nTrue");
}

/* Fail closed: a measure that cannot be applied stops the backend, with
 * a message naming it; the active measures are reported. */
static void
test_sandbox_refuses_and_reports(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) missing = cx_test_sandbox_open("sandbox", &error, "read-only-paths",
                                            "/no/such/cellexec/path", NULL, NULL, NULL, NULL);
  CU_ASSERT_PTR_NULL(missing);
  CU_ASSERT_TRUE(error != NULL && strstr(error->message, "read-only-paths") != NULL &&
                 strstr(error->message, "/no/such/cellexec/path") != NULL);
  g_clear_error(&error);
  /* A cwd that would make the host's system writable. */
  g_autoptr(cx_backend) system_cwd = cx_test_sandbox_open("sandbox", &error, "cwd", "/", NULL, NULL, NULL,
                                               NULL);
  CU_ASSERT_PTR_NULL(system_cwd);
  CU_ASSERT_TRUE(error != NULL && strstr(error->message, "cwd") != NULL);
  g_clear_error(&error);
  g_autoptr(cx_backend) system_writable = cx_test_sandbox_open("sandbox", &error, "writable-paths",
                                                    "/usr/lib", NULL, NULL, NULL, NULL);
  CU_ASSERT_PTR_NULL(system_writable);
  CU_ASSERT_TRUE(error != NULL && strstr(error->message, "writable-paths") != NULL);
  g_clear_error(&error);

  g_autoptr(cx_backend) backend = cx_test_sandbox_open("sandbox", &error, "memory-limit", "200M",
                                            "max-processes", "50", NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(JsonNode) info = cx_backend_query(backend, "info", NULL);
  JsonObject *object = json_node_get_object(info);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "isolation"), "sandbox");
  JsonArray *measures = json_object_get_array_member(object, "sandbox");
  g_autoptr(GString) all = g_string_new(" ");
  for (guint i = 0; measures != NULL && i < json_array_get_length(measures); i++)
    g_string_append_printf(all, "%s ", json_array_get_string_element(measures, i));
  static const char *const expected[] = { "pid-namespace", "network-none", "filesystem-view",
                                          "seccomp", "capabilities-dropped", "no-new-privs",
                                          "cgroup-memory", "cgroup-pids", NULL };
  for (const char *const *name = expected; *name != NULL; name++) {
    g_autofree char *word = g_strdup_printf(" %s ", *name);
    CU_ASSERT_PTR_NOT_NULL(strstr(all->str, word));
  }
  g_autoptr(cx_backend) none = cx_test_sandbox_open("none", &error, NULL, NULL, NULL, NULL, NULL, NULL);
  g_autoptr(JsonNode) none_info = cx_backend_query(none, "info", NULL);
  CU_ASSERT_STRING_EQUAL(json_object_get_string_member(json_node_get_object(none_info),
                                                       "isolation"), "none");
  CU_ASSERT_FALSE(json_object_has_member(json_node_get_object(none_info), "sandbox"));
  /* Sandbox-only options are refused without the sandbox. */
  g_autoptr(cx_backend) wrong = cx_test_sandbox_open("none", &error, "network", "loopback", NULL, NULL,
                                          NULL, NULL);
  CU_ASSERT_PTR_NULL(wrong);
  CX_ASSERT_ERROR(error, CX_ERROR_OPTION);
}

/* `PREFIX... cellexec ARGS...` (both NULL-terminated): the CLI run
 * through another program (unshare, setpriv), and how it ended. */
static cx_test_cli_run
run_through(const char *const *prefix, const char *first, ...)
{
  va_list args;
  va_start(args, first);
  g_auto(GStrv) cellexec = cx_test_cellexec_argv_valist(first, args);
  va_end(args);
  g_autoptr(GStrvBuilder) argv = g_strv_builder_new();
  g_strv_builder_addv(argv, (const char **)prefix);
  g_strv_builder_addv(argv, (const char **)cellexec);
  g_auto(GStrv) all = g_strv_builder_end(argv);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) process = g_subprocess_newv(
    (const char *const *)all, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error(error);
  return cx_test_cellexec_finish(process, NULL);
}

/* In a mount namespace of its own where /sys/fs/cgroup is an empty tmpfs:
 * a machine without cgroups. */
static const char *const without_cgroups[] = {
  "unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
  "mount -t tmpfs cellexec-test /sys/fs/cgroup && exec \"$@\"", "sh", NULL
};

/* Fail closed on what the machine lacks: without a cgroup hierarchy the
 * sandbox cannot bound a cell's process tree, so it refuses to start,
 * naming the measure, in one line; isolation = none still runs. */
static void
test_sandbox_refuses_without_cgroups(void)
{
  g_autofree char *unshare = g_find_program_in_path("unshare");
  if (geteuid() != 0 || unshare == NULL) {
    cx_test_skip("hiding /sys/fs/cgroup needs root and unshare(1)");
    return;
  }
  g_auto(cx_test_cli_run) sandboxed = run_through(without_cgroups, "run", "-b", "subprocess", "-o",
                                                  "isolation=sandbox", "-c", "print(1)", NULL);
  CU_ASSERT_EQUAL(sandboxed.status, 2);
  CU_ASSERT_STRING_EQUAL(sandboxed.out, "");
  CX_ASSERT_CONTAINS(sandboxed.err, "isolation = sandbox: cannot apply: cgroup: ");
  /* One line: the worker does not say it again on its own stderr. */
  CU_ASSERT_PTR_EQUAL(strchr(sandboxed.err, '\n'), sandboxed.err + strlen(sandboxed.err) - 1);
  g_auto(cx_test_cli_run) plain = run_through(without_cgroups, "run", "-b", "subprocess", "-c",
                                              "print(1)", NULL);
  CU_ASSERT_EQUAL(plain.status, 0);
  CU_ASSERT_STRING_EQUAL(plain.out, "1\n");
}

/* As a user without privileges (nobody, through setpriv(1)) the sandbox
 * takes the user-namespace path.  Where that user cannot have what the
 * sandbox needs (here: cgroups to create), it refuses, naming the
 * measure; where it can, the cell is isolated (it sees only its own
 * processes).  Never a cell with less isolation than asked for. */
static void
test_sandbox_as_an_unprivileged_user_isolates_or_refuses(void)
{
  g_autofree char *setpriv = g_find_program_in_path("setpriv");
  if (geteuid() != 0 || setpriv == NULL) {
    cx_test_skip("becoming nobody needs root and setpriv(1)");
    return;
  }
  g_autofree char *dir = cx_test_tmpdir();
  CU_ASSERT_EQUAL(chmod(dir, 0777), 0);
  g_autofree char *home = g_strdup_printf("HOME=%s", dir);
  g_autofree char *cache = g_strdup_printf("XDG_CACHE_HOME=%s", dir);
  const char *const as_nobody[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    "env", home, cache, NULL };
  /* How many processes the cell sees: its own few in the sandbox. */
  g_auto(cx_test_cli_run) run = run_through(
    as_nobody, "run", "-b", "subprocess", "-o", "isolation=sandbox", "-c",
    "import os\nprint(sum(name.isdigit() for name in os.listdir('/proc')))", NULL);
  if (run.status == 2) {
    CX_ASSERT_CONTAINS(run.err, "isolation = sandbox: cannot apply: ");
    CU_ASSERT_STRING_EQUAL(run.out, "");
  } else {
    CU_ASSERT_EQUAL(run.status, 0);
    CU_ASSERT_TRUE(run.out != NULL && atoi(run.out) > 0 && atoi(run.out) < 10);
  }
}

/* A cwd for one call that the sandbox does not show: an error that says
 * which options would, not a cell that cannot find its directory. */
static void
test_sandbox_cwd_outside_the_view_is_explained(void)
{
  g_autofree char *shown = cx_test_tmpdir();
  g_autofree char *elsewhere = cx_test_tmpdir();
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_backend) backend =
    cx_test_sandbox_open("sandbox", &error, "cwd", shown, NULL, NULL, NULL, NULL);
  CX_ASSERT_NO_ERROR(error);
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_cwd(run, elsewhere);
  g_autoptr(cx_result) result = cx_backend_run_cell(backend, "print(1)", run, &error);
  CU_ASSERT_PTR_NULL(result);
  CU_ASSERT_PTR_NOT_NULL_FATAL(error);
  CX_ASSERT_CONTAINS(error->message, elsewhere);
  CX_ASSERT_CONTAINS(error->message, "writable-paths");
  g_clear_error(&error);
  /* Inside the view it works. */
  g_autofree char *inside = g_build_filename(shown, "sub", NULL);
  CU_ASSERT_EQUAL(g_mkdir(inside, 0777), 0);
  cx_run_options_set_cwd(run, inside);
  g_autoptr(cx_result) ran = cx_backend_run_cell(backend, "import os\nprint(os.getcwd())", run,
                                                 &error);
  CX_ASSERT_NO_ERROR(error);
  gsize len;
  const char *out = ran != NULL ? cx_result_get_stdout(ran, &len) : "";
  CX_ASSERT_CONTAINS(out, inside);
}

void
cx_test_register(void)
{
  static const cx_test_case cases[] = {
    { "test_sandbox_no_connection_to_host_loopback", test_sandbox_no_connection_to_host_loopback },
    { "test_sandbox_no_other_address", test_sandbox_no_other_address },
    { "test_sandbox_no_write_outside_cwd_and_tmp", test_sandbox_no_write_outside_cwd_and_tmp },
    { "test_sandbox_no_hidden_path_nor_shadow", test_sandbox_no_hidden_path_nor_shadow },
    { "test_sandbox_no_host_processes", test_sandbox_no_host_processes },
    { "test_sandbox_no_host_environ_or_memory", test_sandbox_no_host_environ_or_memory },
    { "test_sandbox_no_signal_to_host_or_server", test_sandbox_no_signal_to_host_or_server },
    { "test_sandbox_no_ptrace", test_sandbox_no_ptrace },
    { "test_sandbox_no_tiocsti", test_sandbox_no_tiocsti },
    { "test_sandbox_fork_bomb_is_contained", test_sandbox_fork_bomb_is_contained },
    { "test_sandbox_memory_hog_is_contained", test_sandbox_memory_hog_is_contained },
    { "test_sandbox_environment_is_the_allowlist", test_sandbox_environment_is_the_allowlist },
    { "test_sandbox_home_is_writable_and_private", test_sandbox_home_is_writable_and_private },
    { "test_sandbox_refuses_and_reports", test_sandbox_refuses_and_reports },
    { "test_sandbox_refuses_without_cgroups", test_sandbox_refuses_without_cgroups },
    { "test_sandbox_as_an_unprivileged_user_isolates_or_refuses",
      test_sandbox_as_an_unprivileged_user_isolates_or_refuses },
    { "test_sandbox_cwd_outside_the_view_is_explained",
      test_sandbox_cwd_outside_the_view_is_explained },
    { NULL }
  };
  cx_test_add_suite("subprocess sandbox", cases);
}
