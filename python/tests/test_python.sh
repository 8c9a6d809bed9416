#!/bin/sh
# The Python package's tests (python/tests/test_*.py), run by `make check`
# from tests/test_python.sh (made from python/tests/test_python.sh by
# python/python.mk) with the configured python3.  Prints
# "test_python: N passed, N failed" for setup.sh's summary.
python='@PYTHON@'
sanitizer_cflags='@SANITIZED@'
builddir=${CELLEXEC_BUILDDIR:?run me from make check}
srcdir=${CELLEXEC_SRCDIR:?run me from make check}

skip() {
  echo "test_python: skipped: $*"
  exit 77
}

# The package as built here (its module finds libcellexec here by RUNPATH).
PYTHONPATH="$builddir/python/build${PYTHONPATH:+:$PYTHONPATH}"
PYTHONDONTWRITEBYTECODE=1
preload=""
if [ -n "$sanitizer_cflags" ]; then
  # An ASan-built extension in an uninstrumented python3: the ASan runtime
  # must be loaded first, and Python's own allocations then leak by design.
  libasan=$(${CC:-cc} -print-file-name=libasan.so 2>/dev/null)
  libubsan=$(${CC:-cc} -print-file-name=libubsan.so 2>/dev/null)
  [ -f "$libasan" ] || skip "sanitizer build, and no libasan.so to preload into $python"
  preload="$libasan $libubsan"
  ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export ASAN_OPTIONS
  CX_TEST_SANITIZED=1
  export CX_TEST_SANITIZED
fi
[ -n "$preload" ] && LD_PRELOAD="$preload${LD_PRELOAD:+ $LD_PRELOAD}" && export LD_PRELOAD
export PYTHONPATH PYTHONDONTWRITEBYTECODE
[ -f "$builddir/python/build/cellexec/_cellexec.so" ] || skip "the extension module was not built"
exec "$python" "$srcdir/python/tests/run_tests.py"
