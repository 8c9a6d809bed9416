"""What one large request body costs `cellexec serve` (docs/serving.md):
for each body below, a fresh server (its own port, a token) gets it on
POST /execute while another client asks /health over and over; printed
are the answer's status, the longest /health waited meanwhile, and the
server's peak resident memory (VmHWM) after it.

  - 60 MB of "[]," (20 million values);
  - 64 MiB of "[],", the default --max-body;
  - 64 MiB that the server reads: 99998 empty objects and one string,
    the most values a body may hold (the most memory per byte of text)
    beside the longest string.

Usage:

  serve_body.py CELLEXEC
"""
import http.client
import socket
import subprocess
import sys
import threading
import time

TOKEN = "serve-body-bench"
HEADERS = {"Authorization": "token " + TOKEN, "Content-Type": "application/json"}
MAX_BODY = 64 * 1024 * 1024


def wide(size):
    count = (size - 2) // 3
    text = b"[" + b"[]," * (count - 1) + b"[]"
    return text + b" " * (size - 1 - len(text)) + b"]"


def objects_and_string(size, objects):
    head = b"[" + b"{}," * objects
    return head + b'"' + b"x" * (size - len(head) - 3) + b'"]'


BODIES = [
    ("60 MB of [],", wide(60 * 1000 * 1000)),
    ("64 MiB of [],", wide(MAX_BODY)),
    ("64 MiB: 99998 {} and a string", objects_and_string(MAX_BODY, 99998)),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port):
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit("serve_body.py: the server did not listen")


def peak_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def post(port, body, answer):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    connection.request("POST", "/execute", body, HEADERS)
    answer.append(connection.getresponse().status)


def measure(cellexec, body):
    port = free_port()
    server = subprocess.Popen([cellexec, "serve", "--listen", f"127.0.0.1:{port}",
                               "--token", TOKEN], stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        answer = []
        sender = threading.Thread(target=post, args=(port, body, answer))
        sender.start()
        worst = 0.0
        while sender.is_alive():
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            start = time.monotonic()
            connection.request("GET", "/health", headers=HEADERS)
            connection.getresponse().read()
            worst = max(worst, time.monotonic() - start)
            time.sleep(0.005)
        sender.join()
        return answer[0] if answer else None, worst, peak_kb(server.pid)
    finally:
        server.terminate()
        server.wait()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, body in BODIES:
        status, worst, peak = measure(sys.argv[1], body)
        print(f"{name:32} {status}  /health waited at most {worst:.3f} s  "
              f"peak {peak / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
