"""The `grader` command: check, stubs, release, validate, grade (the work lives in their own modules)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader import KIT_ROOT, MODULES, kit_version


def abspath(path: str | Path) -> Path:
    """A path from the command line, resolved against the caller's working directory (now,
    before anything changes directory: trusted workers run with their cwd at the kit root)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def db_url(url: str) -> str:
    """`sqlite:///relative.db` made absolute against the caller's working directory."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.startswith(prefix + "/") and url != prefix + ":memory:":
        return prefix + str(abspath(url[len(prefix):]))
    return url


def instructor_repo() -> bool:
    """True in the instructor repository; False in the student release (no solutions/, no hidden tests)."""
    return (KIT_ROOT / "solutions").is_dir() and (KIT_ROOT / "tests" / "hidden").is_dir()


def _needs_instructor_repo(what: str, console: Console) -> int | None:
    if instructor_repo():
        return None
    console.print(f"[red]{what} needs the instructor repository: this copy of the kit is the student release "
                  "(it has no solutions/ and no tests/hidden/).[/red]", highlight=False)
    return 2


def _check_source(path: str | None):
    """The submission `grader check` looks at: the folder (or archive) that `grader grade` would take."""
    from grader.batch.archives import Source, is_archive, student_id
    from grader.target import resolve_target

    if path is not None and str(path) not in ("solutions", "assignment") and is_archive(abspath(path)):
        folder = abspath(path)  # the archive the student is about to submit
    else:
        folder = resolve_target(path)
    return Source(student_id(folder), folder)


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """A student grades their own implementation with the public tests.

    The files are staged exactly as `grader grade` stages a submission (`grader.batch.archives.stage`:
    module files, helper modules, UTF-8 only), so a local check sees what the grader sees.
    `--sandbox` goes further and grades exactly as `grader grade` does (sandbox included).
    """
    import tempfile

    from grader.batch.archives import RejectedSubmission, stage
    from grader.runner import run_suite, test_files
    from grader.target import TargetError

    if args.hidden and (code := _needs_instructor_repo("grader check --hidden", console)) is not None:
        return code
    try:
        source = _check_source(args.path)
    except TargetError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    modules = tuple(args.module) if args.module else MODULES
    kind = "public and hidden" if args.hidden else "public"
    if args.html and (abspath(args.html).is_dir() or not abspath(args.html).parent.is_dir()):
        console.print(f"[red]--html {escape(args.html)}: not a file in an existing folder[/red]", highlight=False)
        return 2
    if args.sandbox:
        return _check_sandboxed(args, source, modules, console)
    with tempfile.TemporaryDirectory(prefix="kit-check-") as tmp:
        try:
            staged = stage(source, Path(tmp) / "submission")
        except RejectedSubmission as exc:
            console.print(f"[red]{source.path}: rejected: {exc}[/red]", highlight=False)
            return 2
        console.print(f"Checking {source.path} with the {kind} tests (kit {kit_version()}; files staged as "
                      "`grader grade` takes them)", highlight=False)
        for line in _staging_lines(staged, modules):
            console.print(line, highlight=False, markup=False)
        files = test_files(modules, hidden=args.hidden)
        run = run_suite(staged.folder, files)
    if not run.records:
        console.print("[red]the tests did not run:[/red]")
        console.print(run.log, markup=False)
        return 2
    if not run.meta.get("cuda"):
        console.print("No CUDA here: GPU tests are listed as pending (graded on the GPU runner).")
    return _report(args, run.records, console, student=source.student)


def _staging_lines(staged, modules: tuple[str, ...]) -> list[str]:
    from grader.batch.archives import source_description

    lines = source_description(staged)
    refused = {k.rsplit("/", 1)[-1].removesuffix(".py") for k in staged.not_taken}
    missing = [m for m in staged.missing if m in modules and m not in refused]  # those are named above
    if staged.empty:
        lines.append("No module file found (expected assignment/<module>.py): everything is not attempted.")
    elif missing:
        lines.append("Missing files (graded as not attempted): " + ", ".join(m + ".py" for m in missing))
    return lines


def _report(args: argparse.Namespace, records: list[dict], console: Console, *, student: str = "",
            results: dict | None = None) -> int:
    from grader.report import render_check

    render_check(records, console)
    if args.html:  # the feedback page, from the results.json `grader grade` wrote (or would write)
        from grader.reports.feedback import write_feedback
        from grader.batch.results import build_results

        write_feedback(results or build_results(records, student=student, kit_version=kit_version(), sandbox={},
                                                submission={}), abspath(args.html), charts="all")
        console.print(f"feedback page written to {escape(args.html)}", highlight=False)
    if args.json:
        import json

        from grader.scoring import score, totals

        earned, possible, pending = totals(score(records))
        abspath(args.json).write_text(json.dumps({"earned": earned, "possible": possible, "pending": pending,
                                                  "tests": records}, indent=1))
    return 0


def _check_sandboxed(args: argparse.Namespace, source, modules: tuple[str, ...], console: Console) -> int:
    """`grader check --sandbox`: exactly `grader grade` on this one submission (staging, sandbox,
    the same tests), shown as the check table."""
    import io
    import json
    import tempfile

    from grader.batch.grade import GradeError, GradeOptions, grade
    from grader.batch.results import Layout

    console.print(f"Checking {source.path} in the sandbox, exactly as `grader grade` does "
                  f"(kit {kit_version()}; {'public and hidden' if args.hidden else 'public'} tests)", highlight=False)
    with tempfile.TemporaryDirectory(prefix="kit-check-") as tmp:
        out = Path(tmp) / "out"
        options = GradeOptions(out=out, jobs=1, force=True, modules=modules, hidden=args.hidden, progress=False,
                               launcher=args.sandbox_launcher)
        quiet = Console(file=io.StringIO(), width=200)
        try:
            result = grade([source.path], options, quiet)
        except GradeError as exc:
            console.print(f"[red]{exc}[/red]", highlight=False)
            return 2
        if result.warning:
            console.print(f"[yellow]{result.warning}[/yellow]", highlight=False)
        layout = Layout(out)
        outcome = next((o for o in result.outcomes if o.student == source.student), None)
        path = layout.instructor(source.student)
        if outcome is None or outcome.status == "error" or not path.exists():
            console.print(f"[red]not graded: {outcome.message if outcome else 'no result'}[/red]", highlight=False)
            return 2
        doc = json.loads(path.read_text())
        results = json.loads(layout.results(source.student).read_text())
        summary = results["output"]
    for line in summary.splitlines():
        if line.startswith(("Your submission", "Helper modules", "Not taken", "Missing files", "No module", "Note")):
            console.print(line, highlight=False, markup=False)
    if any(r["status"] == "pending" for r in doc["records"]):
        console.print("GPU tests are listed as pending (graded on the GPU runner).")
    return _report(args, doc["records"], console, student=source.student, results=results)


def cmd_stubs(args: argparse.Namespace, console: Console) -> int:
    """Regenerate assignment/ from solutions/."""
    from grader.release import MarkerError, write_assignment

    if (code := _needs_instructor_repo("grader stubs", console)) is not None:
        return code
    try:
        written = write_assignment(KIT_ROOT / "assignment")
    except MarkerError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    console.print(f"wrote {len(written)} files to assignment/")
    return 0


def cmd_release(args: argparse.Namespace, console: Console) -> int:
    from grader.release import MarkerError, build_release, check_assignment

    if (code := _needs_instructor_repo("grader release", console)) is not None:
        return code
    try:
        if args.check:
            problems = check_assignment()
            for p in problems:
                console.print(f"[red]{p}[/red] (run `grader stubs`)", highlight=False)
            if not problems:
                console.print("assignment/ is in sync with solutions/")
            return 1 if problems else 0
        if not args.out:
            console.print("[red]grader release needs OUT (or --check)[/red]")
            return 2
        out = build_release(abspath(args.out))
    except MarkerError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    except FileExistsError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 2
    console.print(f"student release written to {out}")
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grader.validate import validate

    if (code := _needs_instructor_repo("grader validate", console)) is not None:
        return code
    modules = tuple(args.module) if args.module else MODULES
    result = validate(modules, jobs=args.jobs, console=console)
    console.print("[green]validate: OK[/green]" if result.ok else "[red]validate: FAILED[/red]")
    return 0 if result.ok else 1


def cmd_grade(args: argparse.Namespace, console: Console) -> int:
    """Instructor batch grading: every submission in its own sandbox, public + hidden tests.

    Exit status: 0 all graded (rejected and empty submissions count as graded: they have a
    result), 1 some could not be graded or were refused (colliding ids), 2 nothing was done
    (a path that does not exist, no submissions, the grader could not start)."""
    from grader.batch.grade import GradeError, GradeOptions, grade
    from grader.batch.late import LateInputError, policy_from_args

    try:  # the late policy's inputs are read now: bad ones stop everything before grading (exit 2)
        late = policy_from_args(args.deadline, args.late_penalty, args.late_cap, args.grace,
                                *(abspath(f) if f else None for f in (args.extensions, args.submitted_at)),
                                if_no_time=args.if_no_time)
    except LateInputError as exc:
        console.print(f"[red]grader grade: {escape(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return 2
    if args.require:
        from grader.doctor import require

        try:
            require(args.require, args.sandbox)
        except RuntimeError as exc:
            console.print(f"[red]{exc}[/red]", highlight=False)
            return 2
    options = GradeOptions(out=abspath(args.out), jobs=max(1, args.jobs), force=args.force,
                           modules=tuple(args.module) if args.module else MODULES, hidden=not args.public_only,
                           launcher=args.sandbox, call_timeout=args.call_timeout, import_timeout=args.import_timeout,
                           memory_mb=args.memory_mb, progress=not args.no_progress, device=args.device)
    try:
        if args.shard or args.roster:  # one machine's share of the class (grader/cluster/)
            from grader.cluster.commands import grade_sharded

            result = grade_sharded(args, [abspath(p) for p in args.submissions], options, console, late)
        else:
            result = grade([abspath(p) for p in args.submissions], options, console, late=late)
    except GradeError as exc:
        from grader.batch.results import printable

        console.print(f"[red]{escape(printable(str(exc), newlines=True))}[/red]", highlight=False, soft_wrap=True)
        return 2
    if args.gradebook:
        _to_gradebook(db_url(args.gradebook), options.out, console, fail_on_pending=False)
    return 0 if result.ok else 1


def _to_gradebook(db_url: str, folder: Path, console: Console, *, fail_on_pending: bool) -> int:
    from grader.integrations.gradebook import late_from_results, records_from_results, write_gradebook

    counts = write_gradebook(db_url, records_from_results(folder), late=late_from_results(folder))
    console.print(f"gradebook {db_url}: {counts['students']} students, {counts['cells']} grade cells")
    if counts["pending"]:
        console.print(f"[yellow]warning: {counts['pending']} GPU test grades are still pending (counted as 0 by "
                      "nbgrader export until `grader merge` fills them)[/yellow]")
        return 1 if fail_on_pending else 0
    return 0


def cmd_merge(args: argparse.Namespace, console: Console) -> int:
    """Combine a CPU run and a CUDA run into final results."""
    from grader.batch.merge import MergeError, markdown_summary, merge_runs, write_merged
    from grader.batch.results import render_summary

    try:
        results, instructor, merged = merge_runs(abspath(args.cpu), abspath(args.gpu))
    except MergeError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 2
    out = abspath(args.out)
    write_merged(out, results, instructor, merged)
    render_summary(merged.rows, console, title=f"Merged grades ({merged.filled} GPU test results filled in)")
    from grader.reports.feedback import write_and_report

    write_and_report(out, list(results), console)  # the students' pages of the merged results
    if args.markdown:
        with open(abspath(args.markdown), "a", encoding="utf-8") as f:
            f.write(markdown_summary(merged))
    code = 0
    if merged.pending:
        console.print(f"[yellow]warning: GPU tests still pending for {len(merged.pending)} submission(s): "
                      f"{', '.join(sorted(merged.pending))}; their points are neither given nor lost[/yellow]")
        code = 1 if args.fail_on_pending else 0
    if args.gradebook:
        code = max(code, _to_gradebook(db_url(args.gradebook), out, console, fail_on_pending=args.fail_on_pending))
    return code


def cmd_gradescope(args: argparse.Namespace, console: Console) -> int:
    from grader.integrations.gradescope import build_bundle

    if (code := _needs_instructor_repo("grader gradescope", console)) is not None:
        return code
    out = build_bundle(abspath(args.out))
    console.print(f"Gradescope autograder bundle written to {out} (upload it as the assignment's autograder)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Assignment kit: check, release, validate, grade.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {kit_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="grade your implementation with the public tests")
    p.add_argument("path", nargs="?", default=None, help="assignment folder or release copy (default: assignment/)")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    p.add_argument("--hidden", action="store_true", help="include the hidden tests (instructor repo only)")
    p.add_argument("--sandbox", action="store_true",
                   help="grade exactly as `grader grade` does: staged files, the sandbox, the same tests (slower)")
    p.add_argument("--sandbox-launcher", choices=("auto", "bubblewrap", "landlock", "rlimits"), default="auto",
                   help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--html", metavar="FILE", help="also write the feedback page (what passed and failed, with pictures)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("stubs", help="regenerate assignment/ from solutions/")
    p.set_defaults(func=cmd_stubs)

    p = sub.add_parser("release", help="write the student release, or --check that assignment/ is in sync")
    p.add_argument("out", nargs="?", help="output folder (must not exist or be empty)")
    p.add_argument("--check", action="store_true", help="fail if assignment/ differs from what would be generated")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("validate", help="prove the tests: pass on solutions, not attempted on stubs, mutants caught")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="mutants graded in parallel")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("grade", help="grade a batch of submissions, each in its own sandbox (public + hidden tests)")
    p.add_argument("submissions", nargs="+", help="directories, .zip, .tar.gz, or folders of them")
    p.add_argument("--out", required=True, help="results folder: grades.csv, students/<id>/results.json, "
                                                "instructor/ (instructor-only: see docs/ARCHITECTURE.md)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="submissions graded in parallel")
    p.add_argument("--force", action="store_true", help="regrade submissions that already have results")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module's tests (repeatable)")
    p.add_argument("--public-only", action="store_true", help="skip the hidden tests")
    p.add_argument("--sandbox", choices=("auto", "bubblewrap", "landlock", "rlimits"), default="auto",
                   help="sandbox launcher (auto: bubblewrap where usable, else landlock, else rlimits with a warning)")
    p.add_argument("--require", choices=("bubblewrap", "landlock"), default=None,
                   help="refuse to grade if the sandbox would be weaker than this (see `grader doctor`)")
    p.add_argument("--call-timeout", type=float, default=30.0, help="wall seconds per probe call")
    p.add_argument("--import-timeout", type=float, default=30.0, help="wall seconds to import one module")
    p.add_argument("--memory-mb", type=int, default=None, help="memory limit per sandbox in MiB (RLIMIT_DATA; default 4096)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: GPU tests recorded as pending; cuda: run only the GPU tests (on the CUDA runner)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook (sqlite:///gradebook.db)")
    _add_late_args(p)
    p.set_defaults(func=cmd_grade)
    _add_integration_parsers(sub)
    from grader.cluster.commands import add_parsers as _add_cluster_parsers  # grade --shard, combine, slurm, actions

    _add_cluster_parsers(sub)
    p = sub.add_parser("doctor", help="which sandbox layers work on this machine, and how to fix the missing ones")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_doctor)
    return parser


def _add_late_args(p: argparse.ArgumentParser) -> None:
    """`grader grade`'s late policy (grader.batch.late; README "Late policy")."""
    g = p.add_argument_group("late policy (README: Late policy)")
    g.add_argument("--deadline", metavar="ISO8601", help="the deadline, with a zone: 2026-12-01T23:59:00+01:00 or ...Z")
    g.add_argument("--late-penalty", metavar="RATE", help="share of the points earned taken per started day or hour "
                   "after deadline + grace: 10%%/day, 2%%/hour")
    g.add_argument("--late-cap", metavar="PERCENT", help="the most a penalty takes (default 100%%)")
    g.add_argument("--grace", metavar="DURATION", help="time after the deadline still on time: 15m, 1h (default 0)")
    g.add_argument("--extensions", metavar="CSV", help="columns student,extension: a new deadline (ISO 8601 with a "
                   "zone) or a duration added to the deadline (2d, 36h)")
    g.add_argument("--submitted-at", metavar="CSV", help="columns student,submitted_at (ISO 8601 with a zone), as "
                   "LMS exports give; git submissions without a row use the last commit touching the graded files")
    g.add_argument("--if-no-time", choices=("no-penalty", "cap"), default=None,
                   help="a submission whose time cannot be established (no row, uncommitted changes, unreadable "
                        "git): no penalty and a note (default), or the cap")


def cmd_doctor(args: argparse.Namespace, console: Console) -> int:
    from grader.doctor import diagnose, render

    report = diagnose()
    if args.json:
        import json

        print(json.dumps(report, indent=2))
    else:
        render(report, console)
    return 0


def _add_integration_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge", help="combine a CPU run and a CUDA run of the same submissions")
    p.add_argument("cpu", help="results folder of the CPU run")
    p.add_argument("gpu", help="results folder of the CUDA run (`grader grade --device cuda`); may be missing")
    p.add_argument("--out", required=True, help="folder for the merged results.json files and grades.csv")
    p.add_argument("--fail-on-pending", action="store_true", help="exit 1 if any GPU test is still pending")
    p.add_argument("--markdown", metavar="FILE", help="append a markdown score table (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("gradescope", help="build a Gradescope autograder bundle (setup.sh, run_autograder)")
    p.add_argument("out", help="the zip to write, e.g. autograder.zip")
    p.set_defaults(func=cmd_gradescope)

    p = sub.add_parser("classroom-payload", help="one student's results as GitHub Classroom's reporter payload")
    p.add_argument("results", help="a results folder written by `grader merge` (or `grader grade`)")
    p.add_argument("--student", help="the student to report (default: the folder's only one)")
    p.add_argument("--github-output", metavar="FILE", help="append result=PAYLOAD to this file ($GITHUB_OUTPUT); "
                   "else print the payload")
    p.set_defaults(func=cmd_classroom_payload)

    p = sub.add_parser("report", help="one self-contained HTML page on a graded class (instructor-only)")
    p.add_argument("results", help="a results folder written by `grader grade` (or `grader merge`)")
    p.add_argument("--out", required=True, help="the HTML file to write, e.g. report.html")
    p.add_argument("--compare", metavar="OLD", help="an earlier results folder of the same class: who changed score")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("similarity", help="which submissions share code (and which are close to the solutions)")
    p.add_argument("submissions", nargs="+", help="submissions or folders of them (as for `grader grade`)")
    p.add_argument("--out", required=True, help="the HTML file to write, e.g. similarity.html")
    p.add_argument("--threshold", type=float, default=0.5, help="flag pairs sharing at least this share (default 0.5)")
    p.add_argument("--top", type=int, default=20, help="pairs shown side by side (default 20)")
    p.set_defaults(func=cmd_similarity)

    p = sub.add_parser("export", help="write the scores into Canvas's gradebook-import CSV")
    p.add_argument("results", help="a results folder written by `grader grade` (or `grader merge`)")
    p.add_argument("--canvas", required=True, metavar="ROSTER.csv", help="the gradebook CSV Canvas exported")
    p.add_argument("--assignment", required=True, help='the Canvas column, "Name (assignment id)"')
    p.add_argument("--out", required=True, help="the CSV to import into Canvas")
    p.add_argument("--map", metavar="IDS.csv", help="columns student,canvas: kit student id -> Canvas login/SIS id")
    p.set_defaults(func=cmd_export)


def cmd_classroom_payload(args: argparse.Namespace, console: Console) -> int:
    """The base64 payload `classroom-resources/autograding-grading-reporter` decodes (see its module)."""
    from grader.integrations.classroom import PayloadError, student_payload, write_github_output

    try:
        student, payload, encoded = student_payload(abspath(args.results), args.student)
    except PayloadError as exc:
        console.print(f"[red]grader classroom-payload: {escape(str(exc))}[/red]", highlight=False)
        return 2
    score = sum(t["score"] for t in payload["tests"])
    if args.github_output:
        try:
            write_github_output(abspath(args.github_output), encoded)
        except OSError as exc:
            console.print(f"[red]grader classroom-payload: cannot write {escape(args.github_output)}: "
                          f"{escape(exc.strerror or str(exc))}[/red]", highlight=False)
            return 2
        console.print(f"Classroom payload for {escape(student)}: {score:g} / {payload['max_score']:g} points, "
                      f"{len(payload['tests'])} tests, status {payload['status']}", highlight=False)
    else:
        print(encoded)
    return 0


def cmd_similarity(args: argparse.Namespace, console: Console) -> int:
    from grader.reports.similarity import SimilarityError, write_similarity

    if not 0 < args.threshold <= 1:
        console.print("[red]grader similarity: --threshold is a share between 0 and 1[/red]")
        return 2
    try:
        result = write_similarity([abspath(p) for p in args.submissions], abspath(args.out), args.threshold, args.top)
    except SimilarityError as exc:
        console.print(f"[red]grader similarity: {exc}[/red]")
        return 2
    flagged = [p for p in result.pairs if p.score >= args.threshold]
    console.print(f"wrote {args.out}: {len(result.codes)} compared, {len(flagged)} pairs at or above "
                  f"{args.threshold:.0%}" + (f"; top: {flagged[0].a} ↔ {flagged[0].b} {flagged[0].score:.0%}" if flagged else ""))
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    from grader.integrations.canvas import ExportError, export_canvas

    try:
        result = export_canvas(abspath(args.results), abspath(args.canvas), args.assignment, abspath(args.out),
                               abspath(args.map) if args.map else None)
    except ExportError as exc:
        console.print(f"[red]grader export: {exc}[/red]")
        return 2
    console.print(f"wrote {args.out}: {len(result.matched)} students matched")
    for title, names in (("in the roster, with no result (left empty)", result.roster_without_result),
                         ("graded, but not in the roster (not exported)", result.results_without_roster)):
        if names:
            console.print(f"[yellow]{len(names)} {title}:[/yellow] " + ", ".join(names), markup=True)
    return 1 if result.results_without_roster else 0


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from grader.reports.classreport import ReportError, write_report

    try:
        data = write_report(abspath(args.results), abspath(args.out),
                            abspath(args.compare) if args.compare else None)
    except ReportError as exc:
        console.print(f"[red]grader report: {exc}[/red]")
        return 2
    console.print(f"wrote {args.out}: {len(data.students)} submissions, {len(data.tests)} tests"
                  + (f", {len(data.changes)} changed since {args.compare}" if args.compare else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.path is None:
        args.path = "assignment" if not (Path.cwd() / "assignment").is_dir() else str(Path.cwd() / "assignment")
    elif args.command == "check" and str(args.path) not in ("solutions", "assignment"):
        args.path = str(abspath(args.path))
    return args.func(args, Console())


if __name__ == "__main__":
    sys.exit(main())
