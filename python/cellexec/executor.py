"""An IPython-style executor facade over cellexec backends.

    from cellexec.executor import IPythonExecutor, LocalIPythonBackend

    executor = IPythonExecutor(LocalIPythonBackend())
    result = executor.run_cell("print('hello')\\n1 + 1")
    print(result["stdout"].strip())  # hello

A backend is any object with a ``run_cell(code_str, **kwargs)`` method that
returns a result bundle (a dict with stdout, stderr, rich_outputs, success
and error): LocalIPythonBackend (a fresh namespace per call),
StatefulIPythonBackend (one namespace kept across calls), a
cellexec.Backend or Session, or your own (a fake that records calls, for
tests).
"""

import cellexec

__all__ = ["IPythonExecutor", "LocalIPythonBackend", "StatefulIPythonBackend",
           "SubprocessIPythonBackend", "run_cell"]


def _call(target, code, timeout_s=None, cwd=None, env=None, **kwargs):
    """Run CODE on a cellexec Backend or Session with the facade's keywords."""
    return target.run_cell(code, timeout=timeout_s, cwd=cwd, env=env, **kwargs)


class _CellexecBackend:
    """What the backends below share: cells run on self._target (a
    cellexec.Backend or Session) with CWD and ENV as per-call defaults."""

    _target = None

    def __init__(self, cwd=None, env=None):
        self.cwd = cwd
        self.env = dict(env) if env else None

    def run_cell(self, code_str, use_subprocess=False, timeout_s=None, cwd=None, env=None,
                 **kwargs):
        """The result bundle of CODE_STR (see cellexec.Backend.run_cell)."""
        return _call(self._target, code_str, timeout_s=timeout_s,
                     cwd=cwd if cwd is not None else self.cwd,
                     env=env if env is not None else self.env,
                     use_subprocess=use_subprocess, **kwargs)


class LocalIPythonBackend(_CellexecBackend):
    """Cells in this interpreter, each in a fresh namespace (as a new IPython
    session per call), on cellexec's ``local`` backend.  CWD and ENV (a
    dict) apply to every call unless the call gives its own."""

    backend_name = "local"

    def __init__(self, cwd=None, env=None, options=None):
        super().__init__(cwd, env)
        self._target = cellexec.Backend(self.backend_name, options=options)

    def close(self):
        self._target.close()


class SubprocessIPythonBackend(LocalIPythonBackend):
    """Cells in worker processes (cellexec's ``subprocess`` backend): hard
    timeouts, crash isolation, a clean environment."""

    backend_name = "subprocess"


class StatefulIPythonBackend(_CellexecBackend):
    """One namespace kept across calls: a session of BACKEND ('local' by
    default, or 'subprocess' for a worker process of its own).  Close it
    (or use it as a context manager) when done."""

    def __init__(self, backend="local", cwd=None, env=None, options=None):
        super().__init__(cwd, env)
        self._backend = cellexec.Backend(backend, options=options)
        self._target = self._backend.session()

    def close(self):
        self._target.close()
        self._backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class IPythonExecutor:
    """Runs cells on BACKEND (default: a new LocalIPythonBackend).

    ``run_cell(code, use_subprocess=False, timeout_s=None, **kwargs)``
    returns the result bundle.  With ``use_subprocess`` the call runs on
    cellexec's subprocess backend instead (opened on first use, kept for
    later calls): a hard timeout, and a crash cannot reach this process.
    Other keywords go to the backend's run_cell."""

    def __init__(self, backend=None):
        if backend is None:
            backend = LocalIPythonBackend()
        if not callable(getattr(backend, "run_cell", None)):
            raise TypeError("backend must have a run_cell(code_str, **kwargs) method")
        self.backend = backend
        self._subprocess = None

    def _subprocess_backend(self):
        if self._subprocess is None:
            self._subprocess = cellexec.Backend("subprocess")
        return self._subprocess

    def run_cell(self, code, use_subprocess=False, timeout_s=None, **kwargs):
        """The result bundle of CODE: stdout, stderr, rich_outputs, success,
        error (and outputs, execution_count, ... where the backend gives
        them)."""
        if use_subprocess:
            kwargs.setdefault("cwd", getattr(self.backend, "cwd", None))
            kwargs.setdefault("env", getattr(self.backend, "env", None))
            return _call(self._subprocess_backend(), code, timeout_s=timeout_s, **kwargs)
        if isinstance(self.backend, (cellexec.Backend, cellexec.Session)):
            return _call(self.backend, code, timeout_s=timeout_s, **kwargs)
        if timeout_s is not None:
            kwargs["timeout_s"] = timeout_s
        return self.backend.run_cell(code, **kwargs)

    def close(self):
        if self._subprocess is not None:
            self._subprocess.close()
            self._subprocess = None
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


_default_executor = None


def run_cell(code, use_subprocess=False, timeout_s=None, **kwargs):
    """Run CODE on a shared IPythonExecutor(LocalIPythonBackend()): a fresh
    namespace per call; ``use_subprocess`` runs this call on the subprocess
    backend."""
    global _default_executor
    if _default_executor is None:
        _default_executor = IPythonExecutor(LocalIPythonBackend())
    return _default_executor.run_cell(code, use_subprocess=use_subprocess, timeout_s=timeout_s,
                                      **kwargs)
