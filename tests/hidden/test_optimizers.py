"""Hidden tests for `optimizers`: other seeds, other hyperparameters, defaults, closures.

Same machinery and tolerances as the public tests (see tests/public/test_optimizers.py for how
EXACT and ADAPTIVE were chosen; ``python bench/optimizers_tolerances.py`` prints the
deviations of the solution, the allowed variants and the mutants on these runs too).
"""

from __future__ import annotations

import pytest

import math

import torch

from grader.testing.expect import assert_equal
from tests.public.test_optimizers import (ADAPTIVE, EXACT, TORCH_NAME, check_rules, check_trajectory,
                                          compare_trajectory, two_groups, unpack_run)

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


#: optimizer -> [(base kwargs, hyperparameter, the output layer's group's own value)]: each run
#: overrides ONE hyperparameter in the second group, so a step that reads it from self.defaults (or
#: an attribute) instead of the group shows.  The values are far enough from the base ones to move
#: the trajectory well past the tolerance within a few steps (eps: comparable to √v).  Adam/AdamW:
#: base ε = 1e-12 so that the accepted form with ε uncorrected (α_t folded) stays equivalent even
#: for the odd near-zero gradient; the ε run uses β2 = 0.3, where √(1 − β2^t) is close to 1 from the
#: first steps, so the uncorrected ε of that form stays ≤ 0.4 of the tolerance while ignoring the
#: group's ε = 3e-3 lands ≥ 3.5x over it (seeds 20-32, measured side by side with those two).
_ADAM = {"lr": 3e-3, "betas": [0.9, 0.999], "eps": 1e-12}
_ADAM_EPS = {"lr": 1e-3, "betas": [0.9, 0.3], "eps": 1e-12}
OVERRIDES = {
    "SGD": [({"lr": 0.05, "momentum": 0.5}, "lr", 0.02), ({"lr": 0.05, "momentum": 0.5}, "momentum", 0.9)],
    "AdaGrad": [({"lr": 0.05, "eps": 1e-10}, "lr", 0.1), ({"lr": 0.05, "eps": 1e-10}, "eps", 0.05)],
    "RMSProp": [({"lr": 2e-3, "alpha": 0.99, "eps": 1e-8}, key, value)
                for key, value in (("lr", 5e-3), ("alpha", 0.8), ("eps", 0.01))],
    "Adam": [({**_ADAM, "weight_decay": 0.0}, key, value)
             for key, value in (("lr", 1e-3), ("betas", [0.5, 0.9]), ("weight_decay", 0.3))]
            + [({**_ADAM_EPS, "weight_decay": 0.0}, "eps", 3e-3)],
    "AdamW": [({**_ADAM, "weight_decay": 0.1}, key, value)
              for key, value in (("lr", 1e-3), ("betas", [0.5, 0.9]), ("weight_decay", 0.5))]
             + [({**_ADAM_EPS, "weight_decay": 0.1}, "eps", 3e-3)],
}
OVERRIDE_STEPS, OVERRIDE_ROUND_TRIP_AT, OVERRIDE_SNAPSHOTS = 30, 15, [1, 2, 3, 5, 10, 20, 30]

#: float64 parameters, a loss scaled by 1e4 (gradient norms in the thousands), parameters of 0-3
#: dimensions and gradients missing on some steps: (optimizer, kwargs, kind); SGD's lr is scaled down
LARGE = [("SGD", {"lr": 1e-5, "momentum": 0.9}, EXACT), ("AdaGrad", {"lr": 0.05}, EXACT),
         ("RMSProp", {"lr": 1e-3}, EXACT), ("Adam", {"lr": 3e-3, "weight_decay": 0.01}, ADAPTIVE),
         ("AdamW", {"lr": 3e-3}, ADAPTIVE)]
LARGE_OPTIONS = {"extras": True, "dtype": "float64", "grad_scale": 1e4, "skip": {"k": [1, 2], "w2": [3, 9]}}
LARGE_GROUPS = [{"params": ["w1", "w2", "c", "unused"]}, {"params": ["b2", "k"]}]
LARGE_STEPS, LARGE_ROUND_TRIP_AT, LARGE_SNAPSHOTS = 30, 12, [1, 2, 3, 4, 5, 10, 20, 30]


def kind_of(name: str) -> str:
    return ADAPTIVE if name in ("Adam", "AdamW") else EXACT


def check_batch(student) -> None:
    """The override runs and the large-gradient float64 runs, in one probe call."""
    runs = []
    for name, overrides in OVERRIDES.items():
        for base, key, value in overrides:
            runs.append({"name": name, "kwargs": base, "groups": two_groups(**{key: value}), "seed": 20 + len(runs),
                         "steps": OVERRIDE_STEPS, "snapshots": OVERRIDE_SNAPSHOTS,
                         "round_trip_at": OVERRIDE_ROUND_TRIP_AT, "options": None})
    for name, kwargs, _ in LARGE:
        runs.append({"name": name, "kwargs": kwargs, "groups": LARGE_GROUPS, "seed": 40 + len(runs),
                     "steps": LARGE_STEPS, "snapshots": LARGE_SNAPSHOTS, "round_trip_at": LARGE_ROUND_TRIP_AT,
                     "options": LARGE_OPTIONS})
    got = student.probe("optimizers.trajectories", runs=runs)
    if type(got) is not list or len(got) != len(runs):
        raise AssertionError(f"optimizers.trajectories: expected a list of {len(runs)} results, got {type(got).__name__}")
    reached: dict[str, set[str]] = {}
    for r, result in zip(runs, got):
        snaps, wires = unpack_run(result, r["name"])
        reached.setdefault(r["name"], set()).update(wires)
        compare_trajectory(snaps, r["name"], r["kwargs"], r["groups"], seed=r["seed"], kind=kind_of(r["name"]),
                           steps=r["steps"], round_trip_at=r["round_trip_at"], snapshots=r["snapshots"],
                           options=r["options"])
    for name, wires in reached.items():
        check_rules(student, name, sorted(wires))


def check_cases(student, cases) -> None:
    for name, kwargs, groups, seed, steps, round_trip_at, kind in cases:
        check_trajectory(student, name, kwargs, groups, seed=seed, kind=kind, steps=steps, round_trip_at=round_trip_at,
                         snapshots=[1, 2, 5, 10, 30, 60, 100, 150, 200])


#: the hyperparameters each docstring names (the keys of `defaults` and of every group)
KEYS = {"SGD": ("lr", "momentum"), "AdaGrad": ("lr", "eps"), "RMSProp": ("lr", "alpha", "eps"),
        "Adam": ("lr", "betas", "eps", "weight_decay"), "AdamW": ("lr", "betas", "eps", "weight_decay")}
#: valid by the docstrings (lr >= 0, momentum >= 0, eps >= 0, weight_decay >= 0, alpha and betas in [0, 1)):
#: the lower ends, and values above 1 where only a lower bound exists
BOUNDARY = [("SGD", {"lr": 0.0, "momentum": 0.0}), ("AdaGrad", {"lr": 0.0, "eps": 0.0}),
            ("RMSProp", {"lr": 0.0, "alpha": 0.0, "eps": 0.0}),
            ("Adam", {"lr": 0.0, "betas": [0.0, 0.0], "eps": 0.0, "weight_decay": 0.0}),
            ("AdamW", {"lr": 0.0, "betas": [0.0, 0.0], "eps": 0.0, "weight_decay": 0.0}),
            # no upper bounds on lr, momentum, eps or weight decay (as torch.optim): momentum >= 1 is valid
            ("SGD", {"lr": 2.0, "momentum": 1.0}), ("AdaGrad", {"lr": 1.5, "eps": 1.0}),
            ("AdamW", {"lr": 1.0, "weight_decay": 2.0})]
#: out of the docstrings' ranges: each must raise ValueError
INVALID = [("SGD", {"lr": -1e-3}), ("SGD", {"momentum": -0.1}), ("AdaGrad", {"lr": -1e-2}), ("AdaGrad", {"eps": -1e-10}),
           ("RMSProp", {"lr": -1e-2}), ("RMSProp", {"eps": -1e-8}), ("RMSProp", {"alpha": 1.0}),
           ("RMSProp", {"alpha": -0.1})] + [
    (name, kwargs) for name in ("Adam", "AdamW") for kwargs in
    ({"lr": -1e-3}, {"eps": -1e-8}, {"weight_decay": -0.1}, {"betas": [1.0, 0.999]}, {"betas": [0.9, 1.0]},
     {"betas": [-0.1, 0.999]})]


def same_number(got, want) -> bool:
    """Equal as numbers (0 == 0.0; betas as a pair), exactly: defaults are constants, not results."""
    if isinstance(want, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(got) == len(want) and all(map(same_number, got, want))
    return type(got) in (int, float) and type(want) in (int, float) and not math.isnan(got) and got == want


@pytest.mark.points(1)
def test_trajectories_other_settings(student):
    """all five optimizers follow torch.optim with other seeds, betas, eps, round-trip points, a group overriding each hyperparameter, float64 and large gradients"""
    check_cases(student, CASES["test_trajectories_other_settings"])
    check_batch(student)


@pytest.mark.points(1)
def test_default_hyperparameters_match_torch(student):
    """each optimizer's defaults (opt.defaults and a run) are torch.optim's; boundary values are accepted, invalid ones raise ValueError"""
    check_cases(student, CASES["test_default_hyperparameters_match_torch"])
    names = list(TORCH_NAME)
    got = student.probe("optimizers.constructed", cases=[[name, {}] for name in names])
    for name, result in zip(names, got):
        want = torch.optim.__dict__[TORCH_NAME[name]]([torch.nn.Parameter(torch.zeros(2))]).defaults
        for where in ("defaults", "group"):
            for key in KEYS[name]:
                value = result.get(where, {}).get(key) if isinstance(result, dict) else None
                what = (f"{name}(params).{'defaults' if where == 'defaults' else 'param_groups[0]'}['{key}'] "
                        f"(torch.optim.{TORCH_NAME[name]}'s default)")
                assert same_number(value, want[key]), f"{what}: expected {want[key]!r}, got {value!r}"
    boundary = [[name, kwargs] for name, kwargs in BOUNDARY]
    for (name, kwargs), result in zip(BOUNDARY, student.probe("optimizers.constructed", cases=boundary)):
        what = f"{name}(params, {', '.join(f'{k}={v}' for k, v in kwargs.items())})"
        assert isinstance(result, dict) and "group" in result, (
            f"{what} is valid (the docstring's ranges include it) but raised "
            f"{result.get('error') if isinstance(result, dict) else result!r}")
        for key, value in kwargs.items():
            assert same_number(result["group"].get(key), value), (
                f"{what}: param_groups[0]['{key}'] expected {value!r}, got {result['group'].get(key)!r}")
    invalid = [[name, kwargs] for name, kwargs in INVALID]
    for (name, kwargs), result in zip(INVALID, student.probe("optimizers.constructed", cases=invalid)):
        what = f"{name}(params, {', '.join(f'{k}={v}' for k, v in kwargs.items())})"
        error = result.get("error") if isinstance(result, dict) else None
        assert error == "ValueError", f"{what}: expected ValueError (out of the docstring's range), got " + (
            f"{error}" if error else "no error")


@pytest.mark.points(1)
def test_step_calls_closure(student):
    """step(closure) calls the closure once, before updating, and returns its loss; step() returns None"""
    for name, kwargs in [("SGD", {"lr": 0.1}), ("AdaGrad", {"lr": 0.1}), ("RMSProp", {"lr": 0.01}),
                         ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01})]:
        got = student.probe("optimizers.closure_loss", name=name, kwargs=kwargs, seed=3)
        assert_equal(got["calls"], 1, f"{name}.step(closure): number of closure calls")
        assert_equal(got["moved"], True, f"{name}.step(closure) updated the parameters from the closure's gradients")
        assert_equal(got["returned"], got["loss"], f"{name}.step(closure) returned the closure's loss", kind=float)
        # the docstrings: "return the closure's loss or None"
        assert_equal(got["without_closure"], "None", f"{name}.step() without a closure returned", kind=str)
