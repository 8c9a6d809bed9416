/* cellexec-probe FILE: load a plugin the way the registry does, in a
 * process of its own, so that a plugin whose entry or init crashes, hangs
 * or exits takes down this process instead of the host.  When the entry
 * and init return, it prints CX__PROBE_VERDICT as its last line: the
 * registry takes anything else (a signal, an exit without the line, the
 * host's time limit) as a fault, and learns everything else by loading the
 * plugin itself. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/internal.h"

/* In a sanitizer build, let a crash be a crash: the registry reads the
 * signal, and ASan would turn it into an ordinary exit.  (Unused otherwise.) */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:detect_leaks=0";
}

int
main(int argc, char **argv)
{
  if (argc != 2)
    return 2;
  void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  cx_plugin_entry_func entry = handle != NULL ? (cx_plugin_entry_func)dlsym(handle, CX_PLUGIN_ENTRY_SYMBOL) : NULL;
  const cx_plugin *descriptor = entry != NULL ? entry() : NULL;
  if (descriptor != NULL && descriptor->abi_major == CX_ABI_MAJOR &&
      descriptor->struct_size >= CX__DESCRIPTOR_SIZE_1_0 && descriptor->init != NULL) {
    GError *error = NULL;
    descriptor->init(&error);
    g_clear_error(&error);
  }
  /* After whatever the plugin printed. */
  printf("\n" CX__PROBE_VERDICT "\n");
  return fflush(stdout) == 0 ? 0 : 1;
}
