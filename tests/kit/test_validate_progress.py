"""`grader validate` shows progress while it grades mutants and variants (issue 25, item 4): it printed
nothing for over 30 minutes on a busy 2-core machine.

On a terminal a rich bar (done / total, caught so far, elapsed); in a log one plain line every 10%;
the runs report as each one ends (`grader.authoring.validate.grade_targets(done=...)`), not all at the end.
"""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from grader import KIT_ROOT
from grader.authoring.progress import PhaseProgress, elapsed
from grader.authoring.validate import grade_targets

pytestmark = pytest.mark.kit


def test_a_log_gets_a_plain_line_every_ten_percent() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    assert not console.is_terminal
    with PhaseProgress(console, "mutants", 25, "caught") as progress:
        for i in range(25):
            progress.advance(good=i % 5 != 0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 9, lines  # 10%, 20%, ... 90%: the end is validate's own summary line
    assert lines[0].startswith("mutants: 3/25 done, 2 caught so far, ") and lines[0].endswith(" elapsed")
    assert lines[-1].startswith("mutants: 23/25 done, 18 caught so far")


def test_a_terminal_gets_a_bar_that_is_gone_at_the_end() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    with PhaseProgress(console, "mutants", 4, "caught") as progress:
        progress.advance(True)
        progress.bar.refresh()
        assert "1/4" in out.getvalue() and "1 caught" in out.getvalue()
        for _ in range(3):
            progress.advance(False)
    assert progress.done == 4 and progress.good == 1


def test_elapsed_reads_as_minutes_and_seconds() -> None:
    assert (elapsed(42.9), elapsed(75.2), elapsed(3725)) == ("42s", "1m15s", "62m05s")


def test_runs_report_as_they_end() -> None:
    """Three runs, one job: each is reported (with its records) before the next one ends."""
    seen: list[tuple[int, int, float]] = []
    start = time.monotonic()
    runs = grade_targets([(KIT_ROOT / "solutions", "memory")] * 3, jobs=1,
                         done=lambda i, records: seen.append((i, len(records), time.monotonic() - start)))
    assert sorted(i for i, _, _ in seen) == [0, 1, 2]
    assert all(n == len(runs[i]) > 0 for i, n, _ in seen)
    assert seen[0][2] < seen[-1][2]  # not all at once at the end
