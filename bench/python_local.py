"""The local backend from Python: cellexec.Backend("local").run_cell against
IPython's InteractiveShell.run_cell + capture_output() in the same process.

    cd _build && make bench-python            # both Python benchmarks
    python3 bench/python_local.py [-n N] [-d N] [--ipython-iterations N]

(with the package and plugins of a build tree: see bench/README.md).  Cells
are timed one by one with perf_counter_ns, each a run_cell call and the
result dict it returns: the repeated cell `print('hello')\\n1 + 1`, then
distinct cells (`print('hello')\\nN + 1`, a new text each time).  The
IPython baseline is bench/baseline_local.py's (shell made once, history in
memory).  Target: repeated cells >= 30x faster than IPython's run_cell.
"""

import argparse
import importlib.util
import itertools
import os
import statistics
import sys
import time

import cellexec

CELL = "print('hello')\n1 + 1"
DISTINCT = "print('hello')\n%d + 1"
TARGET_SPEEDUP = 30.0


def baseline_module():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline_local.py")
    spec = importlib.util.spec_from_file_location("baseline_local", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_backend(backend, cells, iterations, warmup):
    samples = []
    run_cell = backend.run_cell
    clock = time.perf_counter_ns
    for i in range(warmup + iterations):
        cell = next(cells)
        start = clock()
        result = run_cell(cell)
        elapsed = clock() - start
        if i >= warmup:
            samples.append(elapsed)
    if result["stdout"] != "hello\n" or not result["success"]:
        sys.exit(f"python_local: unexpected result {result!r}")
    return samples


def summary(samples):
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def row(name, samples):
    median, p99 = summary(samples)
    print(f"  {name:<46} {median / 1000:10.2f} µs {p99 / 1000:10.2f} µs")
    return median


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--iterations", type=int, default=20000)
    parser.add_argument("-d", "--distinct-iterations", type=int, default=20000)
    parser.add_argument("-w", "--warmup", type=int, default=2000)
    parser.add_argument("--ipython-iterations", type=int, default=2000)
    parser.add_argument("-o", "--option", action="append", default=[],
                        help="a local backend option KEY=VALUE (repeatable)")
    args = parser.parse_args()
    options = dict(option.split("=", 1) for option in args.option)

    backend = cellexec.Backend("local", options=options)
    numbers = itertools.count(1)
    repeated = time_backend(backend, itertools.repeat(CELL), args.iterations, args.warmup)
    distinct = time_backend(backend, (DISTINCT % n for n in numbers), args.distinct_iterations,
                            args.warmup)
    baseline = baseline_module()
    try:
        shell = baseline.ipython_shell()
    except ImportError as error:
        shell = None
        missing = str(error)
    if shell is not None:
        warmup = min(200, args.ipython_iterations)
        ipython = baseline.time_ipython(shell, itertools.repeat(CELL), args.ipython_iterations,
                                        warmup)
        distinct_ipython = baseline.time_ipython(shell, (DISTINCT % n for n in numbers),
                                                 args.ipython_iterations, warmup)

    print(f"python {sys.version.split()[0]}, cellexec {cellexec.__version__}, options "
          f"{options or 'default'}; {args.iterations} repeated and {args.distinct_iterations} "
          f"distinct cells")
    print(f"  {'per cell':<46} {'median':>13} {'p99':>13}")
    local_repeated = row("cellexec.Backend('local').run_cell, repeated", repeated)
    local_distinct = row("cellexec.Backend('local').run_cell, distinct", distinct)
    if shell is None:
        print(f"  IPython: not measured ({missing})")
        return 0
    ipython_repeated = row("IPython run_cell + capture_output, repeated", ipython)
    ipython_distinct = row("IPython run_cell + capture_output, distinct", distinct_ipython)
    speedup = ipython_repeated / local_repeated
    print()
    print(f"  IPython / cellexec, repeated >= {TARGET_SPEEDUP:.0f}x: "
          f"{'met' if speedup >= TARGET_SPEEDUP else 'MISSED'} ({speedup:.1f}x)")
    print(f"  IPython / cellexec, distinct: {ipython_distinct / local_distinct:.1f}x")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
