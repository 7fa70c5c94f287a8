"""Write grades into an nbgrader gradebook, so `nbgrader export` and formgrader see them.

The mapping: the assignment is one nbgrader assignment; each module is a "notebook"; each
graded test is a grade cell whose max score is the test's points.  Student scores are stored
as the grade cells' `auto_score`, exactly where nbgrader's own autograder puts them.  Tests
still pending (GPU tests not yet run) keep `auto_score = None`: nbgrader counts them as 0,
so `export` with pending tests warns (or fails with `--fail-on-pending`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from grader import MODULES

ASSIGNMENT = "resource_accounting"


def cell_name(record: Mapping[str, Any]) -> str:
    """A grade-cell name unique within its module: the test id without the file path."""
    kind = "hidden" if record.get("hidden") else "public"
    return f"{kind}::{record['name']}"


def write_gradebook(db_url: str, students: Mapping[str, Iterable[Mapping[str, Any]]],
                    assignment: str = ASSIGNMENT) -> dict[str, int]:
    """Record every student's test records (id, module, name, points, status) in the gradebook.

    Returns counts: students, grade cells, pending grades.
    """
    from nbgrader.api import Gradebook

    students = {sid: list(records) for sid, records in students.items()}
    cells: dict[tuple[str, str], float] = {}
    for records in students.values():
        for r in records:
            cells[(r["module"], cell_name(r))] = float(r["points"])
    pending = 0
    with Gradebook(db_url) as gb:
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
            gb.db.commit()
    return {"students": len(students), "cells": len(cells), "pending": pending}


def records_from_results(folder) -> dict[str, list[dict[str, Any]]]:
    """student -> test records, from the instructor.json files of a results folder (see
    `grader.results.Layout`); rejected and empty submissions are included (their tests earn 0)."""
    import json
    from pathlib import Path

    from grader.results import Layout

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
