"""`grader check`'s lines under the table (issue 25, item 11): what a student acts on, not 106 lines.

Modules not started yet (every test that ran is not attempted) collapse into one line; a module
the student has started shows each failure and each test still not attempted; pending tests are
one line per reason (the GPU tests: how many, in which modules).  With one module (`--module`),
every test is listed.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from grader.testing.check_table import check_lines, render_check

pytestmark = pytest.mark.kit


def _record(module: str, name: str, status: str, message: str = "", gpu: bool = False) -> dict:
    return {"id": f"tests/public/test_{module}.py::{name}", "module": module, "name": name, "points": 1,
            "hidden": False, "gpu": gpu, "checked": name.replace("_", " "), "status": status, "message": message}


RECORDS = [
    _record("memory", "test_a", "not_attempted", "not attempted: memory.py:1 raises NotImplementedError"),
    _record("memory", "test_b", "not_attempted", "not attempted: memory.py:9 raises NotImplementedError"),
    _record("views", "test_c", "passed"),
    _record("views", "test_d", "failed", "expected 3, got 4\nsecond line"),
    _record("views", "test_e", "not_attempted", "not attempted: views.py:4 raises NotImplementedError"),
    _record("flops", "test_f", "not_attempted", "not attempted"),
    _record("flops", "test_g", "pending", "needs CUDA: graded on a GPU machine by the course staff", gpu=True),
    _record("data", "test_h", "pending", "needs CUDA: graded on a GPU machine by the course staff", gpu=True),
    _record("data", "test_i", "pending", "checked only when graded: this machine cannot measure memory"),
    _record("data", "test_j", "passed"),
]


def test_modules_not_started_collapse_and_started_ones_show_each_test() -> None:
    lines = check_lines(RECORDS)
    assert lines == [
        "[red]✗[/red] views: test d — expected 3, got 4",
        "[yellow]·[/yellow] views: test e — not attempted: views.py:4 raises NotImplementedError",
        "[yellow]·[/yellow] not attempted yet: memory, flops (3 tests)",
        "[blue]…[/blue] pending, needs CUDA: graded on a GPU machine by the course staff: 2 tests in flops, data",
        "[blue]…[/blue] data: test i — checked only when graded: this machine cannot measure memory",
        "`grader check --module MODULE` checks one module and lists each of its tests.",
    ]


def test_one_module_lists_every_test() -> None:
    lines = check_lines([r for r in RECORDS if r["module"] == "memory"])
    assert len(lines) == 2 and all("memory: test" in line for line in lines)


def test_module_option_lists_passing_and_pending_tests_too() -> None:
    """`grader check --module views` lists every test, passed ones included, as the README says
    (issue 33: it listed only what did not pass); one point is "1 point"."""
    views = [r for r in RECORDS if r["module"] in ("views", "data")]
    lines = check_lines(views, every_test=True)
    assert lines == [
        "[green]✓[/green] views: test c — passed (1 point)",
        "[red]✗[/red] views: test d — expected 3, got 4",
        "[yellow]·[/yellow] views: test e — not attempted: views.py:4 raises NotImplementedError",
        "[blue]…[/blue] data: test h — needs CUDA: graded on a GPU machine by the course staff",
        "[blue]…[/blue] data: test i — checked only when graded: this machine cannot measure memory",
        "[green]✓[/green] data: test j — passed (1 point)",
    ]
    assert "passed (2 points)" in check_lines([dict(views[0], points=2)], every_test=True)[0]


def test_check_module_on_the_command_line_lists_passing_tests(capsys: pytest.CaptureFixture[str]) -> None:
    from grader import KIT_ROOT
    from grader.cli import main

    assert main(["check", str(KIT_ROOT / "solutions"), "--module", "views"]) == 0
    out = capsys.readouterr().out
    total = next(line for line in out.splitlines() if line.startswith("│ total")).split("│")
    assert int(total[5]) > 0 and out.count("✓ views: ") == int(total[5])  # one line per passed test


def test_the_table_and_lines_print_plainly() -> None:
    out = io.StringIO()
    render_check(RECORDS, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "not attempted (tests)" in text and "pending (points)" in text
    # the maximum counts the pending points, as results.json, the summary and the feedback page do
    # (issue 33: the page said 43 where this table said 42 and 1 pending)
    total = [c.strip() for c in next(ln for ln in text.splitlines() if ln.startswith("│ total")).split("│")]
    assert "max (points)" in text and (total[3], total[4]) == (str(len(RECORDS)), "3")
    assert "not attempted yet: memory, flops (3 tests)" in text and "second line" not in text
