"""Human-readable reports: the per-module table and one plain line per failed test."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.scoring import score, totals
from grader.untrusted import shown_markup


def _pts(x: float) -> str:
    return f"{x:g}"


def render_check(records: list[dict[str, Any]], console: Console, *, title: str = "Your score") -> None:
    """The per-module table (each column's unit in its header: points or tests), then one plain
    line per test that did not pass."""
    table_data = score(records)
    table = Table(title=title)
    for col in ("module", "earned (points)", "possible (points)", "pending GPU (points)", "passed (tests)",
                "failed (tests)", "not attempted (tests)", "pending GPU (tests)"):
        table.add_column(col, justify="left" if col == "module" else "right")
    for s in table_data.values():
        c = s.counts
        table.add_row(s.module, _pts(s.earned), _pts(s.possible), _pts(s.pending), str(c["passed"]),
                      str(c["failed"] + c["error"]), str(c["not_attempted"]), str(c["pending"]))
    earned, possible, pending = totals(table_data)
    count = {k: sum(s.counts.get(k, 0) for s in table_data.values()) for k in ("passed", "failed", "error",
                                                                               "not_attempted", "pending")}
    table.add_row("total", _pts(earned), _pts(possible), _pts(pending), str(count["passed"]),
                  str(count["failed"] + count["error"]), str(count["not_attempted"]), str(count["pending"]),
                  style="bold")
    console.print(table)
    lines = [r for r in records if r["status"] != "passed"]
    for r in lines:
        mark = {"failed": "[red]✗[/red]", "error": "[red]✗[/red]", "not_attempted": "[yellow]·[/yellow]",
                "pending": "[blue]…[/blue]"}.get(r["status"], "?")
        msg = r["message"].splitlines()[0] if r["message"] else r["status"]
        console.print(f"{mark} {escape(r['module'])}: {escape(r['checked'])} — {shown_markup(msg)}", markup=True,
                      highlight=False, soft_wrap=True)
