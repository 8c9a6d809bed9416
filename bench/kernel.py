"""cellexec kernel beside ipykernel, both driven by jupyter_client, in one
invocation: start to the first kernel_info_reply (and to the end of
jupyter_client's wait_for_ready(), which adds its own 0.2 s), the round trip of one
small cell, `jupyter execute` of a 50-cell notebook, and the resident
memory of an idle kernel with all its processes.

The kernelspecs are made here, under a scratch JUPYTER_PATH: "cellexec"
(`cellexec kernel install`, the subprocess backend unless -b) and
"python3" (ipykernel on this Python, history in memory as nbclient starts
it).  Rounds alternate which kernel goes first.  Prints medians and the
ratios cellexec / ipykernel.

Usage: kernel.py CELLEXEC [--kernel-executable PATH] [-b BACKEND] [-r ROUNDS] [-n CELLS]
                 [-i ITERATIONS]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat
from jupyter_client.manager import KernelManager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from notebook import small_cells  # noqa: E402  (bench/notebook.py)

CELL = "print('hello')\n1 + 1"


def make_kernelspecs(cellexec, executable, backend, prefix):
    extra = ["--executable", executable] if executable else []
    subprocess.run([cellexec, "kernel", "install", "--prefix", prefix, "--name", "cellexec",
                    "-b", backend, *extra], check=True, stdout=subprocess.DEVNULL)
    spec_dir = os.path.join(prefix, "share", "jupyter", "kernels", "python3")
    os.makedirs(spec_dir, exist_ok=True)
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher",
                            "-f", "{connection_file}"],
                   "display_name": "Python 3 (ipykernel)", "language": "python"}, f)
    # History in memory, from a profile: nbclient adds the same flag to the
    # command line, and ipykernel refuses it twice.
    profile = os.path.join(prefix, "ipython", "profile_default")
    os.makedirs(profile)
    with open(os.path.join(profile, "ipython_kernel_config.py"), "w") as f:
        f.write("c.HistoryManager.hist_file = ':memory:'\n")


def start(name):
    """A started kernel NAME and its ready client, and the seconds from the
    start to its first kernel_info_reply and to the end of
    wait_for_ready().  wait_for_ready() ends only once IOPub stayed quiet
    for 0.2 s after that reply (jupyter_client 7 flushes it so): a cost of
    the client's, the same for every kernel, that the first measure leaves
    out."""
    began = time.monotonic()
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    # As wait_for_ready() asks, up to the reply (a request sent before the
    # kernel bound its socket waits in ZeroMQ's queue meanwhile).
    while True:
        msg_id = kc.kernel_info()
        try:
            reply = kc.get_shell_msg(timeout=1)
        except Exception:  # queue.Empty: ask again
            continue
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    replied = time.monotonic() - began
    kc.wait_for_ready(timeout=60)
    return km, kc, replied, time.monotonic() - began


def stop(km, kc):
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def round_trip(kc, iterations):
    """Median seconds of execute_interactive(CELL), after a warm-up."""
    for _ in range(20):
        kc.execute_interactive(CELL, timeout=60, output_hook=lambda m: None)
    times = []
    for _ in range(iterations):
        began = time.monotonic()
        reply = kc.execute_interactive(CELL, timeout=60, output_hook=lambda m: None)
        times.append(time.monotonic() - began)
        if reply["content"]["status"] != "ok":
            sys.exit(f"the cell failed: {reply['content']}")
    return statistics.median(times)


def tree_memory(pid):
    """Proportional set size (bytes) of PID and all its descendants: pages
    shared between them (a fork server's spares share most of theirs) are
    counted once, split among those that map them."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def jupyter_execute(name, path):
    began = time.monotonic()
    done = subprocess.run(["/usr/bin/jupyter-execute", f"--kernel_name={name}", path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        sys.exit(f"jupyter execute --kernel_name={name} failed: {done.stderr.decode()[-1500:]}")
    return time.monotonic() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cellexec")
    parser.add_argument("-b", "--backend", default="subprocess")
    # The program itself, not libtool's wrapper script (a shell that costs
    # each start some 70 ms): LD_LIBRARY_PATH must then find libcellexec.
    parser.add_argument("--kernel-executable")
    parser.add_argument("-r", "--rounds", type=int, default=5)
    parser.add_argument("-n", "--cells", type=int, default=50)
    parser.add_argument("-i", "--iterations", type=int, default=200)
    args = parser.parse_args()
    if shutil.which("jupyter-execute", path="/usr/bin") is None:
        sys.exit("jupyter-execute not found in /usr/bin: install python3-nbclient")
    names = ["cellexec", "python3"]
    starts = {n: [] for n in names}
    trips = {n: [] for n in names}
    readies = {n: [] for n in names}
    memory = {n: [] for n in names}
    notebook = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as scratch:
        make_kernelspecs(args.cellexec, args.kernel_executable, args.backend, scratch)
        os.environ["JUPYTER_PATH"] = os.path.join(scratch, "share", "jupyter")
        os.environ["IPYTHONDIR"] = os.path.join(scratch, "ipython")
        os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        path = os.path.join(scratch, "small.ipynb")
        nbformat.write(small_cells(args.cells), path)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else list(reversed(names)):
                km, kc, replied, ready = start(name)
                starts[name].append(replied)
                readies[name].append(ready)
                trips[name].append(round_trip(kc, args.iterations))
                time.sleep(0.5)  # idle
                memory[name].append(tree_memory(km.provisioner.process.pid))
                stop(km, kc)
                notebook[name].append(jupyter_execute(name, path))

    def line(label, values, unit, scale, better):
        c, i = statistics.median(values["cellexec"]), statistics.median(values["python3"])
        print(f"  {label:34s} cellexec {c * scale:9.1f} {unit:3s} ipykernel {i * scale:9.1f} "
              f"{unit:3s} ratio {c / i:5.2f} ({better})")

    print(f"cellexec kernel (-b {args.backend}) against ipykernel, {args.rounds} rounds, "
          f"medians (load average {os.getloadavg()[0]:.2f}):")
    line("start to kernel_info_reply", starts, "ms", 1000, "target <= 0.3")
    line("start to wait_for_ready() done", readies, "ms", 1000, "+0.2 s IOPub flush")
    line(f"round trip ({args.iterations} cells)", trips, "ms", 1000, "target <= 0.6")
    line(f"jupyter execute, {args.cells} cells", notebook, "ms", 1000, "target <= 0.33")
    line("idle kernel, PSS of all its procs", memory, "MiB", 1 / 2**20, "target <= 0.5")


if __name__ == "__main__":
    main()
