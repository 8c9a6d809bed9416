"""cellexec serve beside its baselines, in one invocation (bench/README.md):

  - a WebSocket execute round trip (`print('hello')\\n1 + 1`, execute_request
    to its reply and the idle status) through `cellexec serve` against the
    same through jupyter_server with ipykernel;
  - E2B's /execute of that cell in the default context (one HTTP request,
    its lines streamed back) against the library's own cell on the same
    backend (the cellexec Python package: a session's run_cell, and a
    stateless one);
  - 32 clients at once, each in a context of its own, cells per second,
    against the library driven by 32 threads, a session each.  The clients
    are wrk (C, a thread and a connection each, bench/serve_execute.lua),
    which also measures the floor the HTTP layer sets on this machine:
    /health at the same concurrency, no cell run;
  - the memory (PSS) each idle kernel adds to the server's processes,
    against one idle ipykernel's.

Rounds alternate the order of the two sides.  Usage:

  serve.py CELLEXEC [-b BACKEND] [-r ROUNDS] [-i ITERATIONS] [--clients N]
"""
import argparse
import asyncio
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import cellexec
from tornado.websocket import websocket_connect

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel import tree_memory  # noqa: E402  (bench/kernel.py: PSS of a process tree)

CELL = "print('hello')\n1 + 1"
TOKEN = "cellexec-bench-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, process):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"serve.py: a server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"serve.py: nothing listens on port {port}")


def request(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request(method, path, body=json.dumps(body) if body is not None else None,
                       headers={"Authorization": f"token {TOKEN}"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return json.loads(data) if data else None


# ---- WebSocket round trips ---------------------------------------------------------------

async def ws_round_trips(port, kernel_id, iterations, warmup=20):
    url = f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={TOKEN}"
    ws = await websocket_connect(url)
    session = uuid.uuid4().hex
    times = []
    for i in range(warmup + iterations):
        msg_id = uuid.uuid4().hex
        message = {"header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                              "username": "bench", "version": "5.3", "date": ""},
                   "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                   "content": {"code": CELL, "silent": False, "store_history": True,
                               "user_expressions": {}, "allow_stdin": False,
                               "stop_on_error": True}}
        began = time.perf_counter()
        await ws.write_message(json.dumps(message))
        replied = idle = False
        while not (replied and idle):
            reply = json.loads(await ws.read_message())
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = reply["header"]["msg_type"]
            replied = replied or kind == "execute_reply"
            idle = idle or (kind == "status" and reply["content"]["execution_state"] == "idle")
        if i >= warmup:
            times.append(time.perf_counter() - began)
    ws.close()
    return statistics.median(times)


def round_trip(port, iterations):
    kernel = request(port, "POST", "/api/kernels", {"name": "python3"})
    try:
        return asyncio.run(ws_round_trips(port, kernel["id"], iterations))
    finally:
        request(port, "DELETE", f"/api/kernels/{kernel['id']}")


# ---- E2B /execute against the library ------------------------------------------------------

def e2b_execute(connection, code, context_id=None):
    body = {"code": code}
    if context_id is not None:
        body["context_id"] = context_id
    connection.request("POST", "/execute", body=json.dumps(body),
                       headers={"X-Access-Token": TOKEN, "Content-Type": "application/json"})
    response = connection.getresponse()
    lines = [json.loads(line) for line in response.read().splitlines() if line]
    if not any(line.get("type") == "stdout" and line.get("text") == "hello\n" for line in lines):
        sys.exit(f"serve.py: unexpected /execute answer {lines!r}")


def e2b_median(port, iterations, warmup=20):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    times = []
    for i in range(warmup + iterations):
        began = time.perf_counter()
        e2b_execute(connection, CELL)
        if i >= warmup:
            times.append(time.perf_counter() - began)
    connection.close()
    return statistics.median(times)


def library_median(run, iterations, warmup=20):
    times = []
    for i in range(warmup + iterations):
        began = time.perf_counter()
        result = run(CELL)
        if i >= warmup:
            times.append(time.perf_counter() - began)
    if result["stdout"] != "hello\n":
        sys.exit(f"serve.py: unexpected result {result!r}")
    return statistics.median(times)


# ---- Concurrency ----------------------------------------------------------------------------

def throughput(clients, seconds, make_worker):
    """Cells per second of CLIENTS threads, each running make_worker(i)()
    (one cell) until SECONDS are over."""
    stop = time.monotonic() + seconds
    counts = [0] * clients
    workers = [make_worker(i) for i in range(clients)]

    def loop(i):
        while time.monotonic() < stop:
            workers[i]()
            counts[i] += 1
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - began)


def wrk(port, path, clients, seconds, script, env=None):
    """Requests per second of wrk's CLIENTS threads, a connection each, on
    PATH; SCRIPT (a file of bench/) shapes the requests."""
    here = os.path.dirname(os.path.abspath(__file__))
    # wrk takes whole seconds.
    run = subprocess.run(["wrk", "-t", str(clients), "-c", str(clients),
                          "-d", f"{max(1, round(seconds))}s", "-s", os.path.join(here, script),
                          f"http://127.0.0.1:{port}{path}"],
                         env=dict(os.environ, CELLEXEC_TOKEN=TOKEN, **(env or {})),
                         capture_output=True, text=True)
    rate = re.search(r"^Requests/sec:\s+([0-9.]+)", run.stdout, re.M)
    bad = re.search(r"^bad (\d+)", run.stdout, re.M)
    if run.returncode != 0 or rate is None or "Non-2xx" in run.stdout or "Socket errors" in run.stdout or \
            (bad is not None and bad.group(1) != "0"):
        sys.exit(f"serve.py: wrk on {path} went wrong:\n{run.stdout}{run.stderr}")
    return float(rate.group(1))


def serve_throughput(port, clients, seconds):
    contexts = [request(port, "POST", "/contexts", {})["id"] for _ in range(clients)]
    try:
        # A cell in each first: the contexts' sessions open on first use.
        warm = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for context in contexts:
            e2b_execute(warm, CELL, context)
        warm.close()
        return wrk(port, "/", clients, seconds, "serve_execute.lua",
                   {f"CONTEXT_{i + 1}": c for i, c in enumerate(contexts)})
    finally:
        for context in contexts:
            request(port, "DELETE", f"/contexts/{context}")


def health_throughput(port, clients, seconds):
    return wrk(port, "/health", clients, seconds, "serve_health.lua")


def library_throughput(backend, clients, seconds):
    sessions = [backend.session() for _ in range(clients)]
    for s in sessions:
        s.run_cell(CELL)
    try:
        return throughput(clients, seconds, lambda i: lambda: sessions[i].run_cell(CELL))
    finally:
        for s in sessions:
            s.close()


# ---- Memory ---------------------------------------------------------------------------------

def serve_memory_per_kernel(port, server_pid, kernels):
    time.sleep(0.5)
    before = tree_memory(server_pid)
    ids = [request(port, "POST", "/api/kernels", {"name": "python3"})["id"] for _ in range(kernels)]
    time.sleep(1.0)
    after = tree_memory(server_pid)
    for kernel_id in ids:
        request(port, "DELETE", f"/api/kernels/{kernel_id}")
    return (after - before) / kernels


def ipykernel_memory(port, server_pid):
    """What one idle ipykernel adds to jupyter_server's process tree: the
    kernel and its children."""
    time.sleep(0.5)
    before = tree_memory(server_pid)
    kernel = request(port, "POST", "/api/kernels", {"name": "python3"})
    time.sleep(1.0)
    after = tree_memory(server_pid)
    request(port, "DELETE", f"/api/kernels/{kernel['id']}")
    return after - before


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cellexec")
    parser.add_argument("-b", "--backend", default="subprocess")
    parser.add_argument("-r", "--rounds", type=int, default=3)
    parser.add_argument("-i", "--iterations", type=int, default=200)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("serve.py: needs wrk, the HTTP load generator (Debian: apt install wrk; "
                 "./setup.sh installs it)")

    scratch = tempfile.mkdtemp(prefix="cellexec-bench-serve-")
    processes = []
    try:
        serve_port = free_port()
        serve = subprocess.Popen([args.cellexec, "serve", "-b", args.backend, "--token", TOKEN,
                                  "--listen", f"127.0.0.1:{serve_port}"],
                                 stderr=subprocess.DEVNULL)
        processes.append(serve)
        # jupyter_server with ipykernel on this Python, history in memory.
        spec = os.path.join(scratch, "share", "jupyter", "kernels", "python3")
        os.makedirs(spec)
        with open(os.path.join(spec, "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher",
                                "-f", "{connection_file}", "--HistoryManager.hist_file=:memory:"],
                       "display_name": "Python 3", "language": "python"}, f)
        env = dict(os.environ, JUPYTER_PATH=os.path.join(scratch, "share", "jupyter"),
                   JUPYTER_RUNTIME_DIR=os.path.join(scratch, "runtime"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        jupyter_port = free_port()
        root = ["--allow-root"] if os.geteuid() == 0 else []
        jupyter = subprocess.Popen([sys.executable, "-m", "jupyter_server", "--no-browser", *root,
                                    "--ip=127.0.0.1", f"--port={jupyter_port}",
                                    f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={scratch}"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(jupyter)
        wait_port(serve_port, serve)
        wait_port(jupyter_port, jupyter)

        backend = cellexec.Backend(args.backend)
        session = backend.session()
        rows = {name: ([], []) for name in ("ws", "e2b_session", "e2b_stateless", "concurrent",
                                            "memory")}
        health_rates = []
        for r in range(args.rounds):
            first, second = (0, 1) if r % 2 == 0 else (1, 0)
            pairs = {
                "ws": (lambda: round_trip(serve_port, args.iterations),
                       lambda: round_trip(jupyter_port, args.iterations)),
                "e2b_session": (lambda: e2b_median(serve_port, args.iterations),
                                lambda: library_median(session.run_cell, args.iterations)),
                "e2b_stateless": (lambda: e2b_median(serve_port, args.iterations),
                                  lambda: library_median(backend.run_cell, args.iterations)),
                "concurrent": (lambda: serve_throughput(serve_port, args.clients, args.seconds),
                               lambda: library_throughput(backend, args.clients, args.seconds)),
                "memory": (lambda: serve_memory_per_kernel(serve_port, serve.pid, 8),
                           lambda: ipykernel_memory(jupyter_port, jupyter.pid)),
            }
            for name, sides in pairs.items():
                results = [None, None]
                for which in (first, second):
                    results[which] = sides[which]()
                rows[name][0].append(results[0])
                rows[name][1].append(results[1])
            health_rates.append(health_throughput(serve_port, args.clients, args.seconds))
        session.close()

        def line(label, name, unit, scale, baseline, target):
            mine = statistics.median(rows[name][0])
            theirs = statistics.median(rows[name][1])
            print(f"  {label:46s} {mine * scale:9.2f} {unit:5s} {baseline:22s} "
                  f"{theirs * scale:9.2f} {unit:5s} ratio {mine / theirs:5.2f} ({target})")

        print(f"cellexec serve (-b {args.backend}), {args.rounds} rounds, medians "
              f"(load average {os.getloadavg()[0]:.2f}):")
        line("WebSocket execute round trip", "ws", "ms", 1000, "jupyter_server+ipykernel",
             "target <= 0.3")
        line("E2B /execute, default context", "e2b_session", "ms", 1000, "library session cell",
             "target <= 1.5")
        line("E2B /execute, default context", "e2b_stateless", "ms", 1000,
             "library stateless cell", "target <= 1.5")
        line(f"{args.clients} contexts at once", "concurrent", "c/s", 1,
             f"library, {args.clients} threads", "target >= 0.8")
        # What one /execute cannot beat here: the clients, the server and the
        # workers share the machine's cores, so a cell served costs at least
        # a bare request (/health) plus a library cell.
        health = statistics.median(health_rates)
        library = statistics.median(rows["concurrent"][1])
        bound = 1 / (1 / health + 1 / library)
        print(f"  {'  /health at the same concurrency':46s} {health:9.2f} {'r/s':5s} "
              f"{'(HTTP alone)':22s}")
        print(f"  {'  so at most, on these cores':46s} {bound:9.2f} {'c/s':5s} "
              f"{'library, as above':22s} {library:9.2f} {'c/s':5s} ratio {bound / library:5.2f}")
        line("memory per idle kernel (PSS)", "memory", "MiB", 1 / 2**20, "one idle ipykernel",
             "target <= 0.2")
    finally:
        for p in processes:
            p.send_signal(signal.SIGTERM)
        for p in processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
