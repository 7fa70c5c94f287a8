"""Models, data, losses and recorders for the `mixed_precision` probes and tests.

Shared by the probes (which hand them to the code under test) and the tests (which run the
same steps with torch.autocast and torch.amp.GradScaler directly to get the expected values).
Models are torch.nn, optimizers torch.optim: nothing here depends on another assignment module.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

IN_DIM, HIDDEN, OUT_DIM, BATCH = 16, 32, 4, 32

#: Multiplies the tiny loss: its gradients (about 1e-9) underflow in float16 unless scaled.
TINY = 2.0**-24
#: Multiplies the inputs of an "overflow" batch: the first matmul exceeds float16's 65504.
OVERFLOW = 1e5


def setup(seed: int, steps: int, device: str = "cpu") -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A float32 Linear-ReLU-Linear model and `steps` batches, from `seed` alone."""
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT_DIM))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    batches = [(torch.randn(BATCH, IN_DIM, generator=g).to(device), torch.randn(BATCH, OUT_DIM, generator=g).to(device))
               for _ in range(steps)]
    return model.to(device), batches


def make_optimizer(model: nn.Module, name: str) -> torch.optim.Optimizer:
    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if name == "sgd-huge-lr":  # the tiny loss's gradients are ~1e-9: a huge step makes them visible
        return torch.optim.SGD(model.parameters(), lr=2.0**20)
    raise ValueError(f"unknown optimizer {name!r}")


def mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out, y)


def tiny_mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """An fp32 loss so small that its gradients underflow to 0 in float16 without scaling."""
    return ((out.float() - y) ** 2).mean() * TINY


LOSSES = {"mse": mse, "tiny_mse": tiny_mse}


class Recorder:
    """Forward hooks on every nn.Linear (the dtype of each matmul output) and a loss wrapper that
    records whether the loss was computed under autocast."""

    def __init__(self, model: nn.Module, device_type: str):
        self.device_type = device_type
        self.linear: list[str] = []
        self.loss_under_autocast: list[bool] = []
        for module in model.modules():
            if isinstance(module, nn.Linear):
                module.register_forward_hook(self._hook)

    def _hook(self, module: nn.Module, inputs: Any, output: torch.Tensor) -> None:
        self.linear.append(str(output.dtype).removeprefix("torch."))

    def wrap(self, loss_fn):
        def recorded_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            self.loss_under_autocast.append(torch.is_autocast_enabled(self.device_type))
            return loss_fn(out, y)
        return recorded_loss

    def take(self) -> dict[str, Any]:
        seen = {"linear_dtypes": self.linear, "loss_under_autocast": self.loss_under_autocast}
        self.linear, self.loss_under_autocast = [], []
        return seen


def dtype_name(t: torch.Tensor | None) -> str | None:
    return None if t is None else str(t.dtype).removeprefix("torch.")


def observe(model: nn.Module, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """Parameters and gradients (CPU copies), and the dtypes of parameters, gradients and state."""
    params = list(model.parameters())
    return {
        "params": [p.detach().cpu().clone() for p in params],
        "grads": [None if p.grad is None else p.grad.detach().cpu().clone() for p in params],
        "param_dtypes": [dtype_name(p) for p in params],
        "grad_dtypes": [dtype_name(p.grad) for p in params],
        "state_dtypes": [{str(k): dtype_name(v) for k, v in opt.state.get(p, {}).items() if isinstance(v, torch.Tensor)}
                         for p in params],
    }


def inputs(batch: tuple[torch.Tensor, torch.Tensor], kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch as given ("normal"), or with inputs scaled so float16 overflows ("overflow")."""
    x, y = batch
    return (x * OVERFLOW, y) if kind == "overflow" else (x, y)
