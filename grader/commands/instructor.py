"""Preparing and grading an assignment: `grader stubs`, `release`, `validate`, `grade`, `doctor`.

`grade` reads the late policy's inputs before anything is graded (bad ones: exit 2) and hands
the batch to `grader.batch.grade` (or, with `--shard`/`--roster`, to `grader.cluster`); the
other commands are thin wrappers around `grader.authoring.release`, `grader.authoring.validate` and `grader.sandbox.doctor`.
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
    from grader.testing.totals import MIN_MUTANTS_HIGH, MIN_MUTANTS_LOW, MUTANTS_PER_FUNCTION

    p = sub.add_parser("stubs", help="regenerate assignment/ from solutions/, and the totals the docs state from the tests",
                       description=STUBS)
    p.set_defaults(func=cmd_stubs)

    p = sub.add_parser("release", help="write the student release, or --check that assignment/ is in sync",
                       description=RELEASE)
    p.add_argument("out", nargs="?", metavar="OUT", help="output folder (must not exist or be empty)")
    p.add_argument("--check", action="store_true", help="fail (exit status 1), naming the file, if assignment/ differs "
                   "from what would be generated, a doc states other totals than the tests give, the notebooks' "
                   "layout is stale, or docs/COMMANDS.md differs from the command line")
    _add_assignment_arg(p, "release only this assignment of course.toml: its stubs, public tests, probes and "
                           "handout sections, renumbered")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("validate", help="prove the tests: pass on solutions, not attempted on stubs, mutants caught",
                       description=VALIDATE.format(per=MUTANTS_PER_FUNCTION, low=MIN_MUTANTS_LOW,
                                                                high=MIN_MUTANTS_HIGH))
    p.add_argument("--module", action="append", choices=MODULES, metavar="MODULE", help="only this module (repeatable)")
    p.add_argument("-j", "--jobs", type=int, default=2, metavar="N", help="mutants graded in parallel")
    p.add_argument("--mutant", "--explain", action="append", metavar="ID",
                   help="only this mutant or correct variant (module:name, repeatable): say which tests catch it "
                        "(or reject it), every test run to the end")
    p.add_argument("--refresh-fingerprints", action="store_true",
                   help="after a person checked the whole-copy mutants validate calls stale: record the reference "
                        "they now stand against (tests/mutants/), and stop")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("grade", help="grade a batch of submissions, each in its own sandbox (public + hidden tests)",
                       description=GRADE, epilog=GRADE_EXIT)
    p.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                   help="a student's folder, .zip, .tar.gz or .ipynb, or a folder of them (README: What a "
                        "submissions folder looks like)")
    p.add_argument("--out", required=True, metavar="DIR", help="results folder: grades.csv, students/<id>/results.json "
                   "and feedback.html, instructor/ (instructor-only: see docs/ARCHITECTURE.md, The results folder)")
    p.add_argument("-j", "--jobs", type=int, default=2, metavar="N",
                   help="submissions graded in parallel (each job slot costs about 110 MiB more: docs/INSTRUCTORS.md)")
    p.add_argument("--force", action="store_true", help="regrade submissions that already have results")
    p.add_argument("--module", action="append", choices=MODULES, metavar="MODULE",
                   help="only this module's tests (repeatable; within --assignment's modules)")
    p.add_argument("--public-only", action="store_true", help="skip the hidden tests")
    p.add_argument("--sandbox", choices=("auto", "bubblewrap", "landlock", "rlimits"), default="auto",
                   help="sandbox launcher (auto: bubblewrap where usable, else landlock where it gives the same "
                        "guarantees, else it refuses to grade and says why; rlimits, no filesystem isolation, only "
                        "when asked for by name, with a loud warning)")
    p.add_argument("--require", choices=("bubblewrap", "landlock"), default=None,
                   help="refuse to grade if the sandbox would be weaker than this (see `grader doctor`)")
    p.add_argument("--call-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="wall seconds per probe call (the submission's own code)")
    p.add_argument("--import-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="wall seconds to import one module")
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help="memory limit per sandbox in MiB (RLIMIT_DATA; default 4096)")
    from grader.testing.budget import DEFAULT_BUDGET, DEFAULT_WORKER_MEMORY_MB

    p.add_argument("--submission-budget", type=float, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help="CPU seconds of the trusted grader's own work per submission (decoding, checking); past it "
                        f"the submission scores what it earned so far, flagged partial (default {DEFAULT_BUDGET:g}; "
                        "0: none)")
    p.add_argument("--worker-memory", type=int, default=None, metavar="MB",
                   help="memory limit of each trusted worker in MiB (a cgroup, else RLIMIT_AS; default "
                        f"{DEFAULT_WORKER_MEMORY_MB}; 0: none); past it the submission scores what it earned so far, "
                        "flagged partial")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: GPU tests recorded as pending; cuda: run only the GPU tests (on a CUDA machine; then "
                        "`grader merge`)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook "
                   "(sqlite:///gradebook.db: one notebook per module, one grade cell per test)")
    _add_assignment_arg(p, "grade this assignment of course.toml: its modules, its maximum (without its GPU tests "
                           "where they do not count), its late policy (the late options below override it)")
    _add_late_args(p)
    p.set_defaults(func=cmd_grade)


STUBS = """\
Regenerates assignment/ from solutions/ (what lies between `### BEGIN SOLUTION` and `### END
SOLUTION` becomes `raise NotImplementedError()`, as nbgrader's ClearSolutions does), the notebooks'
cell layout (grader/notebooks/layout.json), every total the docs state from the tests (the
handout's section headers, the README's points and module counts, course.example.toml's table,
CONTRIBUTING's mutant table: `grader.authoring.totals_docs`), and docs/COMMANDS.md from this command line's
parser.

Run it after changing solutions/, the tests, the mutants or a command's help; never edit those
numbers or that page by hand.  Instructor repository only: in the student release it says so
(exit status 2)."""

RELEASE = """\
`grader release OUT` writes the student release: the stubs, the public tests and probes, grader/,
the handout, every benchmark the handout names (each with `--target`, default assignment/ there),
a notebook per module (docs/NOTEBOOKS.md), a student README (docs/STUDENT_README.md), a .gitignore
covering the folders that README creates, and the autograde workflow; never solutions, hidden
tests, mutants, variants or the kit's self-tests (checked before it returns).  With `--assignment
NAME`, that assignment of course.toml only (docs/INSTRUCTORS.md, Your course).

`grader release --check` fails, naming the file, if assignment/ is stale, a doc states a total the
tests no longer give, the notebooks' layout is stale, or docs/COMMANDS.md differs from the command
line: `grader stubs` fixes each.  Instructor repository only."""

VALIDATE = """\
Proves the tests: every graded test passes on the solutions and fails as "not attempted" on the
stubs, every mutant (tests/mutants/) is caught and every correct variant (tests/variants/) passes,
no whole-copy mutant was written against another reference, and every module has tests and
mutants (at least {per} per function the student writes, {low} to {high} per module).  It prints the counts, and its progress while it grades the
mutants and variants (a bar on a terminal, a line every 10% in a log).  It reads a snapshot of the
kit taken when it starts: edits made meanwhile are not in the run.

`--mutant M:NAME` grades one mutant (or correct variant) with every test run to the end and says
which tests caught it; `--refresh-fingerprints` records the reference a checked whole-copy mutant
now stands against.

How long: 5 minutes for all of 0.6.0's modules (twelve; 719 mutants, 137 variants) with `-j 2` on
the kit's quiet 2-core machine (0.6.0: each run forked from a process that ran the reference
solutions' tests first, so it starts with the expected values cached); a busy machine takes
several times that, an idle bigger one (`-j N`) less.  Instructor repository only."""

GRADE = """\
Grades each submission with the public and hidden tests, each in its own sandbox
(docs/ARCHITECTURE.md, The sandbox's guarantees; `grader doctor` says which layers this machine
has, `--require` refuses to grade below a level).  A submission is a student's folder, `.zip`,
`.tar.gz` or notebook, named by the student's id (README: What a submissions folder looks like).
Paths are relative to where you run it; a path that does not exist is an error (exit status 2,
nothing written); an empty submission is reported as empty.  Student ids are injective (an unsafe
name gets `~hash`, and the batch lists each such name with its id at its end); two submissions with
one id are both refused.

It writes `DIR/grades.csv` (points; formula cells quoted), `DIR/students/<id>/results.json`
(Gradescope's format, what the student sees; hidden tests' details hidden),
`DIR/students/<id>/feedback.html` (the student's feedback page: first the score, with a late
penalty as raw, penalty and final together, and what failed, each test a link to its entry; then
per module what passed and failed, with pictures from the trusted tests' data: optimizer
trajectories against torch.optim with the first divergence marked, `get_batch`'s start counts
against uniform, FLOP counts against torch's counter; hidden tests show their outcome only;
`grader merge` writes it too, the student workflow uploads it as the `feedback` artifact) and,
instructor-only, `DIR/instructor/students/<id>/{instructor.json,sandbox.log,tests.log}`
(`tests.log`: that student's pytest output, full tracebacks included) and
`DIR/instructor/logs/worker-N.log` (full tracebacks of every failed test, hidden ones included,
each student's run under a `=== <id> ===` header; `forkserver.log`: the trusted fork-server's
start-up); then it prints a summary table.

Resumable: a submission is kept when the same suite with the same settings graded these very files
(`grader.batch.suite`: the bytes of the tests, probes and grader, the settings that change a
verdict; a new hidden test or `--device cuda` regrades), `--force` regrades anyway; a regrade says
why (which setting changed, the tests or grader, the submission's files), and the grades before a
batch that changed them stay in `DIR/instructor/previous` (`grader report DIR --out r.html --compare
DIR/instructor/previous`).

The trusted side has budgets too: `--submission-budget` CPU seconds of the grader's own work per
submission (the submission's own code has `--call-timeout` per call), and `--worker-memory` MiB per
trusted worker; a submission that exhausts either scores what it earned so far, flagged `partial`
(results.json, grades.csv, the summary and the class report), and the batch goes on
(docs/ARCHITECTURE.md, step 3).

`--device cuda` on a CUDA machine runs only the GPU tests: `grader merge` joins that run to the
CPU run (docs/INSTRUCTORS.md, GPU tests).  `--shard K/N` grades one machine's share of the class,
`grader combine` joins the shares.  The late policy options: docs/INSTRUCTORS.md, Late policy."""

GRADE_EXIT = """\
Exit status: 0 all graded (rejected and empty submissions count as graded: they have a result), 1
some could not be graded or were refused (colliding ids), 2 nothing was done (a path that does not
exist, no submissions, a bad late-policy input, the grader could not start)."""

DOCTOR = """\
Says which sandbox layers work on this machine (bubblewrap with or without a user namespace, the
Landlock ABI, seccomp, the uid drop, memory cgroups, CUDA inside the sandbox, what is left open
between sandboxes), which launcher `grader grade --sandbox auto` picks, and the one-line fix for
each missing layer.  Run it on every machine that grades: a Slurm compute node, the GPU runner,
a PrairieLearn or Gradescope image.  What each layer guarantees: docs/ARCHITECTURE.md, The
sandbox's guarantees."""


def _add_assignment_arg(p: argparse.ArgumentParser, what: str) -> None:
    """`--assignment NAME` (grader.course.config; default: the only assignment, or the whole kit without course.toml)."""
    p.add_argument("--assignment", metavar="NAME", default=None,
                   help=f"{what} (default: the only one; without course.toml the whole kit)")


def _add_late_args(p: argparse.ArgumentParser) -> None:
    """`grader grade`'s late policy (grader.course.late; docs/INSTRUCTORS.md, "Late policy")."""
    g = p.add_argument_group("late policy (docs/INSTRUCTORS.md: Late policy)")
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
    p = sub.add_parser("doctor", help="which sandbox layers work on this machine, and how to fix the missing ones",
                       description=DOCTOR)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_doctor)


def cmd_stubs(args: argparse.Namespace, console: Console) -> int:
    """Regenerate assignment/ from solutions/, and the totals the docs state (`grader.authoring.totals_docs`)."""
    from grader.course.stubs import MarkerError, write_assignment
    from grader.testing.totals import TotalsError
    from grader.authoring.totals_docs import UnknownMark, unmarked_problems, write_docs

    if (code := needs_instructor_repo("grader stubs", console)) is not None:
        return code
    try:
        written = write_assignment(KIT_ROOT / "assignment")
        from grader.notebooks.cells import write_layout

        if write_layout():  # the notebooks' cells (grader/notebooks/layout.json), from the same stubs
            written.append(KIT_ROOT / "grader" / "notebooks" / "layout.json")
        docs = write_docs()
    except (MarkerError, TotalsError, UnknownMark) as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    for problem in unmarked_problems():  # (never rewritten: a person decides)
        console.print(f"[yellow]{problem}[/yellow]", highlight=False, soft_wrap=True)
    from grader.commands import reference

    commands = reference.write(args.grader_parser)  # docs/COMMANDS.md, from the parser `grader.cli` built
    console.print(f"wrote {len(written)} files to assignment/"
                  + (f"; the totals in {', '.join(docs)}" if docs else "; the docs' totals are up to date")
                  + (f"; {reference.REL} from the command line" if commands else ""), highlight=False)
    return 0


def cmd_release(args: argparse.Namespace, console: Console) -> int:
    from grader.authoring.release import build_release
    from grader.course.stubs import MarkerError, check_assignment
    from grader.testing.totals import TotalsError, counted

    if (code := needs_instructor_repo("grader release", console)) is not None:
        return code
    from grader.course.config import cli_assignment, load_course

    assignment = None
    if not args.check and (assignment := cli_assignment(args.assignment, console, "grader release")) is None:
        return 2
    try:
        if args.check:
            from grader.authoring.totals_docs import stale_docs

            from grader.notebooks.build import check_notebooks

            from grader.commands import reference

            problems = [f"{p} (run `grader stubs`)" for p in check_assignment()] + stale_docs() + check_notebooks() \
                + reference.stale(args.grader_parser)
            for p in problems:
                console.print(f"[red]{p}[/red]", highlight=False)
            if not problems:
                console.print("assignment/ is in sync with solutions/, the docs' totals with the tests, and "
                              f"{reference.REL} with the command line")
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
    from grader.authoring.validate import validate

    if (code := needs_instructor_repo("grader validate", console)) is not None:
        return code
    if args.refresh_fingerprints:
        from grader.authoring.mutants import refresh_fingerprints

        changed = refresh_fingerprints(tuple(args.module) if args.module else MODULES)
        console.print(f"recorded the reference's fingerprint in {len(changed)} whole-copy mutant(s)"
                      + (f": {', '.join(changed)}" if changed else " (all were up to date)"), highlight=False)
        return 0
    if args.mutant:
        from grader.authoring.validate import explain

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
    from grader.course.late import LateInputError, policy_from_args
    from grader.course.config import cli_assignment

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
        from grader.sandbox.doctor import require

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
            from grader.commands.cluster import grade_sharded

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
    from grader.sandbox.doctor import diagnose, render

    report = diagnose()
    if args.json:
        import json

        print(json.dumps(report, indent=2))
    else:
        render(report, console)
    return 0
