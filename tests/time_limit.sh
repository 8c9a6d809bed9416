#!/bin/sh
# time_limit.sh SECONDS PROGRAM [ARG]...: run one test program with a time
# limit (make check passes TEST_TIME_LIMIT, 600 by default).  A test
# that hangs then fails, saying so in its log, instead of holding the
# whole run until the CI gives up on it.  The program and everything it
# started in its process group get SIGTERM at the limit, SIGKILL 10 s
# later.
limit=$1
shift
started=$(date +%s)
timeout --kill-after=10 "$limit" "$@"
status=$?
if [ $status -eq 124 ] || { [ $status -eq 137 ] && [ $(($(date +%s) - started)) -ge "$limit" ]; }; then
  echo "time_limit: $* was still running after $limit s and was killed" \
    "(make check TEST_TIME_LIMIT=SECONDS raises the limit)"
fi
exit $status
