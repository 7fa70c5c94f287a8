"""What every command family needs: paths from the command line, the instructor-repository check,
and the parser class every `grader` command is built with (the console they print to: `grader.console`)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from rich.console import Console  # (the type of what commands print to)

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


def paragraphs(text: str) -> list[str]:
    """A description's or epilog's paragraphs (separated by a blank line), each on one line; a
    paragraph of bullets ("* " at the start of its lines) is kept as one line per bullet."""
    out = []
    for para in text.strip().split("\n\n"):
        lines = [line.strip() for line in para.strip().splitlines()]
        if lines and lines[0].startswith("* "):
            items: list[str] = []
            for line in lines:
                if line.startswith("* ") or not items:
                    items.append(line)
                else:
                    items[-1] += " " + line
            out.append("\n".join(items))
        else:
            out.append(" ".join(lines))
    return [p for p in out if p]


class GuideFormatter(argparse.HelpFormatter):
    """`grader COMMAND --help`: a description and an epilog keep their paragraphs and bullets
    (argparse's own formatter runs every paragraph into one)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        filled = []
        for para in paragraphs(text):
            for item in para.split("\n"):
                bullet = item.startswith("* ")
                filled.append(textwrap.fill(item, width, initial_indent=indent,
                                            subsequent_indent=indent + ("  " if bullet else ""),
                                            break_on_hyphens=False))
            filled.append("")
        return "\n".join(filled).rstrip("\n")


class CommandParser(argparse.ArgumentParser):
    """The parser of `grader` and of each of its subcommands (`add_subparsers` makes its parsers of
    this class): `GuideFormatter` unless told otherwise.  docs/COMMANDS.md is written from these
    parsers (`grader.commands.reference`)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", GuideFormatter)
        super().__init__(*args, **kwargs)
