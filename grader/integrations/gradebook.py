"""Write grades into an nbgrader gradebook, so `nbgrader export` and formgrader see them.

The mapping: the assignment is one nbgrader assignment; each module is a "notebook"; each
graded test is a grade cell whose max score is the test's points.  Student scores are stored
as the grade cells' `auto_score`, exactly where nbgrader's own autograder puts them.  Tests
still pending (GPU tests not yet run) keep `auto_score = None`: nbgrader counts them as 0,
so `export` with pending tests warns (or fails with `--fail-on-pending`).

A late penalty (`grader.course.late`, results.json's ``extra_data.late``) goes where nbgrader keeps its
own: the submission's ``timestamp``, its ``extension`` (the student's deadline minus the
assignment's ``duedate``) and each notebook's ``late_submission_penalty`` (the penalty points
shared by the modules' earned points, summing exactly to the penalty), so `nbgrader export`
shows raw_score, late_submission_penalty and score as `grader grade` computed them.

nbgrader is an optional dependency (the kit's ``dev`` extra): without it, `nbgrader_api` raises
`GradebookError` with one line saying what to install, and the commands check it before they
grade (`grader.commands.integrations.needs_nbgrader`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from grader import MODULES

ASSIGNMENT = "resource_accounting"
INSTALL = "pip install 'nbgrader>=0.9' (or the kit's dev extra: pip install -e '.[dev]')"


class GradebookError(RuntimeError):
    """The gradebook cannot be written here (nbgrader missing or broken); the message is one line."""


def nbgrader_api() -> Any:
    """nbgrader's `nbgrader.api` module, or GradebookError naming what to install."""
    try:
        import nbgrader.api
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "nbgrader":
            raise GradebookError(f"--gradebook needs nbgrader, which is not installed: {INSTALL}") from None
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]  # one line, whatever the import said
        raise GradebookError(f"--gradebook: nbgrader cannot be imported ({why}); {INSTALL}") from None
    return nbgrader.api


def cell_name(record: Mapping[str, Any]) -> str:
    """A grade-cell name unique within its module: the test id without the file path."""
    kind = "hidden" if record.get("hidden") else "public"
    return f"{kind}::{record['name']}"


def write_gradebook(db_url: str, students: Mapping[str, Iterable[Mapping[str, Any]]],
                    assignment: str = ASSIGNMENT, late: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, int]:
    """Record every student's test records (id, module, name, points, status) in the gradebook,
    and `late` (student -> results.json's ``extra_data.late``; a student without one: no penalty).

    Returns counts: students, grade cells, pending grades.
    """
    Gradebook = nbgrader_api().Gradebook  # before anything is read: a missing nbgrader is one line, not a traceback
    students = {sid: list(records) for sid, records in students.items()}
    cells: dict[tuple[str, str], float] = {}
    for records in students.values():
        for r in records:
            cells[(r["module"], cell_name(r))] = float(r["points"])
    pending = 0
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        # nbgrader's own update_or_create_submission reads relationships while its new submission is not
        # yet in the session, and SQLAlchemy 2 says so (SAWarning "Object of type <SubmittedAssignment> not
        # in session ...") three times per student; nbgrader adds the objects itself right after, and
        # `nbgrader export` reads every grade back (tests/kit/test_integrations.py): noise, not a fault.
        warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
        gb.update_or_create_assignment(assignment)
        for module in sorted({m for m, _ in cells}, key=lambda m: MODULES.index(m) if m in MODULES else 99):
            gb.update_or_create_notebook(module, assignment)
        for (module, name), points in sorted(cells.items()):
            gb.update_or_create_grade_cell(name, module, assignment, max_score=points, cell_type="code")
        for sid, records in sorted(students.items()):
            gb.update_or_create_student(sid)
            gb.update_or_create_submission(assignment, sid)
            for r in records:
                grade = gb.find_grade(cell_name(r), r["module"], assignment, sid)
                if r["status"] == "pending":
                    grade.auto_score = None
                    pending += 1
                else:
                    grade.auto_score = float(r["points"]) if r["status"] == "passed" else 0.0
            _write_late(gb, assignment, sid, records, (late or {}).get(sid))
            gb.db.commit()
    return {"students": len(students), "cells": len(cells), "pending": pending}


def _write_late(gb: Any, assignment: str, sid: str, records: list[Mapping[str, Any]],
                late: Mapping[str, Any] | None) -> None:
    from datetime import datetime

    from nbgrader.utils import parse_utc

    submission = gb.find_submission(assignment, sid)
    earned: dict[str, float] = {}
    for r in records:
        earned[r["module"]] = earned.get(r["module"], 0.0) + (float(r["points"]) if r["status"] == "passed" else 0.0)
    penalty = float(late["penalty_points"]) if late else 0.0
    total = sum(earned.values())
    shares = {m: round(penalty * e / total, 2) if total else 0.0 for m, e in earned.items()}
    if shares:  # rounding: the module earning most takes the remainder, so the shares sum to the penalty
        top = max(shares, key=lambda m: earned[m])
        shares[top] = round(shares[top] + penalty - sum(shares.values()), 6)
    for nb in submission.notebooks:
        nb.late_submission_penalty = shares.get(nb.notebook.name, 0.0)
    if late:
        if late.get("submitted_at"):
            submission.timestamp = parse_utc(datetime.fromisoformat(late["submitted_at"]))
        deadline = parse_utc(datetime.fromisoformat(late["deadline"]))
        submission.assignment.duedate = parse_utc(datetime.fromisoformat(late.get("assignment_deadline")
                                                                         or late["deadline"]))
        extension = deadline - submission.assignment.duedate
        submission.extension = extension if extension.total_seconds() > 0 else None


def late_from_results(folder) -> dict[str, dict[str, Any]]:
    """student -> ``extra_data.late`` of the results.json files of a results folder (those that have one)."""
    import json
    from pathlib import Path

    from grader.results.layout import Layout

    layout = Layout(Path(folder))
    out = {}
    for student in layout.students():
        try:
            late = json.loads(layout.results(student).read_text()).get("extra_data", {}).get("late")
        except (OSError, ValueError, AttributeError):
            continue
        if late:
            out[student] = late
    return out


def records_from_results(folder) -> dict[str, list[dict[str, Any]]]:
    """student -> test records, from the instructor.json files of a results folder (see
    `grader.results.layout.Layout`); rejected and empty submissions are included (their tests earn 0)."""
    import json
    from pathlib import Path

    from grader.results.layout import Layout

    layout = Layout(Path(folder))
    out = {}
    for student in layout.students():
        try:
            doc = json.loads(layout.instructor(student).read_text())
        except (OSError, ValueError):
            continue
        if "records" in doc:
            out[student] = doc["records"]
    return out
