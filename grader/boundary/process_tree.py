"""A process and everything below it: a child subreaper, its descendants found and ended.

The landlock and rlimits sandbox's supervisor (`grader.sandbox.supervisor`) and the fresh-process
template (`grader.boundary.fresh`) are child subreapers (a process whose parent ends is re-parented
to them, not to init) and end every process below them with `end_descendants`; the sandbox's
monitor (`grader.sandbox.watch`) finds a sandbox's processes with `tree_pids`.  Linux only
(prctl, /proc); nothing here imports another grader module.
"""

from __future__ import annotations

import os
import signal
import time

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def _prctl(option: int, arg: int) -> int:
    import ctypes

    return int(ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0))


def become_subreaper() -> bool:
    """Orphans among this process's descendants are re-parented to it (not to init)."""
    try:
        return _prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0
    except OSError:
        return False


def end_descendants(signal_all: bool, seconds: float = 10.0) -> bool:
    """Kill and reap every process below this one (a subreaper); True once none is left.

    `signal_all`: ``kill(-1, SIGKILL)`` (only where it reaches just this sandbox: a uid of its
    own, or Landlock's scopes with this process alone in its domain); else SIGKILL each process
    found below this one in /proc (False when /proc does not show them)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass  # reap what has ended
        except ChildProcessError:
            return True  # no child: no process of the sandbox is left (we are its subreaper)
        if time.monotonic() > deadline:
            return False
        if signal_all:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
            below = tree_pids(os.getpid())[1:]
            if not below:
                return False  # children we cannot see (Landlock hides /proc): the caller decides
            for pid in below:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.002)


def tree_pids(root: int) -> list[int]:
    """`root` and its descendants (through /proc/PID/task/TID/children)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out
