#!/bin/sh
# `cellexec serve` driven by clients nobody here wrote (tests/node/, their
# packages from tests/node/package-lock.json, installed by setup.sh with
# `npm ci`):
#  - JupyterLab's @jupyterlab/services against the server, with a token;
#  - the same script through a real Jupyter Server whose kernels live on
#    cellexec serve (jupyter_server's gateway client): JupyterLab ->
#    Jupyter Server -> cellexec;
#  - E2B's @e2b/code-interpreter in its debug mode, which looks for a
#    code interpreter on localhost:49999 and sends no token.
# Every server listens on loopback only and is stopped at the end.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
python=${CELLEXEC_PYTHON:?run with make check}
clients="$srcdir/tests/node"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$clients/node_modules/@jupyterlab/services" ] ||
   [ ! -d "$clients/node_modules/@e2b/code-interpreter" ]; then
  echo "check_clients: node, or the packages of tests/node, are missing: run ./setup.sh test (npm ci)"
  exit 1
fi
cellexec="$builddir/tools/cellexec"
if ! "$cellexec" serve --help >/dev/null 2>&1; then
  echo "check_clients: cellexec was built without serve (libsoup 3 and libzmq): run ./setup.sh"
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cellexec-clients-XXXXXX") || exit 99
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null; done
  for pid in $pids; do wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Wait (60 s at most) until something accepts connections on 127.0.0.1:$1.
wait_port() {
  "$python" - "$1" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
failed=0
passed=0
# Run a client script; count its outcome.
run_client() {
  name=$1; shift
  if (cd "$clients" && node "$@"); then
    passed=$((passed + 1))
  else
    echo "check_clients: $name FAILED"
    failed=$((failed + 1))
  fi
}

token=cellexec-clients-token
port=$(free_port)
"$cellexec" serve -b subprocess --token "$token" --listen "127.0.0.1:$port" \
  2>"$work/serve.log" &
serve_pid=$!
pids="$pids $!"
wait_port "$port" || { cat "$work/serve.log"; exit 1; }
run_client "@jupyterlab/services" jupyterlab_client.mjs "http://127.0.0.1:$port" "$token"

# A Jupyter Server in front of it, as JupyterHub and gateways deploy one.
jupyter_port=$(free_port)
jupyter_token=cellexec-jupyter-server-token
root=""
[ "$(id -u)" -eq 0 ] && root=--allow-root
mkdir -p "$work/root" "$work/runtime"
JUPYTER_RUNTIME_DIR="$work/runtime" "$python" -m jupyter_server --no-browser $root \
  --ip=127.0.0.1 --port="$jupyter_port" --ServerApp.token="$jupyter_token" \
  --ServerApp.root_dir="$work/root" --gateway-url="http://127.0.0.1:$port" \
  --GatewayClient.auth_token="$token" >"$work/jupyter-server.log" 2>&1 &
pids="$pids $!"
if wait_port "$jupyter_port"; then
  run_client "@jupyterlab/services through Jupyter Server" jupyterlab_client.mjs \
    "http://127.0.0.1:$jupyter_port" "$jupyter_token" --any-framing
else
  echo "check_clients: the Jupyter Server did not start:"; tail -20 "$work/jupyter-server.log"
  failed=$((failed + 1))
fi

# E2B's SDK, where its debug mode looks: localhost:49999, both families.
"$cellexec" serve -b subprocess --no-token --listen 127.0.0.1:49999 --listen '[::1]:49999' \
  2>"$work/serve-e2b.log" &
e2b_pid=$!
pids="$pids $!"
if wait_port 49999; then
  run_client "@e2b/code-interpreter" e2b_client.mjs
else
  echo "check_clients: cellexec serve could not listen on port 49999:"; cat "$work/serve-e2b.log"
  failed=$((failed + 1))
fi

# Each server stops cleanly on SIGTERM: exit 0, its kernels and contexts
# ended (in the sanitizer build, a leak would make it exit otherwise).
for pid in $serve_pid $e2b_pid; do
  kill "$pid" 2>/dev/null
  wait "$pid"
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "check_clients: cellexec serve (pid $pid) exited $status on SIGTERM"
    failed=$((failed + 1))
  fi
done
if [ "$failed" -gt 0 ]; then
  for log in serve.log jupyter-server.log serve-e2b.log; do
    echo "--- $log"; tail -30 "$work/$log"
  done
fi
echo "test_clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
