"""Public tests for `optimizers`: every expected trajectory is torch.optim's, computed here.

Each trajectory test trains the same seeded model twice, once with the student's optimizer
(through a probe) and once with torch.optim (in this process), on identical data: 200 steps,
two parameter groups with their own hyperparameters, a parameter whose grad stays None, and a
``state_dict()`` round trip into a fresh optimizer after step 100.  The parameters are compared
after steps 1, 2, 5, 20, 50, 100, 150 and 200.

Tolerances (|student − torch| per parameter, at each snapshot; parameters are O(0.1–1)),
measured on these runs and the hidden ones with each case's own seed and seeds 1–3
(``python bench/optimizers_tolerances.py`` prints the whole table, as deviation and as a
multiple of the tolerance):

* SGD, AdaGrad, RMSProp: ATOL_EXACT = 1e-4 at every snapshot.  A correct implementation differs
  from torch.optim by float32 rounding only (out-of-place arithmetic: at most 5.4e-7, 200×
  below).  Mutants, on the runs that exercise their bug: AdaGrad with ε inside the square
  root 3.7e-4 (1.2e-3 on this test's seed), SGD's momentum buffer kept outside self.state
  (lost by the round trip) 1.6e-3, RMSProp with ε inside the square root 2.1e-3, momentum with
  dampening 5e-2, RMSProp summing instead of averaging 0.11, AdaGrad without accumulation 0.9.
* Adam, AdamW: 1e-4 + 2e-5 per step taken, at most 4e-3 (so 1.2e-4 after step 1, 1.1e-3 after
  step 50, 4e-3 from step 195).  The tolerance grows with the steps because the accepted
  formulations drift apart step by step: AdamW's decay applied after the Adam update on the
  updated p (a term of order lr²·λ per step) reaches 3.6e-4 after 200 steps (≤ 0.13 of the
  tolerance at every snapshot); the bias corrections folded into the step size (ε enters
  uncorrected) at most 3.9e-5 (≤ 0.33 of it).  The tight early tolerance is what catches
  bugs that only show in the first steps.  Mutants, as multiples of the tolerance: ignoring a
  group's own weight_decay ≥ 4.2×, bias corrections one step ahead (1 − β^(t+1)) ≥ 10× (3× in
  the 30-step default-hyperparameter run), step count kept outside self.state ≥ 8×, a None
  gradient treated as zero ≥ 43×, AdamW without bias correction ≥ 130×, ignoring a group's
  lr ≥ 150×, Adam-with-L2 passed off as AdamW ≥ 400×, decay not scaled by lr ≥ 4600×.
"""

from __future__ import annotations

import ast

import pytest
import torch

from grader.expect import assert_equal, assert_tensor
from grader.student import NotAttempted
from tests.probes._optimizers_rules import torch_optim_uses
from tests.probes._optimizers_setup import make_parameters, run, state_census, train_a_little

EXACT, ADAPTIVE = "exact", "adaptive"
ATOL_EXACT = 1e-4  # SGD, AdaGrad, RMSProp: at every snapshot
# Adam, AdamW: 1e-4 plus 2e-5 per step taken, at most 4e-3
ATOL_ADAPTIVE_FLOOR, ATOL_ADAPTIVE_PER_STEP, ATOL_ADAPTIVE = 1e-4, 2e-5, 4e-3


def tolerance(kind: str, step: int) -> float:
    """The atol for the parameters after `step` steps."""
    if kind == EXACT:
        return ATOL_EXACT
    return min(ATOL_ADAPTIVE, ATOL_ADAPTIVE_FLOOR + ATOL_ADAPTIVE_PER_STEP * step)

STEPS, ROUND_TRIP_AT = 200, 100
SNAPSHOTS = [1, 2, 5, 20, 50, 100, 150, 200]
TORCH_NAME = {"SGD": "SGD", "AdaGrad": "Adagrad", "RMSProp": "RMSprop", "Adam": "Adam", "AdamW": "AdamW"}


def two_groups(**second) -> list[dict]:
    """Group 0: the hidden layer and the never-used parameter, with the optimizer's own
    hyperparameters; group 1: the output layer (w2, b2) with hyperparameters of its own."""
    return [{"params": ["w1", "unused"]}, {"params": ["w2", "b2"], **second}]


def check_trajectory(student, name: str, kwargs: dict, groups: list[dict], *, seed: int, kind: str,
                     steps: int = STEPS, round_trip_at: int | None = ROUND_TRIP_AT,
                     snapshots: list[int] = SNAPSHOTS, device: str = "cpu") -> None:
    snapshots = [s for s in snapshots if s <= steps]
    got = student.probe("optimizers.trajectory", name=name, groups=groups, kwargs=kwargs, seed=seed, steps=steps,
                        snapshots=snapshots, round_trip_at=round_trip_at, device=device)
    torch_cls = getattr(torch.optim, TORCH_NAME[name])
    torch_kwargs = {k: (tuple(v) if k == "betas" else v) for k, v in kwargs.items()}
    want = run(lambda g: torch_cls(g, **torch_kwargs), groups, seed, steps, snapshots, round_trip_at, device)
    overrides = ", ".join(f"{k}={v}" for g in groups[1:] for k, v in g.items() if k != "params")
    what = (f"{name}({', '.join(f'{k}={v}' for k, v in kwargs.items())}) vs torch.optim.{TORCH_NAME[name]}, "
            f"parameters after steps {snapshots}" + (f" (output layer's group: {overrides})" if overrides else "")
            + (f", state_dict round trip after step {round_trip_at}" if round_trip_at else ""))
    if type(got) is torch.Tensor and got.shape == want.shape:
        unused = slice(want.shape[1] - make_parameters(0)["unused"].numel(), None)
        if not torch.equal(got[:, unused], want[:, unused]):
            raise AssertionError(f"{what}: the parameter whose .grad is None changed; skip it entirely "
                                 "(no update, no weight decay)")
    assert_tensor(got, like=want, what=what, atol=ATOL_ADAPTIVE if kind == ADAPTIVE else ATOL_EXACT)
    for row, step in enumerate(snapshots):  # same type and shape: compare step by step
        assert_tensor(got[row], like=want[row], what=f"{what}: after step {step}", atol=tolerance(kind, step))


#: test name -> the runs it checks: (optimizer, kwargs, groups, seed, steps, round trip after, tolerance kind)
CASES = {
    "test_sgd_matches_torch": [
        ("SGD", {"lr": 0.1}, two_groups(lr=0.05), 0, 50, 25, EXACT),
        ("SGD", {"lr": 0.05, "momentum": 0.9}, two_groups(lr=0.02, momentum=0.5), 0, STEPS, ROUND_TRIP_AT, EXACT),
    ],
    "test_adagrad_matches_torch": [
        ("AdaGrad", {"lr": 0.1}, two_groups(lr=0.05), 0, STEPS, ROUND_TRIP_AT, EXACT),
    ],
    "test_rmsprop_matches_torch": [
        ("RMSProp", {"lr": 1e-3, "alpha": 0.99}, two_groups(lr=3e-3, alpha=0.9), 0, STEPS, ROUND_TRIP_AT, EXACT),
    ],
    "test_adam_matches_torch": [
        ("Adam", {"lr": 5e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.1},
         two_groups(lr=2e-3, weight_decay=0.0), 0, STEPS, ROUND_TRIP_AT, ADAPTIVE),
    ],
    "test_adamw_matches_torch": [
        ("AdamW", {"lr": 5e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.1},
         two_groups(lr=2e-3, weight_decay=0.0), 0, STEPS, ROUND_TRIP_AT, ADAPTIVE),
    ],
}


def check_cases(student, cases) -> None:
    for name, kwargs, groups, seed, steps, round_trip_at, kind in cases:
        check_trajectory(student, name, kwargs, groups, seed=seed, kind=kind, steps=steps, round_trip_at=round_trip_at)


@pytest.mark.points(1)
def test_sgd_matches_torch(student):
    """SGD with and without momentum follows torch.optim.SGD over 200 steps, with param groups and a state_dict round trip"""
    check_cases(student, CASES["test_sgd_matches_torch"])


@pytest.mark.points(1)
def test_adagrad_matches_torch(student):
    """AdaGrad follows torch.optim.Adagrad over 200 steps, with param groups and a state_dict round trip"""
    check_cases(student, CASES["test_adagrad_matches_torch"])


@pytest.mark.points(1)
def test_rmsprop_matches_torch(student):
    """RMSProp follows torch.optim.RMSprop over 200 steps, with param groups and a state_dict round trip"""
    check_cases(student, CASES["test_rmsprop_matches_torch"])


@pytest.mark.points(1)
def test_adam_matches_torch(student):
    """Adam (L2 weight decay in the gradient) follows torch.optim.Adam over 200 steps, with param groups and a state_dict round trip"""
    check_cases(student, CASES["test_adam_matches_torch"])


@pytest.mark.points(2)
def test_adamw_matches_torch(student):
    """AdamW (decoupled decay, bias correction) follows torch.optim.AdamW over 200 steps, with param groups and a state_dict round trip"""
    check_cases(student, CASES["test_adamw_matches_torch"])


def expected_state(name: str, kwargs: dict) -> int:
    """Optimizer state values per parameter element, from the memory table."""
    return {"SGD": 1 if kwargs.get("momentum", 0.0) else 0, "AdaGrad": 1, "RMSProp": 1, "Adam": 2, "AdamW": 2}[name]


@pytest.mark.points(1)
def test_optimizer_state_bytes(student):
    """optimizer_state_bytes counts every state tensor's bytes: AdamW keeps 2 fp32 values (8 bytes) per parameter, torch's tensor steps count too"""
    params = make_parameters(0)
    trained = sum(p.numel() for n, p in params.items() if n != "unused")
    for name, kwargs in [("AdamW", {"lr": 1e-3}), ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                         ("AdaGrad", {"lr": 0.1}), ("RMSProp", {"lr": 1e-3}), ("Adam", {"lr": 1e-3})]:
        got = student.probe("optimizers.state_bytes", name=name, kwargs=kwargs, seed=0, steps=3)
        census = got["census"]
        what = f"{name}({', '.join(f'{k}={v}' for k, v in kwargs.items())}) after 3 steps"
        # what the kit counts in the student's optimizer.state, per parameter
        assert_equal(census["unused"]["tensor_bytes"], 0, f"{what}: bytes of state kept for the parameter whose "
                     ".grad is None (skip it: no state)")
        moments = sum(c["param_shaped_bytes"] for c in census.values())
        assert_equal(moments, 4 * expected_state(name, kwargs) * trained,
                     f"{what}: bytes of per-parameter state tensors for {trained} fp32 parameters "
                     f"({expected_state(name, kwargs)} fp32 values each, as in the memory table)")
        total = sum(c["tensor_bytes"] for c in census.values())
        assert_equal(got["reported"], total, f"optimizer_state_bytes of {what} (the bytes of all tensors in its state)")
    for name, kwargs in [("AdamW", {"lr": 1e-3}), ("SGD", {"lr": 0.1, "momentum": 0.9})]:
        params = make_parameters(1)
        optimizer = getattr(torch.optim, name)(list(params.values()), **kwargs)
        train_a_little(optimizer, params, 1, 3)
        want = sum(c["tensor_bytes"] for c in state_census(optimizer, params).values())
        got = student.probe("optimizers.state_bytes_of_torch_optimizer", name=name, kwargs=kwargs, seed=1, steps=3)
        assert_equal(got, want, f"optimizer_state_bytes(torch.optim.{name}) after 3 steps (its step counts are "
                                "0-d float32 tensors: 4 bytes each)")


@pytest.mark.points(1)
def test_no_torch_optim_update_code(student):
    """the optimizers use nothing from torch.optim but the Optimizer base class (read from the source)"""
    stubs = []
    for name in ("SGD", "AdaGrad", "RMSProp", "Adam", "AdamW"):
        try:
            student.function("optimizers", name)
        except NotAttempted as exc:
            stubs.append(exc)
    if len(stubs) == 5:
        raise stubs[0]
    hits = torch_optim_uses(ast.parse(student.source("optimizers")))
    assert not hits, ("optimizers.py uses torch.optim beyond the Optimizer base class (or a dynamic lookup): "
                      + "; ".join(hits))


@pytest.mark.gpu
@pytest.mark.points(2)
def test_adamw_on_cuda(student):
    """AdamW on CUDA parameters (state on the parameter's device) follows torch.optim.AdamW on CUDA"""
    check_trajectory(student, "AdamW", {"lr": 5e-3, "weight_decay": 0.1}, two_groups(lr=2e-3, weight_decay=0.0),
                     seed=5, kind=ADAPTIVE, steps=100, round_trip_at=50, device="cuda")
