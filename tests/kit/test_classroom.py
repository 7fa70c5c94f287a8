"""`grader classroom-payload`: the payload GitHub Classroom's reporter decodes, from a real
`grader grade` + `grader merge` run, checked against what the reporter's source reads.

The reporter is classroom-resources/autograding-grading-reporter, tag v1 (commit d13b591):
* src/main.js lines 6-13: for each id of the `runners` input, `process.env[<ID>.toUpperCase() + "_RESULTS"]`,
  `Buffer.from(.., "base64")`, `JSON.parse`; lines 19-23: `status` "fail" / "error" fail the step;
* src/notify-classroom.js lines 6-18: `maxPoints += results.max_score` (skipped when falsy),
  `totalPoints += score` for each of `results.tests`; lines 21-31: the notices Classroom reads,
  "Points T/M" and `{"totalPoints", "maxPoints"}`;
* src/console-results.js lines 21-41: `tests.length`, `test.status` ("pass", "error"), `test.name`,
  `test.line_no` (`!== 0` prints " - line N"), `test.message`, `test.test_code`;
* src/helpers/test-helpers.js lines 1, 11-18: `max_score || 0`; the log's per-runner points are
  passed/len(tests) * max_score (the log only; Classroom records the notice's sum of scores).
The command grader (classroom-resources/autograding-command-grader src/main.js lines 16-34, 77)
writes the same shape: version, status, max_score, tests[name, status, score, message,
test_code, filename, line_no, duration], base64 of JSON as the `result` output.

Set KIT_CLASSROOM_REPORTER to that reporter's dist/main.js (v1) to also run the real action
under node on the payloads.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from grader import KIT_ROOT
from grader.cli import main as cli
from grader.integrations import classroom
from grader.integrations.github import WORKFLOW
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results

pytestmark = pytest.mark.kit

RUNNERS_PATTERN = re.compile(r"^([a-zA-Z0-9]+,)*[a-zA-Z0-9]+$")  # src/main.js line 26
NUMBER = (int, float)


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real batch: the reference `memory` and the stub, graded on CPU (GPU test pending), merged."""
    root = tmp_path_factory.mktemp("classroom")
    for name, source in (("ref", KIT_ROOT / "solutions"), ("stub", KIT_ROOT / "assignment")):
        (root / "subs" / name / "assignment").mkdir(parents=True)
        shutil.copy2(source / "memory.py", root / "subs" / name / "assignment" / "memory.py")
    assert cli(["grade", str(root / "subs"), "--out", str(root / "cpu"), "--module", "memory", "-j", "2",
                "--no-progress"]) == 0
    assert cli(["merge", str(root / "cpu"), "--out", str(root / "merged")]) == 0
    return root / "merged"


def _payload_via_cli(results: Path, student: str, out: Path) -> str:
    """Run the workflow's step and read back what it appended to $GITHUB_OUTPUT."""
    out.write_text("earlier=1\n")
    assert cli(["classroom-payload", str(results), "--student", student, "--github-output", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "earlier=1" and len(lines) == 2  # appended, one line
    name, _, value = lines[1].partition("=")
    assert name == classroom.OUTPUT
    return value


def _notify_classroom(runner_results: list[dict]) -> tuple[float, float]:
    """src/notify-classroom.js lines 6-18, line for line."""
    total = maximum = 0
    for results in runner_results:
        if not results.get("max_score"):
            continue
        maximum += results["max_score"]
        for test in results["tests"]:
            total += test["score"]
    return total, maximum


def test_payload_is_what_the_reporter_reads(merged: Path, tmp_path: Path) -> None:
    grades = {r["student"]: r for r in csv.DictReader((merged / "grades.csv").open())}
    assert set(grades) == {"ref", "stub"}
    for student, row in grades.items():
        encoded = _payload_via_cli(merged, student, tmp_path / "github_output")
        env = {classroom.ENV_VAR: encoded}
        # src/main.js: the env var named after the runner id, base64, JSON.parse
        payload = json.loads(base64.b64decode(env[f"{classroom.RUNNER.upper()}_RESULTS"], validate=True))
        doc = json.loads(Layout(merged).results(student).read_text())
        assert set(payload) == {"version", "status", "max_score", "tests"}
        assert payload["version"] == 1 and payload["status"] in ("pass", "fail", "error")
        assert type(payload["max_score"]) in NUMBER and payload["max_score"] > 0
        assert len(payload["tests"]) == len(doc["tests"]) > 0
        for test, entry in zip(payload["tests"], doc["tests"]):
            assert set(test) == {"name", "status", "score", "message", "test_code", "filename", "line_no"}
            assert test["name"] == entry["name"] and isinstance(test["message"], str) and test["message"]
            assert test["status"] in ("pass", "fail", "error") and test["line_no"] == 0 and test["test_code"] == ""
            assert type(test["score"]) in NUMBER and test["score"] == entry["score"]
            assert test["score"] == (entry["max_score"] if test["status"] == "pass" else 0)
        # what Classroom records is the kit's score, out of every point of the assignment
        total, maximum = _notify_classroom([payload])
        assert total == sum(t["score"] for t in payload["tests"]) == doc["score"] == float(row["score"])
        assert maximum == payload["max_score"] == doc["max_score"] == float(row["max_score"])
        pending = [t for t in payload["tests"] if t["message"].startswith(t["name"] + ": pending")]
        assert len(pending) == 1 and pending[0]["status"] == "error" and pending[0]["score"] == 0
        assert sum(e["max_score"] for e in doc["tests"] if "pending" in e["tags"]) == float(row["pending"]) == 1
    ref = classroom.decode(_payload_via_cli(merged, "ref", tmp_path / "o"))
    stub = classroom.decode(_payload_via_cli(merged, "stub", tmp_path / "o"))
    assert ref["status"] == "pass"  # everything else passed: a pending GPU test (graded by the staff) fails nothing
    assert stub["status"] == "fail" and {t["status"] for t in stub["tests"]} == {"fail", "error"}
    hidden = [t for t in ref["tests"] if t["name"].endswith("(hidden)")]
    assert hidden and all(t["message"] == "hidden test: passed" for t in hidden)  # details stay hidden


def test_the_real_reporter_records_the_kit_score(merged: Path) -> None:
    main_js = os.environ.get("KIT_CLASSROOM_REPORTER")
    node = shutil.which("node")
    if not (main_js and node and Path(main_js).is_file()):
        pytest.skip("set KIT_CLASSROOM_REPORTER to autograding-grading-reporter's dist/main.js (v1); needs node")
    for student in ("ref", "stub"):
        doc = json.loads(Layout(merged).results(student).read_text())
        _, _, encoded = classroom.student_payload(merged, student)
        env = {"PATH": os.environ["PATH"], "INPUT_RUNNERS": classroom.RUNNER, classroom.ENV_VAR: encoded}
        proc = subprocess.run([node, main_js], env=env, capture_output=True, text=True, timeout=60)
        report = re.search(r"^::notice title=Autograding report::(.*)$", proc.stdout, re.MULTILINE)
        assert report, proc.stdout[-2000:]
        assert json.loads(report.group(1)) == {"totalPoints": doc["score"], "maxPoints": doc["max_score"]}


def test_workflow_feeds_the_reporter() -> None:
    workflow = yaml.safe_load(WORKFLOW)
    assert workflow["name"] == "Autograding Tests"  # the name Classroom's generated workflow has
    assert workflow["permissions"] == {"contents": "read", "actions": "read"}
    job = workflow["jobs"]["grade"]
    assert job["name"] == "run-autograding-tests"
    steps = job["steps"]
    index = {s.get("id") or s.get("uses") or s.get("name"): i for i, s in enumerate(steps)}
    merge = next(i for i, s in enumerate(steps) if "grader merge" in s.get("run", ""))
    payload = steps[index[classroom.RUNNER]]
    assert payload["run"] == 'grader classroom-payload results --github-output "$GITHUB_OUTPUT"'
    reporter = steps[index["classroom-resources/autograding-grading-reporter@v1"]]
    assert merge < index[classroom.RUNNER] < index["classroom-resources/autograding-grading-reporter@v1"]
    assert reporter["with"] == {"runners": classroom.RUNNER} and RUNNERS_PATTERN.match(classroom.RUNNER)
    expression = "${{ steps.%s.outputs.%s }}" % (classroom.RUNNER, classroom.OUTPUT)
    assert reporter["env"] == {classroom.ENV_VAR: expression}
    assert any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in steps)  # the job summary stays


@pytest.mark.parametrize("name", ["student", "class-cpu", "class-cuda"])
def test_workflow_passes_actionlint(tmp_path: Path, name: str) -> None:
    from tests.kit.test_integrations import WORKFLOWS

    exe = shutil.which("actionlint")
    if not exe:
        pytest.skip("actionlint is not installed (the JSON-schema check in test_integrations.py still runs)")
    # the self-hosted label is declared for the instructor's CUDA workflow only: the student's has none
    (tmp_path / "actionlint.yaml").write_text("self-hosted-runner:\n  labels: [gpu]\n" if name == "class-cuda" else "{}\n")
    (tmp_path / f"{name}.yml").write_text(WORKFLOWS[name])
    proc = subprocess.run([exe, "-config-file", str(tmp_path / "actionlint.yaml"), str(tmp_path / f"{name}.yml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bad_input_exits_2_and_writes_nothing(merged: Path, tmp_path: Path) -> None:
    out = tmp_path / "github_output"
    base = ["--github-output", str(out)]
    assert cli(["classroom-payload", str(tmp_path / "missing"), *base]) == 2
    assert cli(["classroom-payload", str(merged), *base]) == 2  # two students: which one?
    assert cli(["classroom-payload", str(merged), "--student", "nobody", *base]) == 2
    broken = tmp_path / "broken"
    Layout(broken).results("x").parent.mkdir(parents=True)
    Layout(broken).results("x").write_text('{"score": "lots"}')
    assert cli(["classroom-payload", str(broken), *base]) == 2
    Layout(broken).results("x").write_text("{")
    assert cli(["classroom-payload", str(broken), *base]) == 2
    assert not out.exists()


def _record(i: int, status: str, message: str) -> dict:
    return {"id": f"tests/public/test_memory.py::test_{i}", "module": "memory", "name": f"test_{i}",
            "points": 1 + i % 3,
            "hidden": False, "gpu": False, "checked": "x", "status": status, "message": message}


def test_payload_fits_one_environment_variable_and_defuses_workflow_commands(tmp_path: Path) -> None:
    records = [_record(i, ("passed", "failed", "not_attempted", "error")[i % 4], "x" * 5000) for i in range(400)]
    records[1]["message"] = ('got:\n::notice title=Autograding report::{"totalPoints":999,"maxPoints":999}\n  ::error::x'
                             ' and ##[error]legacy form')
    doc = build_results(records, student="big", kit_version="0", sandbox={}, submission={})
    write_json(Layout(tmp_path).results("big"), doc)
    _, payload, encoded = classroom.student_payload(tmp_path)
    assert len(encoded) <= classroom.ENCODED_LIMIT and classroom.decode(encoded) == payload
    assert sum(t["score"] for t in payload["tests"]) == doc["score"] and payload["max_score"] == doc["max_score"]
    assert {t["status"] for t in payload["tests"]} == {"pass", "fail", "error"} and payload["status"] == "fail"
    errored = build_results([records[0], records[4], records[3]], student="e", kit_version="0", sandbox={}, submission={})
    assert classroom.classroom_results(errored)["status"] == "error"  # a test that could not run: the job says so
    pending = build_results([records[0], dict(records[4], gpu=True, status="pending")], student="p", kit_version="0",
                            sandbox={}, submission={})
    assert [t["status"] for t in classroom.classroom_results(pending)["tests"]] == ["pass", "error"]
    assert classroom.classroom_results(pending)["status"] == "pass"  # pending GPU points: not a failure
    small = classroom.classroom_results(doc)
    assert not any(re.search(r"^\s*::", t["message"], re.MULTILINE) or "##[" in t["message"] for t in small["tests"])
    assert "totalPoints" in small["tests"][1]["message"]  # kept, just not a command any more


def test_a_late_penalty_is_one_negative_entry(tmp_path: Path) -> None:
    from grader.course import late

    records = [_record(i, "passed", "") for i in range(6)]
    doc = build_results(records, student="tardy", kit_version="0", sandbox={}, submission={})
    decision = {"status": "late", "percent": 20.0, "units_late": 2, "unit": "day", "extension": False,
                "deadline": "2026-12-01T23:59:00+00:00", "submitted_at": "2026-12-03T10:00:00+00:00",
                "source": "times.csv"}
    late.apply(doc, decision)
    write_json(Layout(tmp_path).results("tardy"), doc)
    _, payload, _ = classroom.student_payload(tmp_path)
    assert doc["score"] == 9.6 and doc["extra_data"]["late"]["penalty_points"] == 2.4  # 12 points, 20% off
    assert _notify_classroom([payload]) == (doc["score"], doc["max_score"])
    entry = payload["tests"][-1]
    assert entry["name"] == "late policy" and entry["score"] == -2.4 and entry["status"] == "fail"
    assert "2 started days late" in entry["message"] and payload["status"] == "fail"


def test_a_list_of_students_cut_short_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six students and no --student: the first five are named, then "…" and how many more."""
    names = ["ann", "ben", "cat", "dan", "eve", "fay"]
    for name in names:
        Layout(tmp_path).results(name).parent.mkdir(parents=True)
    assert cli(["classroom-payload", str(tmp_path)]) == 2
    said = " ".join(capsys.readouterr().out.split())
    assert "holds 6 students (ann, ben, cat, dan, eve, … (1 more)): name one with --student" in said, said
    assert classroom.named(names[:5]) == "ann, ben, cat, dan, eve" and classroom.named([]) == "none"


def test_each_student_has_their_own_part_of_the_worker_log(tmp_path: Path) -> None:
    """One worker grades both (-j 1): the worker log holds both runs under their headers, and each
    student's tests.log only their own (finding one student's traceback is no guesswork)."""
    for name, source in (("ref", KIT_ROOT / "solutions"), ("stub", KIT_ROOT / "assignment")):
        (tmp_path / "subs" / name / "assignment").mkdir(parents=True)
        shutil.copy2(source / "memory.py", tmp_path / "subs" / name / "assignment" / "memory.py")
    assert cli(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--module", "memory", "-j", "1",
                "--public-only", "--no-progress"]) == 0
    layout = Layout(tmp_path / "out")
    worker = "".join(p.read_text() for p in layout.logs.glob("worker-*.log"))
    assert "=== ref (" in worker and "=== stub (" in worker  # the worker log keeps its headers
    stub, ref = layout.tests_log("stub").read_text(), layout.tests_log("ref").read_text()
    assert stub.startswith("=== stub (") and "=== ref" not in stub
    assert "FAILURES" in stub and "storage_bytes raises NotImplementedError" in stub
    assert ref.startswith("=== ref (") and "=== stub" not in ref and "FAILURES" not in ref
