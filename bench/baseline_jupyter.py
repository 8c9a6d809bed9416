"""jupyter_client driving ipykernel kernels, the way bench_jupyter drives
them through cellexec: the baseline of `make bench-jupyter`.

Prints one JSON object: median and p99 round trip (ms), cells/s and
client CPU per cell for sequential cells, aggregate cells/s with 4
kernels at once (one thread each), the time to start a kernel and get
its first result, and the interrupt latency of a `time.sleep`.
"""
import json
import os
import resource
import statistics
import sys
import threading
import time

from jupyter_client.manager import start_new_kernel

CELL = "print('hello')\n1 + 1"


def run(kc, code, timeout=60):
    out = []

    def hook(msg):
        out.append(msg)

    reply = kc.execute_interactive(code, output_hook=hook, timeout=timeout, allow_stdin=False,
                                   stop_on_error=False)
    return reply, out


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    python = sys.executable
    result = {}

    start = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="python3")
    run(kc, "1")
    result["cold_first_result_ms"] = (time.perf_counter() - start) * 1e3

    for _ in range(20):
        run(kc, CELL)
    samples = []
    c0 = cpu()
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        reply, out = run(kc, CELL)
        samples.append((time.perf_counter() - s) * 1e3)
    wall = time.perf_counter() - t0
    result["sequential_median_ms"] = statistics.median(samples)
    result["sequential_p99_ms"] = pct(samples, 0.99)
    result["sequential_cells_per_s"] = n / wall
    result["client_cpu_ms_per_cell"] = (cpu() - c0) * 1e3 / n

    # Interrupt of a sleeping cell: from interrupt_kernel() to the reply.
    latencies = []
    for _ in range(5):
        msg_id = kc.execute("import time\ntime.sleep(30)", stop_on_error=False)
        time.sleep(0.3)
        s = time.perf_counter()
        km.interrupt_kernel()
        while True:
            reply = kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        latencies.append((time.perf_counter() - s) * 1e3)
        # drain iopub
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=0.2)
            except Exception:
                break
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                    and msg["content"]["execution_state"] == "idle":
                break
    result["interrupt_ms"] = statistics.median(latencies)
    kc.stop_channels()
    km.shutdown_kernel(now=True)

    # Four kernels at once, one thread each.
    pairs = [start_new_kernel(kernel_name="python3") for _ in range(4)]
    for _, k in pairs:
        for _ in range(10):
            run(k, CELL)
    per = max(1, n // 4)

    def worker(k):
        for _ in range(per):
            run(k, CELL)

    threads = [threading.Thread(target=worker, args=(k,)) for _, k in pairs]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result["pool4_cells_per_s"] = per * 4 / (time.perf_counter() - t0)
    for m, k in pairs:
        k.stop_channels()
        m.shutdown_kernel(now=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
