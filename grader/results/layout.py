"""The results folder of a batch: where each file lives, and how one is written.

The results folder of `grader grade --out DIR` (`Layout`; student ids can never collide with the
batch's own files, because every per-student file sits one level below a fixed name):

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
    DIR/instructor/previous/                        instructor-only: grades.csv and results.json
                                                    files as they were before the last batch that
                                                    changed them (`grader report DIR --compare`)
    DIR/instructor/suite.json                       what graded the last batch (`grader.batch.suite`)

`DIR/students/` can be handed to students as is; nothing under `DIR/instructor/` may be.

Every file is written atomically (`write_atomic`: a reader sees the old file or the new one,
never half), and a student's JSON files within a byte budget (`write_json`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.files import write_atomic

RESULTS = "results.json"
INSTRUCTOR = "instructor.json"
SANDBOX_LOG = "sandbox.log"
TESTS_LOG = "tests.log"
GRADES_CSV = "grades.csv"


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

    @property
    def previous(self) -> Path:
        """The grades before the last batch that changed them (`stash_previous`): a results folder of
        its own (grades.csv, students/<id>/results.json) for `grader report DIR --compare`."""
        return self.out / "instructor" / "previous"

    def stash_previous(self) -> Path | None:
        """Before a batch rewrites this folder: its grades.csv and each student's results.json into
        a staging folder (None when there is no grades.csv yet), hard-linked, so that a class costs
        no copy: every file here is replaced (`write_atomic`), never rewritten in place, so a link
        keeps the old bytes.  `keep_previous` then keeps or drops it."""
        if not self.grades.is_file():
            return None
        staging = self.out / "instructor" / ".previous-new"
        shutil.rmtree(staging, ignore_errors=True)
        target = Layout(staging)
        for src, dst in [(self.grades, target.grades)] + [(self.results(s), target.results(s))
                                                          for s in self.students() if self.results(s).is_file()]:
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:  # a file system without hard links
                shutil.copy2(src, dst)
        return staging

    def keep_previous(self, staging: Path | None, old_grades: str) -> bool:
        """Make `staging` the previous grades when this batch changed grades.csv (`old_grades`: its text
        before), else drop it (a rerun that changed nothing keeps the grades before it).  True if kept."""
        if staging is None:
            return False
        if self.grades.read_text(encoding="utf-8") == old_grades:
            shutil.rmtree(staging, ignore_errors=True)
            return False
        shutil.rmtree(self.previous, ignore_errors=True)
        os.replace(staging, self.previous)
        return True

    def no_grades(self) -> str:
        """Why this folder cannot be read as results ("" when some student's results.json is there):
        it does not exist (a typo), or the run that wrote it graded nobody (a failed run)."""
        if not self.out.is_dir():
            return (f"{self.out}: no such results folder (a typo? `grader grade ... --out DIR` writes one)"
                    if not self.out.exists() else f"{self.out} is not a folder")
        if self.is_old_layout() or any(self.results(s).is_file() for s in self.students()):
            return ""
        logs = f"; see {self.logs}" if self.logs.is_dir() else ""
        return (f"{self.out} holds no grades (no students/<id>/results.json): the run that wrote it graded "
                f"nobody, e.g. a `--device cuda` run on a machine without CUDA{logs}")


#: Bytes of one JSON file written for one student (results.json, instructor.json): the last bound on
#: them.  What goes in is capped where it is made (messages: `bounded_messages`; what staging says
#: about the submission: `grader.intake.take.Record`), so an honest file is far below it (all twelve
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
