"""cellexec.executor: the IPythonExecutor facade, with the documented snippets."""

import contextlib
import io
import os
import unittest

import cellexec
from cellexec.executor import (IPythonExecutor, LocalIPythonBackend, StatefulIPythonBackend,
                               SubprocessIPythonBackend, run_cell)


def printed(snippet):
    """What SNIPPET prints, run with this module's names."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(snippet, dict(globals()))
    return out.getvalue()


class SnippetTest(unittest.TestCase):
    def test_readme_snippet(self):
        snippet = '''
executor = IPythonExecutor(LocalIPythonBackend())
result = executor.run_cell("print('hello')\\n1 + 1")
print(result["stdout"].strip())  # hello
print(result["rich_outputs"][-1]["text/plain"])  # 2
result = executor.run_cell("1 / 0")
print(result["success"], result["error"]["type"])  # False ZeroDivisionError
result = executor.run_cell("import time; time.sleep(5)", use_subprocess=True, timeout_s=2.0)
print(result["success"], result["error"]["type"])  # False TimeoutError
'''
        self.assertEqual(printed(snippet),
                         "hello\n2\nFalse ZeroDivisionError\nFalse TimeoutError\n")

    def test_stateful_backend(self):
        snippet = '''
class StatefulBackend:
    """One namespace kept across calls."""
    def __init__(self):
        self.backend = cellexec.Backend("local")
        self.session = self.backend.session()
    def run_cell(self, code_str, **kwargs):
        return self.session.run_cell(code_str)

executor = IPythonExecutor(StatefulBackend())
executor.run_cell("counter = 41")
result = executor.run_cell("counter += 1\\nprint(counter)")
print(result["stdout"].strip())  # 42

with StatefulIPythonBackend() as backend:
    executor = IPythonExecutor(backend)
    executor.run_cell("x = 'kept'")
    print(executor.run_cell("print(x)")["stdout"].strip())  # kept
'''
        self.assertEqual(printed(snippet), "42\nkept\n")

    def test_fake_backend(self):
        snippet = '''
class FakeBackend:
    def __init__(self):
        self.calls = []
    def run_cell(self, code_str, **kwargs):
        self.calls.append(code_str)
        return {"stdout": "fake\\n", "stderr": "", "rich_outputs": [], "success": True,
                "error": None}

fake = FakeBackend()
executor = IPythonExecutor(fake)
result = executor.run_cell("print('real?')")
print(result["stdout"].strip())  # fake
print(fake.calls)  # ["print('real?')"]
'''
        self.assertEqual(printed(snippet), "fake\n[\"print('real?')\"]\n")


class FacadeTest(unittest.TestCase):
    def test_fresh_namespace_per_call(self):
        executor = IPythonExecutor(LocalIPythonBackend())
        executor.run_cell("a = 1")
        self.assertEqual(executor.run_cell("a")["error"]["type"], "NameError")

    def test_cwd_env_defaults(self):
        executor = IPythonExecutor(LocalIPythonBackend(cwd="/tmp", env={"FACADE": "on"}))
        result = executor.run_cell("import os; print(os.getcwd(), os.environ['FACADE'])")
        self.assertEqual(result["stdout"], "/tmp on\n")
        # The same on the subprocess backend, for that call only.
        result = executor.run_cell("import os; print(os.getcwd(), os.environ['FACADE'], "
                                   "os.getpid() != %d)" % os.getpid(), use_subprocess=True)
        self.assertEqual(result["stdout"], "/tmp on True\n")

    def test_timeout_local(self):
        executor = IPythonExecutor(LocalIPythonBackend())
        result = executor.run_cell("import time; time.sleep(5)", timeout_s=0.3)
        self.assertEqual(result["error"]["type"], "TimeoutError")

    def test_kwargs_reach_custom_backends(self):
        class Recorder:
            def __init__(self):
                self.calls = []

            def run_cell(self, code_str, **kwargs):
                self.calls.append((code_str, kwargs))
                return {"stdout": "", "stderr": "", "rich_outputs": [], "success": True,
                        "error": None}

        recorder = Recorder()
        executor = IPythonExecutor(recorder)
        executor.run_cell("a")
        executor.run_cell("b", timeout_s=3.0, tag="x")
        self.assertEqual(recorder.calls, [("a", {}), ("b", {"timeout_s": 3.0, "tag": "x"})])
        with self.assertRaises(TypeError):
            IPythonExecutor(object())

    def test_cellexec_objects_as_backends(self):
        for name in ("local", "subprocess", "fake"):
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                executor = IPythonExecutor(backend)
                result = executor.run_cell("print('x')", timeout_s=5.0)
                self.assertTrue(result["success"])
                with backend.session() as session:
                    self.assertTrue(IPythonExecutor(session).run_cell("y = 1")["success"])

    def test_subprocess_backend_and_module_run_cell(self):
        executor = IPythonExecutor(SubprocessIPythonBackend())
        result = executor.run_cell("import os; print(os.getpid())")
        self.assertNotEqual(int(result["stdout"]), os.getpid())
        self.assertEqual(run_cell("print('module')")["stdout"], "module\n")
        result = run_cell("import time; time.sleep(5)", use_subprocess=True, timeout_s=0.5)
        self.assertEqual(result["error"]["type"], "TimeoutError")
        self.assertEqual(cellexec.run_cell("1 + 2")["rich_outputs"], [{"text/plain": "3"}])
        self.assertEqual(cellexec.run_cell("x", backend="fake")["stdout"], "")


if __name__ == "__main__":
    unittest.main()
