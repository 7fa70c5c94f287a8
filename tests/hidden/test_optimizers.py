"""Hidden tests for `optimizers`: other seeds, other hyperparameters, defaults, closures.

Same machinery and tolerances as the public tests (see tests/public/test_optimizers.py for how
EXACT and ADAPTIVE were chosen; ``python bench/optimizers_tolerances.py`` prints the
deviations of the solution, the allowed variants and the mutants on these runs too).
"""

from __future__ import annotations

import pytest

from grader.expect import assert_equal
from tests.public.test_optimizers import ADAPTIVE, EXACT, check_trajectory

ALL = [{"params": ["w1", "w2", "b2", "unused"]}]

#: test name -> (optimizer, kwargs, groups, seed, steps, round trip after, tolerance kind)
CASES = {
    "test_trajectories_other_settings": [
        # a group without momentum inside a momentum optimizer
        ("SGD", {"lr": 0.03, "momentum": 0.5}, [{"params": ["w1", "unused"]}, {"params": ["w2", "b2"], "lr": 0.1,
                                                                              "momentum": 0.0}], 7, 120, 60, EXACT),
        ("AdaGrad", {"lr": 0.05, "eps": 1e-6}, [{"params": ["w1", "unused"]}, {"params": ["w2", "b2"], "lr": 0.2}],
         8, 120, 41, EXACT),
        ("RMSProp", {"lr": 2e-3, "alpha": 0.95}, [{"params": ["w2", "unused"]}, {"params": ["w1", "b2"], "lr": 5e-4,
                                                                                 "eps": 1e-6}], 9, 120, 77, EXACT),
        ("Adam", {"lr": 3e-3, "betas": [0.8, 0.99], "weight_decay": 0.05},
         [{"params": ["w1", "unused"]}, {"params": ["w2", "b2"], "lr": 4e-3, "weight_decay": 0.2}], 10, 200, 100,
         ADAPTIVE),
        ("AdamW", {"lr": 4e-3, "betas": [0.85, 0.98], "eps": 1e-7, "weight_decay": 0.2},
         [{"params": ["w1", "unused"]}, {"params": ["w2", "b2"], "lr": 1e-3, "weight_decay": 0.05}], 11, 200, 37,
         ADAPTIVE),
    ],
    "test_default_hyperparameters_match_torch": [
        (name, {}, ALL, 12, 30, None, kind) for name, kind in
        [("SGD", EXACT), ("AdaGrad", EXACT), ("RMSProp", EXACT), ("Adam", ADAPTIVE),
         ("AdamW", ADAPTIVE)]
    ],
}


def check_cases(student, cases) -> None:
    for name, kwargs, groups, seed, steps, round_trip_at, kind in cases:
        check_trajectory(student, name, kwargs, groups, seed=seed, kind=kind, steps=steps, round_trip_at=round_trip_at,
                         snapshots=[1, 2, 5, 10, 30, 60, 100, 150, 200])


@pytest.mark.points(1)
def test_trajectories_other_settings(student):
    """all five optimizers follow torch.optim with other seeds, betas, eps, per-group settings and round-trip points"""
    check_cases(student, CASES["test_trajectories_other_settings"])


@pytest.mark.points(1)
def test_default_hyperparameters_match_torch(student):
    """constructed with only the parameters, each optimizer uses torch.optim's default hyperparameters"""
    check_cases(student, CASES["test_default_hyperparameters_match_torch"])


@pytest.mark.points(1)
def test_step_calls_closure(student):
    """step(closure) calls the closure once, before updating, and returns its loss"""
    for name, kwargs in [("SGD", {"lr": 0.1}), ("AdaGrad", {"lr": 0.1}), ("RMSProp", {"lr": 0.01}),
                         ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01})]:
        got = student.probe("optimizers.closure_loss", name=name, kwargs=kwargs, seed=3)
        assert_equal(got["calls"], 1, f"{name}.step(closure): number of closure calls")
        assert_equal(got["moved"], True, f"{name}.step(closure) updated the parameters from the closure's gradients")
        assert_equal(got["returned"], got["loss"], f"{name}.step(closure) returned the closure's loss", kind=float)
