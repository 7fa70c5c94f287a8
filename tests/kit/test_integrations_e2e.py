"""Kit self-tests that run the integrations for real: the Gradescope bundle in a local
/autograder layout, and the student workflow's commands in a student release."""

from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from grader import KIT_ROOT
from grader.integrations.gradescope import build_bundle
from grader.authoring.release import build_release
from grader.results.results_json import validate_results


@pytest.mark.parametrize("gpu_tests", ["staff", "none"])
def test_gradescope_bundle_grades_in_a_local_autograder_layout(tmp_path, gpu_tests):
    bundle = build_bundle(tmp_path / "autograder.zip", gpu_tests)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        names = zf.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names)
        assert not any(n.startswith(("kit/solutions", "kit/tests/mutants", "kit/tests/kit")) for n in names)
        zf.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    submission = root / "submission" / "assignment"
    submission.mkdir(parents=True)
    shutil.copy2(KIT_ROOT / "solutions" / "memory.py", submission / "memory.py")
    (root / "submission" / "conftest.py").write_text("raise SystemExit('must never be imported')\n")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "KIT_PYTHON": sys.executable, "KIT_GRADE_ARGS": "--module memory"}
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=900)
    doc = json.loads((root / "results" / "results.json").read_text())
    assert validate_results(doc) == [], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert doc["score"] == doc["max_score"] - doc["extra_data"]["pending_points"] > 0, doc["output"]
    assert {t["visibility"] for t in doc["tests"]} == {"visible", "after_published"}  # public and hidden ran
    gpu = [t for t in doc["tests"] if t["extra_data"]["gpu"]]
    if gpu_tests == "staff":  # memory has a GPU test: pending, and the summary says who grades it
        assert gpu and doc["extra_data"]["pending_points"] == sum(t["max_score"] for t in gpu) > 0
        assert "graded by the course staff on a GPU machine (grader grade --device cuda + grader merge)" in doc["output"]
    else:  # the course drops them: not in the tests, not in the maximum, nothing pending
        assert not gpu and doc["extra_data"]["pending_points"] == 0 and doc["score"] == doc["max_score"]
        assert "does not grade the GPU tests" in doc["output"]


def test_student_workflow_commands_run_in_a_release(tmp_path):
    """The per-push workflow's own steps, run in a release where the student did one module as a file
    (views) and one in its notebook (memory): both are graded, as one submission."""
    import nbformat

    from grader.notebooks.cells import cut

    release = build_release(tmp_path / "release")
    workflow = (release / ".github" / "workflows" / "autograde.yml").read_text()
    steps = {s.get("name"): s.get("run", "") for s in yaml.safe_load(workflow)["jobs"]["grade"]["steps"]}
    assemble = steps["Your work as one submission (assignment/*.py and the notebooks in notebooks/)"]
    assert steps["Grade (CPU; the GPU tests stay pending)"] == \
        "grader grade submission --out results-cpu --device cpu --no-progress"  # what runs below
    assert "grader merge results-cpu --out results" in workflow and "self-hosted" not in workflow
    assert "preview" in (release / "README.md").read_text()  # the student README says what that score is
    shutil.copy2(KIT_ROOT / "solutions" / "views.py", release / "assignment" / "views.py")  # one module done
    answers = {c.grade_id: c.source for c in cut((KIT_ROOT / "solutions" / "memory.py").read_text(), "memory")
               if c.kind == "answer"}
    nb = nbformat.read(str(release / "notebooks" / "memory.ipynb"), as_version=4)  # one done in its notebook
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]]
    nbformat.write(nb, str(release / "notebooks" / "memory.ipynb"))
    env = {**os.environ, "PYTHONPATH": str(release)}
    assert subprocess.run(["bash", "-euo", "pipefail", "-c", assemble], cwd=release, timeout=60).returncode == 0

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "grader.cli", *args], cwd=release, env=env, capture_output=True,
                              text=True, timeout=900)

    cpu = run("grade", "submission", "--out", "results-cpu", "--device", "cpu", "--no-progress")
    assert cpu.returncode == 0, cpu.stdout[-3000:] + cpu.stderr[-3000:]
    summary = tmp_path / "summary.md"
    merged = run("merge", "results-cpu", "--out", "results", "--markdown", str(summary),
                 "--gradebook", f"sqlite:///{tmp_path / 'gb.db'}")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "still pending" in merged.stdout  # no GPU run here: GPU tests stay pending, never scored
    row = list(csv.DictReader((release / "results" / "grades.csv").open()))[0]
    doc = json.loads((release / "results" / "students" / "submission" / "results.json").read_text())
    modules = doc["extra_data"]["modules"]
    assert float(row["views"]) == modules["views"]["possible"] > 0  # the module file
    assert modules["memory"]["earned"] == modules["memory"]["possible"] > 0, modules["memory"]  # the notebook
    assert modules["memory"]["pending"] > 0  # (its GPU test: pending, not in the maximum yet)
    assert float(row["score"]) == doc["score"] and float(row["pending"]) > 0 and "| submission |" in summary.read_text()
    assert not any(t["extra_data"]["hidden"] for t in doc["tests"])  # the release has no hidden tests
    output = tmp_path / "github_output"  # the workflow's Classroom step, in the release
    assert run("classroom-payload", "results", "--github-output", str(output)).returncode == 0
    payload = json.loads(base64.b64decode(output.read_text().strip().removeprefix("result=")))
    assert sum(t["score"] for t in payload["tests"]) == doc["score"] and payload["max_score"] == doc["max_score"]
    failing = merged.returncode, run("merge", "results-cpu", "--out", "r2", "--fail-on-pending").returncode
    assert failing == (0, 1)
