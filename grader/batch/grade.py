"""`grader grade`: batch grading of submissions, each in its own sandbox.

    grader grade SUBMISSION... --out DIR [-j N] [--force] [--module M]...

The parent process resolves every path against the caller's working directory (before any
process changes directory), finds the submissions (directories, ``.zip``, ``.tar.gz``, or
folders of them; the student id is the name, see `grader.intake.discover.student_id`), refuses the
batch when a path does not exist (exit status 2, nothing written), refuses both submissions of
a colliding id, skips those already graded (a valid results.json for the same submission
content and kit version; ``--force`` regrades), and hands the rest to N long-lived *trusted*
worker processes (`grader.batch.trusted`, forked from one warmed-up fork-server,
`grader.batch.forkserver`).  Each trusted worker grades submission after submission by running
the public and hidden tests in-process (`pytest.main`, test modules and memoised expected values
reused) with ``--backend sandbox``; its sandboxes are forks of a pre-imported zygote where the
machine allows (`grader.sandbox.zygote`; each worker's zygote a fork of the batch's mother
zygote), so no submission pays for a torch import, and the batch pays its start-up once.

Per submission, written atomically (results.json last, so its presence means "done"), under
the layout of `grader.results.layout.Layout`: ``DIR/students/<id>/results.json`` (Gradescope format,
what the student sees), ``DIR/instructor/students/<id>/instructor.json`` (full messages of
every test, hidden ones included; sandbox statistics; timings) and
``DIR/instructor/students/<id>/sandbox.log`` (the submission's captured output, capped, control
characters escaped).  For the batch: ``DIR/grades.csv``, a summary table, and the trusted
workers' logs ``DIR/instructor/logs/worker-<n>.log`` (pytest's output: full tracebacks of
every failed test, hidden ones included; instructor-only).  An interrupted batch (even
``kill -9``) is resumed by running the same command again: only what is missing is graded.

A submission from which nothing could be taken is reported as *empty* (no test is run; every
test not attempted); an archive that cannot be read safely is *rejected* (nothing is run); one
that exhausts the trusted side's budgets (`grader.testing.budget`: the worker's CPU time per
submission, its memory; or whose worker died twice) is *partial*: the tests that ended score,
every other one is not graded, and the batch goes on with a fresh worker.

Determinism: tests run in a fixed order, every test starts from RNG seeds derived from its
node id, hypothesis is derandomised (no example database, no deadline) and the sandbox runs
torch single-threaded; scores never depend on timing except through the (generous) per-call
timeouts and the trusted side's budget (CPU seconds, which a busy machine does not inflate, far
above what an honest submission needs).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from grader import KIT_ROOT, kit_version
from grader.intake.discover import SUBMISSIONS_LAYOUT, Discovery, Source, discover, fingerprint
from grader.results.grades import batch_rows, grades_csv, render_summary
from grader.files import write_atomic
from grader.results.layout import Layout
from grader.batch.options import BatchResult, GradeOptions, Outcome, UsageError
from grader.batch.pool import run_pool
from grader.results.results_json import load_results
from grader.batch.suite import suite_digest, suite_settings, why_regraded
from grader.untrusted import shown, shown_markup


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp() -> None:
    """Remove work folders left by grader processes that were killed (their owner's pid is gone: the
    folder's owner file, `grader.sandbox.scratch.owned_tempdir`; in older names, the pid after the prefix)."""
    from grader.sandbox.scratch import owner_alive

    tmp = Path(tempfile.gettempdir())
    for prefix in ("kit-grade-", "kit-progress-", "kit-bundle-", "kit-sandbox-tmp-", "kit-inbox-"):
        for d in tmp.glob(prefix + "*"):
            if not d.is_dir() or d.is_symlink() or d.stat().st_uid != os.geteuid():
                continue
            alive = owner_alive(d)
            parts = d.name[len(prefix):].split("-")
            if alive is None and parts and parts[0].isdigit():
                alive = _pid_alive(int(parts[0]))
            if alive is False:
                shutil.rmtree(d, ignore_errors=True)


# -- the parent ----------------------------------------------------------------------------

def already_graded(source: Source, out: Path, options: GradeOptions) -> dict[str, Any] | None:
    """The existing results.json when it is complete and for this very submission, graded by this very
    suite with these settings (`grader.batch.suite`: the tests', probes' and grader's bytes, the
    settings that change a verdict), else None."""
    return earlier_grade(source, out, options)[0]


def earlier_grade(source: Source, out: Path, options: GradeOptions,
                  last: Any = None) -> tuple[dict[str, Any] | None, str]:
    """(`already_graded`'s document, "") when it is kept; else (None, why it is graded again), the why
    "" for a submission never graded here.  `last`: the previous batch's ``instructor/suite.json``."""
    layout = Layout(out)
    if not layout.results(source.student).exists() and not layout.instructor(source.student).exists():
        return None, ""
    doc = load_results(layout.results(source.student))
    try:
        instructor = json.loads(layout.instructor(source.student).read_text())
    except (OSError, ValueError):
        instructor = None
    if doc is None or not isinstance(instructor, dict):
        return None, "its earlier results are incomplete (an interrupted batch)"
    if not options.suite or instructor.get("suite") != options.suite:
        # another suite, other settings (--device, --module, a new test...): grade again
        return None, why_regraded(instructor.get("suite"), last, options.suite, suite_settings(options))
    if doc["extra_data"].get("submission", {}).get("sha256") != fingerprint(source):
        return None, "the submission's files changed"
    return doc, ""


def _say_regrades(regraded: dict[str, list[str]], console: Any) -> None:
    """One line per reason a result graded before is graded again."""
    for why, students in sorted(regraded.items()):
        names = ", ".join(shown_markup(s) for s in students[:8]) + (f" and {len(students) - 8} more"
                                                                     if len(students) > 8 else "")
        console.print(f"[yellow]regrading {len(students)} graded before ({shown_markup(why)}): {names}[/yellow]",
                      highlight=False, soft_wrap=True)


def _say_renamed(sources: list[Source], console: Any) -> None:
    """Each submission whose name is not its student id (`grader.intake.discover.student_id`), once."""
    renamed = [s for s in sources if "~" in s.student]  # (never in a name kept as its own id)
    if renamed:
        console.print(f"{len(renamed)} submission name(s) made into safe student ids (the folders under "
                      "students/ and grades.csv use the id):", highlight=False)
    for s in renamed:
        console.print(f"  {shown_markup(s.path.name)} -> {shown_markup(s.student)}", highlight=False, soft_wrap=True)


def grade(paths: list[Path], options: GradeOptions, console: Any = None,
          select: Callable[[Discovery], Discovery] | None = None, late: Any = None) -> BatchResult:
    """Grade a batch; returns what happened to each submission (results are on disk).

    Raises UsageError, before writing anything, when a path does not exist or is not a
    submission.  Paths are resolved against this process's working directory here, before any
    worker (whose working directory is the kit root) sees them.
    """
    from dataclasses import replace

    from grader.console import output_console

    console = console or output_console(stderr=True)
    t0 = time.monotonic()
    result = BatchResult()
    paths = [Path(os.path.abspath(Path(p).expanduser())) for p in paths]
    options = replace(options, out=Path(os.path.abspath(Path(options.out).expanduser())))
    options = replace(options, suite=suite_digest(options))
    out = options.out
    layout = Layout(out)
    found = _discover_batch(paths, layout, select)
    out.mkdir(parents=True, exist_ok=True)
    clean_stale_temp()
    _clean_half_written(out)
    result.problems = found.warnings + [f"{src.path}: {why}" for src, why in found.refused]
    _say_found(found, console, result)
    sources = found.sources
    todo, regraded = _to_grade(sources, options, result)
    old_grades = layout.grades.read_text(encoding="utf-8") if layout.grades.is_file() else ""
    staging = layout.stash_previous()
    write_atomic(out / "instructor" / "suite.json",
                 json.dumps({"suite": options.suite, "settings": suite_settings(options)}, indent=1) + "\n")
    kept = len(sources) - len(todo)
    console.print(f"{len(sources)} submission(s): {len(todo)} to grade"
                  + (f", {kept} already graded (--force regrades)" if kept else "")
                  + (f", {len(found.refused)} refused (colliding student ids)" if found.refused else "")
                  + f"; kit {kit_version()}, {options.jobs} job(s)", highlight=False, soft_wrap=True)
    _say_regrades(regraded, console)
    if options.hidden and not any((KIT_ROOT / "tests" / "hidden").glob("test_*.py")):
        console.print("public tests only: the hidden tests are not in this copy of the kit", highlight=False)
    join = run_pool(todo, options, console, result) if todo else None
    try:  # the reports are written while the pool's processes end
        _write_reports(found, options, layout, console, result, late, (staging, old_grades, bool(regraded)))
        result.seconds = time.monotonic() - t0
        _say_written(found, layout, console, result, late)
    finally:
        if join is not None:
            join()
    return result


def _discover_batch(paths: list[Path], layout: Layout, select: Callable[[Discovery], Discovery] | None) -> Discovery:
    """The submissions `paths` name (with `select`: this shard's share), or UsageError before anything is written."""
    out = layout.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if layout.is_old_layout():
        raise UsageError(f"--out {out}: holds results of an older kit (DIR/<student>/results.json); "
                         "use a new folder")
    found = discover(paths, exclude=[out])
    if found.errors:
        raise UsageError("nothing graded, nothing written:\n  " + "\n  ".join(shown(e) for e in found.errors)
                         + "\n" + SUBMISSIONS_LAYOUT)
    if not found.sources and not found.refused:
        raise UsageError("no submissions found in " + ", ".join(shown(p) for p in paths) + "\n" + SUBMISSIONS_LAYOUT)
    if select is not None:  # `--shard K/N` (grader.cluster.shard): this machine's share of the class
        found = select(found)
    return found


def _clean_half_written(out: Path) -> None:
    for tmp in out.glob("**/.*.tmp"):  # half-written files of a grader that was killed
        pid = tmp.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not _pid_alive(int(pid)):
            tmp.unlink(missing_ok=True)


def _say_found(found: Discovery, console: Any, result: BatchResult) -> None:
    """Discovery's warnings, and each refused submission (an outcome of its own)."""
    for w in found.warnings:
        console.print(f"[yellow]{shown_markup(w)}[/yellow]", highlight=False, soft_wrap=True)
    for src, why in found.refused:
        console.print(f"[bold red]REFUSED {shown_markup(src.path)}: {shown_markup(why)}[/bold red]",
                      highlight=False, soft_wrap=True)
        result.outcomes.append(Outcome(src.student, "refused", message=why))


def _to_grade(sources: list[Source], options: GradeOptions, result: BatchResult) -> tuple[list[Source], dict[str, list[str]]]:
    """The submissions to grade (the others were graded before with this suite: kept), and those
    regraded, by why."""
    todo: list[Source] = []
    regraded: dict[str, list[str]] = {}
    try:
        last = json.loads((options.out / "instructor" / "suite.json").read_text())
    except (OSError, ValueError):
        last = None
    for src in sources:
        doc, why = earlier_grade(src, options.out, options, last)
        if doc is not None and not options.force:
            result.outcomes.append(Outcome(src.student, "kept"))
            continue
        todo.append(src)
        if doc is not None or why:
            regraded.setdefault(why or "--force", []).append(src.student)
    return todo, regraded


def _write_reports(found: Discovery, options: GradeOptions, layout: Layout, console: Any, result: BatchResult,
                   late: Any, previous: tuple[Any, str, bool]) -> None:
    """The late policy, grades.csv and the summary, the previous grades kept, the feedback pages."""
    from grader.results.late_batch import apply_policy  # `late` (a grader.course.late.LatePolicy, or None) sets the final scores

    sources = found.sources
    staging, old_grades, regraded = previous
    apply_policy(late, sources, layout, console, refused=[src for src, _ in found.refused])
    # grades.csv and the summary cover every submission of this batch, refused ones included
    errors = {o.student: o.message for o in result.outcomes if o.status == "error"}
    result.rows = batch_rows(layout, [src.student for src in sources], errors,
                             [(src.student, why) for src, why in found.refused])
    write_atomic(layout.grades, grades_csv(result.rows, options.modules if options.assignment else None))
    if layout.keep_previous(staging, old_grades):
        console.print(f"the grades before this batch are kept in {shown_markup(layout.previous)} (`grader report "
                      f"{shown_markup(layout.out)} --out report.html --compare {shown_markup(layout.previous)}`)",
                      highlight=False, soft_wrap=True)
    elif regraded:
        console.print("no grade changed (grades.csv as before this batch)", highlight=False)
    render_summary(result.rows, console)
    from grader.reports.feedback import write_and_report  # the final results.json, new or changed ones

    result.problems += write_and_report(layout.out, [src.student for src in sources], console, only_stale=True,
                                        jobs=options.jobs)


def _say_written(found: Discovery, layout: Layout, console: Any, result: BatchResult, late: Any) -> None:
    """The last lines: what was written, the launcher's warning, renamed ids, unknown submission times."""
    sources = found.sources
    errors = [o for o in result.outcomes if o.status == "error"]
    console.print(f"wrote {layout.grades} ({len(result.rows)} rows) and {layout.students_dir}/<student>/results.json "
                  f"in {result.seconds:.1f} s"
                  + (f"; [red]{len(errors)} not graded[/red] (rerun to retry)" if errors else "")
                  + (f"; [red]{len(found.refused)} refused[/red] (colliding ids)" if found.refused else ""),
                  highlight=False, soft_wrap=True)
    if result.warning:
        console.print(f"[bold red]{result.warning}[/bold red]", highlight=False)
    _say_renamed(sources + [src for src, _ in found.refused], console)
    if late is not None:  # last and loud: each submission whose time is unknown, for the instructor to decide
        from grader.results.late_batch import list_unknown_times

        list_unknown_times(layout, [src.student for src in sources], console)
