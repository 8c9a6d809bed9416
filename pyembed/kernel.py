"""get_ipython().kernel in cells, as ipykernel provides it.

Compiled into libcxpyembed as a string and loaded as module
_cellexec_kernel.  What code written against ipykernel reaches for --
kernel.session.send(kernel.iopub_socket, ...), kernel.comm_manager,
kernel.get_parent(), ipykernel.comm.Comm -- works on the running cell's
outputs:

  - display_data, update_display_data, execute_result (a display id in
    "transient" names them for later updates), stream, clear_output and
    error sent on IOPub become the cell's outputs, as the same messages of
    a kernel become a notebook's;
  - comm_open, comm_msg and comm_close go to the cell's output callback
    as they are (cx_result_pass_message), for cellexec's kernel to send
    on to its front end; they are no notebook output.

The kernel object is made the first time a cell needs it: through
get_ipython().kernel, or when a cell imports ipykernel.comm (a Comm finds
its kernel through Kernel.instance()).  ipykernel itself is imported only
then.  In a process where a real ipykernel runs (cellexec embedded in a
kernel), that kernel stays the instance.
"""

import sys
import _thread  # not threading: plain cells fork from a process without it

import _cellexec_native as _native

# What cells send their messages on: kernel.iopub_socket.
IOPUB = "iopub"

_kernel = None
_lock = _thread.RLock()
_making = False  # kernel() is importing ipykernel.comm itself


def _publish(msg_type, content):
    """CONTENT of MSG_TYPE, sent on IOPub by a cell, as its output."""
    import _cellexec_helper

    if msg_type in ("display_data", "update_display_data", "execute_result"):
        kind = {"display_data": "display", "update_display_data": "update"}.get(
            msg_type, "execute_result")
        display_id = (content.get("transient") or {}).get("display_id")
        data = _cellexec_helper.encode_bundle(content.get("data") or {})
        _native.publish_display(data, content.get("metadata") or {}, display_id, kind)
    elif msg_type == "stream":
        stream = sys.stderr if content.get("name") == "stderr" else sys.stdout
        stream.write(content.get("text", ""))
    elif msg_type == "clear_output":
        _native.clear_output(bool(content.get("wait", False)))
    elif msg_type == "error":
        _native.show_error(str(content.get("ename", "Error")), str(content.get("evalue", "")),
                           [str(line) for line in content.get("traceback", [])])
    elif msg_type in ("comm_open", "comm_msg", "comm_close"):
        _native.pass_message(msg_type, content)
    # status, execute_input and the like are the kernel's to send: a cell
    # that sends them changes nothing of its outputs.


def _make_kernel():
    from ipykernel.comm import CommManager
    from ipykernel.kernelbase import Kernel
    from jupyter_client.session import Session

    if Kernel.initialized():
        return Kernel.instance()

    class CellSession(Session):
        """Session.send() onto the running cell's outputs."""

        def send(self, stream, msg_or_type, content=None, parent=None, ident=None,
                 buffers=None, track=False, header=None, metadata=None):
            if isinstance(msg_or_type, dict):
                message = msg_or_type
            else:
                message = self.msg(msg_or_type, content=content, parent=parent, header=header,
                                   metadata=metadata)
            if stream is IOPUB:
                _publish(message["header"]["msg_type"], message.get("content") or {})
            return message

    class CellKernel(Kernel):
        implementation = "cellexec"
        implementation_version = ""
        banner = ""
        language_info = {"name": "python"}

        @property
        def shell(self):
            """IPython's shell, as IPythonKernel.shell (a Comm's handle_msg
            fires its pre_execute and post_execute events)."""
            import _cellexec_ipython

            try:
                return _cellexec_ipython.shell()
            except _cellexec_ipython.IPythonUnavailable:
                return None

    # What ipykernel logs (a comm to an unknown target, a handler that
    # raised) goes to the kernel's log; here, the one of the cell that
    # handled it, on stderr.
    import logging

    kernel = CellKernel.instance(session=CellSession(key=b""), iopub_socket=IOPUB,
                                 log=logging.getLogger("cellexec.kernel"))
    kernel.comm_manager = CommManager(parent=kernel, kernel=kernel)
    return kernel


def kernel():
    """The process's kernel object, made on first use."""
    global _kernel, _making
    with _lock:
        if _kernel is None:
            _making = True
            try:
                _kernel = _make_kernel()
            finally:
                _making = False
        return _kernel


def existing():
    """The kernel object if a cell made it, else None."""
    return _kernel


class _AfterIpykernelComm:
    """Makes the kernel object once ipykernel.comm is imported, so that a
    cell's Comm() finds it as ipykernel's own finds the kernel.  (A meta
    path finder and loader, by their methods.)"""

    NAME = "ipykernel.comm"

    def find_spec(self, fullname, path, target=None):
        if fullname != self.NAME:
            return None
        import importlib.util

        sys.meta_path.remove(self)  # once; and the real finders below find it
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def __getattr__(self, name):
        # The rest of the real loader's (get_source, is_package, ...), for
        # inspect and the like.
        if "_loader" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["_loader"], name)

    def exec_module(self, module):
        self._loader.exec_module(module)
        if _making:
            return  # kernel() imported it, and goes on to make the kernel
        sys.modules[self.NAME] = module
        try:
            kernel()
        except Exception as error:  # Comm() then finds no kernel, and says so
            import warnings

            warnings.warn(f"cellexec: no kernel object for ipykernel's Comm: {error}")


def install():
    if "ipykernel.comm" not in sys.modules:
        sys.meta_path.insert(0, _AfterIpykernelComm())
