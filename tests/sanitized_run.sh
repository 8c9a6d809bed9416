#!/bin/sh
# Run a test program of the sanitizer build.  LeakSanitizer's own tracer
# (the thread that stops the others to look for leaks at exit) sometimes
# dies of SIGSEGV in CI before it has judged anything ("Tracer caught
# signal 11 ... LeakSanitizer has encountered a fatal error"): a crash of
# the tool, not a finding, seen in the programs that embed Python while
# another test program loads the machine, once twice in a row.  Such a run
# is made again, at most twice, and only for that; a leak report, every
# other sanitizer finding and every test failure stand.
out=$(mktemp "${TMPDIR:-/tmp}/cellexec-sanitized-XXXXXX") || exit 99
trap 'rm -f "$out"' EXIT
# Killed at the time limit (tests/time_limit.sh): what the program printed
# so far, which names the test it was in, still reaches the log.
trap 'cat "$out"; rm -f "$out"; exit 143' TERM
for attempt in 1 2 3; do
  "$@" >"$out" 2>&1
  status=$?
  if [ $status -eq 0 ] || [ $attempt -eq 3 ] ||
     ! grep -q 'LeakSanitizer has encountered a fatal error' "$out" ||
     grep -q 'ERROR: LeakSanitizer: detected memory leaks' "$out"; then
    break
  fi
  echo "sanitized_run: LeakSanitizer's tracer crashed at exit; running $1 again"
  grep -a 'Tracer caught signal' "$out"
done
cat "$out"
exit $status
