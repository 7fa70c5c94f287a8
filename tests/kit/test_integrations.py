"""Kit self-tests: merging CPU and GPU runs, the nbgrader gradebook, the GitHub workflow."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.integrations.github import WORKFLOW
from grader.integrations.gradebook import write_gradebook
from grader.batch.merge import MergeError, merge_runs, write_merged
from grader.batch.results import Layout, build_results, validate_results, write_json

SHA = {"alice": "a" * 64, "bob": "b" * 64}


def _records(gpu_status: str, cpu_status: str = "passed") -> list[dict]:
    return [
        {"id": "tests/public/test_memory.py::test_a", "module": "memory", "name": "test_a", "points": 2,
         "hidden": False, "gpu": False, "checked": "a", "status": cpu_status, "message": ""},
        {"id": "tests/hidden/test_views.py::test_b", "module": "views", "name": "test_b", "points": 3,
         "hidden": True, "gpu": False, "checked": "b", "status": "passed", "message": ""},
        {"id": "tests/public/test_flops.py::test_mfu", "module": "flops", "name": "test_mfu", "points": 4,
         "hidden": False, "gpu": True, "checked": "mfu", "status": gpu_status, "message": ""},
    ]


def _write_run(folder: Path, student: str, records: list[dict], *, version: str = "0.1.0", sha: str | None = None,
               only_gpu: bool = False) -> None:
    records = [r for r in records if r["gpu"]] if only_gpu else records
    submission = {"sha256": sha or SHA[student], "files": {}}
    doc = build_results(records, student=student, kit_version=version, sandbox={"launcher": "bubblewrap"},
                        submission=submission)
    write_json(Layout(folder).results(student), doc)
    write_json(Layout(folder).instructor(student), {"student": student, "kit_version": version, "records": records,
                                                    "submission": submission})


@pytest.fixture
def runs(tmp_path):
    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    _write_run(cpu, "alice", _records("pending"))
    _write_run(cpu, "bob", _records("pending", cpu_status="failed"))
    _write_run(gpu, "alice", _records("passed"), only_gpu=True)
    _write_run(gpu, "bob", _records("failed"), only_gpu=True)
    return cpu, gpu


def test_merge_fills_pending_gpu_tests(runs, tmp_path):
    results, instructor, merged = merge_runs(*runs)
    assert (results["alice"]["score"], results["alice"]["max_score"]) == (9, 9)
    assert (results["bob"]["score"], results["bob"]["max_score"]) == (3, 9)
    assert merged.pending == {} and merged.filled == 2
    assert all(validate_results(doc) == [] for doc in results.values())
    mfu = [t for t in results["alice"]["tests"] if t["extra_data"]["gpu"]][0]
    assert mfu["status"] == "passed" and mfu["extra_data"]["ran"].startswith("cuda")
    write_merged(tmp_path / "final", results, instructor, merged)
    assert Layout(tmp_path / "final").students() == ["alice", "bob"]
    rows = list(csv.DictReader((tmp_path / "final" / "grades.csv").open()))
    assert [(r["student"], r["score"], r["pending"]) for r in rows] == [("alice", "9", "0"), ("bob", "3", "0")]


def test_merge_without_gpu_run_keeps_tests_pending(runs, tmp_path):
    results, _, merged = merge_runs(runs[0], tmp_path / "no-gpu-run")
    assert results["alice"]["score"] == 5 and results["alice"]["extra_data"]["pending_points"] == 4
    assert merged.pending == {"alice": ["tests/public/test_flops.py::test_mfu"],
                              "bob": ["tests/public/test_flops.py::test_mfu"]}


def test_merge_of_a_rejected_submission_fills_its_gpu_tests_as_not_graded(tmp_path):
    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    rejected = [dict(r, status="pending" if r["gpu"] else "failed") for r in _records("pending")]
    for folder, records in ((cpu, rejected), (gpu, [dict(r, status="failed") for r in _records("x") if r["gpu"]])):
        doc = build_results(records, student="alice", kit_version="0.1.0", sandbox={},
                            submission={"sha256": SHA["alice"]}, status="rejected", reason="corrupt archive")
        write_json(Layout(folder).results("alice"), doc)
        write_json(Layout(folder).instructor("alice"), {"student": "alice", "records": records, "status": "rejected"})
    assert Layout(cpu).students() == ["alice"]
    results, _, merged = merge_runs(cpu, gpu)
    doc = results["alice"]
    assert doc["extra_data"]["status"] == "rejected" and doc["score"] == 0 and doc["max_score"] == 9
    assert doc["extra_data"]["pending_points"] == 0 and merged.pending == {}
    assert merged.rows[0]["status"] == "rejected: corrupt archive"


def test_merge_refuses_other_kit_version_or_other_submission(runs):
    cpu, gpu = runs
    _write_run(gpu, "alice", _records("passed"), version="0.2.0", only_gpu=True)
    with pytest.raises(MergeError, match="alice: kit version 0.1.0 .* vs 0.2.0"):
        merge_runs(cpu, gpu)
    _write_run(gpu, "alice", _records("passed"), sha="c" * 64, only_gpu=True)
    with pytest.raises(MergeError, match="different submissions"):
        merge_runs(cpu, gpu)
    _write_run(gpu, "carol", _records("passed"), sha="c" * 64, only_gpu=True)
    with pytest.raises(MergeError, match="carol"):
        merge_runs(cpu, gpu)


def test_gradebook_export_lists_every_student_with_the_right_score(runs, tmp_path):
    _, _, merged = merge_runs(*runs)
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    counts = write_gradebook(db, merged.records)
    assert counts == {"students": 2, "cells": 3, "pending": 0}
    out = tmp_path / "export.csv"
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--db", db, "--to", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert {s: (float(r["score"]), float(r["max_score"])) for s, r in rows.items()} == {"alice": (9.0, 9.0), "bob": (3.0, 9.0)}


def test_gradebook_rewrite_updates_scores(runs, tmp_path):
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    write_gradebook(db, {"alice": _records("pending")})
    write_gradebook(db, {"alice": _records("passed")})
    from nbgrader.api import Gradebook

    with Gradebook(db) as gb:
        assert gb.find_submission("resource_accounting", "alice").score == 9


def _check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(path)], capture_output=True,
                          text=True, timeout=300)


def test_workflow_is_valid_for_github(tmp_path):
    good = tmp_path / "autograde.yml"
    good.write_text(WORKFLOW)
    proc = _check_workflow(good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "broken.yml"
    bad.write_text(WORKFLOW.replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest", 1))
    assert _check_workflow(bad).returncode != 0  # the linter does catch a broken workflow


def test_workflow_jobs_use_the_kit_commands():
    import yaml

    jobs = yaml.safe_load(WORKFLOW)["jobs"]
    assert set(jobs) == {"cpu", "gpu", "merge"} and jobs["gpu"]["runs-on"] == ["self-hosted", "gpu"]
    runs = {name: " ".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    assert "grader grade assignment --out results-cpu --device cpu" in runs["cpu"]
    assert "grader grade assignment --out results-gpu --device cuda" in runs["gpu"]
    assert "grader merge results-cpu results-gpu --out results" in runs["merge"]
    assert "GITHUB_STEP_SUMMARY" in runs["merge"]
