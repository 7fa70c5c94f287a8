"""The trusted side's budgets in `grader grade`: time per submission, memory per trusted worker.

A trusted worker (`grader.batch.trusted`) decodes the sandbox's replies, checks them, reads the
submission's sources: work whose size the submission steers.  Two budgets bound it, so that one
submission can neither stall a batch nor take the machine's memory:

* **Time**: ``--submission-budget SECONDS`` (default `DEFAULT_BUDGET`) of the trusted worker's own
  CPU time per submission.  CPU time, not wall-clock time: it means the same on an idle and on a
  busy machine, and the time the submission's own code runs is not in it (the sandbox bounds that:
  ``--call-timeout`` per call, `SandboxSettings.submission_budget` seconds of calls in all).
  - *soft*, in the worker (`grader.testing.pytest_plugin`, ``--kit-budget``): once the budget is spent,
    every further probe call fails at once, the test in progress fails, the remaining tests are not
    run, and the submission scores what it earned so far, flagged (status ``partial``);
  - *hard*, in the parent (`grader.batch.grade`): a worker past the budget plus `hard_margin`
    (trusted code stuck in one long computation, where no soft check comes) is killed and
    replaced, and a fresh worker writes the submission's results from the tests the stopped one
    finished (`grader.testing.pytest_plugin`'s ``--kit-stream``), flagged the same way.  A worker past
    `wall_limit` seconds on one submission (one blocked on nothing) is stopped likewise.
* **Memory**: each worker has a limit (``--worker-memory MB``, default `DEFAULT_WORKER_MEMORY_MB`),
  held by a memory cgroup of its own where the grader makes the sandboxes' cgroups (root with a
  memory controller: `grader.sandbox.limits`; the worker's sandboxes are made next to it, so its
  limit is its own), else by RLIMIT_AS (CPU runs: ``--device cuda`` maps huge ranges that RLIMIT_AS
  refuses, and RLIMIT_DATA was not measured with CUDA, so a CUDA run without a cgroup has no limit,
  and instructor.json says so).  A worker killed by its cgroup, or one whose test hit MemoryError
  under RLIMIT_AS, ends that submission the same way: what it earned so far, flagged ("the trusted
  grader ran out of memory on this submission"); the batch goes on with a fresh worker.

How the defaults were chosen (measured on the 2-core machine of `tests/kit/`, -j 2): see the
constants' comments.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sandbox.limits import TRUSTED_WORKER_PREFIX as CGROUP_PREFIX  # (sandboxes are made next to them)

#: CPU seconds of the trusted worker per submission.  Measured (2 cores, -j 2, a busy machine): an
#: honest or buggy submission of all twelve modules costs its worker 0.7-1.8 s of CPU when forked by the
#: fork-server, 5.4 s for the first submission of a worker started on its own (it imports the tests);
#: the costliest case of the adversarial batch (memory module) 1.6 s, its slowest 90 s of wall time
#: (per-call timeouts, which the sandbox bounds and which cost the worker no CPU).  The red team's
#: trusted-side stalls cost 91 s and 146 s each.  60 s: 11 times the costliest honest submission.
DEFAULT_BUDGET = 60.0
#: Memory limit of one trusted worker, MiB.  Measured over a class of the twelve modules and the
#: adversarial batch: peak VmRSS 371 MiB (a worker started on its own) / 320 MiB (forked); what its
#: cgroup counts (pages it made itself) 262 MiB / 79 MiB.  A reply at the size cap (64 MiB) decodes
#: into a few hundred MiB at most.  2 GiB: 5.5 times the measured peak.
DEFAULT_WORKER_MEMORY_MB = 2048


def address_space(limit: int) -> int:
    """RLIMIT_AS for a worker whose memory limit is `limit`: address space is reserved, not used
    (measured VmPeak of a worker: 0.98 GiB on 2 cores, torch and its libraries mapped), and every
    intra-op thread adds a stack and a malloc arena (about 72 MiB each): 2 GiB + 80 MiB per core."""
    return limit + 2 * 2**30 + (os.cpu_count() or 1) * 80 * 2**20


MEMORY_MESSAGE = "the trusted grader ran out of memory on this submission"
DIED_MESSAGE = "the trusted grader's process died twice on this submission"


def time_message(budget: float) -> str:
    """Why a submission stopped being graded when its budget was spent (the tests not run say
    "not graded: " and this)."""
    return f"the submission used up its time budget of {budget:g} s"


def wall_message(seconds: float) -> str:
    return f"the submission took longer than {seconds:g} s in all (the grader's wall-clock limit)"


def hard_margin(budget: float) -> float:
    """CPU seconds past the budget before the parent kills the worker: the soft stop comes at the
    next probe call or test (decoding one reply at the size cap takes about a second), then writing
    the results takes a second or two."""
    return max(10.0, budget / 2)


def wall_limit(budget: float, call_budget: float, call_timeout: float, import_timeout: float) -> float:
    """Wall-clock seconds one submission may hold a worker: the sandbox's own bound (`call_budget`
    seconds of calls, the last call and an import past it), the trusted budget and its margin
    four times over (a machine four times oversubscribed), and two minutes of sandbox start-ups."""
    return call_budget + call_timeout + import_timeout + 4 * (budget + hard_margin(budget)) + 120.0


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of process `pid` so far, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


# -- memory -----------------------------------------------------------------------------------

@dataclass
class WorkerMemory:
    """How this batch limits each trusted worker's memory: `method` is "cgroup", "RLIMIT_AS" or
    "none" (`note` says why none)."""

    method: str
    limit: int | None
    note: str = ""

    @classmethod
    def choose(cls, memory_mb: int | None, device: str) -> "WorkerMemory":
        from grader.sandbox.limits import cgroups_available
        from grader.sandbox.uids import is_root

        if memory_mb == 0:
            return cls("none", None, "turned off (--worker-memory 0)")
        limit = int(memory_mb or DEFAULT_WORKER_MEMORY_MB) * 2**20
        if os.environ.get("KIT_WORKER_CGROUP", "1") != "0" and is_root() and cgroups_available()[0]:
            return cls("cgroup", limit)
        if device == "cuda":
            return cls("none", None, "--device cuda and no memory cgroup here: CUDA's reservations break "
                                     "RLIMIT_AS, and RLIMIT_DATA was not measured with CUDA")
        return cls("RLIMIT_AS", limit)

    def confine(self, pid: int, name: str) -> dict[str, Any]:
        """Put worker `pid` under the limit; what was done, as instructor.json records it (and as
        `oom_killed` and `release` read it back)."""
        if self.method == "cgroup":
            from grader.sandbox.limits import Cgroup

            cg = Cgroup.create(f"{CGROUP_PREFIX}{os.getpid()}-{name}", self.limit or 0)
            if cg is not None:
                try:
                    with open(cg.procs_file, "w") as f:
                        f.write(str(pid))
                    return {"method": f"cgroup v{cg.version}", "limit_bytes": self.limit, "cgroup": str(cg.path),
                            "version": cg.version}
                except OSError as exc:
                    cg.destroy()
                    note = f"the worker's cgroup could not be joined ({exc.strerror}): RLIMIT_AS instead"
            else:
                note = "the worker's cgroup could not be made: RLIMIT_AS instead"
            return {**self._rlimit(pid), "note": note}
        if self.method == "RLIMIT_AS":
            return self._rlimit(pid)
        return {"method": "none", "limit_bytes": None, "note": self.note}

    def _rlimit(self, pid: int) -> dict[str, Any]:
        if self.limit is None:
            return {"method": "none", "limit_bytes": None, "note": self.note}
        import resource  # (here: the command line imports this module, on Windows too, for its defaults)

        soft = address_space(self.limit)
        try:  # the soft limit only: the worker's sandboxes set their own (higher) limits, which a hard one would forbid
            _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
            resource.prlimit(pid, resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        except (OSError, ValueError) as exc:
            return {"method": "none", "limit_bytes": None, "note": f"RLIMIT_AS could not be set: {exc}"}
        return {"method": "RLIMIT_AS", "limit_bytes": self.limit, "address_space_bytes": soft}


def _cgroup(desc: dict[str, Any]) -> Any:
    from grader.sandbox.limits import Cgroup

    return Cgroup(Path(desc["cgroup"]), int(desc["version"])) if desc.get("cgroup") else None


def oom_killed(desc: dict[str, Any]) -> bool:
    """Whether the kernel killed a process of the worker's cgroup for its limit (v2 memory.events,
    v1 memory.oom_control's oom_kill: a failcnt alone is page cache reclaimed at the limit)."""
    cg = _cgroup(desc)
    if cg is None:
        return False
    for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
        try:
            with open(cg.path / name) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == key:
                        return int(parts[1]) > 0
        except (OSError, ValueError):
            continue
    return bool(cg.oom_killed())


def release(desc: dict[str, Any]) -> None:
    """Remove a dead worker's cgroup (a leftover is swept by the next batch: `sweep_stale`)."""
    cg = _cgroup(desc)
    if cg is not None:
        cg.destroy()


def sweep_stale() -> None:
    """Remove the empty cgroups of trusted workers whose batch was killed (its pid is gone)."""
    from grader.sandbox.limits import _parents  # where Cgroup.create makes them

    for parent, _ in _parents():
        try:
            entries = list(parent.glob(f"{CGROUP_PREFIX}*"))
        except OSError:
            continue
        for path in entries:
            pid = path.name[len(CGROUP_PREFIX):].split("-")[0]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                try:
                    path.rmdir()
                except OSError:
                    pass


class PeakMeter:
    """The trusted worker's peak memory during one submission: its cgroup's peak (what its limit
    counts) and its VmHWM (resident memory; reset through /proc/self/clear_refs)."""

    def __init__(self, desc: dict[str, Any]):
        self.cg = _cgroup(desc)
        if self.cg is not None and not self.cg.reset_peak():
            self.cg = None
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.since = "this submission"
        except OSError:
            self.since = "the worker's start"

    def read(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rss_peak_since": self.since}
        try:
            with open("/proc/self/status") as f:
                out["rss_peak_bytes"] = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
        except (OSError, ValueError, StopIteration):
            pass
        if self.cg is not None:
            try:
                out["cgroup_peak_bytes"] = self.cg.peak()
            except (OSError, ValueError):
                pass
        return out
