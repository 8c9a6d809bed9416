"""cellexec: run Python code cells through swappable execution backends.

A Backend runs cells and returns the result bundle IPython users know::

    >>> import cellexec
    >>> backend = cellexec.Backend("local")
    >>> result = backend.run_cell("print('hello')\\n1 + 1")
    >>> result["stdout"], result["rich_outputs"]
    ('hello\\n', [{'text/plain': '2'}])

Backends are plugins of libcellexec:

- ``local``: CPython in this process -- here, this very interpreter.  Each
  ``run_cell`` gets a fresh namespace; a session keeps one.  What a cell
  prints is captured into its result, never written to this process's
  ``sys.stdout``.
- ``subprocess``: a worker process per cell (or per session), with hard
  timeouts, resource limits and crash isolation.
- ``fake``: scripted results for tests, recording every call.

A Python exception inside a cell is never raised here: it is the result's
``error`` (``{"type", "message", "traceback"}``) with ``success`` False.
``cellexec.Error`` and its subclasses (ConfigError, OptionError,
PluginError, UnsupportedError, BackendError, PythonError, ...) say that the
backend could not do what was asked at all.

Sessions also hold executor environments (``session.execute_prelude``),
namespaces a language runtime fills and queries value by value; values
cross as JSON, and objects with no JSON form as ``cellexec.Ref``.

Other Python threads keep running while a cell runs.  The
``cellexec.executor`` module has an ``IPythonExecutor`` facade.
"""

from cellexec import _host  # noqa: F401  (takes the host's input, stdin, exit first)
from cellexec._cellexec import (
    ABI_MAJOR,
    ABI_MINOR,
    ABIMismatchError,
    Backend,
    BackendError,
    ConfigError,
    DuplicateError,
    Env,
    Error,
    FailedError,
    InitRefusedError,
    InvalidPluginError,
    JSONError,
    NoEntryError,
    NotFoundError,
    OptionError,
    PluginError,
    PluginLoadError,
    PythonError,
    Ref,
    Session,
    UnsupportedError,
    library_version,
    registry,
)

__all__ = [
    "ABI_MAJOR", "ABI_MINOR", "ABIMismatchError", "Backend", "BackendError", "ConfigError",
    "DuplicateError", "Env", "Error", "FailedError", "InitRefusedError", "InvalidPluginError",
    "JSONError", "NoEntryError", "NotFoundError", "OptionError", "PluginError",
    "PluginLoadError", "PythonError", "Ref", "Session", "UnsupportedError", "library_version",
    "plugins", "registry", "run_cell",
]

__version__ = library_version()


def plugins(config=None):
    """Every plugin found, usable or faulty, as ``cellexec plugins --json``
    lists them: dicts with name, version, description, abi, path, status
    ('ok' or 'faulty'), reason, shadows (the files of the same name later on
    the search path it hides), executor, methods (the optional methods:
    sessions, interrupt, query, executor operations; None when faulty) and
    options.  CONFIG (a config file)
    adds its plugin-path to the search path."""
    return registry(config)["plugins"]


def run_cell(code, backend="local", **kwargs):
    """Run CODE once on a new BACKEND (a name) and return the result bundle;
    KWARGS are those of Backend.run_cell.  Open a Backend yourself to run
    more than one cell."""
    with Backend(backend) as opened:
        return opened.run_cell(code, **kwargs)
