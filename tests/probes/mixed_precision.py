"""Probes for the `mixed_precision` module.

Each probe builds a torch.nn model and a torch.optim optimizer from a seed, hooks every
nn.Linear to record the dtype of its output, wraps the loss to record whether it ran under
autocast, calls the code under test for a few steps, and returns what it saw after each step.
"""

from __future__ import annotations

from typing import Any

import torch

from tests.probes._mixed_precision_setup import LOSSES, Recorder, inputs, make_optimizer, observe, setup
from tests.probes._tensors import dtype_of


def _plain_float(value: Any) -> Any:
    """A Python float passes as is; anything else is described (a tensor would keep the graph)."""
    return value if type(value) in (float, int) else f"<{type(value).__module__}.{type(value).__qualname__}> {value!r}"[:200]


def mixed_precision_steps(impl, seed, steps, optimizer="adamw", dtype=None, device="cpu"):
    """`steps` calls of mixed_precision_step (dtype left at its default when None)."""
    model, batches = setup(seed, steps, device)
    opt = make_optimizer(model, optimizer)
    recorder = Recorder(model, torch.device(device).type)
    loss_fn = recorder.wrap(LOSSES["mse"])
    kwargs = {} if dtype is None else {"dtype": dtype_of(dtype)}
    seen = []
    for x, y in batches:
        loss = impl.mixed_precision.mixed_precision_step(model, opt, loss_fn, x, y, **kwargs)
        seen.append({"loss": _plain_float(loss), **recorder.take(), **observe(model, opt)})
    return seen


def scaled_fp16_steps(impl, seed, kinds, init_scale=2.0**16, device="cpu"):
    """One scaled_fp16_step per entry of `kinds` ("normal" or "overflow" batches) on the tiny loss,
    with a fresh GradScaler; after each step also the scaler's scale."""
    model, batches = setup(seed, len(kinds), device)
    opt = make_optimizer(model, "sgd-huge-lr")
    scaler = torch.amp.GradScaler(torch.device(device).type, init_scale=init_scale)
    recorder = Recorder(model, torch.device(device).type)
    loss_fn = recorder.wrap(LOSSES["tiny_mse"])
    seen = []
    for batch, kind in zip(batches, kinds):
        x, y = inputs(batch, kind)
        loss = impl.mixed_precision.scaled_fp16_step(model, opt, loss_fn, x, y, scaler)
        seen.append({"loss": _plain_float(loss), "scale": float(scaler.get_scale()), **recorder.take(),
                     **observe(model, opt)})
    return seen


def bytes_per_parameter(impl):
    return impl.mixed_precision.mixed_precision_bytes_per_parameter()
