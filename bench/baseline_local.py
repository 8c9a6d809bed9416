"""Baselines for bench/bench_local: the same cell run by plain Python.

Run by bench_local with the configured system python3; prints one JSON
object {"exec_loop": [ns, ...], "ipython": [ns, ...]} of per-cell times.

    exec_loop  exec(compile(cell)) in a fresh dict, stdout redirected to a
               new io.StringIO: the least any in-process runner can do
               (compiled every time, no display of the last value).
    ipython    InteractiveShell.run_cell inside capture_output(), the
               shell created once, history kept in memory so SQLite writes
               are not counted against IPython.
"""

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time


def time_exec_loop(cell, iterations, warmup):
    samples = []
    for i in range(warmup + iterations):
        start = time.perf_counter_ns()
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(cell, "<cell>", "exec"), {"__name__": "__main__"})
        buffer.getvalue()
        elapsed = time.perf_counter_ns() - start
        if i >= warmup:
            samples.append(elapsed)
    return samples


def time_ipython(cell, iterations, warmup):
    # A private profile directory: the benchmark must not touch ~/.ipython.
    os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="cellexec-bench-ipython-")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    samples = []
    for i in range(warmup + iterations):
        start = time.perf_counter_ns()
        with capture_output() as captured:
            result = shell.run_cell(cell)
        elapsed = time.perf_counter_ns() - start
        if not result.success or not captured.stdout.startswith("hello\n"):
            sys.exit(f"IPython baseline: unexpected result {result!r} {captured.stdout!r}")
        if i >= warmup:
            samples.append(elapsed)
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cell", required=True)
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--ipython-iterations", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    result = {"exec_loop": time_exec_loop(args.cell, args.iterations, args.warmup)}
    try:
        result["ipython"] = time_ipython(args.cell, args.ipython_iterations,
                                         min(args.warmup, args.ipython_iterations))
    except ImportError as error:
        result["ipython_missing"] = str(error)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
