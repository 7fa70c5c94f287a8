"""`grader prairielearn --grade ROOT`: one PrairieLearn submission graded, results.json written.

PrairieLearn lays out a grading job as ROOT (``/grade`` in the image): ``student/`` (the files
the question's elements submitted), ``tests/`` (the question's tests folder: `question.json`
written by `grader.integrations.prairielearn`, the module's hidden tests, the assignment's marker
course.toml), ``data/data.json`` (not needed here); the result must be ``results/results.json``
(docs/externalGrading.md): ``gradable``, ``score`` in [0, 1], ``message``, ``output``, and
``tests`` with ``name``, ``points``, ``max_points``, ``message``, ``output``.

The grading is `grader grade`'s, nothing new: a working copy of the kit (the image's grader,
public tests and probes, plus the question's hidden tests and marker) grades a one-submission
batch (``grader grade --module M -j 1``: the same sandbox, budgets and tests), then Gradescope's
results.json of it goes through `grader.integrations.gradescope.finalize` with the GPU tests left
out (PrairieLearn has no GPU) and is rewritten in PrairieLearn's format (`pl_results`).

What a student sees is capped and escaped (`grader.untrusted.shown`); hidden tests show their
name and points only (their details stay in the instructor-only files, as on Gradescope); the
whole file stays under PrairieLearn's 1 MB.  A submission that cannot be graded (no module file,
an empty one, a file the kit refuses, a grading past the question's timeout, a sandbox below the
level the course requires, a grader failure, a module file the kit's staging does not take) gets
``"gradable": false`` and a plain message: PrairieLearn then neither scores it nor counts the attempt.  Never a stack trace (that goes to the
job's log, which only the course staff see), and this process exits 0 whenever results.json was
written (PrairieLearn ignores results.json of a job that exited otherwise).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from grader.untrusted import LIMIT, shown

#: grader-host refuses a results.json over 1 MiB; what is written stays well under it.
RESULTS_BUDGET = 900_000
TEST_OUTPUT_LIMIT, SUMMARY_LIMIT = 2000, 8000
_MODULE = re.compile(r"[a-z][a-z0-9_]*")
STUDENT = "submission"  # the one submission's id in the batch
CONTACT = "please contact the course staff"
GPU_LINE = "GPU tests: PrairieLearn has no GPU; the handout's GPU tests are not part of this question's points."


class NotGradable(Exception):
    """This submission gets ``"gradable": false`` with this message (plain words, for the student)."""


def not_gradable(message: str) -> dict[str, Any]:
    text = shown(message, 2000, newlines=True)
    return {"gradable": False, "score": 0.0, "message": text, "format_errors": [text], "tests": []}


def read_question(root: Path) -> dict[str, Any]:
    """tests/question.json, checked (a question the fragment did not write is the staff's mistake)."""
    try:
        q = json.loads((root / "tests" / "question.json").read_text(encoding="utf-8"))
        ok = (isinstance(q, dict) and isinstance(q.get("module"), str) and _MODULE.fullmatch(q["module"])
              and isinstance(q.get("files"), list) and q["files"]
              and all(isinstance(f, str) and re.fullmatch(r"[a-z][a-z0-9_]*\.py", f) for f in q["files"])
              and isinstance(q.get("timeout"), int) and 1 <= q["timeout"] <= 600)
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise NotGradable(f"This question's grader is not set up (tests/question.json is missing or wrong): {CONTACT}.")
    return q


def stage_submission(root: Path, question: dict[str, Any], work: Path) -> Path:
    """WORK/subs/submission/assignment/ with the question's files from ROOT/student (regular files
    only, each within the kit's module size cap); NotGradable when the module's own file is missing
    or holds nothing but white space."""
    from grader.intake.unpack import MAX_MODULE_BYTES

    dest = work / "subs" / STUDENT / "assignment"
    dest.mkdir(parents=True)
    module_file = question["files"][0]
    for name in question["files"]:
        path = root / "student" / name
        try:
            st = path.lstat()
        except OSError:
            if name == module_file:
                raise NotGradable(f"No {module_file} was submitted: nothing to grade.") from None
            continue  # a used module's file: its tests are not graded here; the kit says what is missing
        if not path.is_file() or path.is_symlink():
            raise NotGradable(f"{name} is not a plain file.")
        if st.st_size > MAX_MODULE_BYTES:
            raise NotGradable(f"{name} has {st.st_size} bytes; a module file may have at most {MAX_MODULE_BYTES}.")
        data = path.read_bytes()
        if name == module_file and not data.strip():
            raise NotGradable(f"{module_file} is empty: nothing to grade. Submit your code and try again.")
        (dest / name).write_bytes(data)
    refused_module(dest.parent, module_file, work)
    return dest.parent


def refused_module(sub: Path, module_file: str, work: Path) -> None:
    """NotGradable when the kit's staging (`grader.intake.stage`, the checks `grader grade` makes
    before anything runs) does not take the module's own file: not UTF-8 text, a null byte, ...; a
    batch would grade the module as missing and PrairieLearn would count a 0."""
    from grader.intake.discover import Source
    from grader.intake.stage import stage
    from grader.intake.unpack import RejectedSubmission

    try:
        staged = stage(Source(STUDENT, sub), work / "check")
    except RejectedSubmission as exc:
        raise NotGradable(f"{module_file} cannot be graded: {exc}") from None
    why = staged.not_taken.get(f"assignment/{module_file}")
    if why is not None:
        raise NotGradable(f"{module_file} was not taken by the grader ({why}): nothing was graded. Fix it and submit again.")


def working_kit(root: Path, work: Path) -> Path:
    """A copy of this kit's grader, public tests and probes, with the question's hidden tests and marker."""
    from grader.integrations.prairielearn import copy_image_paths

    kit = work / "kit"
    copy_image_paths(kit)
    hidden = root / "tests" / "hidden"
    if hidden.is_dir():
        (kit / "tests" / "hidden").mkdir(parents=True)
        for path in hidden.glob("*.py"):
            shutil.copy2(path, kit / "tests" / "hidden" / path.name)
    if (root / "tests" / "course.toml").is_file():
        shutil.copy2(root / "tests" / "course.toml", kit / "course.toml")
    return kit


def deadline(timeout: int) -> float:
    """Seconds the grading may take within PrairieLearn's `timeout` (room left to write results.json)."""
    return max(5.0, timeout * 0.9 - 10)


def run_grade(kit: Path, sub: Path, out: Path, question: dict[str, Any], require: str | None) -> None:
    """`grader grade` on the one submission, in the working kit, killed (its process group) past the deadline."""
    cmd = [sys.executable, "-m", "grader.cli", "grade", str(sub), "--out", str(out), "-j", "1", "--no-progress",
           "--module", question["module"]]
    if question.get("assignment"):
        cmd += ["--assignment", question["assignment"]]
    if require:
        cmd += ["--require", require]
    env = {k: v for k, v in os.environ.items() if k not in ("KIT_COURSE", "PYTHONPATH")}
    proc = subprocess.Popen(cmd, cwd=kit, env=env, stdin=subprocess.DEVNULL, stdout=sys.stderr,
                            start_new_session=True)
    try:
        proc.wait(timeout=deadline(question["timeout"]))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise NotGradable(f"Grading did not finish within {deadline(question['timeout']):.0f} seconds (a function "
                          "that never returns, or one far too slow?); nothing was scored. Fix it and submit again.")


def pl_test(t: dict[str, Any]) -> dict[str, Any]:
    """One Gradescope test entry (`grader.results.results_json.test_entry`) as PrairieLearn's."""
    result = str((t.get("extra_data") or {}).get("result", t.get("status", "")))
    return {"name": shown(t.get("name", ""), LIMIT), "points": float(t.get("score") or 0),
            "max_points": float(t.get("max_score") or 0),
            "message": {"passed": "passed", "not_attempted": "not attempted"}.get(result, "failed"),
            "output": shown(t.get("output", ""), TEST_OUTPUT_LIMIT, newlines=True)}


def pl_results(doc: dict[str, Any]) -> dict[str, Any]:
    """Gradescope's results.json of one submission, GPU tests already left out, as PrairieLearn's."""
    from grader.integrations.gradescope import NONE_LINE

    extra = doc.get("extra_data") or {}
    summary = str(doc.get("output", "")).replace(NONE_LINE, GPU_LINE)
    if extra.get("status") in ("empty", "rejected"):
        return not_gradable("\n".join(line for line in summary.splitlines() if not line.startswith("  ")))
    possible = float(doc.get("max_score") or 0)
    earned = float(doc.get("score") or 0)
    score_line = next((line for line in summary.splitlines() if line.startswith("Score:")), "")
    # `output` (here and per test) carries text the student's code steers, capped and stripped of control
    # characters by `shown`; PrairieLearn's pl-external-grader-results element also escapes it when it shows
    # it (ansi2html's Ansi2HTMLConverter, HTML-escaping), so neither markup nor escape sequences reach a page.
    results = {"gradable": True, "score": min(1.0, max(0.0, earned / possible)) if possible > 0 else 0.0,
               "message": shown(score_line, LIMIT), "output": shown(summary, SUMMARY_LIMIT, newlines=True),
               "tests": [pl_test(t) for t in doc.get("tests", [])]}
    return within_budget(results)


def within_budget(results: dict[str, Any]) -> dict[str, Any]:
    """`results` with the longest test outputs left out until its JSON fits `RESULTS_BUDGET` bytes."""
    def size() -> int:
        return len(json.dumps(results, ensure_ascii=False).encode("utf-8"))

    for t in sorted(results["tests"], key=lambda t: -len(t["output"])):
        if size() <= RESULTS_BUDGET:
            break
        t["output"] = "[output left out: the results reached PrairieLearn's size limit]"
    return results


def grade_root(root: Path, require: str | None = None) -> dict[str, Any]:
    """PrairieLearn's results of the submission under `root` (never raises for the submission's sake)."""
    from grader.results.layout import Layout
    from grader.integrations.gradescope import finalize

    question = read_question(root)
    if require:
        from grader.sandbox.doctor import require as required_level

        try:
            required_level(require)
        except RuntimeError as exc:
            print(f"prairielearn: {exc}", file=sys.stderr)
            raise NotGradable(f"The grader cannot isolate submissions as this course requires ({require}) on this "
                              f"grading machine; nothing was run: {CONTACT}.") from None
    with tempfile.TemporaryDirectory(prefix="kit-pl-") as tmp:
        work = Path(tmp)
        sub = stage_submission(root, question, work)
        kit = working_kit(root, work)
        run_grade(kit, sub, work / "out", question, require)
        layout = Layout(work / "out")
        try:
            doc = json.loads(layout.results(STUDENT).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise NotGradable(f"The autograder could not grade this submission: {CONTACT}.") from None
        try:
            instructor = json.loads(layout.instructor(STUDENT).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            instructor = {}
        return pl_results(finalize(doc, instructor, "none"))


def write_results(root: Path, results: dict[str, Any]) -> Path:
    """ROOT/results/results.json, written whole or not at all."""
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".results.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, folder / "results.json")
    return folder / "results.json"


def main(root: Path, require: str | None = None) -> int:
    """Grade ROOT and write its results.json; 0 when it was written (whatever the verdict), else 1."""
    try:
        results = grade_root(root, require)
    except NotGradable as exc:
        results = not_gradable(str(exc))
    except Exception:  # noqa: BLE001 - the grader's own failure: the log gets the trace, the student a message
        traceback.print_exc(file=sys.stderr)
        results = not_gradable(f"The autograder failed on this submission (not because of your code): {CONTACT}.")
    try:
        write_results(root, results)
    except OSError as exc:
        print(f"prairielearn: cannot write {root / 'results' / 'results.json'}: {exc}", file=sys.stderr)
        return 1
    return 0
