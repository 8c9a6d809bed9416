#!/bin/sh
# Set up a Debian 12 machine for cellexec, build it, and run it.
#
#   ./setup.sh demo   install what is missing, build, run a cell on the default backend
#   ./setup.sh test   install what is missing, build, run the whole test suite:
#                     make check, make fuzz, the same under ASan+UBSan, under valgrind
#                     (the CUnit programs), and make distcheck-quick (tests/tests.mk);
#                     keeps each check's test-suite.log in _build/harness/; exits 0
#                     when every stage passed
#
# Builds go to _build/ (and _build-sanitize/); the source tree stays clean
# but for tests/node/node_modules, which git ignores.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
jobs=${JOBS:-2}

packages="build-essential autoconf automake libtool pkg-config
  libglib2.0-dev libjson-glib-dev python3 python3-dev libcunit1-dev libzmq3-dev
  python3-ipython python3-ipykernel python3-jupyter-client python3-numpy python3-matplotlib
  python3-nbformat python3-nbclient python3-jupyter-kernel-test jupyter-client valgrind abigail-tools
  python3-pytest python3-xmltodict python3-nbconvert python3-testpath python3-ipywidgets
  libsoup-3.0-dev python3-jupyter-server python3-zmq libseccomp-dev clang wrk python3-tqdm
  python3-notebook chromium python3-jupyter-console python3-pexpect"

# Install those of the Debian packages named as arguments that are missing.
install_missing() {
  missing=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
      missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  echo "setup: installing$missing"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
}

# The JavaScript clients tests/check_clients.sh and tests/check_browser.sh
# run: Node and npm (Debian's, when the machine has none), and the packages
# tests/node/package-lock.json pins, into tests/node/node_modules (ignored
# by git), again only when the lock changed.
install_clients() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    install_missing nodejs npm
  fi
  lock=tests/node/package-lock.json installed=tests/node/node_modules/.package-lock.json
  if [ ! -f "$installed" ] || [ "$lock" -nt "$installed" ]; then
    echo "setup: npm ci in tests/node"
    (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# configure in DIR with extra ARGS, then build.
build() {
  dir=$1; shift
  [ -x configure ] || { mkdir -p m4 && autoreconf -fi; }
  mkdir -p "$dir"
  (cd "$dir" && { [ -f Makefile ] || "$here/configure" -q "$@"; } && make -s -j"$jobs")
}

# The test logs a check in DIR wrote since it started (check_in touches
# tests/.check-started): a stage that runs fewer tests than the one before
# it (check-valgrind) must not report the earlier stage's logs.
check_logs() {
  find "$1/tests" -maxdepth 1 -name '*.log' -newer "$1/tests/.check-started" | sort
}

# Print the "PROGRAM: N passed, N failed" lines of a finished check, tagged;
# a test that failed before printing its own (killed, crashed) counts as
# one failure.
summarise() {
  dir=$1 tag=$2
  check_logs "$dir" | while read -r log; do
    lines=$(sed -n "s/^\(test_[a-z_]*\): \([0-9]* passed, [0-9]* failed\)$/$tag\1: \2/p" "$log")
    if [ -n "$lines" ]; then
      echo "$lines"
    elif grep -q -E '^:test-result: (FAIL|ERROR)' "${log%.log}.trs" 2>/dev/null; then
      echo "$tag$(basename "$log" .log): 0 passed, 1 failed"
    fi
  done
}

# Run one stage; record a failure but carry on so every stage reports.
failed_stages=""
stage() {
  name=$1; shift
  stage_name=$name
  echo "== $name"
  started=$(date +%s)
  if ! "$@"; then
    failed_stages="$failed_stages $name"
    echo "== $name FAILED"
  fi
  echo "== $name took $(($(date +%s) - started)) s"
}

# The five slowest tests of the last check in DIR (tests/time_limit.sh
# logs how long each took), to show where a stage's time goes.
slowest() {
  check_logs "$1" | while read -r log; do
    took=$(sed -n 's/^time_limit: took \([0-9]*\) s$/\1/p' "$log" | tail -n 1)
    [ -n "$took" ] && echo "$took $(basename "${log%.log}")"
  done | sort -rn | head -n 5 |
    awk '{ printf "%s%s %s s", (NR > 1 ? ", " : "slowest: "), $2, $1 } END { if (NR > 0) print "" }'
}

# The test harness's own summary of each check stage (automake's
# test-suite.log, its "# PASS:" ... lines), kept as _build/harness/STAGE.log
# for .ci/run: make check-valgrind writes the same file as make check.
harness_dir="$here/_build/harness"

check_in() {
  dir=$1 tag=$2; shift 2
  status=0
  mkdir -p "$dir/tests" && touch "$dir/tests/.check-started"
  (cd "$dir" && make -s -j"$jobs" "$@") || status=1
  mkdir -p "$harness_dir"
  # Only this check's: one that stopped before its tests left an older one.
  if [ "$dir/test-suite.log" -nt "$dir/tests/.check-started" ]; then
    cp "$dir/test-suite.log" "$harness_dir/$stage_name.log"
  else
    echo "# ERROR: 1 ($dir/test-suite.log was not written)" >"$harness_dir/$stage_name.log"
  fi
  summarise "$dir" "$tag"
  slowest "$dir"
  if [ $status -ne 0 ]; then
    check_logs "$dir" | while read -r log; do
      grep -q -E '^:test-result: (FAIL|ERROR)' "${log%.log}.trs" 2>/dev/null &&
        { echo "--- $log"; grep -B 2 -A 12 -E 'FAILED|ERROR|expected|^FAIL |^time_limit:' "$log" | head -n 80; }
    done
  fi
  return $status
}

# make fuzz in DIR (each libFuzzer target for ~30 s), its lines tagged.
fuzz_in() {
  dir=$1
  status=0
  (cd "$dir" && make -s fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-30}" FUZZ_JOBS="$jobs") || status=1
  for log in "$dir"/tests/fuzz/*.log; do
    [ -f "$log" ] || continue
    sed -n "s/^\(test_[a-z_]*\): \([0-9]* passed, [0-9]* failed\)$/fuzz:\1: \2/p" "$log"
  done
  return $status
}

case "${1:-}" in
demo)
  install_missing $packages
  build _build
  echo "setup: running a cell on the default backend:"
  echo "  _build/tools/cellexec run --json -c \"print('hello')\\n1 + 1\""
  cd _build
  # Uninstalled: point cellexec at the plugins and helper programs built here.
  CELLEXEC_PLUGIN_PATH="$PWD/plugins/.libs" CELLEXEC_PROBE="$PWD/lib/cellexec-probe" \
  CELLEXEC_WORKER="$PWD/plugins/subprocess/.libs/cellexec-worker" \
    ./tools/cellexec run --json -c "print('hello')
1 + 1"
  ;;
test)
  install_missing $packages
  install_clients
  rm -rf "$harness_dir"
  stage build build _build
  stage check check_in _build "" check
  stage soak sh -c "cd _build && make -s soak SOAK_FLAGS='-n 1000'"
  stage fuzz fuzz_in _build
  stage build-sanitize build _build-sanitize --enable-sanitizers
  stage check-sanitize check_in _build-sanitize "sanitize:" check
  stage check-valgrind check_in _build "valgrind:" check-valgrind
  stage distcheck sh -c "cd _build && make -s -j\"$jobs\" distcheck-quick >distcheck.log 2>&1 || { tail -n 60 distcheck.log; exit 1; }"
  if [ -n "$failed_stages" ]; then
    echo "setup: failed stages:$failed_stages"
    exit 1
  fi
  echo "setup: every stage passed"
  ;;
*)
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
