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
* calls ``take_step(optimizer)`` for each step (``optimizer.step()``; a probe wraps it in a
  tripwire watch);
* returns the flattened parameters after each step listed in ``snapshots`` (float32 on the
  CPU, shape [len(snapshots), number of parameter elements]).

With ``device="cuda"`` the parameters and batches live on the GPU (the data is still drawn
on the CPU, so it is the same data).

``options`` (a dict, all keys optional) sets up the conditions a plain run never creates:

* ``"extras": True``: two more parameters in the loss, ``c`` (0-d, added to every output) and
  ``k`` (shape (2, 1, 4), scaling ``x[:, :4]``), so parameters of 0, 1, 2 and 3 dimensions;
* ``"skip": {name: [steps]}``: that parameter's ``.grad`` is None on those steps only (its
  state must then be created lazily on its first gradient, and its step count skip them);
* ``"zero": {name: [steps]}``: that parameter's gradient is exactly zero (a tensor of zeros,
  not None) on those steps: the optimizer must still take the step (momentum and Adam's
  moments carry the parameter on, Adam's step count advances), unlike a None gradient;
* ``"set": [[step, group, key, value], ...]``: ``param_groups[group][key] = value`` before
  that step (a learning-rate schedule, a decay switched on);
* ``"grad_scale": s``: the loss is multiplied by s (a large gradient norm);
* ``"set_to_none": False``: ``zero_grad(set_to_none=False)`` and the gradients written into
  the existing ``.grad`` tensors in place (as ``backward()`` accumulates into them);
* ``"grads": True``: each snapshot row also holds every parameter's ``.grad`` just before and
  just after that ``step()`` (zeros where it is None), to see whether ``step()`` changed one;
* ``"dtype": "float64"``: float64 parameters and data.

A snapshot row is ``[params (in ``names(options)`` order) | grads before | grads after (if asked)]``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import torch

NAMES = ("w1", "w2", "b2", "unused")
EXTRA_NAMES = ("w1", "w2", "b2", "c", "k", "unused")
SHAPES = {"w1": (8, 16), "w2": (16, 4), "b2": (4,), "c": (), "k": (2, 1, 4), "unused": (3, 5)}
BATCH = 32


def names(options: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The parameter names of a run, in snapshot order (``unused`` always last)."""
    return EXTRA_NAMES if (options or {}).get("extras") else NAMES


def make_parameters(seed: int, device: str = "cpu", options: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    scale = {"w1": 8**-0.5, "w2": 16**-0.5, "b2": 0.1, "unused": 1.0}
    params = {n: torch.nn.Parameter((torch.randn(SHAPES[n], generator=g) * scale[n]).to(device)) for n in NAMES}
    if (options or {}).get("extras"):
        params["c"] = torch.nn.Parameter((0.1 * torch.randn((), generator=g)).to(device))
        params["k"] = torch.nn.Parameter((0.2 * torch.randn(SHAPES["k"], generator=g)).to(device))
    dtype = _dtype(options)
    return {n: (params[n] if dtype == torch.float32 else torch.nn.Parameter(params[n].detach().to(dtype)))
            for n in names(options)}


def _dtype(options: dict[str, Any] | None) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[(options or {}).get("dtype", "float32")]


def _data(seed: int, steps: int, device: str = "cpu", dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """All the mini-batches at once: x [steps, BATCH, 8], y [steps, BATCH, 4] (a noisy teacher)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    teacher = torch.randn(SHAPES["w1"][0], SHAPES["w2"][1], generator=g)
    x = torch.randn(steps, BATCH, SHAPES["w1"][0], generator=g)
    y = torch.sin(x @ teacher) + 0.1 * torch.randn(steps, BATCH, SHAPES["w2"][1], generator=g)
    return x.to(device, dtype), y.to(device, dtype)


@torch.no_grad()
def _set_gradients(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, *, scale: float = 1.0,
                   skip: Sequence[str] = (), zero: Sequence[str] = (), in_place: bool = False) -> None:
    """The gradients of the loss scale·mean((tanh(x @ w1) @ w2 + b2 [+ c + x[:, :4]·Σk] − y)²), written
    by hand (autograd would give the same; this is only cheaper).  ``unused`` gets none: its .grad
    stays None; the names in ``skip`` get None this time, those in ``zero`` a gradient of zeros.
    ``in_place``: written into existing grads."""
    h = torch.tanh(x @ p["w1"])
    out = h @ p["w2"] + p["b2"]
    if "c" in p:
        out = out + p["c"] + x[:, :4] * p["k"].sum((0, 1))
    r = (out - y) * (2.0 * scale / y.numel())
    grads = {"w2": h.T @ r, "b2": r.sum(0), "w1": x.T @ ((r @ p["w2"].T) * (1.0 - h * h))}
    if "c" in p:
        grads["c"] = r.sum()
        grads["k"] = (r * x[:, :4]).sum(0).expand(SHAPES["k"]).clone()
    for name, grad in grads.items():
        if name in zero:
            grad = torch.zeros_like(grad)
        if name in skip:
            p[name].grad = None
        elif in_place and p[name].grad is not None:
            p[name].grad.copy_(grad)
        else:
            p[name].grad = grad


def _groups(params: dict[str, torch.Tensor], spec: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fresh group dicts (the Optimizer constructor fills them in, so never reuse them)."""
    return [{**{k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"},
             "params": [params[n] for n in g["params"]]} for g in spec]


def run(make_optimizer: Callable[[list[dict[str, Any]]], torch.optim.Optimizer], groups: Sequence[dict[str, Any]],
        seed: int, steps: int, snapshots: Sequence[int], round_trip_at: int | None, device: str = "cpu",
        options: dict[str, Any] | None = None,
        take_step: Callable[[torch.optim.Optimizer], Any] = lambda optimizer: optimizer.step()) -> torch.Tensor:
    options = options or {}
    params = make_parameters(seed, device, options)
    xs, ys = _data(seed, steps, device, _dtype(options))
    skip = {int(step): [n for n, at in options.get("skip", {}).items() if int(step) in at]
            for at in options.get("skip", {}).values() for step in at}
    zero = {int(step): [n for n, at in options.get("zero", {}).items() if int(step) in at]
            for at in options.get("zero", {}).values() for step in at}
    changes = options.get("set", [])
    set_to_none = options.get("set_to_none", True)
    optimizer = make_optimizer(_groups(params, groups))
    taken = []
    for step in range(1, steps + 1):
        for at, group, key, value in changes:
            if at == step:
                optimizer.param_groups[group][key] = tuple(value) if key == "betas" else value
        optimizer.zero_grad(set_to_none=set_to_none)
        _set_gradients(params, xs[step - 1], ys[step - 1], scale=options.get("grad_scale", 1.0),
                       skip=skip.get(step, ()), zero=zero.get(step, ()), in_place=not set_to_none)
        before = [None if p.grad is None else p.grad.detach().clone() for p in params.values()] \
            if options.get("grads") and step in snapshots else None
        take_step(optimizer)
        if step == round_trip_at:
            buffer = io.BytesIO()
            torch.save(optimizer.state_dict(), buffer)
            buffer.seek(0)
            saved = torch.load(buffer, weights_only=True)
            optimizer = make_optimizer(_groups(params, groups))
            optimizer.load_state_dict(saved)
        if step in snapshots:
            row = [params[n].detach().flatten() for n in params]
            if options.get("grads"):
                for grads in (before, [p.grad for p in params.values()]):
                    row += [torch.zeros(p.numel(), dtype=p.dtype, device=p.device) if g is None
                            else g.detach().flatten() for p, g in zip(params.values(), grads)]
            taken.append(torch.cat(row).cpu())
    return torch.stack(taken)


def state_census(optimizer: torch.optim.Optimizer, params: dict[str, torch.Tensor]) -> dict[str, Any]:
    """What the optimizer keeps, per parameter name: tensor bytes, bytes of tensors shaped like
    the parameter, the number of other (scalar-like) tensors, the bytes of its 0-d tensors that
    are not shaped like the parameter (a step count kept as a tensor, as torch.optim does) and
    the state's keys; counted by the kit, not the student."""
    census = {}
    for name, p in params.items():
        state = optimizer.state.get(p, {})
        tensors = [v for v in state.values() if isinstance(v, torch.Tensor)]
        census[name] = {
            "tensor_bytes": sum(t.numel() * t.element_size() for t in tensors),
            "param_shaped_bytes": sum(t.numel() * t.element_size() for t in tensors if t.shape == p.shape),
            "param_shaped_count": sum(1 for t in tensors if t.shape == p.shape),
            "other_tensors": sum(1 for t in tensors if t.shape != p.shape),
            "scalar_tensors": sum(1 for t in tensors if t.dim() == 0 and t.shape != p.shape),
            "scalar_bytes": sum(t.element_size() for t in tensors if t.dim() == 0 and t.shape != p.shape),
            "keys": sorted(str(k) for k in state),
        }
    return census


def train_a_little(optimizer: torch.optim.Optimizer, params: dict[str, torch.Tensor], seed: int, steps: int,
                   take_step: Callable[[torch.optim.Optimizer], Any] = lambda optimizer: optimizer.step()) -> None:
    xs, ys = _data(seed, steps, dtype=params["w1"].dtype)
    for x, y in zip(xs, ys):
        optimizer.zero_grad()
        _set_gradients(params, x, y)
        take_step(optimizer)
