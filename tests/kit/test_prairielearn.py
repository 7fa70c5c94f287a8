"""`grader prairielearn`: the course fragment validates against PrairieLearn's own schemas, and the
entrypoint (`grader prairielearn --grade ROOT`) grades a ROOT laid out as PrairieLearn lays out
/grade into a results.json PrairieLearn accepts.

What PrairieLearn accepts (`accepted_by_prairielearn`) is read from its code at the commit the
schemas are vendored from (tests/kit/schemas/prairielearn/README.md): apps/grader-host/src/index.ts
(results.json at most 1 MiB, JSON), apps/prairielearn/src/lib/externalGraderCommon.ts
(`makeGradingResult`: a numeric score, format_errors a string or strings),
apps/prairielearn/src/lib/externalGrader.ts (`processGradingResult`: a gradable result needs a
finite score in [0, 1]) and docs/externalGrading.md (per-test points shown only when every test has
both points and max_points).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from grader import KIT_ROOT
from grader.course.config import Assignment, default_assignment, parse_course
from grader.course.modules import discover_modules
from grader.integrations.prairielearn import build_fragment, module_points
from grader.authoring.mutants import apply, load_mutants
from tests.adversarial import batch as adversarial_batch
from tests.adversarial import cases as adversarial

SCHEMAS = Path(__file__).parent / "schemas" / "prairielearn"
MODULE = "memory"
MUTANT = "storage_bytes_of_view"  # tests/mutants/memory.py: counts the view's elements, not its storage
#: The tests `grader validate --mutant memory:storage_bytes_of_view` names as catching it (run by hand,
#: 0.6.0: "caught by 2 of 14 tests"): the points it must lose, and no other.
CATCHING = {"test_storage_bytes_of_views", "test_memory_usage_and_storage_other_dtypes"}


def accepted_by_prairielearn(path: Path) -> list[str]:
    """Why PrairieLearn would not take `path` as a grading job's results.json (empty when it would)."""
    data = path.read_bytes()
    if len(data) > 1024 * 1024:
        return ["larger than 1 MiB: grader-host refuses it"]
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        return ["not JSON"]
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    problems = []
    gradable = doc.get("gradable", True)
    if not isinstance(gradable, bool):
        problems.append("gradable must be true or false")
    score = doc.get("score")
    if score is not None and (type(score) not in (int, float) or math.isnan(score)):
        problems.append("score is not a number")
    if gradable is not False and not (type(score) in (int, float) and math.isfinite(score) and 0 <= score <= 1):
        problems.append("a gradable result needs a score in [0, 1]")
    fe = doc.get("format_errors", [])
    if not (isinstance(fe, str) or (isinstance(fe, list) and all(isinstance(x, str) for x in fe))):
        problems.append("format_errors must be a string or a list of strings")
    for key in ("message", "output"):
        if key in doc and not isinstance(doc[key], str):
            problems.append(f"{key} must be a string")
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        return problems + ["tests must be a list"]
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            problems.append(f"tests[{i}] needs a name")
            continue
        if not all(type(t.get(k)) in (int, float) for k in ("points", "max_points")):
            problems.append(f"tests[{i}]: points and max_points on every test (else no per-test points)")
        elif not 0 <= t["points"] <= t["max_points"]:
            problems.append(f"tests[{i}]: points outside 0..max_points")
        problems += [f"tests[{i}].{k} must be a string" for k in ("message", "output", "description")
                     if k in t and not isinstance(t[k], str)]
    return problems


def all_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from all_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from all_strings(v)


@pytest.fixture(scope="module")
def fragment(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pl") / "fragment"
    build_fragment(out, default_assignment(), "", image="example/kit-grader:0.6.0", timeout=240)
    return out


def test_fragment_validates_against_prairielearn_schemas(fragment):
    question = json.loads((SCHEMAS / "infoQuestion.json").read_text())
    assessment = json.loads((SCHEMAS / "infoAssessment.json").read_text())
    infos = sorted((fragment / "questions").rglob("info.json"))
    assert [p.parent.name for p in infos] == sorted(discover_modules())
    for path in infos:
        doc = json.loads(path.read_text())
        jsonschema.Draft7Validator(question).validate(doc)
        assert doc["gradingMethod"] == "External" and doc["externalGradingOptions"]["timeout"] == 240
        assert doc["externalGradingOptions"]["image"] == "example/kit-grader:0.6.0"
    (info,) = (fragment / "courseInstances").rglob("infoAssessment.json")
    doc = json.loads(info.read_text())
    jsonschema.Draft7Validator(assessment).validate(doc)
    points = {q["id"]: q["points"] for q in doc["zones"][0]["questions"]}
    assert points[f"kit/{MODULE}"] == 16  # the handout: 12 public points (1 on the GPU) + 5 hidden
    assert len({json.loads(p.read_text())["uuid"] for p in infos} | {doc["uuid"]}) == len(infos) + 1


def test_a_bad_info_json_fails_the_schema(fragment):
    """The schema check can fail: an unknown option and a missing image are refused."""
    schema = json.loads((SCHEMAS / "infoQuestion.json").read_text())
    doc = json.loads((fragment / "questions" / "kit" / MODULE / "info.json").read_text())
    for bad in ({**doc["externalGradingOptions"], "gpu": True}, {"timeout": 30}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate({**doc, "externalGradingOptions": bad})


def test_question_shows_the_stub_and_its_section(fragment):
    q = fragment / "questions" / "kit" / MODULE
    html = (q / "question.html").read_text()
    assert f'file-name="{MODULE}.py"' in html and 'source-file-name="initial_memory.py"' in html
    assert "**Storage versus view.**" in html and "<pl-external-grader-results>" in html
    stub = (q / "initial_memory.py").read_text()
    assert stub == (KIT_ROOT / "assignment" / "memory.py").read_text()
    assert (q / "tests" / "hidden" / "test_memory.py").read_bytes() == \
        (KIT_ROOT / "tests" / "hidden" / "test_memory.py").read_bytes()
    training = (fragment / "questions" / "kit" / "training" / "question.html").read_text()
    assert '<pl-file-upload file-names="' in training and "flops.py" in training  # training uses flops


def test_image_holds_no_solutions_nor_hidden_tests(fragment):
    kit = fragment / "grader-image" / "kit"
    names = {p.relative_to(kit).as_posix() for p in kit.rglob("*")}
    assert not [n for n in names if n.startswith(("solutions", "tests/hidden", "tests/mutants", "tests/variants",
                                                  "tests/kit", "assignment"))]
    assert "prairielearn-entrypoint" in names and "tests/public/test_memory.py" in names
    dockerfile = (fragment / "grader-image" / "Dockerfile").read_text()
    assert "COPY kit /opt/kit" in dockerfile and 'ENTRYPOINT ["/opt/kit/prairielearn-entrypoint"]' in dockerfile
    reference_line = next(line for line in (KIT_ROOT / "solutions" / "memory.py").read_text().splitlines()
                          if "untyped_storage().nbytes()" in line).strip()
    assert not any(reference_line in p.read_text(errors="replace") for p in kit.rglob("*.py"))


def test_course_toml_maps_an_assignment_to_its_assessment(tmp_path):
    raw = {"course": {"name": "C"}, "assignment": [
        {"name": "hw1", "title": "Bytes", "modules": ["memory", "views"], "prairielearn_assessment": "HW1"}]}
    course = parse_course(raw, None, discover_modules())
    made = build_fragment(tmp_path / "f", course.assignments[0], course.name, image="example/g:1")
    assert made["tid"] == "HW1" and [q for q, _ in made["questions"]] == ["hw1/memory", "hw1/views"]
    assert (tmp_path / "f" / "courseInstances" / "COURSE_INSTANCE" / "assessments" / "HW1").is_dir()
    marker = (tmp_path / "f" / "questions" / "hw1" / "memory" / "tests" / "course.toml").read_text()
    assert 'name = "hw1"' in marker and "release = true" in marker
    with pytest.raises(ValueError, match="prairielearn_assessment"):
        parse_course({**raw, "assignment": [{**raw["assignment"][0], "prairielearn_assessment": "a b"}]}, None,
                     discover_modules())


# -- the entrypoint on a ROOT laid out as /grade ------------------------------------------------

def make_root(base: Path, fragment: Path, name: str, text: str | None, timeout: int | None = None) -> Path:
    """ROOT as PrairieLearn lays out /grade: tests/ (the question's), data/data.json, student/<module>.py."""
    root = base / name
    shutil.copytree(fragment / "questions" / "kit" / MODULE / "tests", root / "tests")
    if timeout is not None:
        q = json.loads((root / "tests" / "question.json").read_text())
        (root / "tests" / "question.json").write_text(json.dumps({**q, "timeout": timeout}))
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    (root / "student").mkdir()
    if text is not None:
        (root / "student" / f"{MODULE}.py").write_text(text)
    return root


def grade(root: Path, entrypoint: Path | None = None) -> dict:
    """`grader prairielearn --grade ROOT` (or the image's entrypoint script, run from the image's kit/
    folder with this Python), and the results.json it wrote, checked as PrairieLearn checks it."""
    cmd = ["sh", str(entrypoint), str(root)] if entrypoint else [sys.executable, "-m", "grader.cli", "prairielearn",
                                                                 "--grade", str(root)]
    proc = subprocess.run(cmd, cwd=KIT_ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KIT_PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = root / "results" / "results.json"
    assert accepted_by_prairielearn(path) == [], path.read_text()[:2000]
    doc = json.loads(path.read_text())
    assert "Traceback" not in path.read_text()
    assert not any(ch in s for s in all_strings(doc) for ch in ("\x1b", "\x07", "\u202e")), "raw control characters"
    return doc


def points(doc: dict) -> dict[str, float]:
    return {t["name"].split(" ")[1]: t["points"] for t in doc["tests"]}


@pytest.fixture(scope="module")
def graded(fragment, tmp_path_factory) -> dict[str, dict]:
    """The reference, the stub, a mutant, a hostile submission and its honest twin, each graded alone."""
    base = tmp_path_factory.mktemp("roots")
    solution = (KIT_ROOT / "solutions" / "memory.py").read_text()
    (mutant,) = [m for m in load_mutants((MODULE,)) if m.name == MUTANT]
    ctx = adversarial.Ctx(root=base / "adv", out=base / "adv-out", marker_dir=base / "markers", port=9)
    texts = {"reference": solution, "stub": (KIT_ROOT / "assignment" / "memory.py").read_text(),
             "mutant": apply(mutant, solution),
             "hostile": (adversarial_batch.ansi_everywhere(ctx) / "assignment" / "memory.py").read_text(),
             "twin": (adversarial.twin_raises(ctx) / "assignment" / "memory.py").read_text()}
    # the reference is graded by the image's own entrypoint and kit/ (no solutions, no hidden tests in it)
    image_entrypoint = fragment / "grader-image" / "kit" / "prairielearn-entrypoint"
    return {name: grade(make_root(base, fragment, name, text), image_entrypoint if name == "reference" else None)
            for name, text in texts.items()}


def test_reference_scores_one_and_stub_zero(graded):
    ref, stub = graded["reference"], graded["stub"]
    assert ref["gradable"] is True and ref["score"] == 1.0
    assert sum(t["max_points"] for t in ref["tests"]) == module_points(MODULE) == 16
    assert stub["gradable"] is True and stub["score"] == 0.0 and not any(t["points"] for t in stub["tests"])
    hidden = [t for t in ref["tests"] if t["name"].endswith("(hidden)")]
    assert hidden and all(t["output"] in ("hidden test: passed",) for t in hidden)
    # the GPU test (tests/public/test_memory.py, @pytest.mark.gpu) is out of the tests and the points
    assert "PrairieLearn has no GPU" in ref["output"]
    assert "test_accounting_matches_the_cuda_allocator" not in points(ref)


def test_mutant_loses_the_points_of_its_catching_tests(graded):
    ref, mut = points(graded["reference"]), points(graded["mutant"])
    lost = {name for name in ref if mut[name] != ref[name]}
    assert lost == CATCHING and all(mut[name] == 0 for name in lost)
    expected = (sum(ref.values()) - sum(ref[n] for n in CATCHING)) / sum(ref.values())
    assert graded["mutant"]["score"] == pytest.approx(expected)


def test_hostile_submission_scores_no_more_than_its_twin(graded):
    hostile, twin = graded["hostile"], graded["twin"]
    assert 0 < twin["score"] < 1 and hostile["score"] <= twin["score"]
    shown_text = json.dumps(hostile, ensure_ascii=False)
    assert "\\x1b" in shown_text  # the escape sequences arrive escaped, as text


def test_empty_or_missing_upload_is_not_gradable(fragment, tmp_path):
    for name, text in (("empty", "   \n"), ("missing", None)):
        doc = grade(make_root(tmp_path, fragment, name, text))
        assert doc["gradable"] is False and "memory.py" in doc["message"], doc
        assert doc["tests"] == []


def test_a_module_file_the_kit_does_not_take_is_not_gradable(fragment, tmp_path):
    """A Latin-1 memory.py is not taken by the kit's staging (a batch grades the module as missing):
    PrairieLearn gets "not gradable" and the reason, not a counted 0; the same file saved as UTF-8 is graded."""
    text = "# caf\u00e9\n" + (KIT_ROOT / "solutions" / "memory.py").read_text()
    root = make_root(tmp_path, fragment, "latin1", "")
    (root / "student" / "memory.py").write_bytes(text.encode("latin-1"))
    doc = grade(root)
    assert doc["gradable"] is False and doc["tests"] == [], doc
    assert "memory.py was not taken by the grader" in doc["message"] and "UTF-8" in doc["message"], doc["message"]
    doc = grade(make_root(tmp_path, fragment, "utf8", text))
    assert doc["gradable"] is True and doc["score"] == 1.0


def test_the_image_refuses_rlimits_unless_asked(tmp_path):
    """Below Landlock student code could read /grade/tests (the hidden tests): the image requires
    landlock unless the fragment is written with --require rlimits."""
    from grader.cli import main as cli

    build_fragment(tmp_path / "a", default_assignment(), "", image="example/g:1")
    assert "ENV KIT_PL_REQUIRE=landlock" in (tmp_path / "a" / "grader-image" / "Dockerfile").read_text()
    build_fragment(tmp_path / "b", default_assignment(), "", image="example/g:1", require="rlimits")
    assert "ENV KIT_PL_REQUIRE=rlimits" in (tmp_path / "b" / "grader-image" / "Dockerfile").read_text()
    from grader.integrations import prairielearn

    seen = []
    real = prairielearn.build_fragment
    try:  # the command line's default is the same
        prairielearn.build_fragment = lambda *a, **k: seen.append(k["require"]) or real(*a, **k)
        cli(["prairielearn", str(tmp_path / "c"), "--image", "example/g:1"])
    finally:
        prairielearn.build_fragment = real
    assert seen == ["landlock"]
    assert "ENV KIT_PL_REQUIRE=landlock" in (tmp_path / "c" / "grader-image" / "Dockerfile").read_text()


def test_a_grading_past_the_timeout_is_not_gradable_and_stops(fragment, tmp_path):
    """A question timeout of 6 s leaves the grading 5 s: it is stopped and says so (PrairieLearn would
    otherwise kill the job and show a failure)."""
    import time

    root = make_root(tmp_path, fragment, "slow", (KIT_ROOT / "solutions" / "memory.py").read_text(), timeout=6)
    t0 = time.monotonic()
    doc = grade(root)
    assert time.monotonic() - t0 < 30
    assert doc["gradable"] is False and "did not finish within" in doc["message"]


def test_a_broken_question_is_not_gradable(fragment, tmp_path):
    root = make_root(tmp_path, fragment, "broken", "x = 1\n")
    (root / "tests" / "question.json").write_text("{not json")
    doc = grade(root)
    assert doc["gradable"] is False and "not set up" in doc["message"]


def test_results_checker_refuses_what_prairielearn_refuses(tmp_path):
    path = tmp_path / "results.json"
    for bad in ({"score": 1.5}, {"score": "1"}, {"gradable": True}, {"score": 1, "tests": [{"name": "a", "points": 1}]},
                {"score": 0.5, "format_errors": [1]}):
        path.write_text(json.dumps(bad))
        assert accepted_by_prairielearn(path), bad
    path.write_text(json.dumps({"score": 0.5, "output": "x" * (1024 * 1024)}))
    assert accepted_by_prairielearn(path)
    path.write_text(json.dumps({"gradable": False, "message": "no file"}))
    assert accepted_by_prairielearn(path) == []


# -- the image, built where a container engine can build and run it ------------------------------

def container_engine() -> list[str] | None:
    """`KIT_CONTAINER_ENGINE` (e.g. "podman --runtime runc"), else the first of docker and podman whose
    `info` answers (a docker client without a daemon does not)."""
    if os.environ.get("KIT_CONTAINER_ENGINE"):
        return os.environ["KIT_CONTAINER_ENGINE"].split()
    for name in ("docker", "podman"):
        found = shutil.which(name)
        if found and subprocess.run([found, "info"], capture_output=True, timeout=60).returncode == 0:
            return [found]
    return None


def test_image_builds_and_grades(fragment, tmp_path):
    """`docker build` of grader-image/, then the image grades a ROOT mounted at /grade without network.
    Needs a container engine that can reach its base image (Docker Hub) and PyPI + PyTorch's CPU index;
    skipped, saying which, where it cannot (the entrypoint itself is run from the image's kit/ above)."""
    engine = container_engine()
    if engine is None:
        pytest.skip("no container engine that runs here (docker with a daemon, or podman): the image was not built")
    base = "python:3.11-slim-bookworm"
    have = subprocess.run([*engine, "image", "inspect", base], capture_output=True).returncode == 0
    if not have:
        pulled = subprocess.run([*engine, "pull", base], capture_output=True, text=True, timeout=120)
        if pulled.returncode != 0:
            pytest.skip(f"{' '.join(engine)} cannot pull the base image {base} (no registry access here: "
                        f"{pulled.stderr.strip().splitlines()[-1][:200] if pulled.stderr.strip() else 'failed'})")
    tag = "localhost/kit-prairielearn-test:latest"
    built = subprocess.run([*engine, "build", "-t", tag, str(fragment / "grader-image")], capture_output=True,
                           text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    root = make_root(tmp_path, fragment, "in-image", (KIT_ROOT / "solutions" / "memory.py").read_text())
    ran = subprocess.run([*engine, "run", "--rm", "--network", "none", "-v", f"{root}:/grade", tag],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    path = root / "results" / "results.json"
    assert accepted_by_prairielearn(path) == []
    assert json.loads(path.read_text())["score"] == 1.0
