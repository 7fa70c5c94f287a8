"""Scores from test records: earned / possible per module, pending GPU points kept apart."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from grader import MODULES

STATUSES = ("passed", "failed", "not_attempted", "pending", "error", "skipped")


@dataclass
class ModuleScore:
    module: str
    earned: float = 0.0
    possible: float = 0.0
    pending: float = 0.0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))


def score(records: Iterable[dict[str, Any]]) -> dict[str, ModuleScore]:
    """Per module: earned and possible points; pending tests' points are neither (listed apart)."""
    table = {m: ModuleScore(m) for m in MODULES}
    for r in records:
        s = table.setdefault(r["module"], ModuleScore(r["module"]))
        s.counts[r["status"]] = s.counts.get(r["status"], 0) + 1
        if r["status"] == "pending":
            s.pending += r["points"]
            continue
        s.possible += r["points"]
        if r["status"] == "passed":
            s.earned += r["points"]
    return {m: s for m, s in table.items() if s.possible or s.pending}


def totals(table: dict[str, ModuleScore]) -> tuple[float, float, float]:
    return (sum(s.earned for s in table.values()), sum(s.possible for s in table.values()),
            sum(s.pending for s in table.values()))
