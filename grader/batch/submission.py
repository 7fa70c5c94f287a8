"""One submission in a trusted worker: staged, tested, its results written.

`TrustedGrader.grade` takes a submission through the stages a trusted worker runs, in order:
staging (`grader.intake.stage`: the files taken, or rejected / empty), the public then the hidden
tests (`grader.batch.testrun`: ``pytest.main`` with ``--backend sandbox``: the student code runs
in a sandbox per submission, this process only decodes data), and the student's files
(`grader.results.results_json`, written where `grader.results.layout` says: results.json last).
`TrustedGrader.finish` writes the results of a run that was stopped from outside, from what it
streamed.  It never runs student code itself.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from grader import kit_version
from grader.batch import warm
from grader.intake.discover import Source, fingerprint
from grader.files import write_atomic
from grader.results.layout import Layout, write_json
from grader.batch.options import GradeError, GradeOptions, Outcome, sandbox_settings, suite_args, test_files
from grader.results.results_json import bounded_messages, build_results
from grader.intake.stage import stage
from grader.batch.testrun import GradePlugin, derandomise_hypothesis, run_pytest
from grader.sandbox.scratch import owned_tempdir
from grader.intake.unpack import RejectedSubmission
from grader.untrusted import printable, shown


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
        self.work = owned_tempdir("kit-grade-")  # no pid in a name the staged folders carry
        os.chmod(self.work, 0o711)
        derandomise_hypothesis()
        self.count = 0
        self.exhausted = False  # ran out of memory: end after this submission
        self.progress_root: Path | None = None  # the batch's progress folder (`grader.batch.warm.record`)
        self._freeze()

    @staticmethod
    def _freeze() -> None:
        """Move what is alive now (torch, pytest, the tests, the caches) out of the collector's
        sight: every collection after it, pytest's own at the end of each run included, walks only
        what one submission's run made.  Done at start-up and after the first submission (which
        imports the test modules): `settle`."""
        import gc

        gc.collect()
        gc.freeze()

    def settle(self) -> None:
        """Between submissions, once the outcome is sent (off the submission's own time): after the
        first one, what it left alive (the test modules' objects, expected values) is frozen, and
        the expected values it computed are named for the next batch (`grader.batch.warm`)."""
        if self.count == 1:
            self._freeze()
            if self.progress_root is not None:
                warm.record(self.progress_root)

    def close(self) -> None:
        from grader.sandbox import zygotes

        zygotes.close_all()  # (its inbox too; it would also end with this process)
        shutil.rmtree(self.work, ignore_errors=True)

    def _pytest(self, target: Path, report: Path, collect_only: bool = False,
                extra: tuple[str, ...] = ()) -> tuple[int, GradePlugin]:
        plugin = GradePlugin()
        return run_pytest(self.files, target, report, plugin, collect_only,
                          extra=(*suite_args(self.options), *extra)), plugin

    def _submission(self, source: Source) -> dict[str, Any]:
        graded_with: dict[str, Any] = {"modules": list(self.options.modules), "hidden": self.options.hidden}
        if self.options.assignment:  # (grader.course.config.recorded reads it back; absent without course.toml)
            graded_with.update(assignment=self.options.assignment, gpu_tests=self.options.gpu_tests)
        return {"source": source.path.name, "kind": source.kind, "sha256": fingerprint(source),
                "graded_with": graded_with}

    def grade(self, source: Source, out_dir: Path, work: dict[str, Any] | None = None) -> Outcome:
        """Grade one submission.  `work` (from the pool): its time budget, the folder where this
        run's progress is streamed (`finish` reads it if this process is stopped), the worker's
        memory limit and the batch's limits (for instructor.json)."""
        from grader import sandbox
        from grader.testing.budget import PeakMeter

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
        if progress is not None:
            self.progress_root = progress.parent
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
        """instructor.json's settings: the sandbox's, and the trusted side's budgets (`grader.testing.budget`)."""
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
#: record of each test as soon as it ended (`grader.testing.pytest_plugin --kit-stream`).
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
