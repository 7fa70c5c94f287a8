"""What every command family needs: the console, paths from the command line, and the
instructor-repository check."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT


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


def abspath(path: str | Path) -> Path:
    """A path from the command line, resolved against the caller's working directory (now,
    before anything changes directory: trusted workers run with their cwd at the kit root)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def db_url(url: str) -> str:
    """`sqlite:///relative.db` made absolute against the caller's working directory."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.startswith(prefix + "/") and url != prefix + ":memory:":
        return prefix + str(abspath(url[len(prefix):]))
    return url


def instructor_repo() -> bool:
    """True in the instructor repository; False in the student release (no solutions/, no hidden tests)."""
    return (KIT_ROOT / "solutions").is_dir() and (KIT_ROOT / "tests" / "hidden").is_dir()


def needs_instructor_repo(what: str, console: Console) -> int | None:
    """None in the instructor repository; else says why `what` cannot run here, and returns exit status 2."""
    if instructor_repo():
        return None
    console.print(f"[red]{what} needs the instructor repository: this copy of the kit is the student release "
                  "(it has no solutions/ and no tests/hidden/).[/red]", highlight=False)
    return 2
