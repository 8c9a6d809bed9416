#!/bin/sh
# tests/test_subprocess.c again, with every backend it opens set to
# isolation = sandbox (see open_with() there).
CELLEXEC_TEST_ISOLATION=sandbox
export CELLEXEC_TEST_ISOLATION
exec "$CELLEXEC_BUILDDIR/tests/test_subprocess" "$@"
