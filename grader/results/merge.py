"""`grader merge CPU_DIR GPU_DIR --out DIR`: combine a CPU run and a CUDA run into final results.

The CPU run (`grader grade`, no CUDA) grades everything and records the `gpu` tests as
*pending*; the CUDA run (`grader grade --device cuda`) grades only those.  Merging fills each
pending test with the CUDA run's result for the same test id and rebuilds results.json,
instructor.json and grades.csv, in the layout of `grader.results.layout.Layout` (``students/<id>/``,
``instructor/students/<id>/``).  A rejected or empty submission's GPU tests are pending in the CPU
run like everyone's, and filled with the GPU run's "not graded" / "not attempted".  Runs of different kit versions, or of different submissions
(their files' sha256 differ), are refused: nothing is written.  Tests still pending after the
merge (no CUDA result) keep their points apart: a warning, or a failure with `fail_on_pending`.
A late penalty of the CPU run (`grader.course.late`: ``extra_data.late``) carries over: its percentage
is applied again to the merged raw score (the GPU run's own late data, if any, is not used).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course.late import apply as late_apply
from grader.results.grades import grade_row, grades_csv
from grader.files import write_atomic
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results
from grader.untrusted import shown


class MergeError(Exception):
    """Two result sets that must not be merged; the message says why."""


@dataclass
class MergeResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, list[str]] = field(default_factory=dict)  # student -> still-pending test ids
    filled: int = 0
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _load(folder: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """student -> (results.json, instructor.json) for every graded student in a results folder;
    a folder that does not exist or holds no grades (a typo, a failed run) is refused."""
    runs = {}
    layout = Layout(folder)
    if why := layout.no_grades():
        raise MergeError(why)
    if layout.is_old_layout():
        raise MergeError(f"{folder} holds results of an older kit (DIR/<student>/results.json): grade again")
    for student in layout.students():
        try:
            results = json.loads(layout.results(student).read_text())
            instructor = json.loads(layout.instructor(student).read_text())
        except (OSError, ValueError):
            continue
        runs[student] = (results, instructor)
    return runs


def _identity(results: dict[str, Any]) -> tuple[str, str]:
    extra = results.get("extra_data", {})
    return str(extra.get("kit_version")), str(extra.get("submission", {}).get("sha256"))


def merge_runs(cpu_dir: Path, gpu_dir: Path | None) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]],
                                                              MergeResult]:
    """Merged (results, instructor) documents per student; raises MergeError on a mismatch, or on a
    folder that does not exist or holds no grades.  `gpu_dir` None: no GPU run, every GPU test stays
    pending (the student workflow: the summary table and the feedback pages only)."""
    cpu = _load(cpu_dir)
    gpu = _load(gpu_dir) if gpu_dir is not None else {}
    if not cpu:
        raise MergeError(f"no graded submissions in {cpu_dir}")
    unknown = sorted(set(gpu) - set(cpu))
    if unknown:
        raise MergeError(f"{gpu_dir} has students that {cpu_dir} lacks: {', '.join(unknown)}")
    problems = []
    from grader.results.recorded import recorded

    graded = [recorded(r for r, _ in run.values()).get("assignment", "") for run in (cpu, gpu)]
    if gpu and graded[0] != graded[1]:  # (grader.course.config: a course.toml assignment, or none)
        problems.append(f"the CPU run graded {graded[0] and 'assignment ' + graded[0] or 'no assignment'}, the GPU run "
                        f"{graded[1] and 'assignment ' + graded[1] or 'no assignment'}")
    for student in sorted(set(cpu) & set(gpu)):
        (cv, cs), (gv, gs) = _identity(cpu[student][0]), _identity(gpu[student][0])
        if cv != gv:
            problems.append(f"{student}: kit version {cv} (CPU run) vs {gv} (GPU run)")
        if cs != gs:
            problems.append(f"{student}: the CPU and GPU runs graded different submissions (sha256 {cs[:12]} vs {gs[:12]})")
    if problems:
        raise MergeError("refusing to merge:\n  " + "\n  ".join(problems))

    result = MergeResult()
    merged_results: dict[str, dict[str, Any]] = {}
    merged_instructor: dict[str, dict[str, Any]] = {}
    for student, (results, instructor) in sorted(cpu.items()):
        if "records" not in instructor:  # nothing ran and nothing is recorded: nothing to merge
            merged_results[student], merged_instructor[student] = results, instructor
            result.rows.append(grade_row(student, results))
            continue
        gpu_records = {r["id"]: r for r in gpu.get(student, ({}, {}))[1].get("records", []) if r.get("gpu")}
        records, filled = [], set()
        for r in instructor["records"]:
            if r["status"] == "pending" and r["id"] in gpu_records and gpu_records[r["id"]]["status"] != "pending":
                r = dict(gpu_records[r["id"]])
                filled.add(r["id"])
            records.append(r)
        result.filled += len(filled)
        still = [r["id"] for r in records if r["status"] == "pending"]
        if still:
            result.pending[student] = still
        extra = results.get("extra_data", {})
        gpu_extra = gpu.get(student, ({}, {}))[0].get("extra_data", {})
        status, reason = extra.get("status", "graded"), extra.get("reason", "")
        if status == "graded" and gpu_extra.get("status") == "partial":  # the GPU run was stopped by its budgets
            status, reason = "partial", f"GPU run: {gpu_extra.get('reason', '')}"
        doc = build_results(records, student=student, kit_version=extra.get("kit_version", ""),
                            sandbox=dict(extra.get("sandbox", {})), submission=extra.get("submission", {}),
                            status=status, reason=reason)
        gpu_ran = gpu_extra.get("tests_ran", {}).get("cpu", "cuda run")
        for test in doc["tests"]:
            if test["extra_data"]["id"] in filled:
                test["extra_data"]["ran"] = f"cuda: {gpu_ran.removeprefix('cpu: ')}"
        doc["extra_data"]["tests_ran"] = {"cpu": extra.get("tests_ran", {}).get("cpu", ""),
                                          "cuda": sorted(filled), "pending_gpu": still}
        if extra.get("late"):  # the CPU run's late decision, its percentage applied to the merged raw score
            try:
                late_apply(doc, extra["late"])
            except ValueError as exc:
                raise MergeError(f"{student}: {cpu_dir}: {exc}") from None
        merged_results[student] = doc
        gpu_instructor = gpu.get(student, ({}, {}))[1]
        merged_instructor[student] = {**instructor, "records": records,
                                      "merged_from": [str(d) for d in (cpu_dir, gpu_dir) if d],
                                      **({"gpu_sandbox": gpu_instructor["sandbox"]} if "sandbox" in gpu_instructor
                                         else {})}
        result.rows.append(grade_row(student, doc))
        result.records[student] = records
    return merged_results, merged_instructor, result


def write_merged(out: Path, results: dict[str, dict[str, Any]], instructor: dict[str, dict[str, Any]],
                 merged: MergeResult) -> None:
    out.mkdir(parents=True, exist_ok=True)
    layout = Layout(out)
    for student in results:
        write_json(layout.instructor(student), instructor[student])
        write_json(layout.results(student), results[student])
    from grader.results.recorded import recorded

    write_atomic(layout.grades, grades_csv(merged.rows, recorded(results.values()).get("modules")))


def markdown_summary(merged: MergeResult) -> str:
    """The job-summary table (GitHub Actions renders `$GITHUB_STEP_SUMMARY` as markdown)."""
    lines = ["## Autograder", "", "| student | score (points) | max (points) | pending (points) |",
             "| --- | ---: | ---: | ---: |"]
    for row in merged.rows:
        student = shown(row["student"]).replace("|", "\\|")
        lines.append(f"| {student} | {row['score']} | {row['max_score']} | {row['pending']} |")
    if merged.pending:
        lines += ["", f"GPU tests still pending for {len(merged.pending)} submission(s): their points are not counted yet."]
    return "\n".join(lines) + "\n"
