"""Settings of the sandbox: launcher names, resource limits, per-process configuration."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

BUBBLEWRAP = "bubblewrap"
LANDLOCK = "landlock"
RLIMITS = "rlimits"
#: Isolation levels, weakest first (`grader grade --require LEVEL` refuses anything below).
LEVELS = (RLIMITS, LANDLOCK, BUBBLEWRAP)

SANDBOX_FOLDER = "/submission"
SANDBOX_KIT = "/kit"
SANDBOX_TMP = "/tmp"
SANDBOX_OTHER_FS = "/scratch"  # bubblewrap: the second scratch, a tmpfs of its own
ZYGOTE_INBOX = "/kit-inbox"  # the sandbox zygote: where the submission of the child it forks waits


@dataclass
class Limits:
    """Per-sandbox resource limits (all enforced by the kernel, or from outside by the grader)."""

    data_bytes: int | None = 4 * 2**30  # memory: RLIMIT_DATA (heap and anonymous mappings, what a memory bomb grows)
    as_bytes: int | None = 16 * 2**30  # address space, a backstop (file mappings count here: a multi-GB memmap is fine)
    cpu_seconds: int = 600  # CPU time of the whole sandbox (torch import + every call)
    nproc: int = 64  # processes *and threads* of the sandbox uid
    fsize_bytes: int = 256 * 2**20  # largest file the submission may write
    nofile: int = 256
    core: int = 0
    tmpfs_bytes: int = 256 * 2**20  # the private /tmp (bubblewrap only)
    shm_bytes: int = 64 * 2**20  # /dev/shm and the second scratch (bubblewrap: tmpfs sizes)
    # host memory of the whole sandbox (every process, tmpfs and shared memory included): a cgroup's
    # limit where the grader may create cgroups, else watched from outside (RSS + scratch files) and
    # killed over it.  None: data_bytes + the tmpfs sizes + 1 GiB (16 GiB when data_bytes is None,
    # the --device cuda run, whose rlimits are lifted)
    memory_bytes: int | None = None

    def memory_cap(self) -> int:
        if self.memory_bytes:
            return int(self.memory_bytes)
        if self.data_bytes is None:
            return 16 * 2**30
        return int(self.data_bytes) + self.tmpfs_bytes + 2 * self.shm_bytes + 2**30


@dataclass
class SandboxSettings:
    """How sandboxes are launched and limited.  `grader grade` sets these per job slot."""

    launcher: str = "auto"  # auto | bubblewrap | landlock | rlimits
    call_timeout: float = 30.0  # wall seconds per probe call
    import_timeout: float = 30.0  # wall seconds to import one submission module
    startup_timeout: float = 120.0  # wall seconds for the sandbox to start (python + torch)
    submission_budget: float = 900.0  # wall seconds of calls per submission; later calls fail fast
    max_restarts: int = 30  # after this many crashes/timeouts the remaining calls fail fast
    output_cap: int = 64 * 1024  # bytes of the submission's stdout/stderr kept for the log
    limits: Limits = field(default_factory=Limits)
    uid: int | None = None  # the job slot's uid when root (kept for callers; see uid_per_submission)
    # fork sandboxes from a pre-imported zygote where it is safe (grader.sandbox.zygote); KIT_SANDBOX_ZYGOTE=0: never
    zygote: bool = field(default_factory=lambda: os.environ.get("KIT_SANDBOX_ZYGOTE", "1") != "0")
    uid_per_submission: bool = True  # root: every SandboxBackend leases a fresh uid from the pool
    cgroup: bool = True  # put each sandbox in a memory cgroup of its own where the grader may create one
    log_path: str | None = None  # where close() writes the captured output (None: nowhere)
    gpu: bool = False  # `grader grade --device cuda`: expose /dev/nvidia*, no memory rlimits (CUDA maps huge ranges)

    @classmethod
    def from_env(cls) -> "SandboxSettings":
        s = cls()
        env = os.environ
        s.launcher = env.get("KIT_SANDBOX_LAUNCHER", s.launcher)
        for name, attr in (("KIT_CALL_TIMEOUT", "call_timeout"), ("KIT_IMPORT_TIMEOUT", "import_timeout"),
                           ("KIT_STARTUP_TIMEOUT", "startup_timeout")):
            if env.get(name):
                setattr(s, attr, float(env[name]))
        s.log_path = env.get("KIT_SANDBOX_LOG") or None
        return s


_settings: SandboxSettings | None = None
_finished: list[dict[str, Any]] = []


def configure(settings_: SandboxSettings) -> None:
    """Settings for the SandboxBackends created from now on in this process."""
    global _settings
    _settings = settings_


def settings() -> SandboxSettings:
    return _settings if _settings is not None else SandboxSettings.from_env()


def record_finished(stats: dict[str, Any]) -> None:
    _finished.append(stats)


def pop_finished() -> list[dict[str, Any]]:
    """Stats of the backends closed since the last call (the grade driver reads them)."""
    out = list(_finished)
    _finished.clear()
    return out


def settings_dict(s: SandboxSettings) -> dict[str, Any]:
    d = asdict(s)
    d.pop("log_path", None)
    d.pop("uid", None)
    return d
