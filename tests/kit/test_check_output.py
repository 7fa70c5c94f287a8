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

from grader.report import check_lines, render_check

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


def test_the_table_and_lines_print_plainly() -> None:
    out = io.StringIO()
    render_check(RECORDS, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "not attempted (tests)" in text and "pending (points)" in text
    assert "not attempted yet: memory, flops (3 tests)" in text and "second line" not in text
