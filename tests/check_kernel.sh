#!/bin/sh
# cellexec kernel (tests/kernel/test_kernel.py): kernelspecs made here with
# `cellexec kernel install --prefix`, Jupyter's kernel tests and
# jupyter_client's KernelManager against them, and ipykernel ("python3",
# on the same Python) beside them to prove the samples.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
python=${CELLEXEC_PYTHON:?run with make check}
if [ ! -x "$builddir/tools/.libs/cellexec" ] || ! "$builddir/tools/cellexec" kernel --help >/dev/null 2>&1; then
  echo "test_kernel: skipped: cellexec was built without libzmq (no kernel command)"
  exit 77
fi
if ! "$python" -c 'import jupyter_kernel_test, ipykernel' 2>/dev/null; then
  echo "test_kernel: python3-jupyter-kernel-test or python3-ipykernel is missing: run ./setup.sh"
  exit 1
fi
prefix="$builddir/tests/kernel-prefix"
. "$srcdir/tests/kernelspecs.sh"
install_kernelspecs "$prefix" || exit 1
export JUPYTER_PATH="$prefix/share/jupyter" JUPYTER_RUNTIME_DIR="$builddir/tests/kernel-runtime" \
  PYDEVD_DISABLE_FILE_VALIDATION=1
if [ -z "$CELLEXEC_SANITIZED" ]; then
  exec "$python" "$srcdir/tests/kernel/test_kernel.py" "$@"  # test names: run those alone
fi
# The sanitizer build: the kernel's C code (and its workers) under ASan and
# UBSan, driven by the suites that talk to cellexec's kernel.  Left out:
# what runs ipykernel alone, the sandbox and the kernel under an
# address-space cap (UnauthenticatedPeerTests: a memory limit and ASan's
# reserved shadow memory exclude each other), and the notebooks and the
# Jupyter Server, which add time and no kernel code.  A kernel's stderr
# reaches no assertion, so the sanitizers write their reports to files,
# and any report fails the run.
reports="$builddir/tests/kernel-sanitizer"
rm -rf "$reports" && mkdir -p "$reports" || exit 99
ASAN_OPTIONS="log_path=$reports/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="log_path=$reports/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS
"$python" "$srcdir/tests/kernel/test_kernel.py" CellexecKernelTests KernelManagerTests \
  SignalInterruptTests FrontEndCommTests StopOnErrorTests UserExpressionsTests \
  HostileFrontEndTests OrphanTests CommandLineTests FrontEndViewTests NulTests
status=$?
# LeakSanitizer's tracer crashing at exit is the tool's failure, not a
# finding (tests/sanitized_run.sh); anything else is one.
found=$(grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error:' \
          "$reports"/* 2>/dev/null)
if [ -n "$found" ]; then
  echo "test_kernel: the sanitizers reported in the kernel's processes:"
  cat $found
  exit 1
fi
exit $status
