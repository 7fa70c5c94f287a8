"""Hidden tests for `mixed_precision`: other seeds, SGD with momentum, more steps, and a longer
run of the scaled step with repeated overflows and another initial scale.  Expected values:
torch.autocast and torch.amp.GradScaler run here directly."""

from __future__ import annotations

import pytest

from tests.public.test_mixed_precision import _check_run, _check_scaled, _check_underflow_setup, _reference_scaled, \
    _reference_steps


@pytest.mark.points(1)
def test_sgd_momentum_three_steps(student):
    """mixed_precision_step with SGD + momentum over three steps: bf16 matmuls, fp32 momentum buffers, exact gradients"""
    got = student.probe("mixed_precision.mixed_precision_steps", seed=10, steps=3, optimizer="sgd")
    _check_run(got, _reference_steps(10, 3, optimizer="sgd"), "bfloat16", "mixed_precision_step with SGD(momentum=0.9)")


@pytest.mark.points(1)
def test_scaled_step_sequence(student):
    """scaled_fp16_step over trains, two overflows in a row (scale quartered, nothing changed), then trains again"""
    kinds = ["normal", "overflow", "overflow", "normal", "normal"]
    got = student.probe("mixed_precision.scaled_fp16_steps", seed=12, kinds=kinds, init_scale=2.0**14)
    ref = _reference_scaled(12, kinds, init_scale=2.0**14)
    _check_underflow_setup(ref)
    _check_scaled(got, ref, kinds, "scaled_fp16_step (initial scale 2**14)")
