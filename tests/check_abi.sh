#!/bin/sh
# The library's ABI against the baseline in lib/libcellexec.abi: additions
# are fine, any other change (a removed function, a changed signature or
# public type) fails.  After an intended addition, refresh the baseline
# with `make update-abi`, which runs this script with --update: dump()
# below is the one way the baseline is made.
#
# The dump leaves out source locations (file, line, column) and the
# compilation directory, so the baseline is the same whichever tree or
# directory it was built in, and a change of line numbers is no ABI change.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
baseline="$srcdir/lib/libcellexec.abi"
if ! command -v abidw >/dev/null 2>&1 || ! command -v abidiff >/dev/null 2>&1; then
  echo "abidw/abidiff not found (Debian package abigail-tools): skipped"; exit 77
fi

dump() { # the ABI of the library built in $builddir, on stdout
  # The name of each translation unit is the source file as the compiler
  # was given it ("../lib/result.c", "../src/lib/result.c", an absolute
  # path): only its part from lib/ on is kept.
  abidw --no-corpus-path --no-show-locs --no-comp-dir-path \
    --headers-dir "$srcdir/include/cellexec" --headers-dir "$builddir/include/cellexec" \
    "$builddir/.libs/libcellexec.so" |
    sed -e "s|\(<abi-instr [^>]* path='\)[^']*/\(lib/[^'/]*'\)|\1\2|"
}

if [ "${1:-}" = --update ]; then
  dump > "$baseline.tmp" && mv "$baseline.tmp" "$baseline" && echo "updated $baseline"
  exit
fi

if [ -n "${CELLEXEC_SANITIZED:-}" ]; then
  echo "sanitizer build: its ABI is not the release ABI: skipped"; exit 77
fi
passed=0 failed=0

# Where the baseline was made must not show in it.
if grep -q -E "(filepath|comp-dir-path|line|column)='|path='[^l']" "$baseline"; then
  echo "FAIL test_abi_baseline_is_location_free: $baseline holds paths or line numbers;"
  echo "     regenerate it with make update-abi"
  failed=$((failed + 1))
else
  echo "ok   test_abi_baseline_is_location_free"; passed=$((passed + 1))
fi

# Against the library itself (not a dump of it): with its headers, abidiff
# tells the public types from the opaque ones, whose changes are no ABI
# change.  Added functions are fine; anything else abidiff reports fails:
# a removed function (status bit 8) and a changed one (bit 4: a parameter
# added or retyped, a public struct changed).
abidiff --no-added-syms \
  --headers-dir2 "$srcdir/include/cellexec" --headers-dir2 "$builddir/include/cellexec" \
  "$baseline" "$builddir/.libs/libcellexec.so"
status=$?
if [ "$status" -ne 0 ]; then
  echo "FAIL test_abi_compatible_with_baseline (abidiff status $status)"
  failed=$((failed + 1))
else
  echo "ok   test_abi_compatible_with_baseline"; passed=$((passed + 1))
fi

echo "test_abi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
