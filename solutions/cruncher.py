"""Parameters, initialisation and a deep linear model: the lecture's "Cruncher".

A parameter is a tensor the optimizer updates: ``nn.Parameter`` registers it with its
module, so that ``model.parameters()`` and ``model.state_dict()`` find it.  How parameters
start matters: a weight with entries of standard deviation 1 multiplies the scale of its
input by about √fan_in, and a stack of such layers blows up.  Scaling the entries by
1/√fan_in (Xavier/Kaiming-style) keeps every activation O(1) whatever the width.  Truncating
the normal at ±3 standard deviations removes the rare huge entries.

This module builds that model and counts what training it costs in memory.
"""

from __future__ import annotations

import math

import torch
from torch import nn

FP32_BYTES = 4


class Linear(nn.Module):
    """A linear layer without bias: ``forward(x) = x @ weight``.

    ``weight`` is an ``nn.Parameter`` of shape **(input_dim, output_dim)** (note: the
    transpose of ``torch.nn.Linear``'s layout, so that the forward pass is ``x @ weight``),
    float32, drawn from a normal distribution with mean 0 and standard deviation
    σ = 1/√input_dim, truncated to [−3σ, 3σ]: no entry lies beyond three standard deviations
    (entries beyond are redrawn, not clamped to ±3σ).  One call does exactly that:

        nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=σ, a=-3 * σ, b=3 * σ)

    **This is not the lecture's code.**  The lecture's `Linear` uses plain
    ``torch.randn(input_dim, output_dim) / math.sqrt(input_dim)`` (no truncation), and its
    ``trunc_normal_`` call passes ``std=1 / math.sqrt(input_dim), a=-3, b=3``: `a` and `b` are
    *absolute* bounds, so with σ ≪ 1 nothing is truncated either.  Both fail the tests, which
    check that no entry lies beyond 3σ; here the bounds scale with σ.

    (σ is the std of the normal *before* truncation; cutting the tails makes the entries'
    actual std about 0.987σ.  The tests accept an entry std anywhere from that to σ, but no
    entry may lie beyond 3σ.)  Draw from PyTorch's default random generator (no seed or
    generator of your own), so that ``torch.manual_seed`` makes the initialisation reproducible
    and different seeds, or different layers, give different weights.  The layer has no other
    parameters or buffers.

    With this scale, if x has entries of variance 1, each output ``(x @ weight)[j] =
    Σ_i x[i]·weight[i, j]`` has variance input_dim · σ² ≈ 1: the scale does not grow with the
    width.

    Args:
        input_dim: fan-in, the size of the last dimension of x.
        output_dim: fan-out.
    """

    def __init__(self, input_dim: int, output_dim: int) -> None:
        ### BEGIN SOLUTION
        super().__init__()
        std = 1 / math.sqrt(input_dim)
        self.weight = nn.Parameter(
            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x of shape (..., input_dim) → x @ weight of shape (..., output_dim)."""
        ### BEGIN SOLUTION
        return x @ self.weight
        ### END SOLUTION


class Cruncher(nn.Module):
    """A deep *linear* model: `num_layers` ``Linear(dim, dim)`` layers, then ``Linear(dim, 1)``.

    Attributes (their names are the state-dict keys, which checkpoints and the tests rely on):

    * ``layers``: an ``nn.ModuleList`` of `num_layers` ``Linear(dim, dim)``, each a layer of its
      own (drawn separately, not one layer repeated); an ``nn.Sequential`` of them works too
      (the same state-dict keys), as long as ``forward`` still applies ``final`` after it;
    * ``final``: a ``Linear(dim, 1)``.

    So ``Cruncher(64, 2).state_dict()`` has exactly the keys ``layers.0.weight`` (64 × 64 =
    4096 values), ``layers.1.weight`` (4096) and ``final.weight`` (64 × 1 = 64), in that order.
    (A plain Python list of layers would hide them from ``parameters()`` and ``state_dict()``.)

    ``forward(x)`` for x of shape (batch, dim): apply each layer in order, with nothing in
    between (no nonlinearity), then ``final``, and drop the last dimension of size 1: the
    output has shape **(batch,)**, also for a batch of 1.  Thanks to `Linear`'s 1/√dim initialisation the outputs
    stay O(1) for any dim and depth.

    Args:
        dim: the width.
        num_layers: the number of (dim × dim) layers before ``final`` (may be 0).
    """

    def __init__(self, dim: int, num_layers: int) -> None:
        ### BEGIN SOLUTION
        super().__init__()
        self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
        self.final = Linear(dim, 1)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x of shape (batch, dim) → outputs of shape (batch,)."""
        ### BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)
        ### END SOLUTION


def get_num_parameters(model: nn.Module) -> int:
    """Return the number of scalar parameters of `model`: the sum of ``numel()`` over
    ``model.parameters()``.

    `model` is any ``nn.Module``, not only a Cruncher or a stack of Linears (an embedding, a
    norm, a parameter registered on the model itself all count).  Count every parameter,
    trainable or frozen (``requires_grad=False``), each shared (tied) parameter once (a tensor
    registered under two names, or one submodule used twice), and no buffers (e.g. BatchNorm's
    running statistics are state, not parameters: they are in ``state_dict()`` but not in
    ``parameters()``).
    ``get_num_parameters(Cruncher(64, 2))`` is 4096 + 4096 + 64 = 8256.

    Returns:
        An ``int``.
    """
    ### BEGIN SOLUTION
    return sum(p.numel() for p in model.parameters())
    ### END SOLUTION


def cruncher_num_parameters(dim: int, num_layers: int) -> int:
    """Return the number of parameters of ``Cruncher(dim, num_layers)`` in closed form.

    num_layers · dim² for the square layers plus dim for ``final``:
    ``cruncher_num_parameters(64, 2)`` = 2 · 4096 + 64 = 8256.

    Returns:
        An ``int``.
    """
    ### BEGIN SOLUTION
    return num_layers * dim * dim + dim
    ### END SOLUTION


def cruncher_memory_bytes(batch: int, dim: int, num_layers: int, optimizer: str = "adagrad") -> int:
    """Return the bytes of memory needed to train ``Cruncher(dim, num_layers)`` in float32, an exact ``int``.

    The lecture's accounting, every value 4 bytes (float32):

        4 × (parameters + activations + gradients + optimizer state)

    * parameters: ``cruncher_num_parameters(dim, num_layers)`` = P;
    * activations: the output of each square layer is kept for the backward pass:
      batch · dim · num_layers values;
    * gradients: one per parameter, P;
    * optimizer state: P times the number of state values per parameter, as in
      ``memory.bytes_per_parameter``: "sgd" 0 (no momentum), "adagrad" 1 (sum of squared
      gradients), "rmsprop" 1, "adam" 2 (first and second moments), "adamw" 2.

    Example: batch 2, dim 64, num_layers 2 with AdaGrad: P = 8256, activations 2·64·2 = 256,
    so 4 × (8256 + 256 + 8256 + 8256) = 100096 bytes.

    Args:
        batch: the batch size B.
        dim: the width D.
        num_layers: the number of square layers.
        optimizer: "sgd", "adagrad", "rmsprop", "adam" or "adamw" (lower case); the default
            is "adagrad".

    Returns:
        An ``int`` number of bytes.

    Raises:
        ValueError: for any other optimizer name (including other capitalisations, "Adam").
    """
    ### BEGIN SOLUTION
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")
    params = cruncher_num_parameters(dim, num_layers)
    activations = batch * dim * num_layers
    return FP32_BYTES * (params + activations + params + state_values[optimizer] * params)
    ### END SOLUTION
