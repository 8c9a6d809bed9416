"""The IPython behaviour table: cells whose outputs a real Jupyter kernel
(ipykernel) recorded in expected.json, and that tests/test_ipython_table.c
runs on every backend.

Each case is a dict:

  name       unique, [a-z0-9_]; the C test names its tests after it
  code       the cell source, run as one stateless cell (a fresh kernel here,
             a fresh namespace on the backends)
  setup      optional list of cells run before CODE in the same kernel (on
             the backends: CODE and they run in one session); they may
             fail, and only CODE's outputs are compared
  normalize  optional list of rules applied to expected and actual alike
             before comparing (README.md describes them):
               "timing"       durations such as "1.2 µs" or "3 ns" -> "<time>"
               "digits"       every run of digits -> "<n>"
               "strip_ansi"   ANSI escape sequences removed
               "cell_filename"  "(FILE, line N)" -> "(<cell>, line N)": the
                              kernel names a cell's code after a hash of it
               "cell_path"    a cell's file name, the kernel's
                              /tmp/ipykernel_PID/HASH.py or cellexec's
                              <cell-HASH>, -> "<cell>"
               "compare_tracebacks"  the tracebacks of error outputs are
                              compared too, colour codes included
               "streams_by_name"  only the text of each stream (all its
                              writes joined) and the order of the other
                              outputs count, not how streams interleave
             Always applied: error tracebacks are not compared (ename and
             evalue are) unless "compare_tracebacks" says so, and memory
             addresses 0x... become 0x<addr>.
  files      optional list of file names (relative to the cell's working
             directory) whose contents after the cell are compared too
  note       optional: what to look for in the kernel's answer

Every cell runs in a new, empty working directory.  No case talks to the
network, and none mixes output written to file descriptors with print() in
a way whose order a real kernel does not fix (see README.md).
"""

# A 1x1 RGB PNG (one red pixel), built from bytes in the cell: signature,
# IHDR, IDAT (zlib data given literally, so no zlib version matters), IEND.
_PNG = """\
import struct, zlib
from IPython.display import Image, display

def chunk(kind, data):
    return (struct.pack('>I', len(data)) + kind + data
            + struct.pack('>I', zlib.crc32(kind + data)))

png = (b'\\x89PNG\\r\\n\\x1a\\n'
       + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0))
       + chunk(b'IDAT', bytes.fromhex('789c63f8cfc0000003010100'))
       + chunk(b'IEND', b''))
"""

CASES = [
    # ---- IPython.display objects ----------------------------------------
    {
        "name": "display_markdown",
        "code": "from IPython.display import Markdown, display\n"
                "display(Markdown('# Title\\n\\nSome *emphasis* and `code`.'))",
        "note": "text/markdown plus a text/plain repr naming the class",
    },
    {
        "name": "display_html",
        "code": "from IPython.display import HTML, display\n"
                "display(HTML('<b>bold</b> <i>and italic</i>'))",
    },
    {
        "name": "display_image_png",
        "code": _PNG + "display(Image(data=png))",
        "note": "image/png as base64 without newlines; metadata {}",
    },
    {
        "name": "display_image_png_width",
        "code": _PNG + "display(Image(data=png, width=32, height=16))",
        "note": "the size goes to metadata['image/png'], not into the data",
    },
    {
        "name": "display_json",
        "code": "from IPython.display import JSON, display\n"
                "display(JSON({'a': [1, 2.5, 'three'], 'b': None, 'c': {'d': True}}))",
        "note": "application/json is a JSON value, not text; metadata has expanded/root",
    },
    {
        "name": "display_math",
        "code": "from IPython.display import Math, display\n"
                "display(Math(r'\\int_0^1 x\\,dx = \\frac{1}{2}'))",
        "note": "Math wraps the formula in $\\displaystyle ...$",
    },
    {
        "name": "display_latex",
        "code": "from IPython.display import Latex, display\n"
                "display(Latex(r'$\\alpha + \\beta = \\gamma$'))",
    },
    {
        "name": "display_svg",
        "code": "from IPython.display import SVG, display\n"
                "display(SVG('<?xml version=\"1.0\"?>\\n<!-- a comment -->\\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">"
                "<rect width=\"10\" height=\"10\" fill=\"red\"/></svg>'))",
        "note": "SVG keeps only the <svg> element (prolog and comment dropped), re-serialised",
    },
    {
        "name": "display_javascript",
        "code": "from IPython.display import Javascript, display\n"
                "display(Javascript('console.log(\"hi\");'))",
    },
    {
        "name": "display_pretty",
        "code": "from IPython.display import Pretty, display\n"
                "display(Pretty('pretty\\n  text'))",
        "note": "text/plain only",
    },
    {
        "name": "display_several_objects",
        "code": "display(1, 'two', [3])",
        "note": "one display_data per object; display is a builtin in the kernel",
    },
    {
        "name": "display_raw_bundle",
        "code": "display({'text/plain': 'raw text', 'text/html': '<p>raw</p>'}, raw=True)\n"
                "display({'text/plain': 'with metadata'}, metadata={'isolated': True}, raw=True)",
    },
    {
        "name": "display_include_exclude",
        "code": "from IPython.display import HTML\n"
                "display(HTML('<i>only html</i>'), include=['text/html'])\n"
                "display(HTML('<i>no html</i>'), exclude=['text/html'])",
    },
    {
        "name": "display_repr_html",
        "code": "class WithHTML:\n"
                "    def _repr_html_(self):\n"
                "        return '<em>html repr</em>'\n"
                "\n"
                "display(WithHTML())",
        "note": "text/plain is the default repr with a memory address",
    },
    {
        "name": "display_repr_mimebundle",
        "code": "class Bundle:\n"
                "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
                "        return ({'text/plain': 'bundle text',\n"
                "                 'application/vnd.cellexec.test+json': {'k': [1, 2]}},\n"
                "                {'application/vnd.cellexec.test+json': {'expanded': True}})\n"
                "    def _repr_html_(self):\n"
                "        return '<b>also html</b>'\n"
                "\n"
                "display(Bundle())",
        "note": "the other _repr_*_ methods still fill the MIME types the bundle lacks",
    },
    {
        "name": "display_repr_mimebundle_bytes",
        "code": "class Picture:\n"
                "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
                "        return {'image/png': b'\\x89PNG\\r\\n', 'text/plain': 'picture'}\n"
                "display(Picture())",
        "note": "binary data from _repr_mimebundle_ travels as base64",
    },
    {
        "name": "display_repr_raises",
        "code": "class Broken:\n"
                "    def _repr_html_(self):\n"
                "        raise RuntimeError('no html today')\n"
                "\n"
                "display(Broken())\n"
                "print('still running')",
        "normalize": ["compare_tracebacks"],
        "note": "the formatter's exception becomes an error output, yet the cell goes on and "
                "succeeds; the object is shown as text/plain",
    },
    {
        "name": "value_repr_raises",
        "code": "class Unprintable:\n"
                "    def __repr__(self):\n"
                "        raise ValueError('no repr today')\n"
                "\n"
                "print('before')\n"
                "Unprintable()",
        "note": "the cell's value cannot be shown: the traceback is an error output, there is "
                "no execute_result, and the cell succeeds (the traceback is not compared: "
                "Python 3.11 marks the failing call of one of IPython's frames in a kernel "
                "and not in cellexec's embedded shell)",
    },
    {
        "name": "value_repr_html_raises",
        "code": "class Broken:\n"
                "    def _repr_html_(self):\n"
                "        raise RuntimeError('no html today')\n"
                "\n"
                "Broken()",
        "normalize": ["compare_tracebacks"],
        "note": "the error output, then the execute_result of what the other formatters made",
    },
    {
        "name": "value_repr_mimebundle_raises",
        "code": "class Broken:\n"
                "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
                "        raise RuntimeError('no bundle today')\n"
                "    def _repr_html_(self):\n"
                "        return '<b>html still</b>'\n"
                "\n"
                "Broken()",
        "normalize": ["compare_tracebacks"],
        "note": "a _repr_mimebundle_ that raises leaves the per-type formatters to make the "
                "bundle",
    },
    {
        "name": "rich_last_expression",
        "code": "from IPython.display import HTML\n"
                "HTML('<b>value</b>')",
        "note": "an execute_result, not display_data",
    },
    # ---- display ids ----------------------------------------------------------
    {
        "name": "update_display_by_id",
        "code": "from IPython.display import update_display\n"
                "display('first', display_id='d1')\n"
                "print('between')\n"
                "update_display('second', display_id='d1')",
        "note": "one display_data showing 'second'; the display id itself is transient, not stored",
    },
    {
        "name": "update_display_all_with_id",
        "code": "from IPython.display import update_display\n"
                "display('a', display_id='twice')\n"
                "display('b', display_id='twice')\n"
                "display('other', display_id='other')\n"
                "update_display({'text/plain': 'updated', 'text/html': '<p>updated</p>'},\n"
                "               display_id='twice', raw=True)",
        "note": "every output with the id is updated, the others are not",
    },
    {
        "name": "update_display_unknown_id",
        "code": "from IPython.display import update_display\n"
                "display('kept', display_id='known')\n"
                "update_display('nowhere', display_id='unknown')",
        "note": "an update of an id never displayed changes nothing",
    },
    {
        "name": "display_handle_update",
        "code": "handle = display('before', display_id=True)\n"
                "handle.update('after')\n"
                "print('done')",
        "note": "display_id=True returns a DisplayHandle with a random id",
    },
    {
        "name": "display_handle_class",
        "code": "from IPython.display import DisplayHandle\n"
                "h = DisplayHandle()\n"
                "h.display('one')\n"
                "h.update({'text/plain': 'two'}, raw=True)",
    },
    # ---- clear_output -------------------------------------------------------------
    {
        "name": "clear_output_after_prints_and_displays",
        "code": "from IPython.display import clear_output\n"
                "print('gone')\n"
                "display('gone too')\n"
                "print('to stderr', file=__import__('sys').stderr)\n"
                "clear_output()\n"
                "print('stays')\n"
                "display('stays too')",
    },
    {
        "name": "clear_output_wait_then_print",
        "code": "from IPython.display import clear_output\n"
                "print('old')\n"
                "display('old display')\n"
                "clear_output(wait=True)\n"
                "print('new')",
        "note": "the wait clears just before the next output",
    },
    {
        "name": "clear_output_wait_at_end",
        "code": "from IPython.display import clear_output\n"
                "print('kept')\n"
                "clear_output(wait=True)",
        "note": "with no output after it, a waiting clear never happens",
    },
    {
        "name": "clear_output_wait_then_update",
        "code": "from IPython.display import clear_output, update_display\n"
                "display('shown', display_id='w')\n"
                "clear_output(wait=True)\n"
                "update_display('updated before the clear', display_id='w')\n"
                "print('after')",
        "note": "an update is not an output: it lands before the waiting clear, which then removes it",
    },
    {
        "name": "clear_output_then_update_cleared_id",
        "code": "from IPython.display import clear_output, update_display\n"
                "display('cleared', display_id='c')\n"
                "clear_output()\n"
                "update_display('nothing to update', display_id='c')\n"
                "print('end')",
        "note": "an update of a cleared display changes nothing and does not bring it back",
    },
    # ---- the value of the last expression -----------------------------------------
    {
        "name": "value_int",
        "code": "x = 20\nx + 22",
    },
    {
        "name": "value_list",
        "code": "[1, 'two', 3.0, None]",
    },
    {
        "name": "value_long_list",
        "code": "list(range(40))",
        "note": "IPython's pretty printer breaks a long list into one item per line",
    },
    {
        "name": "value_string",
        "code": "'hello'",
        "note": "the repr, with quotes",
    },
    {
        "name": "value_multiline_string",
        "code": "'line one\\nline two'",
    },
    {
        "name": "value_dict",
        "code": "{'zeta': 1, 'alpha': [1, 2], 'mid': {'x': None}}",
        "note": "insertion order kept, not sorted",
    },
    {
        "name": "value_only_last_expression",
        "code": "1\n2\n3",
    },
    {
        "name": "value_none",
        "code": "None",
    },
    {
        "name": "value_semicolon",
        "code": "1 + 1;",
    },
    {
        "name": "value_after_print",
        "code": "print('printed')\n'value'",
    },
    # ---- streams -----------------------------------------------------------------------
    {
        "name": "print_stdout_stderr_interleaved",
        "code": "import sys\n"
                "print('out 1')\n"
                "print('err 1', file=sys.stderr)\n"
                "print('out 2')\n"
                "sys.stderr.write('err 2\\n')\n"
                "sys.stdout.write('out 3\\n')",
        "normalize": ["streams_by_name"],
        "note": "ipykernel buffers each stream apart and flushes stdout first: "
                "one stdout and one stderr output, not five",
    },
    {
        "name": "print_merged_stream",
        "code": "for i in range(3):\n    print('line', i)\nprint('no newline', end='')",
        "note": "consecutive writes merge into one stream output",
    },
    {
        "name": "print_control_characters",
        "code": "print('tab\\there|cr\\rafter|esc\\x1b[31mred\\x1b[0m|bell\\x07|bs\\x08|ff\\x0c|end')",
        "note": "control characters kept as they are (no \\r collapsing)",
    },
    {
        "name": "print_every_control_character",
        "code": "import sys\nsys.stdout.write(''.join(map(chr, [*range(32), 127])))\n"
                "print(file=sys.stderr, end='\\x1f|\\x00|\\x7f')",
        "note": "0x00-0x1f and 0x7f on both streams, as they are",
    },
    {
        "name": "print_nul",
        "code": "print('a\\x00b')",
    },
    {
        "name": "print_non_ascii",
        "code": "print('héllo wörld — ✓ 日本語 🎉')\n'naïve ✓'",
    },
    # ---- magics and shell -------------------------------------------------------------------
    {
        "name": "magic_time",
        "code": "%time 1+1",
        "normalize": ["timing"],
        "note": "the timing lines go to stdout before the value",
    },
    {
        "name": "magic_writefile",
        "code": "%%writefile written.txt\nfirst line\nsecond line\n",
        "files": ["written.txt"],
        "note": "prints 'Writing written.txt' ('Overwriting' when the file existed)",
    },
    {
        "name": "magic_writefile_read_back",
        "code": "get_ipython().run_cell_magic('writefile', 'back.txt', 'payload\\n')\n"
                "print(open('back.txt').read(), end='')",
        "files": ["back.txt"],
    },
    {
        "name": "shell_echo",
        "code": "!echo hi",
    },
    {
        "name": "shell_ls",
        "code": "open('listed.txt', 'w').close()\n!ls",
        "note": "the cell's working directory, through a pseudo-terminal",
    },
    {
        "name": "shell_capture",
        "code": "out = !echo a; echo b\nout",
        "note": "an SList; on one line, '; out' would go to the shell",
    },
    {
        "name": "shell_stderr_and_status",
        "code": "!echo to-err >&2; exit 3\nprint('continues')",
        "note": "a failing shell command is not an error of the cell",
    },
    {
        "name": "help_payload",
        "code": "len?",
        "normalize": ["strip_ansi"],
        "note": "no output at all: the help text is a 'page' payload of the execute_reply",
    },
    {
        "name": "magic_env_set",
        "code": "%env FOO=bar\nimport os\nos.environ['FOO']",
    },
    {
        "name": "magic_capture",
        "code": "%%capture captured\nprint('hidden')\ndisplay('hidden display')\n'hidden value'",
        "note": "nothing at all reaches the front end",
    },
    {
        "name": "magic_who",
        "code": "alpha = 1\nbeta = 'b'\ndef gamma(): pass\n%who",
    },
    {
        "name": "magic_unknown",
        "code": "%no_such_magic",
        "note": "no error output: the message is a stderr stream, yet the reply says "
                "status error, ename UsageError",
    },
    # ---- output written to file descriptors --------------------------------------------
    {
        "name": "fd_os_system",
        "code": "import os\nstatus = os.system('echo from-fd')",
        "note": "ipykernel captures fd 1 and 2 of the kernel process",
    },
    {
        "name": "fd_subprocess_run",
        "code": "import subprocess\nsubprocess.run(['echo', 'child']);",
    },
    {
        "name": "fd_os_write_stdout",
        "code": "import os\nos.write(1, b'raw\\n');",
    },
    {
        "name": "fd_os_write_stderr",
        "code": "import os\nos.write(2, b'raw err\\n');",
    },
    {
        "name": "fd_c_printf",
        "code": "import ctypes\n"
                "libc = ctypes.CDLL(None)\n"
                "libc.printf(b'from C %d\\n', 42)\n"
                "libc.fflush(None);",
    },
    # ---- async, input, errors ------------------------------------------------------------------
    {
        "name": "top_level_await",
        "code": "import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, result='slept')",
    },
    {
        "name": "input_not_supported",
        "code": "input('name? ')",
        "note": "StdinNotImplementedError; the prompt is not printed",
    },
    {
        "name": "getpass_not_supported",
        "code": "import getpass\ngetpass.getpass()",
        "note": "StdinNotImplementedError, as for input()",
    },
    {
        "name": "error_zero_division",
        "code": "1/0",
    },
    {
        "name": "error_after_output",
        "code": "print('before')\ndisplay('shown')\nraise ValueError('bad value')",
        "note": "what ran before the error stays, the error output is last",
    },
    {
        "name": "sys_exit",
        "code": "import sys\nprint('bye')\nsys.exit(3)",
        "normalize": ["drop_exit_hint"],
        "note": "IPython catches SystemExit: an error output and a warning on stderr",
    },
    {
        "name": "error_syntax",
        "code": "def broken(:\n    pass",
        "normalize": ["cell_filename"],
        "note": "a SyntaxError is an error output too; its message names the cell's file",
    },

    # ---- IPython's tracebacks, once IPython is loaded ---------------------------
    {
        "name": "traceback_of_ipython",
        "setup": ["import IPython", "def f():\n    return 1/0"],
        "code": "f()",
        "normalize": ["compare_tracebacks"],
        "note": "IPython's traceback, coloured, each cell called Cell In [N] with its lines",
    },
    {
        "name": "traceback_xmode_plain",
        "setup": ["%xmode Plain", "def f():\n    return 1/0"],
        "code": "f()",
        "normalize": ["compare_tracebacks"],
    },
    {
        "name": "traceback_xmode_minimal",
        "setup": ["%xmode Minimal"],
        "code": "1/0",
        "normalize": ["compare_tracebacks"],
    },
    {
        "name": "traceback_of_a_syntax_error",
        "setup": ["import IPython"],
        "code": "def broken(:\n    pass",
        "normalize": ["compare_tracebacks", "cell_filename"],
    },
    {
        "name": "traceback_of_sys_exit",
        "setup": ["import IPython"],
        "code": "import sys\nsys.exit(3)",
        "normalize": ["compare_tracebacks", "drop_exit_hint"],
    },
    {
        "name": "warning_shows_its_line",
        "code": "import warnings\nwarnings.warn('careful')",
        "normalize": ["cell_path"],
        "note": "a warning names the cell's file and shows its line",
    },

    # ---- Notebook tools: profilers, tracers, __main__, output history ---------
    {
        "name": "cprofile_run",
        "code": "import cProfile\ncProfile.run('1')",
        "normalize": ["digits"],
        "note": "the profile's table on stdout; with a profile function set, no hang",
    },
    {
        "name": "prun_after_a_cell",
        "setup": ["x = 1"],
        "code": "%prun -s name x",
        "normalize": ["digits"],
        "note": "%prun pages its table: the reply's payload (sorted by name: by time,"
                " rows that tie come in any order, as under valgrind)",
    },
    {
        "name": "settrace_left_set",
        "setup": ["import sys\nsys.settrace(lambda *args: None)"],
        "code": "print(sys.gettrace() is not None)\n1/0",
        "note": "the trace function stays set for later cells; an error still ends the cell",
    },
    {
        "name": "setprofile_left_set",
        "setup": ["import sys\nsys.setprofile(lambda *args: None)"],
        "code": "sum(range(10))",
    },
    {
        "name": "cprofile_run_cell_function",
        "setup": ["def f():\n    return 1"],
        "code": "import cProfile, pstats\ncProfile.run('f()', 'profile.out')\n"
                "pstats.Stats('profile.out').total_calls",
        "note": "cProfile.run runs in __main__'s namespace, where the cell defined f",
    },
    {
        "name": "pickle_cell_class",
        "setup": ["class C:\n    pass"],
        "code": "import pickle\ntype(pickle.loads(pickle.dumps(C()))).__name__",
        "note": "pickle finds the class as __main__.C",
    },
    {
        "name": "main_is_the_namespace",
        "code": "import __main__\nx = 5\n(__main__.x, __name__)",
    },
    {
        "name": "underscore_last_value",
        "setup": ["1 + 1"],
        "code": "_",
    },
    {
        "name": "output_history",
        "setup": ["1 + 1", "x = 3", "'text'"],
        "code": "print(Out)\nprint(In[1], '|', _i1, '|', _1, '|', __, '|', _ii)\n_3",
    },
    {
        "name": "history_magic",
        "setup": ["1 + 1", "x = 3"],
        "code": "%history -n 1-2",
    },
    {
        "name": "post_mortem_last_exception",
        "setup": ["1/0"],
        "code": "import sys\n(sys.last_type.__name__, str(sys.last_value), "
                "sys.last_traceback is not None)",
        "note": "the error that ended the last cell, for %tb, %debug and pdb.pm()",
    },
    {
        "name": "magic_pdb_on",
        "code": "%pdb on",
    },
    # ---- matplotlib and IPython's cell events ----------------------------------
    {
        "name": "matplotlib_figure_shown_at_cell_end",
        "code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])",
        "note": "the inline backend is the default: the figure is a display_data image/png "
                "after the cell's value",
    },
    {
        "name": "matplotlib_show_at_once",
        "code": "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.show()\nprint('after')",
        "note": "plt.show() displays the figure where it is called",
    },
    {
        "name": "matplotlib_inline_magic",
        "code": "%matplotlib inline\nimport matplotlib\nmatplotlib.get_backend()",
    },
    {
        "name": "matplotlib_inline_config",
        "setup": ["%config InlineBackend.figure_formats = ['jpeg']"],
        "code": "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 1))\n"
                "ax.bar([1, 2], [2, 1])",
        "note": "%config InlineBackend... applies to the figures of later cells",
    },
    {
        "name": "cell_events",
        "setup": ["ip = get_ipython()\n"
                  "def pre_execute():\n    print('pre_execute')\n"
                  "def pre_run_cell(info):\n    print('pre_run_cell', info.raw_cell)\n"
                  "def post_execute():\n    print('post_execute')\n"
                  "ends = []\n"
                  "def post_run_cell(result):\n"
                  "    print('post_run_cell', result.success)\n"
                  "    ends.append(1)\n"
                  "    if len(ends) == 2:  # the next cell's: leave the shell as it was\n"
                  "        for name, f in [('pre_execute', pre_execute), ('pre_run_cell', pre_run_cell),\n"
                  "                        ('post_execute', post_execute), ('post_run_cell', post_run_cell)]:\n"
                  "            ip.events.unregister(name, f)\n"
                  "for name, f in [('pre_execute', pre_execute), ('pre_run_cell', pre_run_cell),\n"
                  "                ('post_execute', post_execute), ('post_run_cell', post_run_cell)]:\n"
                  "    ip.events.register(name, f)"],
        "code": "print('running')",
        "note": "IPython's events fire around every cell once IPython is loaded (the "
                "callbacks remove themselves after it: on the local backend the shell is "
                "the process's, shared by the cases that follow)",
    },
    # ---- automagic and aliases ---------------------------------------------------
    {
        "name": "automagic_line_magic",
        "code": "cd /",
        "note": "a one-line cell whose first word is a magic nothing defines runs it",
    },
    {
        "name": "automagic_alias",
        "code": "ls -d /",
        "normalize": ["strip_ansi"],
        "note": "IPython's default aliases (ls -F --color, mkdir, ...) too, as !cmd runs",
    },
    {
        "name": "automagic_mkdir",
        "code": "mkdir made_here",
        "files": [],
        "note": "not Python at all, yet a kernel runs it",
    },
    {
        "name": "automagic_shadowed",
        "setup": ["pwd = 'mine'"],
        "code": "pwd",
        "note": "a name the user defined wins over the magic",
    },
    {
        "name": "automagic_one_line_only",
        "code": "x = 1\npwd",
        "note": "only a cell of one line is prefiltered: here pwd is a NameError",
    },
    # ---- the magics a kernel's shell adds ----------------------------------------
    {
        "name": "magic_lsmagic",
        "code": "%lsmagic",
        "note": "the magics a kernel lists, ipykernel's own (%autosave, %connect_info, ...) "
                "included",
    },
    {
        "name": "magic_autosave",
        "code": "%autosave 60",
        "note": "a Javascript display for the notebook front end, and a line",
    },
    {
        "name": "magic_less",
        "setup": ["with open('notes.txt', 'w') as f:\n    f.write('line one\\nline two\\n')"],
        "code": "%less notes.txt",
        "note": "the file is paged: the reply's payload",
    },
]
