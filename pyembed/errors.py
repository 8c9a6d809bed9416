"""How cellexec shows a Python exception: the one place that formats one.

Compiled into libcxpyembed as a string and loaded, as module
_cellexec_errors, first when the interpreter starts.  helper.py formats
the exception that ends a cell with it (describe_error), executor.py those
of the executor operations, ipython_shell.py repairs with it what IPython
shows of an error output; all of them register the source lines of the code
they compile here: a cell's in linecache too (remember_cell), an executor
operation's here only (remember_lines).

A traceback is python3's (traceback.TracebackException), chained causes
and contexts as python3 prints them; text crosses to C as valid UTF-8,
lone surrogates backslash-escaped as python3 writes them to stderr.
"""

import sys
import weakref

# What a plain traceback calls a cell, whatever its file name: the lines
# shown tell cells apart.
PLAIN_CELL_FILENAME = "<cell>"


def cell_filename(source):
    """The file name cells with the text SOURCE are compiled under: one per
    text, as a kernel names them, so that linecache and IPython tell cells
    apart (see _CellSource)."""
    return f"<cell-{hash(source) & 0xFFFFFFFFFFFFFFFF:016x}>"


def is_cell_filename(filename):
    return isinstance(filename, str) and filename.startswith("<cell-") and filename.endswith(">")

class _KeyRef(weakref.ref):
    __slots__ = ("key",)


class _ByIdentity:
    """A mapping from objects to values, kept while the object lives, that
    tells keys apart by identity: code objects compare equal when only
    their file name, comments or blank space differ, so a
    WeakKeyDictionary would give one cell's entry to another."""

    __slots__ = ("_entries", "_forget")

    def __init__(self):
        entries = self._entries = {}  # id(key): (_KeyRef, value)

        def forget(ref):
            entry = entries.get(ref.key)
            if entry is not None and entry[0] is ref:
                del entries[ref.key]

        self._forget = forget

    def __setitem__(self, key, value):
        ref = _KeyRef(key, self._forget)
        ref.key = id(key)
        self._entries[ref.key] = (ref, value)

    def get(self, key):
        entry = self._entries.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else None


# Source lines of every code object compiled from a cell (a _Linecached)
# or by an executor operation (a list of lines), for tracebacks.  Kept as
# long as the code lives.
_source_lines = _ByIdentity()

_linecache = None  # the module, imported with the first cell


class CellLines(list):
    """A cell's source lines, with their line breaks, as linecache holds
    them; COUNT: the number of the cell that ran it last, which IPython's
    tracebacks show as "Cell In [COUNT]"."""

    __slots__ = ("count",)


class _Linecached:
    """Keeps a cell's lines in linecache, under its file name, while one of
    the code objects compiled from it lives, as a kernel registers cells
    there: warnings show their lines, and inspect.getsource() and IPython's
    tracebacks and debugger find them."""

    __slots__ = ("entry", "__weakref__")

    def __init__(self, filename, lines):
        # No modification time: linecache.checkcache() keeps it.
        self.entry = (0, None, lines, filename)
        cache = _linecache.cache
        if isinstance(cache, dict):  # a cell may have replaced it
            cache[filename] = self.entry

    def __del__(self):
        # At interpreter exit linecache's globals may be gone already.
        cache = getattr(_linecache, "cache", None)
        if isinstance(cache, dict) and cache.get(self.entry[3]) is self.entry:
            cache.pop(self.entry[3], None)


def remember_cell(source, filename, codes):
    """Give the code objects CODES (the top level of one cell, compiled from
    SOURCE under FILENAME, see cell_filename) the lines of SOURCE, in
    linecache and in tracebacks, while one of them or the code nested in
    them lives.  Returns the lines (a CellLines, its count 1)."""
    global _linecache
    if _linecache is None:
        import linecache as _linecache
    lines = CellLines(source.splitlines(True))
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.count = 1
    keeper = _Linecached(filename, lines)
    # The top-level codes live and die together (helper's compile cache):
    # the first stands for them all; nested code may outlive them.
    _source_lines[codes[0]] = keeper
    stack = [k for c in codes for k in c.co_consts if isinstance(k, type(c))]
    while stack:
        c = stack.pop()
        _source_lines[c] = keeper
        stack.extend(k for k in c.co_consts if isinstance(k, type(c)))
    return lines


def cell_number(filename):
    """The number of the cell that ran the code of FILENAME last, or None."""
    cache = getattr(_linecache, "cache", None)
    entry = cache.get(filename) if isinstance(cache, dict) else None
    return entry[2].count if entry is not None and isinstance(entry[2], CellLines) else None


def remember_lines(code, lines):
    """Show LINES (a list of lines without their ends) as the source of CODE
    and of the code objects nested in it in tracebacks; kept as long as
    CODE lives."""
    stack = [code]
    while stack:
        c = stack.pop()
        _source_lines[c] = lines
        stack.extend(k for k in c.co_consts if isinstance(k, type(code)))


# Tracebacks longer than this keep their first and last _TRACEBACK_KEEP
# frames: a runaway recursion would otherwise make a result of megabytes.
_TRACEBACK_MAX_FRAMES = 2000
_TRACEBACK_KEEP = 1000


def _drop_frames(exc, drop_files, skip_leading):
    """Remove the frames of the files DROP_FILES from EXC's traceback, and
    the frames of files starting with SKIP_LEADING before the first one
    kept (the asyncio frames that run top-level await before the cell's:
    frames of asyncio the cell itself calls stay).  Caps what is left to
    _TRACEBACK_MAX_FRAMES; returns (frames kept at the head, frames omitted
    after them)."""
    import types

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(skip_leading):
        tb = tb.tb_next
    kept = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in drop_files:
            kept.append(tb)
        tb = tb.tb_next
    omitted = 0
    if len(kept) > _TRACEBACK_MAX_FRAMES:
        omitted = len(kept) - 2 * _TRACEBACK_KEEP
        kept[_TRACEBACK_KEEP:-_TRACEBACK_KEEP] = []
    # New links, built from the end: assigning tb_next walks the chain that
    # follows (a loop check), which made this quadratic in deep recursion.
    following = None
    for tb in reversed(kept):
        if tb.tb_next is not following:
            tb = types.TracebackType(following, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        following = tb
    exc.__traceback__ = following
    return (_TRACEBACK_KEEP, omitted) if omitted else (0, 0)


def _omission_stack(stack, head, omitted):
    """STACK (a StackSummary) formatting with a line that says OMITTED
    frames are missing after its first HEAD."""
    import traceback

    class CappedStack(traceback.StackSummary):
        def format(self):
            lines = traceback.StackSummary.from_list(self[:head]).format()
            lines.append(f"  ... {omitted} frames omitted ...\n")
            lines.extend(traceback.StackSummary.from_list(self[head:]).format())
            return lines

    return CappedStack(stack)


def _attach_lines(te, exc, seen):
    """Give the frames of TracebackException TE whose code remember_lines()
    knows their source lines, which linecache does not know, in EXC and in
    the exceptions chained to it (cause, context, members of a group).
    Relies on FrameSummary._line (3.11); on other versions the lines are
    just missing."""
    import traceback

    if exc is None or id(exc) in seen:
        return
    seen.add(id(exc))
    for summary, (frame, _) in zip(te.stack, traceback.walk_tb(exc.__traceback__)):
        if is_cell_filename(summary.filename):
            # Its lines are in linecache (remember_cell).
            cache = getattr(_linecache, "cache", None)
            entry = cache.get(summary.filename) if isinstance(cache, dict) else None
            lines = entry[2] if entry is not None else ()
            if 0 < summary.lineno <= len(lines):
                summary._line = lines[summary.lineno - 1]
            summary.filename = PLAIN_CELL_FILENAME
            continue
        source = _source_lines.get(frame.f_code)
        if source is None:
            continue
        lines = source
        if 0 < summary.lineno <= len(lines):
            # With its line break, as linecache gives lines: the caret
            # columns are counted against it.
            summary._line = lines[summary.lineno - 1] + "\n"
    if te.__cause__ is not None:
        _attach_lines(te.__cause__, exc.__cause__, seen)
    if te.__context__ is not None:
        _attach_lines(te.__context__, exc.__context__, seen)
    for child_te, child in zip(te.exceptions or (), getattr(exc, "exceptions", ())):
        _attach_lines(child_te, child, seen)


def safe_str(value):
    """str(VALUE), or a note saying it failed: an exception's __str__ is
    user code."""
    try:
        return str(value)
    except BaseException as exc:
        return f"<str() failed: {type(exc).__name__}>"


def utf8_safe(text):
    """TEXT as valid UTF-8: lone surrogates (undecodable bytes of a file
    name, say) backslash-escaped, as python3 writes them to stderr."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _format_traceback(exc, drop_files, skip_leading):
    import traceback

    usage_error = getattr(sys.modules.get("IPython.core.error"), "UsageError", None)
    if usage_error is not None and isinstance(exc, usage_error):
        # A mistake in a magic's use: IPython shows the message alone.
        return f"UsageError: {safe_str(exc)}\n"

    head, omitted = _drop_frames(exc, drop_files, skip_leading)
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                          lookup_lines=False, compact=True)
        _attach_lines(te, exc, set())
        if omitted and len(te.stack) > head:
            te.stack = _omission_stack(te.stack, head, omitted)
        return "".join(te.format())
    except BaseException as failure:
        return f"{type(exc).__name__}: {safe_str(exc)}\n(traceback unavailable: {failure!r})\n"


def describe_exception(exc, drop_files=(), skip_leading=()):
    """(type name, message, traceback) of EXC: the one place that formats a
    Python exception for a result or an error, of a cell
    (helper.describe_error) or of an executor operation (executor.py).

    The traceback is python3's, causes and contexts chained as it chains
    them, without the frames of the files DROP_FILES (and those of files
    starting with SKIP_LEADING before the first frame kept), with the
    source lines remember_lines() was given, and at most
    _TRACEBACK_MAX_FRAMES frames.  The message of SystemExit is its code.
    Message and traceback are valid UTF-8 (see utf8_safe)."""
    # A cell's syntax error names the cell as plain tracebacks do.
    filename = getattr(exc, "filename", None) if isinstance(exc, SyntaxError) else None
    if is_cell_filename(filename):
        exc.filename = PLAIN_CELL_FILENAME
    try:
        if isinstance(exc, SystemExit):
            message = safe_str(exc.code)  # the exit code: "3", "None", "bye"
        else:
            message = safe_str(exc)
        traceback_text = _format_traceback(exc, tuple(drop_files), tuple(skip_leading))
    finally:
        if is_cell_filename(filename):
            exc.filename = filename
    return type(exc).__name__, utf8_safe(message), utf8_safe(traceback_text)


