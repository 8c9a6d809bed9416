#!/bin/sh
# examples/executor_demo.c, built as a user would: against an installed
# cellexec (a staged install), with nothing but pkg-config, then run on
# every backend that has the executor operations.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
passed=0 failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cellexec-example-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# make check stages an install in tests/stage before the tests run; copy
# it, so that the .pc file can be pointed at where the copy lives.
if [ ! -d "$builddir/tests/stage" ]; then
  echo "no staged install in $builddir/tests/stage: run with make check"
  echo "test_example: 0 passed, 1 failed"; exit 1
fi
cp -a "$builddir/tests/stage" "$tmp/root"
pc=$(find "$tmp/root" -name cellexec.pc)
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pc"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs cellexec)
libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir cellexec)
# EXAMPLE_CFLAGS: a sanitizer build's library needs a sanitized program.
if ${CC:-cc} ${EXAMPLE_CFLAGS:-} -o "$tmp/executor_demo" "$srcdir/examples/executor_demo.c" $flags; then
  echo "ok   test_example_builds_with_pkg_config"; passed=$((passed + 1))
else
  echo "FAIL test_example_builds_with_pkg_config"; echo "test_example: $passed passed, 1 failed"; exit 1
fi

# Every usable backend whose plugin has the executor operations.
backends=$(CELLEXEC_PLUGIN_PATH="$builddir/plugins/.libs" "$builddir/tools/cellexec" plugins |
  awk '/^[a-z0-9_-]+ .*: ok$/ { name = $1 } /^  executor operations: yes$/ { print name }')
echo "backends with executor operations: $backends"
[ -n "$backends" ] || { echo "FAIL no backend with executor operations"; failed=1; }
for backend in $backends; do
  out=$(cd "$tmp" && LD_LIBRARY_PATH="$libdir" ./executor_demo "$backend" 2>&1)
  status=$?
  export_file=$(printf '%s\n' "$out" | sed -n 's/^debug export: *//p')
  if [ $status -eq 0 ] &&
     printf '%s\n' "$out" | grep -q '^evaluate_inline: *112$' &&
     printf '%s\n' "$out" | grep -q '^execute_block: *18$' &&
     printf '%s\n' "$out" | grep -q '^dynamic function: *"HEYHEY / HOHOHO"$' &&
     printf '%s\n' "$out" | grep -q '"kind":"union"' &&
     [ -f "$export_file" ] && grep -q '^## 1\. execute_prelude' "$export_file"; then
    echo "ok   test_example_runs_on_$backend"; passed=$((passed + 1))
  else
    echo "FAIL test_example_runs_on_$backend (exit $status):"; printf '%s\n' "$out" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
done
echo "test_example: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
