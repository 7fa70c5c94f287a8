"""Probes for the `optimizers` module."""

from __future__ import annotations

from typing import Any

import torch

from grader.rules import tripwire
from tests.probes._optimizers_setup import make_parameters, run, state_census, train_a_little

CLASSES = ("SGD", "AdaGrad", "RMSProp", "Adam", "AdamW")
TORCH_CLASSES = ("SGD", "Adagrad", "RMSprop", "Adam", "AdamW")


def _kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: (tuple(v) if k == "betas" else v) for k, v in kwargs.items()}


def _student_class(impl, name: str):
    if name not in CLASSES:
        raise ValueError(f"unknown optimizer {name!r}")
    return impl.optimizers.__dict__[name]


def _watched(reached: set):
    """optimizer.step(), with the tripwires' names reached inside it added to `reached`."""
    def take_step(optimizer):
        with tripwire.watch() as seen:
            optimizer.step()
        reached.update(seen)
    return take_step


def trajectory(impl, name, groups, kwargs, seed, steps, snapshots, round_trip_at=None, device="cpu", options=None):
    """Parameters after the listed steps of a seeded run with the student's optimizer `name`
    (``"snapshots"``), and the tripwires reached inside its ``step()`` calls (``"reached"``)."""
    cls, kw = _student_class(impl, name), _kwargs(kwargs)
    reached: set[str] = set()
    snapshots = run(lambda g: cls(g, **kw), groups, seed, steps, snapshots, round_trip_at, device, options,
                    take_step=_watched(reached))
    return {"snapshots": snapshots, "reached": sorted(reached)}


def trajectories(impl, runs):
    """`trajectory` for each dict of its arguments in `runs`, in one call."""
    return [trajectory(impl, **r) for r in runs]


HYPERPARAMETERS = ("lr", "momentum", "eps", "alpha", "betas", "weight_decay")


def _plain(value):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, bool, str)) or value is None else repr(value)


def constructed(impl, cases):
    """For each (name, kwargs): the hyperparameters of the student's optimizer built on one parameter
    with those arguments (``opt.defaults`` and its only group), or the exception it raised, as data."""
    out = []
    for name, kwargs in cases:
        cls = _student_class(impl, name)
        try:
            optimizer = cls([torch.nn.Parameter(torch.zeros(2))], **_kwargs(kwargs))
        except NotImplementedError:
            raise
        except Exception as exc:  # the student's error, reported as data
            out.append({"error": type(exc).__name__, "message": str(exc)[:200]})
            continue
        defaults = optimizer.defaults if isinstance(optimizer.defaults, dict) else {}
        group = optimizer.param_groups[0] if optimizer.param_groups else {}
        out.append({"defaults": {k: _plain(defaults[k]) for k in HYPERPARAMETERS if k in defaults},
                    "group": {k: _plain(group[k]) for k in HYPERPARAMETERS if k in group}})
    return out


def state_bytes(impl, name, kwargs, seed, steps, dtype="float32", split=False):
    """optimizer_state_bytes of the student's optimizer after a few steps, and the kit's own census
    of what that optimizer keeps per parameter (`unused` never has a gradient).  `split`: the
    parameters in two groups (w1, unused | w2, b2) instead of one list."""
    params = make_parameters(seed, options={"dtype": dtype})
    groups = ([{"params": [params["w1"], params["unused"]]}, {"params": [params["w2"], params["b2"]]}] if split
              else list(params.values()))
    optimizer = _student_class(impl, name)(groups, **_kwargs(kwargs))
    reached: set[str] = set()
    train_a_little(optimizer, params, seed, steps, take_step=_watched(reached))
    return {"reported": impl.optimizers.optimizer_state_bytes(optimizer), "census": state_census(optimizer, params),
            "reached": sorted(reached)}


def state_bytes_of_torch_optimizer(impl, name, kwargs, seed, steps):
    """optimizer_state_bytes applied to a torch.optim optimizer (its step counts are tensors)."""
    if name not in TORCH_CLASSES:
        raise ValueError(f"unknown torch optimizer {name!r}")
    params = make_parameters(seed)
    optimizer = torch.optim.__dict__[name](list(params.values()), **_kwargs(kwargs))
    train_a_little(optimizer, params, seed, steps)
    return impl.optimizers.optimizer_state_bytes(optimizer)


def closure_loss(impl, name, kwargs, seed):
    """step(closure) must call the closure and return what it returned; step() without one, None."""
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
    without = optimizer.step()  # no closure (the gradients of the closure's backward are still there)
    return {"calls": len(calls), "loss": calls[0] if calls else None,
            "returned": returned if isinstance(returned, float) else None, "moved": moved,
            "without_closure": "None" if without is None else f"a {type(without).__name__}: {without!r}"[:200]}
