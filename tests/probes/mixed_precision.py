"""Probes for the `mixed_precision` module.

Each probe builds a torch.nn model and a torch.optim optimizer from a seed, hooks every
nn.Linear to record the dtype of its output, wraps the loss to record whether it ran under
autocast, calls the code under test for a few steps, and returns what it saw after each step.
"""

from __future__ import annotations

from typing import Any

import torch

from tests.probes._mixed_precision_setup import (LOSSES, Recorder, autocast_restored, before_step, build, inputs,
                                                 make_optimizer, observe)
from tests.probes._tensors import dtype_of


def _plain_float(value: Any) -> Any:
    """A Python float passes as is; anything else is described (a tensor would keep the graph)."""
    return value if type(value) in (float, int) else f"<{type(value).__module__}.{type(value).__qualname__}> {value!r}"[:200]


def mixed_precision_steps(impl, seed, steps, optimizer="adamw", dtype=None, device="cpu", model="plain",
                          batch_sizes=None, target_scale=1.0):
    """`steps` calls of mixed_precision_step (dtype left at its default when None); `model="mixed"`
    is the mixed-dtype model of _mixed_precision_setup, one batch per entry of `batch_sizes`."""
    net, batches = build(seed, steps, model, batch_sizes, target_scale, device)
    opt = make_optimizer(net, optimizer)
    recorder = Recorder(net, torch.device(device).type)
    loss_fn = recorder.wrap(LOSSES["mse"])
    kwargs = {} if dtype is None else {"dtype": dtype_of(dtype)}
    seen = []
    for i, (x, y) in enumerate(batches):
        before_step(net, i)
        with autocast_restored(torch.device(device).type):
            loss = impl.mixed_precision.mixed_precision_step(net, opt, loss_fn, x, y, **kwargs)
        seen.append({"loss": _plain_float(loss), **recorder.take(), **observe(net, opt)})
    return seen


def scaled_fp16_steps(impl, seed, kinds, init_scale=2.0**16, device="cpu", model="plain", loss="tiny_mse",
                      optimizer="sgd-huge-lr", growth_interval=2000, batch_sizes=None, target_scale=1.0):
    """One scaled_fp16_step per entry of `kinds` ("normal" or "overflow" batches) with a fresh
    GradScaler(init_scale, growth_interval); after each step also the scaler's scale."""
    net, batches = build(seed, len(kinds), model, batch_sizes, target_scale, device)
    opt = make_optimizer(net, optimizer)
    scaler = torch.amp.GradScaler(torch.device(device).type, init_scale=init_scale, growth_interval=growth_interval)
    recorder = Recorder(net, torch.device(device).type)
    loss_fn = recorder.wrap(LOSSES[loss])
    seen = []
    for i, (batch, kind) in enumerate(zip(batches, kinds)):
        x, y = inputs(batch, kind)
        before_step(net, i)
        with autocast_restored(torch.device(device).type):
            value = impl.mixed_precision.scaled_fp16_step(net, opt, loss_fn, x, y, scaler)
        seen.append({"loss": _plain_float(value), "scale": float(scaler.get_scale()), **recorder.take(),
                     **observe(net, opt)})
    return seen


def mode_steps(impl, seed, steps, training, function="mixed_precision_step"):
    """`steps` calls of `function` ("mixed_precision_step" or "scaled_fp16_step", with a fresh default
    GradScaler) on the dropout model, put in training mode (`training`) or eval mode by the kit; torch's
    generator is seeded with seed + i before step i (it draws the dropout masks).  After each step: the
    loss, the parameters, every submodule's `training` flag and whether autocast was left on (put back
    as it was here, so that the next step starts clean)."""
    net, batches = build(seed, steps, "dropout")
    net.train(training)
    opt = make_optimizer(net, "sgd")
    scaler = torch.amp.GradScaler("cpu") if function == "scaled_fp16_step" else None
    seen = []
    for i, (x, y) in enumerate(batches):
        torch.manual_seed(seed + i)
        with autocast_restored("cpu") as autocast:
            if scaler is None:
                loss = impl.mixed_precision.mixed_precision_step(net, opt, LOSSES["mse"], x, y)
            else:
                loss = impl.mixed_precision.scaled_fp16_step(net, opt, LOSSES["mse"], x, y, scaler)
        seen.append({"loss": _plain_float(loss), "modes": [m.training for m in net.modules()],
                     "autocast_on": autocast["left_on"], "params": [p.detach().cpu().clone() for p in net.parameters()]})
    return seen


def bytes_per_parameter(impl):
    return impl.mixed_precision.mixed_precision_bytes_per_parameter()
