"""Progress of a long phase (`grader validate`'s mutants and correct variants).

On a terminal: a rich progress bar (done / total, how many were caught or accepted so far, the
elapsed time), gone when the phase ends.  Elsewhere (a CI log, a pipe, a file): one plain line
every `step` percent, so a log shows the run is alive without a line per mutant.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def elapsed(seconds: float) -> str:
    """`75.2` -> `1m15s`; under a minute `42s`."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class PhaseProgress:
    """`with PhaseProgress(console, "mutants", 221, "caught") as p: ... p.advance(good)`."""

    def __init__(self, console: Console, label: str, total: int, counted: str, step: int = 10):
        self.console, self.label, self.total, self.counted, self.step = console, label, total, counted, step
        self.done = self.good = 0
        self.next_percent = step
        self.start = time.monotonic()
        self.bar: Progress | None = None
        self.task: Any = None

    def __enter__(self) -> "PhaseProgress":
        self.start = time.monotonic()
        if self.console.is_terminal and self.total:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[counted]}"), TimeElapsedColumn(), console=self.console,
                                transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total, counted=f"0 {self.counted}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def line(self) -> str:
        return (f"{self.label}: {self.done}/{self.total} done, {self.good} {self.counted} so far, "
                f"{elapsed(time.monotonic() - self.start)} elapsed")

    def advance(self, good: bool) -> None:
        """One more run finished (`good`: caught, or accepted)."""
        self.done += 1
        self.good += bool(good)
        if self.bar is not None:
            self.bar.update(self.task, advance=1, counted=f"{self.good} {self.counted}")
            return
        percent = self.done * 100 // max(1, self.total)
        if percent >= self.next_percent and self.done < self.total:
            self.console.print(self.line(), highlight=False)
            self.next_percent = (percent // self.step + 1) * self.step
