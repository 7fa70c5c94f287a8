"""What every stage of a batch shares: its options, what became of each submission, and its errors.

The bottom of `grader.batch` (it imports no other stage): the command line builds a
`GradeOptions`, the grading pool hands it to every trusted worker as JSON (`options_json`,
`grade_options`), and each worker reports an `Outcome` per submission; `BatchResult` is what
`grader grade` returns.  `sandbox_settings` and `suite_args` turn the options into what the
sandbox and pytest take, the same in every process of the batch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.testing import budget


@dataclass
class GradeOptions:
    out: Path
    jobs: int = 2
    force: bool = False
    modules: tuple[str, ...] = MODULES
    hidden: bool = True
    launcher: str = "auto"  # auto | bubblewrap | rlimits
    call_timeout: float = 30.0
    import_timeout: float = 30.0
    memory_mb: int | None = None  # memory limit (RLIMIT_DATA) per sandbox (None: the sandbox default, 4 GiB)
    progress: bool = True
    device: str = "cpu"  # cpu: GPU tests pending; cuda: only the GPU tests, with the GPU visible in the sandbox
    # the trusted side's budgets (grader.testing.budget): CPU seconds of a trusted worker per submission (0: none),
    # and the memory limit of each trusted worker in MiB (None: the default; 0: none)
    submission_budget: float = budget.DEFAULT_BUDGET
    worker_memory_mb: int | None = None
    # what grades (grader.batch.suite): set by `grade` before anything is graded, written into each
    # instructor.json; a result is kept only when it was graded by the same suite and settings
    suite: str = ""
    # the course.toml assignment graded ("": none, the whole kit), recorded in results.json (grader.course.config);
    # gpu_tests False: its GPU tests are left out (not run, not pending, in no maximum)
    assignment: str = ""
    gpu_tests: bool = True


def options_json(options: GradeOptions) -> str:
    """`options` as the grading pool hands them to a trusted worker."""
    return json.dumps({**asdict(options), "out": str(options.out)})


def grade_options(options_dict: dict[str, Any]) -> GradeOptions:
    """`GradeOptions` from its JSON form (as the grading pool hands it to a worker)."""
    return GradeOptions(**{**options_dict, "out": Path(options_dict["out"]), "modules": tuple(options_dict["modules"])})


@dataclass
class Outcome:
    student: str
    status: str  # graded | partial (stopped by the trusted side's budgets) | empty | rejected | kept | refused | error
    score: float = 0.0
    max_score: float = 0.0
    message: str = ""
    seconds: float = 0.0


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    launcher: str = ""
    warning: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(o.status in ("error", "refused") for o in self.outcomes)


class GradeError(Exception):
    """Grading could not complete for a reason that is not the submission's fault."""


class UsageError(GradeError):
    """The command line names something that is not there: nothing was written."""


def test_files(modules: tuple[str, ...], hidden: bool) -> list[str]:
    """Every public test file, then every hidden one.

    Public before hidden, across modules: a submission's code sees the hidden tests' inputs only
    after every public test (whose failure messages students read) has run, so it cannot smuggle
    them out through a public test's message.
    """
    from grader.testing.suite_process import test_files as files

    public = files(modules, hidden=False)
    return public + [f for f in files(modules, hidden=hidden) if f not in public]


def suite_args(options: GradeOptions) -> tuple[str, ...]:
    """pytest options every run of the batch's suite takes: an assignment whose GPU tests do not count
    leaves them out (`grader.testing.pytest_plugin --gpu-tests none`: not run, not pending, in no maximum)."""
    return () if options.gpu_tests else ("--gpu-tests=none",)


def sandbox_settings(options: GradeOptions) -> tuple[Any, str, str]:
    """(SandboxSettings, launcher, its warning) for a batch graded with `options`: the same in every
    trusted worker and in `grader grade` itself (which starts the batch's mother zygote with them)."""
    from grader import sandbox

    settings = sandbox.SandboxSettings(launcher=options.launcher, call_timeout=options.call_timeout,
                                       import_timeout=options.import_timeout)
    if options.memory_mb:
        settings.limits.data_bytes = int(options.memory_mb) * 2**20
    if options.device == "cuda":
        settings.gpu = True
        settings.limits.data_bytes = settings.limits.as_bytes = None  # CUDA reserves huge ranges
    launcher, warning = sandbox.resolve_launcher(options.launcher)
    settings.launcher = launcher
    return settings, launcher, warning
