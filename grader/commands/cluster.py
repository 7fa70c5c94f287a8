"""Command-line glue for `grader.cluster`: ``grade --shard/--roster``, ``combine``, ``slurm``, ``actions``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from grader import MODULES

    grade = sub.choices["grade"]
    grade.add_argument("--shard", metavar="K/N", help="grade only shard K of N (a hash of the student id); "
                                                       "`grader combine` joins the shards")
    grade.add_argument("--roster", metavar="FILE", help="with --shard: every submission name of the class, one per "
                                                        "line (when this machine holds only its shard's submissions)")

    p = sub.add_parser("combine", help="join the shards of `grader grade --shard K/N` into one results folder")
    p.add_argument("out", help="the combined results folder (new, or an earlier combine's output)")
    p.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the --out folders of the N shards")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook")
    p.set_defaults(func=cmd_combine)

    p = sub.add_parser("slurm", help="write (and --submit) a Slurm array job grading N shards, plus a combine job")
    p.add_argument("submissions", nargs="+", help="directories, .zip, .tar.gz, or folders of them")
    p.add_argument("--out", required=True, help="DIR: shards in DIR/shards/K, combined results in DIR/combined, "
                                                "job scripts and logs in DIR/slurm")
    p.add_argument("--tasks", type=int, required=True, help="N: array tasks (shards)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: each task asks for a GPU (--gres) and grades only the GPU tests")
    p.add_argument("--submit", action="store_true", help="submit with sbatch (else only write the scripts)")
    p.add_argument("--partition", help="sbatch --partition")
    p.add_argument("--time", help="sbatch --time per task, e.g. 2:00:00")
    p.add_argument("--cpus-per-task", type=int, default=2, help="sbatch --cpus-per-task, also `grader grade -j`")
    p.add_argument("--mem", help="sbatch --mem per task, e.g. 16G")
    p.add_argument("--gres", help="sbatch --gres (default with --device cuda: gpu:1)")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="another sbatch option for both jobs, e.g. --sbatch-arg=--account=cs101 (repeatable)")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module's tests (repeatable)")
    p.add_argument("--sandbox", choices=("auto", "bubblewrap", "landlock", "rlimits"), default=None,
                   help="sandbox launcher of every task (default: grader grade's auto)")
    p.add_argument("--require", choices=("bubblewrap", "landlock"), default=None,
                   help="tasks refuse to grade below this sandbox level")
    p.add_argument("--grade-arg", action="append", default=[], metavar="ARG",
                   help="another `grader grade` option for every task, e.g. --grade-arg=--public-only (repeatable; "
                        "give files as absolute paths)")
    p.add_argument("--gradebook", metavar="DB_URL", help="the combine job also writes an nbgrader gradebook")
    p.add_argument("--assignment", metavar="NAME", help="every task grades this course.toml assignment (its modules, "
                   "maximum and late policy)")
    p.set_defaults(func=cmd_slurm)

    p = sub.add_parser("actions", help="write a GitHub Actions workflow grading an organisation's repositories "
                                       "in N matrix jobs, then combining them")
    p.add_argument("--org", required=True, help="the GitHub organisation holding the students' repositories")
    p.add_argument("--prefix", default="", help="only repositories whose name starts with this")
    p.add_argument("--shards", type=int, required=True, help="N: matrix jobs")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module's tests (repeatable)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: also grade the GPU tests, in N more matrix jobs on the course's self-hosted runner "
                        "labelled gpu, and merge them into the CPU grades (grader merge)")
    p.add_argument("--out", default=None, help="the file to write (default: .github/workflows/grade-class.yml "
                                               "under the current directory)")
    p.add_argument("--assignment", metavar="NAME", help="grade this course.toml assignment (its modules, maximum and "
                   "late policy)")
    p.set_defaults(func=cmd_actions)


def grade_sharded(args: argparse.Namespace, paths: list[Path], options: Any, console: Console,
                  late: Any = None) -> Any:
    """`grader grade --shard K/N [--roster FILE]` (called by `grader.commands.instructor.cmd_grade`)."""
    from grader.batch.options import UsageError
    from grader.cluster.shard import ShardError, grade_shard, parse_shard, read_roster
    from grader.commands.common import abspath

    if args.roster and not args.shard:
        raise UsageError("--roster needs --shard K/N")
    try:
        shard = parse_shard(args.shard)
        roster = read_roster(abspath(args.roster)) if args.roster else []
    except ShardError as exc:
        raise UsageError(str(exc)) from None
    return grade_shard(paths, options, shard, console, roster, late)


def cmd_combine(args: argparse.Namespace, console: Console) -> int:
    from grader.results.grades import render_summary
    from grader.cluster.combine import CombineError, combine
    from grader.commands.common import abspath, db_url
    from grader.commands.integrations import needs_nbgrader, to_gradebook

    if args.gradebook and (code := needs_nbgrader("grader combine", console)) is not None:
        return code
    out = abspath(args.out)
    try:
        result = combine(out, [abspath(d) for d in args.shards])
    except CombineError as exc:
        from grader.untrusted import MESSAGE_LIMIT, shown_markup

        console.print(f"[red]grader combine: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]\nnothing written",
                      highlight=False, soft_wrap=True)
        return 2
    render_summary(result.rows, console, title=f"Combined grades ({result.count} shards)")
    from grader.untrusted import shown

    for note in result.notes:
        console.print(shown(note), highlight=False, markup=False, soft_wrap=True)
    console.print(f"wrote {out}: {len(result.rows)} rows from {result.count} shard(s)"
                  + (f"; {len(result.errors)} not graded" if result.errors else "")
                  + (f"; {len(result.refused)} refused" if result.refused else ""), highlight=False)
    code = 0 if result.ok else 1
    if args.gradebook:
        code = max(code, to_gradebook(db_url(args.gradebook), out, console, fail_on_pending=False))
    return code


def cmd_slurm(args: argparse.Namespace, console: Console) -> int:
    from grader.cluster.slurm import SlurmError, SlurmJob, submit, write
    from grader.commands.common import abspath, db_url
    from grader.commands.integrations import needs_nbgrader

    if args.gradebook and (code := needs_nbgrader("grader slurm", console)) is not None:
        return code  # the combine job would fail at its very end: say it now
    if (code := _assignment_check(args, console, "grader slurm")) is not None:
        return code
    grade_args = [a for m in (args.module or []) for a in ("--module", m)]
    if args.assignment:
        grade_args += ["--assignment", args.assignment]
    if args.sandbox:
        grade_args += ["--sandbox", args.sandbox]
    if args.require:
        grade_args += ["--require", args.require]
    grade_args += args.grade_arg
    job = SlurmJob(submissions=[abspath(p) for p in args.submissions], out=abspath(args.out), tasks=args.tasks,
                   device=args.device, partition=args.partition, time=args.time, cpus=args.cpus_per_task,
                   mem=args.mem, gres=args.gres, grade_args=grade_args, sbatch_args=list(args.sbatch_arg),
                   gradebook=db_url(args.gradebook) if args.gradebook else None)
    try:
        paths = write(job)
        console.print(f"wrote {paths['grade']}, {paths['combine']} and {paths['submit']}", highlight=False)
        if not args.submit:
            console.print(f"submit with: {paths['submit']}", highlight=False)
            return 0
        array, combined = submit(job)
    except SlurmError as exc:
        console.print(f"[red]grader slurm: {escape(str(exc))}[/red]", highlight=False)
        return 2
    console.print(f"submitted array job {array} ({job.tasks} tasks) and combine job {combined} "
                  f"(after it): results in {job.combined}", highlight=False)
    print(f"{array} {combined}")
    return 0


def cmd_actions(args: argparse.Namespace, console: Console) -> int:
    from grader.cluster.actions import WORKFLOW_PATH, ActionsError, workflow, write_workflow
    from grader.commands.common import abspath

    if (code := _assignment_check(args, console, "grader actions")) is not None:
        return code
    try:
        text = workflow(args.org, args.prefix, args.shards, tuple(args.module or ()), device=args.device,
                        assignment=args.assignment or "")
        path = write_workflow(abspath(args.out or WORKFLOW_PATH), text)
    except ActionsError as exc:
        console.print(f"[red]grader actions: {escape(str(exc))}[/red]", highlight=False)
        return 2
    console.print(f"wrote {path}: commit it to the instructor repository, add the secret CLASS_TOKEN"
                  + (", register a self-hosted runner labelled gpu" if args.device == "cuda" else "")
                  + " and start it from the Actions tab (workflow_dispatch)", highlight=False)
    return 0


def _assignment_check(args: argparse.Namespace, console: Console, what: str) -> int | None:
    """Exit status 2 (said) when --assignment is not one of course.toml's, a --module is not in it, or
    --device cuda asks for GPU tests that do not count in it; None when the jobs may be written."""
    if not args.assignment:
        return None
    from grader.course.config import cli_assignment

    assignment = cli_assignment(args.assignment, console, what)
    if assignment is None:
        return 2
    outside = [m for m in args.module or [] if m not in assignment.modules]
    if outside:
        console.print(f"[red]{what}: --module {escape(', '.join(outside))}: not in assignment {assignment.name}[/red]",
                      highlight=False)
        return 2
    if args.device == "cuda" and not assignment.gpu_tests:
        console.print(f"[red]{what}: --device cuda: the GPU tests do not count in assignment {assignment.name} "
                      "(course.toml: gpu_tests = false)[/red]", highlight=False)
        return 2
    return None
