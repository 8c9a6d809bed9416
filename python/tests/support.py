"""Shared setup of the python/tests suites."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SANITIZED = bool(os.environ.get("CX_TEST_SANITIZED"))
RUNNING = ("local", "subprocess")          # backends that run Python
ALL = ("local", "subprocess", "fake")


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cellexec-py-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, name):
        return os.path.join(self.tmp, name)


def run_python(code, timeout=120):
    """CODE run by this python3 in a process of its own, with this
    environment: (returncode, stdout, stderr)."""
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout)
    return child.returncode, child.stdout, child.stderr


def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
