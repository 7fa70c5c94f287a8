"""The pieces the `training` probes hand to the student's `train`, and the stand-ins they put in
place of the student's other modules while it runs.

`train` composes pieces of other modules: the model, the optimizer, `save_checkpoint` /
`load_checkpoint` and `mixed_precision_step`.  A bug (or an accepted variant: AdamW's decay
before or after the update) in one of those must cost points in its own module only, so the
training probes test the loop with pieces whose behaviour the trusted side knows:

* the model is `KitModel`, the lecture's deep linear model written with torch ops (the state-dict
  keys of `Cruncher`: ``layers.<i>.weight``, ``final.weight``), and the optimizers are
  `torch.optim.SGD` / `torch.optim.AdamW`, as in the trusted reference loop;
* `stand_ins(impl)` swaps the student's `save_checkpoint`, `load_checkpoint`,
  `mixed_precision_step` and `cruncher_num_parameters`, wherever `training.py` reaches them (a
  name it imported, or an attribute of the module it imported), for recording stand-ins: the
  checkpoint stand-ins keep what a checkpoint must hold in memory (and write a small file at the
  path, so that the loop sees a file there); the mixed-precision stand-in does the plain float32
  step; the parameter count is the one the public tests compute from the shapes.  The probes
  return the calls recorded, the tests judge them.

The student's own pieces are tested by their own modules' tests.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch import nn


class _Weight(nn.Module):
    def __init__(self, rows: int, cols: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(rows, cols))


class KitModel(nn.Module):
    """x @ W_0 @ ... @ W_{L-1} @ w_final, last dimension dropped: the reference loop's model."""

    def __init__(self, dim: int, num_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_Weight(dim, dim) for _ in range(num_layers)])
        self.final = _Weight(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = h @ layer.weight
        return (h @ self.final.weight).squeeze(-1)


def kit_model(init: dict[str, torch.Tensor], dim: int, num_layers: int, device: str = "cpu") -> KitModel:
    model = KitModel(dim, num_layers)
    model.load_state_dict({k: v.clone() for k, v in init.items()})
    return model.to(device)


def kit_optimizer(model: nn.Module, name: str, lr: float) -> torch.optim.Optimizer:
    return {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[name](model.parameters(), lr=lr)


class Calls:
    """What the stand-ins saw, in order: ("save", iteration, path) / ("load", path) / ("step", dtype)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.problems: list[str] = []  # arguments a stand-in could not work with


class _Checkpoints:
    """save_checkpoint / load_checkpoint stand-ins: the checkpoint lives in memory, keyed by path."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.store: dict[str, dict[str, Any]] = {}
        self.writes = 0

    def save(self, model: nn.Module, optimizer: torch.optim.Optimizer, iteration: int, out: Any) -> None:
        path = os.path.realpath(os.fspath(out))
        self.calls.log.append(("save", iteration if type(iteration) is int else repr(iteration), os.path.basename(path)))
        self.store[path] = copy.deepcopy({
            "model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration,
            "torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()})
        self.writes += 1
        with open(path, "w") as f:  # a file at the path (its bytes change with every save)
            f.write(f"kit stand-in checkpoint, write {self.writes}\n")

    def load(self, src: Any, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
        path = os.path.realpath(os.fspath(src))
        self.calls.log.append(("load", os.path.basename(path)))
        if path not in self.store or not os.path.exists(path):
            self.calls.problems.append(f"load_checkpoint({os.path.basename(path)!r}) of a file save_checkpoint never wrote")
            raise FileNotFoundError(path)
        saved = copy.deepcopy(self.store[path])
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["torch"])
        np.random.set_state(saved["numpy"])
        random.setstate(saved["python"])
        return saved["iteration"]


def _plain_step(calls: Calls):
    def mixed_precision_step(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
        calls.log.append(("step", str(dtype).removeprefix("torch.")))
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return mixed_precision_step


@contextlib.contextmanager
def stand_ins(impl: Any) -> Iterator[Calls]:
    """While the block runs, `impl.training` reaches the stand-ins instead of the student's
    save_checkpoint, load_checkpoint, mixed_precision_step and cruncher_num_parameters (by the
    names it imported or through the modules' attributes); everything is put back afterwards."""
    calls = Calls()
    checkpoints = _Checkpoints(calls)
    fakes = {("checkpointing", "save_checkpoint"): checkpoints.save,
             ("checkpointing", "load_checkpoint"): checkpoints.load,
             ("mixed_precision", "mixed_precision_step"): _plain_step(calls),
             ("cruncher", "cruncher_num_parameters"): lambda dim, num_layers: num_layers * dim * dim + dim}
    training = vars(impl.training)
    undo: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for (module, name), fake in fakes.items():
            namespace = vars(getattr(impl, module))
            original = namespace.get(name)
            undo.append((namespace, name, original))
            namespace[name] = fake
            if original is not None:
                for key, value in list(training.items()):
                    if value is original:
                        undo.append((training, key, value))
                        training[key] = fake
        yield calls
    finally:
        for namespace, key, value in reversed(undo):
            if value is None:
                namespace.pop(key, None)
            else:
                namespace[key] = value

