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
from grader.protocol import BoundaryError, decode, encode
from grader.serve import serve
from grader.target import Implementation


class Backend(Protocol):
    folder: Path

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def source(self, module: str) -> str | None: ...

    def close(self) -> None: ...


def read_module_source(folder: Path, module: str) -> str | None:
    """The text of `<folder>/<module>.py`, or None when the file is missing (read, never run)."""
    if module not in MODULES:
        raise ValueError(f"unknown module {module!r}")
    path = folder / f"{module}.py"
    if not path.is_file() or path.is_symlink():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


class InProcessBackend:
    """Runs probes in this process; replies still round-trip through the data encoding."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.impl = Implementation(folder)

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        reply = serve(self.impl, name, kwargs)
        try:
            return decode(encode(reply))
        except BoundaryError as exc:
            return {"boundary": str(exc)}
        except Exception as exc:  # e.g. torch.save refusing an odd tensor subclass
            return {"boundary": f"{type(exc).__name__}: {exc}"}

    def source(self, module: str) -> str | None:
        return read_module_source(self.folder, module)

    def close(self) -> None:
        pass
