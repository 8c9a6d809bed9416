#!/bin/sh
# The exported surface: libcellexec exports only cx_* (its version script),
# every plugin exports only its entry symbol (-fvisibility=hidden), and the
# worker program exports nothing (no -Wl,--export-dynamic, and no copy
# relocations of library data: it is compiled with -fPIC).
builddir=${CELLEXEC_BUILDDIR:?run with make check}
passed=0 failed=0

check() { # NAME FILE ALLOWED-REGEX
  exported=$(nm -D --defined-only "$2" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sed 's/@.*//' | sort -u)
  extra=$(printf '%s\n' "$exported" | grep -v -E "$3" | grep -v '^$')
  if [ -z "$exported" ]; then
    echo "FAIL $1: $2 exports nothing"; failed=$((failed + 1))
  elif [ -n "$extra" ]; then
    echo "FAIL $1: $2 exports symbols outside $3:"; printf '  %s\n' $extra; failed=$((failed + 1))
  else
    echo "ok   $1"; passed=$((passed + 1))
  fi
}

# cx_ and then not a second _: the internal cx__ names stay inside.
check test_library_exports_only_cx_api "$builddir/.libs/libcellexec.so" '^cx_[a-z0-9][a-z0-9_]*$'
for plugin in "$builddir"/plugins/.libs/*.so; do
  check "test_plugin_$(basename "$plugin" .so)_exports_only_its_entry" "$plugin" '^cellexec_plugin_entry$'
done
# Nothing outside the worker binds to its symbols: none are exported.
worker="$builddir/plugins/subprocess/.libs/cellexec-worker"
if [ ! -x "$worker" ]; then
  echo "FAIL test_worker_exports_nothing: $worker not built"; failed=$((failed + 1))
else
  exported=$(nm -D --defined-only "$worker" | awk 'NF == 3 { print $3 }')
  if [ -z "$exported" ]; then
    echo "ok   test_worker_exports_nothing"; passed=$((passed + 1))
  else
    echo "FAIL test_worker_exports_nothing: $worker exports:"; printf '  %s\n' $exported
    failed=$((failed + 1))
  fi
fi
# Each exported function carries the version node of the ABI minor that
# added it (lib/libcellexec.map): one of 1.0 and one of 1.1 by name, none
# without a node, and a node for the minor this tree builds.
library="$builddir/.libs/libcellexec.so"
symbols=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | grep '^cx_')
unversioned=$(printf '%s\n' "$symbols" | grep -v -E '@@CELLEXEC_1\.[0-9]+$')
minor=$(sed -n 's/^#define CX_ABI_MINOR \([0-9]*\).*/\1/p' "$builddir/include/cellexec/version.h")
if [ -n "$unversioned" ]; then
  echo "FAIL test_library_symbols_are_versioned: without a version node:"; printf '  %s\n' $unversioned
  failed=$((failed + 1))
elif ! printf '%s\n' "$symbols" | grep -q -x 'cx_version@@CELLEXEC_1.0' ||
     ! printf '%s\n' "$symbols" | grep -q -x 'cx_json_to_string@@CELLEXEC_1.1'; then
  echo "FAIL test_library_symbols_are_versioned: cx_version is not in CELLEXEC_1.0, or"
  echo "     cx_json_to_string (added by ABI 1.1) not in CELLEXEC_1.1"
  failed=$((failed + 1))
elif [ -z "$minor" ] || ! printf '%s\n' "$symbols" | grep -q "@@CELLEXEC_1\.$minor\$"; then
  echo "FAIL test_library_symbols_are_versioned: no function in CELLEXEC_1.$minor, the node of"
  echo "     the ABI minor this tree builds (CX_ABI_MINOR $minor): add one to lib/libcellexec.map"
  failed=$((failed + 1))
else
  echo "ok   test_library_symbols_are_versioned"; passed=$((passed + 1))
fi

# What the nodes are for: a program that calls a 1.1 function, started
# against a core whose library has only the 1.0 node, is refused by the
# dynamic linker, by name, before it runs.
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
printf 'CELLEXEC_1.0 { global: cx_version; local: *; };\n' > "$old/old.map"
printf 'const char *cx_version(void) { return "1.0.0"; }\n' > "$old/old.c"
printf 'void *cx_json_to_string(void *, int);\nint main(void) { return cx_json_to_string(0, 0) != 0; }\n' \
  > "$old/program.c"
if [ -n "${CELLEXEC_SANITIZED:-}" ]; then
  echo "ok   test_newer_minor_is_refused_by_an_older_core (sanitizer build: not linked against)"
  passed=$((passed + 1))
elif ! ${CC:-cc} -shared -fPIC -Wl,-soname,libcellexec.so.0 -Wl,--version-script="$old/old.map" \
       -o "$old/libcellexec.so.0" "$old/old.c" ||
   ! ${CC:-cc} -o "$old/program" "$old/program.c" -L"$builddir/.libs" -lcellexec; then
  echo "FAIL test_newer_minor_is_refused_by_an_older_core: cannot build the probe (cc)"
  failed=$((failed + 1))
elif refused=$(LD_LIBRARY_PATH="$old" "$old/program" 2>&1); then
  echo "FAIL test_newer_minor_is_refused_by_an_older_core: it ran"; failed=$((failed + 1))
elif printf '%s' "$refused" | grep -q "version .CELLEXEC_1.1' not found"; then
  echo "ok   test_newer_minor_is_refused_by_an_older_core"; passed=$((passed + 1))
else
  echo "FAIL test_newer_minor_is_refused_by_an_older_core: $refused"; failed=$((failed + 1))
fi

echo "test_symbols: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
