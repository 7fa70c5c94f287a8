"""Training: the lecture's last slide, built from your own pieces.

Everything so far comes together in one loop: a model (your `Cruncher`), an optimizer (your
`SGD`/`AdamW`, or any ``torch.optim.Optimizer``), a source of batches, a loss, checkpoints
(your `save_checkpoint`/`load_checkpoint`) and, optionally, mixed precision (your
`mixed_precision_step`).  Then the accounting: how many FLOPs one step costs (the lecture's
6·B·P, and where it is not exact), and the napkin numbers the lecture poses about GPT-3 and
a node of H100s.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .checkpointing import load_checkpoint, save_checkpoint
from .cruncher import cruncher_num_parameters
from .flops import get_promised_flop_per_sec, mfu
from .mixed_precision import mixed_precision_step

BatchFn = Callable[[], tuple[torch.Tensor, torch.Tensor]]


def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, get_batch: BatchFn, num_steps: int, *,
          checkpoint_path: str | os.PathLike[str] | None = None, checkpoint_every: int = 0,
          mixed_precision: bool = False, device: str | torch.device = "cpu") -> list[float]:
    """Train `model` for steps ``start .. num_steps - 1`` and return the loss of each step run.

    The loop of the lecture, with the mean squared error ``F.mse_loss(model(x), y)`` as the
    loss.  Each step, in this order:

    1. ``x, y = get_batch()`` (it draws from torch's random generator: call it exactly once per
       step, before anything else of the step), then move both to `device`;
    2. if `mixed_precision`: ``loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)``
       (your own, from `mixed_precision`; bfloat16 autocast on any device);
       else: ``optimizer.zero_grad(set_to_none=True)``, ``loss = F.mse_loss(model(x), y)``,
       ``loss.backward()``, ``optimizer.step()``.  ``set_to_none=True`` frees the gradient
       tensors between steps instead of filling them with zeros: P floats of memory that are
       not held while the next forward pass allocates its activations;
    3. record the loss as a Python float (``loss.item()``);
    4. if `checkpoint_path` is given and ``checkpoint_every > 0`` and the number of steps done,
       ``step + 1``, is a multiple of `checkpoint_every`: ``save_checkpoint(model, optimizer,
       step + 1, checkpoint_path)`` (your own, atomic).

    Resuming: if `checkpoint_path` is given and a file exists there when `train` starts, first
    ``start = load_checkpoint(checkpoint_path, model, optimizer)`` (your own: it restores the
    parameters, the optimizer's state and every random generator), and run the steps
    ``start .. num_steps - 1`` only; otherwise ``start = 0``.  A run killed after a
    checkpoint and restarted with the same arguments (in a new process, with a freshly built
    model and optimizer) then computes exactly the losses the uninterrupted run computed for
    those steps, bit for bit.

    `model` and `optimizer` are already on `device` (build the model, ``.to(device)`` it, then
    build the optimizer); `train` moves only the batches.

    Args:
        model: the model to train (e.g. ``Cruncher(dim, num_layers)``).
        optimizer: its optimizer.
        get_batch: a function of no arguments returning ``(x, y)`` (CPU tensors).
        num_steps: the total number of steps of the run (including those done before a resume).
        checkpoint_path: where to save checkpoints and resume from (None: never).
        checkpoint_every: save after every `checkpoint_every` steps (0: never).
        mixed_precision: use `mixed_precision_step` (bfloat16 autocast) for each step.
        device: where the batches go: ``"cpu"``, ``"cuda"``, ``"cuda:0"`` or a ``torch.device``.

    Returns:
        The losses of the steps run by this call, in order (``num_steps - start`` floats).

    Raises:
        ValueError: if ``num_steps < 0`` or ``checkpoint_every < 0``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def step_flops(batch: int, dim: int, num_layers: int) -> dict[str, int]:
    """Return the matmul FLOPs of one training step of ``Cruncher(dim, num_layers)`` on `batch` rows.

    The lecture's rule: with P parameters (all in matmul weights) and B examples, the forward
    pass costs 2·B·P (one multiply and one add per weight per example), the backward pass twice
    that, 4·B·P (the gradient with respect to each layer's *input* and the one with respect
    to its *weight*), so a step costs **6·B·P**.

    Autograd is lazier than the rule: nothing needs the gradient with respect to the batch
    ``x`` itself, so the first layer computes only its weight gradient.  What a FLOP counter
    measures on a real step is therefore 4·B·P minus that first layer's input gradient,
    2·B·(d_in·d_out of the first layer): the first of ``layers`` when ``num_layers > 0``,
    else ``final`` (d_in = dim, d_out = 1).

    Return a dict of ``int``:

    * ``"forward"``: 2·B·P;
    * ``"backward"``: 4·B·P − 2·B·d_in·d_out (first layer);
    * ``"total"``: forward + backward (what one real step does);
    * ``"six_bp"``: 6·B·P (the lecture's estimate).

    Use `cruncher_num_parameters` for P.  Example: ``step_flops(2, 64, 2)``: P = 8256,
    forward 33024, backward 4·2·8256 − 2·2·64·64 = 49664, total 82688, six_bp 99072.

    Args:
        batch: B.
        dim: the Cruncher's width.
        num_layers: its number of (dim × dim) layers.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def step_mfu(model: torch.nn.Module, optimizer: torch.optim.Optimizer, get_batch: BatchFn, batch: int, dim: int,
             num_layers: int, num_steps: int = 10, device: str | torch.device = "cuda") -> dict[str, float]:
    """Time `num_steps` training steps of a ``Cruncher(dim, num_layers)`` with your `train` and
    return their model FLOPs utilisation.

    1. Warm up: one step with ``train(model, optimizer, get_batch, 1, device=device)`` (not timed).
    2. On a CUDA device, ``torch.cuda.synchronize()`` before starting the clock and before
       reading it again (kernels run asynchronously); on the CPU do not touch ``torch.cuda``.
    3. Time ``train(model, optimizer, get_batch, num_steps, device=device)`` with
       ``time.perf_counter()``: ``seconds_per_step`` is that total time divided by `num_steps`.
    4. ``flops_per_step`` is ``step_flops(batch, dim, num_layers)["total"]`` (what a step really
       does); ``peak`` is your ``get_promised_flop_per_sec(torch.cuda.get_device_name(device),
       torch.float32)`` (the model trains in float32); ``mfu`` is your ``mfu(flops_per_step,
       seconds_per_step, peak)``.

    Returns:
        ``{"seconds_per_step": float, "flops_per_step": float, "peak": float, "mfu": float}``.
        A plausible MFU is above 0 and never above 1 (above 1 means the clock stopped before
        the GPU finished).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def weight_bytes(rows: int, cols: int, dtype: torch.dtype) -> int:
    """Return the bytes of a (rows × cols) weight matrix stored in `dtype`.

    The lecture's example: one feed-forward matrix of GPT-3, 12288 × 49152 in float32, is
    2,415,919,104 bytes: the lecture prints "2.3 GB", which is this number in GiB (2³⁰ bytes),
    not in GB (10⁹ bytes, 2.4 GB).

    Use the element size torch reports for `dtype` (``torch.empty((), dtype=dtype).element_size()``
    or ``dtype.itemsize``): float32 4, bfloat16 2, float8 1, int64 8, int8 1, bool 1.  Any dtype
    works, integer and bool ones included (they have no ``torch.finfo``).

    Returns:
        An ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def flops_delivered(num_gpus: int, days: float, flop_per_sec: float, mfu: float = 1.0) -> float:
    """Return the FLOPs `num_gpus` GPUs deliver in `days` days at model FLOPs utilisation `mfu`.

    num_gpus · flop_per_sec · mfu · seconds, with 24 · 60 · 60 seconds per day.  The lecture
    asks what 8 H100s deliver in two weeks (at their dense bf16 peak of 989.5e12 FLOP/s), but
    its code multiplies by 7 days: ``flops_delivered(8, 7, 989.5e12)`` = 4.79e21 is the
    lecture's number, and two weeks is twice that.

    Returns:
        A ``float``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def elementwise_flops(rows: int, cols: int, ops_per_element: int = 1) -> int:
    """Return the FLOPs of an elementwise operation on a (rows × cols) matrix.

    One FLOP per element per arithmetic operation: ``x + y`` or ``x * y`` on an m × n matrix is
    m·n FLOPs (``x * y + z`` is 2·m·n).  Compare with a matmul of an m × n by an n × p matrix,
    2·m·n·p: for transformer-sized n and p the elementwise work is negligible, which is why
    FLOP counts keep only the matmuls.

    Returns:
        An ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
