#!/bin/sh
# The library's ABI against the baseline in lib/libcellexec.abi: additions
# are fine, any incompatible change (a removed function, a changed type)
# fails.  After an intended addition, refresh the baseline with
# `make update-abi`.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
if ! command -v abidiff >/dev/null 2>&1; then
  echo "abidiff not found (Debian package abigail-tools): skipped"; exit 77
fi
if [ -n "${CELLEXEC_SANITIZED:-}" ]; then
  echo "sanitizer build: its ABI is not the release ABI: skipped"; exit 77
fi
abidiff --headers-dir2 "$srcdir/include/cellexec" --headers-dir2 "$builddir/include/cellexec" \
  "$srcdir/lib/libcellexec.abi" "$builddir/.libs/libcellexec.so"
status=$?
if [ $((status & 11)) -ne 0 ]; then
  echo "FAIL test_abi_compatible_with_baseline (abidiff status $status)"
  echo "test_abi: 0 passed, 1 failed"
  exit 1
fi
echo "ok   test_abi_compatible_with_baseline"
echo "test_abi: 1 passed, 0 failed"
