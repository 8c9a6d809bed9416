"""Run every python/tests/test_*.py and print "test_python: N passed, N failed"
(skipped tests, with their reasons above, are in neither count)."""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
if skipped:
    print(f"test_python: {skipped} skipped (reasons above)")
print(f"test_python: {passed} passed, {failed} failed", flush=True)
sys.exit(1 if failed else 0)
