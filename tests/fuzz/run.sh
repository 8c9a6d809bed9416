#!/bin/sh
# tests/fuzz/run.sh: build the libFuzzer targets with clang and run each for
# FUZZ_SECONDS, FUZZ_JOBS of them at a time (make fuzz sets the variables
# below).  Each target's log is
# tests/fuzz/NAME.log in the build tree, ending "test_fuzz_NAME: 1 passed,
# 0 failed" (or 0 passed, 1 failed with the crashing input kept as
# tests/fuzz/crash-NAME-*: copy it into tests/fuzz/regressions/NAME/ and it
# runs as a regression input on every `make fuzz`).
#
# Adding a target: tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput,
# seeds in tests/fuzz/corpus/NAME/, and one line in TARGETS below:
#   NAME  sources beyond libcellexec's, relative to the source tree
set -u
: "${FUZZ_CC:?}" "${srcdir:?}" "${builddir:?}" "${FUZZ_CFLAGS:=}" "${FUZZ_LIBS:=}"
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
FUZZ_JOBS=${FUZZ_JOBS:-2}
TARGETS="
config
result_json
json_text
wire plugins/subprocess/wire/frame.c plugins/subprocess/wire/protocol.c plugins/subprocess/wire/output_limit.c
convert pyembed/convert.c
http_head server/request_head.c
"
# The jupyter backend's messages and the kernel's, when they are built
# (libzmq found).
[ "${FUZZ_JUPYTER:-no}" = yes ] &&
  TARGETS="$TARGETS
jupyter plugins/jupyter/message.c plugins/jupyter/outputs.c jupyter_protocol/message.c jupyter_protocol/zmq_frames.c tests/fuzz/jupyter_frames.c
kernel jupyter_protocol/message.c jupyter_protocol/zmq_frames.c tests/fuzz/jupyter_frames.c"
out="$builddir/tests/fuzz"
mkdir -p "$out/obj"
flags="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -DCX_COMPILATION
  -DCX_PLUGINS_DIR=\"/nonexistent\" -DCX_PROBE_PATH=\"/nonexistent\"
  -I$srcdir/include -I$builddir/include -I$srcdir -I$builddir $FUZZ_CFLAGS"

# libcellexec's sources, instrumented once for all targets.
lib_objects=""
for source in "$srcdir"/lib/*.c; do
  case "$source" in */probe_main.c) continue ;; esac
  object="$out/obj/$(basename "$source" .c).o"
  if [ ! -f "$object" ] || [ "$source" -nt "$object" ]; then
    # clang refuses the floating-point G_STATIC_ASSERTs gcc folds: the gcc
    # build checks them, this copy goes without.
    if grep -q 'G_STATIC_ASSERT' "$source"; then
      copy="$out/obj/$(basename "$source")"
      sed '/^[[:space:]]*G_STATIC_ASSERT(.*);[[:space:]]*$/d' "$source" >"$copy"
      source=$copy
    fi
    $FUZZ_CC $flags -iquote "$srcdir/lib" -fsanitize=fuzzer-no-link -c "$source" \
      -o "$object" || exit 1
  fi
  lib_objects="$lib_objects $object"
done

# Build target NAME (with the EXTRA sources) and run it; its verdict is
# the last line of its log.
run_target() {
  name=$1; shift
  extra=$*
  log="$out/$name.log"
  sources=""
  for file in $extra; do sources="$sources $srcdir/$file"; done
  if ! $FUZZ_CC $flags -fsanitize=fuzzer "$srcdir/tests/fuzz/fuzz_$name.c" $sources \
       $lib_objects $FUZZ_LIBS -ldl -o "$out/fuzz_$name" >"$log" 2>&1; then
    cat "$log"
    echo "test_fuzz_$name: 0 passed, 1 failed" | tee -a "$log"
    return
  fi
  corpus="$out/corpus-$name"
  mkdir -p "$corpus"
  # Regression inputs first: each once, every time.
  regressions="$srcdir/tests/fuzz/regressions/$name"
  ok=1
  if [ -d "$regressions" ] && [ -n "$(ls "$regressions")" ]; then
    LSAN_OPTIONS="suppressions=$srcdir/tests/lsan.supp:print_suppressions=0" \
      "$out/fuzz_$name" "$regressions"/* >>"$log" 2>&1 || ok=0
  fi
  if [ $ok -eq 1 ]; then
    # The never-finalised libpython's heap is not a leak of ours (as in
    # make check: tests/lsan.supp).
    (cd "$out" && ASAN_OPTIONS=detect_leaks=1 \
       LSAN_OPTIONS="suppressions=$srcdir/tests/lsan.supp:print_suppressions=0" \
       ./"fuzz_$name" -max_total_time="$FUZZ_SECONDS" \
       -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="crash-$name-" \
       "$corpus" "$srcdir/tests/fuzz/corpus/$name") >>"$log" 2>&1 || ok=0
  fi
  # Figures: executions per second, coverage (edges), corpus size.
  stats=$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$log" |
          sed 's/^stat::\([a-z_]*\): *\([0-9]*\)/\1=\2/' | tr '\n' ' ')
  cover=$(grep -E '#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED).*cov:' "$log" | tail -n 1 |
          sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/cov=\1 features=\2 corpus=\3/p')
  echo "fuzz_$name: $stats$cover"
  if [ $ok -eq 1 ]; then
    echo "test_fuzz_$name: 1 passed, 0 failed" | tee -a "$log"
  else
    grep -A 30 -E 'ERROR: (AddressSanitizer|libFuzzer)|runtime error' "$log" | head -n 40
    echo "test_fuzz_$name: 0 passed, 1 failed" | tee -a "$log"
  fi
}

# FUZZ_JOBS targets at a time (one per core).
echo "$TARGETS" | {
  running=0
  while read -r name extra; do
    [ -n "$name" ] || continue
    run_target "$name" $extra &
    running=$((running + 1))
    if [ "$running" -ge "$FUZZ_JOBS" ]; then
      wait
      running=0
    fi
  done
  wait
}
status=0
for log in "$out"/*.log; do
  grep -q '^test_fuzz_[a-z_]*: 0 passed, 1 failed$' "$log" && status=1
done
exit $status
