"""The trusted side of the boundary: the `student` fixture's object.

Tests ask for data (`student.probe(...)`) and for source text (`student.function(...)`);
all assertions happen in the test process.  Failures of the code under test surface as
`ProbeError` (it raised, crashed, or replied with something that is not data) or its
subclass `NotAttempted` (it raised NotImplementedError: still a stub), which the scoring
plugin reports in plain language.
"""

from __future__ import annotations

import ast
from typing import Any

from grader import static
from grader.backends import Backend
from grader.protocol import ErrorData


class ProbeError(AssertionError):
    """The code under test raised (or its reply was not data) where a value was expected."""

    def __init__(self, probe: str, error: ErrorData | None = None, detail: str = ""):
        self.probe = probe
        self.error = error
        if error is not None and error.not_implemented:
            where = f"{error.where} " if error.where else ""
            detail = f"{where}raises NotImplementedError".strip()
        elif error is not None:
            where = f" (at {error.where})" if error.where else ""
            detail = f"your code raised {error.type}: {error.message}{where}"
        self.detail = detail
        super().__init__(detail)


class NotAttempted(ProbeError):
    """The code under test is still a stub (raised NotImplementedError)."""


class Student:
    """Reaches the implementation under test through a backend; returns data only."""

    def __init__(self, backend: Backend, target_label: str):
        self.backend = backend
        self.target = target_label

    # -- behaviour ---------------------------------------------------------------------------
    def outcome(self, probe: str, **kwargs: Any) -> Any | ErrorData:
        """Run a probe; the value, or the student's exception as ErrorData (never raised)."""
        reply = self.backend.call(probe, kwargs)
        if "ok" in reply:
            return reply["ok"]
        if "error" in reply:
            return ErrorData.from_dict(reply["error"])
        raise ProbeError(probe, detail=f"no usable reply from your code: {reply.get('boundary', reply)}")

    def probe(self, probe: str, **kwargs: Any) -> Any:
        """Run a probe and return its data; a raised exception fails the test."""
        result = self.outcome(probe, **kwargs)
        if isinstance(result, ErrorData):
            raise (NotAttempted if result.not_implemented else ProbeError)(probe, result)
        return result

    def raises(self, probe: str, expected: str, **kwargs: Any) -> ErrorData:
        """Run a probe that must raise `expected` (an exception class name, subclasses accepted)."""
        result = self.outcome(probe, **kwargs)
        if isinstance(result, ErrorData):
            if result.not_implemented and expected != "NotImplementedError":
                raise NotAttempted(probe, result)
            if expected in result.bases:
                return result
            raise AssertionError(f"expected {expected}, but your code raised {result.type}: {result.message}")
        raise AssertionError(f"expected {expected} to be raised, but your code returned {_short(result)}")

    # -- source (read, never run) -------------------------------------------------------------
    def source(self, module: str) -> str:
        text = self.backend.source(module)
        if text is None:
            raise NotAttempted(module, detail=f"{module}.py is missing")
        return text

    def function(self, module: str, qualname: str) -> ast.AST:
        """The AST of `qualname` in the student's module; a stub body counts as not attempted."""
        text = self.source(module)
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            raise ProbeError(module, detail=f"{module}.py does not parse: {exc}") from None
        node = static.find_definition(tree, qualname)
        if node is None:
            raise ProbeError(module, detail=f"{module}.py defines no {qualname}")
        if static.is_stub(node):
            raise NotAttempted(module, detail=f"{qualname} is still a stub")
        return node


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
