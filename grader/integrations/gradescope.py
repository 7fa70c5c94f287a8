"""`grader gradescope OUT.zip`: a Gradescope autograder bundle.

Gradescope unpacks the zip into /autograder/source, runs `setup.sh` once when the image is
built, then `run_autograder` per submission with the student's files in
/autograder/submission; the score must end up in /autograder/results/results.json.  The
bundle carries the instructor kit without the reference solutions, mutants or kit
self-tests (hidden tests included: they never reach students, Gradescope runs them).

`grader gradescope OUT.zip --assignment NAME` (a course.toml assignment, `grader.course.config`): the
bundle holds that assignment's marker (kit/course.toml, without the late policy: Gradescope has its
own) and run_autograder grades it by name: its modules and its maximum; where its GPU tests do
not count (``gpu_tests = false``) the bundle is ``none`` below, as with ``--no-gpu``.

`AUTOGRADER_ROOT` (default /autograder) and `KIT_PYTHON` let the kit's own tests run the
bundle in a temporary folder laid out like /autograder.

Gradescope has no GPU, so the GPU tests cannot run there.  The bundle says which of the two
supported ways the course took (`GPU_TESTS`, chosen by `grader gradescope [--no-gpu]` and baked
into run_autograder), and `finalize` writes it into the student's results.json:

* ``staff`` (default): the GPU tests stay pending in max_score (score 0, "neither given nor
  lost"), and the summary says that the course staff grade them on a GPU machine (`grader grade
  --device cuda` + `grader merge` on the downloaded submissions), so the Gradescope score is
  not the final one;
* ``none`` (``--no-gpu``): the course drops the GPU tests: they are left out of the tests, the
  maximum and the summary (results.json rebuilt from the records without them, as `grader merge`
  rebuilds it), so nothing stays pending forever; the summary says so.
"""

from __future__ import annotations

import argparse
import json
import re
import stat
import sys
import zipfile
from pathlib import Path
from typing import Any

from grader import KIT_ROOT

BUNDLE_PATHS = ("grader", "tests/__init__.py", "tests/generators.py", "tests/probes", "tests/public", "tests/hidden",
                "pyproject.toml", "README.md", "CHANGELOG.md", "handout.md")
EXCLUDED = {"__pycache__", ".pytest_cache", ".hypothesis"}
#: How the course grades the GPU tests, which cannot run on Gradescope (see the module docstring).
GPU_TESTS = ("staff", "none")
STAFF_LINE = ("GPU tests: {points} points on the GPU tests are graded by the course staff on a GPU machine "
              "(grader grade --device cuda + grader merge), not on Gradescope: they are not in this score yet.")
STAFF_TEST = ("pending: needs CUDA, which Gradescope does not have; the course staff run this test on a GPU "
              "machine: its {points} points are neither given nor lost until then")
NONE_LINE = "GPU tests: this course does not grade the GPU tests; they are not part of this assignment's points."
_PENDING_NOTE = re.compile(r" \([^()]*GPU tests pending[^()]*\)")  # build_results' note on the Score line

SETUP_SH = """\
#!/usr/bin/env bash
# Runs once when Gradescope builds the autograder image (Ubuntu, as root).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
apt-get update
apt-get install -y python3 python3-venv python3-pip bubblewrap libseccomp2
python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install torch==2.13.0 --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
"$ROOT/venv/bin/pip" install "$ROOT/source/kit"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Runs per submission.  Grades /autograder/submission (the student's files, any layout the
# grader accepts) in the sandbox and writes /autograder/results/results.json.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="${KIT_PYTHON:-$ROOT/venv/bin/python}"
OUT="$(mktemp -d)"
mkdir -p "$ROOT/results"
cd "$ROOT/source/kit"
# which isolation layers this container allows (Gradescope's Docker refuses namespaces: landlock),
# printed into the instructor-visible log only
"$PY" -m grader.cli doctor >&2 || true
# results: $OUT/students/<id>/results.json (what the student sees); $OUT/instructor/ stays here
"$PY" -m grader.cli grade "$ROOT/submission" --out "$OUT" -j 1 --no-progress ${KIT_GRADE_ARGS:-}
# the student's results.json, saying how this course grades the GPU tests (Gradescope has no GPU)
if ! "$PY" -m grader.integrations.gradescope "$OUT" "$ROOT/results/results.json" --gpu-tests __GPU_TESTS__; then
  printf '{"score": 0, "output": "The autograder could not grade this submission; please contact the course staff.", "tests": []}\\n' > "$ROOT/results/results.json"
fi
"""


def _add_tree(zf: zipfile.ZipFile, src: Path, arc: str) -> None:
    if src.is_file():
        zf.write(src, arc)
        return
    for path in sorted(src.rglob("*")):
        if path.is_file() and not (set(path.relative_to(src).parts) & EXCLUDED):
            zf.write(path, f"{arc}/{path.relative_to(src).as_posix()}")


def _add_script(zf: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    zf.writestr(info, text)


def build_bundle(out: Path, gpu_tests: str = "staff", assignment: tuple[str, Any] | None = None) -> Path:
    """Write the autograder zip: setup.sh and run_autograder at the top, the kit under kit/;
    `gpu_tests`: how the course grades the GPU tests (`GPU_TESTS`); `assignment` (course name, a
    `grader.course.config.Assignment`): the bundle grades that assignment only (its marker course.toml in
    kit/, without the late policy: Gradescope applies its own; `grader grade --assignment NAME`)."""
    if gpu_tests not in GPU_TESTS:
        raise ValueError(f"gpu_tests must be one of {', '.join(GPU_TESTS)}")
    run = RUN_AUTOGRADER.replace("__GPU_TESTS__", gpu_tests)
    if assignment is not None:
        run = run.replace("--no-progress ${KIT_GRADE_ARGS", f"--no-progress --assignment {assignment[1].name} "
                                                             "${KIT_GRADE_ARGS")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_script(zf, "setup.sh", SETUP_SH)
        _add_script(zf, "run_autograder", run)
        if assignment is not None:
            from grader.course.config import marker

            zf.writestr("kit/course.toml", marker(assignment[0], assignment[1]))
        for rel in BUNDLE_PATHS:
            if (KIT_ROOT / rel).exists():
                _add_tree(zf, KIT_ROOT / rel, f"kit/{rel}")
    return out


def _insert_after_score(doc: dict[str, Any], line: str) -> None:
    """`line` into the summary after its "Score:" line (whose pending note it replaces), else at the end."""
    lines = str(doc.get("output", "")).split("\n")
    at = next((i for i, x in enumerate(lines) if x.startswith("Score:")), None)
    if at is None:
        lines.append(line)
    else:
        lines[at] = _PENDING_NOTE.sub("", lines[at])
        lines.insert(at + 1, line)
    doc["output"] = "\n".join(lines)


def without_gpu_tests(doc: dict[str, Any], instructor: dict[str, Any]) -> dict[str, Any]:
    """`doc` rebuilt from the records of `instructor` (its instructor.json) without the GPU tests,
    so its tests, score, maximum, modules and summary all leave them out (the late decision, if
    any, applied again as `grader merge` does)."""
    from grader.course.late import apply as late_apply
    from grader.results.results_json import build_results

    if "records" not in instructor:  # nothing was recorded: nothing ran, no GPU test to drop
        return doc
    extra = doc.get("extra_data") or {}
    records = [r for r in instructor["records"] if not r.get("gpu")]
    new = build_results(records, student=extra.get("student", ""), kit_version=extra.get("kit_version", ""),
                        sandbox=dict(extra.get("sandbox") or {}), submission=extra.get("submission") or {},
                        status=extra.get("status", "graded"), reason=extra.get("reason", ""))
    if extra.get("late"):
        late_apply(new, extra["late"])
    return new


def finalize(doc: dict[str, Any], instructor: dict[str, Any], gpu_tests: str) -> dict[str, Any]:
    """The results.json Gradescope gets: `doc` saying how the course grades the GPU tests (see
    the module docstring); totals stay consistent (score = the tests' sum less any late penalty)."""
    if gpu_tests == "none":
        doc = without_gpu_tests(doc, instructor)
        _insert_after_score(doc, NONE_LINE)
        return doc
    pending = float((doc.get("extra_data") or {}).get("pending_points") or 0)
    if pending:
        for test in doc.get("tests", []):
            if (test.get("extra_data") or {}).get("result") == "pending":
                test["output"] = STAFF_TEST.format(points=f"{float(test.get('max_score', 0)):g}")
        _insert_after_score(doc, STAFF_LINE.format(points=f"{pending:g}"))
    return doc


def main(argv: list[str] | None = None) -> int:
    """run_autograder's last step: OUT (a `grader grade --out` folder of one submission) -> RESULTS_JSON."""
    from grader.results.layout import Layout, write_json
    from grader.results.results_json import validate_results

    p = argparse.ArgumentParser(prog="python -m grader.integrations.gradescope")
    p.add_argument("out")
    p.add_argument("results_json")
    p.add_argument("--gpu-tests", choices=GPU_TESTS, required=True)
    args = p.parse_args(argv)
    layout = Layout(Path(args.out))
    students = layout.students()
    if len(students) != 1:
        print(f"gradescope: expected one graded submission in {args.out}, found {len(students)}", file=sys.stderr)
        return 1
    doc = json.loads(layout.results(students[0]).read_text(encoding="utf-8"))
    try:
        instructor = json.loads(layout.instructor(students[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        instructor = {}
    doc = finalize(doc, instructor, args.gpu_tests)
    problems = validate_results(doc)
    if problems:
        print(f"gradescope: results.json does not conform: {'; '.join(problems[:3])}", file=sys.stderr)
        return 1
    write_json(Path(args.results_json), doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
