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

check test_library_exports_only_cx_api "$builddir/.libs/libcellexec.so" '^cx_[a-z0-9_]+$'
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
# The library's symbols carry the version node of the map file.
if nm -D --defined-only "$builddir/.libs/libcellexec.so" | grep -q ' cx_version@@CELLEXEC_1.0$'; then
  echo "ok   test_library_symbols_are_versioned"; passed=$((passed + 1))
else
  echo "FAIL test_library_symbols_are_versioned"; failed=$((failed + 1))
fi

echo "test_symbols: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
