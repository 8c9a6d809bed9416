# pyembed/requests.py: the Jupyter requests beside execute_request, answered
# in a session's interpreter as ipykernel answers them (its do_complete,
# do_inspect, do_is_complete and do_history, comm_info_request, and the
# user_expressions of its do_execute), with IPython's own machinery
# on the session's namespace.  Loaded into the embedded Python as the
# module _cellexec_requests (runtime.c); helper.answer_request is its entry.
#
# Without IPython, each answers what a kernel with nothing to offer does
# (no matches, found false, status unknown), never an error: a front end
# asks these while the user types.

import contextlib
import fnmatch
import json

import _cellexec_ipython as _ipython

# A session's number in history replies: the session's own cells are the
# only ones kept (in memory, as nbclient's kernels keep them).
SESSION_NUMBER = 1


@contextlib.contextmanager
def _shell_for(namespace):
    """IPython's shell pointed at NAMESPACE for the request, or None without
    IPython.  The shell is the process's: it points back where it was after,
    for a cell of another session that may be running on another thread."""
    try:
        shell = _ipython.shell()
    except _ipython.IPythonUnavailable:
        yield None
        return
    completer = shell.Completer
    before = shell.user_module, shell.user_ns, completer.namespace, completer.global_namespace
    _ipython.point_at(namespace)
    # The completer keeps the namespaces the shell had when it was made.
    completer.namespace, completer.global_namespace = shell.user_ns, shell.user_global_ns
    try:
        yield shell
    finally:
        (shell.user_module, shell.user_ns, completer.namespace,
         completer.global_namespace) = before


def _int(content, key, default):
    """CONTENT[KEY] when it is an int (not a bool), else DEFAULT."""
    value = content.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _text(content, key, default=""):
    """CONTENT[KEY] when it is a str, else DEFAULT."""
    value = content.get(key)
    return value if isinstance(value, str) else default


def _cursor(content, code):
    cursor = _int(content, "cursor_pos", None)
    return cursor if cursor is not None and 0 <= cursor <= len(code) else len(code)


def complete(content, namespace, cells):
    code = _text(content, "code")
    cursor = _cursor(content, code)
    reply = {"status": "ok", "matches": [], "cursor_start": cursor, "cursor_end": cursor,
             "metadata": {}}
    with _shell_for(namespace) as shell:
        if shell is None:
            return reply
        from IPython.core.completer import provisionalcompleter, rectify_completions

        with provisionalcompleter():
            completions = list(rectify_completions(code,
                                                   shell.Completer.completions(code, cursor)))
    if completions:
        reply["cursor_start"] = completions[0].start
        reply["cursor_end"] = completions[0].end
        reply["matches"] = [c.text for c in completions]
    reply["metadata"]["_jupyter_types_experimental"] = [
        {"start": c.start, "end": c.end, "text": c.text, "type": c.type,
         "signature": c.signature} for c in completions]
    return reply


def inspect(content, namespace, cells):
    code = _text(content, "code")
    cursor = _cursor(content, code)
    detail = content.get("detail_level") if content.get("detail_level") in (0, 1) else 0
    reply = {"status": "ok", "found": False, "data": {}, "metadata": {}}
    with _shell_for(namespace) as shell:
        if shell is None:
            return reply
        from IPython.utils.tokenutil import token_at_cursor

        try:
            bundle = shell.object_inspect_mime(token_at_cursor(code, cursor),
                                               detail_level=detail)
        except KeyError:
            return reply
        if not getattr(shell, "enable_html_pager", False):
            bundle.pop("text/html", None)
    reply["data"] = bundle
    reply["found"] = True
    return reply


def is_complete(content, namespace, cells):
    code = _text(content, "code")
    with _shell_for(namespace) as shell:
        if shell is None:
            return {"status": "unknown"}
        status, indent = shell.input_transformer_manager.check_complete(code)
    reply = {"status": status}
    if status == "incomplete":
        reply["indent"] = " " * (indent or 0)
    return reply


def _output_text(value):
    """A cell's value as history keeps it: its text/plain."""
    try:
        data, _ = _ipython.format(value, raising=True)
        return data.get("text/plain")
    except Exception:
        return None


def _entries(cells, raw, output):
    """(line, input or (input, output)) of the session's CELLS (helper.History),
    oldest first."""
    if cells is None:
        return []
    inputs = cells.raw if raw else cells.parsed
    entries = []
    for line in range(1, len(inputs)):
        source = inputs[line]
        if output:
            shown = line in cells.outputs
            source = (source, _output_text(cells.outputs[line]) if shown else None)
        entries.append((line, source))
    return entries


def history(content, namespace, cells):
    access = content.get("hist_access_type")
    raw = content.get("raw", True) is not False
    output = content.get("output") is True
    entries = _entries(cells, raw, output)
    if access == "tail":
        n = _int(content, "n", 10)
        entries = entries[-n:] if n > 0 else []
    elif access == "range":
        # 0 (the current one) or our own number; another session has no cells here.
        if _int(content, "session", 0) not in (0, SESSION_NUMBER):
            entries = []
        start = _int(content, "start", 1)
        stop = _int(content, "stop", None)
        entries = [e for e in entries if e[0] >= start and (stop is None or e[0] < stop)]
    elif access == "search":
        pattern = _text(content, "pattern", "*")
        matching = [e for e in entries
                    if fnmatch.fnmatchcase(e[1][0] if output else e[1], pattern)]
        if content.get("unique") is True:
            seen, unique = set(), []
            for entry in reversed(matching):
                source = entry[1][0] if output else entry[1]
                if source not in seen:
                    seen.add(source)
                    unique.append(entry)
            matching = unique[::-1]
        n = _int(content, "n", 0)
        entries = matching[-n:] if n > 0 else matching
    else:
        entries = []
    return {"status": "ok",
            "history": [[SESSION_NUMBER, line, list(source) if output else source]
                        for line, source in entries]}


def _expression_error(error):
    return {"status": "error", "ename": type(error).__name__, "evalue": str(error),
            "traceback": []}


def user_expressions(content, namespace, cells):
    """execute_request's user_expressions, as ipykernel evaluates them
    after a cell that succeeded: each one's display data, or its error."""
    expressions = content.get("user_expressions")
    if not isinstance(expressions, dict):
        expressions = {}
    with _shell_for(namespace) as shell:
        if shell is not None:
            values = shell.user_expressions(expressions)
        else:
            values = {}
            for name, expression in expressions.items():
                try:
                    value = eval(expression, namespace)
                    values[name] = {"status": "ok", "data": {"text/plain": repr(value)},
                                    "metadata": {}}
                except Exception as error:
                    values[name] = _expression_error(error)
    return {"status": "ok", "user_expressions": values}


def comm_info(content, namespace, cells):
    """The comms open in the session's process (of CONTENT's target_name
    when it names one), as ipykernel lists its comm manager's; none while
    no cell made the kernel object (_cellexec_kernel)."""
    import _cellexec_kernel

    kernel = _cellexec_kernel.existing()
    target = _text(content, "target_name", None)
    comms = {}
    for comm_id, comm in getattr(getattr(kernel, "comm_manager", None), "comms", {}).items():
        if target is None or comm.target_name == target:
            comms[comm_id] = {"target_name": comm.target_name}
    return {"status": "ok", "comms": comms}


_ANSWERS = {
    "complete_request": complete,
    "inspect_request": inspect,
    "is_complete_request": is_complete,
    "history_request": history,
    "comm_info_request": comm_info,
    "user_expressions": user_expressions,  # CX_REQUEST_USER_EXPRESSIONS
}


def answer(msg_type, content_json, namespace, cells):
    """The reply content for MSG_TYPE with CONTENT_JSON (a JSON object's
    text), in NAMESPACE with the session's CELLS (helper.History); None for
    a type not answered here."""
    reply = _ANSWERS.get(msg_type)
    if reply is None:
        return None
    content = json.loads(content_json)
    if not isinstance(content, dict):
        content = {}
    return reply(content, namespace, cells)


def install():
    pass
