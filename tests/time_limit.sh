#!/bin/sh
# time_limit.sh SECONDS PROGRAM [ARG]...: run one test program with a time
# limit (make check passes TEST_TIME_LIMIT, 600 by default).  A test
# that hangs then fails, saying so in its log, instead of holding the
# whole run until the CI gives up on it.  The program and everything it
# started in its process group get SIGTERM at the limit, SIGKILL 10 s
# later.  Shortly before the limit, the stack of every thread of every
# process still running is written to the log (when gdb is installed),
# so a hang seen once in CI says where it hung.
limit=$1
shift
started=$(date +%s)

# The processes of the group that timeout(1), our child, leads.
dump_stacks() {
  leader=$(ps -e -o pid=,ppid=,comm= | awk -v p=$$ '$2 == p && $3 == "timeout" { print $1 }')
  [ -n "$leader" ] || return 0
  echo "time_limit: $* has run for $(($(date +%s) - started)) s; its processes' stacks:"
  command -v gdb >/dev/null 2>&1 || { echo "time_limit: (gdb is not installed: no stacks)"; return 0; }
  # Shells (this script, sanitized_run.sh, test scripts) say nothing useful.
  for pid in $(ps -e -o pid=,pgid=,comm= |
               awk -v g="$leader" '$2 == g && $1 != g && $3 !~ /^(sh|dash|bash)$/ { print $1 }'); do
    echo "--- process $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-200)"
    timeout 20 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'thread apply all bt 25' </dev/null 2>/dev/null |
      grep -E '^(Thread |#)' | head -n 300
  done
}

watchdog() {
  sleep "$1" &
  shift
  trap 'kill $! 2>/dev/null; exit 0' TERM
  wait $!
  dump_stacks "$@"
}
dump_after=$((limit > 120 ? limit - 60 : limit / 2))
watchdog "$dump_after" "$@" &
watchdog_pid=$!

timeout --kill-after=10 "$limit" "$@"
status=$?
kill $watchdog_pid 2>/dev/null
wait $watchdog_pid 2>/dev/null
if [ $status -eq 124 ] || { [ $status -eq 137 ] && [ $(($(date +%s) - started)) -ge "$limit" ]; }; then
  echo "time_limit: $* was still running after $limit s and was killed" \
    "(make check TEST_TIME_LIMIT=SECONDS raises the limit)"
fi
# For setup.sh's list of the slowest tests.
echo "time_limit: took $(($(date +%s) - started)) s"
exit $status
