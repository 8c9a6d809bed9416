/* plugins/subprocess/worker/seccomp.c: the sandbox's system-call filter.
 *
 * Everything is allowed but what a cell has no business doing: debugging
 * other processes, the kernel's administration, new namespaces, terminal
 * input injection, io_uring (its operations bypass the filter), sockets to
 * the hypervisor (AF_VSOCK) and every netlink family but NETLINK_ROUTE
 * (the C library's interface queries; uevents and audit are the host's).
 * Denied calls fail with EPERM (clone3 with ENOSYS, so that the C library
 * falls back to clone, whose flags the filter can see).  A call of another
 * ABI (i386's int 0x80, x32) kills the whole process at once: killing only
 * the calling thread, libseccomp's default, left a cell whose main thread
 * was gone hanging until its timeout.
 *
 * The filter is compiled once, in the fork server (cx__worker_seccomp_prepare),
 * and the same BPF program is loaded by each spare before it runs any
 * Python.  The maker of PID namespaces (pid_namespace.c) loads it too,
 * less the rule against clone(CLONE_NEWPID), which it exists to make:
 * each namespace's init inherits that filter instead of loading one of
 * its own (which cost the kernel's check and compilation of the program
 * on every cell).
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/subprocess/worker/worker.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* The compiled programs, made before the first process that loads one is
 * forked: the cells', and the maker's (clone(CLONE_NEWPID) allowed). */
static struct sock_fprog program, maker_program;

static gboolean
load(const struct sock_fprog *filter, GError **error)
{
  if (filter->filter == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: the filter was not prepared");
    return FALSE;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) < 0) {
    int saved = errno;
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot load the filter: %s",
                g_strerror(saved));
    return FALSE;
  }
  return TRUE;
}

gboolean
cx__worker_seccomp_load(GError **error)
{
  return load(&program, error);
}

gboolean
cx__worker_seccomp_load_for_maker(GError **error)
{
  return load(&maker_program, error);
}

#ifndef HAVE_SECCOMP
gboolean
cx__worker_seccomp_prepare(GError **error)
{
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
              "seccomp: this cellexec was built without libseccomp");
  return FALSE;
}
#else
#include <seccomp.h>

static const char *const denied[] = {
  "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
  "kcmp", "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
  "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "kexec_load", "kexec_file_load",
  "bpf", "init_module", "finit_module", "delete_module", "keyctl", "add_key", "request_key",
  "perf_event_open", "userfaultfd", "unshare", "setns", "reboot", "swapon", "swapoff", "acct",
  "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
  "setdomainname", "iopl", "ioperm", "syslog", "quotactl", "quotactl_fd", "lookup_dcookie",
  "open_by_handle_at", "name_to_handle_at", "uselib", "vhangup", "nfsservctl",
  "fanotify_init", "io_uring_setup", "io_uring_enter", "io_uring_register", NULL
};

static const int namespace_flags[] = { CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                       CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP };

#define RULE(ctx, action, call, ...)                                                   \
  (seccomp_rule_add(ctx, action, call, __VA_ARGS__) == 0)

/* The BPF program of CTX into *OUT, read back from libseccomp's export
 * (2.5 can only write it to a descriptor). */
static gboolean
export_program(scmp_filter_ctx ctx, struct sock_fprog *out)
{
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) < 0)
    return FALSE;
  /* A filter of this size is a few KiB, far below a pipe's buffer. */
  gboolean ok = seccomp_export_bpf(ctx, pipe_fds[1]) == 0;
  close(pipe_fds[1]);
  g_autoptr(GByteArray) bytes = g_byte_array_new();
  guint8 buffer[4096];
  gssize n;
  while (ok && (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0) {
    if (n < 0) {
      ok = errno == EINTR;
      continue;
    }
    g_byte_array_append(bytes, buffer, (guint)n);
  }
  close(pipe_fds[0]);
  if (!ok || bytes->len == 0 || bytes->len % sizeof(struct sock_filter) != 0)
    return FALSE;
  out->len = (unsigned short)(bytes->len / sizeof(struct sock_filter));
  out->filter = (struct sock_filter *)g_byte_array_free(g_steal_pointer(&bytes), FALSE);
  return TRUE;
}

/* The filter into *OUT; FOR_MAKER: clone(CLONE_NEWPID) allowed. */
static gboolean
compile_filter(gboolean for_maker, struct sock_fprog *out, GError **error)
{
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot create a filter");
    return FALSE;
  }
  const char *failed = NULL;
  for (const char *const *name = denied; *name != NULL && failed == NULL; name++) {
    int call = seccomp_syscall_resolve_name(*name);
    if (call == __NR_SCMP_ERROR)
      continue; /* not a call of this architecture */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), call, 0) != 0)
      failed = *name;
  }
  /* Terminal input injection, and the console's copy-and-paste. */
  if (failed == NULL &&
      !RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
            SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)))
    failed = "ioctl(TIOCSTI)";
  if (failed == NULL &&
      !RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
            SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX)))
    failed = "ioctl(TIOCLINUX)";
  /* New namespaces through clone; clone3 hides its flags in memory. */
  for (guint i = 0; failed == NULL && i < G_N_ELEMENTS(namespace_flags); i++)
    if (!(for_maker && namespace_flags[i] == CLONE_NEWPID) && !RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
              SCMP_A0(SCMP_CMP_MASKED_EQ, namespace_flags[i], namespace_flags[i])))
      failed = "clone(CLONE_NEW*)";
  if (failed == NULL && !RULE(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0))
    failed = "clone3";
  /* Sockets: no path to the hypervisor; of netlink, routing only.  The
   * arguments are ints: the kernel reads their low 32 bits, so the rules
   * compare those only (a value with high bits set must not slip past).
   * A netlink protocol is below 32 or refused by the kernel: one rule per
   * low bit denies every one but NETLINK_ROUTE (0). */
  if (failed == NULL &&
      !RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
            SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_VSOCK)))
    failed = "socket(AF_VSOCK)";
  for (guint bit = 1; failed == NULL && bit < 32; bit <<= 1)
    if (!RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2,
              SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_NETLINK),
              SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit)))
      failed = "socket(AF_NETLINK)";
  if (failed == NULL && seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
    failed = "calls of another ABI";
  gboolean exported = failed == NULL && export_program(ctx, out);
  seccomp_release(ctx);
  if (failed != NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot add the rule for %s",
                failed);
    return FALSE;
  }
  if (!exported) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot compile the filter");
    return FALSE;
  }
  return TRUE;
}

gboolean
cx__worker_seccomp_prepare(GError **error)
{
  return compile_filter(FALSE, &program, error) && compile_filter(TRUE, &maker_program, error);
}
#endif /* HAVE_SECCOMP */
