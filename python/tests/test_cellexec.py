"""Backend, run_cell, sessions, errors and plugins, on every backend."""

import ast
import json
import os
import subprocess
import threading
import time
import unittest

import cellexec
from support import ALL, RUNNING, TempDirCase, run_python

HELLO = "print('hello')\n1 + 1"


class RunCellTest(unittest.TestCase):
    def test_bundle(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                result = backend.run_cell(HELLO)
                self.assertEqual(result["stdout"], "hello\n")
                self.assertEqual(result["stderr"], "")
                self.assertEqual(result["rich_outputs"], [{"text/plain": "2"}])
                self.assertIs(result["success"], True)
                self.assertIsNone(result["error"])
                self.assertEqual(list(result)[:6], ["stdout", "stderr", "rich_outputs",
                                                   "success", "error", "outputs"])
                self.assertEqual(result["outputs"][0],
                                 {"output_type": "stream", "name": "stdout", "text": "hello\n"})
                self.assertEqual(result["outputs"][1]["output_type"], "execute_result")
                self.assertEqual(result["execution_count"], 1)
                self.assertIn("duration_ms", result)

    def test_same_as_the_c_json(self):
        # The dict has exactly what cx_result_to_json writes, NUL and bad UTF-8 included.
        code = ("import sys\nsys.stdout.write('a\\x00b')\n"
                "sys.stdout.flush()\nsys.stderr.buffer.write(b'\\xe2\\x82A')\n")
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                result = backend.run_cell(code)
                self.assertEqual(result["stdout"], "a\x00b")
                self.assertEqual(result["stderr"], "\ufffd\ufffdA")
                self.assertTrue(result["success"])

    def test_exception_message_keeps_nul(self):
        # As cx_result_to_json writes it: NUL and all (local; the subprocess
        # worker's result still carries it as U+FFFD).
        with cellexec.Backend("local") as backend:
            result = backend.run_cell("raise ValueError('a\\x00b')")
            self.assertEqual(result["error"]["message"], "a\x00b")
            self.assertEqual(result["outputs"][-1]["evalue"], "a\x00b")

    def test_code_with_a_nul_byte_fails_as_python_fails(self):
        try:
            compile("x = 1\0", "<cell>", "exec")
        except Exception as e:  # this Python's own refusal
            expected = (type(e).__name__, str(e))
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend, \
                    backend.session() as session:
                # The control: a backslash and a zero is a valid string literal.
                result = backend.run_cell("print('a\\0b' == 'a' + chr(0) + 'b')")
                self.assertEqual(result["stdout"], "True\n")
                for run in (backend.run_cell, session.run_cell):
                    result = run("x = 1\nprint('a\0b')")
                    self.assertFalse(result["success"])
                    self.assertEqual((result["error"]["type"], result["error"]["message"]),
                                     expected)
                    self.assertEqual(result["stdout"], "")

    def test_exception_is_in_the_result(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                result = backend.run_cell("x = 1\n1 / 0")
                self.assertFalse(result["success"])
                self.assertEqual(result["error"]["type"], "ZeroDivisionError")
                self.assertEqual(result["error"]["message"], "division by zero")
                self.assertIn("line 2", result["error"]["traceback"])
                self.assertEqual(result["outputs"][-1]["output_type"], "error")
                # SystemExit ends the cell, not this process.
                result = backend.run_cell("import sys; sys.exit(4)")
                self.assertEqual(result["error"]["type"], "SystemExit")

    def test_timeout(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                start = time.monotonic()
                result = backend.run_cell("import time\ntime.sleep(30)", timeout=0.5)
                self.assertLess(time.monotonic() - start, 10)
                self.assertFalse(result["success"])
                self.assertEqual(result["error"]["type"], "TimeoutError")

    def test_cwd_env_mime(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                result = backend.run_cell("import os; print(os.getcwd())", cwd="/tmp")
                self.assertEqual(result["stdout"], "/tmp\n")
                result = backend.run_cell("import os; print(os.environ['CX_PY_TEST'])",
                                          env={"CX_PY_TEST": "yes"})
                self.assertEqual(result["stdout"], "yes\n")
                result = backend.run_cell("import os; print(os.environ['CX_PY_TEST'])",
                                          env=["CX_PY_TEST=list"])
                self.assertEqual(result["stdout"], "list\n")
                code = ("class X:\n def _repr_html_(self): return '<b>x</b>'\n"
                        " def __repr__(self): return 'X'\nX()")
                result = backend.run_cell(code, mime="text/html")
                self.assertEqual(result["rich_outputs"], [{"text/html": "<b>x</b>"}])
                result = backend.run_cell(code, mime=["text/plain"])
                self.assertEqual(result["rich_outputs"], [{"text/plain": "X"}])

    def test_bad_run_options(self):
        with cellexec.Backend("local") as backend:
            for timeout in (-1, float("nan"), 1e12):
                with self.assertRaises(cellexec.OptionError):
                    backend.run_cell("1", timeout=timeout)
            with self.assertRaises(cellexec.OptionError):
                backend.run_cell("1", env=["NOEQUALS"])
            with self.assertRaises(TypeError):
                backend.run_cell("1", 2.0)  # keywords only
            with self.assertRaises(cellexec.BackendError):
                backend.run_cell("1", cwd="/no/such/dir")

    def test_use_subprocess(self):
        with cellexec.Backend("local") as backend:
            result = backend.run_cell("import os; print(os.getpid())", use_subprocess=True)
            self.assertTrue(result["success"])
            self.assertNotEqual(int(result["stdout"]), os.getpid())
            result = backend.run_cell("import os; print(os.getpid())")
            self.assertEqual(int(result["stdout"]), os.getpid())

    def test_interrupt(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                timer = threading.Timer(0.5, backend.interrupt)
                timer.start()
                result = backend.run_cell("import time\nfor i in range(300): time.sleep(0.1)")
                timer.join()
                self.assertFalse(result["success"])
                self.assertEqual(result["error"]["type"], "KeyboardInterrupt")

    def test_closed(self):
        backend = cellexec.Backend("local")
        backend.close()
        self.assertTrue(backend.closed)
        with self.assertRaises(ValueError):
            backend.run_cell("1")
        backend.close()  # twice is fine

    def test_query(self):
        with cellexec.Backend("local") as backend:
            info = backend.query("info")
            self.assertEqual(info["executable"], "/usr/bin/python3")
            with self.assertRaises(cellexec.UnsupportedError):
                backend.query("nonsense")


class SessionTest(unittest.TestCase):
    def test_state_is_kept(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                with backend.session() as session:
                    session.run_cell("x = 41")
                    result = session.run_cell("x + 1")
                    self.assertEqual(result["rich_outputs"], [{"text/plain": "42"}])
                    self.assertEqual(result["execution_count"], 2)
                    self.assertIs(session.backend, backend)
                self.assertTrue(session.closed)
                with self.assertRaises(ValueError):
                    session.run_cell("x")
                # Stateless cells do not see the session's names.
                self.assertEqual(backend.run_cell("x")["error"]["type"], "NameError")

    def test_session_interrupt_and_timeout(self):
        for name in RUNNING:
            with self.subTest(backend=name), cellexec.Backend(name) as backend:
                with backend.session() as session:
                    session.run_cell("n = 1")
                    timer = threading.Timer(0.5, session.interrupt)
                    timer.start()
                    result = session.run_cell("import time\nfor i in range(300): time.sleep(0.1)")
                    timer.join()
                    self.assertEqual(result["error"]["type"], "KeyboardInterrupt")
                    result = session.run_cell("import time; time.sleep(30)", timeout=0.5)
                    self.assertEqual(result["error"]["type"], "TimeoutError")
                    self.assertEqual(session.run_cell("n")["rich_outputs"],
                                     [{"text/plain": "1"}])

    def test_session_outlives_backend_close(self):
        backend = cellexec.Backend("local")
        session = backend.session()
        backend.close()
        self.assertEqual(session.run_cell("2 * 3")["rich_outputs"], [{"text/plain": "6"}])
        session.close()


class FakeTest(TempDirCase):
    def test_default_and_scripted(self):
        with cellexec.Backend("fake") as backend:
            result = backend.run_cell("print('noop')")
            self.assertEqual(result["stdout"], "")
            self.assertTrue(result["success"])
            self.assertEqual(result["outputs"], [])
            self.assertEqual(backend.query("codes"), ["print('noop')"])
        responses = self.path("responses.json")
        with open(responses, "w") as f:
            json.dump([{"stdout": "one\n", "stderr": "", "rich_outputs": [], "success": True,
                        "error": None},
                       {"match": "^boom", "result": {
                           "stdout": "", "stderr": "", "rich_outputs": [], "success": False,
                           "error": {"type": "ValueError", "message": "x", "traceback": ""}}}],
                      f)
        record = self.path("calls.jsonl")
        with cellexec.Backend("fake", options={"responses": responses,
                                               "record": record}) as backend:
            self.assertEqual(backend.run_cell("a")["stdout"], "one\n")
            self.assertEqual(backend.run_cell("boom()")["error"]["type"], "ValueError")
            with backend.session() as session:
                self.assertTrue(session.run_cell("c")["success"])
        with open(record) as f:
            codes = [json.loads(line)["code"] for line in f]
        self.assertEqual(codes, ["a", "boom()", "c"])

    def test_fail_with(self):
        with cellexec.Backend("fake", options={"fail-with": "TimeoutError"}) as backend:
            result = backend.run_cell("x")
            self.assertFalse(result["success"])
            self.assertEqual(result["error"]["type"], "TimeoutError")

    def test_interrupt_and_debug_export(self):
        with cellexec.Backend("fake") as backend:
            backend.interrupt()  # nothing runs: harmless
            path = self.path("fake.jsonl")
            with backend.session() as session:
                session.interrupt()
                session.debug_export(path)
                session.run_cell("x = 1", env={"API_TOKEN": "hidden-value"})
            with open(path) as f:
                events = [json.loads(line) for line in f]
            self.assertEqual([e["step"] for e in events], ["session_run_cell"])
            self.assertEqual(events[0]["executor"], "fake")
            self.assertNotIn("hidden-value", json.dumps(events))
            path = self.path("fake.md")
            backend.debug_export(path)
            backend.run_cell("y = 2")
            backend.debug_export(None)
            with open(path) as f:
                self.assertIn("run_cell", f.read())

    def test_no_executor(self):
        with cellexec.Backend("fake") as backend, backend.session() as session:
            self.assertFalse(backend.has_executor)
            with self.assertRaises(cellexec.UnsupportedError):
                session.execute_prelude("x = 1")


class ErrorTest(TempDirCase):
    def test_hierarchy(self):
        for name in ("ConfigError", "PluginError", "OptionError", "UnsupportedError",
                     "BackendError", "JSONError", "PythonError", "FailedError"):
            self.assertTrue(issubclass(getattr(cellexec, name), cellexec.Error), name)
        for name in ("NotFoundError", "PluginLoadError", "NoEntryError", "ABIMismatchError",
                     "InvalidPluginError", "InitRefusedError", "DuplicateError"):
            self.assertTrue(issubclass(getattr(cellexec, name), cellexec.PluginError), name)
        self.assertTrue(issubclass(cellexec.Error, Exception))

    def test_not_found(self):
        with self.assertRaises(cellexec.NotFoundError) as caught:
            cellexec.Backend("no-such-backend")
        self.assertIsInstance(caught.exception, cellexec.PluginError)
        self.assertEqual(caught.exception.code, 1)
        self.assertIn("no-such-backend", str(caught.exception))

    def test_option_errors(self):
        with self.assertRaises(cellexec.OptionError) as caught:
            cellexec.Backend("local", options={"timout": 1})
        self.assertIn("did you mean 'timeout'", str(caught.exception))
        with self.assertRaises(cellexec.OptionError):
            cellexec.Backend("local", options={"capture-fds": "maybe"})
        with self.assertRaises(TypeError):
            cellexec.Backend("local", options=[1, 2])

    def test_config(self):
        config = self.path("config")
        with open(config, "w") as f:
            f.write("[cellexec]\nbackend = fake\n[fake]\ndefault = error\n")
        with cellexec.Backend(None, config=config) as backend:
            self.assertEqual(backend.name, "fake")
            self.assertFalse(backend.run_cell("x")["success"])
        with open(config, "w") as f:
            f.write("[cellexec\nbackend = fake\n")
        with self.assertRaises(cellexec.ConfigError):
            cellexec.Backend(config=config)
        with self.assertRaises(cellexec.ConfigError):
            cellexec.Backend(config=self.path("missing"))
        with open(config, "w") as f:
            f.write("[subproces]\ntimeout = 1\n")
        with self.assertRaises(cellexec.ConfigError) as caught:
            cellexec.Backend(config=config)
        self.assertIn("subprocess", str(caught.exception))

    def test_config_debug_export(self):
        config, log = self.path("config"), self.path("log.jsonl")
        with open(config, "w") as f:
            f.write(f"[cellexec]\ndebug-export = {log}\n")
        with cellexec.Backend("local", config=config) as backend:
            backend.run_cell("1 + 1")
        with open(log) as f:
            events = [json.loads(line) for line in f]
        self.assertEqual(events[0]["step"], "run_cell")


class PluginsTest(unittest.TestCase):
    def test_like_the_cli(self):
        plugins = cellexec.plugins()
        names = [p["name"] for p in plugins]
        for name in ALL:
            self.assertIn(name, names)
        local = plugins[names.index("local")]
        self.assertEqual(local["status"], "ok")
        self.assertIsNone(local["reason"])
        self.assertTrue(local["executor"])
        self.assertIn("capture-fds", [o["name"] for o in local["options"]])
        self.assertEqual(set(local), {"name", "version", "description", "abi", "path", "status",
                                      "reason", "shadows", "executor", "methods", "options"})
        self.assertTrue(local["methods"]["sessions"])
        self.assertIn("evaluate_inline", local["methods"]["executor"])
        cli = os.path.join(os.environ.get("CELLEXEC_BUILDDIR", ""), "tools", "cellexec")
        if not os.access(cli, os.X_OK):
            self.skipTest("tools/cellexec not built")
        listed = json.loads(subprocess.run([cli, "plugins", "--json"], capture_output=True,
                                           text=True, check=True).stdout)
        # The same entries, with the same keys and values.
        self.assertEqual([p["name"] for p in listed["plugins"]], names)
        for ours, theirs in zip(plugins, listed["plugins"]):
            self.assertEqual(ours, theirs)
        self.assertEqual(listed["search_path"], cellexec.registry()["search_path"])


class PythonHostTest(unittest.TestCase):
    """The local backend in this very interpreter."""

    def test_same_interpreter(self):
        import sys
        with cellexec.Backend("local") as backend:
            result = backend.run_cell("import sys, os; print(os.getpid(), id(sys.modules))")
            pid, modules = result["stdout"].split()
            self.assertEqual(int(pid), os.getpid())
            self.assertEqual(int(modules), id(sys.modules))
            # Fresh namespaces.
            backend.run_cell("only_here = 1")
            self.assertEqual(backend.run_cell("only_here")["error"]["type"], "NameError")

    def test_host_streams_untouched(self):
        # In a process of its own: the host's buffered and later output stays
        # the host's, in order; the cell's (print, fd 1, C stdio) is the cell's.
        code = r"""
import builtins, os, sys
import cellexec
print("host-before")
stdout, stdin, input_ = sys.stdout, sys.stdin, builtins.input
b = cellexec.Backend("local")
r = b.run_cell("import os, sys\nprint('cell-print')\nos.write(1, b'cell-fd\\n')\n"
               "os.system('echo cell-child')\nprint('cell-err', file=sys.stderr)")
assert r["stdout"] == "cell-print\ncell-fd\ncell-child\n", r
assert r["stderr"] == "cell-err\n", r
assert sys.stdout is stdout and builtins.input is not None
print("host-after")
assert b.run_cell("input()")["error"]["type"] == "StdinNotImplementedError"
sys.stdout.flush()
print(input("prompt:"))
"""
        child = subprocess.run([__import__("sys").executable, "-c", code], input="typed\n",
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertEqual(child.stdout, "host-before\nhost-after\nprompt:typed\n")
        self.assertEqual(child.stderr, "")

    def test_host_main_module_untouched(self):
        # A cell that needs IPython makes its shell; the host's __main__
        # gets none of IPython's names (In, Out, exit, _ ...).
        code = r"""
import __main__, sys
import cellexec
before = set(vars(__main__))
b = cellexec.Backend("local")
assert b.run_cell("%time 1")["success"]
assert b.run_cell("x = 5\nx")["rich_outputs"] == [{"text/plain": "5"}]
new = set(vars(__main__)) - before - {"b", "before"}
assert not new, new
assert sys.modules["__main__"] is __main__
print("clean")
"""
        status, out, err = run_python(code)
        self.assertEqual(status, 0, err)
        self.assertEqual(out, "clean\n")

    def test_capture_fds_off(self):
        code = r"""
import cellexec
b = cellexec.Backend("local", options={"capture-fds": False})
r = b.run_cell("import os\nprint('cell')\nos.write(1, b'to-host\\n')")
assert r["stdout"] == "cell\n", r
print("host")
"""
        status, out, err = run_python(code)
        self.assertEqual(status, 0, err)
        self.assertEqual(out, "to-host\nhost\n")

    def test_nested_run_from_a_cell(self):
        with cellexec.Backend("local") as backend:
            code = ("import cellexec\nb = cellexec.Backend('local')\n"
                    "r = b.run_cell('print(7)')\nprint('inner', r['stdout'].strip())")
            result = backend.run_cell(code)
            self.assertEqual(result["stdout"], "inner 7\n", result)


class ReadmeTest(TempDirCase):
    """The README's Python example, run as it is: each line `EXPR  # VALUE`
    must give VALUE."""

    def snippet(self):
        with open(os.path.join(os.environ["CELLEXEC_SRCDIR"], "README.md"), encoding="utf-8") as f:
            text = f.read()
        start = text.index("```python\nimport cellexec\n\nbackend = ")
        return text[start + len("```python\n"):text.index("```", start + 3)]

    @staticmethod
    def checked(snippet):
        """SNIPPET with each `EXPR  # LITERAL` line made an assertion."""
        lines = []
        for line in snippet.splitlines():
            code, _, comment = line.partition("  # ")
            try:
                expected = ast.literal_eval(comment.strip())
                ast.parse(code.strip(), mode="eval")
            except (SyntaxError, ValueError):
                lines.append(line)
                continue
            indent = code[:len(code) - len(code.lstrip())]
            lines.append(f"{indent}_check(({code.strip()}), {expected!r})")
        return "\n".join(lines)

    def test_readme_python_example_runs_as_written(self):
        checks = []

        def check(got, expected):
            checks.append((got, expected))

        code = self.checked(self.snippet())
        cwd = os.getcwd()
        os.chdir(self.tmp)
        try:
            exec(compile(code, "README.md", "exec"), {"_check": check})
        finally:
            os.chdir(cwd)
        self.assertGreaterEqual(len(checks), 2)
        for got, expected in checks:
            self.assertEqual(got, expected)
        with open(self.path("steps.jsonl"), encoding="utf-8") as f:
            steps = [json.loads(line)["step"] for line in f]
        self.assertIn("evaluate_inline", steps)


class HelpTest(unittest.TestCase):
    def test_docstrings(self):
        import pydoc
        text = pydoc.render_doc(cellexec, renderer=pydoc.plaintext)
        for words in ("run_cell(self, /, code, *, timeout=None", "class Backend", "class Session",
                      "execute_prelude", "class Ref", "debug_export"):
            self.assertIn(words, text)
        for obj in (cellexec.Backend.run_cell, cellexec.Session.run_cell, cellexec.Env,
                    cellexec.Env.create_dynamic_function, cellexec.plugins, cellexec.Ref):
            self.assertTrue(obj.__doc__, obj)

    def test_stub_and_marker_installed_with_the_package(self):
        here = os.path.dirname(cellexec.__file__)
        for name in ("__init__.pyi", "executor.pyi", "py.typed"):
            self.assertTrue(os.path.exists(os.path.join(here, name)), name)


if __name__ == "__main__":
    unittest.main()
