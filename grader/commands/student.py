"""`grader check`: a student grades their own implementation with the public tests.

The submission is staged exactly as `grader grade` stages it (`grader.intake.stage`), then the
public tests run in-process (`grader.testing.suite_process`), or, with `--sandbox`, exactly as `grader grade`
runs them.  The results are shown as the check table, and optionally written as JSON and as the
feedback page (`--json`, `--html`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.untrusted import LOG_LIMIT, MESSAGE_LIMIT, shown, shown_markup

from grader import MODULES, kit_version
from grader.commands.common import abspath, needs_instructor_repo


CHECK = """\
Grades your implementation (PATH, default assignment/) with the public tests and prints a table
per module (points and test counts, each column's unit in its header), one plain line per failed
test, the modules not started yet in one line ("not attempted yet: ..."), and the GPU tests pending
without CUDA in one line.  `--module M` (repeatable) checks those modules and lists each of their
tests, passed and pending ones too.

The files are staged exactly as `grader grade` takes them (module files plus helper modules next
to them, UTF-8 only), then the tests run in-process, on Linux, macOS and Windows; a test a machine
cannot check (the memory bound on Windows) is pending, "checked only when graded".  `--sandbox`
grades exactly as `grader grade` does (staging, sandbox, the same tests).  PATH may also be the
`.zip` about to be submitted, or a notebook (`grader check memory.ipynb`: docs/NOTEBOOKS.md).

In the student release, `--hidden` says that it needs the instructor repository (exit status 2)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`grader check`."""
    p = sub.add_parser("check", help="grade your implementation with the public tests", description=CHECK)
    p.add_argument("path", nargs="?", default=None, metavar="PATH",
                   help="assignment folder, release copy, .zip or notebook to check (default: assignment/)")
    p.add_argument("--module", action="append", choices=MODULES, metavar="MODULE",
                   help="only this module, every one of its tests listed (repeatable)")
    p.add_argument("--hidden", action="store_true", help="include the hidden tests (instructor repo only)")
    p.add_argument("--sandbox", action="store_true",
                   help="grade exactly as `grader grade` does: staged files, the sandbox, the same tests (slower)")
    p.add_argument("--sandbox-launcher", choices=("auto", "bubblewrap", "landlock", "rlimits"), default="auto",
                   help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON (earned, possible, pending, and "
                   "every test's record)")
    p.add_argument("--html", metavar="FILE", help="also write the feedback page (what passed and failed, with "
                   "pictures), as `grader grade` writes it for each student")
    p.add_argument("--assignment", metavar="NAME", help="check this course.toml assignment's modules (default: a "
                   "release's own assignment; the whole kit where course.toml has several)")
    p.set_defaults(func=cmd_check)


def _check_source(path: str | None):
    """The submission `grader check` looks at: the folder (or archive) that `grader grade` would take."""
    from grader.intake.discover import Source, is_archive, student_id
    from grader.boundary.target import resolve_target

    from grader.intake.notebook import is_notebook

    if path is not None and str(path) not in ("solutions", "assignment") and (is_archive(abspath(path))
                                                                          or is_notebook(abspath(path))):
        folder = abspath(path)  # the archive (or notebook, grader.intake.notebook) the student is about to submit
    else:
        folder = resolve_target(path)
    return Source(student_id(folder), folder)


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """A student grades their own implementation with the public tests.

    The files are staged exactly as `grader grade` stages a submission (`grader.intake.stage.stage`:
    module files, helper modules, UTF-8 only), so a local check sees what the grader sees.
    `--sandbox` goes further and grades exactly as `grader grade` does (sandbox included).
    """
    import tempfile

    from grader.intake.stage import stage
    from grader.intake.unpack import RejectedSubmission
    from grader.testing.suite_process import run_suite, test_files
    from grader.boundary.target import TargetError

    if args.hidden and (code := needs_instructor_repo("grader check --hidden", console)) is not None:
        return code
    try:
        source = _check_source(args.path)
    except TargetError as exc:
        console.print(f"[red]{shown_markup(exc, MESSAGE_LIMIT)}[/red]", highlight=False, soft_wrap=True)
        return 2
    from grader.course.config import CourseError, check_assignment

    try:  # a release knows its assignment (its course.toml): its modules, and whether its GPU tests count
        assignment = check_assignment(args.assignment)
    except CourseError as exc:
        console.print(f"[red]grader check: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False)
        return 2
    modules = tuple(args.module) if args.module else assignment.modules
    gpu_args = () if assignment.gpu_tests else ("--gpu-tests=none",)
    kind = "public and hidden" if args.hidden else "public"
    if args.html and (abspath(args.html).is_dir() or not abspath(args.html).parent.is_dir()):
        console.print(f"[red]--html {escape(args.html)}: not a file in an existing folder[/red]", highlight=False)
        return 2
    if args.sandbox:
        return _check_sandboxed(args, source, modules, console, assignment)
    with tempfile.TemporaryDirectory(prefix="kit-check-") as tmp:
        try:
            staged = stage(source, Path(tmp) / "submission")
        except RejectedSubmission as exc:
            console.print(f"[red]{shown_markup(source.path)}: rejected: {shown_markup(exc)}[/red]", highlight=False)
            return 2
        if source.kind == "notebook" and not staged.files:  # the one input was refused: no table of zeros
            why = next(iter(staged.not_taken.values()), "no answer cell of this release in it")
            console.print(f"[red]{shown_markup(source.path)}: not graded: {shown_markup(why)}[/red]", highlight=False)
            return 2
        console.print(f"Checking {shown_markup(source.path)} with the {kind} tests (kit {kit_version()}; files staged "
                      "as `grader grade` takes them)", highlight=False)
        for line in _staging_lines(staged, modules):
            console.print(shown(line, MESSAGE_LIMIT), highlight=False, markup=False)
        files = test_files(modules, hidden=args.hidden)
        run = run_suite(staged.folder, files, extra=gpu_args)
    if not run.records:
        console.print("[red]the tests did not run:[/red]")
        console.print(shown(run.log, LOG_LIMIT, newlines=True), markup=False, highlight=False)
        return 2
    if not run.meta.get("cuda") and assignment.gpu_tests:
        console.print("No CUDA here: GPU tests are listed as pending (graded on a GPU machine by the course staff).")
    return _report(args, run.records, console, student=source.student)


def _staging_lines(staged, modules: tuple[str, ...]) -> list[str]:
    from grader.intake.stage import source_description

    lines = source_description(staged) + [f"Note: {n}" for n in staged.notes]  # (a notebook's: what was not graded)
    refused = {k.rsplit("/", 1)[-1].removesuffix(".py") for k in staged.not_taken}
    missing = [m for m in staged.missing if m in modules and m not in refused]  # those are named above
    if staged.empty:
        from grader.intake.take import WHERE_LOOKED

        lines.append(f"No module file found ({WHERE_LOOKED}): everything is not attempted.")
    elif missing:
        lines.append("Missing files (graded as not attempted): " + ", ".join(m + ".py" for m in missing))
    return lines


def _report(args: argparse.Namespace, records: list[dict], console: Console, *, student: str = "",
            results: dict | None = None) -> int:
    from grader.testing.check_table import render_check

    render_check(records, console, every_test=bool(args.module))  # --module: every test, passed ones too
    if args.html:  # the feedback page, from the results.json `grader grade` wrote (or would write)
        from grader.reports.feedback import write_feedback
        from grader.results.results_json import build_results

        write_feedback(results or build_results(records, student=student, kit_version=kit_version(), sandbox={},
                                                submission={}), abspath(args.html), charts="all")
        console.print(f"feedback page written to {escape(args.html)}", highlight=False)
    if args.json:
        import json

        from grader.testing.scoring import score, totals

        earned, possible, pending = totals(score(records))
        abspath(args.json).write_text(json.dumps({"earned": earned, "possible": possible, "pending": pending,
                                                  "tests": records}, indent=1))
    return 0


def _check_sandboxed(args: argparse.Namespace, source, modules: tuple[str, ...], console: Console,
                     assignment=None) -> int:
    """`grader check --sandbox`: exactly `grader grade` on this one submission (staging, sandbox,
    the same tests), shown as the check table."""
    import io
    import json
    import tempfile

    from grader.batch.grade import grade
    from grader.batch.options import GradeError, GradeOptions
    from grader.results.layout import Layout

    console.print(f"Checking {shown_markup(source.path)} in the sandbox, exactly as `grader grade` does "
                  f"(kit {kit_version()}; {'public and hidden' if args.hidden else 'public'} tests)", highlight=False)
    with tempfile.TemporaryDirectory(prefix="kit-check-") as tmp:
        out = Path(tmp) / "out"
        options = GradeOptions(out=out, jobs=1, force=True, modules=modules, hidden=args.hidden, progress=False,
                               launcher=args.sandbox_launcher,
                               **({"assignment": assignment.name, "gpu_tests": assignment.gpu_tests}
                                  if assignment is not None and not assignment.default else {}))
        quiet = Console(file=io.StringIO(), width=200)
        try:
            result = grade([source.path], options, quiet)
        except GradeError as exc:
            console.print(f"[red]{shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False)
            return 2
        if result.warning:
            console.print(f"[yellow]{result.warning}[/yellow]", highlight=False)
        layout = Layout(out)
        outcome = next((o for o in result.outcomes if o.student == source.student), None)
        path = layout.instructor(source.student)
        if outcome is None or outcome.status == "error" or not path.exists():
            console.print(f"[red]not graded: {shown_markup(outcome.message if outcome else 'no result')}[/red]",
                          highlight=False)
            return 2
        doc = json.loads(path.read_text())
        results = json.loads(layout.results(source.student).read_text())
        summary = results["output"]
    for line in summary.splitlines():
        if line.startswith(("Your submission", "Helper modules", "Not taken", "Missing files", "No module", "Note")):
            console.print(shown(line, MESSAGE_LIMIT), highlight=False, markup=False)
    if any(r["status"] == "pending" for r in doc["records"]):
        console.print("GPU tests are listed as pending (graded on a GPU machine by the course staff).")
    return _report(args, doc["records"], console, student=source.student, results=results)
