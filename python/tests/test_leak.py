"""No leak over 10,000 calls: RSS stays bounded."""

import gc
import unittest

import cellexec
from support import SANITIZED, rss_kib

CALLS = 10000


@unittest.skipIf(SANITIZED, "RSS says nothing under ASan (freed memory sits in its quarantine); "
                 "ASan checks every other test's memory use instead")
class LeakTest(unittest.TestCase):
    def grows(self, call, calls=CALLS):
        for _ in range(500):
            call()
        gc.collect()
        before = rss_kib()
        for _ in range(calls):
            call()
        gc.collect()
        return rss_kib() - before

    def test_local_run_cell(self):
        with cellexec.Backend("local") as backend:
            growth = self.grows(lambda: backend.run_cell("print('hello')\n1 + 1"))
            self.assertLess(growth, 8 * 1024, f"RSS grew {growth} KiB over {CALLS} cells")

    def test_local_errors_and_sessions(self):
        with cellexec.Backend("local") as backend:
            def call():
                backend.run_cell("raise ValueError('x' * 100)")
                with backend.session() as session:
                    session.run_cell("y = 1")
            growth = self.grows(call, CALLS // 5)
            self.assertLess(growth, 8 * 1024, f"RSS grew {growth} KiB")

    def test_executor_operations(self):
        with cellexec.Backend("local") as backend, backend.session() as session:
            def call():
                env = session.execute_prelude("x = 1")
                env.create_dynamic_function("f", ["a"], {"a": 1}, lambda a: [a, "s"])
                env.evaluate_inline("f() + [x, object()]", {"z": {"k": [1, 2.5, None]}})
                env.close()
            growth = self.grows(call, CALLS // 5)
            self.assertLess(growth, 8 * 1024, f"RSS grew {growth} KiB")

    def test_fake_and_errors(self):
        with cellexec.Backend("fake") as backend:
            def call():
                backend.run_cell("x")
                try:
                    cellexec.Backend("local", options={"timout": 1})
                except cellexec.OptionError:
                    pass
            growth = self.grows(call, CALLS // 10)
            self.assertLess(growth, 8 * 1024, f"RSS grew {growth} KiB")

    def test_subprocess(self):
        with cellexec.Backend("subprocess") as backend:
            growth = self.grows(lambda: backend.run_cell("1"), 1000)
            self.assertLess(growth, 8 * 1024, f"RSS grew {growth} KiB")


if __name__ == "__main__":
    unittest.main()
