"""After grading: `grader merge`, `gradescope`, `prairielearn`, `classroom-payload`, `export`
(`report` and `similarity`: `grader.commands.class_reports`).

Thin wrappers around `grader.results.merge`, `grader.reports` (class report, similarity) and
`grader.integrations` (Gradescope bundle, PrairieLearn questions and their grader's entrypoint,
GitHub Classroom payload, Canvas export, the nbgrader gradebook that `grade`, `merge` and
`combine` can also write: `to_gradebook`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.commands import class_reports
from grader.commands.common import abspath, db_url, needs_instructor_repo
from grader.untrusted import MESSAGE_LIMIT, shown, shown_markup


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`grader merge`, `gradescope`, `classroom-payload`, `report`, `similarity`, `export`."""
    p = sub.add_parser("merge", help="combine a CPU run and a CUDA run of the same submissions", description=MERGE)
    p.add_argument("cpu", metavar="CPU_DIR", help="results folder of the CPU run")
    p.add_argument("gpu", nargs="?", metavar="GPU_DIR", help="results folder of the CUDA run (`grader grade --device cuda`); left out: "
                   "no GPU run, the GPU tests stay pending (a folder named must hold grades)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for the merged results.json files, grades.csv and feedback pages")
    p.add_argument("--fail-on-pending", action="store_true", help="exit 1 if any GPU test is still pending")
    p.add_argument("--markdown", metavar="FILE", help="append a markdown score table (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook")
    p.add_argument("--assignment", metavar="NAME", help="the course.toml assignment both runs graded (refused if not)")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("gradescope", help="build a Gradescope autograder bundle (setup.sh, run_autograder)",
                       description=GRADESCOPE)
    p.add_argument("out", metavar="OUT.zip", help="the zip to write, e.g. autograder.zip")
    p.add_argument("--no-gpu", action="store_true",
                   help="the course drops the GPU tests (Gradescope has no GPU): left out of the tests and the "
                        "maximum; default: they stay pending and the summary says the course staff grade them "
                        "(grader grade --device cuda + grader merge)")
    p.add_argument("--assignment", metavar="NAME", help="the bundle grades this course.toml assignment: its modules, "
                   "its maximum (its GPU tests left out where they do not count); default: the only one, or the "
                   "whole kit without course.toml")
    p.set_defaults(func=cmd_gradescope)

    p = sub.add_parser("prairielearn", help="PrairieLearn questions (one per module) and their grader image; "
                                            "--grade ROOT: the image's entrypoint", description=PRAIRIELEARN)
    p.add_argument("out", nargs="?", metavar="OUT",
                   help="the folder to write the course fragment to (must not exist or be empty)")
    p.add_argument("--assignment", metavar="NAME", help="this course.toml assignment's modules (its assessment: "
                   "prairielearn_assessment); default: the only one, or the whole kit without course.toml")
    p.add_argument("--image", metavar="NAME:TAG", help="the Docker Hub image every info.json names (build and push "
                   "grader-image/ as it)")
    p.add_argument("--timeout", type=int, default=None, help="seconds PrairieLearn gives one grading (default 300, at "
                   "most 600)")
    p.add_argument("--require", choices=("bubblewrap", "landlock", "rlimits"), default=None,
                   help="the image refuses to grade with a sandbox weaker than this (see `grader doctor`; default "
                   "landlock: below it student code could read the hidden tests; rlimits accepts any level)")
    p.add_argument("--grade", metavar="ROOT", help="grade ROOT/student (laid out as PrairieLearn's /grade) and write "
                   "ROOT/results/results.json")
    p.set_defaults(func=cmd_prairielearn)

    p = sub.add_parser("classroom-payload", help="one student's results as GitHub Classroom's reporter payload",
                       description=CLASSROOM)
    p.add_argument("results", metavar="DIR", help="a results folder written by `grader merge` (or `grader grade`)")
    p.add_argument("--student", metavar="ID", help="the student to report (default: the folder's only one)")
    p.add_argument("--github-output", metavar="FILE", help="append result=PAYLOAD to this file ($GITHUB_OUTPUT); "
                   "else print the payload")
    p.add_argument("--assignment", metavar="NAME", help="the course.toml assignment the results are of (refused if not)")
    p.set_defaults(func=cmd_classroom_payload)

    class_reports.add_parsers(sub)  # report, similarity (in `grader --help` order)

    p = sub.add_parser("export", help="write the scores into Canvas's gradebook-import CSV", description=EXPORT,
                       epilog="Exit status: 0 written; 1 written, but some graded students are not in the roster "
                              "(listed); 2 refused, nothing written.")
    p.add_argument("results", metavar="DIR", help="a results folder written by `grader grade` (or `grader merge`)")
    p.add_argument("--canvas", required=True, metavar="ROSTER.csv", help="the gradebook CSV Canvas exported")
    p.add_argument("--assignment", metavar="NAME", help='the course.toml assignment (its canvas_column is filled), '
                   'or, without course.toml, the Canvas column itself, "Name (assignment id)"')
    p.add_argument("--column", metavar='"NAME (ID)"', help="the Canvas column to fill (default: the assignment's "
                   "canvas_column in course.toml)")
    p.add_argument("--out", required=True, metavar="FILE", help="the CSV to import into Canvas")
    p.add_argument("--map", metavar="IDS.csv", help="columns student,canvas: kit student id -> Canvas login/SIS id")
    p.add_argument("--allow-pending", action="store_true",
                   help="export even though GPU tests are pending (their points left out); default: refused, "
                        "`grader merge` the GPU run first")
    p.add_argument("--create-column", action="store_true",
                   help="--assignment is a new column (Canvas creates the assignment); default: it must be one of "
                        "the roster's columns, so a typo is refused")
    p.set_defaults(func=cmd_export)


MERGE = """\
Fills the CPU run's pending GPU tests from the CUDA run of the same submissions (`grader grade
--device cuda`, the same folder layout as `grader grade`) and writes the merged results.json files,
grades.csv and feedback pages to `--out`, with a summary table; a late penalty is applied again,
as the CPU run's percentage of the merged raw score.  The merged folder is the grade of record
where the course grades GPU tests (`grader export`, `--gradebook`).

Refuses other kit versions or other submissions, and a folder that does not exist or holds no
grades (a typo, a failed run: exit status 2).  Without GPU_DIR the GPU tests stay pending (the
student workflow: summary and feedback pages only); `--fail-on-pending` then exits 1."""

GRADESCOPE = """\
Writes a Gradescope autograder bundle (`setup.sh`, `run_autograder`, the kit without solutions):
upload it as the assignment's autograder.  Gradescope has no GPU: each student's summary says that
the course staff grade the GPU tests on a GPU machine, or with `--no-gpu` they are left out of
every student's tests and maximum (docs/INSTRUCTORS.md, GPU tests).  `run_autograder` adds
`$KIT_GRADE_ARGS` to its `grader grade` (docs/ENVIRONMENT.md).  Instructor repository only."""

PRAIRIELEARN = """\
Writes a PrairieLearn course fragment to OUT: one externally graded question per module (its
handout section, an editor pre-filled with the stub, `info.json` with its image and timeout), the
assessment (`infoAssessment.json`, points without the GPU tests: PrairieLearn has no GPU;
course.toml's `prairielearn_assessment` names it) and the grader image's recipe (`grader-image/`:
a Dockerfile over the kit without solutions or hidden tests).  The image's entrypoint is `grader
prairielearn --grade /grade`, which grades the student's files with `grader grade` and writes
PrairieLearn's results.json.  Step by step: docs/PRAIRIELEARN.md."""

CLASSROOM = """\
Prints one student's results as the base64 payload GitHub Classroom's reporter action
(`classroom-resources/autograding-grading-reporter@v1`) decodes: per-test scores summing to the
kit's score; pending GPU tests count 0 of their points, status `error`.  With `--github-output`,
it is appended to that file as `result`.  The student release's workflow runs it: that score is the
student's preview, not a grade (docs/INSTRUCTORS.md, GitHub Classroom)."""

EXPORT = """\
Fills Canvas's gradebook-import CSV from the roster Canvas exported, students matched on their
login or SIS ids (or a mapping file, `--map`); unmatched students on either side are listed, one
per line, never dropped.  With course.toml, `--assignment NAME` fills that assignment's
`canvas_column` (or `--column "NAME (ID)"`); without it, `--assignment` is the column itself.

Refused (exit status 2, nothing written) while any exported student has GPU points pending
(`grader merge` the GPU run first, or `--allow-pending` to export without them), and when the
column is not one of the roster's (Canvas would create a new assignment: the roster's columns are
listed, closest first; `--create-column` adds one on purpose)."""


def needs_nbgrader(what: str, console: Console) -> int | None:
    """None when nbgrader can be imported; else says so in one line and returns exit status 2
    (checked before a command with ``--gradebook`` does any work)."""
    from grader.integrations.gradebook import GradebookError, nbgrader_api

    try:
        nbgrader_api()
    except GradebookError as exc:
        console.print(f"[red]{what}: {escape(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return 2
    return None


def to_gradebook(db_url: str, folder: Path, console: Console, *, fail_on_pending: bool) -> int:
    """Write the grades of the results folder `folder` to an nbgrader gradebook; 1 when GPU grades are
    still pending and `fail_on_pending`, else 0; 2 (one line) when nbgrader cannot be imported."""
    from grader.integrations.gradebook import late_from_results, records_from_results, write_gradebook

    if (code := needs_nbgrader("--gradebook", console)) is not None:
        return code
    counts = write_gradebook(db_url, records_from_results(folder), late=late_from_results(folder))
    console.print(f"gradebook {db_url}: {counts['students']} students, {counts['cells']} grade cells")
    if counts["pending"]:
        console.print(f"[yellow]warning: {counts['pending']} GPU test grades are still pending (counted as 0 by "
                      "nbgrader export until `grader merge` fills them)[/yellow]")
        return 1 if fail_on_pending else 0
    return 0


def cmd_merge(args: argparse.Namespace, console: Console) -> int:
    """Combine a CPU run and a CUDA run into final results."""
    from grader.results.merge import MergeError, markdown_summary, merge_runs, write_merged
    from grader.results.grades import render_summary

    if args.gradebook and (code := needs_nbgrader("grader merge", console)) is not None:
        return code
    from grader.results.recorded import cli_results_assignment

    gpu = abspath(args.gpu) if args.gpu else None
    code, _ = cli_results_assignment(args.assignment, [abspath(args.cpu)] + [gpu] * bool(gpu), console, "grader merge")
    if code is not None:
        return code
    try:
        results, instructor, merged = merge_runs(abspath(args.cpu), gpu)
    except MergeError as exc:
        console.print(f"[red]grader merge: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False,
                      soft_wrap=True)
        return 2
    out = abspath(args.out)
    write_merged(out, results, instructor, merged)
    render_summary(merged.rows, console, title=f"Merged grades ({merged.filled} GPU test results filled in)" if gpu
                   else "Grades (no GPU run given: the GPU tests stay pending)")
    from grader.reports.feedback import write_and_report

    write_and_report(out, list(results), console)  # the students' pages of the merged results
    if args.markdown:
        with open(abspath(args.markdown), "a", encoding="utf-8") as f:
            f.write(markdown_summary(merged))
    code = 0
    if merged.pending:
        console.print(f"[yellow]warning: GPU tests still pending for {len(merged.pending)} submission(s): "
                      f"{', '.join(shown_markup(s) for s in sorted(merged.pending))}; their points are neither given "
                      "nor lost[/yellow]", highlight=False, soft_wrap=True)
        code = 1 if args.fail_on_pending else 0
    if args.gradebook:
        code = max(code, to_gradebook(db_url(args.gradebook), out, console, fail_on_pending=args.fail_on_pending))
    return code


def cmd_gradescope(args: argparse.Namespace, console: Console) -> int:
    from grader.integrations.gradescope import build_bundle

    if (code := needs_instructor_repo("grader gradescope", console)) is not None:
        return code
    from grader.course.config import cli_assignment, load_course

    if (assignment := cli_assignment(args.assignment, console, "grader gradescope")) is None:
        return 2
    no_gpu = args.no_gpu or not assignment.gpu_tests
    out = build_bundle(abspath(args.out), "none" if no_gpu else "staff",
                       None if assignment.default else (load_course().name, assignment))
    if assignment.default:
        console.print(f"Gradescope autograder bundle written to {out} (upload it as the assignment's autograder)")
    else:
        console.print(f"Gradescope autograder bundle written to {out} for assignment {shown(assignment.label)} "
                      f"({', '.join(assignment.modules)}): upload it as the autograder of the Gradescope assignment "
                      f"{shown(assignment.gradescope_title or assignment.label)!r}", markup=False, highlight=False)
    console.print(("GPU tests: left out of the points (" + ("--no-gpu)" if args.no_gpu else
                                                            "course.toml: gpu_tests = false)")) if no_gpu else
                  "GPU tests: pending on Gradescope (no GPU); grade them yourself with `grader grade --device cuda` "
                  "+ `grader merge` (docs/INSTRUCTORS.md: GPU tests), or rebuild with --no-gpu to leave them out", highlight=False)
    return 0


def cmd_prairielearn(args: argparse.Namespace, console: Console) -> int:
    """The course fragment (`grader.integrations.prairielearn`), or with --grade the entrypoint
    (`grader.integrations.prairielearn_grade`: exit 0 whenever results.json was written)."""
    if args.grade:
        if args.out or args.assignment or args.image or args.timeout is not None:
            console.print("[red]grader prairielearn --grade ROOT takes no OUT, --assignment, --image or --timeout "
                          "(the question's tests/question.json says what to grade)[/red]", highlight=False)
            return 2
        if not abspath(args.grade).is_dir():
            console.print(f"[red]grader prairielearn --grade: {escape(args.grade)} is not a folder (PrairieLearn's "
                          "/grade: student/, tests/, results/)[/red]", highlight=False)
            return 2
        from grader.integrations.prairielearn_grade import main as grade_main

        return grade_main(abspath(args.grade), args.require)
    if not args.out:
        console.print("[red]grader prairielearn needs OUT (or --grade ROOT)[/red]")
        return 2
    if (code := needs_instructor_repo("grader prairielearn", console)) is not None:
        return code
    from grader.course.config import cli_assignment, load_course
    from grader.integrations.prairielearn import DEFAULT_REQUIRE, DEFAULT_TIMEOUT, FragmentError, build_fragment

    if (assignment := cli_assignment(args.assignment, console, "grader prairielearn")) is None:
        return 2
    course = load_course()
    number = 1 if course is None else 1 + [a.name for a in course.assignments].index(assignment.name)
    try:
        made = build_fragment(abspath(args.out), assignment, course.name if course else "", number=number,
                              image=args.image or "", require=args.require or DEFAULT_REQUIRE,
                              timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout)
    except FragmentError as exc:
        console.print(f"[red]grader prairielearn: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]",
                      highlight=False, soft_wrap=True)
        return 2
    points = sum(p for _, p in made["questions"])
    console.print(f"PrairieLearn fragment written to {args.out}: {len(made['questions'])} questions ({points} points, "
                  f"GPU tests left out: PrairieLearn has no GPU), assessment {made['tid']}, image {made['image']} "
                  "(build and push grader-image/; README.md in the fragment says where each part goes)",
                  markup=False, highlight=False, soft_wrap=True)
    return 0


def cmd_classroom_payload(args: argparse.Namespace, console: Console) -> int:
    """The base64 payload `classroom-resources/autograding-grading-reporter` decodes (see its module)."""
    from grader.results.recorded import cli_results_assignment
    from grader.integrations.classroom import PayloadError, student_payload, write_github_output

    code, _ = cli_results_assignment(args.assignment, [abspath(args.results)], console, "grader classroom-payload")
    if code is not None:
        return code
    try:
        student, payload, encoded = student_payload(abspath(args.results), args.student)
    except PayloadError as exc:
        console.print(f"[red]grader classroom-payload: {shown_markup(exc, MESSAGE_LIMIT)}[/red]", highlight=False,
                      soft_wrap=True)
        return 2
    score = sum(t["score"] for t in payload["tests"])
    if args.github_output:
        try:
            write_github_output(abspath(args.github_output), encoded)
        except OSError as exc:
            console.print(f"[red]grader classroom-payload: cannot write {escape(args.github_output)}: "
                          f"{escape(exc.strerror or str(exc))}[/red]", highlight=False)
            return 2
        console.print(f"Classroom payload for {shown_markup(student)}: {score:g} / {payload['max_score']:g} points, "
                      f"{len(payload['tests'])} tests, status {payload['status']}", highlight=False)
    else:
        print(encoded)
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    from grader.integrations.canvas import ExportError, export_canvas

    column = _canvas_column(args, console)
    if column is None:
        return 2
    try:
        result = export_canvas(abspath(args.results), abspath(args.canvas), column, abspath(args.out),
                               abspath(args.map) if args.map else None, allow_pending=args.allow_pending,
                               create_column=args.create_column)
    except ExportError as exc:
        console.print(f"[red]grader export: {shown_markup(exc, MESSAGE_LIMIT)}[/red]", highlight=False, soft_wrap=True)
        return 2
    console.print(f"wrote {args.out}: {len(result.matched)} students matched"
                  + (f"; {shown(column)} is a new column (--create-column)" if result.created_column else ""),
                  markup=False, highlight=False, soft_wrap=True)
    if result.pending:
        console.print(f"[yellow]warning: {len(result.pending)} exported score(s) lack "
                      f"{sum(result.pending.values()):g} pending GPU points in all (--allow-pending)[/yellow]",
                      highlight=False, soft_wrap=True)
    for title, names in (("in the roster, with no result (left empty)", result.roster_without_result),
                         ("graded, but not in the roster (not exported)", result.results_without_roster)):
        if names:  # one per line: a roster name holds a comma ("Liddell, Alice")
            console.print(f"[yellow]{len(names)} {title}:[/yellow]", highlight=False, soft_wrap=True)
            for name in names:
                console.print("  " + shown(name), markup=False, highlight=False, soft_wrap=True)
    return 1 if result.results_without_roster else 0


def _canvas_column(args: argparse.Namespace, console: Console) -> str | None:
    """The Canvas column `grader export` fills: --column; else the assignment's canvas_column (course.toml:
    --assignment NAME, or the assignment the results were graded for); else --assignment itself, a column
    name as before course.toml existed.  None after saying why there is none (or the results are of
    another assignment)."""
    import re

    from grader.course.config import CourseError, load_course
    from grader.results.recorded import recorded_in

    results = abspath(args.results)
    try:
        course = load_course()
    except CourseError as exc:
        console.print(f"[red]grader export: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False,
                      soft_wrap=True)
        return None
    name = args.assignment
    if course is not None and name and course.get(name) is None and not re.fullmatch(r".+ \(\d+\)", name):
        from grader.course.config import cli_assignment

        cli_assignment(name, console, "grader export")  # (says: no such assignment, and lists them)
        return None
    assignment = course.get(name) if course is not None and name else None
    if course is not None and assignment is None and not name and not args.column:
        got = recorded_in(results)
        assignment = course.get(got["assignment"]) if got else None
    if assignment is not None:
        from grader.results.recorded import cli_results_assignment

        if cli_results_assignment(assignment.name, [results], console, "grader export")[0] is not None:
            return None
    if args.column:
        return args.column
    if assignment is not None:
        if not assignment.canvas_column:
            console.print(f"[red]grader export: assignment {escape(assignment.name)} has no canvas_column in "
                          "course.toml: add it, or pass --column \"Name (id)\"[/red]", highlight=False)
            return None
        return assignment.canvas_column
    if name:
        return name
    console.print("[red]grader export: which Canvas column? --column \"Name (id)\", or --assignment NAME with a "
                  "canvas_column in course.toml[/red]", highlight=False)
    return None
