"""The sandbox zygote: one pre-imported process per job slot that forks each submission's sandbox.

Starting a sandbox used to mean starting an interpreter and importing torch (and, on the first
dispatch-mode probe, torch._dynamo): about 2.6 s of CPU per submission, more than the student's
code itself takes.  The zygote pays it once per job slot, and in a `grader grade` batch once per
batch: there each job slot's zygote is a fork of the batch's *mother* zygote (`MotherProcess`,
started by the grading pool before its workers; `zygote_process --mother` forks zygotes only,
each serving on a socket of its own, and sends nothing on the socket the workers share):

* The trusted side (`Zygote`, in the grading process) starts it with the bubblewrap launcher as
  for a sandbox (read-only root, kit bundle, private pid/net/ipc/uts namespaces), except that
  the submission folder is an *inbox* (a host folder of the grader's, bound read-only at
  ``/kit-inbox``) and the process keeps CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID.
* The zygote (`grader.sandbox.zygote_process`, inside) imports torch, the tripwire, the probes
  and the libraries a submission imports, then only ever forks.  It never receives a request, never imports a
  submission and never runs student code: what a child inherits is the state of a clean import.
* Each sandbox is a child.  Before any student code, in this order, the child:
  waits until the grader has moved it into its memory cgroup; takes mount, IPC, pid, network,
  UTS and cgroup namespaces of its own, with fresh tmpfs at ``/tmp``, ``/dev/shm`` and
  ``/scratch`` (nothing a previous submission wrote is there) and its submission (a copy of its
  regular files in the inbox) bound read-only at ``/submission``, the inbox unmounted; forks
  the sandbox's init (pid 1, its own ``/proc``), which forks the worker (pid 2); the worker
  reseeds the global random generators and runs the ordinary start-up (`grader.sandbox.worker.run`):
  rlimits, the submission's own uid (which clears every capability), no_new_privs, the seccomp
  filter, the fresh-process template, and serves probe calls exactly like a started worker.
* The grader kills a child like any sandbox (its process group, every process of its uid, the
  uid's kernel state); the init's end takes the whole pid namespace down; the zygote reports the
  child's exit status (the worker's, as 128 + signal) for the crash messages.

What children of one zygote share: the zygote's memory at fork time (a clean import:
copy-on-write, never written back) and nothing else (the red-team review found a pid-counter
channel, abstract socket names and the cgroup path while the namespaces were shared: closed).

Used only where every layer above exists: bubblewrap, running as root (a uid per submission),
no GPU (CUDA may not be initialised before a fork), Python not installed under a folder the
fresh tmpfs would hide.  Elsewhere, and whenever the zygote cannot start, sandboxes start as
before (`grader.sandbox.process`), and `KIT_SANDBOX_ZYGOTE=0` (`SandboxSettings.zygote`) turns
it off.

This module is the grader's side of one zygote: `Zygote` (start it, or have the mother fork it;
fork children, their exit statuses), `copy_submission` (a folder into the inbox).  Which zygote a
sandbox uses, and the batch's mother (`MotherProcess`, `Mother`): `grader.sandbox.zygotes`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from grader.sandbox.zygote_process import MAX_MESSAGE

class ZygoteError(Exception):
    """The zygote could not start or fork (the sandbox then starts the ordinary way)."""


class NotForThisFolder(ZygoteError):
    """This sandbox's folder cannot go through the inbox (too large): it alone starts the
    ordinary way; the zygote serves the next ones."""


def _ns_pid(host_pid: int, depth: int | None = None) -> int | None:
    """The pid of `host_pid` in its innermost pid namespace (the last field of NSpid); with
    `depth`, None unless that namespace is `depth` levels below ours (a zygote: 1, inside its
    launcher's namespace; its sandboxes are deeper, and their small pids must not match)."""
    try:
        with open(f"/proc/{host_pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    pids = line.split()[1:]
                    return int(pids[-1]) if depth is None or len(pids) == depth + 1 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


class Child:
    """A sandbox forked by the zygote, with the parts of `subprocess.Popen` the sandbox uses."""

    def __init__(self, zygote: "Zygote", ns_pid: int, host_pid: int):
        self.zygote, self.ns_pid, self.pid = zygote, ns_pid, host_pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            status = self.zygote.exit_status(self.ns_pid, 0.0)
            if status is not None:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            status = self.zygote.exit_status(self.ns_pid, 3600.0 if timeout is None else timeout)
            if status is None:
                raise subprocess.TimeoutExpired("sandbox", timeout or 0.0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Zygote:
    """The grader's side of one zygote: start it, fork children, learn how they ended."""

    def __init__(self, argv_prefix: list[str], python: str, env: dict[str, str], pass_fds: list[int],
                 inbox: Path, timeout: float, mother: Any = None):
        """Start a zygote with the launcher command `argv_prefix` (bubblewrap), or, with `mother` (a
        `grader.sandbox.zygotes.Mother`), have the batch's mother zygote fork one (`argv_prefix`, `python`, `env`, `pass_fds` unused)."""
        self.inbox = inbox
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl = ours
        self.exits: dict[int, int] = {}
        self.replies: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.lock = threading.Lock()  # one fork at a time
        self.dead = False
        self.reader: threading.Thread | None = None
        self.owns_inbox = True  # (False for a zygote of the batch's mother: the inbox is the mother's)
        import tempfile

        self.log = tempfile.TemporaryFile()
        if mother is None:
            argv = [*argv_prefix, python, "-S", "-P", "-m", "grader.sandbox.zygote_process", "--fd", str(theirs.fileno())]
            try:
                self.proc: Any = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                                  env=env, pass_fds=(theirs.fileno(), *pass_fds),
                                                  start_new_session=True, close_fds=True)
            except OSError as exc:
                raise ZygoteError(f"cannot start the zygote: {exc}") from None
            finally:
                theirs.close()
            launcher_pid = self.proc.pid
        else:
            self.proc = None
            try:
                socket.send_fds(mother.sock, [b'{"zygote": true}'], [theirs.fileno()])
            except OSError as exc:
                raise ZygoteError(f"the batch's zygote did not take the request: {exc}") from None
            finally:
                theirs.close()
            launcher_pid = mother.launcher_pid
        ready = self._await_ready(timeout, mother)
        if ready.get("ready") is not True:
            self.close()
            raise ZygoteError(f"the zygote did not start: {ready.get('why', '')} {self.output()}".strip())
        from grader.boundary.process_tree import tree_pids

        host_pid = next((p for p in tree_pids(launcher_pid) if p != launcher_pid and _ns_pid(p, 1) == ready["pid"]),
                        None)
        if host_pid is None:
            self.close()
            raise ZygoteError("the zygote's process was not found")
        self.host_pid = host_pid
        if mother is not None:
            self.proc = NotOurChild(host_pid)
        self.ctl.settimeout(None)
        self.reader = threading.Thread(target=self._read, name="zygote-reader", daemon=True)
        self.reader.start()

    def _await_ready(self, timeout: float, mother: Any) -> dict[str, Any]:
        """The zygote's first message; a mother that died (or never started) is noticed within a
        second, not after the whole start-up timeout."""
        deadline = time.monotonic() + timeout
        while True:
            step = min(1.0, deadline - time.monotonic())
            if step <= 0:
                return {"why": "no answer within the start-up timeout"}
            self.ctl.settimeout(step)
            try:
                return json.loads(self.ctl.recv(MAX_MESSAGE) or b"{}")
            except TimeoutError:
                if mother is not None and not mother.alive():
                    return {"why": "the batch's zygote is gone"}
            except (OSError, ValueError) as exc:
                return {"why": f"{type(exc).__name__}: {exc}"}

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:].decode(errors="replace")

    def _read(self) -> None:
        while True:
            try:
                data = self.ctl.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.dead = True
                    self.cond.notify_all()
                    return
                message = json.loads(data)
                if "exit" in message:
                    self.exits[int(message["exit"])] = int(message["status"])
                else:
                    self.replies.append(message)
                self.cond.notify_all()

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def fork(self, config: dict[str, Any], fds: list[int], timeout: float = 30.0) -> Child:
        """A new child serving on `fds` (request read end, reply write end, fault write end, the
        output's write end, the go pipe's read end); it waits for a byte on the go pipe."""
        with self.lock:
            with self.cond:
                self.replies.clear()
            try:
                socket.send_fds(self.ctl, [json.dumps(config).encode()], fds)
            except OSError as exc:
                raise ZygoteError(f"the zygote did not take the request: {exc}") from None
            deadline = time.monotonic() + timeout
            with self.cond:
                while not self.replies and not self.dead and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                if not self.replies:
                    raise ZygoteError("the zygote did not answer")
                answer = self.replies.pop(0)
        ns_pid = answer.get("forked")
        if not isinstance(ns_pid, int):
            raise ZygoteError(f"the zygote could not fork: {answer.get('why', '')}")
        host = next((p for p in _children(self.host_pid) if _ns_pid(p) == ns_pid), None)
        if host is None:
            with self.cond:
                status = self.exits.get(ns_pid)
            raise ZygoteError(f"the forked sandbox was not found (exit status {status})")
        return Child(self, ns_pid, host)

    def exit_status(self, ns_pid: int, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while ns_pid not in self.exits and not self.dead:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            if ns_pid in self.exits:
                return self.exits.pop(ns_pid)
        return int(signal.SIGKILL)  # (a wait status) the zygote died, and its children with it

    def close(self) -> None:
        self.dead = True
        try:
            self.ctl.close()
        except OSError:
            pass
        if isinstance(self.proc, NotOurChild):
            self.proc.kill()  # not its process group: that is the mother's, shared by the batch
        elif self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.log.close()


class NotOurChild:
    """A process another one forked (so not ours to wait for), with the parts of `subprocess.Popen`
    its users need, by pidfd: a zygote the mother forked (its sandboxes die with it, by their
    parent-death signal), a trusted worker the fork-server forked.  Its exit status went to its
    parent: `returncode` is -1 once it has ended."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        try:
            self.fd: int | None = os.pidfd_open(pid)
        except OSError:  # already gone
            self.fd = None
            self.returncode = -1

    def poll(self) -> int | None:
        if self.returncode is None and self.fd is not None and select.select([self.fd], [], [], 0)[0]:
            self.returncode = -1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and self.fd is not None:
            if not select.select([self.fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            self.returncode = -1
        return -1

    def kill(self) -> None:
        if self.fd is not None and self.returncode is None:
            try:
                signal.pidfd_send_signal(self.fd, signal.SIGKILL)
            except OSError:
                pass

    def __del__(self) -> None:
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return out


def copy_submission(src: Path, dest: Path, cap: int = 64 << 20) -> None:
    """Copy the folder a sandbox is for into the inbox: regular files and folders only, never
    through a symbolic link (this runs as root on the host: a link must not copy what it points
    at), permission bits kept, at most `cap` bytes (else ZygoteError: the sandbox then starts
    the ordinary way, with the folder bound as it is)."""
    import stat

    total = 0
    os.mkdir(dest, 0o755)
    for root, dirs, files in os.walk(src, followlinks=False):
        here = Path(root)
        target = dest / here.relative_to(src)
        for name in list(dirs):
            info = os.lstat(here / name)
            if stat.S_ISDIR(info.st_mode):
                os.mkdir(target / name, stat.S_IMODE(info.st_mode) | 0o700)
            else:
                dirs.remove(name)
        for name in files:
            try:
                fd = os.open(here / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symbolic link (ELOOP), or unreadable
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if not stat.S_ISREG(info.st_mode):
                    continue
                total += info.st_size
                if total > cap:
                    raise NotForThisFolder(f"the folder holds more than {cap >> 20} MiB")
                data = f.read(cap + 1)
            out = os.open(target / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                          stat.S_IMODE(info.st_mode))
            with os.fdopen(out, "wb") as w:
                w.write(data)
