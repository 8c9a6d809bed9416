"""What a change costs the sandboxed subprocess backend, before and after,
in one invocation (bench/README.md, "Two builds side by side").

Two build trees of cellexec, OLD and NEW, are measured in alternating
rounds, so that both see the same load of this noisy machine:

  - bench/bench_subprocess of each (built here if missing) with
    `isolation = sandbox`: the median stateless cell and the median session
    round trip of `print('hello')\\n1 + 1` (its "sandbox, ..." rows);
  - `cellexec serve -b subprocess -o isolation=sandbox` of each: the median
    of ITERATIONS sequential E2B /execute requests of the same cell in the
    default context (one HTTP request, its lines streamed back).

It prints each round and the ratio NEW / OLD of the medians of the rounds'
medians.  Usage:

  isolation_ab.py OLD_BUILDDIR NEW_BUILDDIR [-r ROUNDS] [-n CELLS] [-i ITERATIONS]
"""
import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CELL = "print('hello')\n1 + 1"
TOKEN = "cellexec-bench-token"
ROWS = {
    "stateless": "sandbox, stateless (fork server)",
    "session": "sandbox, session round trip",
}


def environment(build):
    env = dict(os.environ)
    env.pop("CELLEXEC_CONFIG", None)
    env.update(
        CELLEXEC_PLUGIN_PATH=os.path.join(build, "plugins", ".libs"),
        CELLEXEC_PROBE=os.path.join(build, "lib", "cellexec-probe"),
        CELLEXEC_WORKER=os.path.join(build, "plugins", "subprocess", ".libs", "cellexec-worker"),
    )
    return env


def bench_subprocess(build, cells):
    """The sandbox rows of one bench_subprocess run, in µs."""
    program = os.path.join(build, "bench", "bench_subprocess")
    if not os.path.exists(program):
        subprocess.run(["make", "-s", "-C", build, "bench/bench_subprocess"], check=True)
    out = subprocess.run(
        [program, "-n", str(cells), "--session-iterations", str(cells * 3),
         "--spawn-iterations", "1", "--python-c-iterations", "1", "--mp-iterations", "1",
         "--throughput-seconds", "0.5"],
        env=environment(build), check=True, capture_output=True, text=True).stdout
    found = {}
    for key, row in ROWS.items():
        match = re.search(re.escape(row) + r"\s+([\d.]+) µs", out)
        if match is None:
            sys.exit(f"isolation_ab.py: no '{row}' row from {program}:\n{out}")
        found[key] = float(match.group(1))
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def execute_median(build, iterations):
    """The median /execute round trip of cellexec serve from BUILD, in µs."""
    port = free_port()
    with tempfile.TemporaryDirectory() as cwd, open(os.path.join(cwd, "log"), "w") as log:
        os.chmod(cwd, 0o1777)  # sandboxed cells of a root host run as nobody
        server = subprocess.Popen(
            [os.path.join(build, "tools", "cellexec"), "serve", "--listen", f"127.0.0.1:{port}",
             "--token", TOKEN, "-b", "subprocess", "-o", "isolation=sandbox",
             "-o", f"cwd={cwd}"],
            env=environment(build), stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        sys.exit(f"isolation_ab.py: cellexec serve of {build} did not start")
                    time.sleep(0.05)
            connection = http.client.HTTPConnection("127.0.0.1", port)
            body = json.dumps({"code": CELL})
            headers = {"X-Access-Token": TOKEN, "Content-Type": "application/json"}
            samples = []
            for i in range(iterations + iterations // 10):
                started = time.perf_counter_ns()
                connection.request("POST", "/execute", body, headers)
                answer = connection.getresponse().read()
                took = time.perf_counter_ns() - started
                if b'"hello\\n"' not in answer:
                    sys.exit(f"isolation_ab.py: unexpected /execute answer: {answer[:200]!r}")
                if i >= iterations // 10:
                    samples.append(took / 1000)
            connection.close()
            return statistics.median(samples)
        finally:
            server.terminate()
            server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("-r", "--rounds", type=int, default=4)
    parser.add_argument("-n", "--cells", type=int, default=1000)
    parser.add_argument("-i", "--iterations", type=int, default=500)
    args = parser.parse_args()
    builds = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    seen = {side: {"stateless": [], "session": [], "execute": []} for side in builds}
    print(f"{'round':<6} {'side':<4} {'stateless':>12} {'session':>12} {'/execute':>12}  (µs)")
    for round_number in range(args.rounds):
        # Alternate which side goes first, so neither always meets the
        # other's leftovers.
        order = ["old", "new"] if round_number % 2 == 0 else ["new", "old"]
        for side in order:
            rows = bench_subprocess(builds[side], args.cells)
            rows["execute"] = execute_median(builds[side], args.iterations)
            for key, value in rows.items():
                seen[side][key].append(value)
            print(f"{round_number + 1:<6} {side:<4} {rows['stateless']:>12.1f} "
                  f"{rows['session']:>12.1f} {rows['execute']:>12.1f}", flush=True)
    print(f"\nmedian of the rounds, new / old (load {os.getloadavg()[0]:.2f}):")
    for key in ("stateless", "session", "execute"):
        old, new = (statistics.median(seen[side][key]) for side in ("old", "new"))
        print(f"  {key:<10} {old:10.1f} -> {new:10.1f} µs  {new / old:5.2f}x")


if __name__ == "__main__":
    main()
