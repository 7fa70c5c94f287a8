"""Models, data, losses and recorders for the `mixed_precision` probes and tests.

Shared by the probes (which hand them to the code under test) and the tests (which run the
same steps with torch.autocast and torch.amp.GradScaler directly to get the expected values).
Models are torch.nn, optimizers torch.optim: nothing here depends on another assignment module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

IN_DIM, HIDDEN, OUT_DIM, BATCH = 16, 32, 4, 32

#: Multiplies the tiny loss: its gradients (about 1e-9) underflow in float16 unless scaled.
TINY = 2.0**-24
#: Multiplies the inputs of an "overflow" batch: the first matmul exceeds float16's 65504.
OVERFLOW = 1e5
#: The mixed-dtype model's inputs sit around this value; it subtracts it (in float32) before its
#: first matmul.  Near 512 float32's spacing is 2**-14 but bfloat16's is 4 and float16's 0.5, so
#: inputs cast to 16 bits before the forward lose everything the model looks at.
OFFSET = 512.0


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


#: The dropout probability of the dropout model (`setup_dropout`).
DROPOUT = 0.5


def setup_dropout(seed: int, steps: int, device: str = "cpu") -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """`setup`'s model with an nn.Dropout(DROPOUT) after the ReLU (the mode decides whether it drops
    anything), and `steps` batches, from `seed` alone."""
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT), nn.Linear(HIDDEN, OUT_DIM))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    batches = [(torch.randn(BATCH, IN_DIM, generator=g).to(device), torch.randn(BATCH, OUT_DIM, generator=g).to(device))
               for _ in range(steps)]
    return model.to(device), batches


class MixedDtypeModel(nn.Module):
    """A model that is not all float32, with an fp32 op before its first matmul and a branch that
    only some steps use.

    * ``x - offset`` (a float32 buffer) runs before any matmul: in float32 whatever autocast does;
    * ``gain64`` is a float64 parameter and ``scale16`` a bfloat16 one: they keep their dtypes (and
      so do their gradients and optimizer state) under mixed precision, as do the float32 ones;
    * ``extra`` (an nn.Linear) is used only while ``use_extra`` is True (`before_step` sets it on
      even steps): on the other steps its parameters get no gradient at all.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offset", torch.full((IN_DIM,), OFFSET))
        self.gain64 = nn.Parameter(torch.ones(OUT_DIM, dtype=torch.float64))
        self.scale16 = nn.Parameter(torch.ones(HIDDEN, dtype=torch.bfloat16))
        self.lin1 = nn.Linear(IN_DIM, HIDDEN)
        self.lin2 = nn.Linear(HIDDEN, OUT_DIM)
        self.extra = nn.Linear(IN_DIM, OUT_DIM)
        self.use_extra = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x - self.offset
        out = self.lin2(torch.relu(self.lin1(h)) * self.scale16)
        if self.use_extra:
            out = out + self.extra(h)
        return out * self.gain64.to(out.dtype)


def setup_mixed(seed: int, batch_sizes: list[int], target_scale: float = 1.0,
                device: str = "cpu") -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A `MixedDtypeModel` and one batch per entry of `batch_sizes`, from `seed` alone; inputs are
    OFFSET + N(0, 1), targets `target_scale` * N(0, 1) (a large scale gives large gradients)."""
    g = torch.Generator().manual_seed(seed)
    model = MixedDtypeModel()
    with torch.no_grad():
        for p in model.parameters():
            centre = 0.0 if p.dtype == torch.float32 else 1.0  # the gain and the scale start near 1
            p.copy_((centre + 0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64)).to(p.dtype))
    batches = [((OFFSET + torch.randn(n, IN_DIM, generator=g)).to(device),
                (target_scale * torch.randn(n, OUT_DIM, generator=g)).to(device)) for n in batch_sizes]
    return model.to(device), batches


def before_step(model: nn.Module, i: int) -> None:
    """Called before step i (from 0) on both sides: the mixed-dtype model uses `extra` on even steps."""
    if isinstance(model, MixedDtypeModel):
        model.use_extra = i % 2 == 0


def make_optimizer(model: nn.Module, name: str) -> torch.optim.Optimizer:
    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if name == "sgd-wd":  # momentum and weight decay: a zero gradient still moves a parameter
        return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=0.01)
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


def _autocast_nesting() -> int:
    """How many autocast blocks are open now (torch keeps the count; asked by one step up and back)."""
    level = torch.autocast_increment_nesting()
    torch.autocast_decrement_nesting()
    return level - 1


@contextlib.contextmanager
def autocast_restored(device_type: str) -> Iterator[dict[str, bool]]:
    """Around one call of the code under test: afterwards, `seen["left_on"]` says whether autocast was
    still on for `device_type` (a block entered and never left), and autocast's state (enabled, dtype,
    nesting and cache) is put back as it was, so that the next probe, of this module or another one,
    starts clean: a bug costs points in its own module only."""
    enabled, dtype, nesting = torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type), \
        _autocast_nesting()
    seen = {"left_on": False}
    try:
        yield seen
    finally:
        seen["left_on"] = torch.is_autocast_enabled(device_type) and not enabled
        torch.set_autocast_enabled(device_type, enabled)
        torch.set_autocast_dtype(device_type, dtype)
        for _ in range(_autocast_nesting() - nesting):
            torch.autocast_decrement_nesting()
        if _autocast_nesting() == 0:
            torch.clear_autocast_cache()


def dtype_name(t: torch.Tensor | None) -> str | None:
    return None if t is None else str(t.dtype).removeprefix("torch.")


def build(seed: int, steps: int, model: str = "plain", batch_sizes: list[int] | None = None,
          target_scale: float = 1.0, device: str = "cpu") -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """`setup` ("plain"), `setup_dropout` ("dropout") or `setup_mixed` ("mixed", `batch_sizes` or `steps`
    full batches)."""
    if model == "plain":
        return setup(seed, steps, device)
    if model == "dropout":
        return setup_dropout(seed, steps, device)
    if model == "mixed":
        return setup_mixed(seed, batch_sizes or [BATCH] * steps, target_scale, device)
    raise ValueError(f"unknown model {model!r}")


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
