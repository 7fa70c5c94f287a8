"""A graded run that stops: its time budget spent, or the trusted process out of memory.

`grader.testing.pytest_plugin` keeps one `RunStop` per run (``--kit-budget``: the trusted worker's CPU
seconds for this submission, `grader.testing.budget`); once it has stopped, every probe call
fails at once (`Budgeted`, the backend the `student` fixture hands out), the test in progress
fails with its message and no further test runs: what ended before then scores.
"""

from __future__ import annotations

import time
from typing import Any


class RunStop:
    """Why this run stopped grading, if it did: its time budget spent (`--kit-budget`), or this
    trusted process out of memory.  Once stopped, probe calls fail at once (`Budgeted`), the test
    in progress fails with `message`, and no further test runs."""

    def __init__(self, budget: float | None, start: float):
        self.budget = budget
        self.start = start
        self.why = ""  # "" | "time" | "memory"
        self.message = ""

    def stopped(self) -> bool:
        if not self.why and self.budget is not None and time.process_time() - self.start > self.budget:
            from grader.testing.budget import time_message

            self.stop("time", time_message(self.budget))
        return bool(self.why)

    def stop(self, why: str, message: str) -> None:
        if not self.why:
            self.why, self.message = why, message


class Budgeted:
    """A backend whose calls fail at once, without reaching the code under test, once the run has
    stopped (`RunStop`): the submission's remaining tests finish in no time."""

    def __init__(self, inner: Any, stop: RunStop):
        self.inner = inner
        self.stop = stop
        self.folder = inner.folder

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.stop.stopped():
            return {"boundary": self.stop.message}
        return self.inner.call(name, kwargs)

    def call_measured(self, name: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.stop.stopped():
            return {"boundary": self.stop.message}, {"peak_growth_bytes": -1, "method": "not measured (not run)"}
        return self.inner.call_measured(name, kwargs)

    def source(self, module: str) -> str | None:
        return self.inner.source(module)

    def close(self) -> None:
        self.inner.close()


def out_of_memory(exc: BaseException | None) -> bool:
    """Whether `exc`, raised in this trusted process, says that it ran out of memory (Python's
    MemoryError, or torch's CPU allocator failing under an address-space limit)."""
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in str(exc)[:2000]
                                              or "std::bad_alloc" in str(exc)[:2000])
