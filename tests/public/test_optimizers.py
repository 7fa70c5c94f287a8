"""Public tests for `optimizers`: every expected trajectory is torch.optim's, computed here.

Each trajectory test trains the same seeded model twice, once with the student's optimizer
(through a probe) and once with torch.optim (in this process), on identical data: 200 steps,
two parameter groups with their own hyperparameters, a parameter whose grad stays None, and a
``state_dict()`` round trip into a fresh optimizer after step 100.  The parameters are compared
after steps 1, 2, 5, 20, 50, 100, 150 and 200.  Each optimizer also runs a 40-step *scenario*
(`scenario()` below: 0-d and 3-d parameters, gradients missing on some steps only or all zeros, the lr
changed before step 10, zero_grad(set_to_none=False) with in-place gradients, gradients 100x
larger, .grad compared before/after each step), compared after every step 1-12, 16, 20, 30, 40
with the same tolerances (the correct formulations stay as far under them: the large
gradients make ε negligible, and every step is compared early on, where bugs show).  A
mismatch names the first step after which the student's run left torch's.  The torch.optim
rule (`check_rules`) is a gate at the end of each optimizer's test, never points of its own.

Tolerances (|student − torch| per parameter, at each snapshot; parameters are O(0.1–1)),
measured on these runs and the hidden ones with each case's own seed and seeds 1–3
(in the instructor repository, ``python bench/optimizers_tolerances.py`` prints the whole
table, as deviation and as a multiple of the tolerance; it needs the reference solutions, so it
does not ship to students):

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

import pytest
import torch

from grader.testing import figures
from grader.testing.expect import assert_equal, assert_type
from grader.testing.reference import reference
from tests.probes._optimizers_rules import torch_optim_uses_in
from tests.probes._optimizers_setup import make_parameters, names, run, state_census, train_a_little

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


def describe_run(name: str, kwargs: dict, groups: list[dict], round_trip_at: int | None, options: dict | None) -> str:
    """The run in words, for the failure message."""
    text = f"{name}({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
    text += "; groups " + " | ".join(
        ", ".join(g["params"]) + "".join(f", {k}={v}" for k, v in g.items() if k != "params") for g in groups)
    if round_trip_at:
        text += f"; state_dict round trip into a fresh optimizer after step {round_trip_at}"
    options = options or {}
    if options.get("extras"):
        text += "; extra parameters c (0-d) and k (2x1x4)"
    for pname, steps in options.get("skip", {}).items():
        text += f"; {pname}.grad is None on steps {steps}"
    for pname, steps in options.get("zero", {}).items():
        text += f"; {pname}.grad is all zeros (not None) on steps {steps}"
    for at, group, key, value in options.get("set", []):
        text += f"; param_groups[{group}]['{key}'] = {value} before step {at}"
    if "grad_scale" in options:
        text += f"; loss scaled by {options['grad_scale']:g} (large gradients)"
    if options.get("set_to_none") is False:
        text += "; zero_grad(set_to_none=False), gradients written into the existing .grad in place"
    if options.get("dtype", "float32") != "float32":
        text += f"; {options['dtype']} parameters"
    return text


def _locate(column: int, seed: int, options: dict | None) -> str:
    """'w1[3, 5]' (or 'w1.grad[3, 5]') for a column of a snapshot row."""
    params = make_parameters(seed, options=options)
    order = names(options)
    blocks = [(n, "") for n in order]
    for pname, suffix in blocks:
        size = params[pname].numel()
        if column < size:
            shape = params[pname].shape
            index = [int(i) for i in torch.unravel_index(torch.tensor(column), shape)] if len(shape) else []
            return f"{pname}{suffix}[{', '.join(map(str, index))}]"
        column -= size
    return f"column {column}"


def check_trajectory(student, name: str, kwargs: dict, groups: list[dict], *, seed: int, kind: str,
                     steps: int = STEPS, round_trip_at: int | None = ROUND_TRIP_AT,
                     snapshots: list[int] = SNAPSHOTS, device: str = "cpu", options: dict | None = None) -> list[str]:
    """One run of the student's optimizer against torch.optim's; the tripwires its step() calls reached."""
    snapshots = [s for s in snapshots if s <= steps]
    got = student.probe("optimizers.trajectory", name=name, groups=groups, kwargs=kwargs, seed=seed, steps=steps,
                        snapshots=snapshots, round_trip_at=round_trip_at, device=device, options=options)
    snaps, reached = unpack_run(got, name)
    compare_trajectory(snaps, name, kwargs, groups, seed=seed, kind=kind, steps=steps, round_trip_at=round_trip_at,
                       snapshots=snapshots, device=device, options=options)
    return reached


def unpack_run(got, name: str) -> tuple[object, list[str]]:
    """A trajectory probe's reply: the snapshots (checked by compare_trajectory) and the reached wires."""
    assert_type(got, dict, f"{name}: the trajectory probe's result")
    reached = got.get("reached")
    if type(reached) is not list or not all(type(r) is str for r in reached):
        raise AssertionError(f"{name}: the trajectory probe's list of reached tripwires is malformed: {reached!r:.80}")
    return got.get("snapshots"), reached


def check_rules(student, name: str, reached: list[str]) -> None:
    """The torch.optim rule, a gate after the behavioural checks (it can only take this test's points
    away): read from the program the class runs (its methods, everything of the submission they
    reach, the module-level code: `student.scope`), and watched at run time (a tripwire on every
    torch.optim update function, around every step() call of the runs above)."""
    scope = student.scope("optimizers", name)
    hits = sorted(set(torch_optim_uses_in(scope.nodes)) | set(scope.breaches))
    assert not hits, (f"{name} behaves like torch.optim.{TORCH_NAME[name]}, but the code it runs "
                      f"({', '.join(scope.files)}) uses torch.optim beyond the Optimizer base class, or a dynamic "
                      "lookup that could hide such a use: " + "; ".join(hits))
    assert "torch.optim.functional" not in reached, (
        f"{name}.step() reached torch.optim's own update functions while it ran (wires reached: {reached}): "
        "write the update with plain tensor operations")


@reference
def torch_trajectory(name: str, kwargs: dict, groups: list[dict], seed: int, steps: int, snapshots: list[int],
                     round_trip_at: int | None, device: str, options: dict | None) -> torch.Tensor:
    """torch.optim's run of one scenario: it depends on these constants only, so a grading worker
    computes it once for the whole class (grader/testing/reference.py)."""
    torch_cls = getattr(torch.optim, TORCH_NAME[name])
    torch_kwargs = {k: (tuple(v) if k == "betas" else v) for k, v in kwargs.items()}
    return run(lambda g: torch_cls(g, **torch_kwargs), groups, seed, steps, snapshots, round_trip_at, device, options)


def compare_trajectory(got, name: str, kwargs: dict, groups: list[dict], *, seed: int, kind: str, steps: int,
                       round_trip_at: int | None, snapshots: list[int], device: str = "cpu",
                       options: dict | None = None) -> None:
    """`got` (the student's snapshots) against torch.optim's run, computed here; the message names
    the first step after which the two differ by more than the tolerance."""
    want = torch_trajectory(name, kwargs, groups, seed, steps, snapshots, round_trip_at, device, options)
    what = f"{describe_run(name, kwargs, groups, round_trip_at, options)}; parameters compared after steps {snapshots}"
    assert_type(got, torch.Tensor, what)
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        raise AssertionError(f"{what}: expected a {want.dtype} tensor of shape {tuple(want.shape)}, "
                             f"got {got.dtype} {tuple(got.shape)}")
    n_params = sum(p.numel() for p in make_parameters(seed, options=options).values())
    attach_trajectory(got[:, :n_params], want[:, :n_params], name, kwargs, kind=kind, snapshots=snapshots,
                      options=options, what=what)
    unused = slice(n_params - make_parameters(seed)["unused"].numel(), n_params)
    if not torch.equal(got[:, unused], want[:, unused]):
        raise AssertionError(f"{what}: the parameter whose .grad is always None changed; skip it entirely "
                             "(no update, no state, no weight decay)")
    if (options or {}).get("grads"):  # .grad just before and just after each step(): must be identical
        before, after = got[:, n_params:2 * n_params], got[:, 2 * n_params:]
        for row, step in enumerate(snapshots):
            if not torch.equal(before[row], after[row]):
                column = int((before[row] - after[row]).abs().nan_to_num(nan=float("inf")).argmax())
                raise AssertionError(
                    f"{name}.step() changed {_locate(column, seed, options)}.grad at step {step} (before "
                    f"{before[row, column].item():.6g}, after {after[row, column].item():.6g}): leave p.grad as "
                    f"backward() left it (compute g + λ·p out of place). Run: {what}")
        got, want = got[:, :n_params], want[:, :n_params]
    previous = 0
    for row, step in enumerate(snapshots):
        diff = (got[row].double() - want[row].double()).abs().nan_to_num(nan=float("inf"))
        tol = tolerance(kind, step)
        if bool((diff > tol).any()):
            column = int(diff.argmax())
            when = (f"after step {step}" if step == previous + 1
                    else f"between step {previous} and step {step} (first seen after step {step})")
            where = _locate(column, seed, options)
            hints = []
            if round_trip_at is not None and previous <= round_trip_at < step:
                hints.append(f"the state_dict round trip after step {round_trip_at} lies in between: is all the "
                             "state in self.state[p]?")
            raise AssertionError(
                f"{name} diverged from torch.optim.{TORCH_NAME[name]} {when} (max |Δ| = {diff.max().item():.3g}, "
                f"tolerance {tol:g}; at {where} expected {want[row, column].item():.6g}, got "
                f"{got[row, column].item():.6g})" + "".join(f"; {h}" for h in hints) + f". Run: {what}")
        previous = step


def attach_trajectory(got: torch.Tensor, want: torch.Tensor, name: str, kwargs: dict, *, kind: str,
                      snapshots: list[int], options: dict | None, what: str) -> None:
    """The feedback page's picture of one run: the distance between the student's parameters and
    torch.optim's (max |Δ|, as the tolerance is) after each compared step, the tolerance, and the
    first step at which the run left torch's.  Computed here from the probe's snapshots."""
    diff = (got.double() - want.double()).abs().nan_to_num(nan=float("inf")).amax(dim=1).tolist()
    tols = [tolerance(kind, step) for step in snapshots]
    first = next((i for i, (d, t) in enumerate(zip(diff, tols)) if d > t), None)
    marks = []
    if first is not None:
        since = snapshots[first - 1] if first else 0
        when = f"after step {snapshots[first]}" if snapshots[first] == since + 1 else \
            f"between steps {since} and {snapshots[first]}"
        marks.append(figures.mark(snapshots[first], diff[first], f"first divergence: {when}"))
    run_kind = "edge-condition scenario" if (options or {}).get("extras") else "plain run"
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    figures.attach(figures.figure(
        f"{name}({args}), {run_kind}: your parameters vs torch.optim.{TORCH_NAME[name]}",
        [figures.series("distance to torch.optim (max |Δ| over all parameters)", diff, x=snapshots, style="line"),
         figures.series("tolerance", tols, x=snapshots, style="dashed")],
        x_label="step (parameters compared after these steps)", y_label="max |yours − torch.optim|", log_y=True,
        marks=marks, caption=what))


def extra_groups(**second) -> list[dict]:
    """The scenario's groups: w1, the 0-d c and the never-used parameter | w2, b2 and the 3-d k."""
    return [{"params": ["w1", "c", "unused"]}, {"params": ["w2", "b2", "k"], **second}]


def scenario(**more) -> dict:
    """What a plain run never does (see tests/probes/_optimizers_setup.py): parameters of 0 to 3
    dimensions, gradients missing on some steps only (b2 gets its first one at step 4, so its state
    starts then), gradients of exactly zero on others (not None: the step is still taken, so
    momentum and Adam's moments move the parameter and the step count advances; skipping an
    all-zero gradient leaves w2 behind by 14x the tolerance for Adam/AdamW, 560x for SGD with momentum),
    zero_grad(set_to_none=False) with gradients written in place, gradients 100x larger, and every
    .grad compared after each step too (step() must leave it alone)."""
    return {"extras": True, "skip": {"b2": [1, 2, 3], "w1": [6, 7], "c": [4]}, "zero": {"w2": [5, 6], "c": [9]},
            "set_to_none": False,
            "grad_scale": 100.0, "grads": True, **more}


SCENARIO_STEPS, SCENARIO_ROUND_TRIP_AT = 40, 8
SCENARIO_SNAPSHOTS = list(range(1, 13)) + [16, 20, 30, 40]

#: test name -> the runs it checks: (optimizer, kwargs, groups, seed, steps, round trip after, tolerance kind
#: [, options: the scenario, whose runs are compared after SCENARIO_SNAPSHOTS])
CASES = {
    "test_sgd_matches_torch": [
        ("SGD", {"lr": 0.1}, two_groups(lr=0.05), 0, 50, 25, EXACT),
        ("SGD", {"lr": 0.05, "momentum": 0.9}, two_groups(lr=0.02, momentum=0.5), 0, STEPS, ROUND_TRIP_AT, EXACT),
        ("SGD", {"lr": 1e-3, "momentum": 0.9}, extra_groups(lr=5e-4), 4, SCENARIO_STEPS, SCENARIO_ROUND_TRIP_AT,
         EXACT, scenario(set=[[10, 0, "lr", 2e-4]])),
    ],
    "test_adagrad_matches_torch": [
        ("AdaGrad", {"lr": 0.1}, two_groups(lr=0.05), 0, STEPS, ROUND_TRIP_AT, EXACT),
        ("AdaGrad", {"lr": 0.05}, extra_groups(lr=0.02), 4, SCENARIO_STEPS, SCENARIO_ROUND_TRIP_AT, EXACT,
         scenario(set=[[10, 0, "lr", 0.01]])),
    ],
    "test_rmsprop_matches_torch": [
        ("RMSProp", {"lr": 1e-3, "alpha": 0.99}, two_groups(lr=3e-3, alpha=0.9), 0, STEPS, ROUND_TRIP_AT, EXACT),
        ("RMSProp", {"lr": 2e-3, "alpha": 0.9}, extra_groups(lr=1e-3), 4, SCENARIO_STEPS, SCENARIO_ROUND_TRIP_AT,
         EXACT, scenario(set=[[10, 0, "lr", 5e-4]])),
    ],
    "test_adam_matches_torch": [
        ("Adam", {"lr": 5e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.1},
         two_groups(lr=2e-3, weight_decay=0.0), 0, STEPS, ROUND_TRIP_AT, ADAPTIVE),
        ("Adam", {"lr": 5e-3, "weight_decay": 0.1}, extra_groups(lr=2e-3, weight_decay=0.0), 4, SCENARIO_STEPS,
         SCENARIO_ROUND_TRIP_AT, ADAPTIVE, scenario(set=[[10, 0, "lr", 1e-3]])),
    ],
    "test_adamw_matches_torch": [
        ("AdamW", {"lr": 5e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.1},
         two_groups(lr=2e-3, weight_decay=0.0), 0, STEPS, ROUND_TRIP_AT, ADAPTIVE),
        ("AdamW", {"lr": 5e-3, "weight_decay": 0.5}, extra_groups(lr=2e-3, weight_decay=0.0), 4, SCENARIO_STEPS,
         SCENARIO_ROUND_TRIP_AT, ADAPTIVE, scenario(set=[[10, 0, "lr", 1e-3]])),
    ],
}


def check_cases(student, cases) -> None:
    """Every run's trajectory first; then the torch.optim rule as a gate, for each optimizer involved."""
    reached: dict[str, list[str]] = {}
    for name, kwargs, groups, seed, steps, round_trip_at, kind, *options in cases:
        reached.setdefault(name, []).extend(check_trajectory(
            student, name, kwargs, groups, seed=seed, kind=kind, steps=steps, round_trip_at=round_trip_at,
            snapshots=SCENARIO_SNAPSHOTS if options else SNAPSHOTS, options=options[0] if options else None))
    for name, wires in reached.items():
        check_rules(student, name, sorted(set(wires)))


@pytest.mark.points(1)
def test_sgd_matches_torch(student):
    """SGD with and without momentum follows torch.optim.SGD over 200 steps (param groups, state_dict round trip) and in the edge-condition scenario"""
    check_cases(student, CASES["test_sgd_matches_torch"])


@pytest.mark.points(1)
def test_adagrad_matches_torch(student):
    """AdaGrad follows torch.optim.Adagrad over 200 steps (param groups, state_dict round trip) and in the edge-condition scenario"""
    check_cases(student, CASES["test_adagrad_matches_torch"])


@pytest.mark.points(1)
def test_rmsprop_matches_torch(student):
    """RMSProp follows torch.optim.RMSprop over 200 steps (param groups, state_dict round trip) and in the edge-condition scenario"""
    check_cases(student, CASES["test_rmsprop_matches_torch"])


@pytest.mark.points(2)
def test_adam_matches_torch(student):
    """Adam (L2 weight decay in the gradient) follows torch.optim.Adam over 200 steps (param groups, state_dict round trip) and in the edge-condition scenario"""
    check_cases(student, CASES["test_adam_matches_torch"])


@pytest.mark.points(2)
def test_adamw_matches_torch(student):
    """AdamW (decoupled decay, bias correction) follows torch.optim.AdamW over 200 steps (param groups, state_dict round trip) and in the edge-condition scenario"""
    check_cases(student, CASES["test_adamw_matches_torch"])


def expected_state(name: str, kwargs: dict) -> int:
    """Optimizer state values per parameter element, from the memory table."""
    return {"SGD": 1 if kwargs.get("momentum", 0.0) else 0, "AdaGrad": 1, "RMSProp": 1, "Adam": 2, "AdamW": 2}[name]


@pytest.mark.points(1)
def test_optimizer_state_bytes(student):
    """optimizer_state_bytes counts every state tensor's bytes: AdamW keeps 2 fp32 values (8 bytes) per parameter, torch's tensor steps count too"""
    params = make_parameters(0)
    trained = sum(p.numel() for n, p in params.items() if n != "unused")
    for name, kwargs, dtype, split in [
            ("AdamW", {"lr": 1e-3}, "float32", False), ("SGD", {"lr": 0.1}, "float32", False),
            ("SGD", {"lr": 0.1, "momentum": 0.9}, "float32", False), ("AdaGrad", {"lr": 0.1}, "float32", False),
            ("RMSProp", {"lr": 1e-3}, "float32", False), ("Adam", {"lr": 1e-3}, "float32", False),
            ("Adam", {"lr": 1e-3}, "float64", True), ("RMSProp", {"lr": 1e-3}, "float64", True),
            ("SGD", {"lr": 0.1, "momentum": 0.9}, "float64", True), ("AdaGrad", {"lr": 0.1}, "float64", True),
            ("AdamW", {"lr": 1e-3}, "float64", True)]:
        got = student.probe("optimizers.state_bytes", name=name, kwargs=kwargs, seed=0, steps=3, dtype=dtype,
                            split=split)
        census = got["census"]
        size = {"float32": 4, "float64": 8}[dtype]
        what = (f"{name}({', '.join(f'{k}={v}' for k, v in kwargs.items())}) on {dtype} parameters"
                + (" in two param groups" if split else "") + " after 3 steps")
        # what the kit counts in the student's optimizer.state, per parameter
        assert_equal(census["unused"]["tensor_bytes"], 0, f"{what}: bytes of state kept for the parameter whose "
                     ".grad is None (skip it: no state)")
        moments = sum(c["param_shaped_bytes"] for c in census.values())
        assert_equal(moments, size * expected_state(name, kwargs) * trained,
                     f"{what}: bytes of per-parameter state tensors for {trained} {dtype} parameters "
                     f"({expected_state(name, kwargs)} values each, as in the memory table, in the parameter's dtype)")
        total = sum(c["tensor_bytes"] for c in census.values())
        # the memory table: the state is the moments and nothing else held as a tensor, except a step
        # count, which may be a Python int (0 bytes) or a 0-d tensor as torch.optim keeps it (one per
        # parameter at most).  The key names are not checked: torch.optim's are the handout's, but
        # what the lecture counts is the bytes.
        steps = sum(c["scalar_bytes"] for c in census.values())
        extra = [n for n, c in census.items() if c["scalar_tensors"] > 1]
        assert not extra, f"{what}: self.state[{extra[0]}] holds {census[extra[0]]['scalar_tensors']} 0-d tensors " \
                          "(at most one: a step count)"
        assert_equal(total - steps, moments, f"{what}: bytes of all tensors in its state, besides a 0-d step count "
                     "(only the per-parameter state tensors of the memory table)")
        assert_equal(got["reported"], total, f"optimizer_state_bytes of {what} (the bytes of all tensors in its state)")
        assert "torch.optim.functional" not in got["reached"], (
            f"{name}.step() reached torch.optim's own update functions: write the update with plain tensor operations")
    for name, kwargs in [("AdamW", {"lr": 1e-3}), ("SGD", {"lr": 0.1, "momentum": 0.9})]:
        params = make_parameters(1)
        optimizer = getattr(torch.optim, name)(list(params.values()), **kwargs)
        train_a_little(optimizer, params, 1, 3)
        want = sum(c["tensor_bytes"] for c in state_census(optimizer, params).values())
        got = student.probe("optimizers.state_bytes_of_torch_optimizer", name=name, kwargs=kwargs, seed=1, steps=3)
        assert_equal(got, want, f"optimizer_state_bytes(torch.optim.{name}) after 3 steps (its step counts are "
                                "0-d float32 tensors: 4 bytes each)")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_adamw_on_cuda(student):
    """AdamW on CUDA parameters (state on the parameter's device) follows torch.optim.AdamW on CUDA"""
    reached = check_trajectory(student, "AdamW", {"lr": 5e-3, "weight_decay": 0.1},
                               two_groups(lr=2e-3, weight_decay=0.0), seed=5, kind=ADAPTIVE, steps=100,
                               round_trip_at=50, device="cuda")
    check_rules(student, "AdamW", reached)  # on CUDA, torch's fused/foreach kernels are wired too
