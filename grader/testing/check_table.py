"""Human-readable reports: the per-module table and a short list of what did not pass.

`grader check` prints what a student needs to act on: one plain line per failed test (and per
test not attempted in a module they have started), one line naming the modules not started yet,
and one line per kind of pending test (e.g. the GPU tests, with how many and where).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.testing.scoring import score, totals
from grader.untrusted import shown_markup

MARKS = {"passed": "[green]✓[/green]", "failed": "[red]✗[/red]", "error": "[red]✗[/red]", "not_attempted": "[yellow]·[/yellow]",
         "pending": "[blue]…[/blue]"}


def _pts(x: float) -> str:
    return f"{x:g}"


def render_check(records: list[dict[str, Any]], console: Console, *, title: str = "Your score",
                 every_test: bool = False) -> None:
    """The per-module table (each column's unit in its header: points or tests), then `check_lines`
    (`every_test`: `grader check --module`, each test listed, passed ones too)."""
    table_data = score(records)
    table = Table(title=title)
    # max = the points that can be earned plus the pending ones: the maximum results.json, the summary
    # and the feedback page state ("42 / 43 points (1 point of GPU tests pending ...)")
    for col in ("module", "earned (points)", "max (points)", "pending (points)", "passed (tests)",
                "failed (tests)", "not attempted (tests)", "pending (tests)"):
        table.add_column(col, justify="left" if col == "module" else "right")
    for s in table_data.values():
        c = s.counts
        table.add_row(s.module, _pts(s.earned), _pts(s.possible + s.pending), _pts(s.pending), str(c["passed"]),
                      str(c["failed"] + c["error"]), str(c["not_attempted"]), str(c["pending"]))
    earned, possible, pending = totals(table_data)
    count = {k: sum(s.counts.get(k, 0) for s in table_data.values()) for k in ("passed", "failed", "error",
                                                                               "not_attempted", "pending")}
    table.add_row("total", _pts(earned), _pts(possible + pending), _pts(pending), str(count["passed"]),
                  str(count["failed"] + count["error"]), str(count["not_attempted"]), str(count["pending"]),
                  style="bold")
    console.print(table)
    for line in check_lines(records, every_test=every_test):
        console.print(line, markup=True, highlight=False, soft_wrap=True)


def _message(r: dict[str, Any]) -> str:
    return r["message"].splitlines()[0] if r["message"] else r["status"]


def check_lines(records: list[dict[str, Any]], every_test: bool = False) -> list[str]:
    """What did not pass, as rich markup lines (student-controlled text through `shown_markup`):

    * one line per failed test, and per test not attempted in a module that has other outcomes;
    * one line for the modules where every test that ran is not attempted (not started yet), when
      there are several modules (a single module's, `--module`, are listed one by one);
    * pending tests grouped by why (one line per reason: "needs CUDA ...: 11 tests in data, fp8, ...");
      a reason only one test has is shown on that test's line;
    * `every_test` (`grader check --module M`): one line per test of those modules, in order, passed
      and pending ones included (what a student needs while working on one module)."""
    modules: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        modules.setdefault(r["module"], []).append(r)
    lines, untouched, untouched_tests = [], [], 0
    for module, tests in modules.items():
        ran = [r for r in tests if r["status"] != "pending"]
        if every_test:
            lines += [f"{MARKS.get(r['status'], '?')} {escape(module)}: {escape(r['checked'])} — "
                      + (f"passed ({_pts(r['points'])} point{'s' * (r['points'] != 1)})" if r["status"] == "passed"
                         else shown_markup(_message(r))) for r in tests]
            continue
        if len(modules) > 1 and ran and all(r["status"] == "not_attempted" for r in ran):
            untouched.append(module)
            untouched_tests += len(ran)
            continue
        for r in ran:
            if r["status"] != "passed":
                lines.append(f"{MARKS.get(r['status'], '?')} {escape(module)}: {escape(r['checked'])} — "
                             f"{shown_markup(_message(r))}")
    if untouched:
        lines.append(f"{MARKS['not_attempted']} not attempted yet: {escape(', '.join(untouched))} "
                     f"({untouched_tests} test{'s' * (untouched_tests != 1)})")
    reasons: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["status"] == "pending" and not every_test:
            reasons.setdefault(_message(r), []).append(r)
    for reason, tests in reasons.items():
        if len(tests) == 1:
            r = tests[0]
            lines.append(f"{MARKS['pending']} {escape(r['module'])}: {escape(r['checked'])} — {shown_markup(reason)}")
        else:
            where = ", ".join(dict.fromkeys(r["module"] for r in tests))
            lines.append(f"{MARKS['pending']} pending, {shown_markup(reason)}: {len(tests)} tests in {escape(where)}")
    if untouched:
        lines.append("`grader check --module MODULE` checks one module and lists each of its tests.")
    return lines
