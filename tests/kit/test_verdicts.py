"""Probes return observations, the trusted side judges: patching the instruments next to the
code under test (gradcheck, storage pointers, the clock, the peak-memory mark) buys nothing.

Graded with `grader grade` in the sandbox (the in-process backend shares one process with the
code under test, so it is no boundary: only sandboxed grades count).  Each trick must score no
more than its honest twin (the same wrong code without the trick).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from grader.batch.grade import GradeOptions, grade
from tests.adversarial.verdicts import CASES, MODULES, build

pytestmark = pytest.mark.kit


def test_patched_instruments_buy_nothing(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    problems = []
    for module in MODULES:  # one small batch per module: each pair is graded by its own module's tests
        cases = [c for c in CASES if c.module == module]
        if not cases:
            continue
        root = tmp_path / module / "subs"
        root.mkdir(parents=True)
        for case in cases:
            build(case.name, case.module, case.trick, root)
            build(case.name + "_twin", case.module, case.twin, root)
        result = grade([root], GradeOptions(out=tmp_path / module / "out", jobs=2, modules=(module,), progress=False),
                       Console(file=io.StringIO(), width=200))
        scores = {o.student: o for o in result.outcomes}
        for case in cases:
            trick, twin = scores.get(case.name), scores.get(case.name + "_twin")
            if trick is None or twin is None or trick.status != "graded" or twin.status != "graded":
                problems.append(f"{case.name}: not graded ({trick and trick.message} / {twin and twin.message})")
            elif trick.score > twin.score:
                problems.append(f"{case.name} ({case.why}): {trick.score} > its twin's {twin.score}")
    assert not problems, "\n".join(problems)
