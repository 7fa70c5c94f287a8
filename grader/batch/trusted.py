"""The trusted worker of `grader grade`: one process per job slot, grading submission after submission.

    python -m grader.batch.trusted --worker FD OPTIONS_JSON     (started by `grader.batch.grade`)

It imports torch, pytest and the test modules once, then for each job it receives on its socket:
stages the submission (`grader.batch.stage.stage`), runs the public then the hidden tests with
``pytest.main(... --backend sandbox)`` (the student code runs in a sandbox per submission; this
process only decodes data), and writes the results folder's files for that student
(`grader.batch.results`).  It never runs student code itself.  The parent (`grader.batch.grade`)
hands out the jobs, restarts a worker that died, and writes the batch's files.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, kit_version
from grader.batch.discover import Source, fingerprint
from grader.batch.stage import stage
from grader.batch.unpack import RejectedSubmission
from grader.batch.grade import GradeError, GradeOptions, Outcome, test_files
from grader.batch.layout import Layout, write_atomic, write_json
from grader.batch.results import bounded_messages, build_results
from grader.untrusted import LOG_LIMIT, printable, shown

class _GradePlugin:
    """Per-test RNG seeds from the node id, and a record of collection errors."""

    def __init__(self) -> None:
        self.collect_errors: list[str] = []

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {str(report.longrepr)[-1500:]}")

    def pytest_runtest_setup(self, item: Any) -> None:
        import hashlib
        import random

        import numpy as np
        import torch

        seed = int(hashlib.sha256(item.nodeid.encode()).hexdigest()[:8], 16)
        random.seed(seed)
        np.random.seed(seed)
        if torch.cuda.is_available():
            torch.manual_seed(seed)
        else:  # torch.manual_seed would also queue a lazy CUDA/XPU/MTIA seeding, with a stack trace, per test
            torch.random.default_generator.manual_seed(seed)


def derandomise_hypothesis() -> None:
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        return
    settings.register_profile("kit-grade", derandomize=True, database=None, deadline=None, print_blob=False,
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("kit-grade")


def _set_parent_death_signal() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the pipes closing still ends the worker
        pass


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


def run_pytest(files: list[str], target: Path, report: Path, plugin: Any, collect_only: bool = False,
               quiet: str = "-q", extra: tuple[str, ...] = ()) -> int:
    """``pytest.main`` over `files` for the submission staged at `target`, in this process."""
    import pytest

    # the trusted worker imported hypothesis (and, from the second submission on, everything) before
    # pytest.main: pytest's "already imported, cannot be rewritten" warnings are noise in the log.
    # No logging capture: no test logs, and its per-test handlers cost 0.1-0.2 s per submission.
    # No unraisable-exception hook: it only warns (no verdict), and its forced collections at
    # the end of every run cost 0.07 s per submission (no student code runs in this process).
    args = [*files, f"--target={target}", "--backend=sandbox", f"--kit-report={report}",
            f"--rootdir={KIT_ROOT}", quiet, "--tb=short", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-p", "no:xdist", "-p", "no:logging", "-p", "no:unraisableexception",
            "-W", "ignore::pytest.PytestAssertRewriteWarning", *extra]
    if collect_only:
        args.append("--collect-only")
    cwd = os.getcwd()
    os.chdir(KIT_ROOT)
    try:
        return int(pytest.main(args, plugins=[plugin]))
    finally:
        os.chdir(cwd)


def collect(options: GradeOptions) -> None:
    """Import and collect the batch's test files without running any (the trusted fork-server's
    warm-up: the workers it forks find the test modules imported and rewritten)."""
    files = test_files(options.modules, options.hidden)
    with tempfile.TemporaryDirectory(prefix="kit-collect-") as folder:
        empty = Path(folder) / "empty"
        empty.mkdir()
        plugin = _GradePlugin()
        run_pytest(files, empty, Path(folder) / "report.json", plugin, collect_only=True, quiet="-qq",
                   extra=suite_args(options))
        if plugin.collect_errors:
            raise GradeError("the tests could not be collected: " + " | ".join(plugin.collect_errors)[:2000])


def suite_args(options: GradeOptions) -> tuple[str, ...]:
    """pytest options every run of the batch's suite takes: an assignment whose GPU tests do not count
    leaves them out (`grader.pytest_plugin --gpu-tests none`: not run, not pending, in no maximum)."""
    return () if options.gpu_tests else ("--gpu-tests=none",)


def grade_options(options_dict: dict[str, Any]) -> GradeOptions:
    """`GradeOptions` from its JSON form (as the grading pool hands it to a worker)."""
    return GradeOptions(**{**options_dict, "out": Path(options_dict["out"]), "modules": tuple(options_dict["modules"])})


class TrustedGrader:
    """Grades submissions one after another in this process (torch and the tests imported once)."""

    def __init__(self, options: GradeOptions):
        from grader import sandbox

        self.options = options
        self.files = test_files(options.modules, options.hidden)
        if not self.files:
            raise GradeError(f"no test files for modules {', '.join(options.modules)}")
        if options.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise GradeError("--device cuda: this machine has no CUDA (torch.cuda.is_available() is False)")
        self.settings, self.launcher, self.warning = sandbox_settings(options)
        self.settings.uid = sandbox.acquire_uid()
        sandbox.configure(self.settings)
        sandbox.kit_bundle()
        self.work = Path(tempfile.mkdtemp(prefix=f"kit-grade-{os.getpid()}-"))
        os.chmod(self.work, 0o711)
        derandomise_hypothesis()
        self.count = 0
        self.exhausted = False  # ran out of memory: end after this submission
        self._freeze()

    @staticmethod
    def _freeze() -> None:
        """Move what is alive now (torch, pytest, the tests, the caches) out of the collector's
        sight: every collection after it, pytest's own at the end of each run included, walks only
        what one submission's run made.  Done at start-up and after the first submission (which
        imports the test modules)."""
        import gc

        gc.collect()
        gc.freeze()

    def close(self) -> None:
        from grader.sandbox import zygote

        zygote.close_all()  # (its inbox too; it would also end with this process)
        shutil.rmtree(self.work, ignore_errors=True)

    def _pytest(self, target: Path, report: Path, collect_only: bool = False,
                extra: tuple[str, ...] = ()) -> tuple[int, _GradePlugin]:
        plugin = _GradePlugin()
        return run_pytest(self.files, target, report, plugin, collect_only,
                          extra=(*suite_args(self.options), *extra)), plugin

    def _submission(self, source: Source) -> dict[str, Any]:
        graded_with: dict[str, Any] = {"modules": list(self.options.modules), "hidden": self.options.hidden}
        if self.options.assignment:  # (grader.course.recorded reads it back; absent without course.toml)
            graded_with.update(assignment=self.options.assignment, gpu_tests=self.options.gpu_tests)
        return {"source": source.path.name, "kind": source.kind, "sha256": fingerprint(source),
                "graded_with": graded_with}

    def grade(self, source: Source, out_dir: Path, work: dict[str, Any] | None = None) -> Outcome:
        """Grade one submission.  `work` (from the pool): its time budget, the folder where this
        run's progress is streamed (`finish` reads it if this process is stopped), the worker's
        memory limit and the batch's limits (for instructor.json)."""
        from grader import sandbox
        from grader.batch.budget import PeakMeter

        work = work or {}
        t0, cpu0 = time.monotonic(), time.process_time()
        meter = PeakMeter(work.get("memory") or {})
        self.count += 1
        layout = Layout(out_dir)
        job = self.work / f"job{self.count}"
        job.mkdir()
        os.chmod(job, 0o711)
        report = job / "report.json"
        print(f"=== {shown(source.student)} ({shown(source.path)}) ===", flush=True)
        submission = self._submission(source)
        progress = Path(work["progress"]) if work.get("progress") else None
        extra: tuple[str, ...] = ()
        if progress is not None:
            extra += (f"--kit-stream={progress / STREAM}",)
        if work.get("budget"):
            extra += (f"--kit-budget={work['budget']}", f"--kit-budget-start={cpu0}")
        try:
            try:
                staged = stage(source, job / "submission")
            except RejectedSubmission as exc:
                return self._not_run(source, layout, job, submission, "rejected", str(exc), t0)
            submission.update(files=staged.files, helpers=staged.helpers,
                              missing=[m for m in staged.missing if m in self.options.modules],
                              not_taken=staged.not_taken, layout=staged.layout, notes=staged.notes)
            if staged.empty:
                submission["seen"] = staged.seen
                return self._not_run(source, layout, job, submission, "empty", "", t0)
            if progress is not None:
                write_json(progress / SUBMISSION, submission)
            # the sandbox writes the submission's output here; it reaches the results folder escaped
            raw_log = job / "sandbox.log"
            self.settings.log_path = str(raw_log)
            sandbox.pop_finished()
            code, plugin = self._pytest(staged.folder, report, extra=extra)
            if self.count == 1:
                self._freeze()
            stats = sandbox.pop_finished()
            sandbox_stats = stats[-1] if stats else {"launcher": self.launcher, "warning": self.warning, "starts": 0,
                                                      "calls": 0, "timeouts": 0, "crashes": 0, "garbage": 0}
            if sandbox_stats.get("infra_error"):
                raise GradeError(f"the sandbox could not run: {sandbox_stats['infra_error']}")
            if plugin.collect_errors:
                raise GradeError("the tests could not be collected: " + " | ".join(plugin.collect_errors)[:2000])
            data = json.loads(report.read_text()) if report.exists() else {}
            stopped = data.get("stopped") or {}
            # (2: pytest "interrupted", which is how a run that spent its budget ends)
            if code not in ((0, 1, 2) if stopped else (0, 1)) or not data:
                raise GradeError(f"pytest ended with exit code {code} and no report")
            records = bounded_messages(data["tests"])  # (what instructor.json and results.json hold)
            if not records:
                raise GradeError("no graded tests ran")
            if stopped.get("why") == "memory":
                self.exhausted = True  # a fresh process for the next submission
            status, reason = ("partial", stopped["message"]) if stopped else ("graded", "")
            sandbox_stats = {**sandbox_stats, "launcher": sandbox_stats.get("launcher", self.launcher)}
            doc = build_results(records, student=source.student, kit_version=kit_version(), sandbox=sandbox_stats,
                                submission=submission, status=status, reason=reason)
            instructor = {"student": source.student, "kit_version": kit_version(), "suite": self.options.suite, "status": status,
                          **({"reason": reason} if reason else {}),
                          "records": records, "seconds": round(time.monotonic() - t0, 1),
                          "sandbox": {k: v for k, v in sandbox_stats.items() if k != "output"},
                          "settings": self._settings(work), "submission": submission,
                          "trusted": {"cpu_seconds": round(time.process_time() - cpu0, 2), **meter.read(),
                                      **({"stopped": stopped} if stopped else {})}}
            self._copy_log(raw_log, layout.sandbox_log(source.student))
            write_json(layout.instructor(source.student), instructor)
            write_json(layout.results(source.student), doc)
            return Outcome(source.student, status, float(doc["score"]), float(doc["max_score"]), message=reason,
                           seconds=time.monotonic() - t0)
        finally:
            self.settings.log_path = None
            shutil.rmtree(job, ignore_errors=True)

    @staticmethod
    def _copy_log(raw: Path, dest: Path) -> None:
        """The sandbox's log of the submission's output, with control characters escaped."""
        try:
            text = raw.read_bytes().decode("utf-8", "replace")
        except OSError:
            text = "(the sandbox wrote no log)"
        write_atomic(dest, printable(text, newlines=True) + "\n")

    def _settings(self, work: dict[str, Any]) -> dict[str, Any]:
        """instructor.json's settings: the sandbox's, and the trusted side's budgets (`grader.batch.budget`)."""
        from grader import sandbox

        memory = {k: v for k, v in (work.get("memory") or {}).items() if k not in ("cgroup", "version")}
        return {**sandbox.settings_dict(self.settings), "trusted": {**work.get("limits", {}), "worker_memory": memory}}

    def _collected(self, job: Path) -> list[dict[str, Any]]:
        """Every test's record, none run (collected against an empty folder)."""
        report = job / "report.json"
        empty = job / "empty"
        empty.mkdir()
        code, plugin = self._pytest(empty, report, collect_only=True)
        records = json.loads(report.read_text())["tests"] if report.exists() else []
        if plugin.collect_errors or not records:
            raise GradeError("the tests could not be collected: " + " | ".join(plugin.collect_errors)[:2000])
        return records

    def finish(self, source: Source, out_dir: Path, work: dict[str, Any]) -> Outcome:
        """The results of a submission whose worker was stopped from outside (killed over its time
        budget or its memory limit, or dead twice; `work["finish"]` says why): the tests that run
        finished score as it recorded them (its stream), every other one is not graded (GPU tests
        of a CPU run stay pending); status partial."""
        t0 = time.monotonic()
        why = str(work["finish"])
        layout = Layout(out_dir)
        progress = Path(work.get("progress") or self.work / "no-progress")
        self.count += 1
        job = self.work / f"job{self.count}"
        job.mkdir()
        print(f"=== {shown(source.student)}: results of the stopped run ({shown(why)}) ===", flush=True)
        try:
            try:
                submission = json.loads((progress / SUBMISSION).read_text())
            except (OSError, ValueError):  # stopped before staging ended
                submission = self._submission(source)
            finished = {r["id"]: r for r in _read_stream(progress / STREAM)}
            records = self._collected(job)
            for i, r in enumerate(records):
                if r["id"] in finished:
                    records[i] = finished[r["id"]]
                elif r.get("gpu") and self.options.device != "cuda":
                    r.update(status="pending", message="needs CUDA: graded on a GPU machine by the course staff")
                else:
                    r.update(status="failed", message=f"not graded: {why}")
            records = bounded_messages(records)
            public_sandbox = {"launcher": self.launcher, "warning": self.warning}
            doc = build_results(records, student=source.student, kit_version=kit_version(), sandbox=public_sandbox,
                                submission=submission, status="partial", reason=why)
            note = f"the trusted worker was stopped ({why}): no statistics or output of its sandbox were kept"
            write_atomic(layout.sandbox_log(source.student), f"({note})\n")
            write_json(layout.instructor(source.student), {
                "student": source.student, "kit_version": kit_version(), "suite": self.options.suite, "status": "partial", "reason": why,
                "records": records, "seconds": round(time.monotonic() - t0, 1), "sandbox": {**public_sandbox, "note": note},
                "settings": self._settings(work), "submission": submission,
                "trusted": {"stopped": {"why": work.get("stopped_by", ""), "message": why}}})
            write_json(layout.results(source.student), doc)
            return Outcome(source.student, "partial", float(doc["score"]), float(doc["max_score"]), message=why,
                           seconds=time.monotonic() - t0)
        finally:
            shutil.rmtree(job, ignore_errors=True)

    def _not_run(self, source: Source, layout: Layout, job: Path, submission: dict[str, Any], status: str,
                 reason: str, t0: float) -> Outcome:
        """A rejected or empty submission: nothing runs; every test is listed, none earns points.

        GPU tests are pending in a CPU run, as for every other submission (the GPU run rejects
        the same archive, and `grader merge` then records them as not graded)."""
        records = self._collected(job)
        for r in records:
            if r.get("gpu") and self.options.device != "cuda":
                r.update(status="pending", message="needs CUDA: graded on a GPU machine by the course staff")
            elif status == "empty":
                r.update(status="not_attempted", message="not attempted: the submission holds no module file")
            else:
                r.update(status="failed", message=f"not graded: the submission was rejected ({reason})")
        doc = build_results(records, student=source.student, kit_version=kit_version(), sandbox={},
                            submission=submission, status=status, reason=reason)
        write_json(layout.instructor(source.student), {"student": source.student, "kit_version": kit_version(), "suite": self.options.suite,
                                                       "status": status, "reason": reason, "records": records,
                                                       "seconds": round(time.monotonic() - t0, 1),
                                                       "submission": submission})
        write_json(layout.results(source.student), doc)
        return Outcome(source.student, status, 0.0, float(doc["max_score"]), message=reason,
                       seconds=time.monotonic() - t0)


#: In a job's progress folder (`grader.batch.grade`): what was taken from the submission, and the
#: record of each test as soon as it ended (`grader.pytest_plugin --kit-stream`).
SUBMISSION = "submission.json"
STREAM = "records.jsonl"


def _read_stream(path: Path) -> list[dict[str, Any]]:
    """The records of a run's stream (a last line cut short by a kill is skipped)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            out.append(record)
    return out


#: Characters of one submission's tests.log (the worker log keeps everything; 181 points of failed
#: tests with pytest's short tracebacks write a few hundred KB at most).
TESTS_LOG_LIMIT = 4 * 2**20


class _StudentLog:
    """One submission's copy of the worker log: ``DIR/instructor/students/<id>/tests.log``
    (`Layout.tests_log`), the same escaped text, at most `TESTS_LOG_LIMIT` characters.

    Written as the run goes (a worker killed mid-run leaves what it wrote); `append` for the results
    of a stopped run, after what the killed run wrote."""

    def __init__(self, path: Path, append: bool = False):
        self.left = TESTS_LOG_LIMIT
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file: Any = open(path, "a" if append else "w", encoding="utf-8", buffering=1)  # a kill loses no line
        except OSError as exc:  # the worker log still has it all: never a reason to stop grading
            print(f"(no tests.log for this submission: {exc})", file=sys.stderr)
            self.file = None

    def write(self, text: str) -> None:
        if self.left <= 0 or self.file is None:
            return
        if len(text) > self.left:
            text = text[: self.left] + f"\n[tests.log cut at {TESTS_LOG_LIMIT} characters: the worker log has the rest]\n"
        self.left -= len(text)
        self.file.write(text)

    def __enter__(self) -> "_StudentLog":
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _EscapingStream):
                stream.flush()
                stream.copy = self
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _EscapingStream) and stream.copy is self:
                stream.flush()
                stream.copy = None
        if self.file is not None:
            self.file.close()


class _EscapingStream(io.TextIOBase):
    """A text stream that escapes control characters before writing to `inner` (the worker's log),
    and to `copy` (the student's tests.log, while one of their runs is graded).

    pytest's report quotes the submission's exception messages and reprs: an instructor who
    runs `less` or `cat` on the log must not get a terminal repainted by them."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.copy: _StudentLog | None = None

    def write(self, text: str) -> int:
        escaped = shown(text, LOG_LIMIT, newlines=True)
        self.inner.write(escaped)
        if self.copy is not None:
            self.copy.write(escaped)
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


def _worker_main(conn: Any, options_dict: dict[str, Any]) -> None:
    """A trusted worker process: grade the jobs received on `conn` until told to stop."""
    _set_parent_death_signal()
    sys.stdout = _EscapingStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _EscapingStream(sys.stderr)  # type: ignore[assignment]
    options = grade_options(options_dict)
    try:
        grader = TrustedGrader(options)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the batch cleanly
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", {"launcher": grader.launcher, "warning": grader.warning, "uid": grader.settings.uid}))
    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                break
            if job is None:
                break
            source = Source(job["student"], Path(job["path"]))
            # this student's part of the log also goes to their tests.log (a stopped run's results: after
            # what the killed run wrote)
            with _StudentLog(Layout(options.out).tests_log(source.student), append=bool(job.get("finish"))):
                try:
                    if job.get("finish"):
                        outcome = grader.finish(source, options.out, job)
                    else:
                        outcome = grader.grade(source, options.out, job)
                except MemoryError:  # out of memory outside a test (under RLIMIT_AS): its results from what it finished
                    from grader.batch.budget import MEMORY_MESSAGE

                    grader.exhausted = True
                    outcome = grader.finish(source, options.out, {**job, "finish": MEMORY_MESSAGE,
                                                                  "stopped_by": "memory"})
                except GradeError as exc:
                    print(f"not graded: {exc}", file=sys.stderr)
                    outcome = Outcome(source.student, "error", message=str(exc))
                except Exception as exc:  # noqa: BLE001 - never let one submission stop the batch
                    import traceback

                    traceback.print_exc()
                    outcome = Outcome(source.student, "error", message=f"grader error: {type(exc).__name__}: {exc}")
                sys.stdout.flush()
                sys.stderr.flush()
            # "last": out of memory once, this process ends; the pool starts a fresh one in its slot
            conn.send(("last" if grader.exhausted else "done", asdict(outcome)))
            if grader.exhausted:
                break
    finally:
        grader.close()


def _worker_cli(argv: list[str]) -> int:
    """`python -m grader.batch.trusted --worker FD OPTIONS_JSON`: the trusted worker's entry point."""
    from multiprocessing.connection import Connection

    if len(argv) != 3 or argv[0] != "--worker":
        print("usage: python -m grader.batch.trusted --worker FD OPTIONS_JSON (started by `grader grade`)", file=sys.stderr)
        return 2
    conn = Connection(int(argv[1]))
    _worker_main(conn, json.loads(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(_worker_cli(sys.argv[1:]))
