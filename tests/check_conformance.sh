#!/bin/sh
# `cellexec plugins --check`, the plugin author's conformance kit, on the
# plugins built here: each built-in plugin must pass every case that
# applies to it, and a plugin that breaks the contract at run time
# (tests/plugins/case_plugin.c, CASE_NONCONFORMING) must fail it, saying why;
# one that crashes, exits or hangs in run_cell (CASE_RUN_CELL_*) costs only
# the cases it does it in.
# examples/hello-plugin is checked by check_example.sh, built as a third
# party builds it.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
cellexec="$builddir/tools/cellexec"
passed=0 failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cellexec-conformance-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; sed 's/^/  /' "$tmp/out"; failed=$((failed + 1)); }

# A built-in plugin passes, with no case failed.
plugins="local subprocess fake"
# The jupyter backend when it was built (libzmq found); ipykernel kernels.
[ -f "$builddir/plugins/.libs/jupyter.so" ] && plugins="$plugins jupyter"
for plugin in $plugins; do
  # No kernel kept warm per case: most cases open sessions, and each
  # kernel costs a second of CPU (the pool is test_jupyter's).
  options=
  [ $plugin = jupyter ] && options="-o pool-size=0"
  "$cellexec" plugins --check "$builddir/plugins/.libs/$plugin.so" $options >"$tmp/out" 2>&1
  status=$?
  cp "$tmp/out" "$tmp/$plugin.out"
  if [ $status -eq 0 ] && grep -q '^[0-9]* passed, 0 failed, [0-9]* skipped$' "$tmp/out" &&
     ! grep -q '^FAIL' "$tmp/out"; then
    pass "test_conformance_$plugin"
  else
    echo "(exit $status)" >>"$tmp/out"; fail "test_conformance_$plugin"
  fi
done

# The Python backends run the Python cases and the executor table.
cp "$tmp/local.out" "$tmp/out"
if grep -q '^ok - timeout_is_honoured$' "$tmp/out" && grep -q '^ok - executor_numbers_cross_exactly$' "$tmp/out" &&
   grep -q '^ok - interrupt_stops_a_running_session_cell$' "$tmp/out"; then
  pass test_conformance_runs_the_python_and_executor_cases
else
  fail test_conformance_runs_the_python_and_executor_cases
fi

# A plugin that breaks the contract fails, one clear line per broken case.
"$cellexec" plugins --check "$builddir/tests/plugins/.libs/nonconforming.so" >"$tmp/out" 2>&1
status=$?
if [ $status -eq 1 ] &&
   grep -q '^FAIL - run_cell_returns_a_bundle: .*it says failure without an error' "$tmp/out" &&
   grep -q '^FAIL - query_info_is_a_json_object: .*not a.* object' "$tmp/out" &&
   grep -q '^[0-9]* passed, [1-9][0-9]* failed, [0-9]* skipped$' "$tmp/out"; then
  pass test_conformance_fails_a_nonconforming_plugin
else
  echo "(exit $status)" >>"$tmp/out"; fail test_conformance_fails_a_nonconforming_plugin
fi

# A file the registry refuses: exit 2, the registry's reason on stderr.
"$cellexec" plugins --check "$builddir/tests/plugins/.libs/bad_default.so" >"$tmp/out" 2>"$tmp/err"
status=$?
cat "$tmp/err" >>"$tmp/out"
if [ $status -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
   grep -q "^cellexec: plugin .*bad_default.so: .*default 'three' of option 'retries'" "$tmp/err"; then
  pass test_conformance_reports_an_unloadable_plugin_verbatim
else
  echo "(exit $status)" >>"$tmp/out"; fail test_conformance_reports_an_unloadable_plugin_verbatim
fi

# The kit on the test plugin PLUGIN.so, with more arguments, through a
# TMPDIR of its own: the output in $tmp/out, the exit status in $status and
# what it left in that TMPDIR in $leftover (nothing, always).
check_test_plugin() {
  plugin=$1; shift
  rm -rf "$tmp/kit-tmp" && mkdir "$tmp/kit-tmp"
  TMPDIR="$tmp/kit-tmp" "$cellexec" plugins --check "$builddir/tests/plugins/.libs/$plugin.so" "$@" \
    >"$tmp/out" 2>&1
  status=$?
  leftover=$(ls -A "$tmp/kit-tmp")
}

# A plugin that takes the process down in run_cell costs each case that runs
# a cell, saying how; the other cases still run, and the summary follows.
# The hang costs the time limit once per case that runs a cell: short, but
# with room for loading the plugin in a fresh child of a sanitizer build on
# a loaded machine (0.5 s was not always enough).
for outcome in 'abort|the plugin crashed (signal 6, SIGABRT)' \
               'exit|the plugin exited with status 7: it calls exit() or _exit()' \
               'hang|the plugin did not finish within 4 s (--case-timeout)'; do
  plugin=run_cell_${outcome%%|*} reason=${outcome#*|}
  check_test_plugin "$plugin" --case-timeout 4
  if [ $status -eq 1 ] && [ -z "$leftover" ] &&
     grep -qxF "FAIL - run_cell_returns_a_bundle: $reason" "$tmp/out" &&
     grep -qxF "FAIL - run_options_are_accepted: $reason" "$tmp/out" &&
     grep -q '^skip - query_info_is_a_json_object: ' "$tmp/out" &&
     grep -qx '1 passed, 5 failed, 15 skipped' "$tmp/out"; then
    pass "test_conformance_survives_$plugin"
  else
    echo "(exit $status, left behind: $leftover)" >>"$tmp/out"; fail "test_conformance_survives_$plugin"
  fi
done

# SIGTERM while a case hangs: the kit ends, and takes its directory with it.
rm -rf "$tmp/kit-tmp" && mkdir "$tmp/kit-tmp"
TMPDIR="$tmp/kit-tmp" "$cellexec" plugins --check "$builddir/tests/plugins/.libs/run_cell_hang.so" \
  --case-timeout 60 >"$tmp/out" 2>&1 &
pid=$!
tries=0
while ! grep -q '^ok - loads' "$tmp/out" && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
kill -TERM $pid
wait $pid 2>/dev/null # no "Terminated" from the shell
status=$?
leftover=$(ls -A "$tmp/kit-tmp")
if [ $status -eq 143 ] && [ -z "$leftover" ]; then
  pass test_conformance_cleans_up_on_sigterm
else
  echo "(exit $status, left behind: $leftover)" >>"$tmp/out"; fail test_conformance_cleans_up_on_sigterm
fi

# Messages name the plugin file as the user did, not the kit's private link.
mkdir "$tmp/user" && cp "$builddir/tests/plugins/.libs/no_result.so" "$tmp/user/"
(cd "$tmp/user" && "$cellexec" plugins --check ./no_result.so) >"$tmp/out" 2>&1
status=$?
if [ $status -eq 1 ] &&
   grep -q '^FAIL - run_cell_returns_a_bundle: .*gave no error; this is a bug in the plugin \./no_result\.so$' "$tmp/out" &&
   ! grep -q 'cellexec-check-' "$tmp/out"; then
  pass test_conformance_names_the_users_path
else
  echo "(exit $status)" >>"$tmp/out"; fail test_conformance_names_the_users_path
fi

# Usage: no such file; not NAME.so.
"$cellexec" plugins --check "$tmp/missing.so" >"$tmp/out" 2>&1; a=$?
touch "$tmp/plugin.txt"
"$cellexec" plugins --check "$tmp/plugin.txt" >>"$tmp/out" 2>&1; b=$?
if [ $a -eq 2 ] && [ $b -eq 2 ]; then
  pass test_conformance_usage_errors_exit_2
else
  echo "(exits $a $b)" >>"$tmp/out"; fail test_conformance_usage_errors_exit_2
fi

echo "test_conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
