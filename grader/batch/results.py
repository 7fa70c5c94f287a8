"""Grading output: a Gradescope `results.json` per submission, `grades.csv` and a summary table.

The results folder of `grader grade --out DIR` (see `Layout`; student ids can never collide
with the batch's own files, because every per-student file sits one level below a fixed name):

    DIR/grades.csv                                  one row per submission (points; cells quoted
                                                    against spreadsheet formulas)
    DIR/students/<id>/results.json                  what the student sees (Gradescope format)
    DIR/instructor/students/<id>/instructor.json    instructor-only: every test's full message
                                                    (hidden ones included), sandbox statistics,
                                                    settings, what was taken from the submission
    DIR/instructor/students/<id>/sandbox.log        instructor-only: the submission's own output
                                                    (capped; control characters escaped)
    DIR/instructor/students/<id>/tests.log          instructor-only: this submission's part of the
                                                    worker log (pytest's output, full tracebacks,
                                                    hidden tests included; escaped, capped)
    DIR/instructor/logs/worker-<n>.log              instructor-only: the trusted workers' pytest
                                                    output, i.e. full tracebacks of every failed
                                                    test of every student, hidden tests included

`DIR/students/` can be handed to students as is; nothing under `DIR/instructor/` may be.

results.json follows the Gradescope autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): top-level ``score``,
``output``, ``visibility``, ``stdout_visibility``, ``extra_data`` and ``tests``; each test has
``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed``/``failed``), ``output``,
``tags``, ``visibility`` and ``extra_data``.  We also write a top-level ``max_score`` (the
assignment's total, pending GPU points included), which Gradescope ignores (it takes the
total from the assignment's settings).  With a late policy (`grader.batch.late`) ``score`` is the final
score: the tests' sum (the raw score) less ``extra_data.late.penalty_points``.

What reaches results.json: test outcomes, the messages the trusted tests wrote, and what the
grader itself decided (kit version, which sandbox launcher and isolation layers ran, with the
launcher's fixed warning when it is the weak fallback, what was taken from the submission).  Nothing the sandboxed code can steer beyond its test outcomes: no output size,
no restart/crash/timeout counts, no execution time (a submission could encode hidden-test
inputs in any of them); those go to instructor.json.

Visibility decisions:

* public tests are ``visible``; their output is the teaching feedback (what was checked, and
  expected vs got, or "not attempted", or the exception and the student's own frame), and
  ``extra_data.figures`` the pictures' data the test computed (`grader.figures`; hidden tests never);
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

import csv
import io
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.scoring import score, totals
from grader.untrusted import shown_markup, spreadsheet_cell

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
HIDDEN_VISIBILITY = "after_published"
RESULTS = "results.json"
INSTRUCTOR = "instructor.json"
SANDBOX_LOG = "sandbox.log"
TESTS_LOG = "tests.log"
GRADES_CSV = "grades.csv"
#: The only sandbox facts a student's results.json may carry: the grader's own choices.
SANDBOX_PUBLIC_KEYS = ("launcher", "layers", "warning")


@dataclass(frozen=True)
class Layout:
    """Where a batch's files live under the results folder `out` (see the module docstring)."""

    out: Path

    @property
    def students_dir(self) -> Path:
        return self.out / "students"

    @property
    def instructor_dir(self) -> Path:
        return self.out / "instructor" / "students"

    @property
    def logs(self) -> Path:
        return self.out / "instructor" / "logs"

    @property
    def grades(self) -> Path:
        return self.out / GRADES_CSV

    def results(self, student: str) -> Path:
        return self.students_dir / student / RESULTS

    def instructor(self, student: str) -> Path:
        return self.instructor_dir / student / INSTRUCTOR

    def sandbox_log(self, student: str) -> Path:
        return self.instructor_dir / student / SANDBOX_LOG

    def tests_log(self, student: str) -> Path:
        """The trusted worker's pytest output for this student alone (`grader.batch.trusted`)."""
        return self.instructor_dir / student / TESTS_LOG

    def students(self) -> list[str]:
        """The ids that have a folder under students/ (sorted)."""
        if not self.students_dir.is_dir():
            return []
        return sorted(p.name for p in self.students_dir.iterdir() if p.is_dir() and not p.name.startswith("."))

    def is_old_layout(self) -> bool:
        """A results folder written by a kit before this layout (DIR/<id>/results.json)."""
        return not self.students_dir.is_dir() and any(self.out.glob(f"*/{RESULTS}"))


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
        entry["output"] = f"pending: {message} (its {_pts(points)} points are neither given nor lost here)"
    elif status == "pending":
        entry["output"] = (f"pending: needs CUDA; this test runs on a GPU machine (the course staff grade it) and its {_pts(points)} "
                           "points are merged in later (neither given nor lost yet)")
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
    elif status == "partial":  # stopped by the trusted side's budgets (grader.batch.budget)
        lines.append(f"Grading of your submission stopped early: {reason}.")
        lines.append("The tests that ended before then score as usual; the others are marked not graded.")
    elif status == "empty":
        held = submission.get("seen") or []
        lines.append("Your submission is empty: it holds no module file (expected assignment/<module>.py)"
                     + (f"; it holds: {', '.join(held)}" if held else "") + ". Nothing was run.")
    lines.append(f"Score: {_pts(earned)} / {_pts(possible + pending)} points"
                 + (f" ({_pts(pending)} points of GPU tests pending: graded on a GPU machine by the course staff)" if pending else ""))
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
            lines.append("No module file was taken from the submission (expected assignment/<module>.py): "
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
#: where it is made (3,000: `grader.student.ProbeError`, a reply's strings cut at the decoder); this
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
    from grader.wire import cut

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
    # numbered in the order of the modules graded: an assignment's own (grader.course), as its handout numbers them
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
        from grader.batch.late import problems as late_problems  # score = sum of the tests, less a late penalty

        problems += late_problems(doc, sum(t["score"] for t in tests))
    return problems


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


#: Bytes of one JSON file written for one student (results.json, instructor.json): the last bound on
#: them.  What goes in is capped where it is made (messages: `bounded_messages`; what staging says
#: about the submission: `grader.batch.take.Record`), so an honest file is far below it (all twelve
#: modules with every message at its cap: about 1.7 MB); a file over it is replaced by a note
#: (`over_budget`).  20,000 long names of files not taken once made a results.json of 202 MB.
STUDENT_FILE_BYTES = 8 * 2**20
STUDENT_FILES = (RESULTS, INSTRUCTOR)


def write_json(path: Path, doc: Any) -> None:
    """`doc` as JSON at `path`, atomically.  A student's file (`STUDENT_FILES`) has a budget of
    `STUDENT_FILE_BYTES`: the text is made piece by piece and, past the budget, dropped and replaced
    by `over_budget`'s note (never held whole)."""
    encoder = json.JSONEncoder(indent=1)
    if path.name not in STUDENT_FILES:
        write_atomic(path, encoder.encode(doc) + "\n")
        return
    pieces, size = [], 0
    for piece in encoder.iterencode(doc):
        size += len(piece)  # (ASCII: JSONEncoder escapes everything else)
        if size > STUDENT_FILE_BYTES:
            write_atomic(path, encoder.encode(over_budget(doc, path.name)) + "\n")
            return
        pieces.append(piece)
    write_atomic(path, "".join(pieces) + "\n")


def over_budget(doc: Any, name: str) -> dict[str, Any]:
    """What is written instead of a student's JSON file over `STUDENT_FILE_BYTES`: its numbers,
    booleans and short strings, objects followed three levels down (a results.json keeps its score,
    status and points per module), lists and long strings left out, at most 500 values; and a note
    saying so, as the summary a student reads (``output``) where the document has one."""
    kept = 0

    def small(value: Any, depth: int) -> Any:
        nonlocal kept
        if kept >= 500:
            return _LEFT
        if isinstance(value, dict) and depth < 4:
            out = {}
            for key, item in value.items():
                item = small(item, depth + 1)
                if item is not _LEFT and isinstance(key, str) and len(key) <= 100:
                    out[key] = item
            return out
        if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 300):
            kept += 1
            return value
        return _LEFT

    note = (f"This {name} was over the budget of one student's file ({STUDENT_FILE_BYTES // 2**20} MiB): "
            "its details were left out (lists and long texts); tell the course staff.")
    out = small(doc, 0) if isinstance(doc, dict) else {}
    out["output" if isinstance(doc, dict) and "output" in doc else "note"] = note
    return out


_LEFT = object()


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

#: ``score`` is the final score; ``raw_score`` (the tests' sum), ``late_penalty`` and ``late`` are the late
#: policy's (`grader.batch.late`; empty when the batch was graded without --deadline).
CSV_FIELDS = ("student", "score", "max_score", "pending", *MODULES, "status", "raw_score", "late_penalty", "late")
#: Every numeric column of grades.csv is in points.
STATUS_WORDS = {"graded": "graded", "partial": "partial", "rejected": "rejected", "empty": "empty"}


def grade_row(student: str, doc: dict[str, Any] | None, error: str = "") -> dict[str, Any]:
    """One grades.csv row: points per column; `status` says graded / partial: why (stopped by the trusted
    side's budgets: the points of the tests that ended) / empty / rejected: why / error: why."""
    if doc is None:
        return {"student": student, "score": "", "max_score": "", "pending": "",
                **dict.fromkeys(MODULES, ""), "status": error if error.startswith("refused") else
                f"error: {error or 'not graded'}"}
    from grader.batch.late import csv_cells as late_cells

    extra = doc.get("extra_data", {})
    modules = extra.get("modules", {})
    status = extra.get("status", "graded")
    word = {"graded": "graded", "empty": "empty: no module file in the submission",
            "partial": f"partial: {extra.get('reason', '')}"}.get(status, f"rejected: {extra.get('reason', '')}")
    return {
        "student": student,
        "score": _pts(float(doc["score"])),
        "max_score": _pts(float(doc.get("max_score", 0))),
        "pending": _pts(float(extra.get("pending_points", 0))),
        **{m: _pts(float(modules[m]["earned"])) if m in modules else "" for m in MODULES},
        "status": word,
        **late_cells(doc),
    }


def batch_rows(layout: Layout, students: Iterable[str], errors: dict[str, str] | None = None,
               refused: Iterable[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """The grades.csv rows of a batch, sorted by student: one per submission from its results.json
    (`errors`: student -> why it has none), plus one per refused submission (student, why).
    `grader grade` and `grader combine` both write grades.csv from this."""
    errors = errors or {}
    rows = [grade_row(s, load_results(layout.results(s)), errors.get(s, "")) for s in students]
    rows += [grade_row(s, None, f"refused: {why}") for s, why in refused]
    return sorted(rows, key=lambda r: r["student"])


def csv_fields(modules: Iterable[str] | None = None) -> tuple[str, ...]:
    """grades.csv's columns: a column per module of `modules` (an assignment's, `grader.course`), else
    of every module (`CSV_FIELDS`)."""
    return CSV_FIELDS if modules is None else ("student", "score", "max_score", "pending", *modules, *CSV_FIELDS[-4:])


def grades_csv(rows: Iterable[dict[str, Any]], modules: Iterable[str] | None = None) -> str:
    """grades.csv: one row per submission; cells that a spreadsheet would evaluate are quoted; a column per
    module of `modules` (the assignment graded), else of every module."""
    fields = csv_fields(modules)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_cell(row.get(k, "")) for k in fields})
    return buf.getvalue()


def render_summary(rows: list[dict[str, Any]], console: Any, *, title: str = "Grades") -> None:
    from rich.table import Table

    table = Table(title=title)
    for col in ("student", "score (points)", "max (points)", "pending (points)", "status"):
        table.add_column(col, justify="left" if col in ("student", "status") else "right")
    for row in rows:
        status = row["status"]
        style = "" if status == "graded" else ("yellow" if status.startswith(("rejected", "empty", "partial"))
                                               else "red")
        table.add_row(shown_markup(row["student"]), row["score"], row["max_score"], row["pending"],
                      shown_markup(status, 100), style=style)
    console.print(table)
