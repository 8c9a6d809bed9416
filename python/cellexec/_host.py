"""The local backend in a Python host: keep the host's input, stdin and exit.

The local backend's runtime (pyembed/helper.py) sets, once per process,
builtins.input, getpass.getpass, sys.stdin, builtins.exit and builtins.quit
to versions for cells (input fails as in a kernel without a front end;
exit ends the cell).  In a program of its own that is what every Python
caller wants; here the interpreter is the host's, so each is put back as
a dispatcher: the cell's version on a thread running a cell
(_cellexec_native.in_cell()), the host's own everywhere else.  The host's
originals are taken when cellexec is imported, before any backend starts.
"""

import builtins
import getpass
import sys
import threading

_host_input = builtins.input
_host_getpass = getpass.getpass
_host_stdin = sys.stdin
_host_exit = getattr(builtins, "exit", None)
_host_quit = getattr(builtins, "quit", None)

_lock = threading.Lock()
_scoped = False


def adopt(backend):
    """Start BACKEND's runtime (a local backend) and scope its hooks to cells."""
    global _scoped
    if _scoped:
        return
    with _lock:
        if _scoped:
            return
        backend.query("info")  # starts the runtime in this interpreter
        native = sys.modules.get("_cellexec_native")
        if native is None:
            return
        from cellexec._cellexec import ByThread

        in_cell = native.in_cell
        if builtins.input is not _host_input:
            builtins.input = ByThread(in_cell, builtins.input, _host_input)
        if getpass.getpass is not _host_getpass:
            getpass.getpass = ByThread(in_cell, getpass.getpass, _host_getpass)
        if sys.stdin is not _host_stdin and _host_stdin is not None:
            sys.stdin = ByThread(in_cell, sys.stdin, _host_stdin)
        for name, host in (("exit", _host_exit), ("quit", _host_quit)):
            cell = getattr(builtins, name, None)
            if host is not None and cell is not host:
                setattr(builtins, name, ByThread(in_cell, cell, host))
        _scoped = True
