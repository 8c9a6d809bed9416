#!/bin/sh
# The committed tests/plugins/plugins.mk is what tests/plugins/generate-mk.sh
# makes of tests/plugins/cases.list: a plugin added to the list alone
# would otherwise never be built.
srcdir=${CELLEXEC_SRCDIR:?run with make check}
if sh "$srcdir/tests/plugins/generate-mk.sh" "$srcdir/tests/plugins/cases.list" |
   cmp -s - "$srcdir/tests/plugins/plugins.mk"; then
  echo "test_generated: 1 passed, 0 failed"
else
  echo "tests/plugins/plugins.mk is not what tests/plugins/cases.list says: run make update-test-plugins"
  echo "test_generated: 0 passed, 1 failed"
  exit 1
fi
