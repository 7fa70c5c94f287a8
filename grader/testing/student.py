"""The trusted side of the boundary: the `student` fixture's object.

Tests ask for data (`student.probe(...)`) and for source text (`student.function(...)`);
all assertions happen in the test process.  Failures of the code under test surface as
`ProbeError` (it raised, crashed, or replied with something that is not data) or its
subclass `NotAttempted` (it raised NotImplementedError: still a stub), which the scoring
plugin reports in plain language; `CheckedWhenGraded` marks a test this machine cannot check
(pending: no points lost or given).
"""

from __future__ import annotations

import ast
from typing import Any

import pytest

from grader.rules import static
from grader.boundary.backends import Backend, decode_source
from grader.boundary.messages import ErrorData
from grader.boundary.wire import cut

#: Characters of a failure's detail (the test's output): an ErrorData's fields are capped already
#: (`grader.boundary.messages`), a test's own words around a reply's strings (each cut at the decoder) too.
MAX_DETAIL = 3000


class ProbeError(AssertionError):
    """The code under test raised (or its reply was not data) where a value was expected."""

    def __init__(self, probe: str, error: ErrorData | None = None, detail: str = ""):
        self.probe = probe
        self.error = error
        if error is not None and error.not_implemented:
            where = f"{error.where} " if error.where else ""
            if error.type != "NotImplementedError":  # e.g. a module file that is missing: say which
                detail = error.message or f"{error.type} (not attempted)"
            else:
                reason = f": {error.message}" if error.message.strip() else ""
                detail = f"{where}raises NotImplementedError{reason}".strip()
        elif error is not None:
            where = f" (at {error.where})" if error.where else ""
            detail = f"your code raised {error.type}: {error.message}{where}"
        self.detail = cut(detail, MAX_DETAIL)
        super().__init__(self.detail)


class NotAttempted(ProbeError):
    """The code under test is still a stub (raised NotImplementedError)."""


class CheckedWhenGraded(pytest.skip.Exception):
    """This machine cannot check the test (the in-process backend cannot measure memory on
    Windows): it is pending, "checked only when graded", and costs no points here.  Never raised
    where the sandbox runs the code (the grading machine measures every call)."""

    def __init__(self, why: str):
        self.why = why
        super().__init__(f"pending: {why}")


class Student:
    """Reaches the implementation under test through a backend; returns data only."""

    def __init__(self, backend: Backend, target_label: str, sources: static.SourceSet | None = None):
        self.backend = backend
        self.target = target_label
        self._texts: dict[str, str | None] = {}
        # the submission's files: `sources` read before any of its code ran (the fixture freezes them:
        # what the import ran is what the checks read), else read from the folder on demand; parsed
        # on demand within the byte budget, only the files a question needs; this run only
        self._sources: static.SourceSet | None = sources

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

    def measure(self, probe: str, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Run a probe and measure, from outside the code under test, how much the memory of the
        process running it grew during the call: `(value, {"peak_growth_bytes", "method"})`.
        The probe must do its work in the process that runs it (no fork)."""
        reply, memory = self.backend.call_measured(probe, kwargs)
        if "graded_only" in reply:
            raise CheckedWhenGraded(str(reply["graded_only"]))
        if "ok" in reply:
            return reply["ok"], memory
        if "error" in reply:
            error = ErrorData.from_dict(reply["error"])
            raise (NotAttempted if error.not_implemented else ProbeError)(probe, error)
        raise ProbeError(probe, detail=f"no usable reply from your code: {reply.get('boundary', reply)}")

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
        if module not in self._texts:
            if self._sources is not None and self._sources.folder is None:  # the frozen files
                try:
                    self._texts[module] = decode_source(self._sources.data(module)) \
                        if module in self._sources.names else None
                except SyntaxError as exc:  # (Unparsable: not read, past the budget)
                    raise ProbeError(module, detail=str(exc)) from None
            else:
                self._texts[module] = self.backend.source(module)
        text = self._texts[module]
        if text is None:
            raise NotAttempted(module, detail=f"{module}.py is missing")
        return text

    def sources(self) -> static.SourceSet:
        """The submission's source files (`grader.rules.sources.SourceSet`): each parsed at most once in
        this run, only when a question needs it, within the byte budget."""
        if self._sources is None:
            self._sources = static.SourceSet(self.backend.folder)
        return self._sources

    def function(self, module: str, qualname: str) -> ast.AST:
        """The AST of `qualname` in the student's module; a stub body counts as not attempted."""
        self.source(module)  # a missing file: not attempted
        try:
            tree = self.sources().tree(module)  # shared by this run's callers: read it, never change it
        except (SyntaxError, LookupError) as exc:
            raise ProbeError(module, detail=str(exc)) from None
        node = static.find_definition(tree, qualname)
        if node is None:
            raise ProbeError(module, detail=f"{module}.py defines no {qualname}")
        if static.is_stub(node):
            raise NotAttempted(module, detail=f"{qualname} is still a stub")
        return node


    def scope(self, module: str, qualname: str) -> static.Scope:
        """What a rule about `module.qualname` must hold for: the function, everything of the
        submission it can reach, the module-level code of every submission module involved, and
        the dynamic lookups found there (`grader.rules.static.build_scope`).  A stub counts as not
        attempted."""
        self.function(module, qualname)  # not attempted / missing / unparsable, as for one def
        try:
            return static.build_scope(self.sources(), module, qualname)
        except SyntaxError as exc:
            raise ProbeError(module, detail=str(exc)) from None
        except LookupError as exc:
            raise ProbeError(module, detail=str(exc)) from None


def _short(value: Any, limit: int = 120) -> str:
    return safe_repr(value, limit)


def safe_repr(value: Any, limit: int = 120) -> str:
    """A bounded description of untrusted data: never builds the full repr of a huge structure."""
    import torch

    def walk(v: Any, budget: list[int], depth: int) -> str:
        budget[0] -= 1
        if budget[0] < 0 or depth > 6:
            return "..."
        if type(v) is torch.Tensor:
            return f"tensor(shape={tuple(v.shape)}, dtype={v.dtype})"
        if type(v) in (list, tuple):
            items = []
            for item in v[:8]:
                items.append(walk(item, budget, depth + 1))
                if budget[0] < 0:
                    break
            more = ", ..." if len(v) > len(items) else ""
            open_, close = ("[", "]") if type(v) is list else ("(", ")")
            return open_ + ", ".join(items) + more + close
        if type(v) is dict:
            items = []
            for key in list(v)[:8]:
                items.append(f"{str(key)[:40]!r}: {walk(v[key], budget, depth + 1)}")
                if budget[0] < 0:
                    break
            return "{" + ", ".join(items) + (", ..." if len(v) > len(items) else "") + "}"
        if type(v) is str:
            return repr(v[:limit])
        if type(v) is int and v.bit_length() > 128:
            return f"<an integer of {v.bit_length()} bits>"
        if type(v) in (int, float, bool, type(None)):
            text = repr(v)
            return text if len(text) <= 40 else text[:37] + "..."
        return f"<{type(v).__name__}>"

    text = walk(value, [64], 0)
    return text if len(text) <= limit else text[: limit - 3] + "..."
