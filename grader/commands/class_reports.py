"""The instructor's pages on a graded class: `grader report` and `grader similarity`.

Thin wrappers around `grader.reports.classreport` and `grader.reports.similarity`; registered by
`grader.commands.integrations.add_parsers`, between `classroom-payload` and `export`.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from grader.commands.common import abspath
from grader.untrusted import MESSAGE_LIMIT, shown, shown_markup


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`grader report`, `grader similarity`."""
    p = sub.add_parser("report", help="one self-contained HTML page on a graded class (instructor-only)",
                       description=REPORT)
    p.add_argument("results", metavar="DIR", help="a results folder written by `grader grade` (or `grader merge`)")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write, e.g. report.html")
    p.add_argument("--compare", metavar="OLD", help="an earlier results folder of the same class: who changed score")
    p.add_argument("--assignment", metavar="NAME", help="the course.toml assignment the results are of (refused if not)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("similarity", help="which submissions share code (and which are close to the solutions)",
                       description=SIMILARITY)
    p.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                   help="submissions or folders of them (as for `grader grade`)")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write, e.g. similarity.html")
    p.add_argument("--threshold", type=float, default=0.5, metavar="SHARE", help="flag pairs sharing at least this share (default 0.5)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="pairs shown side by side (default 20)")
    p.set_defaults(func=cmd_similarity)


REPORT = """\
Writes one self-contained HTML page on a graded class, opening on the summary tables: score
distribution (chart and numbers), timeouts, crashes and rejections, who changed score after a
regrade (`--compare`), late submissions (no known time first), students; then per-module points as
% of each module's maximum, pending GPU tests, and the tests hardest first with their most common
failure messages (numbers masked): the 20 hardest in view, the rest collapsed, a filter box.  It
reads the results folder and never runs student code."""

SIMILARITY = """\
Compares copydetect fingerprints over the code of every file that can run (the graded modules and
the modules they import), each graded function's rule scope first (renaming a function and
delegating to it, or reaching the code by a computed lookup, hides nothing), less what the stubs
have; the reference solutions join as one more submission (leaked solutions top the list).  The
page shows matching regions side by side.

A submission whose graded functions reach code through a lookup no reading can follow is flagged
(and compared).  Each submission is staged and read in a child under CPU, memory and time limits;
one that cannot be read or spends its budget is flagged with the reason, and the page is written
for the others."""

def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from grader.results.recorded import cli_results_assignment
    from grader.reports.classreport import ReportError, write_report

    folders = [abspath(args.results), *([abspath(args.compare)] if args.compare else [])]
    code, _ = cli_results_assignment(args.assignment, folders, console, "grader report")
    if code is not None:
        return code
    try:
        data = write_report(abspath(args.results), abspath(args.out),
                            abspath(args.compare) if args.compare else None)
    except ReportError as exc:
        console.print(f"[red]grader report: {shown_markup(exc, MESSAGE_LIMIT)}[/red]", highlight=False, soft_wrap=True)
        return 2
    from grader.testing.totals import counted

    console.print(f"wrote {args.out}: {counted(len(data.students), 'submission')}, {counted(len(data.tests), 'test')}"
                  + (f", {len(data.changes)} changed since {args.compare}" if args.compare else ""))
    return 0


def cmd_similarity(args: argparse.Namespace, console: Console) -> int:
    from grader.reports.similarity import SimilarityError, write_similarity

    if not 0 < args.threshold <= 1:
        console.print("[red]grader similarity: --threshold is a share between 0 and 1[/red]")
        return 2
    try:
        result = write_similarity([abspath(p) for p in args.submissions], abspath(args.out), args.threshold, args.top)
    except SimilarityError as exc:
        console.print(f"[red]grader similarity: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]",
                      highlight=False, soft_wrap=True)
        return 2
    flagged = [p for p in result.pairs if p.score >= args.threshold]
    console.print(f"wrote {args.out}: {len(result.codes)} compared, {len(flagged)} pairs at or above "
                  f"{args.threshold:.0%}"
                  + (f"; top: {shown(flagged[0].a)} ↔ {shown(flagged[0].b)} {flagged[0].score:.0%}" if flagged else ""),
                  markup=False, highlight=False, soft_wrap=True)
    if result.flagged:
        console.print(f"[yellow]{len(result.flagged)} could not be read and were not compared (flagged at the top "
                      f"of the page):[/yellow] " + ", ".join(shown_markup(n) for n in sorted(result.flagged)),
                      highlight=False, soft_wrap=True)
    if result.lookups:
        console.print(f"[yellow]{len(result.lookups)} reach code through a lookup no reading can follow (compared, "
                      "and flagged at the top of the page):[/yellow] "
                      + ", ".join(shown_markup(n) for n in sorted(result.lookups)), highlight=False, soft_wrap=True)
    return 0
