"""Preparing and grading an assignment: `grader stubs`, `release`, `validate`, `grade`, `doctor`.

`grade` reads the late policy's inputs before anything is graded (bad ones: exit 2) and hands
the batch to `grader.batch.grade` (or, with `--shard`/`--roster`, to `grader.cluster`); the
other commands are thin wrappers around `grader.release`, `grader.validate` and `grader.doctor`.
All but `doctor` need the instructor repository.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader import KIT_ROOT, MODULES
from grader.commands.common import abspath, db_url, needs_instructor_repo


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`grader stubs`, `release`, `validate`, `grade` (`doctor` is registered last: `add_doctor_parser`)."""
    p = sub.add_parser("stubs", help="regenerate assignment/ from solutions/, and the totals the docs state from the tests")
    p.set_defaults(func=cmd_stubs)

    p = sub.add_parser("release", help="write the student release, or --check that assignment/ is in sync")
    p.add_argument("out", nargs="?", help="output folder (must not exist or be empty)")
    p.add_argument("--check", action="store_true", help="fail if assignment/ differs from what would be generated, or "
                                                        "a doc states other totals than the tests give")
    _add_assignment_arg(p, "release only this assignment of course.toml: its stubs, public tests, probes and "
                           "handout sections, renumbered")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("validate", help="prove the tests: pass on solutions, not attempted on stubs, mutants caught")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="mutants graded in parallel")
    p.add_argument("--mutant", "--explain", action="append", metavar="ID",
                   help="only this mutant or correct variant (module:name, repeatable): say which tests catch it "
                        "(or reject it), every test run to the end")
    p.add_argument("--refresh-fingerprints", action="store_true",
                   help="after a person checked the whole-copy mutants validate calls stale: record the reference "
                        "they now stand against (tests/mutants/), and stop")
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
    from grader.batch.budget import DEFAULT_BUDGET, DEFAULT_WORKER_MEMORY_MB

    p.add_argument("--submission-budget", type=float, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help="CPU seconds of the trusted grader's own work per submission; past it the submission scores "
                        f"what it earned so far, flagged partial (default {DEFAULT_BUDGET:g}; 0: none)")
    p.add_argument("--worker-memory", type=int, default=None, metavar="MB",
                   help="memory limit of each trusted worker in MiB (a cgroup, else RLIMIT_AS; default "
                        f"{DEFAULT_WORKER_MEMORY_MB}; 0: none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: GPU tests recorded as pending; cuda: run only the GPU tests (on the CUDA runner)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook (sqlite:///gradebook.db)")
    _add_assignment_arg(p, "grade this assignment of course.toml: its modules, its maximum (without its GPU tests "
                           "where they do not count), its late policy (the late options below override it)")
    _add_late_args(p)
    p.set_defaults(func=cmd_grade)


def _add_assignment_arg(p: argparse.ArgumentParser, what: str) -> None:
    """`--assignment NAME` (grader.course; default: the only assignment, or the whole kit without course.toml)."""
    p.add_argument("--assignment", metavar="NAME", default=None,
                   help=f"{what} (default: the only one; without course.toml the whole kit)")


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


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:
    """`grader doctor` (listed after the cluster commands in `grader --help`)."""
    p = sub.add_parser("doctor", help="which sandbox layers work on this machine, and how to fix the missing ones")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_doctor)


def cmd_stubs(args: argparse.Namespace, console: Console) -> int:
    """Regenerate assignment/ from solutions/, and the totals the docs state (`grader.totals_docs`)."""
    from grader.stubs import MarkerError, write_assignment
    from grader.totals import TotalsError
    from grader.totals_docs import write_docs

    if (code := needs_instructor_repo("grader stubs", console)) is not None:
        return code
    try:
        written = write_assignment(KIT_ROOT / "assignment")
        from grader.notebooks.cells import write_layout

        if write_layout():  # the notebooks' cells (grader/notebooks/layout.json), from the same stubs
            written.append(KIT_ROOT / "grader" / "notebooks" / "layout.json")
        docs = write_docs()
    except (MarkerError, TotalsError) as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    console.print(f"wrote {len(written)} files to assignment/"
                  + (f"; the totals in {', '.join(docs)}" if docs else "; the docs' totals are up to date"),
                  highlight=False)
    return 0


def cmd_release(args: argparse.Namespace, console: Console) -> int:
    from grader.release import build_release
    from grader.stubs import MarkerError, check_assignment
    from grader.totals import TotalsError, counted

    if (code := needs_instructor_repo("grader release", console)) is not None:
        return code
    from grader.course import cli_assignment, load_course

    assignment = None
    if not args.check and (assignment := cli_assignment(args.assignment, console, "grader release")) is None:
        return 2
    try:
        if args.check:
            from grader.totals_docs import stale_docs

            from grader.notebooks.build import check_notebooks

            problems = [f"{p} (run `grader stubs`)" for p in check_assignment()] + stale_docs() + check_notebooks()
            for p in problems:
                console.print(f"[red]{p}[/red]", highlight=False)
            if not problems:
                console.print("assignment/ is in sync with solutions/, and the docs' totals with the tests")
            return 1 if problems else 0
        if not args.out:
            console.print("[red]grader release needs OUT (or --check)[/red]")
            return 2
        out = build_release(abspath(args.out), assignment, "" if assignment.default else load_course().name)
    except (MarkerError, TotalsError) as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    except FileExistsError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 2
    console.print(f"student release written to {out}" + ("" if assignment.default else
                  f" (assignment {assignment.name}: {counted(len(assignment.modules), 'module')}"
                  + (f", carrying over {', '.join(assignment.carried)}" if assignment.carried else "") + ")"),
                  highlight=False)
    console.print(f"before you publish it: {out / 'README.md'}, *How to hand in*: keep the way your course collects "
                  "the work, delete the other and the note for instructors", highlight=False, soft_wrap=True)
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grader.validate import validate

    if (code := needs_instructor_repo("grader validate", console)) is not None:
        return code
    if args.refresh_fingerprints:
        from grader.mutants import refresh_fingerprints

        changed = refresh_fingerprints(tuple(args.module) if args.module else MODULES)
        console.print(f"recorded the reference's fingerprint in {len(changed)} whole-copy mutant(s)"
                      + (f": {', '.join(changed)}" if changed else " (all were up to date)"), highlight=False)
        return 0
    if args.mutant:
        from grader.validate import explain

        ok = explain(args.mutant, jobs=args.jobs, console=console)
        console.print("[green]validate: OK[/green]" if ok else "[red]validate: FAILED[/red]")
        return 0 if ok else 1
    modules = tuple(args.module) if args.module else MODULES
    result = validate(modules, jobs=args.jobs, console=console)
    console.print("[green]validate: OK[/green]" if result.ok else "[red]validate: FAILED[/red]")
    return 0 if result.ok else 1


def cmd_grade(args: argparse.Namespace, console: Console) -> int:
    """Instructor batch grading: every submission in its own sandbox, public + hidden tests.

    Exit status: 0 all graded (rejected and empty submissions count as graded: they have a
    result), 1 some could not be graded or were refused (colliding ids), 2 nothing was done
    (a path that does not exist, no submissions, the grader could not start)."""
    from grader.batch.grade import grade
    from grader.batch.options import GradeError, GradeOptions
    from grader.batch.late import LateInputError, policy_from_args
    from grader.course import cli_assignment

    if (assignment := cli_assignment(args.assignment, console, "grader grade")) is None:
        return 2
    modules = assignment.modules
    if args.module:  # --module narrows the assignment to some of its modules
        outside = [m for m in args.module if m not in modules]
        if outside:
            console.print(f"[red]grader grade: --module {', '.join(outside)}: not in assignment {assignment.name} "
                          f"({', '.join(modules)})[/red]", highlight=False)
            return 2
        modules = tuple(m for m in modules if m in args.module)
    if args.device == "cuda" and not assignment.gpu_tests:
        console.print(f"[red]grader grade: --device cuda: the GPU tests do not count in assignment {assignment.name} "
                      "(course.toml: gpu_tests = false): there is nothing to grade on a GPU[/red]", highlight=False)
        return 2
    late_flags = {"deadline": args.deadline, "penalty": args.late_penalty, "cap": args.late_cap, "grace": args.grace,
                  "extensions": abspath(args.extensions) if args.extensions else None, "if_no_time": args.if_no_time}
    # course.toml's policy, each flag given overriding its part (without course.toml: the flags alone, as ever)
    late_args = {k: (v if v is not None else assignment.late_args()[k]) for k, v in late_flags.items()}
    try:  # the late policy's inputs are read now: bad ones stop everything before grading (exit 2)
        late = policy_from_args(late_args["deadline"], late_args["penalty"], late_args["cap"], late_args["grace"],
                                late_args["extensions"], abspath(args.submitted_at) if args.submitted_at else None,
                                if_no_time=late_args["if_no_time"])
    except LateInputError as exc:
        from grader.untrusted import MESSAGE_LIMIT, shown_markup

        console.print(f"[red]grader grade: {shown_markup(exc, MESSAGE_LIMIT)}[/red]", highlight=False, soft_wrap=True)
        return 2
    if args.gradebook:  # checked before grading, not after an hour of it
        from grader.commands.integrations import needs_nbgrader

        if (code := needs_nbgrader("grader grade", console)) is not None:
            return code
    if args.require:
        from grader.doctor import require

        try:
            require(args.require, args.sandbox)
        except RuntimeError as exc:
            console.print(f"[red]{exc}[/red]", highlight=False)
            return 2
    options = GradeOptions(out=abspath(args.out), jobs=max(1, args.jobs), force=args.force,
                           modules=modules, hidden=not args.public_only, assignment=assignment.name,
                           gpu_tests=assignment.gpu_tests,
                           launcher=args.sandbox, call_timeout=args.call_timeout, import_timeout=args.import_timeout,
                           memory_mb=args.memory_mb, progress=not args.no_progress, device=args.device,
                           submission_budget=args.submission_budget, worker_memory_mb=args.worker_memory)
    try:
        if args.shard or args.roster:  # one machine's share of the class (grader/cluster/)
            from grader.cluster.commands import grade_sharded

            result = grade_sharded(args, [abspath(p) for p in args.submissions], options, console, late)
        else:
            result = grade([abspath(p) for p in args.submissions], options, console, late=late)
    except GradeError as exc:
        from grader.untrusted import MESSAGE_LIMIT, shown_markup

        console.print(f"[red]{shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False, soft_wrap=True)
        return 2
    if args.gradebook:
        from grader.commands.integrations import to_gradebook

        to_gradebook(db_url(args.gradebook), options.out, console, fail_on_pending=False)
    return 0 if result.ok else 1


def cmd_doctor(args: argparse.Namespace, console: Console) -> int:
    from grader.doctor import diagnose, render

    report = diagnose()
    if args.json:
        import json

        print(json.dumps(report, indent=2))
    else:
        render(report, console)
    return 0
