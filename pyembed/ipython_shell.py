"""IPython in cells, as ipykernel provides it: the display protocol, magics,
shell escapes and the help pager.

Compiled into libcxpyembed as a string and loaded, as module
_cellexec_ipython, when the interpreter starts; IPython itself is imported
only when a cell needs it, so plain cells pay nothing:

  - a cell that is not Python (`%time`, `%%writefile`, `!ls`, `x = !ls`,
    `len?`) is transformed by IPython's own TransformerManager;
  - a cell (or a module it imports) imports IPython: from then on
    IPython.display.display(), update_display() and clear_output() reach
    the cell's outputs, as in a notebook;
  - a value that IPython formats differently from repr() (see
    helper._needs_ipython_format) is formatted by IPython's DisplayFormatter;
  - a cell imports matplotlib: its backend is matplotlib-inline's, as in a
    kernel, and the shell's post_execute event (finish_cell) shows the
    figures the cell drew.

One InteractiveShell serves the whole process, as in a kernel; each cell
points it at the namespace the cell runs in.  Like a kernel's, its state is
the process's: cells running at the same time on several threads (the local
backend allows it) share it, so a magic that reads the namespace (%time,
%who, !echo $x) or pages (obj?) in one of them may see another's.  It
keeps no history on disk, installs no signal handlers and does not change
the process environment.
"""

import os
import sys
import _thread

import _cellexec_errors as _errors
import _cellexec_native as _native

_shell = None
_ExecutionInfo = _ExecutionResult = None  # IPython's, bound with the shell
_creating = False
_formatting = _thread._local()  # True while format() runs on a thread
_running = _thread._local()     # .info: the ExecutionInfo of the thread's cell
_unavailable = None  # why IPython cannot be used, once known
_front_end = False   # serve_front_end() was called


class IPythonUnavailable(Exception):
    pass


def _create_shell():
    global _ExecutionInfo, _ExecutionResult
    import warnings

    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult, InteractiveShell
    from IPython.core import page, payloadpage
    from traitlets.config import Config

    class CellDisplayPublisher(DisplayPublisher):
        """Sends display_data, update_display_data and clear_output to the
        running cell, as ipykernel's ZMQDisplayPublisher sends messages."""

        def publish(self, data, metadata=None, source=None, *, transient=None,
                    update=False, **kwargs):
            import _cellexec_helper

            display_id = (transient or {}).get("display_id")
            # Bytes (a _repr_mimebundle_'s image) become base64, as in ipykernel.
            data = _cellexec_helper.encode_bundle(data)
            if not _native.publish_display(data, metadata or {}, display_id,
                                           "update" if update else "display"):
                # No cell runs (a thread after its cell ended): as IPython
                # does without a front end.
                print(data.get("text/plain", ""))

        def clear_output(self, wait=False):
            _native.clear_output(bool(wait))

    class CellShell(InteractiveShell):
        """The shell as ipykernel's is seen from a cell: with a kernel."""

        @property
        def kernel(self):
            import _cellexec_kernel

            return _cellexec_kernel.kernel()

        @property
        def parent_header(self):
            return {}  # the request a cell's messages answer is the kernel's to know

    config = Config()
    config.HistoryManager.enabled = False     # no SQLite file in ~/.ipython
    config.HistoryManager.hist_file = ":memory:"  # as nbclient starts kernels; cells check it
    _present(CellShell, config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # e.g. "working in a virtualenv"
        shell = CellShell.instance(
            config=config,
            display_pub_class=CellDisplayPublisher,
            # A module of the shell's own: IPython fills it with In, Out,
            # exit, quit, _ ..., and in a Python host __main__ is the host's
            # script.  (Not one named __main__: IPython would put it in
            # sys.modules in place of the process's.)
            user_module=type(sys)("_cellexec_ipython_main"),
        )
    def show_traceback(etype, evalue, stb):
        # An exception IPython shows without failing the cell (a display
        # formatter that raised): an error output, as in ipykernel.
        lines = [_errors.utf8_safe(line) for line in stb]
        if not _native.show_error(etype.__name__, _errors.utf8_safe(_errors.safe_str(evalue)),
                                  lines):
            print(shell.InteractiveTB.stb2text(lines), file=sys.stderr)

    shell._showtraceback = show_traceback
    try:
        shell.compile._filename_map = _CellNumbers(shell.compile._filename_map)
    except AttributeError:
        pass  # an IPython that names cells otherwise: "File <cell-...>" then
    _ExecutionInfo, _ExecutionResult = ExecutionInfo, ExecutionResult

    def enable_gui(gui=None):
        # What %matplotlib asks for: figures inline need no event loop.
        if gui not in (None, "inline"):
            raise RuntimeError(f"cellexec runs no {gui} event loop: figures can only be "
                               f"shown inline (%matplotlib inline)")

    shell.enable_gui = enable_gui
    # format(raising=True) (on this thread only: cells of other threads
    # share the shell) turns IPython's shown traceback back into the
    # exception.
    shows_traceback = shell.showtraceback

    def showtraceback(*args, **kwargs):
        if getattr(_formatting, "value", False):
            raise  # the exception IPython's formatter caught
        return shows_traceback(*args, **kwargs)

    shell.showtraceback = showtraceback
    # `len?` and `%pinfo` page into the reply's payload, as in ipykernel.
    shell.set_hook("show_in_pager", page.as_hook(payloadpage.page), 99)
    shell.register_magics(_kernel_magics())
    # %store, which IPython's applications (a kernel's too) load by default.
    shell.extension_manager.load_extension("storemagic")
    if _front_end:
        _install_kernel_exit(shell)
    return shell


def _present(shell_class, config):
    """SHELL_CLASS and CONFIG as code that tells a terminal from a notebook
    sees them: by the class's name (plotly, ...) and the config's
    IPKernelApp section (tqdm.auto).  A front end's session answers as
    ipykernel's shell, anything else as IPython's."""
    if _front_end:
        shell_class.__name__ = shell_class.__qualname__ = "ZMQInteractiveShell"
        shell_class.__module__ = "ipykernel.zmqshell"
        config.IPKernelApp.connection_file = ""  # the kernel's to know, as its parent header
    else:
        shell_class.__name__ = shell_class.__qualname__ = "InteractiveShell"


def _install_kernel_exit(shell):
    """exit and quit as ipykernel's (its ZMQExitAutocall): called, or alone
    on a line, they ask the front end to end (the reply's "ask_exit"
    payload; keep_kernel=True: the front end only) and the cell goes on."""
    import builtins

    from IPython.core.autocall import ExitAutocall

    class KernelExit(ExitAutocall):
        def __call__(self, keep_kernel=False):
            self._ip.payload_manager.write_payload({"source": "ask_exit",
                                                    "keepkernel": bool(keep_kernel)})

    builtins.exit = builtins.quit = shell.exiter = KernelExit(shell)


def serve_front_end():
    """The session faces a Jupyter front end (`cellexec kernel` says so as
    it opens one): from now on the shell is made as ipykernel's is seen
    from a cell.  False when the shell exists already and stays as it is."""
    global _front_end
    if _shell is not None:
        return False
    _front_end = True
    try:
        shell()  # now, as ipykernel's exists before the first cell
    except IPythonUnavailable:
        pass
    return True


def is_autocall(obj):
    """True for an object IPython calls when it stands alone on a line."""
    if _shell is None:
        return False
    from IPython.core.autocall import IPyAutocall

    return isinstance(obj, IPyAutocall)


def _kernel_magics():
    """The magics ipykernel's shell adds (its KernelMagics), so %lsmagic
    lists what a kernel lists and each does what it does in a kernel, or
    says plainly why it cannot here."""
    from IPython.core import page
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_magic, magics_class

    def no_kernel(what):
        print(f"{what}: cellexec runs this cell in one of its backends, not in a Jupyter "
              f"kernel a front end is connected to; there is no connection file and no "
              f"front end to ask")

    @magics_class
    class KernelMagics(Magics):
        @line_magic
        def clear(self, arg_s):
            """Clear the terminal."""
            self.shell.system("clear")

        @line_magic
        def less(self, arg_s):
            """Show a file through the pager (the reply's payload)."""
            if not arg_s:
                raise UsageError("Missing filename.")
            if arg_s.endswith(".py"):
                from IPython.utils import openpy

                text = self.shell.pycolorize(openpy.read_py_file(arg_s,
                                                                 skip_encoding_cookie=False))
            else:
                with open(arg_s) as stream:
                    text = stream.read()
            page.page(text)

        more = line_magic("more")(less)

        @line_magic
        def man(self, arg_s):
            """Find the man page for the given command and page it."""
            page.page(self.shell.getoutput("man %s | col -b" % arg_s, split=False))

        @line_magic
        def autosave(self, arg_s):
            """Set the notebook's autosave interval (in seconds; 0: off)."""
            try:
                interval = int(arg_s)
            except ValueError as exc:
                raise UsageError("%%autosave requires an integer, got %r" % arg_s) from exc
            from IPython.display import Javascript, display

            display(Javascript("IPython.notebook.set_autosave_interval(%i)" % (1000 * interval)),
                    include=["application/javascript"])
            print("Autosaving every %i seconds" % interval if interval else "Autosave disabled")

        @line_magic
        def edit(self, parameter_s="", last_call=None):
            """Open a file in the front end's editor: none here."""
            no_kernel("%edit")

        @line_magic
        def connect_info(self, arg_s):
            """Information for connecting other clients to this kernel: none here."""
            no_kernel("%connect_info")

        @line_magic
        def qtconsole(self, arg_s):
            """Open a qtconsole connected to this kernel: none here."""
            no_kernel("%qtconsole")

    return KernelMagics


def shell():
    """The process's InteractiveShell, created on first use.  Raises
    IPythonUnavailable when IPython is not installed or cannot start."""
    global _shell, _unavailable
    if _shell is not None:
        return _shell
    if _unavailable is not None:
        raise IPythonUnavailable(_unavailable)
    global _creating
    _creating = True  # importing IPython below must not start another
    try:
        _shell = _create_shell()
    except ImportError as exc:
        if sys.flags.no_site:
            _unavailable = (f"IPython cannot be imported by {sys.executable} in isolated mode "
                            f"(no site-packages: {exc}); turn the isolated option off")
        else:
            _unavailable = (f"IPython is not installed for {sys.executable} ({exc}); "
                            f"install it (Debian: apt install python3-ipython)")
    except Exception as exc:
        _unavailable = f"IPython cannot start in {sys.executable}: {type(exc).__name__}: {exc}"
    finally:
        _creating = False
    if _unavailable is not None:
        raise IPythonUnavailable(_unavailable)
    _native.shell_started()
    return _shell


def active_shell():
    """The shell if a cell made one already, else None; never imports."""
    return _shell


_importable = None


def available():
    """True when IPython can be imported (or is), without importing it."""
    global _importable
    if _shell is not None:
        return True
    if _unavailable is not None:
        return False
    if _importable is None:
        import importlib.util

        _importable = importlib.util.find_spec("IPython") is not None
    return _importable


def transform(source):
    """SOURCE as Python, with IPython's syntax (magics, `!`, `?`) turned into
    calls, as IPython's TransformerManager does."""
    return shell().input_transformer_manager.transform_cell(source)


def point_at(namespace):
    """Make NAMESPACE the shell's user namespace (its module's, for a cell's
    __main__)."""
    if _front_end:  # as ipykernel's shell puts them in its namespace
        for name in ("exit", "quit"):
            if namespace.setdefault(name, _shell.exiter) is _shell.exiter:
                _shell.user_ns_hidden[name] = _shell.exiter
    if _shell.user_ns is not namespace:
        # The cell's __main__ (cell.c), which %run, %prun and pickle use.
        main = sys.modules.get("__main__")
        if getattr(main, "__dict__", None) is namespace:
            _shell.user_module, _shell.user_ns = _shell.prepare_user_module(user_module=main)
        else:
            _shell.user_module, _shell.user_ns = _shell.prepare_user_module(user_ns=namespace)


def automagic(source, namespace):
    """SOURCE, a cell of one line, as IPython's prefilter makes it for
    NAMESPACE (automagic: `pwd` is %pwd unless something named pwd is
    defined; aliases: `ls -d /tmp`), as InteractiveShell.transform_cell
    does; None when it stays as it is.  Starts the shell."""
    the_shell = shell()
    point_at(namespace)
    try:
        with the_shell.builtin_trap:
            python = the_shell.prefilter_manager.prefilter_lines(source)
    except Exception:
        return None
    return python if python.strip() != source.strip() else None


class _CellNumbers(dict):
    """The shell's CachingCompiler._filename_map, which makes IPython's
    tracebacks call code of a cell's file name "Cell In [N]": N is what
    _errors.cell_number says, as a kernel's compiler records it for every
    cell it compiles (cells compiled before IPython was loaded included)."""

    def __contains__(self, filename):
        return dict.__contains__(self, filename) or _errors.cell_number(filename) is not None

    def __getitem__(self, filename):
        if dict.__contains__(self, filename):
            return dict.__getitem__(self, filename)
        number = _errors.cell_number(filename)
        if number is None:
            raise KeyError(filename)
        return number

    def get(self, filename, default=None):
        return self[filename] if filename in self else default


def number_syntax_error(filename, count):
    """Cell COUNT, of FILENAME, did not compile: its SyntaxError says "Cell
    In [COUNT]" too."""
    numbers = getattr(getattr(_shell, "compile", None), "_filename_map", None)
    if isinstance(numbers, _CellNumbers):
        if dict.__len__(numbers) > 1000:  # only cells that did not compile
            dict.clear(numbers)
        dict.__setitem__(numbers, filename, count)


def enter_cell(namespace, history, count):
    """Point the shell at NAMESPACE and HISTORY (helper.History) for cell
    number COUNT, about to run: magics such as %time, %who, %history and
    `!echo $x` read and write them."""
    if _shell is None:
        return
    point_at(namespace)
    manager = _shell.history_manager
    if history is not None:
        parsed, raw, outputs, dirs = history.parsed, history.raw, history.outputs, history.dirs
    else:
        # A stateless cell: helper._first_cell_input made In and Out.
        parsed, outputs = namespace["In"], namespace["Out"]
        raw = ["", namespace["_i1"]]
        dirs = namespace.setdefault("_dh", [os.getcwd()])
    manager.input_hist_parsed, manager.input_hist_raw = parsed, raw
    manager.output_hist, manager.dir_hist = outputs, dirs
    # Not the user's variables, for %who and %reset (IPython hides them too).
    _shell.user_ns_hidden.update(In=parsed, _ih=parsed, Out=outputs, _oh=outputs, _dh=dirs)
    _shell.execution_count = count
    # As InteractiveShell.run_cell does (finish_cell fires the events after).
    _running.info = _ExecutionInfo(raw[-1], store_history=True, silent=False, shell_futures=True,
                                  cell_id=None)
    _shell.events.trigger("pre_execute")
    _shell.events.trigger("pre_run_cell", _running.info)


def finish_cell(source, error):
    """After the cell (its value shown, ERROR the exception that ended it or
    None): IPython's post_execute and post_run_cell events, as after
    InteractiveShell.run_cell.  matplotlib's inline backend shows the
    figures the cell drew here.  Called only once the shell exists."""
    info = getattr(_running, "info", None)
    _running.info = None
    if info is None:  # the shell started during the cell
        info = _ExecutionInfo(source, store_history=True, silent=False, shell_futures=True,
                             cell_id=None)
    result = _ExecutionResult(info)
    result.error_in_exec = error
    _shell.events.trigger("post_execute")
    _shell.events.trigger("post_run_cell", result)


def show_usage_error(exc):
    """True when EXC, which ended a cell, is IPython's UsageError (a magic
    unknown or misused), which a kernel prints on stderr instead of showing
    an error output; printed here, while the cell's output is captured."""
    if _shell is None:
        return False
    from IPython.core.error import UsageError

    if not isinstance(exc, UsageError):
        return False
    _shell.show_usage_error(exc)
    return True


def formatted_traceback(exc):
    """IPython's traceback of EXC, which ended a cell, as a kernel sends it
    in an error output: a list of texts, in the shell's colours and
    %xmode; None before the shell exists, or when IPython fails to format
    it.  As InteractiveShell.showtraceback chooses: SystemExit shows only
    its message, a SyntaxError (or any error compiling the cell) IPython's
    SyntaxTB, anything else its InteractiveTB."""
    if _shell is None:
        return None
    etype = type(exc)
    try:
        if isinstance(exc, SystemExit):
            stb = ["An exception has occurred, use %tb to see the full traceback.\n"]
            stb.extend(_shell.InteractiveTB.get_exception_only(etype, exc))
        elif isinstance(exc, SyntaxError) and (etype is SyntaxError or exc.__traceback__ is None):
            import traceback

            stb = _shell.SyntaxTB.structured_traceback(etype, exc,
                                                       traceback.extract_tb(exc.__traceback__))
        else:
            stb = _shell.InteractiveTB.structured_traceback(etype, exc, exc.__traceback__,
                                                            tb_offset=0)
        return [_errors.utf8_safe(line) for line in stb]
    except Exception:
        return None


def take_payload():
    """What the cell paged (`len?`), as an execute_reply's payload list."""
    if _shell is None:
        return None
    payload = _shell.payload_manager.read_payload()
    if not payload:
        return None
    _shell.payload_manager.clear_payload()
    return payload


def format(obj, raising=False):
    """(data, metadata) of OBJ as IPython's DisplayFormatter makes them.  A
    formatter that raises is shown as an error output and left out of the
    bundle, as in ipykernel; with RAISING (what is not a cell's output),
    its exception is raised instead."""
    the_shell = shell()
    if not raising:
        return the_shell.display_formatter.format(obj)
    _formatting.value = True
    try:
        return the_shell.display_formatter.format(obj)
    finally:
        _formatting.value = False


# ---- Importing IPython -------------------------------------------------------

def _after_ipython(module):
    """IPython was imported: make the shell, so IPython.display.display()
    finds a shell to publish to instead of printing reprs."""
    try:
        shell()
    except IPythonUnavailable as exc:
        import warnings

        warnings.warn(f"cellexec: IPython's display functions will print: {exc}")


INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def _after_matplotlib(module):
    """matplotlib was imported by a cell: figures are shown inline, as in a
    kernel, whatever a matplotlibrc says (ipykernel sets MPLBACKEND to the
    inline backend when it is unset), unless MPLBACKEND chooses another or
    matplotlib-inline is not installed."""
    import os

    if os.environ.get("MPLBACKEND") or not _native.in_cell():
        return
    import importlib.util

    if importlib.util.find_spec("matplotlib_inline") is None:
        return
    try:
        module.rcParams["backend"] = INLINE_BACKEND
    except Exception:
        pass  # matplotlib chooses, as without cellexec


class _ImportWatcher:
    """Runs a function of this module right after a package is first
    imported (by a cell, or a module a cell imports): IPython (the shell)
    and matplotlib (its backend).  Asks nothing of any other import."""

    _after = {"IPython": _after_ipython, "matplotlib": _after_matplotlib}

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        after = self._after.get(fullname)
        if after is None or self._busy or _creating or fullname in sys.modules:
            return None
        if after is _after_ipython and _shell is not None:
            return None
        import importlib.util

        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _LoaderThen(spec.loader, after)
        return spec


class _LoaderThen:
    """The loader of a package, calling AFTER(module) once it is loaded."""

    def __init__(self, loader, after):
        self._loader = loader
        self._after_load = after

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after_load(module)


def get_ipython():
    """The InteractiveShell, as a kernel's builtin get_ipython() returns it
    (started on first use); None where IPython is not installed."""
    try:
        return shell()
    except IPythonUnavailable:
        return None


def install():
    """Once, when the interpreter starts."""
    import builtins

    builtins.get_ipython = get_ipython
    sys.meta_path.insert(0, _ImportWatcher())
