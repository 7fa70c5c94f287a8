"""The `grader` command: check, stubs, release, validate, grade (the work lives in their own modules)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT, MODULES, kit_version


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """A student grades their own implementation with the public tests."""
    from grader.report import render_check
    from grader.runner import run_suite, test_files
    from grader.target import TargetError, resolve_target

    try:
        folder = resolve_target(args.path)
    except TargetError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    modules = tuple(args.module) if args.module else MODULES
    files = test_files(modules, hidden=args.hidden)
    console.print(f"Checking {folder} with the {'public and hidden' if args.hidden else 'public'} tests "
                  f"(kit {kit_version()})", highlight=False)
    run = run_suite(folder, files)
    if not run.records:
        console.print("[red]the tests did not run:[/red]")
        console.print(run.log, markup=False)
        return 2
    if not run.meta.get("cuda"):
        console.print("No CUDA here: GPU tests are listed as pending (graded on the GPU runner).")
    render_check(run.records, console)
    if args.json:
        import json

        from grader.scoring import score, totals

        earned, possible, pending = totals(score(run.records))
        Path(args.json).write_text(json.dumps({"earned": earned, "possible": possible, "pending": pending,
                                               "tests": run.records}, indent=1))
    return 0


def cmd_stubs(args: argparse.Namespace, console: Console) -> int:
    """Regenerate assignment/ from solutions/."""
    from grader.release import MarkerError, write_assignment

    try:
        written = write_assignment(KIT_ROOT / "assignment")
    except MarkerError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    console.print(f"wrote {len(written)} files to assignment/")
    return 0


def cmd_release(args: argparse.Namespace, console: Console) -> int:
    from grader.release import MarkerError, build_release, check_assignment

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
        out = build_release(Path(args.out))
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

    modules = tuple(args.module) if args.module else MODULES
    result = validate(modules, jobs=args.jobs, console=console)
    console.print("[green]validate: OK[/green]" if result.ok else "[red]validate: FAILED[/red]")
    return 0 if result.ok else 1


def cmd_grade(args: argparse.Namespace, console: Console) -> int:
    """Instructor batch grading: every submission in its own sandbox, public + hidden tests."""
    from grader.grade import GradeError, GradeOptions, grade

    options = GradeOptions(out=Path(args.out), jobs=max(1, args.jobs), force=args.force,
                           modules=tuple(args.module) if args.module else MODULES, hidden=not args.public_only,
                           launcher=args.sandbox, call_timeout=args.call_timeout, import_timeout=args.import_timeout,
                           memory_mb=args.memory_mb, progress=not args.no_progress, device=args.device)
    try:
        result = grade([Path(p) for p in args.submissions], options, console)
    except GradeError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 2
    if args.gradebook:
        _to_gradebook(args.gradebook, Path(args.out), console, fail_on_pending=False)
    return 0 if result.ok else 1


def _to_gradebook(db_url: str, folder: Path, console: Console, *, fail_on_pending: bool) -> int:
    from grader.integrations.gradebook import records_from_results, write_gradebook

    counts = write_gradebook(db_url, records_from_results(folder))
    console.print(f"gradebook {db_url}: {counts['students']} students, {counts['cells']} grade cells")
    if counts["pending"]:
        console.print(f"[yellow]warning: {counts['pending']} GPU test grades are still pending (counted as 0 by "
                      "nbgrader export until `grader merge` fills them)[/yellow]")
        return 1 if fail_on_pending else 0
    return 0


def cmd_merge(args: argparse.Namespace, console: Console) -> int:
    """Combine a CPU run and a CUDA run into final results."""
    from grader.merge import MergeError, markdown_summary, merge_runs, write_merged
    from grader.results import render_summary

    try:
        results, instructor, merged = merge_runs(Path(args.cpu), Path(args.gpu))
    except MergeError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 2
    out = Path(args.out)
    write_merged(out, results, instructor, merged)
    render_summary(merged.rows, console, title=f"Merged grades ({merged.filled} GPU test results filled in)")
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as f:
            f.write(markdown_summary(merged))
    code = 0
    if merged.pending:
        console.print(f"[yellow]warning: GPU tests still pending for {len(merged.pending)} submission(s): "
                      f"{', '.join(sorted(merged.pending))}; their points are neither given nor lost[/yellow]")
        code = 1 if args.fail_on_pending else 0
    if args.gradebook:
        code = max(code, _to_gradebook(args.gradebook, out, console, fail_on_pending=args.fail_on_pending))
    return code


def cmd_gradescope(args: argparse.Namespace, console: Console) -> int:
    from grader.integrations.gradescope import build_bundle

    out = build_bundle(Path(args.out))
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
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
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
    p.add_argument("--out", required=True, help="results folder: <student>/results.json, grades.csv")
    p.add_argument("-j", "--jobs", type=int, default=2, help="submissions graded in parallel")
    p.add_argument("--force", action="store_true", help="regrade submissions that already have results")
    p.add_argument("--module", action="append", choices=MODULES, help="only this module's tests (repeatable)")
    p.add_argument("--public-only", action="store_true", help="skip the hidden tests")
    p.add_argument("--sandbox", choices=("auto", "bubblewrap", "rlimits"), default="auto",
                   help="sandbox launcher (auto: bubblewrap where usable, else rlimits with a warning)")
    p.add_argument("--call-timeout", type=float, default=30.0, help="wall seconds per probe call")
    p.add_argument("--import-timeout", type=float, default=30.0, help="wall seconds to import one module")
    p.add_argument("--memory-mb", type=int, default=None, help="memory limit per sandbox in MiB (RLIMIT_DATA; default 4096)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: GPU tests recorded as pending; cuda: run only the GPU tests (on the CUDA runner)")
    p.add_argument("--gradebook", metavar="DB_URL", help="also write the grades to an nbgrader gradebook (sqlite:///gradebook.db)")
    p.set_defaults(func=cmd_grade)
    _add_integration_parsers(sub)
    return parser


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.path is None:
        args.path = "assignment" if not (Path.cwd() / "assignment").is_dir() else str(Path.cwd() / "assignment")
    return args.func(args, Console())


if __name__ == "__main__":
    sys.exit(main())
