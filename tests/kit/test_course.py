"""A course split into assignments (`course.toml`, `grader.course.config`; README "Your course").

* every mistake in course.toml is said in one line, with exit status 2 and nothing written;
* without course.toml the kit is one assignment of every module, in the handout's order;
* the three-homework split of `course.example.toml`: each release holds only its modules, public
  tests, probes and handout sections (renumbered), what it carries over, and a marker;
* end to end on a tiny class, the same split with each homework cut to one module (to stay fast):
  release, grade, report, Gradescope, Canvas and the Classroom payload of each homework agree on
  every total and maximum; the homework whose GPU tests do not count has no pending point and a
  maximum without them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tomllib
import zipfile
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.cli import main as cli
from grader.course.config import CourseError, default_assignment, load_course, parse_course, resolve
from grader.course.modules import discover_modules

pytestmark = pytest.mark.kit

EXAMPLE = KIT_ROOT / "course.example.toml"
GOOD = """
[course]
name = "Test course"

[[assignment]]
name = "hw1"
modules = ["memory", "views"]
"""


def _write(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    monkeypatch.setenv("KIT_COURSE", str(path))
    return path


# -- validation -------------------------------------------------------------------------------

BAD = {
    "toml syntax": ("[course\nname = 1", "not valid TOML"),
    "unknown module": (GOOD.replace('"views"', '"veiws"'), "unknown module 'veiws' (did you mean 'views'?)"),
    "module in two assignments": (GOOD + '\n[[assignment]]\nname = "hw2"\nmodules = ["views"]\n',
                                  "module 'views' is already in assignment 'hw1'"),
    "module twice": (GOOD.replace('"views"]', '"views", "views"]'), "module 'views' is listed twice"),
    "no zone": (GOOD + 'deadline = 2026-10-09T23:59:00\nlate_penalty = "10%/day"\n', "has no zone"),
    "bad date": (GOOD + 'deadline = "next friday"\nlate_penalty = "10%/day"\n', "deadline"),
    "bad rate": (GOOD + 'deadline = "2026-10-09T23:59:00Z"\nlate_penalty = "10%/fortnight"\n', "late_penalty"),
    "penalty without deadline": (GOOD + 'late_penalty = "10%/day"\n', "late_penalty need a deadline"),
    "missing extensions": (GOOD + 'deadline = "2026-10-09T23:59:00Z"\nlate_penalty = "1%/day"\n'
                           'extensions = "nowhere.csv"\n', "extensions file nowhere.csv not found"),
    "unknown key": (GOOD + "gpu_test = false\n", "unknown key 'gpu_test' (did you mean 'gpu_tests'?)"),
    "gpu not a bool": (GOOD + 'gpu_tests = "no"\n', "gpu_tests must be true or false"),
    "canvas column": (GOOD + 'canvas_column = "HW1"\n', "canvas_column must be Canvas's column name"),
    "bad name": (GOOD.replace('"hw1"', '"hw 1"'), "name must be letters"),
    "no assignment": ('[course]\nname = "x"\n', "no assignment"),
    "needs an earlier module": (GOOD.replace('"views"]', '"views", "training"]'),
                                "training uses checkpointing"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_mistake_is_said_clearly(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, words = BAD[case]
    _write(tmp_path, text, monkeypatch)
    with pytest.raises(CourseError) as info:
        load_course()
    assert words in str(info.value), str(info.value)
    assert str(info.value).startswith("course.toml: ")


def test_a_bad_late_key_is_named_as_the_key_not_as_a_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: a bad late_penalty in course.toml read "late_penalty: --late-penalty: ..."."""
    _write(tmp_path, GOOD + 'deadline = "2026-10-09T23:59:00Z"\nlate_penalty = "10%/fortnight"\nlate_cap = "150%"\n'
           'grace = "15 minutes"\n', monkeypatch)
    with pytest.raises(CourseError) as info:
        load_course()
    said = str(info.value)
    assert "assignment 'hw1': late_penalty: '10%/fortnight' is not a rate" in said
    assert "assignment 'hw1': late_cap: '150%'" in said and "assignment 'hw1': grace: '15 minutes'" in said
    assert "--" not in said, said


def test_every_mistake_is_listed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, GOOD.replace('"views"]', '"veiws", "memory"]') + "gpu_tests = 3\n", monkeypatch)
    with pytest.raises(CourseError, match=r"3 mistakes:\n  .*veiws.*\n  .*'memory' is listed twice.*\n  .*gpu_tests"):
        load_course()


@pytest.mark.parametrize("command", [
    ["release", "{out}", "--assignment", "hw1"],
    ["grade", str(KIT_ROOT / "assignment"), "--out", "{out}", "--assignment", "hw1"],
    ["gradescope", "{out}", "--assignment", "hw1"],
    ["slurm", str(KIT_ROOT / "assignment"), "--out", "{out}", "--tasks", "2", "--assignment", "hw1"],
    ["actions", "--org", "x", "--shards", "2", "--out", "{out}", "--assignment", "hw1"],
])
def test_a_bad_course_file_stops_every_command_before_it_writes(command: list[str], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, BAD["unknown module"][0], monkeypatch)
    out = tmp_path / "out"
    assert cli([a.replace("{out}", str(out)) for a in command]) == 2
    assert "unknown module 'veiws'" in capsys.readouterr().out
    assert not out.exists()


def test_an_unknown_or_missing_assignment_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, GOOD + '\n[[assignment]]\nname = "hw2"\nmodules = ["flops"]\n', monkeypatch)
    out = tmp_path / "out"
    assert cli(["grade", str(KIT_ROOT / "assignment"), "--out", str(out), "--assignment", "hw9"]) == 2
    assert "has no assignment 'hw9' (it has: hw1, hw2)" in capsys.readouterr().out
    assert cli(["grade", str(KIT_ROOT / "assignment"), "--out", str(out)]) == 2
    assert "say which with --assignment (hw1, hw2)" in capsys.readouterr().out
    assert cli(["grade", str(KIT_ROOT / "assignment"), "--out", str(out), "--assignment", "hw1",
                "--module", "flops"]) == 2
    assert "not in assignment hw1" in capsys.readouterr().out
    assert not out.exists()


def test_a_folder_without_grades_is_said_so_not_blamed_on_the_assignment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After a failed `--device cuda` run (only instructor/logs written), merge and report with
    --assignment say the folder holds no grades (issue 33), and a typo says no such folder."""
    _write(tmp_path, GOOD, monkeypatch)
    failed = tmp_path / "gpu"
    (failed / "instructor" / "logs").mkdir(parents=True)
    for command in (["merge", str(failed), "--out", str(tmp_path / "final")],
                    ["report", str(failed), "--out", str(tmp_path / "r.html")]):
        assert cli(command + ["--assignment", "hw1"]) == 2
        out = capsys.readouterr().out
        assert "holds no grades" in out and "graded without --assignment" not in out, out
    assert cli(["report", str(tmp_path / "gpuu"), "--out", str(tmp_path / "r.html"), "--assignment", "hw1"]) == 2
    assert "gpuu: no such results folder" in capsys.readouterr().out
    assert not (tmp_path / "final").exists() and not (tmp_path / "r.html").exists()


def test_the_class_report_is_titled_with_the_homework_not_its_id_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: results/hw1 graded for hw1 was "Class report: hw1, assignment hw1"."""
    from grader.reports.classreport import ClassData

    monkeypatch.setenv("KIT_COURSE", str(EXAMPLE))
    title = tomllib.loads(EXAMPLE.read_text())["assignment"][0]["title"]
    assert ClassData(Path("results/hw1"), [], [], [], assignment="hw1").title == f"Class report: hw1: {title}"
    assert ClassData(Path("cpu"), [], [], [], assignment="hw1").title == f"Class report: cpu, hw1: {title}"
    assert ClassData(Path("cpu"), [], [], []).title == "Class report: cpu"


def test_without_a_course_file_the_kit_is_one_assignment_of_every_module(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("KIT_COURSE", str(tmp_path / "none.toml"))
    assert load_course() is None
    whole = resolve(None)
    assert whole.default and whole.modules == MODULES and whole.gpu_tests and whole.late_args()["deadline"] is None
    assert whole.graded_with() == {}
    sections = re.findall(r"^## \d+\. `([a-z_0-9]+)`", (KIT_ROOT / "handout.md").read_text(), re.MULTILINE)
    assert MODULES == tuple(sections) == discover_modules()  # discovered from solutions/, in handout order
    with pytest.raises(CourseError, match="there is no course.toml"):
        resolve("hw1")


def test_a_release_or_bundle_finds_its_modules_without_solutions(tmp_path: Path) -> None:
    """No solutions/: the public probe files are the modules, plus what the marker carries over."""
    (tmp_path / "tests" / "probes").mkdir(parents=True)
    for name in ("__init__", "_tensors", "views", "memory"):
        (tmp_path / "tests" / "probes" / f"{name}.py").write_text("")
    (tmp_path / "course.toml").write_text('[course]\nrelease = true\n[[assignment]]\nname = "a"\n'
                                          'modules = ["views", "memory"]\ncarried = ["flops"]\n')
    assert discover_modules(tmp_path) == ("views", "memory", "flops")
    course = load_course(tmp_path)
    assert course is not None and course.release and course.assignments[0].carried == ("flops",)


# -- the example: three homeworks -------------------------------------------------------------

@pytest.fixture(scope="module")
def example() -> dict:
    return tomllib.loads(EXAMPLE.read_text())


def test_the_example_splits_the_lecture_in_three(example: dict) -> None:
    course = parse_course(example, EXAMPLE, MODULES)
    hw1, hw2, hw3 = course.assignments
    held = [m for a in course.assignments for m in a.modules]
    assert len(held) == len(set(held)) and "fp8" not in held and set(held) | {"fp8"} == set(MODULES)
    assert hw1.gpu_tests and hw2.gpu_tests and not hw3.gpu_tests
    assert hw3.carried == ("flops", "cruncher", "optimizers", "checkpointing") and not hw1.carried
    assert all(a.canvas_column and a.gradescope_title and a.deadline for a in course.assignments)
    assert [a.modules for a in course.assignments] == [tuple(m for m in MODULES if m in a.modules)
                                                       for a in course.assignments]  # handout order


def _sections(handout: str) -> list[tuple[int, str]]:
    return [(int(n), m) for n, m in re.findall(r"^## (\d+)\. `([a-z_0-9]+)`", handout, re.MULTILINE)]


@pytest.mark.parametrize("name", ["hw1", "hw2", "hw3"])
def test_each_release_of_the_example_holds_only_its_modules(name: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIT_COURSE", str(EXAMPLE))
    a = resolve(name)
    out = tmp_path / name
    assert cli(["release", str(out), "--assignment", name]) == 0
    assert sorted(p.stem for p in (out / "assignment").glob("*.py")) == sorted({"__init__", *a.modules, *a.carried})
    assert sorted(p.name for p in (out / "tests" / "public").glob("test_*.py")) == sorted(f"test_{m}.py"
                                                                                          for m in a.modules)
    probes = {p.stem for p in (out / "tests" / "probes").glob("*.py") if not p.stem.startswith("_")}
    assert probes == set(a.modules) and (out / "tests" / "probes" / "__init__.py").is_file()
    for path in [*(out / "tests").rglob("*.py")]:  # every helper a shipped file imports is there
        for helper in re.findall(r"tests\.probes\.(\w+)", path.read_text()):
            assert (out / "tests" / "probes" / f"{helper}.py").is_file(), (path, helper)
    handout = (out / "handout.md").read_text()
    assert _sections(handout) == list(enumerate(a.modules, start=1))
    assert "## How the assignment works" in handout and f"This release is {a.label}" in handout
    assert f"# {a.label}" in (out / "README.md").read_text()
    marker = tomllib.loads((out / "course.toml").read_text())
    assert marker["assignment"][0]["modules"] == list(a.modules) and "deadline" not in marker["assignment"][0]
    workflow = (out / ".github" / "workflows" / "autograde.yml").read_text()
    assert f"grader grade submission --assignment {name} " in workflow
    for other in set(MODULES) - set(a.modules):
        assert not (out / "tests" / "public" / f"test_{other}.py").exists()
        assert f"`{other}`:" not in handout
    if not a.gpu_tests:  # each section's points without the GPU ones
        assert "on the GPU" not in "".join(re.findall(r"^## .*$", handout, re.MULTILINE))
    # its own benchmarks only, no kit history, and the instructors' note is seen when the README renders
    from grader.course.stubs import handout_benchmarks

    assert sorted(p.relative_to(out).as_posix() for p in (out / "bench").glob("*.py")) == handout_benchmarks(handout)
    assert not (out / "CHANGELOG.md").exists()
    readme = (out / "README.md").read_text()
    assert "<!--" not in readme and "**Instructors, before you publish this release:**" in readme
    assert " 1 modules" not in readme


# -- end to end: a tiny class, each homework one module ---------------------------------------

TINY = """
[course]
name = "Tiny"

[[assignment]]
name = "hw1"
modules = ["views"]
canvas_column = "HW1 (1001)"
gradescope_title = "HW1"

[[assignment]]
name = "hw2"
modules = ["einops_rewrites"]
deadline = "2026-10-30T23:59:00Z"
late_penalty = "10%/day"
canvas_column = "HW2 (1002)"

[[assignment]]
name = "hw3"
modules = ["memory"]
gpu_tests = false
canvas_column = "HW3 (1003)"
"""


def _points_without_gpu(module: str) -> float:
    """The module's points without its GPU ones, from the handout's section header (not the grader)."""
    header = next(line for line in (KIT_ROOT / "handout.md").read_text().splitlines()
                  if re.match(rf"## \d+\. `{module}`", line))
    m = re.search(r"\((\d+) public points(?:, (\d+) of them on the GPU)?; hidden tests add (\d+)"
                  r"(?: \((\d+) on the GPU\))?\)", header)
    assert m, header
    return float(int(m[1]) - int(m[2] or 0) + int(m[3]) - int(m[4] or 0))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Three one-module homeworks graded for a class of three: the reference (full marks), the stubs
    (0) and a copy holding a mutant of each module (in between); hw2 with a late submission."""
    from grader.authoring.mutants import apply, load_mutants

    root = tmp_path_factory.mktemp("course")
    course = root / "course.toml"
    course.write_text(TINY)
    mp = pytest.MonkeyPatch()
    mp.setenv("KIT_COURSE", str(course))
    subs = root / "subs"
    modules = ("views", "einops_rewrites", "memory")
    for student, source in (("ada", KIT_ROOT / "solutions"), ("bob", KIT_ROOT / "assignment")):
        (subs / student / "assignment").mkdir(parents=True)
        for m in modules:
            shutil.copy(source / f"{m}.py", subs / student / "assignment" / f"{m}.py")
    (subs / "cy" / "assignment").mkdir(parents=True)
    mutants = load_mutants(modules)
    for m in modules:
        first = next(x for x in mutants if x.module == m)
        (subs / "cy" / "assignment" / f"{m}.py").write_text(apply(first, (KIT_ROOT / "solutions" / f"{m}.py").read_text()))
    times = root / "times.csv"
    times.write_text("student,submitted_at\nada,2026-10-30T12:00:00Z\nbob,2026-10-30T12:00:00Z\n"
                     "cy,2026-11-01T10:00:00Z\n")  # cy: 2 days late on hw2
    roster = root / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,HW1 (1001),HW2 (1002),HW3 (1003)\n"
                      "Points Possible,,,,,,,\n" + "".join(f"{s.title()},{i},{s},{s},A,,,\n"
                                                           for i, s in enumerate(("ada", "bob", "cy"), start=1)))
    data: dict = {"root": root, "codes": {}}
    try:
        for hw in ("hw1", "hw2", "hw3"):
            out = root / hw
            args = ["grade", str(subs), "--out", str(out), "--assignment", hw, "-j", "1", "--no-progress"]
            data["codes"][f"grade {hw}"] = cli(args + (["--submitted-at", str(times)] if hw == "hw2" else []))
            data["codes"][f"report {hw}"] = cli(["report", str(out), "--out", str(root / f"{hw}.html"),
                                                 "--assignment", hw])
            data["codes"][f"export {hw}"] = cli(["export", str(out), "--canvas", str(roster), "--assignment", hw,
                                                 "--out", str(root / f"canvas-{hw}.csv")])
            data["codes"][f"gradescope {hw}"] = cli(["gradescope", str(root / f"{hw}.zip"), "--assignment", hw])
            data["codes"][f"release {hw}"] = cli(["release", str(root / f"release-{hw}"), "--assignment", hw])
        data["codes"]["export hw1 into hw2"] = cli(["export", str(root / "hw1"), "--canvas", str(roster),
                                                    "--assignment", "hw2", "--out", str(root / "wrong.csv")])
        data["codes"]["merge hw1 with hw2"] = cli(["merge", str(root / "hw1"), str(root / "hw2"), "--out",
                                                   str(root / "wrong-merge")])
        data["codes"]["merge hw3"] = cli(["merge", str(root / "hw3"), "--out",
                                          str(root / "hw3-merged"), "--assignment", "hw3", "--fail-on-pending"])
    finally:
        mp.undo()
    return data


def test_every_command_of_the_tiny_class_succeeds(tiny: dict) -> None:
    codes = dict(tiny["codes"])
    refused = {k: codes.pop(k) for k in ("export hw1 into hw2", "merge hw1 with hw2")}
    assert codes == dict.fromkeys(codes, 0), codes
    assert refused == dict.fromkeys(refused, 2), refused  # results of another assignment: nothing written
    assert not (tiny["root"] / "wrong.csv").exists() and not (tiny["root"] / "wrong-merge").exists()
    merged = (tiny["root"] / "hw3-merged" / "grades.csv").read_text()  # nothing pending: --fail-on-pending is 0
    assert merged == (tiny["root"] / "hw3" / "grades.csv").read_text()


@pytest.mark.parametrize("hw, module", [("hw1", "views"), ("hw2", "einops_rewrites"), ("hw3", "memory")])
def test_totals_agree_across_results_grades_report_gradescope_and_canvas(tiny: dict, hw: str, module: str) -> None:
    from grader.integrations.classroom import student_payload
    from grader.integrations.gradescope import finalize
    from grader.reports.classreport import collect

    root = tiny["root"]
    out = root / hw
    docs = {s: json.loads((out / "students" / s / "results.json").read_text()) for s in ("ada", "bob", "cy")}
    rows = {r["student"].lstrip("'"): r for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    header = next(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert header == ["student", "score", "max_score", "pending", module, "status", "raw_score", "late_penalty", "late"]
    report = {s["student"]: s for s in collect(out).students}
    assert f"<h1>Class report: {hw}</h1>" in (root / f"{hw}.html").read_text()  # (the folder is named as the id)
    canvas = {r["SIS Login ID"] or r["Student"]: r for r in csv.DictReader(io.StringIO((root / f"canvas-{hw}.csv")
                                                                                      .read_text()))}
    column = {"hw1": "HW1 (1001)", "hw2": "HW2 (1002)", "hw3": "HW3 (1003)"}[hw]
    assert list(canvas["ada"]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column]
    with zipfile.ZipFile(root / f"{hw}.zip") as zf:
        run = zf.read("run_autograder").decode()
        marker = tomllib.loads(zf.read("kit/course.toml").decode())
    assert f"--assignment {hw} " in run and marker["assignment"][0]["name"] == hw
    gpu_mode = re.search(r"--gpu-tests (\w+)", run)[1]
    assert gpu_mode == ("none" if hw == "hw3" else "staff")
    maxima = set()
    for s, doc in docs.items():
        extra = doc["extra_data"]
        assert set(extra["modules"]) == {module} and {t["extra_data"]["module"] for t in doc["tests"]} == {module}
        assert extra["submission"]["graded_with"]["assignment"] == hw
        raw = sum(t["score"] for t in doc["tests"])
        penalty = (extra.get("late") or {}).get("penalty_points", 0)
        assert doc["score"] == pytest.approx(raw - penalty)
        assert doc["max_score"] == pytest.approx(sum(t["max_score"] for t in doc["tests"]))
        maxima.add(doc["max_score"])
        assert float(rows[s]["score"]) == pytest.approx(doc["score"])
        assert float(rows[s]["max_score"]) == pytest.approx(doc["max_score"])
        assert float(rows[s][module]) == pytest.approx(raw)
        assert report[s]["score"] == pytest.approx(doc["score"]) and report[s]["max_score"] == doc["max_score"]
        instructor = json.loads((out / "instructor" / "students" / s / "instructor.json").read_text())
        gradescope = finalize(json.loads(json.dumps(doc)), instructor, gpu_mode)
        assert gradescope["score"] == pytest.approx(doc["score"])
        assert gradescope["max_score"] == pytest.approx(doc["max_score"])
        assert float(canvas[s][column]) == pytest.approx(doc["score"])
        _, payload, _ = student_payload(out, s)
        assert sum(t["score"] for t in payload["tests"]) == pytest.approx(doc["score"])
        assert payload["max_score"] == pytest.approx(doc["max_score"])
    assert len(maxima) == 1 and float(canvas["Points Possible"][column]) == maxima.pop()
    assert docs["ada"]["score"] == docs["ada"]["max_score"] > docs["cy"]["score"] and docs["bob"]["score"] == 0
    if hw == "hw3":  # the GPU tests do not count: none recorded, none pending, none in the maximum
        for doc in docs.values():
            assert doc["extra_data"]["pending_points"] == 0 and not doc["extra_data"]["pending_tests"]
            assert not any(t["extra_data"]["gpu"] for t in doc["tests"])
            assert doc["max_score"] == _points_without_gpu("memory")
        assert all(float(r["pending"]) == 0 for r in rows.values())
    if hw == "hw2":  # its late policy, from course.toml
        assert docs["cy"]["extra_data"]["late"]["penalty_points"] > 0
        assert docs["ada"]["extra_data"]["late"]["penalty_points"] == 0


def test_each_tiny_release_holds_its_module_and_its_check_grades_only_that(tiny: dict) -> None:
    import os
    import subprocess
    import sys

    release = tiny["root"] / "release-hw3"
    assert sorted(p.stem for p in (release / "assignment").glob("*.py")) == ["__init__", "memory"]
    assert _sections((release / "handout.md").read_text()) == [(1, "memory")]
    assert "(1 module in this assignment: memory)" in (release / "README.md").read_text()  # not "1 modules"
    filled = tiny["root"] / "filled"
    filled.mkdir()
    shutil.copy(KIT_ROOT / "solutions" / "memory.py", filled / "memory.py")
    report = tiny["root"] / "check.json"
    env = {**os.environ, "PYTHONPATH": str(release), "COLUMNS": "200"}
    env.pop("KIT_COURSE", None)
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(filled), "--json", str(report)],
                          cwd=release, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(report.read_text())
    assert {t["module"] for t in result["tests"]} == {"memory"} and not any(t["gpu"] for t in result["tests"])
    assert result["earned"] == result["possible"] > 0 and result["pending"] == 0


def test_the_gradescope_bundle_of_the_no_gpu_homework_grades_it_alone(tiny: dict, tmp_path: Path) -> None:
    """hw3's bundle, run in a local /autograder layout: its module only, no GPU test, its maximum without them."""
    import os
    import subprocess
    import sys

    from grader.results.results_json import validate_results

    root = tmp_path / "autograder"
    with zipfile.ZipFile(tiny["root"] / "hw3.zip") as zf:
        zf.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission" / "assignment").mkdir(parents=True)
    shutil.copy2(KIT_ROOT / "solutions" / "memory.py", root / "submission" / "assignment" / "memory.py")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "KIT_PYTHON": sys.executable}
    env.pop("KIT_COURSE", None)  # the bundle's own course.toml says which assignment it is
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=900)
    doc = json.loads((root / "results" / "results.json").read_text())
    assert validate_results(doc) == [], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert {t["extra_data"]["module"] for t in doc["tests"]} == {"memory"}
    assert not any(t["extra_data"]["gpu"] for t in doc["tests"]) and doc["extra_data"]["pending_points"] == 0
    assert doc["score"] == doc["max_score"] == _points_without_gpu("memory")
    assert "does not grade the GPU tests" in doc["output"]
