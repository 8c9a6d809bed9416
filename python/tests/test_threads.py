"""The GIL is released while the library works: other threads run."""

import threading
import time
import unittest

import cellexec


class Counter(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.count += 1


class GILTest(unittest.TestCase):
    def measure(self, run):
        counter = Counter()
        counter.start()
        time.sleep(0.05)
        before = counter.count
        start = time.monotonic()
        result = run()
        elapsed = time.monotonic() - start
        progress = counter.count - before
        counter.stop.set()
        counter.join()
        return result, elapsed, progress

    def test_subprocess_cell_lets_threads_run(self):
        with cellexec.Backend("subprocess") as backend:
            backend.run_cell("1")  # the worker is up
            result, elapsed, progress = self.measure(
                lambda: backend.run_cell("import time; time.sleep(1)"))
            self.assertTrue(result["success"], result)
            self.assertGreaterEqual(elapsed, 0.9)
            # A thread that could not run while we waited would count ~0.
            self.assertGreater(progress, 10000, progress)

    def test_subprocess_session_lets_threads_run(self):
        with cellexec.Backend("subprocess") as backend, backend.session() as session:
            session.run_cell("x = 1")
            result, _, progress = self.measure(
                lambda: session.run_cell("import time; time.sleep(0.5); x"))
            self.assertEqual(result["rich_outputs"], [{"text/plain": "1"}])
            self.assertGreater(progress, 5000, progress)

    def test_local_cell_lets_threads_run(self):
        with cellexec.Backend("local") as backend:
            result, _, progress = self.measure(
                lambda: backend.run_cell("import time; time.sleep(0.5)"))
            self.assertTrue(result["success"], result)
            self.assertGreater(progress, 5000, progress)

    def test_cells_on_many_threads(self):
        for name in ("local", "subprocess"):
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                results = [None] * 6

                def work(i):
                    results[i] = backend.run_cell(f"import time; time.sleep(0.2); print({i})")

                threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
                start = time.monotonic()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                for i, result in enumerate(results):
                    self.assertEqual(result["stdout"], f"{i}\n")
                # They ran side by side, not one after the other.
                self.assertLess(time.monotonic() - start, 1.1)


if __name__ == "__main__":
    unittest.main()
