#!/usr/bin/python3
"""Record what a real Jupyter kernel (ipykernel) does with every cell of
cases.py, as a notebook client records it, into expected.json.

    /usr/bin/python3 tests/ipython/generate_expectations.py

Each case gets a fresh kernel (a new process: execution_count 1, nothing
defined), started with a fixed environment in a new empty working
directory.  The case's setup cells, if any, run first in it (their
outputs are not recorded).  The cell is executed as nbclient executes it (store_history,
allow_stdin=False); the IOPub messages of that execution become nbformat v4
outputs by nbclient's rules, and the execute_reply gives status, payload and
execution_count.  See README.md.

Needs jupyter_client and ipykernel for the Python that runs the kernel
(--python, default /usr/bin/python3).  nbclient and nbformat are not needed:
their output rules are reproduced below.
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# jupyter_client may import ipykernel, which imports debugpy, which warns.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

FORMAT = 1


# ---- outputs as a notebook client records them -----------------------------------
#
# nbclient's NotebookClient.process_message/output/clear_output/_update_display_id
# with nbformat.v4.output_from_msg, for one cell:
#   - status, execute_input: no output; comm messages: no output.
#   - stream, display_data, execute_result, error: one output each, built from
#     the message content (display_data/execute_result keep data and
#     metadata; the transient display_id is not stored).
#   - a display_id on display_data, execute_result or update_display_data
#     first replaces data and metadata of every earlier output with that id
#     (still present in the cell); update_display_data adds no output.
#   - clear_output empties the outputs (and forgets their display ids);
#     with wait=True that happens just before the next output is added.
# On top of that, a stream output directly after a stream output of the same
# name is merged into it (what nbclient's coalesce_streams and every front
# end do; how ipykernel batches writes into messages is timing).

def output_from_msg(msg):
    """nbformat.v4.output_from_msg: the output of MSG, or None."""
    kind = msg["header"]["msg_type"]
    content = msg["content"]
    if kind == "execute_result":
        return {"output_type": kind, "execution_count": content["execution_count"],
                "data": content.get("data", {}), "metadata": content.get("metadata", {})}
    if kind == "display_data":
        return {"output_type": kind, "data": content.get("data", {}),
                "metadata": content.get("metadata", {})}
    if kind == "stream":
        return {"output_type": kind, "name": content["name"], "text": content["text"]}
    if kind == "error":
        return {"output_type": kind, "ename": content["ename"], "evalue": content["evalue"],
                "traceback": content["traceback"]}
    return None


class CellOutputs:
    """The outputs of one cell, built from its IOPub messages."""

    def __init__(self):
        self.outputs = []
        self.display_ids = {}  # display_id -> [output index]
        self.clear_before_next_output = False
        self.execution_count = None

    def process(self, msg):
        kind = msg["header"]["msg_type"]
        content = msg["content"]
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id and kind in ("execute_result", "display_data", "update_display_data"):
            self._update_display(display_id, content)
        if "execution_count" in content:
            self.execution_count = content["execution_count"]
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_before_next_output = True
            else:
                self._clear()
            return
        if kind in ("status", "execute_input", "update_display_data") or kind.startswith("comm"):
            return
        out = output_from_msg(msg)
        if out is None:
            return
        if self.clear_before_next_output:
            self._clear()
            self.clear_before_next_output = False
        if display_id:
            self.display_ids.setdefault(display_id, []).append(len(self.outputs))
        last = self.outputs[-1] if self.outputs else None
        if (out["output_type"] == "stream" and last is not None
                and last["output_type"] == "stream" and last["name"] == out["name"]):
            last["text"] += out["text"]
        else:
            self.outputs.append(out)

    def _update_display(self, display_id, content):
        for index in self.display_ids.get(display_id, []):
            self.outputs[index]["data"] = copy.deepcopy(content.get("data", {}))
            self.outputs[index]["metadata"] = copy.deepcopy(content.get("metadata", {}))

    def _clear(self):
        self.outputs = []
        for indices in self.display_ids.values():
            indices.clear()


# ---- normalisation (the same rules as tests/test_ipython_table.c) ------------------

ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
TIMING = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?\s*(?:ns|µs|us|ms|s)\b")
DIGITS = re.compile(r"[0-9]+")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CELL_FILENAME = re.compile(r"\([^(),]*, line ([0-9]+)\)")
CELL_PATH = re.compile(r"/tmp/ipykernel_[0-9]+/[0-9]+\.py|<cell-[0-9a-f]+>")


def normalize_string(text, rules):
    if "strip_ansi" in rules:
        text = ANSI.sub("", text)
    if "timing" in rules:
        text = TIMING.sub("<time>", text)
    if "cell_filename" in rules:
        text = CELL_FILENAME.sub(r"(<cell>, line \1)", text)
    if "cell_path" in rules:
        text = CELL_PATH.sub("<cell>", text)
    if "digits" in rules:
        text = DIGITS.sub("<n>", text)
    return ADDRESS.sub("0x<addr>", text)


def normalize_value(value, rules):
    if isinstance(value, str):
        return normalize_string(value, rules)
    if isinstance(value, list):
        return [normalize_value(v, rules) for v in value]
    if isinstance(value, dict):
        return {k: normalize_value(v, rules) for k, v in value.items()}
    return value


EXIT_HINT = "UserWarning: To exit: use 'exit', 'quit', or Ctrl-D."


def normalize_outputs(outputs, rules):
    result = []
    streams = {}
    for out in outputs:
        out = dict(out)
        if ("drop_exit_hint" in rules and out.get("output_type") == "stream"
                and EXIT_HINT in out.get("text", "")):
            continue
        if out.get("output_type") == "error" and "compare_tracebacks" not in rules:
            out.pop("traceback", None)
        if "streams_by_name" in rules and out.get("output_type") == "stream":
            streams[out["name"]] = streams.get(out["name"], "") + out["text"]
            continue
        result.append(out)
    for name in ("stdout", "stderr"):
        if name in streams:
            result.append({"output_type": "stream", "name": name, "text": streams[name]})
    return normalize_value(result, rules)


def normalized_entry(entry):
    rules = entry.get("normalize", [])
    return {
        "outputs": normalize_outputs(entry["outputs"], rules),
        "payload": normalize_value(entry["payload"], rules),
        "execution_count": entry["execution_count"],
        "status": entry["status"],
        "files": entry.get("files"),
    }


# ---- the kernel ------------------------------------------------------------------------

VERSIONS_CODE = """\
import json, platform, sys
import IPython, ipykernel
print(json.dumps({"python": platform.python_version(), "python_executable": sys.executable,
                  "ipython": IPython.__version__, "ipykernel": ipykernel.__version__}))
"""


def kernel_versions(python):
    out = subprocess.run([python, "-c", VERSIONS_CODE], check=True, capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    return json.loads(out.stdout)


def kernel_spec_manager(python, workdir):
    """A KernelSpecManager whose 'python3' kernel runs PYTHON: the installed
    spec when it does, else a private one written into WORKDIR."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    ksm = KernelSpecManager()
    try:
        spec = ksm.get_kernel_spec("python3")
        argv0 = shutil.which(spec.argv[0]) or spec.argv[0]
        if os.path.realpath(argv0) == os.path.realpath(python) and "ipykernel" in " ".join(spec.argv):
            return ksm, spec.argv, "installed kernelspec " + spec.resource_dir
    except NoSuchKernel:
        pass
    kdir = os.path.join(workdir, "kernels", "python3")
    os.makedirs(kdir)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": "Python 3 (cellexec table)",
                   "language": "python"}, f)
    ksm = KernelSpecManager(kernel_dirs=[os.path.join(workdir, "kernels")],
                            ensure_native_kernel=False)
    return ksm, argv, "private kernelspec (the installed python3 spec runs another Python)"


def kernel_env(root):
    """The kernel's whole environment: nothing from ours."""
    home = os.path.join(root, "home")
    os.makedirs(home, exist_ok=True)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "IPYTHONDIR": os.path.join(home, ".ipython"),
        "JUPYTER_CONFIG_DIR": os.path.join(home, ".jupyter"),
        "JUPYTER_DATA_DIR": os.path.join(home, ".local", "share", "jupyter"),
        "JUPYTER_RUNTIME_DIR": os.path.join(root, "runtime"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def execute(kc, code, timeout):
    """Run CODE as nbclient runs a cell: (CellOutputs, execute_reply, IOPub kinds)."""
    msg_id = kc.execute(code, silent=False, store_history=True,
                        allow_stdin=False, stop_on_error=True)
    cell = CellOutputs()
    deadline = time.monotonic() + timeout
    kinds = []
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kinds.append(msg["header"]["msg_type"])
        cell.process(msg)
        if (msg["header"]["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            break
    while True:
        reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    return cell, reply, kinds


def run_case(ksm, case, timeout, verbose):
    from jupyter_client import KernelManager

    with tempfile.TemporaryDirectory(prefix="cellexec-ipython-table-") as root:
        cwd = os.path.join(root, "cwd")
        os.makedirs(cwd)
        os.makedirs(os.path.join(root, "runtime"))
        km = KernelManager(kernel_name="python3", kernel_spec_manager=ksm,
                           connection_file=os.path.join(root, "runtime", "kernel.json"))
        km.start_kernel(cwd=cwd, env=kernel_env(root),
                        extra_arguments=["--HistoryManager.hist_file=:memory:"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        kc = km.client()
        try:
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            kc.allow_stdin = False
            for code in case.get("setup", []):
                execute(kc, code, timeout)  # may fail: its outputs are not recorded
            cell, reply, kinds = execute(kc, case["code"], timeout)
            files = {}
            for name in case.get("files", []):
                path = os.path.join(cwd, name)
                files[name] = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    if verbose:
        print("  messages:", " ".join(kinds), file=sys.stderr)
    content = reply["content"]
    entry = {
        "name": case["name"],
        "code": case["code"],
        "outputs": cell.outputs,
        "payload": content.get("payload", []),
        "execution_count": content.get("execution_count"),
        "status": content["status"],
    }
    if content["status"] == "error":
        entry["ename"] = content.get("ename")
        entry["evalue"] = content.get("evalue")
    for key in ("setup", "normalize", "note"):
        if key in case:
            entry[key] = case[key]
    if "files" in case:
        entry["files"] = files
    return entry


def strip_tracebacks(entry):
    """Tracebacks not compared are kept readable (no colour codes)."""
    if "compare_tracebacks" in entry.get("normalize", ()):
        return
    for out in entry["outputs"]:
        if out["output_type"] == "error":
            out["traceback"] = [ANSI.sub("", line) for line in out["traceback"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="the Python the kernel runs (default: %(default)s)")
    parser.add_argument("--output", default=os.path.join(HERE, "expected.json"))
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this case (repeatable); prints, writes nothing")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every case N times and fail when the normalised "
                             "results differ (finds racy cases)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per cell")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="print the IOPub message types of each execution")
    args = parser.parse_args()

    names = [c["name"] for c in cases.CASES]
    if len(set(names)) != len(names):
        sys.exit("duplicate case names in cases.py")
    for name in names:
        if not re.fullmatch(r"[a-z0-9_]+", name):
            sys.exit(f"bad case name {name!r}")
    selected = [c for c in cases.CASES if not args.only or c["name"] in args.only]
    if args.only and len(selected) != len(args.only):
        sys.exit("unknown case in --only")

    import jupyter_client

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cellexec-ipython-specs-") as workdir:
        ksm, argv, spec_source = kernel_spec_manager(args.python, workdir)
        entries = []
        unstable = []
        for case in selected:
            print(case["name"], file=sys.stderr)
            runs = [run_case(ksm, case, args.timeout, args.verbose) for _ in range(args.repeat)]
            first = normalized_entry(runs[0])
            if any(normalized_entry(r) != first for r in runs[1:]):
                unstable.append(case["name"])
                print(f"  UNSTABLE over {args.repeat} runs", file=sys.stderr)
            strip_tracebacks(runs[0])
            entries.append(runs[0])
    elapsed = time.monotonic() - started

    versions = kernel_versions(args.python)
    versions["jupyter_client"] = jupyter_client.__version__
    document = {
        "format": FORMAT,
        "generator": "tests/ipython/generate_expectations.py",
        "kernel": {"argv": argv, "kernelspec": spec_source, **versions},
        "cases": entries,
    }
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    print(f"{len(entries)} cases in {elapsed:.1f} s", file=sys.stderr)
    if unstable:
        print("unstable cases: " + ", ".join(unstable), file=sys.stderr)
    if args.only:
        sys.stdout.write(text)
    else:
        with open(args.output + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(args.output + ".tmp", args.output)
        print("wrote " + os.path.relpath(args.output), file=sys.stderr)
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main())
