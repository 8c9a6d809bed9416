"""The least a fork-per-cell Python runner pays, for scale against the
subprocess backend's cell processes (bench/README.md, "Where a stateless
cell's CPU goes").

    /usr/bin/python3 bench/fork_per_cell.py [nothing|cell] [N] [MODULE,...]

A warm python3 (the MODULEs imported, the cell run 100 times,
gc.freeze()) forks a child per cell; the child runs the cell with
exec(compile()) into a StringIO (or nothing) and os._exit()s; the parent
waits.  Prints the wall time, the CPU time of the parent and of the
children (os.times()) and the children's minor page faults per cell.
With threading among the MODULEs, every child also runs threading's
at-fork handler ("What a fresh process paid before its cell").
"""
import contextlib
import gc
import io
import os
import resource
import sys
import time

CELL = "print('hello')\n1 + 1"


def run():
    namespace = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(CELL, "<cell>", "exec"), namespace)
    return out.getvalue()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "cell"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    for name in (sys.argv[3] if len(sys.argv) > 3 else "").split(","):
        if name:
            __import__(name)
    for _ in range(100):
        run()
    gc.freeze()
    faults_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    before, start = os.times(), time.monotonic()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            if mode == "cell":
                run()
            os._exit(0)
        os.waitpid(pid, 0)
    after, end = os.times(), time.monotonic()
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults_before
    per = 1000 / n
    print(f"{mode}: wall {(end - start) * per:.3f} ms; parent CPU "
          f"{(after.user + after.system - before.user - before.system) * per:.3f} ms; children CPU "
          f"{(after.children_user + after.children_system - before.children_user - before.children_system) * per:.3f} ms, "
          f"{faults / n:.0f} faults per cell")


if __name__ == "__main__":
    main()
