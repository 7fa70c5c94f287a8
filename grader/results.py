"""Grading output: a Gradescope `results.json` per submission, `grades.csv` and a summary table.

results.json follows the Gradescope autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): top-level ``score``,
``execution_time``, ``output``, ``visibility``, ``stdout_visibility``, ``extra_data`` and
``tests``; each test has ``name``, ``number``, ``score``, ``max_score``, ``status``
(``passed``/``failed``), ``output``, ``tags``, ``visibility`` and ``extra_data``.  We also
write a top-level ``max_score`` (the assignment's total, pending GPU points included), which
Gradescope ignores (it takes the total from the assignment's settings).

Visibility decisions:

* public tests are ``visible``; their output is the teaching feedback (what was checked, and
  expected vs got, or "not attempted", or the exception and the student's own frame);
* hidden tests are ``after_published``: students see their name and score once grades are
  published, never their details (the output says only passed / failed / not attempted; the
  full message is in the instructor-only ``instructor.json`` next to results.json);
* GPU tests not run on this machine are *pending*: score 0, max_score their points, no status,
  output "pending: ...", tag ``pending``; ``extra_data.pending_points`` sums them and
  ``extra_data.pending_tests`` lists them, so `grader merge` can fill them in later;
* the submission's own stdout/stderr is never shown to students (``stdout_visibility``
  hidden); it is kept, capped, in the instructor-only ``sandbox.log``;
* the sandbox used (``extra_data.sandbox.launcher``: bubblewrap, or rlimits with the loud
  warning in ``extra_data.sandbox.warning``) is recorded for instructors, not advertised in
  the students' output.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.scoring import score, totals

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
HIDDEN_VISIBILITY = "after_published"
RESULTS = "results.json"
INSTRUCTOR = "instructor.json"
SANDBOX_LOG = "sandbox.log"


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
    if status == "pending":
        entry["output"] = (f"pending: needs CUDA; this test runs on the GPU runner and its {_pts(points)} "
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
                           "ran": "pending (GPU runner)" if status == "pending" else ran}
    return entry


def build_results(records: list[dict[str, Any]], *, student: str, kit_version: str, sandbox: dict[str, Any],
                  submission: dict[str, Any], execution_time: float, status: str = "graded",
                  reason: str = "") -> dict[str, Any]:
    """The Gradescope results document for one submission."""
    launcher = sandbox.get("launcher", "")
    ran = f"cpu: trusted pytest, probes in the sandbox ({launcher})" if launcher else "not run"
    order = {m: i for i, m in enumerate(MODULES)}
    records = sorted(records, key=lambda r: (order.get(r["module"], 99), bool(r.get("hidden")), r["id"]))
    counters: dict[str, int] = {}
    tests = []
    for r in records:
        counters[r["module"]] = counters.get(r["module"], 0) + 1
        tests.append(test_entry(r, f"{order.get(r['module'], 99) + 1}.{counters[r['module']]}", ran))
    table = score(records)
    earned, possible, pending = totals(table)
    pending_tests = [r["id"] for r in records if r["status"] == "pending"]
    lines = []
    if status == "rejected":
        lines.append(f"Your submission was rejected: {reason}")
        lines.append("Nothing was run. Fix the submission and submit again.")
    else:
        lines.append(f"Score: {_pts(earned)} / {_pts(possible + pending)}"
                     + (f" ({_pts(pending)} points of GPU tests pending, graded on the GPU runner)" if pending else ""))
        for m, s in table.items():
            c = s.counts
            extra = []
            if c.get("not_attempted"):
                extra.append(f"{c['not_attempted']} not attempted")
            if c.get("pending"):
                extra.append(f"{c['pending']} pending")
            lines.append(f"  {m}: {_pts(s.earned)} / {_pts(s.possible + s.pending)}"
                         + (f" ({', '.join(extra)})" if extra else ""))
        missing = submission.get("missing") or []
        if "files" in submission and not submission["files"]:
            lines.append("No module files were found in the submission (expected assignment/<module>.py): "
                         "everything is graded as not attempted.")
        elif missing:
            lines.append(f"Missing files (graded as not attempted): {', '.join(m + '.py' for m in missing)}")
    for note in submission.get("notes") or []:
        lines.append(f"Note: {note}")
    sandbox_summary = {k: sandbox.get(k) for k in ("launcher", "warning", "starts", "calls", "timeouts", "crashes",
                                                   "garbage", "output_bytes") if k in sandbox}
    return {
        "score": earned,
        "max_score": possible + pending,
        "execution_time": round(execution_time, 1),
        "output": "\n".join(lines),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "student": student,
            "status": status,
            "reason": reason,
            "kit_version": kit_version,
            "sandbox": sandbox_summary,
            "tests_ran": {"cpu": ran, "pending_gpu": pending_tests},
            "pending_points": pending,
            "pending_tests": pending_tests,
            "possible_points": possible,
            "modules": {m: {"earned": s.earned, "possible": s.possible, "pending": s.pending}
                        for m, s in table.items()},
            "submission": submission,
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
        if abs(doc["score"] - sum(t["score"] for t in tests)) > 1e-9:
            problems.append("score is not the sum of the tests' scores")
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


def write_json(path: Path, doc: Any) -> None:
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")


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

CSV_FIELDS = ("student", "score", "max_score", "pending", *MODULES, "status")


def grade_row(student: str, doc: dict[str, Any] | None, error: str = "") -> dict[str, Any]:
    if doc is None:
        return {"student": student, "score": "", "max_score": "", "pending": "",
                **dict.fromkeys(MODULES, ""), "status": f"error: {error or 'not graded'}"}
    extra = doc.get("extra_data", {})
    modules = extra.get("modules", {})
    status = extra.get("status", "graded")
    return {
        "student": student,
        "score": _pts(float(doc["score"])),
        "max_score": _pts(float(doc.get("max_score", 0))),
        "pending": _pts(float(extra.get("pending_points", 0))),
        **{m: _pts(float(modules[m]["earned"])) if m in modules else "" for m in MODULES},
        "status": "graded" if status == "graded" else f"rejected: {extra.get('reason', '')}",
    }


def grades_csv(rows: Iterable[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in CSV_FIELDS})
    return buf.getvalue()


def render_summary(rows: list[dict[str, Any]], console: Any, *, title: str = "Grades") -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title)
    for col in ("student", "score", "max", "pending", "status"):
        table.add_column(col, justify="left" if col in ("student", "status") else "right")
    for row in rows:
        status = row["status"]
        style = "" if status == "graded" else ("yellow" if status.startswith("rejected") else "red")
        table.add_row(escape(row["student"]), row["score"], row["max_score"], row["pending"], escape(status[:80]),
                      style=style)
    console.print(table)
