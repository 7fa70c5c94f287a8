"""Kit self-tests: merging CPU and GPU runs, the nbgrader gradebook, the GitHub workflows (the
student's preview and the instructor's class workflows: valid for GitHub, on the right runners,
never running a student's code outside the sandbox), the Gradescope results' GPU policy."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.cli import main as grader_main
from grader.cluster.actions import workflow as class_workflow
from grader.integrations.github import WORKFLOW
from grader.integrations import gradescope
from grader.integrations.gradebook import write_gradebook
from grader.results.merge import MergeError, merge_runs, write_merged
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results, validate_results

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
    results, _, merged = merge_runs(runs[0], None)
    assert results["alice"]["score"] == 5 and results["alice"]["extra_data"]["pending_points"] == 4
    assert merged.pending == {"alice": ["tests/public/test_flops.py::test_mfu"],
                              "bob": ["tests/public/test_flops.py::test_mfu"]}


def test_merge_refuses_a_missing_folder_or_one_that_holds_no_grades(runs, tmp_path, capsys, monkeypatch):
    """A typo (`grader merge CPU DOES_NOT_EXIST`) and a failed `--device cuda` run (a folder with
    only instructor/logs) exit 2 naming the folder, and write nothing (issue 33)."""
    cpu, _ = runs
    failed = tmp_path / "failed-gpu"
    (failed / "instructor" / "logs").mkdir(parents=True)
    (failed / "instructor" / "logs" / "worker-0.log").write_text("GradeError: --device cuda: no CUDA\n")
    with pytest.raises(MergeError, match="DOES_NOT_EXIST: no such results folder"):
        merge_runs(cpu, tmp_path / "DOES_NOT_EXIST")
    with pytest.raises(MergeError, match="failed-gpu holds no grades .*graded nobody"):
        merge_runs(cpu, failed)
    monkeypatch.chdir(tmp_path)
    for gpu, said in (("DOES_NOT_EXIST", "no such results folder"), ("failed-gpu", "holds no grades")):
        assert grader_main(["merge", "cpu", gpu, "--out", "X"]) == 2
        out = capsys.readouterr().out
        assert said in out and gpu in out and not (tmp_path / "X").exists()
    assert grader_main(["merge", "cpu", "--out", "X"]) == 0  # no GPU run named: said, and pending
    assert "no GPU run given" in capsys.readouterr().out


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
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = write_gradebook(db, merged.records)
    assert counts == {"students": 2, "cells": 3, "pending": 0}
    assert not [str(w.message) for w in caught if "not in session" in str(w.message)]  # nbgrader's SAWarning: noise
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


#: Every workflow the kit writes: the student release's, and `grader actions`' two variants.
WORKFLOWS = {"student": WORKFLOW, "class-cpu": class_workflow("cs101-fall", "hw1-", 3, ("memory",)),
             "class-cuda": class_workflow("cs101-fall", "hw1-", 2, device="cuda")}
GITHUB_HOSTED = re.compile(r"(ubuntu|macos|windows)-(latest|\d[\d.]*)")


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_workflow_is_valid_for_github(tmp_path, name):
    good = tmp_path / f"{name}.yml"
    good.write_text(WORKFLOWS[name])
    proc = _check_workflow(good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "broken.yml"
    bad.write_text(WORKFLOWS[name].replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest", 1))
    assert _check_workflow(bad).returncode != 0  # the linter does catch a broken workflow
    for job, spec in yaml.safe_load(WORKFLOWS[name])["jobs"].items():  # every step's shell parses
        for step in spec["steps"]:
            script = re.sub(r"\$\{\{[^}]*\}\}", "X", step.get("run", ""))
            parsed = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            assert parsed.returncode == 0, f"{name}/{job}: {parsed.stderr}"


def test_student_workflow_is_a_cpu_preview_on_github_hosted_runners():
    """The student controls the repository and the workflow: it never runs on a course machine,
    has no GPU job and no job waiting for one, and says its score is a preview."""
    doc = yaml.safe_load(WORKFLOW)
    jobs = doc["jobs"]
    assert set(jobs) == {"grade", "check-macos", "check-windows"} and jobs["grade"]["name"] == "run-autograding-tests"
    for name, os_label in (("check-macos", "macos-latest"), ("check-windows", "windows-latest")):
        check = jobs[name]  # students' machines: `grader check` with the public tests, no score reported
        assert check["runs-on"] == os_label
        assert [s["run"] for s in check["steps"] if "grader" in s.get("run", "")] == ["grader check"]
        assert not any("classroom" in (s.get("uses", "") + s.get("run", "")) for s in check["steps"])
    for job in jobs.values():
        assert isinstance(job["runs-on"], str) and GITHUB_HOSTED.fullmatch(job["runs-on"]), job["runs-on"]
        assert "needs" not in job
    assert "self-hosted" not in WORKFLOW and "--device cuda" not in WORKFLOW
    runs = "\n".join(s.get("run", "") for s in jobs["grade"]["steps"])
    assert "grader grade submission --out results-cpu --device cpu" in runs
    assert 'grader merge results-cpu --out results --markdown "$GITHUB_STEP_SUMMARY"' in runs
    assert "preview" in runs and "preview" in WORKFLOW.split("name:")[0].lower()  # the job summary and the file say so
    assert not _course_runner_jobs(doc)


def _course_runner_jobs(doc: dict) -> list[str]:
    """Jobs of a workflow that run on anything but GitHub's hosted runners."""
    out = []
    for name, job in doc["jobs"].items():
        labels = job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]]
        if not all(isinstance(x, str) and GITHUB_HOSTED.fullmatch(x) for x in labels):
            out.append(name)
    return out


#: What an instructor workflow may do with the students' repositories (under ``submissions/``).
_KIT_INSTALLS = re.compile(r"(?:\.venv/bin/)?python3? -m pip install (?:-e \.|-e '\.\[dev\]'|torch==[\d.]+ "
                           r"--index-url \S+)$")
_TRUSTED_ACTIONS = ("actions/checkout@", "actions/setup-python@", "actions/upload-artifact@",
                    "actions/download-artifact@")


def _runs_student_code(doc: dict) -> list[str]:
    """Every step of an instructor workflow that could run code from a student's repository, or
    leaves a door open to it (empty when the repositories are only data for `grader grade`)."""
    problems = []
    for name, job in doc["jobs"].items():
        for step in job["steps"]:
            where = f"{name}: {step.get('name') or step.get('uses')}"
            uses = step.get("uses", "")
            if uses and not uses.startswith(_TRUSTED_ACTIONS):
                problems.append(f"{where}: uses {uses}")
            if uses.startswith("actions/checkout@") and (step.get("with") or {}).get("persist-credentials") is not False:
                problems.append(f"{where}: the checkout keeps its token in .git/config")
            script = re.sub(r"\\\n\s*", " ", step.get("run", ""))  # continued lines joined
            for line in (x.strip() for x in script.splitlines()):
                if re.search(r"\bpip\b", line) and not _KIT_INSTALLS.search(line):
                    problems.append(f"{where}: installs something other than the kit: {line}")
                if re.search(r"\bgit clone\b", line):
                    env = step.get("env") or {}
                    if "--no-recurse-submodules" not in line or env.get("GIT_LFS_SKIP_SMUDGE") != "1" \
                            or "core.hooksPath GIT_CONFIG_VALUE_1=/dev/null" not in script:
                        problems.append(f"{where}: a clone with submodules, LFS or hooks: {line}")
                if "submissions" not in line:
                    continue
                allowed = (line == "mkdir -p submissions" or re.match(r'git clone .* "submissions/\$name" \|\|', line)
                           or re.match(r'(sudo "\$\(command -v grader\)"|\S*grader) grade submissions .*--require landlock', line)
                           or re.match(r"rm -rf submissions\b", line))
                if not allowed:
                    problems.append(f"{where}: touches the students' files: {line}")
    return problems


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_class_workflow_treats_student_repositories_as_data(device):
    doc = yaml.safe_load(class_workflow("cs101-fall", "hw1-", 2, device=device))
    assert _runs_student_code(doc) == []
    grading = {n for n, j in doc["jobs"].items() if any("grade submissions" in s.get("run", "") for s in j["steps"])}
    assert grading == ({"grade", "grade-gpu"} if device == "cuda" else {"grade"})
    assert _course_runner_jobs(doc) == (["grade-gpu"] if device == "cuda" else [])
    # the checker is not blind: each way of running a student's code is caught
    text = class_workflow("cs101-fall", "hw1-", 2, device=device)
    for bad in ('          mkdir -p submissions\n', '          mkdir -p submissions && pip install -e submissions/x\n',
                '          mkdir -p submissions && cd submissions/x && make\n'):
        if bad.strip() != "mkdir -p submissions":
            assert _runs_student_code(yaml.safe_load(text.replace('          mkdir -p submissions\n', bad)))
    for old, new in (("--no-recurse-submodules", "--recurse-submodules"), ('GIT_LFS_SKIP_SMUDGE: "1"', 'X: "1"'),
                     ("persist-credentials: false", "persist-credentials: true"),
                     ("- uses: actions/checkout@v4", "- uses: ./submissions/x"), ("--require landlock", "")):
        assert old in text and _runs_student_code(yaml.safe_load(text.replace(old, new, 1))), old


def test_cuda_class_workflow_grades_on_the_gpu_runner_and_merges():
    text = class_workflow("cs101-fall", "hw1-", 3, ("memory",), device="cuda")
    jobs = yaml.safe_load(text)["jobs"]
    assert set(jobs) == {"roster", "grade", "grade-gpu", "combine"}
    gpu = jobs["grade-gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"] and gpu["needs"] == "roster"
    assert gpu["strategy"]["matrix"]["shard"] == [1, 2, 3]
    runs = {n: "\n".join(s.get("run", "") for s in j["steps"]) for n, j in jobs.items()}
    assert re.search(r"grader grade submissions --device cuda --shard .* --out gpu-shard .*--module memory", runs["grade-gpu"],
                     re.S)
    assert "rm -rf submissions" in runs["grade-gpu"]  # nothing of the students' stays on the course's machine
    assert "no self-hosted runner labelled gpu is online" in runs["roster"]  # fail fast, not a day in the queue
    assert jobs["combine"]["needs"] == ["grade", "grade-gpu"]
    combine = runs["combine"]
    assert combine.index("grader combine results-cpu shards/shard-*") < combine.index(
        "grader combine results-gpu gpu-shards/gpu-shard-*") < combine.index("grader merge results-cpu results-gpu")
    assert "--gradebook" in combine and "pip install -e '.[dev]'" in combine  # nbgrader installed where it is used
    cpu_combine = "\n".join(s.get("run", "") for s in yaml.safe_load(class_workflow("o", "", 1))["jobs"]["combine"]["steps"])
    assert "--gradebook" in cpu_combine and "pip install -e '.[dev]'" in cpu_combine


def test_actions_without_out_writes_into_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert grader_main(["actions", "--org", "cs101-fall", "--shards", "2", "--device", "cuda"]) == 0
    written = tmp_path / ".github" / "workflows" / "grade-class.yml"
    assert written.read_text() == class_workflow("cs101-fall", "", 2, device="cuda")


# -- --gradebook without nbgrader: one line, exit 2, before any work ---------------------------

def _without_nbgrader(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys; sys.modules['nbgrader'] = None  # import nbgrader now raises ModuleNotFoundError\n"
            "from grader.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_gradebook_without_nbgrader_is_one_line_and_exit_2(runs, tmp_path):
    cpu, gpu = runs
    (tmp_path / "subs" / "ana" / "assignment").mkdir(parents=True)
    db = "sqlite:///gb.db"
    for args in (["merge", str(cpu), str(gpu), "--out", "merged", "--gradebook", db],
                 ["combine", "combined", str(cpu), "--gradebook", db],
                 ["grade", "subs", "--out", "graded", "--gradebook", db]):
        proc = _without_nbgrader(args, tmp_path)
        out = (proc.stdout + proc.stderr).strip()
        assert proc.returncode == 2, out
        assert "Traceback" not in out and len(out.splitlines()) == 1, out
        assert "needs nbgrader" in out and "pip install" in out
        assert not any((tmp_path / d).exists() for d in ("merged", "combined", "graded", "gb.db")), args


# -- Gradescope: how the GPU tests are graded where there is no GPU ----------------------------

def _gpu_pending_run(folder: Path, late: dict | None = None) -> tuple[dict, dict]:
    from grader.course import late as late_policy

    _write_run(folder, "alice", _records("pending"))
    doc = json.loads(Layout(folder).results("alice").read_text())
    if late:
        late_policy.apply(doc, late)
    return doc, json.loads(Layout(folder).instructor("alice").read_text())


def test_gradescope_staff_policy_says_who_grades_the_gpu_tests(tmp_path):
    doc, instructor = _gpu_pending_run(tmp_path)
    out = gradescope.finalize(json.loads(json.dumps(doc)), instructor, "staff")
    assert (out["score"], out["max_score"], out["extra_data"]["pending_points"]) == (5, 9, 4)  # totals untouched
    assert "4 points on the GPU tests are graded by the course staff on a GPU machine " \
           "(grader grade --device cuda + grader merge)" in out["output"]
    assert "graded on a GPU machine by the course staff" not in out["output"] and validate_results(out) == []
    mfu = next(t for t in out["tests"] if t["extra_data"]["gpu"])
    assert "course staff" in mfu["output"] and mfu["max_score"] == 4 and mfu["score"] == 0


def test_gradescope_no_gpu_policy_leaves_the_gpu_tests_out_of_the_maximum(tmp_path):
    decision = {"status": "late", "percent": 50.0, "units_late": 1, "unit": "day", "extension": False,
                "deadline": "2026-12-01T23:59:00+00:00", "submitted_at": "2026-12-02T10:00:00+00:00",
                "source": "times.csv"}
    for late in (None, decision):
        doc, instructor = _gpu_pending_run(tmp_path / str(bool(late)), late)
        out = gradescope.finalize(doc, instructor, "none")
        assert validate_results(out) == [] and not any(t["extra_data"]["gpu"] for t in out["tests"])
        assert out["max_score"] == sum(t["max_score"] for t in out["tests"]) == 5  # 2 + 3: the GPU test's 4 gone
        raw = sum(t["score"] for t in out["tests"])
        assert raw == 5 and out["score"] == (2.5 if late else 5)  # the late penalty applied again, as merge does
        extra = out["extra_data"]
        assert extra["pending_points"] == 0 and extra["pending_tests"] == [] and "flops" not in extra["modules"]
        score_line = "Score: 2.5 / 5 points (5 earned, \u2212" if late else "Score: 5 / 5 points\n"  # late: final first
        assert score_line in out["output"] and "GPU tests pending" not in out["output"]
        assert gradescope.NONE_LINE in out["output"] and ("Late policy" in out["output"]) == bool(late)


def test_gradescope_command_bakes_the_gpu_policy_into_the_bundle(tmp_path):
    import zipfile

    for flags, policy in (([], "staff"), (["--no-gpu"], "none")):
        zip_path = tmp_path / f"{policy}.zip"
        assert grader_main(["gradescope", str(zip_path), *flags]) == 0
        with zipfile.ZipFile(zip_path) as zf:
            script = zf.read("run_autograder").decode()
        assert f"--gpu-tests {policy}" in script and "__GPU_TESTS__" not in script
    with pytest.raises(ValueError):
        gradescope.build_bundle(tmp_path / "x.zip", "sometimes")
