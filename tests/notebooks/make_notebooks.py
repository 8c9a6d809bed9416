"""Write the test notebooks (committed; run again after editing this file).

Each notebook covers one area; expected outputs are never written here:
tests compare cellexec's run with nbclient's run of the same file.
"""
import base64
import os
import zlib
import struct

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_png():
    """A valid 1x1 PNG, built here so no binary file is committed."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    raw = b"\x00\xff\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


NOTEBOOKS = {
    "basics": [
        new_markdown_cell("# Basics\n\nText that must come out *byte for byte*: é ✓"),
        new_code_cell("x = 21\nprint('x is', x)"),
        new_code_cell("x * 2"),
        new_raw_cell("raw cell, kept as is"),
        new_code_cell("import sys\nprint('to stderr', file=sys.stderr)\nprint('to stdout')"),
        new_code_cell("   \n"),
        new_code_cell("'unicode: é ✓ 日本'"),
    ],
    "display": [
        new_code_cell("from IPython.display import display, HTML, Markdown, JSON\n"
                      "display(HTML('<b>bold</b>'))\ndisplay(Markdown('*md*'))"),
        new_code_cell("h = display(HTML('<i>one</i>'), display_id='d1')\nh.update(HTML('<i>two</i>'))"),
        new_code_cell("class R:\n    def _repr_html_(self):\n        return '<p>r</p>'\n    def __repr__(self):\n        return 'R()'\nR()"),
        new_code_cell("from IPython.display import Image\nimport base64\n"
                      f"Image(data=base64.b64decode('{base64.b64encode(tiny_png()).decode()}'))"),
        new_code_cell("print('before'); display(HTML('<hr>')); print('after')"),
        new_code_cell("later = display('shown first', display_id='d2')"),
        # A later cell's update changes the earlier cell's output, as nbclient does it.
        new_code_cell("later.update('updated by a later cell')\nprint('updated')"),
    ],
    "errors": [
        new_code_cell("a = 1"),
        new_code_cell("raise ValueError('expected failure')", metadata={"tags": ["raises-exception"]}),
        new_code_cell("print('still running', a)"),
        new_code_cell("1 / 0"),
        new_code_cell("print('not reached')"),
    ],
    "tags": [
        new_code_cell("ran = []"),
        new_code_cell("ran.append('skipped')", metadata={"tags": ["skip-execution"]}),
        new_code_cell("ran.append('ran')\nran"),
    ],
    "parameters": [
        new_markdown_cell("Parameters are injected after the tagged cell."),
        new_code_cell("n = 1\nname = 'default'\nflags = None", metadata={"tags": ["parameters"]}),
        new_code_cell("print(repr(n), repr(name), repr(flags))"),
    ],
    "magics": [
        new_code_cell("%%capture out\nprint('captured')"),
        new_code_cell("out.stdout"),
        new_code_cell("!echo from a shell"),
        new_code_cell("%time y = sum(range(10))"),
        new_code_cell("y"),
    ],
    # What a data-science chapter leans on: plots, timing and profiling,
    # pickling what a cell defined, the output history.
    "tools": [
        new_markdown_cell("Notebook tools, as in a kernel."),
        new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\n"
                      "plt.title('squares')"),
        new_code_cell("fig, ax = plt.subplots(figsize=(3, 2))\nax.bar([1, 2, 3], [3, 1, 2])\n"
                      "plt.show()\nprint('after the figure')"),
        new_code_cell("%timeit -n 10 -r 1 sum(range(100))"),  # one run: no warning on a noisy machine
        new_code_cell("def work():\n    return sum(i * i for i in range(1000))"),
        new_code_cell("%prun -q work()"),
        new_code_cell("import cProfile, pstats\ncProfile.run('work()', 'work.prof')\n"
                      "import os\ncalls = pstats.Stats('work.prof').total_calls\n"
                      "os.remove('work.prof')\ncalls > 1000"),
        new_code_cell("class Point:\n    def __init__(self, x):\n        self.x = x"),
        new_code_cell("import pickle\npickle.loads(pickle.dumps(Point(3))).x"),
        new_code_cell("_ * 10, Out[8], In[7].splitlines()[0]"),
    ],
}


def main():
    for name, cells in NOTEBOOKS.items():
        notebook = new_notebook(cells=cells, metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
        # Fixed ids keep the files stable from one generation to the next.
        for i, cell in enumerate(notebook.cells):
            cell["id"] = f"{name[:4]}{i:04d}"
        nbformat.validate(notebook)
        nbformat.write(notebook, os.path.join(HERE, name + ".ipynb"))


if __name__ == "__main__":
    main()
