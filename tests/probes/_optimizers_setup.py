"""The training run behind the optimizer tests, shared by the probes and the trusted tests.

The same function drives the student's optimizer (inside a probe) and torch.optim's (in the
test process), so both see identical parameters, data and steps.  A run:

* builds a small seeded regression model: ``tanh(x @ w1) @ w2 + b2``, plus a parameter
  ``unused`` that takes no part in the loss (its ``.grad`` stays None, so an optimizer must
  leave it alone);
* splits the parameters into groups (each group a dict of parameter *names* and its own
  hyperparameters) and builds the optimizer from them with ``make_optimizer(groups)``;
* takes ``steps`` steps on fresh seeded mini-batches (the gradients never vanish, so the
  dynamics stay non-trivial to the end);
* halfway (``round_trip_at``) saves ``optimizer.state_dict()`` through ``torch.save`` /
  ``torch.load(weights_only=True)``, throws the optimizer away, builds a fresh one and loads
  the state into it, exactly as resuming from a checkpoint does;
* returns the flattened parameters after each step listed in ``snapshots`` (float32 on the
  CPU, shape [len(snapshots), number of parameter elements]).

With ``device="cuda"`` the parameters and batches live on the GPU (the data is still drawn
on the CPU, so it is the same data).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import torch

NAMES = ("w1", "w2", "b2", "unused")
SHAPES = {"w1": (8, 16), "w2": (16, 4), "b2": (4,), "unused": (3, 5)}
BATCH = 32


def make_parameters(seed: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    scale = {"w1": 8**-0.5, "w2": 16**-0.5, "b2": 0.1, "unused": 1.0}
    return {n: torch.nn.Parameter((torch.randn(SHAPES[n], generator=g) * scale[n]).to(device)) for n in NAMES}


def _data(seed: int, steps: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """All the mini-batches at once: x [steps, BATCH, 8], y [steps, BATCH, 4] (a noisy teacher)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    teacher = torch.randn(SHAPES["w1"][0], SHAPES["w2"][1], generator=g)
    x = torch.randn(steps, BATCH, SHAPES["w1"][0], generator=g)
    y = torch.sin(x @ teacher) + 0.1 * torch.randn(steps, BATCH, SHAPES["w2"][1], generator=g)
    return x.to(device), y.to(device)


@torch.no_grad()
def _set_gradients(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> None:
    """The gradients of the loss mean((tanh(x @ w1) @ w2 + b2 − y)²), written by hand (autograd
    would give the same; this is only cheaper).  ``unused`` gets none: its .grad stays None."""
    h = torch.tanh(x @ p["w1"])
    r = (h @ p["w2"] + p["b2"] - y) * (2.0 / y.numel())
    p["w2"].grad = h.T @ r
    p["b2"].grad = r.sum(0)
    p["w1"].grad = x.T @ ((r @ p["w2"].T) * (1.0 - h * h))


def _groups(params: dict[str, torch.Tensor], spec: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fresh group dicts (the Optimizer constructor fills them in, so never reuse them)."""
    return [{**{k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"},
             "params": [params[n] for n in g["params"]]} for g in spec]


def run(make_optimizer: Callable[[list[dict[str, Any]]], torch.optim.Optimizer], groups: Sequence[dict[str, Any]],
        seed: int, steps: int, snapshots: Sequence[int], round_trip_at: int | None, device: str = "cpu") -> torch.Tensor:
    params = make_parameters(seed, device)
    xs, ys = _data(seed, steps, device)
    optimizer = make_optimizer(_groups(params, groups))
    taken = []
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        _set_gradients(params, xs[step - 1], ys[step - 1])
        optimizer.step()
        if step == round_trip_at:
            buffer = io.BytesIO()
            torch.save(optimizer.state_dict(), buffer)
            buffer.seek(0)
            saved = torch.load(buffer, weights_only=True)
            optimizer = make_optimizer(_groups(params, groups))
            optimizer.load_state_dict(saved)
        if step in snapshots:
            taken.append(torch.cat([params[n].detach().flatten() for n in NAMES]).cpu())
    return torch.stack(taken)


def state_census(optimizer: torch.optim.Optimizer, params: dict[str, torch.Tensor]) -> dict[str, Any]:
    """What the optimizer keeps, per parameter name: tensor bytes, bytes of tensors shaped like
    the parameter, and the number of other (scalar-like) tensors; counted by the kit, not the student."""
    census = {}
    for name, p in params.items():
        state = optimizer.state.get(p, {})
        tensors = [v for v in state.values() if isinstance(v, torch.Tensor)]
        census[name] = {
            "tensor_bytes": sum(t.numel() * t.element_size() for t in tensors),
            "param_shaped_bytes": sum(t.numel() * t.element_size() for t in tensors if t.shape == p.shape),
            "param_shaped_count": sum(1 for t in tensors if t.shape == p.shape),
            "other_tensors": sum(1 for t in tensors if t.shape != p.shape),
        }
    return census


def train_a_little(optimizer: torch.optim.Optimizer, params: dict[str, torch.Tensor], seed: int, steps: int) -> None:
    xs, ys = _data(seed, steps)
    for x, y in zip(xs, ys):
        optimizer.zero_grad()
        _set_gradients(params, x, y)
        optimizer.step()
