"""cellexec kernel against Jupyter's own tests of kernels.

Run by tests/check_kernel.sh, with JUPYTER_PATH naming kernelspecs it made:
"cellexec" (the subprocess backend), "cellexec-sandbox" (the same with
isolation = sandbox), "cellexec-timeout" (the subprocess backend with a
1 s timeout a cell) and "python3" (ipykernel on the same Python).

- jupyter_kernel_test's KernelTests, with a sample for every test, against
  both cellexec kernels and ipykernel: ipykernel passing proves the
  samples.  A skipped test fails the run (a missing sample would skip).
  What cellexec does not serve yet is marked an expected failure on its
  kernels only, so that serving it turns the mark into a failure to remove.
- What a front end shows of a cell: its number, and why a crash or a
  timeout ended it; the shell cells see (its class and config, exit and
  quit asking the front end to end, and ending `jupyter console`), as
  ipykernel's; a NUL a cell writes, sent as ipykernel sends it.
- jupyter_client's KernelManager: interrupt, restart, a crashing cell,
  input() over stdin, comms both ways (and an ipywidgets slider), shutdown
  leaving no process behind, a kernel ending with its front end.
- A real Jupyter Server launching both kernels for cellexec's own jupyter
  backend in gateway mode: the sandbox holds.
- nbclient's own 12 test notebooks, on the kernel and through `cellexec
  notebook run` on three backends.
- The sandbox kernel hiding host files, `jupyter kernelspec list`, and
  bad command lines.
- A hostile front end: forged, unsigned and malformed messages, JSON
  nested too deep, a subscriber that never reads IOPub.
"""
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import jupyter_kernel_test
import zmq
from jupyter_client.manager import KernelManager, start_new_kernel

TIMEOUT = 60


class Samples:
    """What each of jupyter_kernel_test's tests runs."""

    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*1"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise ValueError('an error')"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
         "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
         "mime": "text/latex"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"


def cellexec_kernel_tests(name):
    return type("KernelTests_" + name.replace("-", "_"),
                (Samples, jupyter_kernel_test.KernelTests), {"kernel_name": name})


CellexecKernelTests = cellexec_kernel_tests("cellexec")
SandboxKernelTests = cellexec_kernel_tests("cellexec-sandbox")


def expected_failure(test):
    """TEST, as an expected failure, leaving the original unmarked."""
    def expected(self):
        return test(self)
    return unittest.expectedFailure(expected)


class IpykernelTests(Samples, jupyter_kernel_test.KernelTests):
    """The samples, proven on ipykernel."""
    kernel_name = "python3"
    # ipykernel answers a "range" of its current session with session 0,
    # not the number its "tail" gave, which the kit's range check expects;
    # its tail and search pass.
    test_history = expected_failure(jupyter_kernel_test.KernelTests.test_history)


def processes_with(marker):
    """Pids of the processes whose command line holds MARKER."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


class KernelManagerTests(unittest.TestCase):
    """jupyter_client's KernelManager driving the cellexec kernel."""

    def setUp(self):
        self.km, self.kc = start_new_kernel(kernel_name="cellexec", startup_timeout=TIMEOUT)

    def tearDown(self):
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=True)

    def run_cell(self, code):
        outputs = []
        reply = self.kc.execute_interactive(code, timeout=TIMEOUT,
                                            output_hook=lambda m: outputs.append(m))
        return reply["content"], outputs

    def stdout_of(self, outputs):
        return "".join(m["content"]["text"] for m in outputs
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    def test_interrupt_keeps_the_state(self):
        self.run_cell("kept = 42")
        self.kc.execute("import time; time.sleep(30)")
        time.sleep(1)
        start = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)["content"]
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "KeyboardInterrupt")
        self.assertLess(time.monotonic() - start, 20)  # a hang guard: the cell sleeps 30 s
        _, outputs = self.run_cell("print(kept)")
        self.assertEqual(self.stdout_of(outputs), "42\n")

    def test_code_with_a_nul_byte_fails_as_python_fails(self):
        # A backslash and a zero in a string literal.
        code = "open({!r}, 'w').close(); print('a\\0b' == 'a' + chr(0) + 'b')"
        try:
            compile(code.replace("\\0", "\0"), "<cell>", "exec")
        except Exception as e:  # this Python's own refusal
            expected = ("error", type(e).__name__, str(e))
        with tempfile.TemporaryDirectory() as directory:
            ran = os.path.join(directory, "ran")
            reply, outputs = self.run_cell(code.format(ran))  # the control: valid, and runs
            self.assertEqual(reply["status"], "ok")
            self.assertEqual(self.stdout_of(outputs), "True\n")
            os.unlink(ran)
            with_nul = code.format(ran).replace("\\0", "\0")
            reply, outputs = self.run_cell(with_nul)
            self.assertEqual((reply["status"], reply.get("ename"), reply.get("evalue")), expected)
            self.assertFalse(os.path.exists(ran))
            echoed = [m["content"]["code"] for m in outputs if m["msg_type"] == "execute_input"]
            self.assertEqual(echoed, [with_nul])
            errors = [m["content"]["evalue"] for m in outputs if m["msg_type"] == "error"]
            self.assertEqual(errors, [expected[2]])

    def test_a_comm_a_cell_opens_reaches_the_front_end(self):
        reply, outputs = self.run_cell(
            "from ipykernel.comm import Comm\n"
            "comm = Comm('cellexec-test-target', data={'id': 'foo'})\n"
            "comm.send(data={'id': 'bar'})\n"
            "comm.close()")
        self.assertEqual(reply["status"], "ok")
        comms = [(m["msg_type"], m["content"]) for m in outputs if m["msg_type"].startswith("comm_")]
        self.assertEqual([kind for kind, _ in comms], ["comm_open", "comm_msg", "comm_close"])
        opened, sent = comms[0][1], comms[1][1]
        self.assertEqual(opened["target_name"], "cellexec-test-target")
        self.assertEqual(opened["data"], {"id": "foo"})
        self.assertEqual(sent["data"], {"id": "bar"})
        self.assertEqual(len({content["comm_id"] for _, content in comms}), 1)

    def test_input_is_answered_over_stdin(self):
        asked = []

        def answer(message):
            asked.append(message["content"])
            self.kc.input("world" if not message["content"]["password"] else "secret")

        outputs = []
        reply = self.kc.execute_interactive(
            "print('before')\nname = input('name? ')\nimport getpass\n"
            "word = getpass.getpass('word? ')\nprint('hello', name, len(word))",
            timeout=TIMEOUT, allow_stdin=True, stdin_hook=answer, output_hook=outputs.append)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual([(a["prompt"], a["password"]) for a in asked],
                         [("name? ", False), ("word? ", True)])
        self.assertEqual(self.stdout_of(outputs), "before\nhello world 6\n")

    def test_input_without_allow_stdin_fails_at_once(self):
        self.kc.execute("input('name? ')", allow_stdin=False)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)["content"]
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "StdinNotImplementedError")

    def test_an_interrupt_ends_the_wait_for_input(self):
        self.run_cell("kept = 7")
        self.kc.execute("input('never answered? ')", allow_stdin=True)
        request = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertEqual(request["msg_type"], "input_request")
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)["content"]
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "KeyboardInterrupt")
        reply, outputs = self.run_cell("print(kept)")  # not stopped by that interrupt
        self.assertEqual(reply["status"], "ok")
        self.assertEqual(self.stdout_of(outputs), "7\n")

    def test_a_protocol_5_4_client_is_served(self):
        # A newer front end says 5.4 in its headers (and may send members
        # this kernel does not know): it is answered as a 5.3 one.
        request = self.kc.session.msg("execute_request", {
            "code": "print('from 5.4')", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True,
            "a_member_of_a_later_protocol": {"x": 1}})
        request["header"]["version"] = "5.4"
        self.kc.shell_channel.send(request)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], request["header"]["msg_id"])
        self.assertEqual(reply["content"]["status"], "ok")
        while True:
            message = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if message["msg_type"] == "stream":
                self.assertEqual(message["content"]["text"], "from 5.4\n")
                break

    def test_restart_forgets_the_state(self):
        self.run_cell("forgotten = 1")
        self.km.restart_kernel()
        self.kc.wait_for_ready(timeout=TIMEOUT)
        reply, _ = self.run_cell("forgotten")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "NameError")

    def test_a_crashing_cell_leaves_the_kernel_alive(self):
        reply, outputs = self.run_cell("import os; os._exit(3)")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "WorkerCrashed")
        errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertIn("fresh session", errors[0]["traceback"][-1])
        self.assertTrue(self.km.is_alive())
        reply, outputs = self.run_cell("print('after the crash')")
        self.assertEqual(reply["status"], "ok")
        self.assertEqual(self.stdout_of(outputs), "after the crash\n")

    def test_a_request_too_wide_to_read_is_dropped(self):
        """A request of two million JSON values, more than the kernel reads
        (json-glib holds each in up to 300 bytes; 60 MB of them aborted
        it), is dropped without a reply; the next request is served."""
        content = {"code": "print('wide')", "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True,
                   "padding": [[]] * 2_000_000}
        wide = self.kc.session.msg("execute_request", content)
        self.kc.shell_channel.send(wide)
        after = self.kc.execute("print('after')")
        parents = []
        while after not in parents:
            parents.append(self.kc.get_shell_msg(timeout=TIMEOUT)["parent_header"].get("msg_id"))
        self.assertNotIn(wide["header"]["msg_id"], parents)
        self.assertTrue(self.km.is_alive())

    def test_shutdown_leaves_no_process_behind(self):
        _, outputs = self.run_cell("import os; print(os.getpid(), os.getppid())")
        cell_pids = [int(pid) for pid in self.stdout_of(outputs).split()]
        kernel_pid = self.km.provisioner.process.pid
        self.kc.stop_channels()
        self.km.shutdown_kernel()
        self.assertFalse(self.km.is_alive())
        for pid in [kernel_pid] + cell_pids:  # the kernel, its worker and fork server
            self.assertFalse(os.path.exists(f"/proc/{pid}"), f"process {pid} is still there")


class SignalInterruptTests(KernelManagerTests):
    """The same, with interrupt_mode "signal": jupyter_client sends SIGINT
    to the kernel's process group, which the kernel's workers share."""

    def setUp(self):
        spec_dir = os.path.join(os.environ["JUPYTER_PATH"], "kernels")
        with open(os.path.join(spec_dir, "cellexec", "kernel.json")) as f:
            spec = json.load(f)
        spec["interrupt_mode"] = "signal"
        os.makedirs(os.path.join(spec_dir, "cellexec-signal"), exist_ok=True)
        with open(os.path.join(spec_dir, "cellexec-signal", "kernel.json"), "w") as f:
            json.dump(spec, f)
        self.km, self.kc = start_new_kernel(kernel_name="cellexec-signal",
                                            startup_timeout=TIMEOUT)

    def test_the_kernel_is_interrupted_by_a_signal(self):
        self.assertEqual(self.km.kernel_spec.interrupt_mode, "signal")
        self.test_interrupt_keeps_the_state()
        # The kernel, its fork server and the session's worker all had the
        # signal: every one of them still serves.
        _, outputs = self.run_cell("print('still here')")
        self.assertEqual(self.stdout_of(outputs), "still here\n")
        self.assertEqual(self.run_cell("import time; time.sleep(0.1); 'slept'")[0]["status"], "ok")


def cell_messages(kc, code, **options):
    """Run CODE: its execute_reply's content and [(msg_type, content)] of
    the IOPub messages it caused (statuses left out)."""
    outputs = []
    reply = kc.execute_interactive(code, timeout=TIMEOUT, output_hook=outputs.append, **options)
    return reply["content"], [(m["msg_type"], m["content"]) for m in outputs
                              if m["msg_type"] != "status"]


def seen_on(name, cells, view, **options):
    """[VIEW(code, reply, messages)] of each of CELLS run in turn on a new
    kernel NAME (cell_messages)."""
    km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
    try:
        return [view(code, *cell_messages(kc, code, **options)) for code in cells]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def open_comm_to_no_target(kc, comm_id):
    """What Notebook's widget extension sends at start: a comm_open to a
    target the kernel has not registered; waits until it is answered."""
    message = kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": "jupyter.widget",
                                           "data": {}})
    kc.shell_channel.send(message)
    messages_of(kc, message["header"]["msg_id"])


def numbers_of(reply, messages):
    """The execution counts a cell's execute_input, execute_result and
    execute_reply carry, in that order (None for one not sent)."""
    def count(kind):
        return next((content["execution_count"] for msg_type, content in messages
                     if msg_type == kind), None)
    return count("execute_input"), count("execute_result"), reply["execution_count"]


class FrontEndViewTests(unittest.TestCase):
    """What a front end shows of a cell, on cellexec as on ipykernel: the
    cell's number, and why a cell that took its session down ended."""

    def start(self, name):
        km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
        self.addCleanup(km.shutdown_kernel, now=True)
        self.addCleanup(kc.stop_channels)
        return kc

    def test_comms_to_no_target_take_no_number(self):
        # ipykernel's numbers: a failing cell after two comm_opens is 1 on
        # every message, the next 2.  A crash on cellexec is numbered the
        # same (ipykernel would die of one), and a fresh session starts at
        # 1 again, as a restarted ipykernel does.
        kc = self.start("python3")
        for comm_id in ("w1", "w2"):
            open_comm_to_no_target(kc, comm_id)
        self.assertEqual(numbers_of(*cell_messages(kc, "1/0")), (1, None, 1))
        open_comm_to_no_target(kc, "w3")
        self.assertEqual(numbers_of(*cell_messages(kc, "'next'")), (2, 2, 2))
        kc = self.start("cellexec")
        for comm_id in ("w1", "w2"):
            open_comm_to_no_target(kc, comm_id)
        self.assertEqual(numbers_of(*cell_messages(kc, "'first'")), (1, 1, 1))
        self.assertEqual(numbers_of(*cell_messages(kc, "import os; os.kill(os.getpid(), 11)")),
                         (2, None, 2))
        open_comm_to_no_target(kc, "w3")
        self.assertEqual(numbers_of(*cell_messages(kc, "'next'")), (1, 1, 1))

    def assert_error_shown_as_replied(self, reply, messages):
        """The error output is the reply's error, as ipykernel sends it."""
        errors = [content for msg_type, content in messages if msg_type == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0], {key: reply[key] for key in ("ename", "evalue", "traceback")})
        return errors[0]

    def test_a_crash_and_a_timeout_say_why_in_the_error(self):
        kc = self.start("python3")
        reply, messages = cell_messages(kc, "1/0")
        self.assert_error_shown_as_replied(reply, messages)
        kc = self.start("cellexec")
        reply, messages = cell_messages(kc, "import os; os.kill(os.getpid(), 11)")
        error = self.assert_error_shown_as_replied(reply, messages)
        self.assertEqual(error["ename"], "WorkerCrashed")
        shown = "\n".join(error["traceback"])
        self.assertIn("WorkerCrashed", shown)
        self.assertIn("killed by signal 11 (SIGSEGV)", shown)
        self.assertIn("fresh session", error["traceback"][-1])
        self.assertFalse([m for m in messages if m[0] == "stream"])  # all said in the error
        kc = self.start("cellexec-timeout")
        reply, messages = cell_messages(kc, "while True: pass")
        error = self.assert_error_shown_as_replied(reply, messages)
        self.assertEqual(error["ename"], "TimeoutError")
        self.assertIn("1 s timeout", "\n".join(error["traceback"]))
        self.assertIn("fresh session", error["traceback"][-1])


# What code asks to tell a notebook's kernel from a terminal: the shell's
# class, its config (tqdm.auto, plotly), IPython's own get_ipython(), and
# which tqdm tqdm.auto chooses.
SHELL_QUESTIONS = """\
import IPython, tqdm.auto, tqdm.notebook
shell = get_ipython()
print(type(shell).__name__, type(shell).__module__, 'IPKernelApp' in shell.config,
      IPython.get_ipython() is shell, issubclass(tqdm.auto.tqdm, tqdm.notebook.tqdm))
"""

# ipykernel's exit and quit, as jupyter console takes them: the reply's
# payload asks the front end to end.
EXITS = ["exit", "exit()", "quit()", "quit", "exit(keep_kernel=True)", "exit(); print('goes on')"]


class KernelShellTests(unittest.TestCase):
    """The shell a cell of the kernel sees answers as ipykernel's, and
    exit and quit ask the front end to end; a cell of `cellexec run` still
    says it is in no kernel."""

    @staticmethod
    def view(code, reply, messages):
        return (code, reply["status"], reply["payload"],
                [content.get("text") for kind, content in messages
                 if kind in ("stream", "execute_result")])

    def seen_by(self, name):
        return seen_on(name, [SHELL_QUESTIONS] + EXITS, self.view)

    def test_the_shell_and_exit_are_ipykernels(self):
        expected = self.seen_by("python3")
        self.assertEqual(expected[0][3], ["ZMQInteractiveShell ipykernel.zmqshell True True True\n"])
        self.assertEqual(expected[1][2], [{"source": "ask_exit", "keepkernel": False}])
        for name in ("cellexec", "cellexec-sandbox"):
            with self.subTest(kernel=name):
                self.assertEqual(self.seen_by(name), expected)

    def test_a_cell_of_cellexec_run_is_in_no_kernel(self):
        done = subprocess.run([CELLEXEC, "run", "-b", "subprocess", "-c", SHELL_QUESTIONS],
                              capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "InteractiveShell _cellexec_ipython False True False\n")
        done = subprocess.run([CELLEXEC, "run", "-b", "subprocess", "-c", "exit()"],
                              capture_output=True, text=True, timeout=TIMEOUT)
        self.assertIn("SystemExit", done.stderr)


class JupyterConsoleTests(unittest.TestCase):
    """jupyter console (Debian's, under pexpect) ends on exit, exit() and
    quit() with cellexec's kernel as with ipykernel."""

    def ends_console(self, kernel, line):
        """True when `jupyter console` on KERNEL ends once LINE is typed
        after a first cell; False when it prompts for another."""
        import pexpect
        child = pexpect.spawn(sys.executable, ["-m", "jupyter_console", "--kernel", kernel,
                                               "--simple-prompt"],
                              env=dict(os.environ, TERM="dumb"), timeout=TIMEOUT,
                              encoding="utf-8")
        try:
            child.expect(r"In \[1\]: ")
            # jupyter console subscribes to IOPub as it shows its first
            # prompt and waits for the first cell's idle status there: on
            # a loaded machine a cell sent at once can lose it (ZeroMQ's
            # late joiner) and the console waits for ever, with ipykernel
            # as with cellexec.  A person does not type that fast.
            time.sleep(1)
            child.sendline("x = 6 * 7")
            child.expect(r"In \[2\]: ")
            child.sendline(line)
            return child.expect([pexpect.EOF, r"In \[3\]: "]) == 0
        finally:
            child.close(force=True)

    def test_exit_ends_jupyter_console(self):
        lines = ["exit", "exit()", "quit()"]
        expected = [self.ends_console("python3", line) for line in lines]
        self.assertEqual(expected, [True] * len(lines))
        self.assertEqual([self.ends_console("cellexec", line) for line in lines], expected)


class NulTests(unittest.TestCase):
    """A NUL a cell writes reaches the front end as ipykernel sends it
    (\\u0000), not as U+FFFD."""

    CELLS = ["print('a\\0b')", "import sys; sys.stderr.write('c\\0d'); sys.stderr.flush()",
             "raise ValueError('e\\0f')"]

    @staticmethod
    def view(code, reply, messages):
        return ([(content["name"], content["text"]) for kind, content in messages
                 if kind == "stream"],
                [content["evalue"] for kind, content in messages if kind == "error"],
                reply.get("evalue"))

    def seen_by(self, name):
        return seen_on(name, self.CELLS, self.view, stop_on_error=False)

    def test_a_nul_is_sent_as_it_was_written(self):
        expected = self.seen_by("python3")
        self.assertEqual(expected[0][0], [("stdout", "a\0b\n")])
        self.assertEqual(self.seen_by("cellexec"), expected)


class StopOnErrorTests(unittest.TestCase):
    """A cell that fails with stop_on_error aborts the requests queued
    behind it, and only those, on cellexec as on ipykernel."""

    def test_requests_queued_behind_a_failure_are_aborted(self):
        for name in ("python3", "cellexec"):
            with self.subTest(kernel=name):
                km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
                try:
                    failing = kc.execute("import time; time.sleep(0.5); 1/0")
                    queued = kc.execute("print('queued behind')")
                    replies = {}
                    while len(replies) < 2:
                        reply = kc.get_shell_msg(timeout=TIMEOUT)
                        replies[reply["parent_header"]["msg_id"]] = reply["content"]["status"]
                    self.assertEqual(replies, {failing: "error", queued: "aborted"})
                    # Sent once the failure's reply is in: it runs.  ipykernel
                    # 6.17 goes on aborting until its event loop has run the
                    # callback that ends it (stop_on_error_timeout), a race
                    # its own tests live with: it gets a moment first.
                    if name == "python3":
                        time.sleep(0.5)
                    after = kc.execute_interactive("print('after')", timeout=TIMEOUT)
                    self.assertEqual(after["content"]["status"], "ok")
                finally:
                    kc.stop_channels()
                    km.shutdown_kernel(now=True)


def messages_of(kc, msg_id):
    """The IOPub messages whose parent is MSG_ID, up to its idle status:
    [(msg_type, content)]."""
    got = []
    while True:
        message = kc.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "status":
            if message["content"]["execution_state"] == "idle":
                return got
            continue
        got.append((message["msg_type"], message["content"]))


# A comm target whose handlers record what the front end sent, echo it, and
# print: what ipywidgets' handlers do.
ECHO_TARGET = """\
got = []
def opened(comm, msg):
    got.append(('open', msg['content']['data']))
    @comm.on_msg
    def handle(msg):
        got.append(('msg', msg['content']['data']))
        comm.send({'echo': msg['content']['data']})
        print('handled', msg['content']['data'])
    comm.on_close(lambda msg: got.append(('close', msg['content']['data'])))
get_ipython().kernel.comm_manager.register_target('cellexec-echo', opened)
"""


class FrontEndCommTests(unittest.TestCase):
    """comm_open, comm_msg, comm_close and comm_info_request from the front
    end reach the kernel's comm manager, on cellexec as on ipykernel."""

    def each_kernel(self, check):
        for name in ("python3", "cellexec"):
            with self.subTest(kernel=name):
                km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
                try:
                    check(kc)
                finally:
                    kc.stop_channels()
                    km.shutdown_kernel(now=True)

    def send(self, kc, msg_type, content):
        message = kc.session.msg(msg_type, content)
        kc.shell_channel.send(message)
        return message["header"]["msg_id"]

    def comms_listed(self, kc, target=None):
        msg_id = kc.comm_info(target)
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "ok")
        return reply["content"]["comms"]

    def test_front_end_messages_reach_the_handlers(self):
        def check(kc):
            reply = kc.execute_interactive(ECHO_TARGET, timeout=TIMEOUT,
                                           output_hook=lambda m: None)["content"]
            self.assertEqual(reply["status"], "ok")
            count = reply["execution_count"]
            self.assertEqual(self.comms_listed(kc), {})
            opened = self.send(kc, "comm_open", {"comm_id": "c1", "target_name": "cellexec-echo",
                                                 "data": {"hello": 1}})
            self.assertEqual(messages_of(kc, opened), [])
            self.assertEqual(self.comms_listed(kc), {"c1": {"target_name": "cellexec-echo"}})
            self.assertEqual(self.comms_listed(kc, "another-target"), {})
            sent = self.send(kc, "comm_msg", {"comm_id": "c1", "data": {"x": 2}})
            self.assertEqual(messages_of(kc, sent), [
                ("comm_msg", {"comm_id": "c1", "data": {"echo": {"x": 2}}}),
                ("stream", {"name": "stdout", "text": "handled {'x': 2}\n"}),
            ])
            closed = self.send(kc, "comm_close", {"comm_id": "c1", "data": {"bye": True}})
            self.assertEqual(messages_of(kc, closed), [])
            self.assertEqual(self.comms_listed(kc), {})
            # The handlers ran in the session's namespace, out of its history.
            stdout = []
            reply = kc.execute_interactive(
                "print(got, len(In))", timeout=TIMEOUT,
                output_hook=lambda m: stdout.append(m["content"].get("text", "")))["content"]
            self.assertEqual(reply["execution_count"], count + 1)
            self.assertEqual("".join(stdout),
                             f"[('open', {{'hello': 1}}), ('msg', {{'x': 2}}), "
                             f"('close', {{'bye': True}})] {count + 2}\n")
        self.each_kernel(check)

    def test_an_ipywidgets_slider_follows_the_front_end(self):
        # Debian's ipywidgets (6): its models open comms from the cell, and
        # a front end's state update reaches the slider and its observer.
        def check(kc):
            outputs = []
            reply = kc.execute_interactive(
                "import ipywidgets\nslider = ipywidgets.IntSlider(value=3)\nseen = []\n"
                "slider.observe(lambda change: seen.append(change['new']), 'value')\n"
                "display(slider)", timeout=TIMEOUT, output_hook=outputs.append)["content"]
            self.assertEqual(reply["status"], "ok")
            models = {m["content"]["data"].get("_model_name"): m["content"]["comm_id"]
                      for m in outputs if m["msg_type"] == "comm_open"}
            shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
            self.assertEqual(shown, [{"application/vnd.jupyter.widget-view+json":
                                      {"model_id": models["IntSliderModel"]}}])
            self.assertIn(models["IntSliderModel"], self.comms_listed(kc, "jupyter.widget"))
            moved = self.send(kc, "comm_msg", {"comm_id": models["IntSliderModel"],
                                              "data": {"method": "backbone",
                                                       "sync_data": {"value": 7}}})
            messages_of(kc, moved)
            stdout = []
            kc.execute_interactive(
                "print(slider.value, seen)", timeout=TIMEOUT,
                output_hook=lambda m: stdout.append(m["content"].get("text", "")))
            self.assertEqual("".join(stdout), "7 [7]\n")
        self.each_kernel(check)

    def test_a_comm_to_no_target_is_closed_again(self):
        def check(kc):
            opened = self.send(kc, "comm_open", {"comm_id": "c2", "target_name": "no-such-target",
                                                 "data": {}})
            got = [(kind, content["comm_id"]) for kind, content in messages_of(kc, opened)
                   if kind.startswith("comm_")]
            self.assertEqual(got, [("comm_close", "c2")])
            self.assertEqual(self.comms_listed(kc), {})
            reply = kc.execute_interactive("1", timeout=TIMEOUT,
                                           output_hook=lambda m: None)["content"]
            self.assertEqual(reply["execution_count"], 1)  # no cell was counted for it
        self.each_kernel(check)


class UserExpressionsTests(unittest.TestCase):
    """execute_request's user_expressions, on cellexec as on ipykernel."""

    def test_user_expressions_are_evaluated_after_a_cell_that_succeeded(self):
        for name in ("python3", "cellexec"):
            with self.subTest(kernel=name):
                km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
                try:
                    reply = kc.execute_interactive(
                        "zebra = 41", timeout=TIMEOUT,
                        user_expressions={"next": "zebra + 1", "bad": "1/0"})["content"]
                    values = reply["user_expressions"]
                    self.assertEqual(values["next"]["status"], "ok")
                    self.assertEqual(values["next"]["data"]["text/plain"], "42")
                    self.assertEqual(values["bad"]["status"], "error")
                    self.assertEqual(values["bad"]["ename"], "ZeroDivisionError")
                    # After a cell that failed, none are evaluated.
                    failed = kc.execute_interactive("1/0", timeout=TIMEOUT,
                                                    user_expressions={"next": "zebra"})
                    self.assertEqual(failed["content"]["status"], "error")
                    self.assertEqual(failed["content"]["user_expressions"], {})
                finally:
                    kc.stop_channels()
                    km.shutdown_kernel(now=True)


CELLEXEC = os.path.join(os.environ["CELLEXEC_BUILDDIR"], "tools", "cellexec")

# nbclient's own test notebooks (test_client.py's test_run_all_notebooks),
# with the outputs a real ipykernel gave stored in them.
NBCLIENT_NOTEBOOKS = [
    "Other Comms.ipynb", "Clear Output.ipynb", "Empty Cell.ipynb", "Factorials.ipynb",
    "HelloWorld.ipynb", "Inline Image.ipynb", "Skip Execution with Cell Tag.ipynb", "SVG.ipynb",
    "Unicode.ipynb", "UnicodePy3.ipynb", "update-display-id.ipynb",
    "Check History in Memory.ipynb",
]


class NbclientNotebookTests(unittest.TestCase):
    """nbclient's 12 notebooks, compared with nbclient's own normalisation
    (its tests' assert_notebooks_equal): executed by nbclient on the
    cellexec kernel, and by `cellexec notebook run` on local, subprocess
    and jupyter."""

    @classmethod
    def setUpClass(cls):
        from nbclient.tests import test_client
        cls.nbclient_tests = test_client
        cls.files = os.path.join(test_client.current_dir, "files")

    def test_nbclient_runs_its_notebooks_on_the_cellexec_kernel(self):
        tests = self.nbclient_tests
        for name in NBCLIENT_NOTEBOOKS:
            with self.subTest(notebook=name):
                expected, executed = tests.run_notebook(
                    os.path.join(self.files, name), {"kernel_name": "cellexec"},
                    tests.notebook_resources())
                tests.assert_notebooks_equal(expected, executed)

    def test_notebook_run_gives_what_nbclient_stored(self):
        import nbformat
        for backend in ("local", "subprocess", "jupyter"):
            for name in NBCLIENT_NOTEBOOKS:
                with self.subTest(backend=backend, notebook=name), \
                        tempfile.TemporaryDirectory() as directory:
                    source = os.path.join(self.files, name)
                    written = os.path.join(directory, "out.ipynb")
                    done = subprocess.run(
                        [CELLEXEC, "notebook", "run", source, "-o", written, "-b", backend, "-q"],
                        capture_output=True, text=True, cwd=self.files, timeout=TIMEOUT)
                    self.assertEqual(done.returncode, 0, done.stderr)
                    self.nbclient_tests.assert_notebooks_equal(nbformat.read(source, 4),
                                                               nbformat.read(written, 4))


class GatewayTests(unittest.TestCase):
    """A real Jupyter Server launches the cellexec-sandbox kernel; cellexec's
    own jupyter backend drives it in gateway mode, and the sandbox holds."""

    def setUp(self):
        import socket
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.token = "kernel-test-token"
        self.root = tempfile.mkdtemp(prefix="cellexec-server-")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--ip=127.0.0.1", f"--port={self.port}",
             f"--ServerApp.token={self.token}", "--no-browser", "--allow-root",
             "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.fail("jupyter_server did not start")

    def tearDown(self):
        self.server.terminate()
        self.server.wait(timeout=TIMEOUT)
        shutil.rmtree(self.root, ignore_errors=True)

    def run_through_gateway(self, kernel, code):
        done = subprocess.run(
            [CELLEXEC, "run", "-b", "jupyter", "-o", f"gateway-url=http://127.0.0.1:{self.port}",
             "-o", f"token={self.token}", "-o", f"kernel={kernel}", "-c", code],
            capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_the_sandbox_holds_behind_a_jupyter_server(self):
        with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
            secret = os.path.join(directory, "secret")
            with open(secret, "w") as f:
                f.write("the host's secret")
            code = f"import os\nprint(os.path.exists({secret!r}))"
            self.assertEqual(self.run_through_gateway("cellexec", code), "True\n")  # the probe works
            self.assertEqual(self.run_through_gateway("cellexec-sandbox", code), "False\n")


class OrphanTests(unittest.TestCase):
    """A kernel whose front end died without shutting it down ends, with
    its workers, as ipykernel's parent poller makes it."""

    def test_the_kernel_ends_with_its_front_end(self):
        front_end = ("import os\n"
                     "from jupyter_client.manager import start_new_kernel\n"
                     "km, kc = start_new_kernel(kernel_name='cellexec', startup_timeout=60)\n"
                     "reply = kc.execute_interactive('import os; print(os.getppid())', timeout=60,\n"
                     "    output_hook=lambda m: print(m['content'].get('text', ''), end=''))\n"
                     "print(km.provisioner.process.pid, flush=True)\n"
                     "os._exit(0)\n")
        done = subprocess.run([sys.executable, "-c", front_end], capture_output=True, text=True,
                              timeout=TIMEOUT, check=True)
        pids = [int(p) for p in done.stdout.split()]  # the fork server, the kernel
        self.assertEqual(len(pids), 2, done.stdout)
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in pids:
            self.assertFalse(os.path.exists(f"/proc/{pid}"), f"process {pid} outlived its front end")


class KernelWithStderr(unittest.TestCase):
    """A kernel of KERNEL_NAME, its stderr kept, and a client of it."""

    kernel_name = "cellexec"

    def setUp(self):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.km = KernelManager(kernel_name=self.kernel_name)
        self.km.start_kernel(stderr=self.stderr)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=TIMEOUT)

    def tearDown(self):
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=True)
        self.stderr.close()

    def frames(self, msg_type, content_bytes, key=None):
        """A message's frames, signed with KEY (the session's by default)."""
        session = self.kc.session
        header = session.pack(session.msg_header(msg_type))
        parts = [header, b"{}", b"{}", content_bytes]
        auth = session.auth if key is None else hmac.new(key, digestmod=hashlib.sha256)
        signature = b""
        if auth is not None:
            h = auth.copy()
            for part in parts:
                h.update(part)
            signature = h.hexdigest().encode()
        return [b"<IDS|MSG>", signature, *parts]

    def still_answers(self):
        reply = self.kc.execute_interactive("print('still here')", timeout=TIMEOUT,
                                            output_hook=lambda m: None)
        self.assertEqual(reply["content"]["status"], "ok")

    def no_reply_within(self, seconds):
        with self.assertRaises(Exception):  # queue.Empty
            self.kc.get_shell_msg(timeout=seconds)

    def said(self):
        self.stderr.seek(0)
        return self.stderr.read()


class HostileFrontEndTests(KernelWithStderr):
    """What a front end sends cannot stop the kernel: a forged or unsigned
    message, frames that are no message, JSON nested deeper than any
    parser's stack, and a front end that never reads IOPub.  Dropped
    messages are counted on the kernel's stderr."""

    def test_forged_and_malformed_messages_are_dropped_and_counted(self):
        shell = self.kc.shell_channel.socket
        shell.send_multipart(self.frames("execute_request",
                                         b'{"code": "open(\'/tmp/forged\', \'w\')"}',
                                         key=b"not the key"))
        shell.send_multipart(self.frames("kernel_info_request", b"{}")[:1] + [b""] +
                             self.frames("kernel_info_request", b"{}")[2:])  # unsigned
        shell.send_multipart([b"<IDS|MSG>", b"too", b"few"])
        shell.send_multipart([b"no delimiter at all"])
        body = b"{not json"
        shell.send_multipart(self.frames("kernel_info_request", body))
        self.no_reply_within(2)
        self.still_answers()
        said = self.said()
        self.assertIn("was dropped", said)
        self.assertIn("5 so far", said)

    def test_json_nested_too_deep_is_refused_not_a_crash(self):
        deep = b'{"code": ' + b"[" * 200000 + b"]" * 200000 + b"}"
        self.kc.shell_channel.socket.send_multipart(self.frames("execute_request", deep))
        self.no_reply_within(2)
        self.still_answers()
        self.assertIn("was dropped", self.said())

    def test_a_front_end_that_never_reads_iopub_does_not_block_the_kernel(self):
        # A second subscriber that never reads: ZeroMQ drops what it cannot
        # queue for it, and the kernel goes on.
        lazy = zmq.Context.instance().socket(zmq.SUB)
        lazy.setsockopt(zmq.SUBSCRIBE, b"")
        lazy.setsockopt(zmq.RCVHWM, 10)
        lazy.connect(f"tcp://{self.km.ip}:{self.km.iopub_port}")
        try:
            time.sleep(0.5)
            reply = self.kc.execute_interactive(
                "for i in range(200000): print(i)", timeout=TIMEOUT, output_hook=lambda m: None)
            self.assertEqual(reply["content"]["status"], "ok")
            self.still_answers()
        finally:
            lazy.close(linger=0)


# The address space of the kernel UnauthenticatedPeerTests run: what
# killed it before its bounds, with the 640 MB that ZeroMQ itself holds
# of a message of ten million empty frames before its first is read.
CAPPED_AS = 1536 * 1024 * 1024


def zmtp_frames(sizes, data=b""):
    """ZMTP 3.0 frames of SIZES bytes (DATA, or as much of it as given),
    each but the last with MORE."""
    out = bytearray()
    for i, size in enumerate(sizes):
        more = 1 if i + 1 < len(sizes) else 0
        out += bytes([more, size]) if size < 256 else bytes([2 | more]) + size.to_bytes(8, "big")
        out += data[:size]
    return bytes(out)


class RawPeer:
    """A DEALER without the key, on a raw TCP socket speaking ZMTP 3.0, so
    that what it sends costs this process nothing: no libzmq of its own
    holds a message whole before sending it."""

    def __init__(self, port):
        import socket
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        greeting = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0")
        self.socket.sendall(greeting + b"\0" * 32)
        self.read(64)  # the kernel's greeting
        ready = b"\x05READY\x0bSocket-Type" + (6).to_bytes(4, "big") + b"DEALER"
        self.socket.sendall(bytes([4, len(ready)]) + ready)
        self.read(self.read(2)[1])  # the kernel's READY (a short command)

    def read(self, n):
        data = b""
        while len(data) < n:
            more = self.socket.recv(n - len(data))
            if not more:
                raise ConnectionError("the kernel closed the connection in the handshake")
            data += more
        return data

    def send(self, data):
        """FALSE once the kernel closed the connection, as a bound does."""
        try:
            self.socket.sendall(data)
            return True
        except OSError:
            return False

    def close(self):
        self.socket.close()


class UnauthenticatedPeerTests(KernelWithStderr):
    """A peer without the key cannot make the kernel hold what it sends:
    the kernel, under an address-space cap, survives ten million empty
    frames and a frame of 700 MB, and answers its real client after."""

    kernel_name = "cellexec-capped"

    @classmethod
    def setUpClass(cls):
        spec = os.path.join(os.environ["JUPYTER_PATH"], "kernels", cls.kernel_name)
        os.makedirs(spec, exist_ok=True)
        with open(os.path.join(spec, "kernel.json"), "w") as f:
            json.dump({"argv": ["prlimit", f"--as={CAPPED_AS}", CELLEXEC, "kernel",
                                "-f", "{connection_file}", "-b", "subprocess"],
                       "display_name": "cellexec under a cap", "language": "python"}, f)

    def wait_until_said(self, text):
        for _ in range(TIMEOUT * 10):
            if text in self.said() or not self.km.is_alive():
                break
            time.sleep(0.1)
        self.assertIn(text, self.said())

    def test_an_unsigned_message_of_the_raw_peer_reaches_the_kernel(self):
        # The probe works: what the raw peer sends is read, and dropped.
        peer = RawPeer(self.km.shell_port)
        peer.send(zmtp_frames([9, 0, 2, 2, 2, 2], b"<IDS|MSG>"))
        self.wait_until_said("bad signature")
        peer.close()
        self.still_answers()

    def flood(self, port, until_said):
        """Ten million empty frames as one message on PORT, until the kernel
        says UNTIL_SAID (or is gone)."""
        peer = RawPeer(port)
        for _ in range(10):
            peer.send(b"\x01\x00" * 1000000)
        peer.send(b"\x00\x00")
        self.wait_until_said(until_said)
        peer.close()

    def test_ten_million_empty_frames_are_dropped_as_they_come(self):
        self.flood(self.km.shell_port, "over --max-frames")
        self.assertTrue(self.km.is_alive())
        self.still_answers()

    def heartbeat_answers(self):
        ping = zmq.Context.instance().socket(zmq.REQ)
        ping.connect(f"tcp://127.0.0.1:{self.km.hb_port}")
        try:
            ping.send(b"ping")
            self.assertTrue(ping.poll(TIMEOUT * 1000), "no heartbeat")
            self.assertEqual(ping.recv(), b"ping")
        finally:
            ping.close(linger=0)

    def test_ten_million_empty_frames_on_the_heartbeat_are_dropped(self):
        self.heartbeat_answers()  # the probe works
        self.flood(self.km.hb_port, "a message on hb was dropped")
        self.heartbeat_answers()
        self.still_answers()

    def test_a_frame_of_700_mb_closes_its_connection(self):
        peer = RawPeer(self.km.shell_port)
        peer.send(zmtp_frames([700 << 20]))
        chunk = b"x" * (1 << 20)
        for _ in range(700):
            if not peer.send(chunk):
                break
        peer.close()
        self.still_answers()
        self.assertTrue(self.km.is_alive())

    def test_a_cell_of_20_mb_is_within_the_bounds(self):
        printed = []
        reply = self.kc.execute_interactive(f"print(len('{'x' * 20000000}'))", timeout=TIMEOUT,
                                            output_hook=printed.append)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertIn("20000000\n", [m["content"].get("text") for m in printed])


class CommandLineTests(unittest.TestCase):
    """Bad input to `cellexec kernel`: one line on stderr, exit 2, nothing served."""

    def kernel(self, *args):
        return subprocess.run([CELLEXEC, "kernel", *args], capture_output=True, text=True,
                              timeout=TIMEOUT)

    def assert_one_line_error(self, done, *words):
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        for word in words:
            self.assertIn(word, done.stderr)

    def test_a_missing_connection_file(self):
        self.assert_one_line_error(self.kernel("-b", "fake", "-f", "/nonexistent/kernel.json"),
                                   "/nonexistent/kernel.json")

    def test_no_connection_file(self):
        self.assert_one_line_error(self.kernel("-b", "fake"), "-f FILE")

    def test_a_bad_signature_scheme(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                       "hb_port": 5, "ip": "127.0.0.1", "key": "k",
                       "signature_scheme": "hmac-md5"}, f)
            f.flush()
            self.assert_one_line_error(self.kernel("-b", "fake", "-f", f.name), "hmac-md5",
                                       "hmac-sha256")

    def test_a_port_in_use(self):
        import socket
        with socket.socket() as taken, tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            json.dump({"shell_port": port, "iopub_port": 0, "stdin_port": 0, "control_port": 0,
                       "hb_port": 0, "ip": "127.0.0.1", "key": "k"}, f)
            f.flush()
            self.assert_one_line_error(self.kernel("-b", "fake", "-f", f.name), str(port),
                                       "shell")

    def test_install_options_need_install(self):
        self.assert_one_line_error(self.kernel("--user", "-f", "x.json"), "install")

    def test_bad_bounds(self):
        self.assert_one_line_error(self.kernel("-b", "fake", "-f", "x.json", "--max-frames", "6"),
                                   "--max-frames", "7")
        self.assert_one_line_error(self.kernel("-b", "fake", "-f", "x.json", "--max-message", "9x"),
                                   "--max-message", "512K")

    def test_install_keeps_the_bounds_given(self):
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run([CELLEXEC, "kernel", "install", "--prefix", prefix, "--name", "big",
                            "--max-message", "1G", "--max-frames", "4096"],
                           capture_output=True, timeout=TIMEOUT, check=True)
            with open(os.path.join(prefix, "share", "jupyter", "kernels", "big",
                                   "kernel.json")) as f:
                argv = json.load(f)["argv"]
            self.assertEqual(argv[-4:], ["--max-message", "1G", "--max-frames", "4096"])

    def test_install_writes_a_spec_others_cannot_change_under_umask_000(self):
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run([CELLEXEC, "kernel", "install", "--prefix", prefix, "--name", "open"],
                           capture_output=True, timeout=TIMEOUT, check=True, umask=0)
            spec_dir = os.path.join(prefix, "share", "jupyter", "kernels", "open")
            self.assertEqual(os.stat(spec_dir).st_mode & 0o777, 0o755)
            self.assertEqual(os.stat(os.path.join(spec_dir, "kernel.json")).st_mode & 0o777,
                             0o644)


class KernelspecTests(unittest.TestCase):
    """`cellexec kernel install --prefix` writes what Jupyter lists."""

    def test_jupyter_kernelspec_list_lists_both(self):
        listed = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                                capture_output=True, text=True, check=True)
        specs = json.loads(listed.stdout)["kernelspecs"]
        for name in ("cellexec", "cellexec-sandbox"):
            spec = specs[name]["spec"]
            self.assertEqual(spec["language"], "python")
            self.assertEqual(spec["interrupt_mode"], "message")
            self.assertEqual(spec["argv"][1:4], ["kernel", "-f", "{connection_file}"])
        self.assertEqual(specs["cellexec-sandbox"]["spec"]["display_name"],
                         "Python (cellexec sandbox)")
        self.assertIn("isolation=sandbox", specs["cellexec-sandbox"]["spec"]["argv"])


class SandboxTests(unittest.TestCase):
    """The sandbox kernel keeps the host's files out of sight."""

    def read_in(self, kernel_name, path):
        """What a cell of KERNEL_NAME reads in PATH, or "denied"."""
        km, kc = start_new_kernel(kernel_name=kernel_name, startup_timeout=TIMEOUT)
        try:
            outputs = []
            code = (f"try:\n    print(open({path!r}).read(), end='')\n"
                    f"except OSError:\n    print('denied', end='')")
            kc.execute_interactive(code, timeout=TIMEOUT, output_hook=outputs.append)
            return "".join(m["content"].get("text", "") for m in outputs
                           if m["msg_type"] == "stream")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

    def test_host_files_are_out_of_sight_in_the_sandbox(self):
        # A file of the host outside the sandbox's view (/var/tmp is not in it).
        with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
            secret = os.path.join(directory, "secret")
            with open(secret, "w") as f:
                f.write("the host's secret")
            self.assertEqual(self.read_in("cellexec", secret), "the host's secret")  # the probe works
            self.assertEqual(self.read_in("cellexec-sandbox", secret), "denied")
        if os.geteuid() == 0:  # only root reads it without the sandbox
            self.assertIn("root:", self.read_in("cellexec", "/etc/shadow"))
            self.assertNotIn("root:", self.read_in("cellexec-sandbox", "/etc/shadow"))


def descendants_of(pid):
    """Pids of the processes under PID (its children, theirs, ...)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in found]
        found += children
        todo += children
    return found


def running(pid):
    """Whether PID is a process that is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class SigtermTests(unittest.TestCase):
    """SIGTERM with a cell running that ignores its interrupt, and no
    timeout: the kernel ends within its bound (5 s; on the subprocess
    backend the cell is killed after interrupt-grace, 1 s), its workers
    with it.  On the local backend the cell cannot be killed: the kernel
    exits at its bound, 143."""

    STUBBORN = ("import signal, time\n"
                "try:\n"
                "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "except ValueError:\n"
                "    pass  # not the main thread (the local backend's cells)\n"
                "print('stubborn', flush=True)\n"
                "while True:\n"
                "    try:\n"
                "        time.sleep(0.1)\n"
                "    except KeyboardInterrupt:\n"
                "        pass\n")

    def local_spec(self):
        spec_dir = os.path.join(os.environ["JUPYTER_PATH"], "kernels")
        with open(os.path.join(spec_dir, "cellexec", "kernel.json")) as f:
            spec = json.load(f)
        spec["argv"] = ["local" if arg == "subprocess" else arg for arg in spec["argv"]]
        os.makedirs(os.path.join(spec_dir, "cellexec-local"), exist_ok=True)
        with open(os.path.join(spec_dir, "cellexec-local", "kernel.json"), "w") as f:
            json.dump(spec, f)

    def test_sigterm_ends_a_kernel_whose_cell_ignores_its_interrupt(self):
        self.local_spec()
        for name, status in (("cellexec", 0), ("cellexec-sandbox", 0), ("cellexec-local", 143)):
            with self.subTest(kernel=name):
                km, kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)
                try:
                    process = km.provisioner.process
                    kc.execute(self.STUBBORN)
                    deadline = time.monotonic() + TIMEOUT
                    started = False
                    while not started and time.monotonic() < deadline:
                        message = kc.get_iopub_msg(timeout=TIMEOUT)
                        started = "stubborn" in message["content"].get("text", "")
                    self.assertTrue(started)
                    workers = descendants_of(process.pid)
                    process.send_signal(signal.SIGTERM)
                    try:  # generous: the bound is 5 s
                        code = process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        self.fail(f"{name} still runs 30 s after SIGTERM")
                    self.assertEqual(code, status)
                    deadline = time.monotonic() + 30
                    while any(running(p) for p in workers) and time.monotonic() < deadline:
                        time.sleep(0.1)
                    self.assertEqual([p for p in workers if running(p)], [])
                finally:
                    kc.stop_channels()
                    if km.is_alive():
                        km.shutdown_kernel(now=True)


class FailOnSkip(unittest.TextTestResult):
    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.addFailure(test, (AssertionError, AssertionError("skipped: " + reason), None))


if __name__ == "__main__":
    runner = unittest.TextTestRunner(resultclass=FailOnSkip, verbosity=2, stream=sys.stdout)
    program = unittest.main(testRunner=runner, exit=False)
    result = program.result
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    not_yet = len(result.expectedFailures)
    print(f"test_kernel: {result.testsRun - failed - not_yet} passed, {failed} failed, "
          f"{not_yet} expected to fail (ipykernel's own)")
    sys.exit(0 if result.wasSuccessful() else 1)
