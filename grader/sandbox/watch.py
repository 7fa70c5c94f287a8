"""The sandbox watched from outside: its processes, the memory they hold, the files it keeps.

A `Monitor` thread watches, from outside, what no cgroup bounds: the files the sandbox holds
(its scratch folders on the host, landlock and rlimits launchers: on disk their pages are
reclaimable page cache, which a cgroup limit never refuses; and deleted files its processes
keep open, which no folder walk sees), each scratch folder held to the size bubblewrap gives
its tmpfs, and, where no cgroup exists, the memory of every process of the sandbox plus those
files against the memory cap (shared pages counted once: `held_bytes`, the processes'
proportional set sizes, asked for only when the cheaper VmRSS sum is over the cap, so 64
forks of one worker do not count its imports 64 times); it kills the sandbox over either.  During a measured
call it samples every 2 ms and reports the peak growth of the summed VmRSS (a student can
reset VmHWM through /proc/self/clear_refs, so the high-water mark inside is not trusted).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from typing import Callable

from grader.boundary.process_tree import tree_pids


def _status_kib(pid: int, field: bytes, name: str = "status") -> int:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rss_bytes(pids: list[int]) -> int:
    return sum(_status_kib(p, b"VmRSS:") for p in pids) * 1024


def held_bytes(pids: list[int]) -> int:
    """The memory `pids` hold together, each shared page counted once: their proportional set sizes
    (``Pss`` of /proc/PID/smaps_rollup: a page shared by n processes counts 1/n in each).  Summing
    VmRSS would count a page once per process that maps it: 64 forks of one worker would count its
    imports 64 times and be killed for memory they do not hold.  smaps_rollup walks the page tables,
    so callers ask for it only when the cheap VmRSS sum (never less) is over a cap."""
    if len(pids) <= 1:
        return rss_bytes(pids)
    return sum(_status_kib(p, b"Pss:", "smaps_rollup") or _status_kib(p, b"VmRSS:") for p in pids) * 1024


#: Most entries a scratch folder may hold (the walk that measures it is bounded by this; bubblewrap's
#: tmpfs bound inodes too).  More: the sandbox is killed.
MAX_SCRATCH_ENTRIES = 20_000


def folder_bytes(paths: list[str], max_entries: int = MAX_SCRATCH_ENTRIES) -> tuple[int, int]:
    """(bytes allocated to the files at and under `paths`, entries seen); stops past `max_entries`."""
    total, seen, todo = 0, 0, []
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            todo.append(path)
        else:
            total += info.st_blocks * 512
    while todo and seen <= max_entries:
        try:
            entries = os.scandir(todo.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    todo.append(entry.path)
                if seen > max_entries:
                    break
    return total, seen


def deleted_files_bytes(pids: list[int]) -> int:
    """Bytes of the deleted regular files that `pids` keep open (each file once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds[:4096]:
            try:
                info = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


class Monitor(threading.Thread):
    """Watches the sandbox from outside and kills it over a limit.

    `pids()` lists the sandbox's processes; `folders` are its host scratch folders with the most
    each may hold (empty under bubblewrap, whose tmpfs have sizes of their own): each is held to
    its own limit, and everything the sandbox holds in files (the folders, the deleted files its
    processes keep open, and what `loose()` lists: files of its uid outside them, rlimits) to
    their sum; `cap` is the memory cap where no cgroup enforces one (resident memory of the
    processes + those files), None where one does.  `measure()` / `stop_measure()` bracket one call.
    """

    SLOW, FAST, FILES = 0.05, 0.002, 0.2

    def __init__(self, pids: Callable[[], list[int]], folders: list[tuple[str, int]], cap: int | None,
                 kill: Callable[[str], None], loose: Callable[[], list[str]] | None = None):
        super().__init__(daemon=True, name="sandbox-memory")
        self.pids = pids
        self.folders = folders
        self.loose = loose
        self.cap = cap
        self.kill = kill
        self.stop_event = threading.Event()
        self.measuring = False
        self.baseline = 0
        self.peak = 0
        self.killed = ""
        self._files = 0
        self._files_at = 0.0
        self._files_every = self.FILES

    def files(self) -> tuple[int, str]:
        """(bytes of files the sandbox holds, why it must be killed or "")."""
        total, why = 0, ""
        for folder, limit in self.folders:
            used, entries = folder_bytes([folder])
            total += used
            if entries > MAX_SCRATCH_ENTRIES:
                why = why or f"it made more than {MAX_SCRATCH_ENTRIES} files and folders in a scratch folder"
            elif used > limit:
                why = why or (f"it wrote {used / 2**20:.0f} MiB to a scratch folder (the limit is "
                              f"{limit / 2**20:g} MiB, the size of the other launchers' tmpfs)")
        if self.loose is not None:
            total += folder_bytes(self.loose())[0]
        total += deleted_files_bytes(self.pids())
        limit = sum(lim for _, lim in self.folders)
        if self.folders and total > limit and not why:
            why = (f"it held {total / 2**20:.0f} MiB in files, deleted ones kept open included (the limit is "
                   f"{limit / 2**20:g} MiB)")
        return total, why

    def check_now(self) -> str:
        """Sample the files now (the end of a call: nothing held past a limit is handed back as a
        result); kills the sandbox and returns why when it is over a limit."""
        if not (self.folders or self.cap or self.loose) or self.killed:
            return self.killed
        self._files, why = self.files()
        self._files_at = time.monotonic()
        rss = self.held() if self.cap else 0
        if not why and self.cap and rss + self._files > self.cap:
            why = (f"it held {(rss + self._files) / 2**30:.1f} GiB of memory and files (the cap is "
                   f"{self.cap / 2**30:g} GiB)")
        if why:
            self.killed = f"the sandbox was killed: {why}"
            self.kill(self.killed)
        return self.killed

    def sample(self) -> int:
        now = time.monotonic()
        if (self.folders or self.cap or self.loose) and now - self._files_at > self._files_every:
            self._files, why = self.files()
            took = time.monotonic() - now
            self._files_at = time.monotonic()
            self._files_every = max(self.FILES, 5 * took)  # at most a fifth of a core on walking
            if why and not self.killed:
                self.killed = f"the sandbox was killed: {why}"
                self.kill(self.killed)
        return rss_bytes(self.pids()) if self.cap or self.measuring else 0

    def held(self, rss: int | None = None) -> int:
        """What the sandbox's processes hold: the VmRSS sum (`rss`, if sampled already) when it is under
        the cap, else their shared pages counted once (`held_bytes`)."""
        pids = self.pids()
        rss = rss_bytes(pids) if rss is None else rss
        return rss if rss + self._files <= self.cap else held_bytes(pids)

    def measure(self) -> None:
        self.baseline = self.peak = rss_bytes(self.pids())
        self.measuring = True

    def stop_measure(self) -> int:
        self.measuring = False
        self.peak = max(self.peak, rss_bytes(self.pids()))
        return max(0, self.peak - self.baseline)

    def run(self) -> None:
        while not self.stop_event.is_set():
            rss = self.sample()
            if self.measuring:
                self.peak = max(self.peak, rss)
            if self.cap and rss + self._files > self.cap and not self.killed \
                    and (held := self.held(rss)) + self._files > self.cap:
                self.killed = (f"the sandbox was killed: it held {(held + self._files) / 2**30:.1f} GiB of memory "
                               f"and files (the cap is {self.cap / 2**30:g} GiB)")
                self.kill(self.killed)
            idle = self.SLOW if self.cap or self.folders else 0.5
            self.stop_event.wait(self.FAST if self.measuring else idle)

    def stop(self) -> None:
        self.stop_event.set()
