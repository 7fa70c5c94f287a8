"""Memory and the other resource limits: rlimits, a memory cgroup (the watch from outside:
`grader.sandbox.watch`).

* rlimits (set by the worker on itself before any student code): data segment, address space,
  CPU time, processes, file size, open files, no core dumps.  They do not see memfd files, tmpfs
  or shared memory, and the --device cuda run lifts the memory ones (CUDA reserves huge ranges);
* a memory cgroup per sandbox where the grader may create one (root with cgroup v1's memory
  controller, or a cgroup2 subtree with the memory controller), named at random (the sandbox
  can read its own cgroup path: no pid or counter in it): ``memory.limit_in_bytes`` /
  ``memory.max`` caps everything the sandbox's processes hold, tmpfs and shared memory
  included, on every path (the CUDA run too), and its peak is the trusted measure of a call's
  memory (`Cgroup.reset_peak` / `Cgroup.peak`);
* what no cgroup bounds, or where none exists, is watched from outside (`grader.sandbox.watch`).
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any, Callable

from grader.sandbox.config import Limits


def rlimits(limits: Limits, nproc_extra: int = 0) -> dict[str, Any]:
    """The rlimits the worker sets on itself (None: not limited)."""
    return {"as_bytes": limits.as_bytes, "data_bytes": limits.data_bytes, "cpu_seconds": limits.cpu_seconds,
            "fsize_bytes": limits.fsize_bytes, "nofile": limits.nofile, "core": limits.core,
            "nproc": limits.nproc + nproc_extra}


# -- cgroups --------------------------------------------------------------------------------------

V1_ROOT = Path("/sys/fs/cgroup/memory")
V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))


#: `grader grade` puts each trusted worker in a memory cgroup of its own named so (grader.testing.budget): the
#: worker's sandboxes are made next to it, not inside (their memory has its own cap, and cgroup2 allows no
#: processes in an inner node)
TRUSTED_WORKER_PREFIX = "kit-trusted-"


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller ("memory"), or the v2 path (controller ""); for a
    trusted worker in its own cgroup, the one that holds that."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if (controller and controller in ctrls.split(",")) or (not controller and ctrls == ""):
                    head, _, last = path.rstrip("/").rpartition("/")
                    return (head or "/") if last.startswith(TRUSTED_WORKER_PREFIX) else path
    except OSError:
        pass
    return None


class Cgroup:
    """One sandbox's memory cgroup (v1 or v2); created by `create`, removed by `destroy`."""

    def __init__(self, path: Path, version: int):
        self.path = path
        self.version = version

    @classmethod
    def create(cls, name: str, cap: int) -> "Cgroup | None":
        """A new memory cgroup limited to `cap` bytes next to this process's own, or None."""
        for parent, version in _parents():
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            cg = cls(path, version)
            try:
                if version == 1:
                    cg._write("memory.limit_in_bytes", cap)
                    try:
                        cg._write("memory.swappiness", 0)
                    except OSError:
                        pass
                else:
                    cg._write("memory.max", cap)
                    try:
                        cg._write("memory.swap.max", 0)
                    except OSError:
                        pass
                return cg
            except OSError:
                cg.destroy()
        return None

    def _write(self, name: str, value: Any) -> None:
        with open(self.path / name, "w") as f:
            f.write(str(value))

    def _read_int(self, name: str) -> int:
        with open(self.path / name) as f:
            text = f.read().split()
        return int(text[0]) if text and text[0] != "max" else -1

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def usage(self) -> int:
        return self._read_int("memory.usage_in_bytes" if self.version == 1 else "memory.current")

    def reset_peak(self) -> bool:
        """Start a new peak at the current usage (v1: max_usage_in_bytes; v2 >= 6.12: memory.peak)."""
        try:
            self._write("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak", 0)
            return True
        except OSError:
            return False

    def peak(self) -> int:
        return self._read_int("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak")

    def pids(self) -> list[int]:
        try:
            with open(self.procs_file) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def oom_killed(self) -> bool:
        try:
            if self.version == 1:
                return self._read_int("memory.failcnt") > 0 and not self.pids()
            with open(self.path / "memory.events") as f:
                return any(line.startswith("oom_kill ") and int(line.split()[1]) > 0 for line in f)
        except OSError:
            return False

    def destroy(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # processes still leaving


def _parents() -> list[tuple[Path, int]]:
    out = []
    own = _own_cgroup("memory")
    if own is not None and (V1_ROOT / "memory.limit_in_bytes").exists():
        out.append((V1_ROOT / own.lstrip("/"), 1))
    own2 = _own_cgroup("")
    if own2 is not None:
        for root in V2_ROOTS:
            parent = root / own2.lstrip("/")
            try:
                if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                    out.append((parent, 2))
            except OSError:
                continue
    return out


_cgroup_state: tuple[bool, str] | None = None
CGROUP_PREFIXES = ("kit-sandbox-", "kit-probe-")
#: An empty sandbox cgroup this old belongs to no running sandbox (a sandbox's processes join its
#: cgroup within milliseconds of its creation; rmdir refuses a cgroup that still has processes).
STALE_CGROUP_SECONDS = 600


def new_cgroup_name(prefix: str = "kit-sandbox-") -> str:
    """A cgroup name that says nothing: not the grader's pid, not how many sandboxes came before."""
    return prefix + secrets.token_hex(8)


def _sweep_stale() -> None:
    """Remove the empty cgroups that sandboxes of killed grader processes left behind."""
    now = time.time()
    for parent, _ in _parents():
        try:
            entries = [p for prefix in CGROUP_PREFIXES for p in parent.glob(prefix + "*")]
        except OSError:
            continue
        for path in entries:
            try:
                if now - path.stat().st_mtime > STALE_CGROUP_SECONDS:
                    path.rmdir()  # refused while processes are in it
            except OSError:
                pass


def cgroups_available() -> tuple[bool, str]:
    """(usable, how or why not): whether this process can create a memory cgroup per sandbox."""
    global _cgroup_state
    if _cgroup_state is None:
        _sweep_stale()
        cg = Cgroup.create(new_cgroup_name("kit-probe-"), 2**30)
        if cg is None:
            why = "no writable memory cgroup (cgroup v1 memory controller or a delegated cgroup2 subtree)"
            _cgroup_state = (False, why)
        else:
            _cgroup_state = (True, f"cgroup v{cg.version} at {cg.path.parent}")
            cg.destroy()
    return _cgroup_state


def join_cgroup_preexec(procs_file: str) -> Callable[[], None]:
    """A Popen preexec_fn that moves the child into the cgroup before it execs (no Python allocations)."""
    data = b"0"

    def join() -> None:
        fd = os.open(procs_file, os.O_WRONLY)
        try:
            os.write(fd, data)  # "0": the writing process itself
        finally:
            os.close(fd)
    return join
