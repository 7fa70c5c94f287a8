"""The trusted worker of `grader grade`: one process per job slot, grading submission after submission.

    python -m grader.batch.trusted --worker FD OPTIONS_JSON     (started by `grader.batch.pool`)

Forked by the trusted fork-server (`grader.batch.forkserver`, torch, pytest and the test modules
already imported) or started as a process of its own, it receives jobs on its socket, grades each
(`grader.batch.submission.TrustedGrader`: staging, the tests with the student code in a sandbox, the
student's files) and answers with the `Outcome`.  Its output is the worker log, escaped, and each
student's part of it is copied to their tests.log.  It never runs student code itself.  The pool
(`grader.batch.pool`) hands out the jobs, restarts a worker that died, and the command
(`grader.batch.grade`) writes the batch's files.
"""

from __future__ import annotations

import io
import json
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grader.intake.discover import Source
from grader.batch.submission import TrustedGrader
from grader.results.layout import Layout
from grader.batch.options import GradeError, Outcome, grade_options
from grader.untrusted import LOG_LIMIT, shown


def _set_parent_death_signal() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the pipes closing still ends the worker
        pass


#: Characters of one submission's tests.log (the worker log keeps everything; 181 points of failed
#: tests with pytest's short tracebacks write a few hundred KB at most).
TESTS_LOG_LIMIT = 4 * 2**20


class _StudentLog:
    """One submission's copy of the worker log: ``DIR/instructor/students/<id>/tests.log``
    (`Layout.tests_log`), the same escaped text, at most `TESTS_LOG_LIMIT` characters.

    Written as the run goes (a worker killed mid-run leaves what it wrote); `append` for the results
    of a stopped run, after what the killed run wrote."""

    def __init__(self, path: Path, append: bool = False):
        self.left = TESTS_LOG_LIMIT
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file: Any = open(path, "a" if append else "w", encoding="utf-8", buffering=1)  # a kill loses no line
        except OSError as exc:  # the worker log still has it all: never a reason to stop grading
            print(f"(no tests.log for this submission: {exc})", file=sys.stderr)
            self.file = None

    def write(self, text: str) -> None:
        if self.left <= 0 or self.file is None:
            return
        if len(text) > self.left:
            text = text[: self.left] + f"\n[tests.log cut at {TESTS_LOG_LIMIT} characters: the worker log has the rest]\n"
        self.left -= len(text)
        self.file.write(text)

    def __enter__(self) -> "_StudentLog":
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _EscapingStream):
                stream.flush()
                stream.copy = self
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _EscapingStream) and stream.copy is self:
                stream.flush()
                stream.copy = None
        if self.file is not None:
            self.file.close()


class _EscapingStream(io.TextIOBase):
    """A text stream that escapes control characters before writing to `inner` (the worker's log),
    and to `copy` (the student's tests.log, while one of their runs is graded).

    pytest's report quotes the submission's exception messages and reprs: an instructor who
    runs `less` or `cat` on the log must not get a terminal repainted by them."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.copy: _StudentLog | None = None

    def write(self, text: str) -> int:
        escaped = shown(text, LOG_LIMIT, newlines=True)
        self.inner.write(escaped)
        if self.copy is not None:
            self.copy.write(escaped)
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


def _worker_main(conn: Any, options_dict: dict[str, Any]) -> None:
    """A trusted worker process: grade the jobs received on `conn` until told to stop."""
    _set_parent_death_signal()
    sys.stdout = _EscapingStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _EscapingStream(sys.stderr)  # type: ignore[assignment]
    options = grade_options(options_dict)
    try:
        grader = TrustedGrader(options)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the batch cleanly
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", {"launcher": grader.launcher, "warning": grader.warning, "uid": grader.settings.uid}))
    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                break
            if job is None:
                break
            source = Source(job["student"], Path(job["path"]))
            # this student's part of the log also goes to their tests.log (a stopped run's results: after
            # what the killed run wrote)
            with _StudentLog(Layout(options.out).tests_log(source.student), append=bool(job.get("finish"))):
                try:
                    if job.get("finish"):
                        outcome = grader.finish(source, options.out, job)
                    else:
                        outcome = grader.grade(source, options.out, job)
                except MemoryError:  # out of memory outside a test (under RLIMIT_AS): its results from what it finished
                    from grader.testing.budget import MEMORY_MESSAGE

                    grader.exhausted = True
                    outcome = grader.finish(source, options.out, {**job, "finish": MEMORY_MESSAGE,
                                                                  "stopped_by": "memory"})
                except GradeError as exc:
                    print(f"not graded: {exc}", file=sys.stderr)
                    outcome = Outcome(source.student, "error", message=str(exc))
                except Exception as exc:  # noqa: BLE001 - never let one submission stop the batch
                    import traceback

                    traceback.print_exc()
                    outcome = Outcome(source.student, "error", message=f"grader error: {type(exc).__name__}: {exc}")
                sys.stdout.flush()
                sys.stderr.flush()
            # "last": out of memory once, this process ends; the pool starts a fresh one in its slot
            conn.send(("last" if grader.exhausted else "done", asdict(outcome)))
            if grader.exhausted:
                break
            grader.settle()
    finally:
        grader.close()


def _worker_cli(argv: list[str]) -> int:
    """`python -m grader.batch.trusted --worker FD OPTIONS_JSON`: the trusted worker's entry point."""
    from multiprocessing.connection import Connection

    if len(argv) != 3 or argv[0] != "--worker":
        print("usage: python -m grader.batch.trusted --worker FD OPTIONS_JSON (started by `grader grade`)", file=sys.stderr)
        return 2
    conn = Connection(int(argv[1]))
    _worker_main(conn, json.loads(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(_worker_cli(sys.argv[1:]))
