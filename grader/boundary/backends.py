"""Backends that carry probe calls to the code under test and bring data back.

Every backend has the same small interface, `call(name, kwargs) -> reply dict` and
`source(module) -> str | None`, and every reply has crossed `protocol.encode/decode`, so
tests behave the same whichever backend runs them.  The in-process backend is the default
for a plain `pytest` run (students get real tracebacks and can use a debugger); the
sandboxed backend is used by `grader grade`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from grader import MODULES
from grader.boundary.messages import BoundaryError, decode, encode
from grader.boundary.serving import serve
from grader.boundary.target import Implementation


class Backend(Protocol):
    folder: Path

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def call_measured(self, name: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def source(self, module: str) -> str | None: ...

    def close(self) -> None: ...


def read_module_source(folder: Path, module: str) -> str | None:
    """The text of `<folder>/<module>.py`, or None when the file is missing (read, never run)."""
    if module not in MODULES:
        raise ValueError(f"unknown module {module!r}")
    path = folder / f"{module}.py"
    if not path.is_file() or path.is_symlink():
        return None
    return decode_source(path.read_bytes())


def decode_source(data: bytes | str) -> str:
    """A module file's text from its bytes, as the import reads them (the declared encoding; staging
    accepts UTF-8 only), undecodable bytes replaced."""
    if isinstance(data, str):
        return data
    try:  # what the import reads: bytes in the declared encoding (staging accepts UTF-8 only)
        import io
        import tokenize

        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace")


class InProcessBackend:
    """Runs probes in this process; replies still round-trip through the data encoding."""

    def __init__(self, folder: Path):
        from grader.rules import tripwire

        tripwire.install()  # before any submission module is imported (see grader.rules.tripwire)
        self.folder = folder
        self.impl = Implementation(folder)

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        reply = serve(self.impl, name, kwargs)
        try:
            return decode(encode(reply))
        except BoundaryError as exc:
            return {"boundary": str(exc)}
        except Exception as exc:  # e.g. a reply over the size cap
            return {"boundary": f"{type(exc).__name__}: {exc}"}

    def call_measured(self, name: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call, and the growth of this process's peak resident memory during it.

        In-process, the code under test runs in the test process itself (a student's own
        `pytest`, never a graded run): on Linux the kernel's high-water mark is reset through
        /proc/self/clear_refs before the call and read after it.  Where there is no such /proc
        (macOS), the call runs in a fresh interpreter that measures its own peak (`grader.boundary.peak`);
        where nothing can measure (Windows), the reply is `{"graded_only": why}` and the call
        never runs (the test is checked only when graded)."""
        before = _reset_peak()
        if before is None:
            from grader.boundary import peak

            return peak.call_measured(self.folder, name, kwargs)
        reply = self.call(name, kwargs)
        after = _status_kib("VmHWM")
        if after is None:
            return reply, {"peak_growth_bytes": -1, "method": "unavailable (VmHWM unreadable)"}
        return reply, {"peak_growth_bytes": (after - before) * 1024, "method": "in-process VmHWM"}

    def source(self, module: str) -> str | None:
        return read_module_source(self.folder, module)

    def close(self) -> None:
        pass


def _status_kib(field: str, pid: int | str = "self") -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak() -> int | None:
    """Reset this process's VmHWM to its current RSS; the RSS (KiB) it starts from."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kib("VmHWM")
