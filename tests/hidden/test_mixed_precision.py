"""Hidden tests for `mixed_precision`: other seeds, SGD with momentum, more steps, and a longer
run of the scaled step with repeated overflows and another initial scale; the mixed-dtype model
again with float16 and SGD, and with the scaled step, AdamW and a scale that grows every step.  Expected values:
torch.autocast and torch.amp.GradScaler run here directly."""

from __future__ import annotations

import pytest
import torch

from tests.public.test_mixed_precision import _check_like_reference, _check_premise_large, _check_run, _check_scaled, \
    _check_underflow_setup, _reference_mixed, _reference_scaled, _reference_steps


@pytest.mark.points(1)
def test_sgd_momentum_three_steps(student):
    """mixed_precision_step with SGD + momentum over three steps: bf16 matmuls, fp32 momentum buffers, exact gradients"""
    got = student.probe("mixed_precision.mixed_precision_steps", seed=10, steps=3, optimizer="sgd")
    _check_run(got, _reference_steps(10, 3, optimizer="sgd"), "bfloat16", "mixed_precision_step with SGD(momentum=0.9)")
    sizes = [1, 32, 3, 32]
    got = student.probe("mixed_precision.mixed_precision_steps", seed=11, steps=len(sizes), optimizer="sgd-wd",
                        dtype="float16", model="mixed", batch_sizes=sizes, target_scale=10.0)
    _check_like_reference(got, _reference_mixed(11, sizes, "sgd-wd", torch.float16, target_scale=10.0), "float16",
                          "mixed_precision_step(dtype=torch.float16) with SGD (momentum, weight decay) on the "
                          "mixed-dtype model, targets x10")


@pytest.mark.points(1)
def test_scaled_step_sequence(student):
    """scaled_fp16_step over trains, two overflows in a row (scale quartered, nothing changed), then trains again"""
    kinds = ["normal", "overflow", "overflow", "normal", "normal"]
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=12, kinds=kinds, init_scale=2.0**14)
    ref = _reference_scaled(12, kinds, init_scale=2.0**14)
    _check_underflow_setup(ref)
    _check_scaled(got, ref, kinds, "scaled_fp16_step (initial scale 2**14)")
    sizes = [32, 2, 32, 32, 1, 32, 32]
    scaler = {"init_scale": 2.0**12, "growth_interval": 1}
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=13, kinds=["normal"] * len(sizes), model="mixed",
                        loss="mse", optimizer="adamw", batch_sizes=sizes, target_scale=10.0, **scaler)
    ref = _reference_mixed(13, sizes, "adamw", scaler=scaler, target_scale=10.0)
    _check_premise_large(ref)
    _check_like_reference(got, ref, "float16", "scaled_fp16_step (AdamW; GradScaler(init_scale=2**12, growth_interval=1)) "
                          "on the mixed-dtype model with targets x10")
