"""Compute accounting: FLOPs, training time, and model FLOPs utilisation (MFU).

A FLOP is one floating-point operation (an addition or a multiplication).  Almost all the
compute of a language model is matrix multiplication: multiplying an (m × n) matrix by an
(n × p) matrix takes m·n·p multiplications and as many additions, so **2·m·n·p FLOPs**.
From that one fact follow the numbers every training plan starts with: the forward pass of a
model with N parameters costs about 2 FLOPs per parameter per token, the backward pass twice
that, so training costs about 6·N·T FLOPs for T tokens.  Divided by what the hardware
delivers (the datasheet's peak times the fraction you actually reach, the MFU), that gives
the days a training run takes.

Conventions used throughout: FLOP counts are Python ``int`` where they are exact counts of a
computation and ``float`` where they are estimates of a whole training run; times are in
seconds unless the name says otherwise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

SECONDS_PER_DAY = 24 * 60 * 60


def matmul_flops(a_shape: Sequence[int], b_shape: Sequence[int]) -> int:
    """Return the FLOPs of ``a @ b`` for tensors of shapes `a_shape` and `b_shape`.

    Multiplying an (m × n) matrix by an (n × p) matrix takes 2·m·n·p FLOPs (each of the m·p
    outputs is a sum of n products: n multiplications and, counting like everyone does, n
    additions).  Leading *batch* dimensions broadcast as in ``torch.matmul``: shapes
    (..., m, n) and (..., n, p) multiply one matrix pair per element of the broadcast batch
    shape, so the count is multiplied by the number of elements of
    ``torch.broadcast_shapes(a_shape[:-2], b_shape[:-2])``.

    Examples: (3, 4) @ (4, 5) is 2·3·4·5 = 120 FLOPs; (8, 3, 4) @ (4, 5) is 8·120 = 960;
    (5, 1, 3, 4) @ (2, 4, 6) broadcasts to a batch of 5·2 = 10 products of 2·3·4·6 FLOPs.

    Args:
        a_shape: shape of the left operand, at least 2 dimensions (a tuple, list or
            ``torch.Size`` of ints).
        b_shape: shape of the right operand, at least 2 dimensions.

    Returns:
        An ``int``.

    Raises:
        ValueError: if either shape has fewer than 2 dimensions, if the inner dimensions
            differ (a's last vs b's second-to-last), or if the batch dimensions do not broadcast.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def forward_flops(batch: int, dims: Sequence[int]) -> int:
    """Return the FLOPs of the forward pass of a chain of matrix multiplications.

    The chain takes an input x of shape (batch, dims[0]) and multiplies it by weight
    matrices of shapes (dims[0], dims[1]), (dims[1], dims[2]), ..., (dims[-2], dims[-1]) in
    turn: ``h = x @ w1 @ w2 @ ...``.  Each step costs 2·batch·d_in·d_out FLOPs (only the
    matmuls count; there are no biases or nonlinearities).  With a single width (one entry in
    `dims`) there is no matmul: 0.

    Example: batch 4, dims [8, 16, 2] costs 2·4·8·16 + 2·4·16·2 = 1280 FLOPs.

    Args:
        batch: number of rows of x (examples, or tokens).
        dims: the widths, input width first.

    Returns:
        An ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def backward_flops(batch: int, dims: Sequence[int], input_grad: bool = True) -> int:
    """Return the FLOPs of the backward pass of the chain of `forward_flops`.

    For one layer ``h_out = h_in @ w`` with h_in of shape (batch, d_in) and w of shape
    (d_in, d_out), backpropagation computes two matmuls, each as costly as the forward one:

    * the weight gradient ``grad_w = h_in.T @ grad_h_out``: 2·batch·d_in·d_out FLOPs;
    * the input gradient ``grad_h_in = grad_h_out @ w.T``: 2·batch·d_in·d_out FLOPs, needed to
      keep backpropagating into the layers below.

    So the backward pass costs **2× the forward pass** (hence 2 + 4 = 6 FLOPs per parameter
    per token for training).  The one exception is the first layer's input gradient: the
    gradient with respect to the data x is only computed when x requires a gradient.  With
    ``input_grad=False`` leave out that one matmul (2·batch·dims[0]·dims[1] FLOPs); every
    other input gradient is still needed.

    Example: batch 4, dims [8, 16, 2]: 2·1280 = 2560 with the input gradient,
    2560 − 2·4·8·16 = 1536 without.

    Args:
        batch: number of rows of x.
        dims: the widths, input width first (as in `forward_flops`).
        input_grad: whether the gradient with respect to x is computed.

    Returns:
        An ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def training_flops(num_params: float, num_tokens: float) -> float:
    """Return the FLOPs of training a model with `num_params` parameters on `num_tokens` tokens.

    Each parameter is used in one multiply and one add per token in the forward pass
    (2 FLOPs) and twice that in the backward pass (4 FLOPs): **6·N·T** in all.  A 70e9
    parameter model on 15e12 tokens takes 6 · 70e9 · 15e12 = 6.3e24 FLOPs.

    Args:
        num_params: N, the number of parameters.
        num_tokens: T, the number of training tokens.

    Returns:
        A ``float``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def training_days(num_params: float, num_tokens: float, num_gpus: int, flop_per_sec: float,
                  mfu: float) -> float:
    """Return how many days training takes: ``training_flops / (GPUs × peak × MFU)``, in days.

    `flop_per_sec` is one GPU's promised (datasheet) peak and `mfu` the fraction of it the
    run actually achieves, so the cluster delivers num_gpus · flop_per_sec · mfu FLOP/s.
    The lecture's question: 70e9 parameters on 15e12 tokens with 1024 H100s (dense bf16 peak
    989.5e12 FLOP/s) at MFU 0.5 takes 6.3e24 / (1024 · 989.5e12 · 0.5) s ≈ 1.24e7 s,
    about **144 days**.  A day is 24 · 60 · 60 seconds.

    Args:
        num_params: N.
        num_tokens: T.
        num_gpus: how many GPUs train together.
        flop_per_sec: one GPU's peak FLOP/s for the dtype used.
        mfu: model FLOPs utilisation, between 0 and 1.

    Returns:
        A ``float``: days (not rounded).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


class MatmulFlopCounter(TorchDispatchMode):
    """A `TorchDispatchMode` that adds the FLOPs of every matrix multiplication run under it.

    Inside ``with MatmulFlopCounter() as counter:``, every ATen operator that PyTorch runs
    (forward *and* backward: autograd's backward kernels go through the dispatcher too) first
    calls ``counter.__torch_dispatch__(func, types, args, kwargs)``.  Whatever Python code you
    wrote (``x @ w``, ``nn.Linear``, ``torch.einsum``, ``einops.einsum``), it reaches the
    dispatcher as a handful of *primitive* matmul operators:

    ================= ====================================== =============================
    operator          arguments (args)                       FLOPs counted
    ================= ====================================== =============================
    ``aten.mm``       (a [m, n], b [n, p])                   2·m·n·p
    ``aten.addmm``    (bias, a [m, n], b [n, p])             2·m·n·p (the bias add is free)
    ``aten.bmm``      (a [B, m, n], b [B, n, p])             2·B·m·n·p
    ``aten.baddbmm``  (bias, a [B, m, n], b [B, n, p])       2·B·m·n·p
    ================= ====================================== =============================

    Everything else (adds, ReLU, softmax, sums, views, embeddings, ...) counts 0, including
    ``aten.mv`` and ``aten.dot``: a matrix-vector product ``W @ x`` (1-D ``x``) counts 0, as in
    ``FlopCounterMode``, while ``x @ W`` reaches the dispatcher as ``aten.mm`` and counts.  These are exactly the
    conventions of ``torch.utils.flop_counter.FlopCounterMode`` for matmuls, and your count
    must equal its total.  `func` is an ``OpOverload`` such as ``aten.mm.default``; compare
    ``func.overloadpacket`` with ``torch.ops.aten.mm`` (the packet), or compare `func` with
    ``torch.ops.aten.mm.default``.  Keyword arguments (``beta``, ``alpha``) come in `kwargs`.

    `__torch_dispatch__` must run the operator (``func(*args, **kwargs)``), add its FLOPs to
    ``self.flops`` and return the operator's result unchanged.
    """

    def __init__(self) -> None:
        super().__init__()
        self.flops: int = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        # YOUR CODE HERE
        raise NotImplementedError()


def count_matmul_flops(fn: Callable[..., Any], *args: Any) -> int:
    """Run ``fn(*args)`` under a `MatmulFlopCounter` and return the matmul FLOPs it performed.

    The counter is on while ``fn`` runs and off again when this function returns (a ``with`` block).
    If `fn` calls ``.backward()``, the backward pass runs inside the mode too and its matmuls
    are counted.  The result must equal what ``torch.utils.flop_counter.FlopCounterMode``
    reports for the same call (its ``get_total_flops()``); the tests check that on a deep
    linear model (``aten.mm``), an MLP with biases (``aten.addmm``), batched attention scores
    (``aten.bmm``), code written with ``einops.einsum``, and ``torch.baddbmm``, forward and
    forward + backward.

    Rule (checked by reading your code, program-wide: this function, `MatmulFlopCounter`,
    everything of your submission they reach, module-level code; and watched at run time):
    ``flops.py`` must not use ``torch.utils.flop_counter`` (neither import it nor refer to
    ``flop_counter`` or ``FlopCounterMode``), nor the dynamic escapes ``getattr``, ``eval``,
    ``exec``, ``__import__``, ``importlib``, ``globals``, ``vars``, ``compile``; and
    ``FlopCounterMode`` must not be entered while this function runs.  You write the counting.
    The rule only takes away the points a correct count earns.

    Args:
        fn: any callable; its return value is ignored.
        *args: passed to `fn`.

    Returns:
        An ``int``: the total matmul FLOPs of the call.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def get_promised_flop_per_sec(device_name: str, dtype: torch.dtype) -> float:
    """Return a GPU's promised peak FLOP/s for matmuls in `dtype`, from NVIDIA's datasheets.

    `device_name` is what ``torch.cuda.get_device_name()`` reports, e.g. "Tesla T4",
    "NVIDIA L4", "NVIDIA A100-SXM4-40GB" (Colab gives out these three), "NVIDIA A100-SXM4-80GB",
    "NVIDIA A100-PCIE-40GB", "NVIDIA H100 80GB HBM3" (the SXM H100), "NVIDIA H100 PCIe",
    "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL".
    Match on the model ("T4", "L4", "A100", "H100", "H200") as a whole *word* of the name, the
    name split at spaces and hyphens ("NVIDIA A100-SXM4-40GB" has the words NVIDIA, A100, SXM4
    and 40GB): "NVIDIA L40S" is not an L4, "NVIDIA T400 4GB" not a T4.  For H100 and H200, match
    the form factor too: a name containing "PCIe" (any case) is the PCIe card, one containing
    "NVL" the NVL card, any other H100/H200 is the SXM module.  (The H200 datasheet has no PCIe
    card: an H200 name with "PCIe" in it is a GPU not in the table.)

    Tensor-core figures come dense or *with 2:4 structured sparsity* (exactly 2× dense).  The
    A100 datasheet lists both (bf16/fp16: 312 dense, 624 sparse TFLOP/s); the H100, H200 and L4
    datasheets list only the sparse figure, marked "*" (H100 SXM bf16: 1979*; L4: 242*), so a
    dense matmul gets **half** of it; the T4's tensor cores (Turing) have no sparsity, and its
    datasheet's figure (65 TFLOP/s, "mixed precision FP16/FP32") is dense.  Return dense
    figures.  FP32 figures are not tensor-core figures and have no sparse form.  float32 means
    plain FP32 (no TF32: PyTorch does not use TF32 for float32 matmuls by default); bfloat16 and
    float16 have the same peak, except on the T4: its tensor cores have no bfloat16 (that came
    with Ampere, the A100), so the T4 has no bfloat16 figure and raises ValueError for it.

    ================================ ================== ========================
    GPU (datasheet)                  float32 (FP32)     bfloat16 / float16, dense
    ================================ ================== ========================
    A100, any form factor [1]        19.5e12            312e12  (624 sparse)
    H100 SXM [2]                     67e12              989.5e12 (1979 sparse)
    H100 PCIe [2]                    51e12              756.5e12 (1513 sparse)
    H100 NVL [2]                     60e12              835.5e12 (1671 sparse)
    H200 SXM [3]                     67e12              989.5e12 (1979 sparse)
    H200 NVL [3]                     60e12              835.5e12 (1671 sparse)
    T4 [4]                           8.1e12             65e12 float16 only (no bfloat16)
    L4 [5]                           30.3e12            121e12  (242 sparse)
    ================================ ================== ========================

    [1] NVIDIA A100 Tensor Core GPU datasheet,
        https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
    [2] NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
    [3] NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/
    [4] NVIDIA T4 Tensor Core GPU datasheet,
        https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf
    [5] NVIDIA L4 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet

    (The lecture uses 67.5e12 for H100 SXM FP32, the datasheet 67e12: the tests accept any
    value within 2% of this table, so both pass.)

    Args:
        device_name: the CUDA device name.
        dtype: torch.float32, torch.bfloat16 or torch.float16.

    Returns:
        A ``float``: FLOP/s.

    Raises:
        ValueError: for a GPU not in the table (e.g. "NVIDIA GeForce RTX 4090", "NVIDIA L40S",
            "cpu"), another dtype (e.g. float64, float8), or bfloat16 on the T4.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def mfu(flops: float, seconds: float, promised_flop_per_sec: float) -> float:
    """Return the model FLOPs utilisation: achieved FLOP/s over promised FLOP/s.

    ``mfu = (flops / seconds) / promised_flop_per_sec``.  A computation of 1e12 FLOPs that
    takes 2 ms on a GPU promising 989.5e12 FLOP/s reaches 5e14 / 989.5e12 ≈ 0.505.  Count
    only the FLOPs the model needs (e.g. `matmul_flops`), not what the hardware happened to
    execute.  Above 0.5 is good for a whole training run.

    Returns:
        A ``float``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def time_matmul(a: torch.Tensor, b: torch.Tensor, trials: int = 10) -> float:
    """Return the wall-clock seconds one ``a @ b`` takes, averaged over `trials` runs.

    How to time GPU code honestly:

    1. **Warm up**: run ``a @ b`` at least once before timing (the first call pays for
       loading kernels, cuBLAS heuristics and memory allocation).  Warm-up runs are not timed.
    2. **Synchronise**: CUDA kernels run asynchronously, so ``a @ b`` returns as soon as the
       kernel is *queued*.  Call ``torch.cuda.synchronize()`` before starting the clock and
       before reading it again, or you measure only the launch.  Do this only when the
       tensors are on a CUDA device; on CPU the operation is synchronous and the function
       must work too (without touching ``torch.cuda``).
    3. Time `trials` multiplications with ``time.perf_counter()`` and return the time per
       multiplication: the total over `trials`, the mean of per-trial times, or their median
       (all are fine; not the minimum, which reports the luckiest run, not a typical one).
       Read the clock only around those `trials` multiplications: exactly `trials` of them run
       between your first and last clock reads.

    Args:
        a: left operand (any device, any float dtype).
        b: right operand, on the same device.
        trials: number of timed multiplications (at least 1).

    Returns:
        A ``float``: seconds per multiplication.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
