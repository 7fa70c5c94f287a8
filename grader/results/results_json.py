"""A submission's results.json: what the student sees, in Gradescope's format.

Where it and the other files of a batch live, and how they are written: `grader.results.layout`;
grades.csv and the summary table: `grader.results.grades`.

results.json follows the Gradescope autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): top-level ``score``,
``output``, ``visibility``, ``stdout_visibility``, ``extra_data`` and ``tests``; each test has
``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed``/``failed``), ``output``,
``tags``, ``visibility`` and ``extra_data``.  We also write a top-level ``max_score`` (the
assignment's total, pending GPU points included), which Gradescope ignores (it takes the
total from the assignment's settings).  With a late policy (`grader.course.late`) ``score`` is the final
score: the tests' sum (the raw score) less ``extra_data.late.penalty_points``.

What reaches results.json: test outcomes, the messages the trusted tests wrote, and what the
grader itself decided (kit version, which sandbox launcher and isolation layers ran, with the
launcher's fixed warning when it is the weak fallback, what was taken from the submission).  Nothing the sandboxed code can steer beyond its test outcomes: no output size,
no restart/crash/timeout counts, no execution time (a submission could encode hidden-test
inputs in any of them); those go to instructor.json.

Visibility decisions:

* public tests are ``visible``; their output is the teaching feedback (what was checked, and
  expected vs got, or "not attempted", or the exception and the student's own frame), and
  ``extra_data.figures`` the pictures' data the test computed (`grader.testing.figures`; hidden tests never);
* hidden tests are ``after_published``: students see their name and score once grades are
  published, never their details (the output says only passed / failed / not attempted; the
  full message is in the instructor-only instructor.json);
* GPU tests not run on this machine are *pending*: score 0, max_score their points, no status,
  output "pending: ...", tag ``pending``; ``extra_data.pending_points`` sums them and
  ``extra_data.pending_tests`` lists them, so `grader merge` can fill them in later;
* the submission's own stdout/stderr is never shown to students (``stdout_visibility``
  hidden); it is kept, capped, in the instructor-only sandbox.log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.intake.take import WHERE_LOOKED
from grader.testing.scoring import score, totals
from grader.testing.totals import counted

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
HIDDEN_VISIBILITY = "after_published"
#: The only sandbox facts a student's results.json may carry: the grader's own choices.
SANDBOX_PUBLIC_KEYS = ("launcher", "layers", "warning")


def _are(n: float) -> str:
    return "is" if n == 1 else "are"


def _pts(x: float) -> str:
    return f"{x:g}"


def test_entry(record: dict[str, Any], number: str, ran: str) -> dict[str, Any]:
    """One Gradescope test entry from a plugin record."""
    points = float(record["points"])
    status = record["status"]
    hidden = bool(record.get("hidden"))
    checked = record.get("checked") or record["name"]
    message = (record.get("message") or "").strip()
    entry: dict[str, Any] = {
        "name": f"{record['module']}: {record['name']}" + (" (hidden)" if hidden else f" — {checked}"),
        "number": number,
        "score": points if status == "passed" else 0.0,
        "max_score": points,
        "visibility": HIDDEN_VISIBILITY if hidden else "visible",
        "tags": [record["module"], "hidden" if hidden else "public", *(["gpu"] if record.get("gpu") else []),
                 *(["pending"] if status == "pending" else [])],
    }
    if status == "pending" and not record.get("gpu"):  # (`grader check` off Linux: checked only when graded)
        entry["output"] = f"pending: {message} (its {counted(points, 'point')} {_are(points)} neither given nor lost here)"
    elif status == "pending":
        entry["output"] = (f"pending: needs CUDA; this test runs on a GPU machine (the course staff grade it) and its "
                           f"{counted(points, 'point')} {_are(points)} merged in later (neither given nor lost yet)")
    else:
        entry["status"] = "passed" if status == "passed" else "failed"
        if hidden:
            entry["output"] = {"passed": "hidden test: passed", "not_attempted": "hidden test: not attempted"}.get(
                status, "hidden test: failed (the details of hidden tests are not shown)")
        elif status == "passed":
            entry["output"] = f"passed: {checked}"
        elif status == "not_attempted":
            entry["output"] = f"checked: {checked}\n{message or 'not attempted'}"
        else:
            entry["output"] = f"checked: {checked}\n{message or status}"
    entry["extra_data"] = {"id": record["id"], "module": record["module"], "result": status, "hidden": hidden,
                           "gpu": bool(record.get("gpu")),
                           "ran": "pending (GPU machine)" if status == "pending" else ran}
    if record.get("figures") and not hidden and status != "pending":  # hidden tests: no details, no pictures
        entry["extra_data"]["figures"] = record["figures"]
    return entry


def summary_lines(table: dict[str, Any], *, status: str = "graded", reason: str = "",
                  submission: dict[str, Any] | None = None) -> list[str]:
    """The student's summary: the score, one row per module (each column's unit in its header),
    then what was missing or not taken from the submission."""
    submission = submission or {}
    earned, possible, pending = totals(table)
    lines = []
    if status == "rejected":
        lines.append(f"Your submission was rejected: {reason}")
        lines.append("Nothing was run. Fix the submission and submit again.")
    elif status == "partial":  # stopped by the trusted side's budgets (grader.testing.budget)
        lines.append(f"Grading of your submission stopped early: {reason}.")
        lines.append("The tests that ended before then score as usual; the others are marked not graded.")
    elif status == "empty":
        held = submission.get("seen") or []
        lines.append(f"Your submission is empty: it holds no module file ({WHERE_LOOKED})"
                     + (f"; it holds: {', '.join(held)}" if held else "") + ". Nothing was run.")
    lines.append(f"Score: {_pts(earned)} / {_pts(possible + pending)} points"
                 + (f" ({counted(pending, 'point')} of GPU tests pending: graded on a GPU machine by the course staff)"
                    if pending else ""))
    width = max([len(m) for m in table] + [6])
    lines.append(f"  {'module':<{width}}  {'points':>9}  {'pending points':>14}  tests not attempted")
    for m, sc in table.items():
        c = sc.counts
        n_tests = sum(v for k, v in c.items() if k != "pending")
        lines.append(f"  {m:<{width}}  {_pts(sc.earned) + ' / ' + _pts(sc.possible + sc.pending):>9}  "
                     f"{_pts(sc.pending):>14}  {c.get('not_attempted', 0)} of {n_tests}")
    if status in ("graded", "partial"):
        refused = {k.rsplit("/", 1)[-1].removesuffix(".py") for k in (submission.get("not_taken") or {})}
        missing = [m for m in submission.get("missing") or [] if m not in refused]  # those are named below
        if "files" in submission and not submission["files"]:
            lines.append(f"No module file was taken from the submission ({WHERE_LOOKED}): "
                         "everything is graded as not attempted.")
        elif missing:
            lines.append(f"Missing files (graded as not attempted): {', '.join(m + '.py' for m in missing)}")
    helpers = submission.get("helpers") or {}
    if helpers:
        lines.append("Helper modules taken: " + ", ".join(f"{h}.py" for h in sorted(helpers)))
    for key, why in sorted((submission.get("not_taken") or {}).items()):
        lines.append(f"Not taken: {key}: {why}")
    for note in submission.get("notes") or []:
        lines.append(f"Note: {note}")
    return lines


#: Characters of one test's message, and of all of one submission's messages together, written to
#: results.json and instructor.json (feedback.html shows the same).  A failure's detail is capped
#: where it is made (3,000: `grader.testing.student.ProbeError`, a reply's strings cut at the decoder); this
#: is the last bound on what one student's files can hold: about 2 KB per test of 181 points, 64x a
#: typical message.
MESSAGE_LIMIT, SUBMISSION_MESSAGES_LIMIT = 4000, 256_000
_LEFT_OUT = f"[message left out: this submission's messages reached {SUBMISSION_MESSAGES_LIMIT} characters]"


def bounded_messages(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`records` (copied where changed) with each message cut at MESSAGE_LIMIT characters; once the
    messages kept reach SUBMISSION_MESSAGES_LIMIT in all, every later one is replaced by a short
    note saying so (the tests' outcomes and points are kept).  Applied to what a trusted worker
    writes for a submission (results.json and instructor.json), and again, at no cost, by
    `build_results`."""
    from grader.boundary.wire import cut

    out, total = [], 0
    for r in records:
        message = r.get("message")
        if isinstance(message, str) and message:
            text = cut(message, MESSAGE_LIMIT)
            if text == _LEFT_OUT or total + len(text) > SUBMISSION_MESSAGES_LIMIT:
                text = _LEFT_OUT
            else:
                total += len(text)
            if text != message:
                r = {**r, "message": text}
        out.append(r)
    return out


def build_results(records: list[dict[str, Any]], *, student: str, kit_version: str, sandbox: dict[str, Any],
                  submission: dict[str, Any], status: str = "graded", reason: str = "") -> dict[str, Any]:
    """The Gradescope results document for one submission (messages bounded: `bounded_messages`).

    `sandbox` may be the backend's whole statistics: only `SANDBOX_PUBLIC_KEYS` (the grader's
    own choices) are kept; the rest belongs in instructor.json.
    """
    launcher = sandbox.get("launcher", "")
    ran = f"cpu: trusted pytest, probes in the sandbox ({launcher})" if launcher else "not run"
    graded_with = (submission or {}).get("graded_with") or {}
    # numbered in the order of the modules graded: an assignment's own (grader.course.config), as its handout numbers them
    order = {m: i for i, m in enumerate(graded_with.get("modules") if graded_with.get("assignment") else MODULES)}
    records = sorted(bounded_messages(records), key=lambda r: (order.get(r["module"], 99), bool(r.get("hidden")),
                                                                 r["id"]))
    counters: dict[str, int] = {}
    tests = []
    for r in records:
        counters[r["module"]] = counters.get(r["module"], 0) + 1
        tests.append(test_entry(r, f"{order.get(r['module'], 99) + 1}.{counters[r['module']]}", ran))
    table = score(records)
    earned, possible, pending = totals(table)
    pending_tests = [r["id"] for r in records if r["status"] == "pending"]
    lines = summary_lines(table, status=status, reason=reason, submission=submission)
    public_sandbox = {k: sandbox[k] for k in SANDBOX_PUBLIC_KEYS if k in sandbox}
    public_submission = {k: submission[k] for k in ("source", "kind", "sha256", "graded_with", "files", "helpers",
                                                    "missing", "not_taken", "layout", "notes") if k in submission}
    return {
        "score": earned,
        "max_score": possible + pending,
        "output": "\n".join(lines),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "student": student,
            "status": status,
            "reason": reason,
            "kit_version": kit_version,
            "sandbox": public_sandbox,
            "tests_ran": {"cpu": ran, "pending_gpu": pending_tests},
            "pending_points": pending,
            "pending_tests": pending_tests,
            "possible_points": possible,
            "modules": {m: {"earned": s.earned, "possible": s.possible, "pending": s.pending}
                        for m, s in table.items()},
            "submission": public_submission,
        },
    }


def validate_results(doc: Any) -> list[str]:
    """Problems with `doc` as a Gradescope results.json (empty when it conforms)."""
    problems: list[str] = []

    def num(x: Any) -> bool:
        return type(x) in (int, float)

    if not isinstance(doc, dict):
        return ["results.json must be a JSON object"]
    if "score" not in doc and not all(isinstance(t, dict) and "score" in t for t in doc.get("tests", [])):
        problems.append("a top-level score, or a score on every test, is required")
    if "score" in doc and not num(doc["score"]):
        problems.append("score must be a number")
    for key in ("execution_time", "max_score"):
        if key in doc and not num(doc[key]):
            problems.append(f"{key} must be a number")
    for key in ("output",):
        if key in doc and not isinstance(doc[key], str):
            problems.append(f"{key} must be a string")
    for key in ("visibility", "stdout_visibility"):
        if key in doc and doc[key] not in VISIBILITIES:
            problems.append(f"{key} must be one of {VISIBILITIES}")
    if "extra_data" in doc and not isinstance(doc["extra_data"], dict):
        problems.append("extra_data must be an object")
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        return problems + ["tests must be a list"]
    for i, t in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} must be an object")
            continue
        for key in ("score", "max_score"):
            if key in t and not num(t[key]):
                problems.append(f"{where}.{key} must be a number")
        if "status" in t and t["status"] not in ("passed", "failed"):
            problems.append(f"{where}.status must be passed or failed")
        for key in ("name", "output", "number"):
            if key in t and not isinstance(t[key], str):
                problems.append(f"{where}.{key} must be a string")
        if "visibility" in t and t["visibility"] not in VISIBILITIES:
            problems.append(f"{where}.visibility must be one of {VISIBILITIES}")
        if "tags" in t and not (isinstance(t["tags"], list) and all(isinstance(x, str) for x in t["tags"])):
            problems.append(f"{where}.tags must be a list of strings")
        if num(t.get("score")) and num(t.get("max_score")) and t["score"] > t["max_score"]:
            problems.append(f"{where}.score exceeds its max_score")
    if num(doc.get("score")) and tests and all(num(t.get("score")) for t in tests):
        problems += _score_problems(doc, sum(t["score"] for t in tests))
    return problems


def _score_problems(doc: dict[str, Any], tests_sum: float) -> list[str]:
    """Inconsistencies of a results.json's score with its tests' scores: the sum of them, or with a late
    policy (`grader.course.late`) ``extra_data.late``'s raw score (that sum) minus its penalty."""
    late = doc.get("extra_data", {}).get("late") if isinstance(doc.get("extra_data"), dict) else None
    if late is None:
        return [] if abs(float(doc.get("score", tests_sum)) - tests_sum) <= 1e-9 else \
            ["score is not the sum of the tests' scores"]
    if not isinstance(late, dict) or not all(isinstance(late.get(k), (int, float))
                                             for k in ("raw_score", "penalty_points", "final_score")):
        return ["extra_data.late needs numeric raw_score, penalty_points and final_score"]
    out = []
    if abs(late["raw_score"] - tests_sum) > 1e-6:
        out.append("extra_data.late.raw_score is not the sum of the tests' scores")
    if abs(late["raw_score"] - late["penalty_points"] - late["final_score"]) > 1e-6 or \
            abs(float(doc.get("score", 0)) - late["final_score"]) > 1e-6:
        out.append("score is not extra_data.late's raw_score minus its penalty_points")
    return out


def load_results(path: Path) -> dict[str, Any] | None:
    """A complete, valid results.json, or None (missing, half-written or not conforming)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if validate_results(doc) or not isinstance(doc.get("extra_data"), dict):
        return None
    return doc


# -- the batch: grades.csv and the summary table ------------------------------------------------

