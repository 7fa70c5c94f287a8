"""A tiny training loop that draws from every global random number generator at every step.

Shared by the `checkpointing` probes (which run it around the code under test) and the tests
(which run it uninterrupted to get the expected result), so both sides train identically:

* Python's ``random`` picks the examples of each batch,
* NumPy's global generator adds noise to the inputs,
* torch's generator draws the dropout masks (and the initial weights),

so a resumed run that misses any generator's state, the optimizer's state or the weights
leaves the uninterrupted trajectory.  Everything runs single-threaded inside `isolated()`,
which also puts the caller's generators back as they were.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch import nn

IN_DIM, HIDDEN, EXAMPLES, BATCH = 8, 32, 64, 8
LR_DECAY = 0.7  # per step, for the "+decay" optimizers


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Run single-threaded; restore the caller's RNG states and thread count afterwards."""
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
        torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def dataset(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed regression problem (its own generator: it never touches the global ones)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    x = torch.randn(EXAMPLES, IN_DIM, generator=g)
    w = torch.randn(IN_DIM, generator=g)
    return x, x @ w + 0.1 * torch.randn(EXAMPLES, generator=g)


def build(optimizer: str = "adamw") -> tuple[nn.Module, torch.optim.Optimizer]:
    """A small MLP with dropout (initialised from torch's global generator) and its optimizer.

    `optimizer` is "adamw" or "sgd" (with momentum); a "+bn" suffix ("sgd+bn") adds a
    BatchNorm1d layer, whose running statistics are buffers, not parameters; a "+decay" suffix
    makes `train` lower every param group's lr after each step (a schedule: the lr lives in
    optimizer.state_dict()["param_groups"], and a fresh optimizer starts from the initial one)."""
    optimizer, *extras = optimizer.split("+")
    decay = "decay" in extras
    extra = "+".join(e for e in extras if e != "decay")
    if extra == "bn":
        model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.BatchNorm1d(HIDDEN), nn.Tanh(), nn.Dropout(0.25),
                              nn.Linear(HIDDEN, 1))
    elif not extra:
        model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.Tanh(), nn.Dropout(0.25), nn.Linear(HIDDEN, 1))
    else:
        raise ValueError(f"unknown model variant {extra!r}")
    if optimizer == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}")
    if decay:
        opt.kit_lr_decay = LR_DECAY  # read by `train`; load_state_dict leaves the attribute alone
    return model, opt


def train(model: nn.Module, opt: torch.optim.Optimizer, data: tuple[torch.Tensor, torch.Tensor], steps: int) -> None:
    x, y = data
    model.train()
    for _ in range(steps):
        idx = random.sample(range(len(x)), BATCH)                      # Python's random: the batch
        noise = np.random.normal(0.0, 0.05, size=(BATCH, IN_DIM))      # NumPy: input noise
        pred = model(x[idx] + torch.from_numpy(noise).float()).squeeze(-1)  # torch: dropout masks
        loss = torch.nn.functional.mse_loss(pred, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if getattr(opt, "kit_lr_decay", None):  # a "+decay" optimizer: a per-step lr schedule
            for group in opt.param_groups:
                group["lr"] *= opt.kit_lr_decay


def snapshot(model: nn.Module, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """Parameters, and per parameter its optimizer state ({name: tensor}), as plain data."""
    params = [p.detach().clone() for p in model.parameters()]
    state = []
    for p in model.parameters():
        entry = {}
        for key, value in opt.state.get(p, {}).items():
            entry[str(key)] = value.detach().clone() if isinstance(value, torch.Tensor) else torch.tensor(value)
        state.append(entry)
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    return {"params": params, "state": state, "buffers": buffers}


def odd_draws() -> None:
    """Leave a cached Gaussian in NumPy's legacy generator (an odd number of normal draws:
    has_gauss = 1) and in Python's (`random.gauss` keeps its second value: gauss_next)."""
    np.random.standard_normal(3)
    random.gauss(0.0, 1.0)


def draws() -> dict[str, Any]:
    """The next numbers each global generator gives (consumes them)."""
    return {"python": [random.random() for _ in range(3)],
            "python_gauss": [random.gauss(0.0, 1.0) for _ in range(3)],
            "numpy": [float(v) for v in np.random.random_sample(3)],
            "numpy_normal": [float(v) for v in np.random.standard_normal(3)],
            "torch": torch.rand(3)}


def uninterrupted(seed: int, steps: int, optimizer: str = "adamw", odd: bool = False) -> dict[str, Any]:
    """Train `steps` steps from `seed` without stopping (then `odd_draws()` when `odd`): params,
    optimizer state, buffers, next draws."""
    with isolated():
        seed_everything(seed)
        model, opt = build(optimizer)
        train(model, opt, dataset(seed), steps)
        if odd:
            odd_draws()
        return {**snapshot(model, opt), "draws": draws()}
