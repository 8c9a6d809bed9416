"""A 50-cell notebook end to end: `cellexec notebook run` against
`jupyter execute` (nbclient and an ipykernel), cold start included.

Each round runs, one after another in this invocation, `cellexec notebook
run -b subprocess`, `cellexec notebook run -b local` (both writing the
executed notebook to a file) and `jupyter execute` on the same notebook,
each a new process; rounds alternate the order so that no tool always runs first on
a warm page cache.  Prints the median wall time of each and the ratios of
the medians.

Usage: notebook.py CELLEXEC [-r ROUNDS] [-n CELLS]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def small_cells(count):
    """Small cells of the kinds notebooks are made of: assignments,
    prints, expressions, a function, a comprehension."""
    cells = [new_markdown_cell("# A notebook of small cells")]
    cells.append(new_code_cell("import math\ntotal = 0"))
    for i in range(count - 1):
        kind = i % 4
        if kind == 0:
            cells.append(new_code_cell(f"total += {i}\nprint('step', {i}, total)"))
        elif kind == 1:
            cells.append(new_code_cell(f"math.sqrt(total + {i})"))
        elif kind == 2:
            cells.append(new_code_cell(f"def f{i}(x):\n    return x * {i}\nf{i}(3)"))
        else:
            cells.append(new_code_cell(f"[n * n for n in range({i % 7 + 3})]"))
    return new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


def timed(command, env):
    start = time.monotonic()
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=env, check=False)
    elapsed = time.monotonic() - start
    if finished.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({finished.returncode}): "
                 f"{finished.stderr.decode(errors='replace').strip()}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cellexec")
    parser.add_argument("-r", "--rounds", type=int, default=5)
    parser.add_argument("-n", "--cells", type=int, default=50)
    args = parser.parse_args()
    jupyter_execute = shutil.which("jupyter-execute", path="/usr/bin:/bin")
    if jupyter_execute is None:
        sys.exit("jupyter-execute not found in /usr/bin: install python3-nbclient")

    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "small.ipynb")
        nbformat.write(small_cells(args.cells), path)
        out = os.path.join(scratch, "out.ipynb")
        tools = {
            "cellexec -b subprocess": [args.cellexec, "notebook", "run", "-q", "-b", "subprocess",
                                       path, "-o", out],
            "cellexec -b local": [args.cellexec, "notebook", "run", "-q", "-b", "local", path,
                                  "-o", out],
            # jupyter execute (nbclient 0.7) does not save the executed
            # notebook: the baseline is spared the writing cellexec does.
            "jupyter execute (nbclient)": [jupyter_execute, path],
        }
        times = {name: [] for name in tools}
        names = list(tools)
        for round_number in range(args.rounds):
            order = names if round_number % 2 == 0 else list(reversed(names))
            for name in order:
                times[name].append(timed(tools[name], env))
        baseline = statistics.median(times["jupyter execute (nbclient)"])
        print(f"{args.cells}-cell notebook, {args.rounds} rounds, median wall time per run "
              f"(load average {os.getloadavg()[0]:.2f}):")
        for name in names:
            median = statistics.median(times[name])
            print(f"  {name:28s} {median * 1000:8.1f} ms   {baseline / median:5.1f}x faster "
                  f"than jupyter execute" if name != names[-1] else
                  f"  {name:28s} {median * 1000:8.1f} ms   (baseline)")


if __name__ == "__main__":
    main()
