"""The supervisor: the first process of a landlock or rlimits sandbox, which ends all of it.

Bubblewrap gives each sandbox a pid namespace: when its init ends, the kernel kills every
process in it, however it was forked (double forks and setsid() included).  The landlock and
rlimits launchers have no namespace, and without root the sandbox runs under the grader's own
uid, so neither a process group, a session nor a uid finds a process that double-forked away.
The worker those launchers start therefore forks right after its lock-down (rlimits, uid,
Landlock, seccomp) and before any student code (`supervise`):

* the parent stays the *supervisor*: a child subreaper (PR_SET_CHILD_SUBREAPER), so a process of
  the sandbox whose parent dies is re-parented to it, never to init: every live process of the
  sandbox is below it, and a live one means a live child.  It runs no student code and holds
  none of the worker's pipes.  When the worker ends, or the grader asks (SIGTERM), it kills
  every process below it, reaps them, and exits with the worker's status (128 + the signal, as
  a shell reports it);
* the child goes on as the worker, in a Landlock domain nested in the supervisor's: Landlock's
  scopes (ABI >= 6) keep the worker and everything it starts from signalling or tracing
  anything outside that domain -- the supervisor, the grader and other sandboxes included.

How it kills (`end_descendants`): where the sandbox has a uid of its own (root) or Landlock's
scopes, ``kill(-1, SIGKILL)`` reaches exactly the sandbox's processes (those of its uid; those
the scopes let it signal: its nested domain) in one pass a fork bomb cannot outrun; otherwise
(rlimits without root) it walks its descendants in /proc.  Either way it repeats until no child
is left.

The fresh-process template (`grader.boundary.fresh`) uses `end_descendants` too, after every fresh run.

If the supervisor itself is killed outright, the grading pool is the backstop (`OrphanSweep`): it is
a child subreaper for the batch, and every process re-parented to it is killed when the batch ends.

What it cannot do: under rlimits without root nothing protects it -- the submission runs under
the grader's uid and may signal it (and the grader); that launcher makes no isolation claim.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from grader.boundary.process_tree import (_PR_GET_CHILD_SUBREAPER, _PR_SET_CHILD_SUBREAPER, _prctl, become_subreaper,
                                         end_descendants)

_PR_SET_PDEATHSIG = 1

class _Ended(Exception):
    """SIGTERM: the grader ends the sandbox."""


def _on_term(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second one must not cut the ending short
    raise _Ended


def supervise(signal_all: bool, close_fds: list[int], nest: Callable[[], None] | None) -> int:
    """Fork.  In the child (the worker) run `nest` (a nested Landlock domain) and return its parent's
    pid; this process stays the supervisor, closes `close_fds` (the worker's pipes) and never
    returns (see the module's docstring)."""
    become_subreaper()
    signal.signal(signal.SIGTERM, _on_term)  # before the fork: no moment without it
    me = os.getpid()
    worker = os.fork()
    if worker == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != me:  # the supervisor is already gone
            os._exit(128 + signal.SIGKILL)
        if nest is not None:
            nest()
        return me
    code = 128 + signal.SIGKILL
    try:
        for fd in close_fds:
            os.close(fd)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)  # the worker, or an orphan of the sandbox that ended
            except ChildProcessError:
                break
            if pid == worker:
                exit_code = os.waitstatus_to_exitcode(status)
                code = 128 - exit_code if exit_code < 0 else exit_code
                break
    except _Ended:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        end_descendants(signal_all)
        os._exit(code)


def _children() -> set[int]:
    """This process's live children (and zombies), by /proc/self/task/*/children."""
    found: set[int] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                found.update(int(c) for c in f.read().split())
    except (OSError, ValueError):
        pass
    return found


class OrphanSweep:
    """The grading pool's backstop: every process of the batch ends with the batch.

    A sandbox's supervisor ends the sandbox when its trusted worker dies (a catchable parent-death
    signal); if the supervisor itself is killed outright (SIGKILL, the OOM killer), what the
    student's code double-forked away is re-parented to the nearest child subreaper above it: this
    process, from `start` on.  `sweep` (at the end of the batch, and when it stops on an error or
    Ctrl-C) kills and reaps every child this process did not have at `start`, once the pool's own
    processes have ended; then this process is no longer a subreaper (unless it was before)."""

    def __init__(self) -> None:
        self.before: set[int] = set()
        self.was_subreaper = False
        self.active = False

    def start(self) -> None:
        import ctypes

        flag = ctypes.c_int(0)
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
        except OSError:
            pass
        self.was_subreaper = bool(flag.value)
        self.before = _children()
        self.active = become_subreaper()

    def sweep(self, seconds: float = 5.0) -> list[int]:
        """Kill and reap the children that appeared since `start`; returns their pids."""
        if not self.active:
            return []
        swept: list[int] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            left = _children() - self.before
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                try:
                    if os.waitpid(pid, 0)[0] == pid:
                        swept.append(pid)
                except ChildProcessError:
                    pass
        if not self.was_subreaper:
            _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        self.active = False
        return swept
