"""grades.csv and the summary table of a batch: one row per submission, from its results.json.

`grader grade`, `grader merge` and `grader combine` write grades.csv with these; every numeric
column is in points, and every cell a spreadsheet would evaluate is quoted (`grader.untrusted`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from grader import MODULES
from grader.course.late import csv_cells as late_cells
from grader.results.layout import Layout
from grader.results.results_json import load_results
from grader.intake.take import WHERE_LOOKED
from grader.untrusted import shown_markup, spreadsheet_cell


def _pts(x: float) -> str:
    return f"{x:g}"


#: ``score`` is the final score; ``raw_score`` (the tests' sum), ``late_penalty`` and ``late`` are the late
#: policy's (`grader.course.late`; empty when the batch was graded without --deadline).
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
    extra = doc.get("extra_data", {})
    modules = extra.get("modules", {})
    status = extra.get("status", "graded")
    word = {"graded": "graded", "empty": f"empty: no module file in the submission ({WHERE_LOOKED})",
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
    """grades.csv's columns: a column per module of `modules` (an assignment's, `grader.course.config`), else
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
