"""What the trusted checks read is what was staged before the submission's code ran: the sandbox
fixture freezes the sources first, so code that rewrites its own file at import (possible where a
launcher has no read-only mount and no uid of its own: rlimits without root) cannot show the rules
a benign file while another one ran."""

from __future__ import annotations

from pathlib import Path

from grader.rules.sources import SourceSet
from grader.testing.student import Student


class _NoBackend:
    folder = None

    def source(self, module):  # the frozen sources must be enough: the folder is never read again
        raise AssertionError("read from the folder after the freeze")


def test_frozen_sources_ignore_later_writes(tmp_path: Path) -> None:
    (tmp_path / "views.py").write_text("def transpose_view(x):\n    return x.mT\n")
    (tmp_path / "utils.py").write_text("K = 1\n")
    frozen = SourceSet(tmp_path).freeze()
    (tmp_path / "views.py").write_text("def transpose_view(x):\n    return x.t()  # rewritten at import\n")
    (tmp_path / "utils.py").unlink()
    (tmp_path / "late.py").write_text("X = 2\n")
    student = Student(_NoBackend(), str(tmp_path), frozen)
    assert "x.mT" in student.source("views") and "rewritten" not in student.source("views")
    assert frozen.names == {"views", "utils"} and frozen.data("utils") == b"K = 1\n"
    scope = student.scope("views", "transpose_view")
    assert "mT" in {getattr(n, "attr", None) for node in scope.nodes for n in __import__("ast").walk(node)}
