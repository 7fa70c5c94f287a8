"""The late policy over a batch (`grader grade`): a time for every submission, the decision written
into its results.json, and what the instructor is told (`grader.course.late` holds the rules).

Times: a row of ``--submitted-at`` first; else, for a submission folder holding ``.git``, the date
of the last commit touching the graded files when they are what that commit holds
(`grader.intake.gittime`); else none (a note, and ``--if-no-time``).  The console gets one line
per late submission, git's own words where it could not date one, and, last of all
(`list_unknown_times`), every submission with no known time, with why.  Every string a
submission controls is printed through `grader.untrusted.shown`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from grader.course.late import LatePolicy, apply, assess, csv_cells, unknown_decision
from grader.untrusted import shown, shown_markup


def graded_files(doc: dict[str, Any]) -> list[str]:
    """The files a results.json says were graded, as paths in the submission folder (its layout's
    root, then each module and helper file taken from there)."""
    sub = (doc.get("extra_data") or {}).get("submission") or {}
    root = PurePosixPath(str(sub.get("layout") or "."))
    names = [*(sub.get("files") or {}), *(sub.get("helpers") or {})]
    return sorted(str(root / f"{name}.py") for name in names)


def _keys(src: Any) -> list[str]:
    """The names a row of --submitted-at or --extensions may give a submission: its id, its name."""
    name = Path(src.path).name
    return [src.student, next((name[:-len(x)] for x in (".tar.gz", ".tgz", ".zip") if name.endswith(x)), name)]


def apply_policy(policy: LatePolicy | None, sources: Iterable[Any], layout: Any, console: Any,
                 refused: Iterable[Any] = ()) -> dict[str, int]:
    """Apply `policy` to the results.json of every source of a batch (or remove an earlier run's
    late data, `policy` None: results reflect this command line).  Returns counts by status.
    `refused`: the batch's submissions refused before grading (colliding ids): their rows are
    said to be unused for that reason, not as "not in this batch".

    Prints one line per late submission, and git's own words where it could not date one; the
    submissions with no known time are listed last by `list_unknown_times`."""
    from grader.intake.gittime import GitTimeError, commit_time, is_git_repo
    from grader.results.layout import write_json
    from grader.results.results_json import load_results

    counts: dict[str, int] = {}
    used: set[str] = set()
    lines: list[str] = []
    git = 0
    for src in sources:
        path = layout.results(src.student)
        doc = load_results(path)
        if doc is None or (policy is None and "late" not in doc.get("extra_data", {})):
            continue
        if policy is None:
            write_json(path, apply(doc, None))
            counts["removed"] = counts.get("removed", 0) + 1
            continue
        keys = _keys(src)
        key = next((k for k in keys if policy.times and k in policy.times), None)
        ext_key = next((k for k in keys if k in policy.extensions), None)
        used.update(k for k in (key, ext_key) if k)
        submitted, source, note, warning = None, "", "", ""
        if key is not None and policy.times[key] is not None:
            submitted, source = policy.times[key], "times.csv"
        elif is_git_repo(Path(src.path)):
            try:
                submitted, source = commit_time(Path(src.path), graded_files(doc)), "git"
                git += 1
                warning = "commit date: set by whoever commits, not a trusted clock"
            except GitTimeError as exc:
                note = f"git: {exc}"
                if exc.detail:  # git's own words may quote the submission: the instructor's console only
                    lines.append(f"  {shown(src.student)}: git said: {shown(exc.detail)}")
        elif policy.times is None:
            note = "no --submitted-at and not a git repository"
        else:
            note = ("its time is empty in " if key is not None else "not in ") + (policy.times_file or "--submitted-at")
        late = assess(policy, ext_key or src.student, submitted, source, note, warning)
        write_json(path, apply(doc, late))
        counts[late["status"]] = counts.get(late["status"], 0) + 1
        if late["status"] == "late":
            lines.append(f"  {shown(src.student)}: {shown(csv_cells(doc)['late'])}")
    if policy is None:
        if counts:
            console.print(f"[yellow]late policy: no --deadline given: removed the late penalty of {counts['removed']} "
                          "earlier result(s)[/yellow]", highlight=False)
        return counts
    unused = sorted(set(policy.times or {}) - used) + sorted(set(policy.extensions) - used)
    of_refused = [u for u in unused if any(u in _keys(src) for src in refused)]
    unused = [u for u in unused if u not in of_refused]
    console.print(f"late policy ({shown(policy.describe())}): " + ", ".join(
        f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items())), highlight=False, markup=False)
    for line in lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if of_refused:
        console.print("[yellow]late policy: not applied to refused submissions (colliding ids, not graded): "
                      + ", ".join(shown_markup(u) for u in dict.fromkeys(of_refused)) + "[/yellow]",
                      highlight=False, soft_wrap=True)
    if unused:
        console.print("[yellow]late policy: not in this batch (ignored): " + ", ".join(shown_markup(u) for u in unused)
                      + "[/yellow]", highlight=False, soft_wrap=True)
    if git:
        console.print(f"[yellow]late policy: the time of {git} submission(s) is the date of their last commit touching "
                      "assignment/: commit dates are set by whoever commits (a student can backdate them); check "
                      "them against the LMS where it matters[/yellow]", highlight=False)
    return counts


def unknown_times(layout: Any, students: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """(student, extra_data.late) of each of `students` whose results.json has no known time."""
    from grader.results.results_json import load_results

    out = []
    for student in students:
        late = ((load_results(layout.results(student)) or {}).get("extra_data") or {}).get("late")
        if isinstance(late, dict) and late.get("status") == "unknown":
            out.append((student, late))
    return out


def list_unknown_times(layout: Any, students: Iterable[str], console: Any) -> int:
    """The last lines of `grader grade` with a late policy: every submission whose time is unknown,
    one line each with why and what was decided (docs/INSTRUCTORS.md, "Late policy" says what to do).  Returns
    how many."""
    unknown = unknown_times(layout, students)
    if unknown:
        console.print(f"[bold red]late policy: NO SUBMISSION TIME for {len(unknown)} submission(s): decide each one "
                      "(a time from the LMS in --submitted-at, then grade again; docs/INSTRUCTORS.md, \"Late policy\"):[/bold red]",
                      highlight=False, soft_wrap=True)
    for student, late in unknown:
        console.print(f"[bold red]  {shown_markup(student)}: {shown_markup(unknown_decision(late))}: "
                      f"{shown_markup(late.get('note') or 'no reason recorded')}[/bold red]", highlight=False,
                      soft_wrap=True)
    return len(unknown)
