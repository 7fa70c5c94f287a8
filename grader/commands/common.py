"""What every command family needs: paths from the command line, and the instructor-repository check."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT


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
