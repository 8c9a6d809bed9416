/* plugins/subprocess/worker/seccomp.c: the sandbox's system-call filter.
 *
 * Everything is allowed but what a cell has no business doing: debugging
 * other processes, the kernel's administration, new namespaces, terminal
 * input injection.  Denied calls fail with EPERM (clone3 with ENOSYS, so
 * that the C library falls back to clone, whose flags the filter can
 * see).  Calls of another architecture (i386 on x86_64) kill the process:
 * libseccomp's default for a foreign architecture.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <sys/ioctl.h>

#include "plugins/subprocess/worker/worker.h"

#ifndef HAVE_SECCOMP
gboolean
cx__worker_seccomp_apply(GError **error)
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
  "fanotify_init", NULL
};

static const int namespace_flags[] = { CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                       CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP };

#define RULE(ctx, action, call, ...)                                                   \
  (seccomp_rule_add(ctx, action, call, __VA_ARGS__) == 0)

gboolean
cx__worker_seccomp_apply(GError **error)
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
    if (!RULE(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
              SCMP_A0(SCMP_CMP_MASKED_EQ, namespace_flags[i], namespace_flags[i])))
      failed = "clone(CLONE_NEW*)";
  if (failed == NULL && !RULE(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0))
    failed = "clone3";
  if (failed == NULL && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) != 0)
    failed = "no-new-privs";
  int loaded = failed == NULL ? seccomp_load(ctx) : 0;
  seccomp_release(ctx);
  if (failed != NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot add the rule for %s",
                failed);
    return FALSE;
  }
  if (loaded != 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "seccomp: cannot load the filter: %s",
                g_strerror(-loaded));
    return FALSE;
  }
  return TRUE;
}
#endif /* HAVE_SECCOMP */
