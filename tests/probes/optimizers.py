"""Probes for the `optimizers` module."""

from __future__ import annotations

from typing import Any

import torch

from tests.probes._optimizers_setup import make_parameters, run, state_census, train_a_little

CLASSES = ("SGD", "AdaGrad", "RMSProp", "Adam", "AdamW")
TORCH_CLASSES = ("SGD", "Adagrad", "RMSprop", "Adam", "AdamW")


def _kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: (tuple(v) if k == "betas" else v) for k, v in kwargs.items()}


def _student_class(impl, name: str):
    if name not in CLASSES:
        raise ValueError(f"unknown optimizer {name!r}")
    return impl.optimizers.__dict__[name]


def trajectory(impl, name, groups, kwargs, seed, steps, snapshots, round_trip_at=None, device="cpu"):
    """Parameters after the listed steps of a seeded run with the student's optimizer `name`."""
    cls, kw = _student_class(impl, name), _kwargs(kwargs)
    return run(lambda g: cls(g, **kw), groups, seed, steps, snapshots, round_trip_at, device)


def state_bytes(impl, name, kwargs, seed, steps):
    """optimizer_state_bytes of the student's optimizer after a few steps, and the kit's own census
    of what that optimizer keeps per parameter (`unused` never has a gradient)."""
    params = make_parameters(seed)
    optimizer = _student_class(impl, name)(list(params.values()), **_kwargs(kwargs))
    train_a_little(optimizer, params, seed, steps)
    return {"reported": impl.optimizers.optimizer_state_bytes(optimizer), "census": state_census(optimizer, params)}


def state_bytes_of_torch_optimizer(impl, name, kwargs, seed, steps):
    """optimizer_state_bytes applied to a torch.optim optimizer (its step counts are tensors)."""
    if name not in TORCH_CLASSES:
        raise ValueError(f"unknown torch optimizer {name!r}")
    params = make_parameters(seed)
    optimizer = torch.optim.__dict__[name](list(params.values()), **_kwargs(kwargs))
    train_a_little(optimizer, params, seed, steps)
    return impl.optimizers.optimizer_state_bytes(optimizer)


def closure_loss(impl, name, kwargs, seed):
    """step(closure) must call the closure and return what it returned."""
    params = make_parameters(seed)
    optimizer = _student_class(impl, name)(list(params.values()), **_kwargs(kwargs))
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))
    calls = []

    def closure():
        optimizer.zero_grad()
        loss = (torch.tanh(x @ params["w1"]) @ params["w2"] + params["b2"]).pow(2).mean()
        loss.backward()
        calls.append(float(loss.detach()))
        return loss

    returned = optimizer.step(closure)
    if isinstance(returned, torch.Tensor) and returned.numel() == 1:
        returned = float(returned.detach())
    moved = bool((params["w1"] != make_parameters(seed)["w1"]).any())
    return {"calls": len(calls), "loss": calls[0] if calls else None,
            "returned": returned if isinstance(returned, float) else None, "moved": moved}
