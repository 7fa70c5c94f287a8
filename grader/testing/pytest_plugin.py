"""The kit's pytest plugin: target selection, the `student` fixture, points, and the report.

Loaded for every run via `addopts = "-p grader.testing.pytest_plugin"` in pyproject.toml.

* `--target solutions|assignment|PATH` picks the implementation under test (default:
  `solutions` where it exists, else `assignment`).
* Graded tests live in `tests/public/` and `tests/hidden/`; each must carry exactly one
  `@pytest.mark.points(n)`.  Tests in `tests/hidden/` are marked `hidden`, tests in
  `tests/kit/` are marked `kit` (self-tests of the kit, never graded).
* Tests marked `gpu` are skipped as *pending* on a machine without CUDA (left out altogether with
  `--gpu-tests none`: an assignment whose GPU tests do not count, `grader.course.config`); a test the in-process
  backend cannot check on this machine (`grader.testing.student.CheckedWhenGraded`: a memory measurement
  on Windows) is pending too, "checked only when graded".
* `--kit-report FILE` writes one JSON record per graded test (status, points, a one-line
  plain-language message, and the pictures' data the test attached with `grader.testing.figures.attach`),
  which `grader check/validate/grade` turn into scores (and `grader.reports.feedback` into pages).
* `--kit-stream FILE` appends each graded test's record to FILE (one JSON line) as soon as the
  test ends: what a run that was stopped (killed over its budget or out of memory) had earned.
* `--kit-budget SECONDS` (`grader grade`'s per-submission budget, `grader.testing.budget`): once this
  process has spent SECONDS of CPU time since `--kit-budget-start`, every further probe call fails
  at once, the test in progress fails, the remaining tests are not run and are recorded as not
  graded.  A MemoryError in this (trusted) process stops the run the same way.  The report then
  says why (``stopped``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from grader import MODULES, kit_version
from grader.testing.run_stop import Budgeted, RunStop, out_of_memory
from grader.testing.student import CheckedWhenGraded, NotAttempted, ProbeError, Student

GRADED_DIRS = ("public", "hidden")
PENDING_REASON = "pending: needs CUDA"
NOT_RUN = "the test did not run"  # a record's message until its test ends


def pytest_configure(config: pytest.Config) -> None:
    # One intra-op thread, as in the sandbox: the suites' tensors are tiny, and on a busy machine
    # a second OpenMP thread that is not scheduled makes every small op wait for it (the
    # optimizer suite took 60 s instead of 9 at load 5).  GPU work is unaffected.
    import torch

    torch.set_num_threads(1)
    # fresh-process checks fork it (grader/boundary/fresh.py); off Linux (a student's macOS or Windows: a fork
    # of a process running torch is unsafe on macOS, absent on Windows) they start interpreters
    if config.getoption("backend") == "inprocess" and sys.platform.startswith("linux"):
        from grader.boundary import fresh

        fresh.start()
    budget = config.getoption("kit_budget")
    start = config.getoption("kit_budget_start")
    config.stash[_STOP] = RunStop(budget, time.process_time() if start is None else start)


def pytest_unconfigure(config: pytest.Config) -> None:
    from grader.boundary import fresh

    fresh.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kit", "assignment kit")
    group.addoption("--target", default=os.environ.get("KIT_TARGET"),
                    help="implementation under test: solutions, assignment, or a folder (default: "
                         "solutions if present, else assignment; env KIT_TARGET)")
    group.addoption("--kit-report", default=None, help="write the graded tests' results as JSON here")
    group.addoption("--device", default=os.environ.get("KIT_DEVICE", "auto"), choices=("auto", "cpu", "cuda"),
                    help="cpu: GPU tests pending even where CUDA exists; cuda: run only the GPU tests; "
                         "auto: GPU tests run where CUDA exists, pending elsewhere")
    group.addoption("--backend", default=os.environ.get("KIT_BACKEND", "inprocess"),
                    choices=("inprocess", "sandbox"), help="how probes reach the code under test")
    group.addoption("--gpu-tests", default=os.environ.get("KIT_GPU_TESTS", "count"), choices=("count", "none"),
                    help="none: the graded GPU tests are left out (an assignment whose GPU tests do not count, "
                         "grader.course.config): not run, not pending, in no maximum")
    group.addoption("--kit-stream", default=None,
                    help="append each graded test's record to this file (JSON lines) as soon as the test ends")
    group.addoption("--kit-budget", default=None, type=float, metavar="SECONDS",
                    help="CPU seconds of this process for the run (grader grade's per-submission budget): once "
                         "spent, probe calls fail at once and the remaining tests are not graded")
    group.addoption("--kit-budget-start", default=None, type=float, metavar="CPU_SECONDS",
                    help="this process's CPU time (time.process_time) at which the budget started (default: now)")


def graded_kind(path: Path) -> str | None:
    """"public" / "hidden" for a graded test file, "kit" for a self-test, else None."""
    parts = path.parts
    for kind in (*GRADED_DIRS, "kit"):
        if "tests" in parts and kind in parts[parts.index("tests"):]:
            return kind
    return None


def module_of(path: Path) -> str:
    """tests/public/test_memory.py -> "memory" (graded test files are named after their module)."""
    name = path.stem.removeprefix("test_")
    if name not in MODULES:
        raise pytest.UsageError(f"{path}: graded test files must be named test_<module>.py, one of {MODULES}")
    return name


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    device = config.getoption("--device")
    cuda = _cuda_available() and device != "cpu"
    if config.getoption("--gpu-tests") == "none":  # not part of the assignment: as if they were not there
        drop = [i for i in items if i.get_closest_marker("gpu") and graded_kind(Path(str(i.fspath))) in GRADED_DIRS]
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if i not in drop]
    if device == "cuda":
        if not _cuda_available():
            raise pytest.UsageError("--device cuda: this machine has no CUDA (torch.cuda.is_available() is False)")
        keep = [i for i in items if i.get_closest_marker("gpu") or graded_kind(Path(str(i.fspath))) not in GRADED_DIRS]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    for item in items:
        kind = graded_kind(Path(str(item.fspath)))
        if kind == "kit":
            item.add_marker(pytest.mark.kit)
            continue
        if kind is None:
            continue
        marks = list(item.iter_markers("points"))
        if len(marks) != 1 or len(marks[0].args) != 1 or not isinstance(marks[0].args[0], (int, float)):
            raise pytest.UsageError(f"{item.nodeid}: a graded test needs exactly one @pytest.mark.points(n)")
        if kind == "hidden":
            item.add_marker(pytest.mark.hidden)
        if item.get_closest_marker("gpu") and not cuda:
            item.add_marker(pytest.mark.skip(reason=PENDING_REASON))
        item.stash[_RECORD] = {
            "id": item.nodeid,
            "module": module_of(Path(str(item.fspath))),
            "name": item.name,
            "points": marks[0].args[0],
            "hidden": kind == "hidden",
            "gpu": item.get_closest_marker("gpu") is not None,
            "checked": _first_line(getattr(item, "obj", None).__doc__ if hasattr(item, "obj") else None)
                       or item.name.removeprefix("test_").replace("_", " "),
            "status": "error",
            "message": NOT_RUN,
        }


_RECORD = pytest.StashKey[dict[str, Any]]()


_STOP = pytest.StashKey[RunStop]()


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _first_line(text: str | None) -> str:
    return text.strip().splitlines()[0].strip() if text and text.strip() else ""


# -- the fixture ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def student(request: pytest.FixtureRequest) -> Student:
    """The implementation under test, reachable only through probes that return data."""
    from grader.boundary.target import resolve_target

    config = request.config
    folder = resolve_target(config.getoption("--target"))
    backend_name = config.getoption("--backend")
    sources = None
    if backend_name == "sandbox":  # read before anything of the submission runs (grader.rules.sources.SourceSet.freeze)
        from grader.rules.sources import SourceSet

        sources = SourceSet(folder).freeze()
        from grader.sandbox import SandboxBackend  # added with the batch grader

        backend = SandboxBackend(folder)
    else:
        from grader.boundary.backends import InProcessBackend

        backend = InProcessBackend(folder)
    request.addfinalizer(backend.close)
    stop = config.stash[_STOP]
    return Student(Budgeted(backend, stop) if stop.budget is not None else backend, str(folder), sources)


# -- outcomes -------------------------------------------------------------------------------

def describe_failure(excinfo: pytest.ExceptionInfo[BaseException]) -> tuple[str, str]:
    """(status, one or two plain-language lines) for a failed graded test."""
    exc = excinfo.value
    if isinstance(exc, NotAttempted):
        return "not_attempted", f"not attempted: {exc.detail}"
    if isinstance(exc, ProbeError):
        return "failed", exc.detail
    if isinstance(exc, AssertionError):
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        return "failed", "\n".join(lines[:2])[:600] or "assertion failed"
    return "failed", f"{type(exc).__name__}: {str(exc)[:400]}"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A graded hypothesis test replays the examples two earlier passing runs in this process drew
    (`grader.testing.replay`: a grading worker grades many submissions on the same examples)."""
    from grader.testing import replay

    return replay.pyfunc_call(pyfuncitem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """While a graded test runs, `grader.testing.figures.attach` stores its pictures' data in its record.
    A `gpu` test holds the machine's GPU lock while it runs (`gpu_lock`)."""
    record = item.stash.get(_RECORD, None)
    if record is None:
        return (yield)
    from grader.testing import figures

    record.pop("figures", None)  # a rerun starts afresh
    stop = item.config.stash[_STOP]
    if stop.stopped():  # (spent during the test's set-up)
        raise _NotGraded(stop.message)
    with figures.collecting(record), (gpu_lock() if item.get_closest_marker("gpu") else _nothing()):
        return (yield)


class _NotGraded(Exception):
    """A test not run: the run had stopped (`RunStop`)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """After each graded test: its record goes to the stream (`--kit-stream`), and a run that has
    stopped (`RunStop`) runs no further test."""
    result = yield
    record = item.stash.get(_RECORD, None)
    stream = item.config.getoption("kit_stream")
    if record is not None and stream:
        with open(stream, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    stop = item.config.stash[_STOP]
    if stop.stopped():
        item.session.shouldstop = stop.message
    return result


@contextlib.contextmanager
def _nothing():
    yield


@contextlib.contextmanager
def gpu_lock():
    """One `gpu` test at a time on this machine, whichever process runs it.

    The GPU tests time matmuls and training steps, and measure CUDA memory: two at once on one
    GPU (`grader grade --device cuda -j 2`, or `grader validate -j N` on a CUDA machine) slow
    each other down, and a correct `time_matmul` then reports an MFU of 0.2 instead of 0.8 (seen
    on an H100 with 15 at once).  An advisory lock on a file shared by every process of the kit
    on this machine (``$KIT_GPU_LOCK``, default ``<tempdir>/kit-gpu.lock``); the trusted test
    process holds it, the sandboxed code never sees it.  A probe's call timeout bounds the wait."""
    import tempfile

    try:
        import fcntl
    except ImportError:  # Windows: a student's own machine, one test process (grading runs on Linux)
        yield
        return
    path = os.environ.get("KIT_GPU_LOCK") or os.path.join(tempfile.gettempdir(), "kit-gpu.lock")
    try:  # read-only is enough for flock, and works on a lock file another user created
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except PermissionError:  # e.g. fs.protected_regular refusing O_CREAT on another user's file in /tmp
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            fd = os.open(f"{path}.{os.getuid()}", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    record = item.stash.get(_RECORD, None)
    if record is None:
        return report
    if report.skipped and report.when in ("setup", "call"):
        # "pending: ..." (no CUDA here, or hardware this GPU lacks): neither lost nor given
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
        reason = reason.removeprefix("Skipped: ")
        if call.excinfo is not None and isinstance(call.excinfo.value, CheckedWhenGraded):
            record.update(status="pending", message=call.excinfo.value.why)  # (never where the sandbox runs it)
        elif PENDING_REASON in reason:
            record.update(status="pending", message="needs CUDA: graded on a GPU machine by the course staff")
        elif reason.startswith("pending:"):
            record.update(status="pending", message=reason.removeprefix("pending:").strip())
        else:
            record.update(status="skipped", message=reason)
    elif report.when == "setup":
        if report.failed:
            record.update(status="error", message=f"the test could not start: {call.excinfo.typename if call.excinfo else ''}")
    elif report.when == "call":
        if report.passed:
            record.update(status="passed", message="")
        elif report.failed and call.excinfo is not None:
            status, message = describe_failure(call.excinfo)
            record.update(status=status, message=message)
    if report.failed and call.excinfo is not None and report.when in ("setup", "call"):
        stop = item.config.stash[_STOP]
        if stop.budget is not None and out_of_memory(call.excinfo.value):  # (grader grade's trusted worker)
            from grader.testing.budget import MEMORY_MESSAGE

            stop.stop("memory", MEMORY_MESSAGE)
        if stop.stopped():  # the run stopped during this test: it earns nothing, and says why
            record.update(status="failed", message=f"not graded: {stop.message}")
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--kit-report")
    if not path:
        return
    stop = session.config.stash[_STOP]
    if stop.why:  # the tests never run: not graded (GPU tests of a CPU run stay pending, as for everyone)
        for item in session.items:
            record = item.stash.get(_RECORD, None)
            if record is not None and record["status"] == "error" and record["message"] == NOT_RUN:
                if any(PENDING_REASON in str(m.kwargs.get("reason", "")) for m in item.iter_markers("skip")):
                    record.update(status="pending", message="needs CUDA: graded on a GPU machine by the course staff")
                else:
                    record.update(status="failed", message=f"not graded: {stop.message}")
    records = [item.stash[_RECORD] for item in session.items if _RECORD in item.stash]
    report = {
        "kit_version": kit_version(),
        "target": str(session.config.getoption("--target") or ""),
        "backend": session.config.getoption("--backend"),
        "cuda": _cuda_available(),
        "device": session.config.getoption("--device"),
        "tests": records,
        **({"stopped": {"why": stop.why, "message": stop.message}} if stop.why else {}),
    }
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1))
    tmp.replace(path)
