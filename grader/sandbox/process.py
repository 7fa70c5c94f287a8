"""One running sandbox: the worker process started by a launcher, its limits, its messages."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from grader.sandbox import (launchers, limits as limits_mod, seccomp, start_config, uids, watch, zygote as zygote_mod,
                            zygotes)
from grader.sandbox.bundle import sandbox_python
from grader.sandbox.channel import (CappedBuffer, ChannelTimeout, Drain, Garbage, grow_pipe, read_message,
                                   write_message)
from grader.sandbox.config import BUBBLEWRAP, RLIMITS, SANDBOX_FOLDER, SandboxSettings
from grader.sandbox.crash import death_words

class SandboxStartError(Exception):
    """The sandbox could not start (before any student code ran): a grader problem."""


class Sandbox:
    """One running worker process; `request()` sends a message and waits for its reply."""

    def __init__(self, folder: Path, settings_: SandboxSettings, launcher: str, uid: int | None,
                 output: CappedBuffer, fault: CappedBuffer):
        self.folder = folder
        self.settings = settings_
        self.launcher = launcher
        self.uid = uid
        self.seq = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.scratch: list[str] = []  # host scratch folders of this sandbox (landlock, rlimits): TMPDIR, the other
        self.cleanup: list[str] = []  # host folders removed at kill (the scratch folders' parents, a zygote's inbox copy)
        self.supervised = False  # a supervisor (grader.sandbox.supervisor) is the process the launcher started
        self.output = output
        self.fault = fault
        self.fault_mark = 0
        self.drain: Drain | None = None
        self.dirty = False  # the student's code left processes running: restart before the next call
        self.cgroup: limits_mod.Cgroup | None = None
        self.monitor: watch.Monitor | None = None
        self.killed_why = ""
        self.layers: dict[str, Any] = {}
        self.startup_seconds = 0.0
        self.req_w: int | None = None
        self.rep_r: int | None = None
        self.zygote: zygote_mod.Zygote | None = None
        self.zygote_note = ""  # why a zygote was to be used and could not be (instructor-only)

    # lifecycle ------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        """Start the worker (forked from the zygote where `grader.sandbox.zygotes.why_not` allows;
        if the zygote fails before any student code ran, started the ordinary way) and wait for
        its ready message."""
        self.zygote = None
        if not zygotes.why_not(self.settings, self.launcher, self.uid):
            try:
                self.zygote = zygotes.shared(self.settings)
            except zygote_mod.ZygoteError as exc:
                self.zygote_note = str(exc)
        if self.zygote is not None:
            try:
                return self._start()
            except SandboxStartError as exc:
                self.zygote_note = str(exc)
                if not isinstance(exc.__cause__, zygote_mod.NotForThisFolder):
                    zygotes.give_up(self.zygote, str(exc))
                self.zygote = None
                self.killed_why = ""
        return self._start()

    def _start(self) -> dict[str, Any]:
        """Start the worker (forked from a zygote, under bubblewrap, or supervised on the host), watch
        it, and wait for its ready message; the layers it reports become `self.layers`."""
        t0 = time.monotonic()
        config, cap = start_config.base_config(self)
        pipes = [os.pipe() for _ in range(5)]
        (req_r, req_w), (rep_r, rep_w), (out_r, out_w), (fault_r, fault_w), (cfg_r, cfg_w) = pipes
        for fd in (req_w, rep_w):  # requests and replies of a few MB: 1 MiB pipes, not 16 round trips per MiB
            grow_pipe(fd)
        extra_fds: list[int] = []
        try:
            self._launch(config, req_r, rep_w, fault_w, out_w, cfg_r, cfg_w, extra_fds)
            os.close(cfg_w)
            cfg_w = -1
        except (OSError, zygote_mod.ZygoteError) as exc:
            for fd in (req_r, req_w, rep_r, rep_w, out_r, out_w, fault_r, fault_w, cfg_r, cfg_w, *extra_fds):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._cleanup_host()
            raise SandboxStartError(f"cannot start the sandbox: {exc}") from exc
        for fd in (req_r, rep_w, out_w, fault_w, cfg_r, *extra_fds):
            os.close(fd)
        self.req_w, self.rep_r = req_w, rep_r
        os.set_blocking(self.req_w, False)
        self.drain = Drain(out_r, fault_r, self.output, self.fault)
        self.drain.start()
        self._watch(cap)
        ready = self._await_ready()
        inside = ready.get("layers") if isinstance(ready.get("layers"), dict) else {}
        self.layers = start_config.layers(self, inside, cap)
        self.startup_seconds = time.monotonic() - t0
        return ready

    def _launch(self, config: dict[str, Any], req_r: int, rep_w: int, fault_w: int, out_w: int, cfg_r: int,
                cfg_w: int, extra_fds: list[int]) -> None:
        """Start the worker process: forked from the zygote, or a new interpreter under bubblewrap or
        on the host (landlock, rlimits) reading `config` from its pipe.  Descriptors the child needs
        besides its pipes are appended to `extra_fds` (the caller closes them)."""
        s = self.settings
        if self.launcher == BUBBLEWRAP and launchers.landlock_available()[0]:
            # the worker's own Landlock rules, in the sandbox's view: /proc narrowed (the mount table names host folders)
            config["landlock"] = launchers.sandbox_rules(gpu=s.gpu)
        sec_ok, _ = seccomp.available()
        if self.zygote is not None:
            config.update(folder=SANDBOX_FOLDER, seccomp=seccomp.program().hex() if sec_ok else None)
            self.proc = self._fork_from_zygote(config, [req_r, rep_w, fault_w, out_w])
            return
        if self.launcher == BUBBLEWRAP:
            prefix, env, cwd = start_config.bubblewrap_prefix(self, sec_ok, extra_fds)
            config["folder"] = SANDBOX_FOLDER
        else:
            prefix, env, cwd = [], *start_config.host_scratch(self, config, sec_ok)
        os.write(cfg_w, json.dumps(config).encode())
        argv = [*prefix, sandbox_python(self.launcher), "-S", "-P", "-m", "grader.sandbox.worker", "--fd-in", str(req_r),
                "--fd-out", str(rep_w), "--fd-fault", str(fault_w), "--fd-config", str(cfg_r)]
        preexec = limits_mod.join_cgroup_preexec(self.cgroup.procs_file) if self.cgroup else None
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, env=env, cwd=cwd,
                                     pass_fds=(req_r, rep_w, fault_w, cfg_r, *extra_fds), start_new_session=True,
                                     close_fds=True, preexec_fn=preexec)

    def _watch(self, cap: int) -> None:
        """Start the monitor that watches the sandbox from outside (`grader.sandbox.watch`)."""
        lim = self.settings.limits
        # host scratch folders hold what bubblewrap's tmpfs would, at most: watched on every path (a
        # cgroup never refuses page cache: files on disk would otherwise hold no limit at all)
        folders = list(zip(self.scratch, (lim.tmpfs_bytes, lim.shm_bytes))) if self.supervised else []
        loose = None
        if self.launcher == RLIMITS and self.uid is not None:  # no Landlock: files of its uid elsewhere count too
            uid = self.uid
            loose = lambda: uids.files_of(uid)  # noqa: E731
        self.monitor = watch.Monitor(self._pids, folders, None if self.cgroup else cap, self._kill_from_monitor,
                                     loose)
        self.monitor.start()

    def _await_ready(self) -> dict[str, Any]:
        """The worker's ready message, within the start-up timeout (else the sandbox is killed)."""
        try:
            ready = read_message(self.rep_r, time.monotonic() + self.settings.startup_timeout)
        except (ChannelTimeout, EOFError, Garbage) as exc:
            detail = self.fault.text()[-500:] or self.output.text()[-1500:]
            self.kill()
            kind = "timed out" if isinstance(exc, ChannelTimeout) else f"failed ({type(exc).__name__}: {exc})"
            raise SandboxStartError(f"the sandbox ({self.launcher}) {kind} while starting; {detail.strip()}") from None
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            self.kill()
            raise SandboxStartError("the sandbox sent no ready message")
        return ready

    def _fork_from_zygote(self, config: dict[str, Any], fds: list[int]) -> zygote_mod.Child:
        """A child of the zygote (grader.sandbox.zygote) serving on `fds`, in its cgroup before it runs."""
        import secrets

        assert self.zygote is not None
        # a random name: the submission sees it in its mountinfo, a counter would tell it how many
        # sandboxes this worker started before
        name = f"job-{secrets.token_hex(8)}"
        dest = self.zygote.inbox / name
        self.cleanup.append(str(dest))
        zygote_mod.copy_submission(self.folder, dest)
        lim = self.settings.limits
        go_r, go_w = os.pipe()
        try:
            try:
                child = self.zygote.fork({"worker": config, "inbox_name": name,
                                          "tmpfs": {"tmp": lim.tmpfs_bytes, "shm": lim.shm_bytes}}, [*fds, go_r])
            finally:
                os.close(go_r)
            try:
                if self.cgroup is not None:
                    with open(self.cgroup.procs_file, "w") as f:
                        f.write(str(child.pid))
                os.write(go_w, b"g")
            except OSError:
                try:
                    os.kill(child.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                raise
        finally:
            os.close(go_w)
        return child

    def _pids(self) -> list[int]:
        if self.cgroup is not None:
            return self.cgroup.pids()
        return watch.tree_pids(self.proc.pid) if self.proc is not None else []

    def _kill_from_monitor(self, why: str) -> None:
        self.killed_why = why
        proc = self.proc
        if proc is not None:
            if self.supervised:  # it ends everything below it; killing it first would let orphans go
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            else:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for p in watch.tree_pids(proc.pid):
                if p != proc.pid or not self.supervised:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> int | None:
        """Kill the sandbox and everything it started; returns the launcher's exit status."""
        rc = None
        if self.monitor is not None:
            self.monitor.stop()
        if self.proc is not None:
            pid = self.proc.pid
            if self.supervised and self.proc.poll() is None:  # the supervisor ends every process of the sandbox
                try:
                    os.kill(pid, signal.SIGTERM)
                    self.proc.wait(timeout=10)
                except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                    pass
            stragglers = uids.descendants(pid) if self.uid is None else []
            if self.cgroup is not None:
                stragglers += self.cgroup.pids()
            # once the launcher is reaped its pid may be reused: with a uid of our own, kill_uid below
            # reaches every process the sandbox left, so the group is signalled only while it is ours
            if self.uid is None or self.proc.poll() is None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for p in stragglers:  # processes that left the process group (no uid of our own)
                try:
                    os.kill(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = None
            self.proc = None
        if self.uid is not None:
            uids.kill_uid(self.uid)
            uids.clear_uid_state(self.uid)  # keyrings, SysV IPC, files in /dev/shm and /tmp
        _collect_unix_garbage()
        for fd_name in ("req_w", "rep_r"):
            fd = getattr(self, fd_name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, fd_name, None)
        if self.drain is not None:
            self.drain.join(timeout=5)
            self.drain = None
        self._cleanup_host()
        return rc

    def _cleanup_host(self) -> None:
        for d in self.cleanup:
            shutil.rmtree(d, ignore_errors=True)
        self.cleanup = []
        self.scratch = []
        if self.cgroup is not None:
            self.cgroup.destroy()
            self.cgroup = None

    def wait_exit(self, timeout: float) -> int | None:
        """The launcher's exit status if it ends within `timeout` (None if it is still running)."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """Ask the worker to exit, then make sure everything is gone."""
        if self.alive():
            try:
                write_message(self.req_w, {"op": "bye"}, time.monotonic() + 1.0)
                self.proc.wait(timeout=2)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - killed below either way
                pass
        self.kill()

    # messages ------------------------------------------------------------------------------
    def request(self, message: dict[str, Any], timeout: float, budget: Any = None, module: str = "") -> dict[str, Any]:
        """Send one request; the reply dict, or raise ChannelTimeout / EOFError / Garbage (or
        BudgetSpent: the reply's decoding is charged to `module`'s share of `budget`)."""
        self.seq += 1
        message = dict(message, seq=self.seq)
        self.fault_mark = self.fault.total
        deadline = time.monotonic() + timeout
        write_message(self.req_w, message, deadline)
        answer = read_message(self.rep_r, deadline, budget, module)
        if not isinstance(answer, dict) or answer.get("seq") != self.seq or not isinstance(answer.get("reply"), dict):
            raise Garbage("a reply that does not answer the request")
        reply = answer["reply"]
        if len(reply) != 1 or next(iter(reply)) not in ("ok", "error", "boundary"):
            raise Garbage("a reply of the wrong shape")
        if "error" in reply:
            from grader.boundary.messages import ErrorData

            try:
                ErrorData.from_dict(reply["error"])
            except Exception as exc:  # noqa: BLE001 - malformed error record
                raise Garbage(f"a malformed error record ({type(exc).__name__})") from None
        if "boundary" in reply and type(reply["boundary"]) is not str:
            raise Garbage("a malformed boundary record")
        self.dirty = answer.get("children") is not False
        return reply

    def death_words(self, rc: int | None) -> str:
        """Plain words for why the sandbox died (a message for the student, never a verdict)."""
        fault = self.fault.text()[self.fault_mark:] if self.fault.total > self.fault_mark else ""
        return death_words(rc, self.killed_why, self.launcher == BUBBLEWRAP or self.supervised, fault)


def _collect_unix_garbage() -> None:
    """Have the kernel free what the dead sandbox left in flight on unix sockets.

    A submission can send its own descriptors (tmpfs files, sockets, ptys) through a unix socket
    pair and close both ends: the cycle outlives every process, uid and cgroup, pinning the
    memory and locks behind it.  The kernel's collector for such cycles runs when some unix
    socket is released; a bubblewrap per sandbox did that by chance at every start, a zygote's
    fork does not, so the grader releases one after every sandbox (measured by the red-team
    review: 370 MiB more host memory pinned per sandbox until the worker ended, without it)."""
    import socket

    try:
        a, b = socket.socketpair()
        a.close()
        b.close()
    except OSError:
        pass
