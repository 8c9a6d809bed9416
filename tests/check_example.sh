#!/bin/sh
# The examples, built as a user would: against an installed cellexec (a
# staged install), with nothing but pkg-config.  examples/executor_demo.c
# runs on every backend that has the executor operations;
# examples/notebook_grader.c grades a notebook on the subprocess backend;
# examples/hello-plugin is built with its own Makefile and must pass the
# installed cellexec's conformance check (`make check` there runs
# `cellexec plugins --check ./hello.so`); README.md's record-and-replay
# snippets are built and run as written.
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

# No installed program or library searches the build tree for libraries:
# a stale or planted libcellexec there would be loaded first.
leaks=
for file in $(find "$tmp/root" -type f); do
  runpath=$(readelf -d "$file" 2>/dev/null | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
  case ":$runpath:" in
    *"$builddir/"*|*"$builddir:"*) leaks="$leaks ${file#$tmp/root}=$runpath" ;;
  esac
done
if [ -z "$leaks" ]; then
  echo "ok   test_installed_files_search_no_build_tree"; passed=$((passed + 1))
else
  echo "FAIL test_installed_files_search_no_build_tree:"; printf '  %s\n' $leaks
  failed=$((failed + 1))
fi
pc=$(find "$tmp/root" -name cellexec.pc)
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pc"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs cellexec)
libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir cellexec)
# The installed worker runs cells, with the staged library (the worker
# passes on only an allowlist of the environment unless inherit-env).
worker=$(find "$tmp/root" -type f -name cellexec-worker)
out=$(LD_LIBRARY_PATH="$libdir" CELLEXEC_WORKER="$worker" CELLEXEC_PLUGIN_PATH="$builddir/plugins/.libs" \
      "$builddir/tools/cellexec" run -b subprocess -o inherit-env=true -c 'print(6 * 7)' 2>&1)
if [ "$out" = 42 ]; then
  echo "ok   test_installed_worker_runs_cells"; passed=$((passed + 1))
else
  echo "FAIL test_installed_worker_runs_cells: $out"; failed=$((failed + 1))
fi
# EXAMPLE_CFLAGS: a sanitizer build's library needs a sanitized program.
if ${CC:-cc} ${EXAMPLE_CFLAGS:-} -o "$tmp/executor_demo" "$srcdir/examples/executor_demo.c" $flags; then
  echo "ok   test_example_builds_with_pkg_config"; passed=$((passed + 1))
else
  echo "FAIL test_example_builds_with_pkg_config"; echo "test_example: $passed passed, 1 failed"; exit 1
fi

# Every usable backend whose plugin has the executor operations.
backends=$(CELLEXEC_PLUGIN_PATH="$builddir/plugins/.libs" "$builddir/tools/cellexec" plugins |
  awk '/^[a-z0-9_-]+ .*: ok$/ { name = $1 } /^  executor operations: / && !/: (none|no)$/ { print name }')
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
# The notebook grader: a notebook with a failing cell, graded on the
# subprocess backend; the graded copy must hold that cell's error.
if ${CC:-cc} ${EXAMPLE_CFLAGS:-} -o "$tmp/notebook_grader" "$srcdir/examples/notebook_grader.c" $flags; then
  out=$(cd "$tmp" && LD_LIBRARY_PATH="$libdir" CELLEXEC_PLUGIN_PATH="$builddir/plugins/.libs" \
        ./notebook_grader "$srcdir/tests/notebooks/errors.ipynb" graded.ipynb 2>&1)
  status=$?
  if [ $status -eq 1 ] && printf '%s\n' "$out" | grep -q '^cell 4: failed, ZeroDivisionError: division by zero$' &&
     printf '%s\n' "$out" | grep -q '^2 failed$' && grep -q '"ename": "ZeroDivisionError"' "$tmp/graded.ipynb"; then
    echo "ok   test_example_notebook_grader"; passed=$((passed + 1))
  else
    echo "FAIL test_example_notebook_grader (exit $status):"; printf '%s\n' "$out" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
else
  echo "FAIL test_example_notebook_grader_builds_with_pkg_config"; failed=$((failed + 1))
fi
# README.md's C snippets for testing code that runs cells, as written:
# record a cell on the subprocess backend (step 1), then replay it with the
# fake through a config file (step 3); the replayed bundle must be the
# recorded one.  Each snippet goes into a main() that declares what the
# text around it assumes (error; code) and prints the bundle.
readme_snippets() { # the C blocks of the section "## Testing code that runs cells"
  awk '/^## / { in_section = ($0 == "## Testing code that runs cells") }
       in_section && /^ *```c$/ { n++; in_block = 1; next }
       in_section && /^ *```$/ { in_block = 0; next }
       in_section && in_block { sub(/^   /, ""); print > (dir "/snippet" n ".c") }' dir="$tmp" "$srcdir/README.md"
}
readme_program() { # NAME SNIPPET CELL-SETUP: a program around the snippet, built
  { echo '#include <stdio.h>'; echo '#include <cellexec/cellexec.h>'
    echo 'int main(void) {'; echo 'g_autoptr(GError) error = NULL;'
    echo 'const char *code = "print(\"hi\")\n6 * 7";'
    cat "$tmp/$2"
    echo "$3"
    echo 'if (result == NULL) { fprintf(stderr, "%s\n", error->message); return 1; }'
    echo 'g_autofree char *json = cx_result_to_json(result, FALSE); puts(json); return 0; }'
  } >"$tmp/$1.c"
  ${CC:-cc} ${EXAMPLE_CFLAGS:-} -Wno-unused-variable -o "$tmp/$1" "$tmp/$1.c" $flags >>"$tmp/readme.log" 2>&1
}
readme_snippets
mkdir -p "$tmp/readme/tests"
printf '[cellexec]\nbackend = fake\n[fake]\nresponses = tests/cells.jsonl\n' >"$tmp/readme/tests/replay.conf"
if [ -f "$tmp/snippet1.c" ] && [ -f "$tmp/snippet2.c" ] &&
   readme_program readme_record snippet1.c \
     'g_autoptr(cx_result) result = cx_backend_run_cell(backend, code, NULL, &error);' &&
   readme_program readme_replay snippet2.c ''; then
  recorded=$(cd "$tmp/readme" && LD_LIBRARY_PATH="$libdir" ../readme_record 2>>"$tmp/readme.log")
  replayed=$(cd "$tmp/readme" && LD_LIBRARY_PATH="$libdir" ../readme_replay 2>>"$tmp/readme.log")
  if printf '%s' "$recorded" | grep -q '"text/plain":"42"' && [ "$recorded" = "$replayed" ] &&
     [ "$(wc -l <"$tmp/readme/tests/cells.jsonl")" -eq 1 ]; then
    echo "ok   test_example_readme_records_and_replays"; passed=$((passed + 1))
  else
    echo "FAIL test_example_readme_records_and_replays:"
    printf 'recorded: %s\nreplayed: %s\n' "$recorded" "$replayed" | sed 's/^/  /'
    sed 's/^/  /' "$tmp/readme.log"; failed=$((failed + 1))
  fi
else
  echo "FAIL test_example_readme_snippets_build:"; sed 's/^/  /' "$tmp/readme.log" 2>/dev/null
  failed=$((failed + 1))
fi
# The example plugin: its Makefile, then its `make check` with the staged
# cellexec (the conformance kit), which must pass every case that applies.
mkdir "$tmp/hello"
cp "$srcdir/examples/hello-plugin/hello.c" "$srcdir/examples/hello-plugin/Makefile" "$tmp/hello/"
staged_cellexec="env LD_LIBRARY_PATH=$libdir $(dirname "$libdir")/bin/cellexec"
# CFLAGS from the environment: the Makefile adds pkg-config's to them.
export PKG_CONFIG_PATH="$(dirname "$pc")" MAKEFLAGS= MFLAGS=
if CC="${CC:-cc}" CFLAGS="${EXAMPLE_CFLAGS:-} -O2 -g" make -s -C "$tmp/hello" >"$tmp/hello.log" 2>&1; then
  echo "ok   test_example_hello_plugin_builds_with_its_makefile"; passed=$((passed + 1))
  make -s -C "$tmp/hello" check CELLEXEC="$staged_cellexec" >"$tmp/check.log" 2>&1
  status=$?
  if [ $status -eq 0 ] && grep -q '^[0-9]* passed, 0 failed, [0-9]* skipped$' "$tmp/check.log" &&
     grep -q '^ok - session_keeps_state_across_cells$' "$tmp/check.log" &&
     grep -q '^ok - sessions_are_isolated$' "$tmp/check.log" &&
     grep -q '^ok - unstored_cells_take_no_number$' "$tmp/check.log" &&
     grep -q '^ok - interrupt_with_nothing_running_is_harmless$' "$tmp/check.log" &&
     grep -q '^ok - query_info_is_a_json_object$' "$tmp/check.log"; then
    echo "ok   test_example_hello_plugin_passes_the_conformance_check"; passed=$((passed + 1))
  else
    echo "FAIL test_example_hello_plugin_passes_the_conformance_check (exit $status):"
    sed 's/^/  /' "$tmp/check.log"; failed=$((failed + 1))
  fi
else
  echo "FAIL test_example_hello_plugin_builds_with_its_makefile:"; sed 's/^/  /' "$tmp/hello.log"
  failed=$((failed + 1))
fi

# The handles of plugin.h are distinct types: a session method where a
# backend's belongs does not compile (it did while all three were void).
cat > "$tmp/mixed_handles.c" <<'EOF'
#include <cellexec/plugin.h>
static void close_session(cx_session_instance *session) { (void)session; }
const cx_backend_vtable mixed = { .struct_size = sizeof(cx_backend_vtable),
                                  .destroy = close_session };
EOF
if ${CC:-cc} -c -Werror=incompatible-pointer-types -o "$tmp/mixed_handles.o" "$tmp/mixed_handles.c" \
     $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags cellexec) >"$tmp/mixed_handles.log" 2>&1; then
  echo "FAIL test_plugin_handles_are_distinct_types: a session method compiled as a backend's"
  failed=$((failed + 1))
elif grep -q 'incompatible-pointer-types' "$tmp/mixed_handles.log"; then
  echo "ok   test_plugin_handles_are_distinct_types"; passed=$((passed + 1))
else
  echo "FAIL test_plugin_handles_are_distinct_types: it failed otherwise:"; cat "$tmp/mixed_handles.log"
  failed=$((failed + 1))
fi

echo "test_example: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
