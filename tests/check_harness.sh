#!/bin/sh
# The CUnit programs' verdicts (tests/cx_test_main.c), as automake reads
# them: a program whose every test skipped itself, or that ran no test,
# exits 77 (SKIP), never 0; one that ran a test exits 0; a skipped test
# is counted as skipped, not as passed.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
passed=0 failed=0

# expect NAME STATUS TEXT PROGRAM [ARG]...: PROGRAM exits STATUS and
# prints TEXT (a fixed string) on stdout.
expect() {
  name=$1 want=$2 text=$3
  shift 3
  out=$("$@" 2>/dev/null)
  status=$?
  if [ "$status" -eq "$want" ] && printf '%s\n' "$out" | grep -q -F -- "$text"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $name: exit $status (wanted $want), stdout lacks \"$text\":"
    printf '%s\n' "$out" | tail -n 5
  fi
}

sandbox="$builddir/tests/test_sandbox"
# RLIMIT_AS tests skip themselves in a sanitizer build, which says so
# through CELLEXEC_SANITIZED.
expect all_skipped 77 "test_sandbox: 0 passed, 0 failed" \
  env CELLEXEC_SANITIZED=1 "$sandbox" test_sandbox_memory_hog_is_contained
expect all_skipped_counted 77 "test_sandbox: 1 skipped" \
  env CELLEXEC_SANITIZED=1 "$sandbox" test_sandbox_memory_hog_is_contained
expect none_run 77 "test_sandbox: 0 passed, 0 failed" "$sandbox" no_such_test
expect one_run 0 "test_config: 1 passed, 0 failed" \
  "$builddir/tests/test_config" test_config_byte_order_mark_is_skipped

echo "test_harness: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
