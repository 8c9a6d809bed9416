"""The subprocess backend from Python against the same cells from C.

    cd _build && make bench-python
    python3 bench/python_subprocess.py --c-bench bench/bench_subprocess [-n N] [--rounds R]

Times stateless cells (a fresh forked process per cell) and session round
trips, `print('hello')\\n1 + 1`, through cellexec.Backend("subprocess") with
perf_counter_ns, and runs bench/bench_subprocess (the C figure, through
cx_backend_run_cell) for the same numbers of cells, alternating the two in
ROUNDS rounds so that both see the same machine load.  It compares the
medians of the per-round medians.  Target: Python within 10% of C.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import cellexec

CELL = "print('hello')\n1 + 1"
TARGET = 1.10


def time_calls(run, iterations, warmup):
    samples = []
    clock = time.perf_counter_ns
    for i in range(warmup + iterations):
        start = clock()
        result = run(CELL)
        elapsed = clock() - start
        if i >= warmup:
            samples.append(elapsed)
    if result["stdout"] != "hello\n" or not result["success"]:
        sys.exit(f"python_subprocess: unexpected result {result!r}")
    return statistics.median(samples)


def c_figures(c_bench, iterations, session_iterations):
    output = subprocess.run(
        [c_bench, "-n", str(iterations), "--session-iterations", str(session_iterations),
         "--spawn-iterations", "1", "--python-c-iterations", "1", "--mp-iterations", "1",
         "--throughput-seconds", "0.1"],
        capture_output=True, text=True, check=True).stdout

    def median(label):
        match = re.search(re.escape(label) + r"\s+([0-9.]+) µs", output)
        if match is None:
            sys.exit(f"python_subprocess: no '{label}' in the C benchmark's output:\n{output}")
        return float(match.group(1)) * 1000

    return (median("subprocess, stateless (fork server)"),
            median("subprocess, session round trip"))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--c-bench", required=True, help="bench/bench_subprocess")
    parser.add_argument("-n", "--iterations", type=int, default=500)
    parser.add_argument("--session-iterations", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    backend = cellexec.Backend("subprocess")
    session = backend.session()
    rows = {"stateless": ([], []), "session": ([], [])}
    for _ in range(args.rounds):
        py_stateless = time_calls(backend.run_cell, args.iterations, args.iterations // 10)
        py_session = time_calls(session.run_cell, args.session_iterations,
                                args.session_iterations // 10)
        c_stateless, c_session = c_figures(args.c_bench, args.iterations,
                                           args.session_iterations)
        rows["stateless"][0].append(py_stateless)
        rows["stateless"][1].append(c_stateless)
        rows["session"][0].append(py_session)
        rows["session"][1].append(c_session)
    session.close()

    print(f"python {sys.version.split()[0]}: {args.rounds} rounds of {args.iterations} stateless "
          f"cells and {args.session_iterations} session round trips, Python then C")
    print(f"  {'median per cell (median of rounds)':<40} {'Python':>12} {'C':>12} {'Py/C':>7}")
    ok = True
    for name, (py, c) in rows.items():
        ratio = statistics.median(py) / statistics.median(c)
        ok = ok and ratio <= TARGET
        print(f"  {name:<40} {statistics.median(py) / 1000:9.1f} µs {statistics.median(c) / 1000:9.1f} µs"
              f" {ratio:6.2f}x")
    print(f"\n  Python within {round((TARGET - 1) * 100)}% of C: {'met' if ok else 'MISSED'}")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
