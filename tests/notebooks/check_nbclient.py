"""cellexec notebook run against nbclient, the reference, on the same notebooks.

For each notebook in this directory: run it with nbclient (a real ipykernel)
and with `cellexec notebook run` on each backend given, check that what
cellexec writes validates against the nbformat v4 schema and is byte for byte
what nbformat writes, that its language_info is nbclient's, that markdown and
raw cells and the notebook's metadata come out as they went in, and that
every code cell has the same outputs and execution count as under nbclient
once both are normalised the same way (see normalise()).

Usage: check_nbclient.py CELLEXEC BACKEND...   (prints "test_nbclient: N passed, N failed")
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = os.path.dirname(os.path.abspath(__file__))
# The -p values the parameters notebook runs with: a JSON number, a string,
# a JSON list.
PARAMETERS = ["n=5", "name=world", "flags=[1, true, null]"]

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
DURATION = re.compile(r"\d+(\.\d+)?(e[+-]?\d+)?\s*(ns|µs|us|ms|s)\b")


def normalise_text(text):
    """Memory addresses and timings differ from run to run."""
    return DURATION.sub("<t>", ADDRESS.sub("0x<addr>", text))


def normalise(outputs):
    """Outputs as comparable values.

    Streams of one name that follow each other are merged (where a kernel
    cuts a stream into messages is timing), and a run of stream outputs is
    ordered by name (ipykernel flushes stdout before stderr whatever order
    the cell wrote them in; cellexec keeps the order); an error is its ename and
    evalue (IPython's kernel formats the traceback in colour with its own
    frames; cellexec's traceback is Python's); texts lose addresses and
    timings.
    """
    result = []
    for output in outputs:
        kind = output["output_type"]
        if kind == "stream":
            text = normalise_text(output["text"] if isinstance(output["text"], str)
                                  else "".join(output["text"]))
            run_start = len(result)
            while run_start > 0 and result[run_start - 1][0] == "stream":
                run_start -= 1
            same = [i for i in range(run_start, len(result)) if result[i][1] == output["name"]]
            if same:
                result[same[0]] = ("stream", output["name"], result[same[0]][2] + text)
            else:
                result.append(("stream", output["name"], text))
                result[run_start:] = sorted(result[run_start:], key=lambda item: item[1])
        elif kind == "error":
            result.append(("error", output["ename"], normalise_text(output["evalue"])))
        else:
            data = {mime: normalise_text(value) if isinstance(value, str) else value
                    for mime, value in output["data"].items()}
            result.append((kind, json.dumps(data, sort_keys=True),
                           json.dumps(output.get("metadata", {}), sort_keys=True),
                           output.get("execution_count")))
    return result


def run_nbclient(notebook):
    executed = copy.deepcopy(notebook)
    client = NotebookClient(executed, kernel_name="python3", timeout=60,
                            resources={"metadata": {"path": HERE}})
    try:
        client.execute()
    except CellExecutionError:
        pass  # stopped at the failing cell, as cellexec stops
    return executed


def run_cellexec(cellexec, backend, path, parameters):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out.ipynb")
        command = [cellexec, "notebook", "run", "-b", backend, "-q", "--cwd", HERE, path,
                   "-o", out]
        for parameter in parameters:
            command += ["-p", parameter]
        finished = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, check=False)
        if finished.returncode not in (0, 1):
            raise RuntimeError(f"exit {finished.returncode}: {finished.stderr.strip()}")
        with open(out, encoding="utf-8") as stream:
            text = stream.read()
    return nbformat.reads(text, as_version=4), finished.returncode, text


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok - {name}")
        else:
            self.failed += 1
            print(f"FAIL - {name}: {detail}")


def compare(checker, label, original, ours, reference, text):
    try:
        nbformat.validate(ours)
        checker.check(f"{label}: validates against nbformat v4", True)
    except nbformat.ValidationError as error:
        checker.check(f"{label}: validates against nbformat v4", False, str(error).splitlines()[0])
    # nbformat.write(): nbformat.writes() and a final newline.
    checker.check(f"{label}: written byte for byte as nbformat writes it",
                  text == nbformat.writes(nbformat.reads(text, as_version=4)) + "\n")
    kept = {key: value for key, value in ours.metadata.items() if key != "language_info"}
    checker.check(f"{label}: notebook metadata kept", kept == original.metadata,
                  f"{kept} != {original.metadata}")
    checker.check(f"{label}: language_info as nbclient writes it",
                  ours.metadata.get("language_info") == reference.metadata.get("language_info"),
                  f"{ours.metadata.get('language_info')} != {reference.metadata.get('language_info')}")
    checker.check(f"{label}: same number of cells", len(ours.cells) == len(reference.cells),
                  f"{len(ours.cells)} != {len(reference.cells)}")
    for index, (mine, theirs) in enumerate(zip(ours.cells, reference.cells)):
        where = f"{label}: cell {index + 1}"
        if mine.cell_type != "code":
            checker.check(f"{where}: {mine.cell_type} cell kept", mine == original.cells[index],
                          f"{mine} != {original.cells[index]}")
            continue
        checker.check(f"{where}: outputs", normalise(mine.outputs) == normalise(theirs.outputs),
                      f"\n  cellexec: {normalise(mine.outputs)}\n  nbclient: {normalise(theirs.outputs)}")
        checker.check(f"{where}: execution_count",
                      mine.execution_count == theirs.execution_count,
                      f"{mine.execution_count} != {theirs.execution_count}")
        ran = theirs.execution_count is not None
        timing = mine.metadata.get("execution", {})
        checker.check(f"{where}: timings as nbclient writes them",
                      not ran or set(timing) == {"iopub.status.busy", "iopub.execute_input",
                                                 "shell.execute_reply", "iopub.status.idle"},
                      f"{timing}")


def main():
    cellexec, backends = sys.argv[1], sys.argv[2:]
    checker = Checker()
    # Every notebook make_notebooks.py writes is here (a tarball that lost
    # one would otherwise just check fewer).
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, HERE)
    import make_notebooks

    for name in make_notebooks.NOTEBOOKS:
        checker.check(f"{name}.ipynb is here", os.path.exists(os.path.join(HERE, name + ".ipynb")))
    for file in sorted(os.listdir(HERE)):
        if not file.endswith(".ipynb"):
            continue
        path = os.path.join(HERE, file)
        original = nbformat.read(path, as_version=4)
        parameters = PARAMETERS if file == "parameters.ipynb" else []
        reference = None
        for backend in backends:
            label = f"{file} on {backend}"
            try:
                ours, status, text = run_cellexec(cellexec, backend, path, parameters)
            except RuntimeError as error:
                checker.check(f"{label}: runs", False, str(error))
                continue
            checker.check(f"{label}: exit status says whether a cell stopped the run",
                          status == (1 if file == "errors.ipynb" else 0), f"exit {status}")
            if reference is None:
                # nbclient runs the notebook cellexec ran, parameters injected.
                injected = copy.deepcopy(ours)
                for cell in injected.cells:
                    if cell.cell_type == "code":
                        cell.outputs, cell.execution_count = [], None
                        cell.metadata.pop("execution", None)
                reference = run_nbclient(injected)
            compare(checker, label, original if not parameters else
                    _with_injected(original, ours), ours, reference, text)
    print(f"test_nbclient: {checker.passed} passed, {checker.failed} failed")
    return 1 if checker.failed else 0


def _with_injected(original, ours):
    """ORIGINAL with the injected-parameters cell cellexec added, for the
    comparison of the cells it keeps."""
    expected = copy.deepcopy(original)
    for index, cell in enumerate(ours.cells):
        if "injected-parameters" in cell.metadata.get("tags", []):
            expected.cells.insert(index, copy.deepcopy(cell))
    return expected


if __name__ == "__main__":
    sys.exit(main())
