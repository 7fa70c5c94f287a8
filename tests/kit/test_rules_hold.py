"""Rules hold for the program that runs, and rules never award points of their own.

* Each case of `tests/adversarial/rules.py` does a forbidden thing through a trick that a
  reading of one `def` would miss; it must not score above its honest twin (the same
  submission with the ruled function raising).
* A do-nothing submission (every stub body `return None`, or `pass`) scores 0 points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.validate import grade_targets
from tests.adversarial.rules import CASES, build, do_nothing, twin

pytestmark = pytest.mark.kit


def _earned(records: list[dict]) -> float:
    return sum(r["points"] for r in records if r["status"] == "passed")


def test_tricks_score_no_more_than_their_twins(tmp_path: Path) -> None:
    targets: list[tuple[Path, str]] = []
    for i, case in enumerate(CASES):
        targets.append((build(case, tmp_path / f"case{i}"), case.module))
        targets.append((twin(case, tmp_path / f"twin{i}"), case.module))
    runs = grade_targets(targets, jobs=2)
    problems = []
    for i, case in enumerate(CASES):
        trick, honest = runs[2 * i], runs[2 * i + 1]
        if not trick or not honest:
            problems.append(f"{case.name}: a run did not report")
        elif _earned(trick) > _earned(honest):
            gained = sorted(r["id"] for r in trick if r["status"] == "passed"
                            and not any(h["id"] == r["id"] and h["status"] == "passed" for h in honest))
            problems.append(f"{case.name} ({case.why}): {_earned(trick)} > twin {_earned(honest)}; gained {gained}")
    assert not problems, "rule tricks that bought points:\n" + "\n".join(problems)


@pytest.mark.parametrize("body", ["return None", "pass"])
def test_do_nothing_scores_zero(tmp_path: Path, body: str) -> None:
    from grader import MODULES

    target = do_nothing(tmp_path / "sub", body)
    runs = grade_targets([(target, m) for m in MODULES], jobs=2)
    earned = {m: [r["id"] for r in recs if r["status"] == "passed"] for m, recs in zip(MODULES, runs)}
    assert all(runs), "a module's run did not report"
    leaks = {m: ids for m, ids in earned.items() if ids}
    assert not leaks, f"a submission that does nothing earned points: {leaks}"
