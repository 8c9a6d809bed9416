"""The Python half of cellexec's embedded runtime.

Compiled into libcxpyembed as a string and loaded once, as module
_cellexec_helper, when the interpreter starts.  pyembed/cell.c drives one
cell as:

    token = enter_context(cwd, env)      # only with a cwd or env
    value = execute(source, namespace, runner, history, count)  # (data, metadata) or None
    finish_cell(source, exc)              # once IPython is loaded: its events
    ... on an exception: describe_error(exc, timeout) ...
    payload = take_payload()              # what `obj?` paged, if anything
    leave_context(token)

Only execute() runs while interrupts and timeouts may be raised (see
running.c), so nothing that must be undone lives in it.
"""

import ast
import binascii
import builtins
import collections
import functools
import os
import sys
import time
import _thread

import _cellexec_errors as _errors
import _cellexec_ipython as _ipython
import _cellexec_native as _native
import _cellexec_requests as _requests

_COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect

# How long a sleep or an event loop waits at most before it lets a pending
# interrupt or timeout be raised.
_WAKEUP_SECONDS = 0.05

# ---- Compiling -------------------------------------------------------------

# Compiling costs more than running a small cell, and programs tend to run
# the same cells again: keep the code objects of recent sources, keyed by
# the exact text.  Code objects are immutable, so sharing them between
# namespaces and threads is safe.  Oldest entries go first.
_CACHE_MAX_ENTRIES = 256
_CACHE_MAX_SOURCE_CHARS = 64 * 1024
_compiled = collections.OrderedDict()  # popitem(last=False) is O(1), unlike a dict's
_compiled_lock = _thread.allocate_lock()



def _ends_with_semicolon(source):
    """True when the last token of SOURCE (comments aside) is ';'."""
    if ";" not in source:
        return False
    import io
    import tokenize

    skipped = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER,
               tokenize.INDENT, tokenize.DEDENT}
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in skipped:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.type == tokenize.OP and last.string == ";"


# Lines that only IPython understands: magics, shell escapes, help.
_IPYTHON_SYNTAX = None


def _ipython_syntax(source):
    """A short description of the IPython syntax in SOURCE, or None."""
    global _IPYTHON_SYNTAX
    if _IPYTHON_SYNTAX is None:
        import re

        _IPYTHON_SYNTAX = (
            (re.compile(r"^\s*%%", re.M), "a %%cell magic"),
            (re.compile(r"^\s*(?:[\w.,\s]+=\s*)?%", re.M), "a %line magic"),
            (re.compile(r"^\s*(?:[\w.,\s]+=\s*)?!", re.M), "a !shell command"),
            (re.compile(r"^\s*\?|\?\s*$", re.M), "an obj? help request"),
        )
    for pattern, what in _IPYTHON_SYNTAX:
        if pattern.search(source):
            return what
    return None


def _parse(source, filename):
    """(syntax tree, Python text) of SOURCE; a cell in IPython's syntax is
    transformed by IPython first, as a kernel does.  Plain Python never pays
    for that."""
    try:
        return compile(source, filename, "exec", ast.PyCF_ONLY_AST | _COMPILE_FLAGS,
                       dont_inherit=True), source
    except SyntaxError as error:
        what = _ipython_syntax(source)
        if what is None:
            raise
        try:
            transformed = _ipython.transform(source)
        except _ipython.IPythonUnavailable as why:
            error.msg = f"{error.msg} (the cell uses {what}, which needs IPython: {why})"
            raise error from None
        if transformed == source:
            raise
        return compile(transformed, filename, "exec", ast.PyCF_ONLY_AST | _COMPILE_FLAGS,
                       dont_inherit=True), transformed


def _compile_by_lines(source, filename):
    """_compile_uncached's answer for the common cell whose last line is an
    expression of its own, compiled straight from the text (a syntax tree
    costs as much again as compiling); None when that is not sure.

    When the lines before the last compile alone, they end in a complete
    statement, so the last line is one too."""
    head, newline, tail = source.rstrip().rpartition("\n")
    if (not tail or tail[0] in " \t#" or tail.endswith(";") or "__future__" in source):
        return None
    try:
        # Blank lines in front keep the last line's number in tracebacks.
        last_expression = compile("\n" * (head.count("\n") + len(newline)) + tail,
                                  filename, "eval", _COMPILE_FLAGS, dont_inherit=True)
        statements = (compile(head, filename, "exec", _COMPILE_FLAGS, dont_inherit=True)
                      if head.strip() else None)
    except SyntaxError:
        return None
    cell = _remember_lines(source, filename, statements, last_expression)
    return statements, last_expression, source, _automagic_word(source), cell


def _compile_uncached(source):
    """(statements, last_expression, python, word, cell): code objects,
    either may be None; the Python text they are compiled from (SOURCE, or
    what IPython made of it: what a kernel's In holds); the word that makes
    the cell a magic when nothing defines it (_automagic_word), or None;
    and the cell's source as _errors keeps it (its number for IPython's
    tracebacks), or None when it has no code.

    The last statement, if it is an expression, is compiled on its own in
    'eval' mode so its value can be displayed -- unless the cell ends
    with ';', which asks for no display."""
    filename = _errors.cell_filename(source)
    compiled = _compile_by_lines(source, filename)
    if compiled is not None:
        return compiled
    tree, python = _parse(source, filename)
    last_expression = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(source):
        last_expression = ast.Expression(tree.body.pop().value)
    statements = None
    if tree.body:
        statements = compile(tree, filename, "exec", _COMPILE_FLAGS, dont_inherit=True)
    if last_expression is not None:
        last_expression = compile(last_expression, filename, "eval", _COMPILE_FLAGS,
                                  dont_inherit=True)
    cell = _remember_lines(source, filename, statements, last_expression)
    return statements, last_expression, python, _automagic_word(source), cell


def _remember_lines(source, filename, statements, last_expression):
    if statements is None:
        return None if last_expression is None else _errors.remember_cell(
            source, filename, (last_expression,))
    return _errors.remember_cell(source, filename, (statements,) if last_expression is None
                                 else (statements, last_expression))


_AUTOMAGIC_LINE = None


def _automagic_word(source):
    """The first word of SOURCE when IPython's automagic could make it a
    magic or an alias (`pwd`, `cd /tmp`, `ls -d /tmp`): a cell of one line,
    its first word a name that is not a keyword, not followed by `=`, `,`
    or `.` (IPython's AssignmentChecker; a dotted name is never a magic).
    Whether it is one, and not shadowed, is asked when the cell runs."""
    global _AUTOMAGIC_LINE
    line = source.strip()
    if not line or "\n" in line or not (line[0].isalpha() or line[0] == "_"):
        return None
    if _AUTOMAGIC_LINE is None:
        import re

        _AUTOMAGIC_LINE = re.compile(r"([A-Za-z_]\w*)\s*(.?)")
    match = _AUTOMAGIC_LINE.match(line)
    if match is None or match.group(2) in ("=", ",", "."):
        return None
    import keyword

    word = match.group(1)
    return None if keyword.iskeyword(word) else word


def _automagic(source, namespace, word):
    """(statements, last_expression, python, cell) of SOURCE as IPython's
    automagic makes it (transform_cell's prefilter of a one-line cell), or
    None: WORD defined, not a magic, or IPython not installed."""
    if word is None:
        return None
    for defined in (namespace, builtins.__dict__):
        if word in defined and not _ipython.is_autocall(defined[word]):
            return None
    try:
        python = _ipython.automagic(source, namespace)
    except _ipython.IPythonUnavailable:
        return None
    if python is None:
        return None
    statements, last_expression, _, _, cell = _compile_uncached(python)
    return statements, last_expression, python, cell


def _compile(source):
    entry = _compiled.get(source)
    if entry is None:
        entry = _compile_uncached(source)
        if len(source) <= _CACHE_MAX_SOURCE_CHARS:
            with _compiled_lock:
                while len(_compiled) >= _CACHE_MAX_ENTRIES:
                    _compiled.popitem(last=False)
                _compiled[source] = entry
    return entry


# ---- Running ---------------------------------------------------------------

def _keep_awake(loop, task):
    # A loop blocked in its selector cannot see an interrupt or a timeout.
    if not task.done():
        loop.call_later(_WAKEUP_SECONDS, _keep_awake, loop, task)


class AsyncRunner:
    """The event loop top-level await runs on: one per session, so tasks
    and futures outlive a cell; a throwaway one for a stateless cell."""

    def __init__(self):
        self._loop = None

    def run(self, coroutine):
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        loop = self._loop
        task = loop.create_task(coroutine)
        loop.call_later(_WAKEUP_SECONDS, _keep_awake, loop, task)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            # Interrupted: do not let the task resume in a later cell.
            if not task.done():
                task.cancel()
                try:
                    loop.run_until_complete(task)
                except BaseException:
                    pass
            raise

    def close(self):
        loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return
        import asyncio

        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class History:
    """The output history a kernel keeps for a session's cells (IPython's
    HistoryManager and DisplayHook): In and _ih (the cells' Python, one per
    execution count, from 1), Out and _oh ({count: value} of the cells that
    showed a value), _dh (working directories, for %cd), _iN and _N,
    _i/_ii/_iii and _/__/___.  A stateless cell, the first of a fresh
    kernel, gets the same from _first_cell_input/_first_cell_output."""

    __slots__ = ("parsed", "raw", "outputs", "dirs", "inputs3", "values3")

    def __init__(self):
        self.parsed = [""]
        self.raw = [""]
        self.outputs = {}
        self.dirs = [os.getcwd()]
        self.inputs3 = ("", "", "")  # what _i, _ii, _iii were set to last
        self.values3 = (_NO_VALUE,) * 3  # what _, __, ___ were set to last

    def store_input(self, namespace, count, raw, parsed):
        """Before cell COUNT runs (HistoryManager.store_inputs)."""
        raw = raw.rstrip("\n")
        self.parsed.append(parsed.rstrip("\n"))
        self.raw.append(raw)
        if "_ih" not in namespace:
            namespace.update(In=self.parsed, _ih=self.parsed, Out=self.outputs, _oh=self.outputs,
                             _dh=self.dirs)
        self.inputs3 = (self.raw[-2], self.inputs3[0], self.inputs3[1])
        namespace["_i"], namespace["_ii"], namespace["_iii"] = self.inputs3
        namespace[f"_i{count}"] = raw

    def store_output(self, namespace, count, value):
        """After cell COUNT showed VALUE (DisplayHook.update_user_ns)."""
        if value is self.outputs:
            return
        # _ and friends stay as the user set them, and where builtins has _.
        unders = "_" not in builtins.__dict__
        for name, mine in zip(("_", "__", "___"), self.values3):
            if name in namespace and namespace[name] is not mine:
                unders = False
        self.values3 = (value, self.values3[0], self.values3[1])
        if unders:
            namespace["_"], namespace["__"], namespace["___"] = self.values3
        namespace[f"_{count}"] = value
        self.outputs[count] = value


# The same for a stateless cell, without a History: the cost of every cell.
# (_i, _ii and _iii are "" in every new namespace, see runtime.c; _dh, which
# needs a getcwd(), comes with IPython, in enter_cell.)

_NO_VALUE = ""  # what _, __ and ___ are before a first value (IPython's DisplayHook)


def _first_cell_input(namespace, raw, parsed):
    namespace["In"] = namespace["_ih"] = ["", parsed.rstrip("\n")]
    namespace["Out"] = namespace["_oh"] = {}
    namespace["_i1"] = raw.rstrip("\n")


def _first_cell_output(namespace, value):
    if value is namespace["Out"]:
        return
    if "_" in namespace or "__" in namespace or "___" in namespace:
        unders = all(namespace.get(name, _NO_VALUE) is _NO_VALUE for name in ("_", "__", "___"))
    else:
        unders = True
    if unders and "_" not in builtins.__dict__:
        namespace["_"] = value
        namespace["__"] = namespace["___"] = _NO_VALUE
    namespace["_1"] = value
    namespace["_oh"][1] = value


def execute(source, namespace, runner, history, count, store=True):
    """Run SOURCE in NAMESPACE as cell number COUNT; (data, metadata) of its
    value, or None.

    RUNNER is the session's AsyncRunner, or None for a stateless cell;
    HISTORY the session's History, or None for a stateless cell (number 1).
    A session's cell that is not STOREd (a kernel's comm handler) stays out
    of HISTORY's inputs, and COUNT is the last stored cell's; its value is
    still stored as cell COUNT's, as IPython's DisplayHook does."""
    if history is None:
        store = True  # a stateless cell's namespace goes with it
    try:
        statements, last_expression, python, word, cell = _compile(source)
    except SyntaxError:
        magic = _automagic(source, namespace, _automagic_word(source))  # mkdir tmp
        if magic is None:
            # In and _iN keep it, as a kernel's do.
            if history is None:
                _first_cell_input(namespace, source, source)
            elif store:
                history.store_input(namespace, count, source, source)
            _ipython.number_syntax_error(_errors.cell_filename(source), count)
            raise
        statements, last_expression, python, cell = magic
    else:
        if word is not None and (word not in namespace  # pwd, ls -d /tmp
                                 or _ipython.is_autocall(namespace[word])):  # exit
            statements, last_expression, python, cell = (
                _automagic(source, namespace, word) or (statements, last_expression, python, cell))
    if cell is not None:
        cell.count = count  # "Cell In [count]" in IPython's tracebacks
    if history is None:
        _first_cell_input(namespace, source, python)
    elif store:
        history.store_input(namespace, count, source, python)
    _ipython.enter_cell(namespace, history, count)
    own_runner = None
    try:
        if statements is not None:
            pending = eval(statements, namespace)
            if statements.co_flags & _CO_COROUTINE:
                runner = runner or (own_runner := AsyncRunner())
                runner.run(pending)
        if last_expression is None:
            return None
        value = eval(last_expression, namespace)
        if last_expression.co_flags & _CO_COROUTINE:
            runner = runner or (own_runner := AsyncRunner())
            value = runner.run(value)
    finally:
        if own_runner is not None:
            own_runner.close()
    if value is None:
        return None
    bundle = format_bundle(value)
    if history is None:
        _first_cell_output(namespace, value)
    else:  # even when not STOREd: IPython's DisplayHook does not ask
        history.store_output(namespace, count, value)
    # Every formatter raised (a __repr__ that raises): no execute_result,
    # as ipykernel sends none for an empty bundle.
    return bundle if bundle[0] else None


def finish_cell(source, error):
    """After a cell, once IPython's shell exists (cell.c): its events."""
    _ipython.finish_cell(source, error)


def answer_request(msg_type, content_json, namespace, cells):
    """The reply content of a Jupyter request beside execute_request
    (requests.py), in a session's NAMESPACE with its CELLS (History); None
    for a type not answered here."""
    return _requests.answer(msg_type, content_json, namespace, cells)


def take_payload():
    """The execute_reply payload of the cell that just ran (what `len?`
    paged), or None."""
    return _ipython.take_payload()


# ---- Display ---------------------------------------------------------------

# Built-in types that have no _repr_*_ methods and cannot get any: their
# bundle is their repr, without eight failed attribute lookups.
_PLAIN_TYPES = frozenset({int, float, complex, bool, str, bytes, bytearray, list, tuple,
                          dict, set, frozenset, range, type(...), type(NotImplemented)})

# IPython's formatters, in IPython's order.
_REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
)


def _is_json_mime(mime):
    return mime == "application/json" or mime.endswith("+json")


def _is_text_mime(mime):
    return mime.startswith("text/") or mime == "image/svg+xml" or mime.endswith("+xml")


def _real_method(obj, name):
    """OBJ's display method NAME, as IPython finds it: not on classes, and
    not on objects whose __getattr__ answers any name."""
    if isinstance(obj, type):
        return None
    try:
        if getattr(obj, "_cellexec_canary_method_should_not_exist_", None) is not None:
            return None
        method = getattr(obj, name, None)
    except Exception:
        return None
    return method if callable(method) else None


def _encode(mime, data):
    """DATA as the bundle holds it: text, base64 for binary, JSON values as is."""
    if isinstance(data, str):
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        if _is_text_mime(mime):
            return bytes(data).decode("utf-8", "replace")
        # With the line break ipykernel's json_clean leaves at the end.
        return binascii.b2a_base64(data).decode("ascii")
    if _is_json_mime(mime):
        return data
    raise TypeError(f"display data for {mime} must be str or bytes, not {type(data).__name__}")


# Containers whose repr IPython's pretty printer keeps as it is: short, one
# line, of plain scalars.  (It sorts sets, wraps long lines and writes
# functions, classes and modules its own way.)
_PRETTY_AS_REPR = frozenset({list, tuple, dict})
_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None)})
_PRETTY_WIDTH = 79


def _needs_ipython_format(obj):
    """True when IPython would show OBJ otherwise than its repr(): anything
    but plain scalars and short one-line containers of them."""
    kind = type(obj)
    if kind in _SCALARS:
        return kind is str and len(obj) > _PRETTY_WIDTH and "\n" in obj
    if kind not in _PRETTY_AS_REPR:
        return True
    if len(obj) > _PRETTY_WIDTH // 3:  # its repr is longer than a line
        return True
    items = obj.items() if kind is dict else ((item,) for item in obj)
    for pair in items:
        for item in pair:
            if type(item) not in _SCALARS:
                return True
    return len(repr(obj)) > _PRETTY_WIDTH


def _show_formatter_error(exc):
    """EXC, raised by one of a value's formatters, shown as an error output
    while the cell goes on, as IPython's formatters show one."""
    import traceback

    lines = [_errors.utf8_safe(line) for line in traceback.format_exception(exc)]
    if not _native.show_error(type(exc).__name__,
                              _errors.utf8_safe(_errors.safe_str(exc)), lines):
        print("".join(lines), end="", file=sys.stderr)


def _formatted(method, *args, **kwargs):
    """METHOD(*ARGS, **KWARGS), a formatter's answer, or None when it raised
    (shown, as IPython shows it)."""
    try:
        return method(*args, **kwargs)
    except Exception as exc:
        _show_formatter_error(exc)
        return None


def _own_format(obj):
    """The MIME bundle of OBJ by the _repr_*_ protocol alone, for when
    IPython is not installed.  A formatter that raises is shown and left
    out, as with IPython: the others still make the bundle."""
    if type(obj) in _PLAIN_TYPES:
        return {"text/plain": repr(obj)}, {}
    bundle = {}
    metadata = {}
    method = _real_method(obj, "_repr_mimebundle_")
    if method is not None:
        data = _formatted(method, include=None, exclude=None)
        if isinstance(data, tuple):  # (data, metadata)
            data, metadata = data[0], dict(data[1] or {})
        if data:
            bundle.update(data)
    for mime, name in _REPR_METHODS:
        if mime in bundle:
            continue
        method = _real_method(obj, name)
        if method is None:
            continue
        data = _formatted(method)
        if isinstance(data, tuple):  # (data, metadata)
            data, metadata[mime] = data[0], data[1]
        if data is not None:
            bundle[mime] = data
    if "text/plain" not in bundle:
        text = _formatted(repr, obj)
        if text is not None:
            bundle["text/plain"] = text
    return bundle, metadata


def encode_bundle(bundle):
    """BUNDLE as results hold it: text, base64 for binary, JSON values as is."""
    return {mime: _encode(mime, data) for mime, data in bundle.items()}


def format_bundle(obj):
    """(data, metadata): the MIME bundle a Jupyter kernel would show for OBJ
    and its metadata.  Plain values are formatted here, fast; anything else
    by IPython's DisplayFormatter when IPython is installed."""
    if not _needs_ipython_format(obj):
        return {"text/plain": repr(obj)}, {}
    if _ipython.available():
        try:
            data, metadata = _ipython.format(obj)
            return encode_bundle(data), metadata
        except _ipython.IPythonUnavailable:
            pass
    data, metadata = _own_format(obj)
    return encode_bundle(data), metadata


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False, **kwargs):
    """IPython's display(), also where IPython is not installed: IPython's
    own when it is, else the same protocol (display ids, update, clear) by
    the _repr_*_ methods alone."""
    if _ipython.available():
        try:
            _ipython.shell()
        except _ipython.IPythonUnavailable:
            pass
        else:
            from IPython.display import display as ipython_display

            return ipython_display(*objs, include=include, exclude=exclude, metadata=metadata,
                                   transient=transient, display_id=display_id, raw=raw,
                                   clear=clear, update=update, **kwargs)
    if display_id is True:
        import uuid

        display_id = uuid.uuid4().hex
    if transient and "display_id" in transient:
        display_id = transient["display_id"]
    if clear:
        _native.clear_output(True)
    if not objs and display_id:
        objs, raw = ({},), True
    for obj in objs:
        if raw:
            bundle, meta = encode_bundle(obj), {}
        else:
            bundle, meta = format_bundle(obj)
        if include:
            bundle = {mime: data for mime, data in bundle.items() if mime in include}
        if exclude:
            bundle = {mime: data for mime, data in bundle.items() if mime not in exclude}
        if metadata:
            meta = {**meta, **metadata}
        if not _native.publish_display(bundle, meta, display_id,
                                       "update" if update else "display"):
            print(bundle.get("text/plain", repr(obj)))


# ---- Standard input ----------------------------------------------------------

def _stdin_not_implemented():
    """The exception ipykernel raises for input() without a front end:
    IPython's own where it is installed, so `except` clauses naming it
    work."""
    if _ipython.available():
        try:
            from IPython.core.error import StdinNotImplementedError as ipython_error

            return ipython_error
        except ImportError:
            pass
    return StdinNotImplementedError


class StdinNotImplementedError(NotImplementedError):
    """input() in a cell: nobody can answer (as in a kernel without a front
    end that allows stdin)."""


StdinNotImplementedError.__module__ = "cellexec"


def _input(prompt=""):
    line = _native.ask_input(str(prompt), False)
    if line is None:
        raise _stdin_not_implemented()(
            "raw_input was called, but this frontend does not support input requests.")
    return line


def _getpass(prompt="Password: ", stream=None):
    line = _native.ask_input(str(prompt), True)
    if line is None:
        raise _stdin_not_implemented()(
            "getpass was called, but this frontend does not support input requests.")
    return line


class _NoStdin:
    """sys.stdin of cells: nothing to read, and never the host's own input
    (sys.__stdin__ is still there for code that means it)."""

    encoding = "utf-8"
    errors = "strict"
    closed = False
    name = "<stdin>"

    def _refuse(self, *args, **kwargs):
        raise _stdin_not_implemented()(
            "sys.stdin was read, but this frontend does not support input requests.")

    read = readline = readlines = __next__ = _refuse

    def __iter__(self):
        return self

    def fileno(self):
        import io

        raise io.UnsupportedOperation("a cell's stdin has no file descriptor")

    def isatty(self):
        return False

    def readable(self):
        return True

    def close(self):
        pass


# ---- Errors ----------------------------------------------------------------

def _framework_prefixes():
    prefixes = [__file__]
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and getattr(asyncio, "__file__", None):
        prefixes.append(os.path.dirname(asyncio.__file__) + os.sep)
    return tuple(prefixes)


def show_usage_error(exc):
    """True when EXC, which ended a cell, is shown on stderr, not as an error
    output (an IPython UsageError); the cell's output is still captured."""
    return _ipython.show_usage_error(exc)


def describe_error(exc, timeout=None):
    """(type name, message, traceback, lines) of the exception that ended a
    cell: LINES are IPython's traceback for the error output, once IPython
    is loaded (else None).

    TIMEOUT: the seconds of the deadline, when the watchdog raised EXC."""
    if timeout is not None and isinstance(exc, TimeoutError) and not exc.args:
        exc.args = (f"cell exceeded its {timeout:g} s timeout",)
    described = _errors.describe_exception(exc, (__file__, _ipython.__file__),
                                           _framework_prefixes())
    # After describe_exception, which took cellexec's frames off: for
    # post-mortem tools (%tb, %debug, pdb.pm()), as IPython keeps them.
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    return (*described, _ipython.formatted_traceback(exc))


# ---- cwd and env of one call -----------------------------------------------

def enter_context(cwd, env):
    """chdir to CWD (may be None) and set ENV ("KEY=VALUE" strings) in both
    os.environ and the C environment.  Returns what leave_context needs."""
    saved_dir = None
    saved_env = []
    try:
        if cwd is not None:
            saved_dir = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
            os.chdir(cwd)
        for assignment in env:
            key, _, value = assignment.partition("=")
            saved_env.append((key, os.environ.get(key), _native.c_getenv(key)))
            os.environ[key] = value  # also putenv()
    except BaseException:
        leave_context((saved_dir, saved_env))
        raise
    return saved_dir, saved_env


def leave_context(token):
    saved_dir, saved_env = token
    for key, python_value, c_value in reversed(saved_env):
        if python_value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = python_value
        _native.c_setenv(key, c_value)
    if saved_dir is not None:
        try:
            os.fchdir(saved_dir)
        finally:
            os.close(saved_dir)


# ---- The process, as cells see it ------------------------------------------

class _Exit:
    """exit() and quit() in a cell: end the cell with SystemExit.  Unlike
    site's version, they leave sys.stdin open for later cells."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"Use {self._name}() to end the cell"

    def __call__(self, code=None):
        raise SystemExit(code)


def _guard_process_exit(real_exit):
    @functools.wraps(real_exit)
    def _exit(status):
        # In a cell, os._exit would take the host process down.  Not in a
        # process the cell forked: there it is the real one (in_cell() is
        # False there).
        if _native.in_cell():
            raise SystemExit(status)
        real_exit(status)
    return _exit


def _tag_threads(threading):
    """A thread remembers the cell that started it (directly or through
    other threads): its output goes to that cell while it runs, and nowhere
    once it has ended, never into a later cell (running.c)."""
    thread = getattr(threading, "Thread", None)
    if thread is None:
        return  # a threading.py of the cell's own, shadowing the standard one
    real_start, real_bootstrap_inner = thread.start, thread._bootstrap_inner

    @functools.wraps(real_start)
    def start(self):
        self._cellexec_origin = _native.thread_origin()
        return real_start(self)

    @functools.wraps(real_bootstrap_inner)
    def _bootstrap_inner(self):
        origin = getattr(self, "_cellexec_origin", None)
        if origin is None:
            return real_bootstrap_inner(self)
        _native.adopt_origin(origin)
        try:
            return real_bootstrap_inner(self)
        finally:
            _native.release_origin()

    thread.start = start
    thread._bootstrap_inner = _bootstrap_inner


class _TaggingLoader:
    """threading's loader, which tags threads once it has run the module;
    everything else is the wrapped loader's (get_source, resources...)."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        # Only what the instance lacks comes here; without _loader (a copy
        # made without __init__) there is nothing to delegate to.
        loader = self.__dict__.get("_loader")
        if loader is None:
            raise AttributeError(name)
        return getattr(loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _tag_threads(module)


class _TagThreadsOnImport:
    """Tags threads (_tag_threads) once something imports threading.

    The subprocess worker imports threading only when a cell does
    (cx__py_import_threading_on_demand): its at-fork handler would run
    Python in every forked cell process.  So this finder, first on
    sys.meta_path, lets the other finders find threading and wraps the
    loader they return."""

    _finding = False  # the import lock serialises imports of one name

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "threading" or cls._finding:
            return None  # (a finder that asks sys.meta_path in turn: not us again)
        cls._finding = True
        try:
            for finder in sys.meta_path:
                find_spec = getattr(finder, "find_spec", None)
                if finder is cls or find_spec is None:
                    continue
                spec = find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            cls._finding = False
        if getattr(spec.loader, "exec_module", None) is None:
            return None  # a legacy loader: let the import system deal with it
        spec.loader = _TaggingLoader(spec.loader)
        return spec


def _tag_threads_when_imported():
    threading = sys.modules.get("threading")
    if threading is not None:
        _tag_threads(threading)
    else:
        sys.meta_path.insert(0, _TagThreadsOnImport)


def _guard_signals():
    """signal.signal() and siginterrupt() in a cell change the host's
    dispositions: remember them first, for cell.c to put back when the cell
    ends."""
    import signal

    def guarded(real):
        @functools.wraps(real)
        def change(signalnum, *args, **kwargs):
            if _native.in_cell():
                try:
                    previous = signal.getsignal(signalnum)
                except (ValueError, TypeError):
                    pass  # real() says what is wrong
                else:
                    _native.save_signal(int(signalnum), previous)
            return real(signalnum, *args, **kwargs)
        return change

    signal.signal = guarded(signal.signal)
    signal.siginterrupt = guarded(signal.siginterrupt)


def _interruptible_sleep(real_sleep):
    @functools.wraps(real_sleep)
    def sleep(seconds):
        # C sleep cannot be interrupted by another thread: sleep in short
        # slices so a cell's interrupt or timeout is raised within one.
        if not (_native.in_cell() and isinstance(seconds, (int, float))
                and seconds > _WAKEUP_SECONDS):
            return real_sleep(seconds)
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            real_sleep(min(remaining, _WAKEUP_SECONDS))
    return sleep


def info():
    import platform

    return {
        "python_version": platform.python_version(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "isolated": bool(sys.flags.isolated),
        "site": not sys.flags.no_site,
        "compile_cache_entries": len(_compiled),
    }


def install():
    """Once, when the interpreter starts."""
    builtins.display = display
    builtins.input = _input
    sys.stdin = _NoStdin()
    import getpass

    getpass.getpass = _getpass
    builtins.exit = _Exit("exit")
    builtins.quit = _Exit("quit")
    os._exit = _guard_process_exit(os._exit)
    time.sleep = _interruptible_sleep(time.sleep)
    _tag_threads_when_imported()
    _guard_signals()
    if not sys.flags.isolated and "" not in sys.path:
        # As in `python3 -c` and IPython: modules in the current directory import.
        sys.path.insert(0, "")
