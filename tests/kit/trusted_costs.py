"""A pytest plugin for the kit's tests of the trusted side's budgets (`tests/kit/test_budgets.py`).

Never part of grading: a test loads it into `grader grade`'s trusted workers through pytest's own
``PYTEST_PLUGINS`` variable, in the environment of the `grader grade` it starts.  It stands for
trusted code that a submission drives into a long computation or a large allocation (the ways the
red team found: a quadratic scope builder, a reply that is slow to decode, a checkpoint that
inflates), deterministically: a submission whose ``memory.py`` holds the line ``MARK {json}`` makes
the trusted process itself, before the graded test number ``at`` (1-based, in run order) and every
later one,

* ``{"cpu": SECONDS}``: compute for SECONDS of this process's CPU time (and return);
* ``{"spin": true}``: compute and never return (only the parent's hard limit ends it);
* ``{"sleep": true}``: wait and never return (no CPU: only a kill from outside ends it);
* ``{"allocate_mb": N}``: allocate N MiB and touch every page (keeps them).

A test not numbered (no ``at``) counts from the first.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

MARK = "# KIT-TEST-TRUSTED-COST: "
_held: list[bytes] = []
_count = {"tests": 0, "target": ""}


def _cost(config: pytest.Config) -> dict[str, Any]:
    target = config.getoption("--target") or ""
    try:
        text = (Path(target) / "memory.py").read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    return {}


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    target = str(item.config.getoption("--target"))
    if _count["target"] != target:  # a new submission (the worker grades one after another)
        _count.update(tests=0, target=target)
    _count["tests"] += 1
    cost = _cost(item.config)
    if not cost or _count["tests"] < int(cost.get("at", 1)):
        return
    if cost.get("cpu"):
        _burn(float(cost["cpu"]))
    if cost.get("spin"):
        while True:
            _burn(60.0)
    if cost.get("sleep"):
        while True:
            time.sleep(60)
    if cost.get("allocate_mb"):
        _held.append(b"x" * (int(cost["allocate_mb"]) * 2**20))
