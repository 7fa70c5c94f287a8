"""The console every command prints to: rich's width on a terminal, at least `PIPED_WIDTH` columns
in a pipe, a file or a CI log.  (What a submission controls reaches it only through
`grader.untrusted`.)"""

from __future__ import annotations

import os
import sys

from rich.console import Console


#: Columns of a console whose output is not a terminal (a pipe, a file, a CI log): rich would use 80,
#: and the kit's tables (the check table, grade's summary, validate's counts) would wrap.
PIPED_WIDTH = 160


def _terminal_columns() -> int:
    """The width of a terminal this process is attached to through any of its standard streams, or 0."""
    for stream in (sys.__stderr__, sys.__stdin__, sys.__stdout__):
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            continue
    return 0


def output_console(*, stderr: bool = False) -> Console:
    """The console a command prints to.  On a terminal, or with ``COLUMNS`` set, rich's own width
    (the terminal's, or COLUMNS); when the output is not a terminal (``grader grade ... | tee``, CI
    logs), at least `PIPED_WIDTH` columns (the terminal's, if one is attached and wider)."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not os.environ.get("COLUMNS", "").strip().isdigit():
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            width = max(PIPED_WIDTH, _terminal_columns())
    return Console(stderr=stderr, width=width)
