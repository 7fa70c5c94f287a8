"""Canvas gradebook import: fill one assignment column of a roster Canvas exported.

`grader export RESULTS --canvas ROSTER.csv --assignment "NAME (ID)" --out canvas.csv`.

Canvas's gradebook export (Grades → Export) is a CSV whose first columns are ``Student``,
``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` (newer exports add
``Integration ID``), optionally followed by a ``Points Possible`` row.  Canvas's import
(Grades → Import) takes the same layout back: the identifying columns, and one column per
assignment named exactly ``Assignment Name (assignment id)``.  The file written here keeps
every roster row (in order) and its identifying columns, and the assignment column with each
student's score from the batch's grades.csv.

Refused before anything is written (`ExportError`, exit status 2), because each would put a wrong
number into the gradebook without a word:

* *GPU points still pending* (a CPU run not yet merged with its GPU run): the scores lack those
  points.  The message says how many students and points, and the fix: ``grader merge`` with the
  GPU run, then export the merged folder; ``--allow-pending`` exports without them (said on the
  console).
* *An assignment column the roster does not have*: Canvas's import creates a new assignment for
  any unknown column name, so a typo in ``--assignment`` would land the grades in a new column.
  The message lists the roster's assignment columns, closest match first; ``--create-column``
  asks for the new column on purpose.

Students are matched on the kit's student id (the submission's name) against, in order,
``SIS Login ID``, ``SIS User ID``, ``ID`` and ``Integration ID``; a mapping file
(``--map ids.csv`` with columns ``student,canvas``) translates ids that differ.  Nobody is
dropped: roster rows without a result keep an empty cell, and both those and results
without a roster row are listed.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.reports.classreport import ReportError, read_grades
from grader.untrusted import shown

ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")
MATCH_COLUMNS = ("SIS Login ID", "SIS User ID", "ID", "Integration ID")
_ASSIGNMENT = re.compile(r"^.+ \(\d+\)$")


class ExportError(Exception):
    """Bad input: a missing file, a roster that is not a Canvas export, a malformed mapping."""


@dataclass
class Export:
    rows: int = 0
    matched: list[str] = field(default_factory=list)
    roster_without_result: list[str] = field(default_factory=list)
    results_without_roster: list[str] = field(default_factory=list)
    #: student -> GPU points still pending in the exported score (only with ``allow_pending``)
    pending: dict[str, float] = field(default_factory=dict)
    created_column: bool = False


def _read_csv(path: Path, what: str) -> tuple[list[str], list[dict[str, str]]]:
    if not path.is_file():
        raise ExportError(f"{what} {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
        reader = csv.DictReader(io.StringIO(text))
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ExportError(f"{what} {path} is not a readable CSV file: {exc}") from None
    return list(reader.fieldnames or []), rows


def read_mapping(path: Path) -> dict[str, str]:
    fields, rows = _read_csv(path, "the mapping")
    if not {"student", "canvas"} <= set(fields):
        raise ExportError(f"the mapping {path} needs the columns student,canvas (it has {', '.join(fields) or 'none'})")
    out: dict[str, str] = {}
    for i, row in enumerate(rows, start=2):
        student, canvas = (row.get("student") or "").strip(), (row.get("canvas") or "").strip()
        if not student or not canvas:
            raise ExportError(f"the mapping {path}, line {i}: an empty student or canvas id")
        if student in out and out[student] != canvas:
            raise ExportError(f"the mapping {path}, line {i}: {student} is mapped twice")
        out[student] = canvas
    return out


#: Assignment columns named in the refusal of an unknown ``--assignment`` (closest first).
LISTED_COLUMNS = 8


def assignment_columns(fields: list[str]) -> list[str]:
    """The roster's assignment columns: Canvas names each ``Name (assignment id)``."""
    return [f for f in fields if f not in ID_COLUMNS and _ASSIGNMENT.match(f)]


def _unknown_column(assignment: str, fields: list[str], roster: Path) -> ExportError:
    columns = assignment_columns(fields)
    close = sorted(columns, key=lambda c: -difflib.SequenceMatcher(None, assignment.lower(), c.lower()).ratio())
    listed = ", ".join(repr(shown(c, 100)) for c in close[:LISTED_COLUMNS])
    more = f" and {len(close) - LISTED_COLUMNS} more" if len(close) > LISTED_COLUMNS else ""
    have = f"its assignment columns, closest first: {listed}{more}" if columns else "it has no assignment column"
    return ExportError(f"--assignment {shown(assignment, 100)!r} is not a column of the roster {roster.name} ({have}); "
                       "Canvas's import would create a new assignment under that name: copy the column's name "
                       "exactly, or pass --create-column to add it on purpose")


def _pending_error(pending: dict[str, float]) -> ExportError:
    points = sorted(set(pending.values()))
    total = f"{sum(pending.values()):g} points"
    each = "" if len(pending) == 1 else f"{points[0]:g} points each, " if len(points) == 1 else \
        f"{points[0]:g} to {points[-1]:g} points each, "
    return ExportError(f"GPU tests are still pending for {len(pending)} student(s) ({each}{total}"
                       f"{' in all' if each else ''}): their scores lack those points.  Merge the GPU run first "
                       "(grader merge CPU_DIR GPU_DIR --out FINAL, then export FINAL), or pass --allow-pending to "
                       "export the scores without them")


def export_canvas(results: Path, roster: Path, assignment: str, out: Path,
                  mapping: Path | None = None, *, allow_pending: bool = False,
                  create_column: bool = False) -> Export:
    """Write Canvas's import CSV `out` (see the module docstring); ExportError, with nothing
    written, on bad input, pending GPU points (unless `allow_pending`) or an assignment column the
    roster does not have (unless `create_column`)."""
    if not _ASSIGNMENT.match(assignment):
        raise ExportError(f"--assignment must be Canvas's column name, 'Name (id)', e.g. 'Lab 2 (12345)'; got {assignment!r}")
    try:
        grades = read_grades(results)
    except ReportError as exc:
        raise ExportError(str(exc)) from None
    fields, rows = _read_csv(roster, "the roster")
    if "Student" not in fields or not any(c in fields for c in MATCH_COLUMNS):
        raise ExportError(f"the roster {roster} is not a Canvas gradebook export: it needs a Student column and one of "
                          f"{', '.join(MATCH_COLUMNS)} (it has {', '.join(fields) or 'none'})")
    if assignment not in fields and not create_column:
        raise _unknown_column(assignment, fields, roster)
    ids = {v: k for k, v in (read_mapping(mapping) if mapping else {}).items()}  # canvas id -> student id
    scores = {g["student"]: g for g in grades}
    keep = [c for c in ID_COLUMNS if c in fields]
    result = Export()
    body: list[dict[str, str]] = []
    used: set[str] = set()
    for row in rows:
        if (row.get("Student") or "").strip() == "Points Possible":
            body.append({**{c: row.get(c, "") for c in keep}, assignment: _points_possible(grades)})
            continue
        student = None
        for column in MATCH_COLUMNS:
            value = (row.get(column) or "").strip()
            if value and (ids.get(value, value) in scores):
                student = ids.get(value, value)
                break
        line = {c: row.get(c, "") for c in keep}
        if student is None:
            result.roster_without_result.append(row.get("Student") or row.get("ID") or "?")
            line[assignment] = ""
        else:
            result.matched.append(student)
            used.add(student)
            line[assignment] = _points(scores[student])
            if line[assignment] and scores[student]["pending"] > 0:
                result.pending[student] = scores[student]["pending"]
        body.append(line)
    if result.pending and not allow_pending:
        raise _pending_error(result.pending)
    result.results_without_roster = sorted(set(scores) - used)
    result.created_column = assignment not in fields
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*keep, assignment], lineterminator="\n")
    writer.writeheader()
    writer.writerows(body)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(buffer.getvalue(), encoding="utf-8")
    result.rows = len(body)
    return result


def _points(row: dict) -> str:
    if not row["status"].startswith(("graded", "partial", "rejected", "empty")):
        return ""  # not graded (an error): leave Canvas's cell empty rather than enter a 0
    return f"{row['score']:g}"


def _points_possible(grades: list[dict]) -> str:
    full = [g["max_score"] for g in grades if g["status"].startswith("graded") and g["max_score"]]
    return f"{max(full):g}" if full else ""
