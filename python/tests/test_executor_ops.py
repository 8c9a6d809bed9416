"""Executor operations and debug exports through the Python API."""

import json
import threading

import cellexec
from support import RUNNING, TempDirCase


class ExecutorTest(TempDirCase):
    def sessions(self):
        for name in RUNNING:
            backend = cellexec.Backend(name)
            self.addCleanup(backend.close)
            session = backend.session()
            self.addCleanup(session.close)
            yield name, session

    def test_prelude_and_inline(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("import math\nbase = 10\nitems = [1, 2]")
                self.assertIsInstance(env, cellexec.Env)
                self.assertEqual(env.evaluate_inline("base + x", {"x": 5}), 15)
                self.assertEqual(env.evaluate_inline("items + [y]", locals={"y": None}),
                                 [1, 2, None])
                self.assertEqual(env.evaluate_inline("{'a': (1, 2.5, 'z', True)}"),
                                 {"a": [1, 2.5, "z", True]})
                self.assertIsNone(env.evaluate_inline("None"))
                self.assertIsInstance(env.evaluate_inline("2 ** 70"), cellexec.Ref)

    def test_refs_cross_back(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("class Box:\n def __init__(s, v): s.v = v\n"
                                              " def __repr__(s): return f'Box({s.v})'")
                box = env.evaluate_inline("Box(3)")
                self.assertIsInstance(box, cellexec.Ref)
                self.assertEqual(box.repr, "Box(3)")
                self.assertIsInstance(box.id, int)
                self.assertEqual(env.evaluate_inline("b.v * 2", {"b": box}), 6)
                self.assertEqual(env.evaluate_inline("[b.v for b in bs]", {"bs": [box, box]}),
                                 [3, 3])
                big = env.evaluate_inline("2 ** 70")
                self.assertIsInstance(big, cellexec.Ref)
                self.assertEqual(env.evaluate_inline("n == 2 ** 70", {"n": big}), True)
                self.assertIn("cellexec.Ref", repr(box))
                self.assertEqual(box, cellexec.Ref(box.id))
                with self.assertRaises(TypeError):
                    env.evaluate_inline("x", {"x": object()})
                with self.assertRaises(ValueError):
                    env.evaluate_inline("x", {"x": 2 ** 70})
                with self.assertRaises(ValueError):
                    env.evaluate_inline("x", {"x": float("nan")})

    def test_block_and_side_effects(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("total = 1")
                self.assertEqual(env.execute_block("global total\ntotal += n\nreturn total * 2",
                                                   {"n": 4}), 10)
                self.assertEqual(env.evaluate_inline("total"), 5)
                self.assertIsNone(env.execute_block("x = 1"))
                self.assertIsNone(env.execute_side_effects("seen = label", {"label": "hi"}))
                self.assertEqual(env.evaluate_inline("seen"), "hi")
                with self.assertRaises(cellexec.PythonError) as caught:
                    env.execute_side_effects("a = 1\nraise KeyError('k')", line_offset=100)
                error = caught.exception
                self.assertEqual(error.type, "KeyError")
                self.assertEqual(error.line, 102)
                self.assertIn("KeyError", error.traceback)
                self.assertIsInstance(error, cellexec.Error)
                same = session.execute_prelude_incremental(env, "extra = total + 1")
                self.assertIs(same, env)
                self.assertEqual(env.evaluate_inline("extra"), 6)
                fresh = session.execute_prelude_incremental(None, "only = 1")
                self.assertIsNot(fresh, env)
                self.assertEqual(fresh.evaluate_inline("only"), 1)
                self.assertIn("total", env.snapshot())

    def test_dynamic_function(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                calls = []

                def add(a, b):
                    calls.append((a, b))
                    return {"sum": a + b}

                env = session.execute_prelude("")
                env.create_dynamic_function("add", ["a", "b"], {"b": 10}, add)
                self.assertEqual(env.evaluate_inline("add(1)"), {"sum": 11})
                self.assertEqual(env.evaluate_inline("add(1, b=2)['sum']"), 3)
                self.assertEqual(env.evaluate_inline("str(__import__('inspect').signature(add))"),
                                 "(a, b=10)")
                self.assertEqual(calls, [(1, 10), (1, 2)])

                def fail(x):
                    raise ValueError(f"bad {x}")

                env.create_dynamic_function("fail", ["x"], None, fail)
                with self.assertRaises(cellexec.PythonError) as caught:
                    env.evaluate_inline("fail(7)")
                self.assertEqual(caught.exception.type, "RuntimeError")
                self.assertIn("ValueError: bad 7", caught.exception.message)
                # The cell can catch it like any exception.
                self.assertEqual(env.execute_block(
                    "try:\n    fail(1)\nexcept RuntimeError as e:\n    return str(e)"),
                    "ValueError: bad 1")

                # A callback that calls back into the session (nested).
                def nested():
                    return env.evaluate_inline("40 + 2")

                env.create_dynamic_function("nested", [], None, nested)
                self.assertEqual(env.evaluate_inline("nested()"), 42)

    def test_dynamic_function_from_a_cell(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("")
                env.create_dynamic_function("host", ["x"], None, lambda x: x * 3)
                self.assertEqual(env.evaluate_inline("host(5)"), 15)

    def test_type_expression(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("from typing import Literal")
                self.assertEqual(env.evaluate_type_expression("list[int] | None"), {
                    "kind": "union", "args": [
                        {"kind": "generic", "origin": {"kind": "builtin", "name": "list"},
                         "args": [{"kind": "builtin", "name": "int"}]},
                        {"kind": "none"}]})
                self.assertEqual(env.evaluate_type_expression("Literal['a', 1]")["kind"],
                                 "literal")

    def test_env_lifetime(self):
        for name, session in self.sessions():
            with self.subTest(backend=name):
                env = session.execute_prelude("x = 1")
                env.close()
                self.assertTrue(env.closed)
                with self.assertRaises(ValueError):
                    env.evaluate_inline("x")
                other = session.execute_prelude("y = 2")
                session.close()
                self.assertTrue(other.closed)
                with self.assertRaises(ValueError):
                    other.evaluate_inline("y")

    def test_debug_export(self):
        for name, session in self.sessions():
            for ext in ("md", "jsonl"):
                with self.subTest(backend=name, format=ext):
                    path = self.path(f"{name}.{ext}")
                    session.debug_export(path)
                    env = session.execute_prelude("x = 1")
                    env.evaluate_inline("x + y", {"y": 2, "API_TOKEN": "s3cr3t-value"})
                    session.run_cell("print('cell')")
                    session.debug_export(None)  # flushes and closes the file
                    with open(path) as f:
                        text = f.read()
                    self.assertNotIn("s3cr3t-value", text)
                    self.assertIn("[redacted]", text)
                    if ext == "jsonl":
                        steps = [json.loads(line)["step"] for line in text.splitlines()]
                        self.assertIn("evaluate_inline", steps)
                        self.assertIn("session_run_cell", steps)
                    else:
                        self.assertIn("evaluate_inline", text)
                    env.close()

    def test_debug_export_options(self):
        backend = cellexec.Backend("local")
        self.addCleanup(backend.close)
        path = self.path("custom.jsonl")
        with backend.session() as session:
            session.debug_export(path, redact=["*PIN*"], max_value_bytes=64)
            env = session.execute_prelude("x = 1")
            env.evaluate_inline("len(s)", {"MY_PIN": "1234", "s": "y" * 1000})
            env.close()
        with open(path) as f:
            text = f.read()
        self.assertNotIn("1234", text)
        self.assertNotIn("y" * 100, text)
        path = self.path("backend.md")
        backend.debug_export(path)
        backend.run_cell("1 + 1")
        backend.debug_export(None)
        with open(path) as f:
            self.assertIn("run_cell", f.read())

    def test_threads_share_a_session(self):
        backend = cellexec.Backend("local")
        self.addCleanup(backend.close)
        with backend.session() as session:
            env = session.execute_prelude("n = 0")
            errors = []

            def work():
                try:
                    for _ in range(50):
                        env.execute_block("global n\nn += 1")
                except Exception as exc:  # pragma: no cover
                    errors.append(exc)

            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(env.evaluate_inline("n"), 200)
