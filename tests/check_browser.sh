#!/bin/sh
# What a user of Jupyter Notebook 6 sees, in a real browser: Debian's
# notebook on loopback, Debian's chromium headless, driven by the pinned
# puppeteer-core of tests/node (tests/node/notebook_browser.mjs).  The same
# cells on ipykernel ("python3") and on cellexec-sandbox (cellexec where
# the sandbox cannot run here), in one run; ipykernel's page proves the
# expectations first:
#  - the prompts after two comm_opens to no target: the first cell In [1],
#    and on cellexec a crashed cell the next number (ipykernel dies of it);
#  - the crash's message in the output area: WorkerCrashed, the signal,
#    the fresh session;
#  - a value whose __repr__ raises: its traceback, as ipykernel's page
#    shows it, and no Out prompt.
builddir=${CELLEXEC_BUILDDIR:?run with make check}
srcdir=${CELLEXEC_SRCDIR:?run with make check}
python=${CELLEXEC_PYTHON:?run with make check}
clients="$srcdir/tests/node"
if [ ! -x /usr/bin/chromium ]; then
  echo "check_browser: skipped: /usr/bin/chromium is missing (Debian package chromium: ./setup.sh)"
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  echo "check_browser: skipped: node is missing (./setup.sh test installs it)"
  exit 77
fi
if [ ! -d "$clients/node_modules/puppeteer-core" ]; then
  echo "check_browser: tests/node's packages are missing: run ./setup.sh test (npm ci)"
  exit 1
fi
if ! "$python" -c 'import notebook, ipykernel' 2>/dev/null; then
  echo "check_browser: python3-notebook or python3-ipykernel is missing: run ./setup.sh"
  exit 1
fi
if ! "$builddir/tools/cellexec" kernel --help >/dev/null 2>&1; then
  echo "check_browser: skipped: cellexec was built without libzmq (no kernel command)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cellexec-browser-XXXXXX") || exit 99
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

. "$srcdir/tests/kernelspecs.sh"
install_kernelspecs "$work/prefix" || exit 1
kernel=cellexec-sandbox
if ! "$builddir/tools/cellexec" run -b subprocess -o isolation=sandbox -c 'pass' >/dev/null 2>&1; then
  echo "check_browser: the sandbox cannot run here: the cellexec kernel instead"
  kernel=cellexec
fi
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=cellexec-browser-token
mkdir -p "$work/root" "$work/runtime" "$work/config" || exit 99
root=""
[ "$(id -u)" -eq 0 ] && root=--allow-root
JUPYTER_PATH="$work/prefix/share/jupyter" JUPYTER_RUNTIME_DIR="$work/runtime" \
JUPYTER_CONFIG_DIR="$work/config" PYDEVD_DISABLE_FILE_VALIDATION=1 \
  "$python" -m notebook --no-browser $root --ip=127.0.0.1 --port="$port" \
  --NotebookApp.port_retries=0 --NotebookApp.token="$token" \
  --NotebookApp.notebook_dir="$work/root" >"$work/notebook.log" 2>&1 &
server=$!
(cd "$clients" && node notebook_browser.mjs "http://127.0.0.1:$port" "$token" "$work/root" \
   python3 "$kernel") >"$work/views.json" || { cat "$work/notebook.log"; exit 1; }
"$python" - "$work/views.json" <<'PY'
import json, sys

views = {}
with open(sys.argv[1]) as f:
    for line in f:
        view = json.loads(line)
        views[view["kernel"]] = view["cells"]
before, died, raising = views.pop("python3")  # ipykernel dies of the crash
name, cells = views.popitem()
failed = []


def check(what, got, expected):
    if got != expected:
        failed.append(f"{what}: expected {expected!r}, got {got!r}")


# ipykernel's page first: what the expectations below rest on.
check("python3: the first cell's prompt", before["prompt"], "In [1]:")
check("python3: died of the crash", died["kernel_died"], True)
check("python3: the raising __repr__'s errors", raising["errors"], 1)
check("python3: the raising __repr__'s Out prompts", raising["out_prompts"], [])
check("python3: the raising __repr__'s last line", raising["text"].splitlines()[-1:],
      ["ValueError: no repr today"])
if failed:
    print("check_browser: ipykernel's page is not what the test expects:", *failed, sep="\n  ")
    print("test_browser: 0 passed, 1 failed")
    sys.exit(1)
first, crashed, after = cells
check(f"{name}: the first cell's prompt", first["prompt"], before["prompt"])
number = int(before["prompt"].removeprefix("In [").removesuffix("]:"))
check(f"{name}: the crashed cell's prompt", crashed["prompt"], f"In [{number + 1}]:")
check(f"{name}: the crashed cell's errors", crashed["errors"], 1)
check(f"{name}: the kernel died of the crash", crashed["kernel_died"], False)
for words in ("WorkerCrashed", "killed by signal 11 (SIGSEGV)", "fresh session"):
    check(f"{name}: {words!r} shown for the crash", words in crashed["text"], True)
for key in ("prompt", "errors", "out_prompts", "text"):
    check(f"{name}: the raising __repr__'s {key}", after[key], raising[key])
if failed:
    print(f"check_browser: {name} in Notebook differs from ipykernel:", *failed, sep="\n  ")
    print("test_browser: 1 passed, 1 failed")
    sys.exit(1)
print(f"check_browser: Notebook shows {name} as it shows ipykernel")
print("test_browser: 2 passed, 0 failed")
PY
