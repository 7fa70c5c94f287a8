"""The kit's console when its output is not a terminal (a pipe, a CI log): tables are not wrapped at 80.

rich falls back to 80 columns without a terminal, and `grader check`'s table (eight columns) then
wraps every header into three lines.  `grader.console.output_console` uses at least
`PIPED_WIDTH` columns there; ``COLUMNS`` still wins when set.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader import KIT_ROOT
from grader.console import PIPED_WIDTH

pytestmark = pytest.mark.kit

HEADER = "not attempted (tests)"  # one column header of the check table


def _check(columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", "solutions", "--module", "memory"],
                          cwd=KIT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_piped_output_is_wide_and_columns_is_honoured() -> None:
    piped = _check(None)
    header = next(line for line in piped.splitlines() if HEADER in line)  # the header on one line: not wrapped
    assert 80 < len(header) <= PIPED_WIDTH
    narrow = _check("100")
    table = [line for line in narrow.splitlines() if line[:1] in "┏┃┡│└"]
    assert HEADER not in narrow and table and max(map(len, table)) <= 100
