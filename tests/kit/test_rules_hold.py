"""Rules hold for the program that runs, and rules never award points of their own.

* Each case of `tests/adversarial/rules.py` does a forbidden thing through a trick that a
  reading of one `def` would miss; it must not score above its honest twin (the same
  submission with the ruled function raising).
* A do-nothing submission (every stub body `return None`, or `pass`) scores 0 points.
* Each case of `tests/adversarial/budgets_static.py` (an honest solution carrying what once made
  the trusted process parse without a budget: a never-imported 1.9 MiB helper, 6,000 defs the
  rules reach) scores exactly what its honest twin scores, test by test.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from grader.authoring.validate import grade_targets
from tests.adversarial.budgets_static import STATIC_CASES
from tests.adversarial.rules import CASES, build, do_nothing, twin

pytestmark = pytest.mark.kit


def _earned(records: list[dict]) -> float:
    return sum(r["points"] for r in records if r["status"] == "passed")


def _graded_with_twins(cases: list, makers: Callable, tmp_path: Path,
                       twin_key: Callable | None = None) -> list[tuple[list[dict], list[dict]]]:
    """(records of the case, records of its honest twin) for each case, graded with its module's
    tests in one batch of runs; `makers(case)` gives (build the case, build its twin).  Cases whose
    `twin_key` is equal have the same twin, graded once (the rule tricks: 54 cases, 6 twins)."""
    targets: list[tuple[Path, str]] = []
    twin_at: dict[object, int] = {}
    where: list[tuple[int, int]] = []
    for i, case in enumerate(cases):
        make, make_twin = makers(case)
        case_at = len(targets)
        targets.append((make(tmp_path / f"case{i}"), case.module))
        key = twin_key(case) if twin_key is not None else i
        if key not in twin_at:
            twin_at[key] = len(targets)
            targets.append((make_twin(tmp_path / f"twin{i}"), case.module))
        where.append((case_at, twin_at[key]))
    runs = grade_targets(targets, jobs=2, warm=True)
    return [(runs[case_at], runs[twin]) for case_at, twin in where]


def test_tricks_score_no_more_than_their_twins(tmp_path: Path) -> None:
    # a twin is the case's module with the ruled function raising: the same for every case with that pair
    runs = _graded_with_twins(CASES, lambda c: (partial(build, c), partial(twin, c)), tmp_path,
                              twin_key=lambda c: (c.module, c.ruled))
    problems = []
    for case, (trick, honest) in zip(CASES, runs):
        if not trick or not honest:
            problems.append(f"{case.name}: a run did not report")
        elif _earned(trick) > _earned(honest):
            gained = sorted(r["id"] for r in trick if r["status"] == "passed"
                            and not any(h["id"] == r["id"] and h["status"] == "passed" for h in honest))
            problems.append(f"{case.name} ({case.why}): {_earned(trick)} > twin {_earned(honest)}; gained {gained}")
    assert not problems, "rule tricks that bought points:\n" + "\n".join(problems)


def test_budget_cases_score_exactly_their_twins(tmp_path: Path) -> None:
    runs = _graded_with_twins(STATIC_CASES, lambda c: (c.build, c.twin), tmp_path)
    problems = []
    for case, (loaded, honest) in zip(STATIC_CASES, runs):
        if not loaded or not honest:
            problems.append(f"{case.name}: a run did not report")
            continue
        passed = {r["id"] for r in loaded if r["status"] == "passed"}
        twin_passed = {r["id"] for r in honest if r["status"] == "passed"}
        if passed != twin_passed or _earned(loaded) != _earned(honest):
            failed = {r["id"]: r.get("message", "")[:200] for r in loaded if r["id"] in twin_passed - passed}
            problems.append(f"{case.name} ({case.why}): {_earned(loaded)} vs twin {_earned(honest)}; lost {failed}; "
                            f"gained {sorted(passed - twin_passed)}")
    assert not problems, "budget cases that do not score their twin's points:\n" + "\n".join(problems)


@pytest.mark.parametrize("body", ["return None", "pass"])
def test_do_nothing_scores_zero(tmp_path: Path, body: str) -> None:
    from grader import MODULES

    target = do_nothing(tmp_path / "sub", body)
    runs = grade_targets([(target, m) for m in MODULES], jobs=2)
    earned = {m: [r["id"] for r in recs if r["status"] == "passed"] for m, recs in zip(MODULES, runs)}
    assert all(runs), "a module's run did not report"
    leaks = {m: ids for m, ids in earned.items() if ids}
    assert not leaks, f"a submission that does nothing earned points: {leaks}"
