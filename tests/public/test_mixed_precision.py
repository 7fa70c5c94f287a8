"""Public tests for `mixed_precision`.

Expected values come from torch itself: the same model, batches and optimizer stepped here
with `torch.autocast` and `torch.amp.GradScaler` directly (tests/probes/_mixed_precision_setup.py
builds them identically on both sides).  What happened *inside* the student's forward pass is
seen through forward hooks on every nn.Linear (the dtype of each matmul output) and a wrapper
around the loss (was autocast on when the loss was computed?).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from grader.testing.expect import assert_close, assert_equal, assert_tensor, assert_type
from grader.testing.reference import reference
from tests.probes._mixed_precision_setup import (LOSSES, before_step, build, inputs, make_optimizer, observe, setup,
                                                 setup_mixed)

PARAMS = ["0.weight", "0.bias", "2.weight", "2.bias"]  # the probe model's parameters, in order


# -- torch's own answers (also used by the hidden tests) ---------------------------------------

def _reference_steps(seed: int, steps: int, optimizer: str = "adamw", dtype: torch.dtype = torch.bfloat16,
                     device: str = "cpu") -> list[dict[str, Any]]:
    """mixed_precision_step done with torch.autocast directly."""
    model, batches = setup(seed, steps, device)
    opt = make_optimizer(model, optimizer)
    out = []
    for x, y in batches:
        opt.zero_grad()
        with torch.autocast(device_type=torch.device(device).type, dtype=dtype):
            loss = LOSSES["mse"](model(x), y)
        loss.backward()
        opt.step()
        out.append({"loss": loss.item(), **observe(model, opt)})
    return out


def _reference_scaled(seed: int, kinds: list[str], init_scale: float = 2.0**16, device: str = "cpu") -> dict[str, Any]:
    """scaled_fp16_step done with torch.autocast and torch.amp.GradScaler directly; also the initial
    parameters, and the gradients an *unscaled* float16 backward gives on the first batch."""
    device_type = torch.device(device).type
    model, batches = setup(seed, len(kinds), device)
    initial = [p.detach().cpu().clone() for p in model.parameters()]
    x, y = inputs(batches[0], "normal")
    with torch.autocast(device_type=device_type, dtype=torch.float16):
        LOSSES["tiny_mse"](model(x), y).backward()
    unscaled = [p.grad.detach().cpu().clone() for p in model.parameters()]
    opt = make_optimizer(model, "sgd-huge-lr")
    scaler = torch.amp.GradScaler(device_type, init_scale=init_scale)
    steps = []
    for batch, kind in zip(batches, kinds):
        x, y = inputs(batch, kind)
        opt.zero_grad()
        with torch.autocast(device_type=device_type, dtype=torch.float16):
            loss = LOSSES["tiny_mse"](model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        steps.append({"loss": loss.item(), "scale": float(scaler.get_scale()), **observe(model, opt)})
    return {"initial": initial, "unscaled_grads": unscaled, "steps": steps}


def _reference_mixed(seed: int, batch_sizes: list[int], optimizer: str, dtype: torch.dtype = torch.bfloat16, *,
                     scaler: dict[str, float] | None = None, target_scale: float = 1.0) -> dict[str, Any]:
    """mixed_precision_step (or, with `scaler` = GradScaler's keyword arguments, scaled_fp16_step)
    done directly on the mixed-dtype model of _mixed_precision_setup; also its parameter names."""
    return _reference_mixed_run(seed, batch_sizes, optimizer, str(dtype).removeprefix("torch."), scaler, target_scale)


@reference  # plain arguments only: computed once per grading worker
def _reference_mixed_run(seed: int, batch_sizes: list[int], optimizer: str, dtype_name: str,
                         scaler: dict[str, float] | None, target_scale: float) -> dict[str, Any]:
    dtype = getattr(torch, dtype_name)
    model, batches = setup_mixed(seed, batch_sizes, target_scale)
    names = [name for name, _ in model.named_parameters()]
    opt = make_optimizer(model, optimizer)
    grad_scaler = None if scaler is None else torch.amp.GradScaler("cpu", **scaler)
    steps = []
    for i, (x, y) in enumerate(batches):
        before_step(model, i)
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=dtype if grad_scaler is None else torch.float16):
            loss = LOSSES["mse"](model(x), y)
        if grad_scaler is None:
            loss.backward()
            opt.step()
            steps.append({"loss": loss.item(), **observe(model, opt)})
        else:
            grad_scaler.scale(loss).backward()
            grad_scaler.step(opt)
            grad_scaler.update()
            steps.append({"loss": loss.item(), "scale": float(grad_scaler.get_scale()), **observe(model, opt)})
    return {"names": names, "batch_sizes": batch_sizes, "steps": steps}


@reference  # plain arguments only: computed once per grading worker
def _reference_modes(seed: int, steps: int, training: bool, function: str) -> list[dict[str, Any]]:
    """mode_steps done directly: the dropout model in the caller's mode, torch seeded with seed + i
    before step i, the step of `function` done with torch.autocast (and a default GradScaler)."""
    model, batches = build(seed, steps, "dropout")
    model.train(training)
    opt = make_optimizer(model, "sgd")
    scaler = torch.amp.GradScaler("cpu") if function == "scaled_fp16_step" else None
    out = []
    for i, (x, y) in enumerate(batches):
        torch.manual_seed(seed + i)
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16 if scaler is None else torch.float16):
            loss = LOSSES["mse"](model(x), y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        out.append({"loss": loss.item(), "params": [p.detach().clone() for p in model.parameters()]})
    return out


# -- checks ------------------------------------------------------------------------------------

def _check_dtypes(step: dict[str, Any], compute: str, what: str) -> None:
    """Everything stored is float32; the matmuls ran in `compute`; the loss ran under autocast."""
    if step.get("param_dtypes") != ["float32"] * len(PARAMS):
        raise AssertionError(f"{what}: parameter dtypes are {step.get('param_dtypes')}, expected float32: never cast "
                             "the model; autocast casts inside the forward only")
    grads = step.get("grad_dtypes")
    if grads != ["float32"] * len(PARAMS):
        hint = (" (p.grad is None after the step: zero the gradients at the start of the step, not after it)"
                if isinstance(grads, list) and None in grads else "")
        raise AssertionError(f"{what}: gradient dtypes are {grads}, expected float32{hint}")
    states = step.get("state_dtypes")
    assert_type(states, list, f"{what}: optimizer state dtypes")
    for name, state in zip(PARAMS, states):
        if not isinstance(state, dict) or any(d != "float32" for d in state.values()):
            raise AssertionError(f"{what}: optimizer state of {name} has dtypes {state}, expected float32")
    linear = step.get("linear_dtypes")
    assert_type(linear, list, f"{what}: nn.Linear output dtypes")
    if not linear or any(d != compute for d in linear):
        raise AssertionError(f"{what}: the nn.Linear outputs inside the forward were {linear}, expected {compute}: "
                             f"run model(x) under torch.autocast(device_type=x.device.type, dtype=...)")
    if step.get("loss_under_autocast") != [True]:
        raise AssertionError(f"{what}: loss_fn was called with autocast on: {step.get('loss_under_autocast')}, "
                             "expected [True]: compute the loss inside the autocast block too")


def _check_values(step: dict[str, Any], want: dict[str, Any], what: str, *, grad_rtol: float, grad_atol: float,
                  param_atol: float) -> None:
    # The same ops in the same order give the same bits; the tolerances only absorb harmless
    # reorderings, and are far below the gap between a 16-bit and a 32-bit forward pass.
    assert_type(step.get("loss"), float, f"{what}: the returned loss (return loss.item())")
    assert_close(step["loss"], want["loss"], f"{what}: the returned loss", rel=1e-3)
    for name, g, w in zip(PARAMS, step.get("grads") or [], want["grads"]):
        assert_tensor(g, w, f"{what}: gradient of {name} after the step", rtol=grad_rtol, atol=grad_atol)
    for name, g, w in zip(PARAMS, step.get("params") or [], want["params"]):
        assert_tensor(g, w, f"{what}: parameter {name} after the step", atol=param_atol)


def _check_run(got: Any, want: list[dict[str, Any]], compute: str, label: str, *, grad_rtol: float = 1e-3,
               grad_atol: float = 1e-5, param_atol: float = 1e-6) -> None:
    assert_type(got, list, label)
    assert_equal(len(got), len(want), f"{label}: number of steps")
    for i, (step, ref) in enumerate(zip(got, want)):
        assert_type(step, dict, f"{label}, step {i + 1}")
        _check_dtypes(step, compute, f"{label}, step {i + 1}")
        _check_values(step, ref, f"{label}, step {i + 1}", grad_rtol=grad_rtol, grad_atol=grad_atol, param_atol=param_atol)


def _check_underflow_setup(ref: dict[str, Any]) -> None:
    """The kit's own premise (not the student's code): unscaled float16 gradients are all zero."""
    if any(bool(g.any()) for g in ref["unscaled_grads"]):
        raise RuntimeError("kit bug: the tiny loss's float16 gradients did not underflow without scaling")


def _check_premise_large(ref: dict[str, Any]) -> None:
    """The kit's own premise (not the student's code): the run has a skipped step with a finite loss,
    a step where the scale grows, and gradient norms far above 1 (so clipping would show)."""
    steps, scale = ref["steps"], None
    skipped_finite = grew = False
    for step in steps:
        if scale is not None:
            skipped_finite |= step["scale"] < scale and math.isfinite(step["loss"])
            grew |= step["scale"] > scale
        scale = step["scale"]
    norms = [math.sqrt(sum(float(g.double().pow(2).sum()) for g in step["grads"] if g is not None)) for step in steps]
    if not (skipped_finite and grew and max(n for n in norms if math.isfinite(n)) > 5.0):
        raise RuntimeError(f"kit bug: the large-gradient run lost its premise (norms {norms})")


def _check_scaled(got: Any, ref: dict[str, Any], kinds: list[str], label: str, *, grad_rtol: float = 1e-3,
                  param_atol: float = 1e-6) -> None:
    assert_type(got, list, label)
    assert_equal(len(got), len(kinds), f"{label}: number of steps")
    previous = ref["initial"]
    for i, (step, want, kind) in enumerate(zip(got, ref["steps"], kinds)):
        what = f"{label}, step {i + 1} ({'a batch that overflows float16' if kind == 'overflow' else 'tiny loss'})"
        assert_type(step, dict, what)
        _check_dtypes(step, "float16", what)
        assert_type(step.get("loss"), float, f"{what}: the returned loss (return loss.item())")
        assert_close(step.get("scale"), want["scale"], f"{what}: the GradScaler's scale afterwards (call scaler.update())")
        params = step.get("params") or []
        if kind == "overflow":
            if math.isfinite(step["loss"]):
                raise AssertionError(f"{what}: returned loss {step['loss']}, expected inf or nan (the unscaled loss)")
            for name, g, w in zip(PARAMS, params, previous):
                assert_tensor(g, w, f"{what}: {name} must be unchanged, the step skipped (use scaler.step(optimizer))")
        else:
            assert_close(step["loss"], want["loss"], f"{what}: the returned loss (not the scaled one)", rel=1e-3)
            if all(type(g) is torch.Tensor and torch.equal(g, w) for g, w in zip(params, previous)):
                raise AssertionError(f"{what}: the parameters did not change: the float16 gradients underflowed to "
                                     "zero (backward on scaler.scale(loss), not on loss)")
            for name, g, w in zip(PARAMS, step.get("grads") or [], want["grads"]):
                assert_tensor(g, w, f"{what}: gradient of {name} after the step (unscaled by scaler.step)",
                              rtol=grad_rtol, atol=0.0)
            for name, g, w in zip(PARAMS, params, want["params"]):
                assert_tensor(g, w, f"{what}: parameter {name} after the step", atol=param_atol)
        previous = want["params"]


def _check_like_reference(got: Any, ref: dict[str, Any], compute: str, label: str, *, grad_rtol: float = 1e-3,
                          grad_atol: float = 1e-5, param_atol: float = 1e-6) -> None:
    """Step by step, everything the probe saw equals what torch's own step gave on the same model:
    dtypes of parameters, gradients (None included) and optimizer state, the 16-bit matmuls, the
    loss under autocast, the returned loss, the scale (scaled steps), gradients and parameters.
    The default tolerances are those of `_check_values`: the same ops in the same order give the
    same bits, they only absorb harmless reorderings; skipped steps' inf/nan gradients must match
    exactly where they are inf or nan."""
    names, steps = ref["names"], ref["steps"]
    assert_type(got, list, label)
    assert_equal(len(got), len(steps), f"{label}: number of steps")
    for i, (step, want) in enumerate(zip(got, steps)):
        what = f"{label}, step {i + 1} (batch of {ref['batch_sizes'][i]})"
        assert_type(step, dict, what)
        linear = step.get("linear_dtypes")
        if not isinstance(linear, list) or not linear or any(d != compute for d in linear):
            raise AssertionError(f"{what}: the nn.Linear outputs inside the forward were {linear}, expected "
                                 f"{compute}: run model(x) under torch.autocast(device_type=x.device.type, dtype=...)")
        if step.get("loss_under_autocast") != [True]:
            raise AssertionError(f"{what}: loss_fn was called with autocast on: {step.get('loss_under_autocast')}, "
                                 "expected [True]: compute the loss inside the autocast block too")
        if step.get("param_dtypes") != want["param_dtypes"]:
            raise AssertionError(f"{what}: parameter dtypes {step.get('param_dtypes')}, expected {want['param_dtypes']} "
                                 f"(parameters {names}): never cast the model, every parameter keeps its dtype")
        grads = step.get("grad_dtypes")
        if not isinstance(grads, list) or len(grads) != len(names):
            raise AssertionError(f"{what}: gradient dtypes {grads}, expected {want['grad_dtypes']}")
        for name, g, w in zip(names, grads, want["grad_dtypes"]):
            if w is None and g is not None:
                raise AssertionError(
                    f"{what}: {name}.grad is a {g} tensor, expected None: {name} is not used in this step's forward, "
                    "and optimizer.zero_grad() (set_to_none=True, its default) leaves its .grad None, so the "
                    "optimizer skips it (a zero gradient would still move it through momentum and weight decay)")
            if g != w:
                hint = " (zero the gradients at the start of the step, not after it)" if g is None else ""
                raise AssertionError(f"{what}: {name}.grad has dtype {g}, expected {w}{hint}")
        if step.get("state_dtypes") != want["state_dtypes"]:
            raise AssertionError(f"{what}: optimizer state dtypes {step.get('state_dtypes')}, expected "
                                 f"{want['state_dtypes']} (parameters {names})")
        assert_type(step.get("loss"), float, f"{what}: the returned loss (return loss.item())")
        if math.isfinite(want["loss"]):
            # the same ops on the same values: only harmless reorderings, far below a 16-vs-32-bit gap
            assert_close(step["loss"], want["loss"], f"{what}: the returned loss (the loss itself, not a scaled one)",
                         rel=1e-3)
        elif math.isfinite(step["loss"]):
            raise AssertionError(f"{what}: returned loss {step['loss']}, expected inf or nan (the forward overflowed)")
        if "scale" in want:
            assert_close(step.get("scale"), want["scale"], f"{what}: the GradScaler's scale afterwards "
                         "(scaler.step then scaler.update, once per step)")
        for name, g, w in zip(names, step.get("grads") or [], want["grads"]):
            if w is not None:
                assert_tensor(g, w, f"{what}: gradient of {name} after the step (the true, unscaled gradient)",
                              rtol=grad_rtol, atol=grad_atol)
        for name, g, w in zip(names, step.get("params") or [], want["params"]):
            assert_tensor(g, w, f"{what}: parameter {name} after the step", atol=param_atol)


# -- graded tests --------------------------------------------------------------------------------

@pytest.mark.points(1)
def test_bf16_forward_fp32_state(student):
    """mixed_precision_step: bf16 matmul outputs inside the forward; fp32 params, grads, AdamW state; loss as float"""
    got = student.probe("mixed_precision.mixed_precision_steps", seed=0, steps=2)
    _check_run(got, _reference_steps(0, 2), "bfloat16", "mixed_precision_step (default dtype) with AdamW")


@pytest.mark.points(1)
def test_fp16_autocast_dtype(student):
    """mixed_precision_step(dtype=torch.float16) runs the matmuls in float16"""
    got = student.probe("mixed_precision.mixed_precision_steps", seed=1, steps=2, dtype="float16")
    _check_run(got, _reference_steps(1, 2, dtype=torch.float16), "float16",
               "mixed_precision_step(dtype=torch.float16) with AdamW")


@pytest.mark.points(1)
def test_scaled_step_trains_through_underflow(student):
    """scaled_fp16_step trains on a loss whose unscaled float16 gradients underflow to zero"""
    kinds = ["normal", "normal"]
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=2, kinds=kinds)
    ref = _reference_scaled(2, kinds)
    _check_underflow_setup(ref)
    _check_scaled(got, ref, kinds, "scaled_fp16_step")


@pytest.mark.points(2)
def test_scaled_step_skips_overflow(student):
    """scaled_fp16_step skips a step whose gradients are inf/nan (parameters unchanged, scale halved), then trains"""
    kinds = ["overflow", "normal"]
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=3, kinds=kinds)
    _check_scaled(got, _reference_scaled(3, kinds), kinds, "scaled_fp16_step")


@pytest.mark.points(1)
def test_mixed_dtype_model(student):
    """mixed_precision_step on a model with float64/bf16/fp32 parameters, an fp32 op before the first matmul, an unused branch, a batch of 1"""
    sizes = [32, 1, 32]
    got = student.probe("mixed_precision.mixed_precision_steps", seed=6, steps=len(sizes), model="mixed",
                        batch_sizes=sizes)
    _check_like_reference(got, _reference_mixed(6, sizes, "adamw"), "bfloat16",
                          "mixed_precision_step with AdamW on the mixed-dtype model (inputs around 512)")


@pytest.mark.points(1)
def test_scaled_step_large_gradients(student):
    """scaled_fp16_step with large gradients: finite-loss overflows skipped (scale halved), scale grows after good steps, true gradients"""
    sizes = [32, 1, 32, 7, 32, 32, 5, 32]
    scaler = {"init_scale": 2.0**16, "growth_interval": 2}
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=0, kinds=["normal"] * len(sizes), model="mixed",
                        loss="mse", optimizer="sgd-wd", batch_sizes=sizes, target_scale=10.0, **scaler)
    ref = _reference_mixed(0, sizes, "sgd-wd", scaler=scaler, target_scale=10.0)
    _check_premise_large(ref)
    _check_like_reference(got, ref, "float16", "scaled_fp16_step (SGD, momentum, weight decay; GradScaler(init_scale=2**16, "
                          "growth_interval=2)) on the mixed-dtype model with targets x10")


@pytest.mark.points(1)
def test_steps_keep_the_model_mode(student):
    """both steps run the forward in the caller's mode (dropout in training mode, none in eval mode) and leave the model, and autocast, as they were"""
    for function in ("mixed_precision_step", "scaled_fp16_step"):
        for training in (True, False):
            mode = "training" if training else "eval"
            what = f"{function} on a model with dropout, in {mode} mode (torch seeded before each step)"
            got = student.probe("mixed_precision.mode_steps", seed=20, steps=2, training=training, function=function)
            want = _reference_modes(20, 2, training, function)
            assert_type(got, list, what)
            assert_equal(len(got), len(want), f"{what}: steps observed")
            for i, (step, ref) in enumerate(zip(got, want)):
                at = f"{what}, step {i + 1}"
                # the same ops on the same values, the same masks: a few ulps at most; dropout on or off
                # changes the loss by far more than 1e-3
                assert_type(step.get("loss"), float, f"{at}: the returned loss")
                assert_close(step["loss"], ref["loss"], f"{at}: the loss (with dropout exactly when the model is in "
                             "training mode: leave its mode alone)", rel=1e-3)
                modes = step.get("modes")
                assert_type(modes, list, f"{at}: the model's modes")
                assert modes and all(m is training for m in modes), (
                    f"{at}: afterwards the model is in {'training' if modes and modes[0] else 'eval'} mode, expected "
                    f"{mode} mode, as the caller set it (no model.train() or model.eval() in the step)")
                assert_equal(step.get("autocast_on"), False, f"{at}: autocast still on after the step (use "
                             "`with torch.autocast(...)`: on inside the block only)")
                for k, (p, w) in enumerate(zip(step.get("params") or [], ref["params"])):
                    assert_tensor(p, w, f"{at}: parameter {k} after the step", atol=1e-5)


@pytest.mark.points(1)
def test_bytes_per_parameter(student):
    """mixed-precision AdamW stores 2 (bf16 param) + 2 (bf16 grad) + 4 (fp32 master) + 8 (fp32 moments) bytes"""
    got = student.probe("mixed_precision.bytes_per_parameter")
    assert_equal(got, 2 + 2 + 4 + 4 + 4, "mixed_precision_bytes_per_parameter()")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_cuda_autocast(student):
    """on CUDA: bf16 matmuls with fp32 params/grads/state; scaled fp16 trains through underflow and skips overflow"""
    got = student.probe("mixed_precision.mixed_precision_steps", seed=4, steps=2, device="cuda")
    # cuBLAS may pick another kernel in another process: looser than on CPU, still far below
    # the bf16-vs-fp32 gap (about 1e-2 here).
    _check_run(got, _reference_steps(4, 2, device="cuda"), "bfloat16", "mixed_precision_step on CUDA",
               grad_rtol=1e-2, grad_atol=1e-4, param_atol=1e-4)
    kinds = ["normal", "overflow", "normal"]
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=5, kinds=kinds, device="cuda")
    ref = _reference_scaled(5, kinds, device="cuda")
    _check_underflow_setup(ref)
    _check_scaled(got, ref, kinds, "scaled_fp16_step on CUDA", grad_rtol=1e-2, param_atol=1e-3)
