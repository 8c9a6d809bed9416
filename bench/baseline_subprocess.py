"""Baseline for bench/bench_subprocess: one process per cell, the usual way.

Run by bench_subprocess with the configured system python3; prints one
JSON object {"mp_ipython": [ns, ...]} (or {"mp_ipython_missing": why}).

    mp_ipython  per cell, a multiprocessing "spawn" Process that creates an
                IPython InteractiveShell, runs the cell with run_cell under
                capture_output() and sends the bundle (stdout, stderr, rich
                outputs, success) back through a Pipe; timed from start()
                to the bundle received and the process joined.
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time


def run_in_child(connection, cell):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    with capture_output() as captured:
        result = shell.run_cell(cell)
    connection.send({
        "stdout": captured.stdout,
        "stderr": captured.stderr,
        "rich_outputs": [output.data for output in captured.outputs],
        "success": result.success,
    })
    connection.close()


def time_mp_ipython(cell, iterations, warmup):
    # A private profile directory: the benchmark must not touch ~/.ipython.
    os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="cellexec-bench-ipython-")
    context = multiprocessing.get_context("spawn")
    samples = []
    for i in range(warmup + iterations):
        start = time.perf_counter_ns()
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=run_in_child, args=(sender, cell))
        process.start()
        sender.close()
        bundle = receiver.recv()
        process.join()
        elapsed = time.perf_counter_ns() - start
        if not bundle["success"] or not bundle["stdout"].startswith("hello\n"):
            sys.exit(f"multiprocessing baseline: unexpected bundle {bundle!r}")
        if i >= warmup:
            samples.append(elapsed)
    return samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cell", required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    report = {}
    try:
        import IPython  # noqa: F401
    except ImportError as exc:
        report["mp_ipython_missing"] = f"IPython is not installed for {sys.executable}: {exc}"
    else:
        report["mp_ipython"] = time_mp_ipython(args.cell, args.iterations, args.warmup)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
