#!/bin/sh
# cellexec notebook run against nbclient (a real ipykernel) on the notebooks
# in tests/notebooks, on the local and subprocess backends: outputs,
# execution counts, timings, kept cells and nbformat validity
# (tests/notebooks/check_nbclient.py).
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
python=${CELLEXEC_PYTHON:?run with make check}
if [ -n "$CELLEXEC_SANITIZED" ]; then
  # The comparison is about behaviour, which the plain build checks; the
  # C tests of notebooks run under the sanitizers.
  echo "test_nbclient: skipped in the sanitizer build"
  exit 77
fi
# ipykernel's debugger warns about frozen modules on every kernel start.
PYDEVD_DISABLE_FILE_VALIDATION=1 exec "$python" -Xfrozen_modules=off \
  "$srcdir/tests/notebooks/check_nbclient.py" "$builddir/tools/cellexec" local subprocess
