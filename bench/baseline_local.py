"""Baselines for bench/bench_local: the same cells run by plain Python.

Run by bench_local with the configured system python3; prints one JSON
object of per-cell times in nanoseconds:

    {"exec_loop": [...], "ipython": [...],
     "distinct_exec_loop": [...], "distinct_ipython": [...]}

exec_loop and ipython run --cell again and again; the distinct_ ones run
--distinct-cell % N for N = 1, 2, ... (warm-up cells included), a text
never seen before every time.

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
import itertools
import json
import os
import sys
import tempfile
import time


def time_exec_loop(cells, iterations, warmup):
    samples = []
    for i in range(warmup + iterations):
        cell = next(cells)
        start = time.perf_counter_ns()
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(cell, "<cell>", "exec"), {"__name__": "__main__"})
        buffer.getvalue()
        elapsed = time.perf_counter_ns() - start
        if i >= warmup:
            samples.append(elapsed)
    return samples


def ipython_shell():
    # A private profile directory: the benchmark must not touch ~/.ipython.
    os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="cellexec-bench-ipython-")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


def time_ipython(shell, cells, iterations, warmup):
    from IPython.utils.capture import capture_output

    samples = []
    for i in range(warmup + iterations):
        cell = next(cells)
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
    parser.add_argument("--distinct-cell", required=True,
                        help="a %%-format of one integer, N")
    parser.add_argument("--distinct-iterations", type=int, required=True)
    parser.add_argument("--ipython-iterations", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()

    def repeated():
        return itertools.repeat(args.cell)

    # One counter for both baselines: no distinct cell is run twice, even
    # by different runners (IPython and exec share the interpreter).
    numbers = itertools.count(1)

    def distinct():
        return (args.distinct_cell % n for n in numbers)

    ipython_warmup = min(args.warmup, args.ipython_iterations)
    result = {
        "exec_loop": time_exec_loop(repeated(), args.iterations, args.warmup),
        "distinct_exec_loop": time_exec_loop(distinct(), args.distinct_iterations, args.warmup),
    }
    try:
        shell = ipython_shell()
        result["ipython"] = time_ipython(shell, repeated(), args.ipython_iterations,
                                         ipython_warmup)
        result["distinct_ipython"] = time_ipython(shell, distinct(), args.ipython_iterations,
                                                  ipython_warmup)
    except ImportError as error:
        result["ipython_missing"] = str(error)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
