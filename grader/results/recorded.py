"""Which assignment a results folder was graded for, and the check the results commands make on it.

`grader grade` writes the name, modules and GPU choice into each results.json's
``extra_data.submission.graded_with`` (only for a course.toml assignment, so results without one are
byte for byte as before); `recorded` reads it back, and merge, report, export and classroom-payload
refuse an ``--assignment`` that differs from it (`cli_results_assignment`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader.course.config import Assignment, cli_assignment


def recorded(docs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What results.json files say about the assignment they were graded for: {"assignment",
    "modules", "gpu_tests"} of the first that names one, else {} (graded without course.toml)."""
    for doc in docs:
        graded = ((doc.get("extra_data") or {}).get("submission") or {}).get("graded_with") or {}
        if isinstance(graded, dict) and graded.get("assignment"):
            return {"assignment": str(graded["assignment"]), "modules": tuple(graded.get("modules") or ()),
                    "gpu_tests": graded.get("gpu_tests", True) is not False}
    return {}


def recorded_in(folder: Path) -> dict[str, Any]:
    """`recorded` of a results folder (its students' results.json files)."""
    import json

    from grader.results.layout import Layout

    layout = Layout(folder)

    def docs() -> Iterable[dict[str, Any]]:
        for student in layout.students():
            try:
                doc = json.loads(layout.results(student).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict):
                yield doc

    return recorded(docs())


def cli_results_assignment(name: str | None, folders: Iterable[Path], console: Any,
                           what: str) -> tuple[int | None, Assignment | None]:
    """For a command on results folders (merge, report, export, classroom-payload): (None, the
    assignment named, or None without a name) when each folder was graded for it; (2, None) after
    saying why not (no such assignment, a bad course.toml, a folder that is missing or holds no grades,
    results of another assignment)."""
    if not name:
        return None, None
    assignment = cli_assignment(name, console, what)
    if assignment is None:
        return 2, None
    from grader.results.layout import Layout

    for folder in folders:
        got = recorded_in(folder)
        why = Layout(Path(folder)).no_grades()  # a typo or a failed run: not the assignment's fault
        if not why and not assignment.default and got.get("assignment") != assignment.name:
            why = (f"{folder} was graded for assignment {got['assignment']}, not {assignment.name}" if got else
                   f"{folder} was graded without --assignment (no course.toml assignment), not for {assignment.name}")
        if why:
            from grader.untrusted import shown_markup

            console.print(f"[red]{what}: {shown_markup(why)}[/red]", highlight=False, soft_wrap=True)
            return 2, None
    return None, assignment
