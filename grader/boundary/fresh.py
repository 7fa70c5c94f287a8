"""Fresh processes without a fresh interpreter: a template forked before any student code runs.

Some checks need a *fresh* process (the checkpointing suite resumes training "in a new
process", so nothing the student kept in memory can help).  Starting a new interpreter costs
seconds (torch's import alone is most of it).  Instead, a process that has imported torch, the
tripwire and the probes, and has *not yet imported any submission module*, forks a template
(`start()`).  Each `run()` asks the template to fork once more: the grandchild imports the
submission's modules itself, runs one probe, writes its reply to a file and exits.  What the
grandchild sees is what a new interpreter would see -- torch imported, the generators in their
default state, no submission module loaded -- minus the start-up time.

Where it runs:
* the sandbox worker (`grader.sandbox.worker`) starts the template after its trusted imports and before
  its first "import" request, so the grandchildren carry every sandbox layer (they are forked
  from a locked-down process: uid, seccomp, Landlock, rlimits, namespaces) and are killed with
  the sandbox;
* the in-process backend (pytest, `grader check`) starts it in `pytest_configure`, before any
  test imports the implementation.

Nothing a fresh run starts outlives it: the template is a child subreaper (a process whose
parent ends is re-parented to it, not to init), so after each run every process the run left --
a grandchild that double-forked and called setsid() included -- is below the template, which
kills and reaps them all (`grader.boundary.process_tree.end_descendants`) before it answers.  Inside
a Landlock sandbox, where /proc does not show those processes, the template takes a Landlock
domain of its own and each run one nested in it (`start(confine=...)`): with Landlock's scopes
``kill(-1)`` from the template then reaches exactly the runs' processes.  Where it can neither
(Landlock without scopes) it says so and exits: its orphans go to the worker, which reports
them, and the grader ends the sandbox after that call.

Nothing a run starts reaches the next probe call either: student code shares the worker's process
and can write requests to the template itself, so after every call the worker asks the template
whether it is idle (`settle`: a ping it answers only between runs); one still busy with a run nobody
waits for is killed, and its processes, re-parented to the worker, make the grader end the sandbox.

`serve_fresh` (below) uses the template when this process has one and otherwise starts a
new interpreter (`python -m grader.boundary.serving`), so both ways are always available.  The template
is not for student code to talk to: it only runs named probes (`grader.boundary.serving.find_probe`) on
JSON keyword arguments, and a submission that reaches it can only ask for another fresh run
of its own code.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import struct
import time
from collections.abc import Callable
from typing import Any

_TEMPLATE: "Template | None" = None
_MAX_MESSAGE = 1 << 20
#: How long the template's trusted start-up (the probes' imports) may take before a run or a ping.
READY_SECONDS = 120.0


def _send(fd: int, obj: Any) -> None:
    data = json.dumps(obj).encode()
    os.write(fd, struct.pack("<I", len(data)) + data)


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    buf = b""
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no answer from the fresh-process template")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("the fresh-process template is gone")
        buf += chunk
    return buf


def _recv(fd: int, deadline: float | None = None) -> Any:
    (size,) = struct.unpack("<I", _read_exact(fd, 4, deadline))
    if size > _MAX_MESSAGE:
        raise EOFError("an oversized message from the fresh-process template")
    return json.loads(_read_exact(fd, size, deadline))


class Template:
    """The parent's handle on the template process (a child of this process)."""

    def __init__(self, pid: int, req_w: int, rep_r: int):
        self.pid, self.req_w, self.rep_r = pid, req_w, rep_r
        self.owner = os.getpid()
        self.ready = False

    def _await_ready(self, timeout: float = READY_SECONDS) -> None:
        """The template's first message says its trusted imports are done (before it reads a request)."""
        if not self.ready:
            _recv(self.rep_r, time.monotonic() + timeout)
            self.ready = True

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def run(self, folder: str, name: str, kwargs: dict[str, Any], reply_path: str, timeout: float) -> int | None:
        """Run probe `name` in a fresh grandchild; its reply is written to `reply_path`.  Returns the
        grandchild's exit status (negative: killed by that signal; None: it timed out and was killed)."""
        self._await_ready()
        deadline = time.monotonic() + timeout
        _send(self.req_w, {"folder": folder, "name": name, "kwargs": kwargs, "reply": reply_path})
        started = _recv(self.rep_r, deadline)
        pid = int(started["pid"])
        try:
            done = _recv(self.rep_r, deadline)
            rc: int | None = int(done["rc"])
        except TimeoutError:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            done = _recv(self.rep_r, time.monotonic() + 10)  # the template reaps it and says so
            rc = None
        if done.get("left"):  # it could not end what the run left, and exits: they become our children
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        return rc

    def settle(self, timeout: float = 2.0) -> bool:
        """True when the template is idle now, with nothing of an earlier run left; else kill it.

        Called by the sandbox worker after every probe call: student code shares the worker's
        process, so it can write requests to the template itself.  A run it asked for, still
        running, or its replies, would reach into the next call: a ping answered in order proves
        the template idle (replies before the pong are drained); no pong in `timeout` means it waits
        on such a run, and it is killed (what it started is then re-parented to the worker, which
        reports it, and the grader ends the sandbox after this call)."""
        nonce = secrets.token_hex(8)
        try:
            self._await_ready()  # (its start-up is trusted and may take longer than `timeout`)
            deadline = time.monotonic() + timeout
            _send(self.req_w, {"ping": nonce})
            while _recv(self.rep_r, deadline).get("pong") != nonce:
                pass  # a reply to a run nobody waits for
            return True
        except (TimeoutError, EOFError, OSError, ValueError, struct.error, AttributeError):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return False

    def close(self) -> None:
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)  # it exits at the end of its request pipe
        except ChildProcessError:
            pass


def start(confine: Callable[[], None] | None = None) -> Template | None:
    """Fork the template now; None (no template) once a submission module is imported here.
    Call it where this process runs no other threads of its own.  `confine`: makes the calling
    process a Landlock domain of its own, with scopes (the template, then each run, call it)."""
    global _TEMPLATE
    import sys

    if not hasattr(os, "fork"):
        return None  # (Windows) fresh runs start interpreters
    if any(m.startswith("_kit_target_") and "." in m for m in sys.modules):  # grader.boundary.target's names
        return None  # too late: a submission module is loaded here (fresh runs start interpreters)
    if _TEMPLATE is not None and _TEMPLATE.owner == os.getpid() and _TEMPLATE.alive():
        return _TEMPLATE
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # e.g. the sandbox's process limit: fresh runs start interpreters (or fail as data)
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)
        return None
    if pid == 0:  # the template
        code = 1
        try:
            _close_other_fds(keep={0, 1, 2, req_r, rep_w})  # not the worker's channel, not pytest's files
            code = _template_loop(req_r, rep_w, confine)
        finally:
            os._exit(code)
    os.close(req_r)
    os.close(rep_w)
    _TEMPLATE = Template(pid, req_w, rep_r)
    return _TEMPLATE


def current() -> Template | None:
    """This process's template, if it started one and it still runs (a forked copy of this
    process has none; a template that died is replaced by new interpreters)."""
    if _TEMPLATE is None or _TEMPLATE.owner != os.getpid() or not _TEMPLATE.alive():
        return None
    return _TEMPLATE


def settle() -> bool:
    """After a probe call: this process's template idle, or killed and forgotten (`Template.settle`);
    True when there was none or it was idle."""
    global _TEMPLATE
    template = current()
    if template is None or template.settle():
        return True
    _TEMPLATE = None  # later fresh runs start interpreters
    return False


def _close_other_fds(keep: set[int]) -> None:
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def stop() -> None:
    global _TEMPLATE
    if _TEMPLATE is not None and _TEMPLATE.owner == os.getpid():
        _TEMPLATE.close()
    _TEMPLATE = None


def _template_loop(req_r: int, rep_w: int, confine: Callable[[], None] | None = None) -> int:
    """Serve fork requests until the request pipe closes.  Never imports a submission."""
    global _TEMPLATE
    from grader.boundary.process_tree import become_subreaper, end_descendants

    _TEMPLATE = None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (pipe closed)
    scoped = False
    if confine is not None:
        confine()
        scoped = True
    become_subreaper()
    _preload()
    _send(rep_w, {"ready": True})  # before any request is read (`Template._await_ready`)
    while True:
        try:
            request = _recv(req_r)
        except (EOFError, ValueError, struct.error):
            return 0
        if "ping" in request:  # the worker between calls: we are idle (`Template.settle`)
            _send(rep_w, {"pong": request["ping"]})
            continue
        pid = os.fork()
        if pid == 0:  # the fresh process
            code = 1
            try:
                os.close(req_r)
                os.close(rep_w)
                if confine is not None:
                    confine()  # nested in the template's domain: the template can end all of it
                code = _run_probe(request)
            finally:
                os._exit(code)
        _send(rep_w, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        if end_descendants(signal_all=scoped, seconds=5.0):  # what the run left (re-parented here)
            _send(rep_w, {"rc": rc})
            continue
        _send(rep_w, {"rc": rc, "left": True})
        return 1  # the leftovers go to our parent, which reports them (grader.sandbox.worker)


def _preload() -> None:
    """The trusted imports every fresh run needs (the tripwire, the probes and what they import),
    done once here and not in every grandchild: as the sandbox worker does before student code."""
    import importlib

    from grader import MODULES
    from grader.rules import tripwire

    tripwire.install()
    for module in MODULES:
        try:
            importlib.import_module(f"tests.probes.{module}")
        except Exception:  # noqa: BLE001 - a broken probe module fails its own calls
            pass


def _run_probe(request: dict[str, Any]) -> int:
    from pathlib import Path

    from grader.rules import tripwire
    from grader.boundary.messages import encode
    from grader.boundary.serving import serve
    from grader.boundary.target import Implementation

    tripwire.install()  # before the implementation is imported (idempotent), as `python -m grader.boundary.serving` does
    reply = serve(Implementation(Path(request["folder"])), str(request["name"]), dict(request["kwargs"]))
    with open(request["reply"], "wb") as f:
        f.write(encode(reply))
    return 0


# -- a probe in a fresh process: the template where this process has one, else a new interpreter --

def serve_fresh(folder: str, name: str, kwargs: dict[str, Any], timeout: float = 120.0) -> Any:
    """Run a probe in a *fresh* Python process (for "resume in a new process" checks).

    Called from inside a probe; the child imports the same implementation folder and returns
    the probe's data through a file.  The child's exceptions re-raise here as RuntimeError
    with the student's message, so they travel back as data like any other.
    """
    import tempfile

    from grader.boundary.messages import decode

    with tempfile.TemporaryDirectory() as tmp:
        request, reply = os.path.join(tmp, "request.pt"), os.path.join(tmp, "reply.pt")
        template = current()
        if template is not None:  # forked from a process that imported torch but no submission
            if template.run(folder, name, kwargs, reply, timeout) is None:
                raise TimeoutError(f"the fresh process running {name} timed out after {timeout:g} s")
        else:
            _run_interpreter(folder, name, kwargs, request, reply, timeout)
        if not os.path.exists(reply):
            raise RuntimeError(f"the fresh process running {name} died without replying")
        with open(reply, "rb") as f:
            result = decode(f.read())
    if "error" in result:
        err = result["error"]
        exc = NotImplementedError if err["not_implemented"] else RuntimeError
        raise exc(f"in a fresh process: {err['type']}: {err['message']}")
    return result["ok"]


def _run_interpreter(folder: str, name: str, kwargs: dict[str, Any], request: str, reply: str,
                     timeout: float, module: str = "grader.boundary.serving") -> None:
    """The same fresh run in a new interpreter (`python -m grader.boundary.serving`): where no template runs
    (`module`: another entry point reading the same request, e.g. `grader.boundary.peak`)."""
    import importlib
    import subprocess
    import sys
    from pathlib import Path

    from grader.boundary.messages import encode
    from grader.boundary.serving import PROBE_PACKAGE

    with open(request, "wb") as f:
        f.write(encode({"folder": folder, "name": name, "kwargs": kwargs}))
    # the child must find `grader` and `tests.probes` exactly where this process found them
    roots = {str(Path(importlib.import_module(m).__file__).resolve().parents[depth])
             for m, depth in (("grader", 1), (PROBE_PACKAGE, 2))}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*roots, os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-m", module, request, reply], timeout=timeout, check=False,
                   stdin=subprocess.DEVNULL, env=env)
