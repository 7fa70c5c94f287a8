"""Tensor memory and floating-point formats.

Every number a deep-learning engineer quotes about memory ("a 7B model needs 112 GB to train
with AdamW") comes from a few facts: how many bytes an element takes, how much storage a
tensor pins, and how many values are kept per parameter while training.  This module
makes those facts into functions.
"""

from __future__ import annotations

import torch

# Bytes per element of the formats used for training (fp32) and mixed precision (bf16).
FP32_BYTES = 4
BF16_BYTES = 2


def get_memory_usage(x: torch.Tensor) -> int:
    """Return the number of bytes taken by the elements of `x`.

    That is ``numel × bytes per element``: a float32 tensor of shape (4, 8) takes
    4·8·4 = 128 bytes, the same tensor in bfloat16 64 bytes.  Count only the elements `x`
    itself has, even if `x` is a view into a larger storage (see `storage_bytes`).

    Args:
        x: any tensor (any dtype, any shape, possibly empty or 0-dimensional).

    Returns:
        A Python ``int``.
    """
    ### BEGIN SOLUTION
    return x.numel() * x.element_size()
    ### END SOLUTION


def storage_bytes(x: torch.Tensor) -> int:
    """Return the number of bytes of the storage that `x` views.

    A slice is a view: ``big[:2]`` of a (1000, 1000) float32 tensor holds 2·1000 elements but
    keeps all 4,000,000 bytes of ``big``'s storage alive.  This function returns the size of
    that whole underlying storage, not of the view's elements.

    Args:
        x: any tensor, possibly a view (slice, transpose, ...).

    Returns:
        A Python ``int``: the byte size of ``x``'s underlying storage.
    """
    ### BEGIN SOLUTION
    return x.untyped_storage().nbytes()
    ### END SOLUTION


def float_format(dtype: torch.dtype) -> tuple[int, int, int]:
    """Return the (sign, exponent, mantissa) bit counts of a floating-point format.

    A float is stored as 1 sign bit, E exponent bits (the range: how large and how small a
    number can get) and M mantissa bits (the precision: the fraction after the implicit
    leading 1).  float32 is (1, 8, 23): 32 bits in all.  Support float64, float32, float16,
    bfloat16, float8_e4m3fn and float8_e5m2.  bfloat16 keeps float32's range and gives up
    precision; float16 does the opposite, which is why it underflows so easily.  The two
    float8 formats trade in opposite directions: e4m3 has more precision and less range
    (largest 448), e5m2 more range and less precision (largest 57344).

    Hint: ``torch.finfo(dtype)`` knows ``bits`` and ``eps``; ``eps`` is the gap between 1.0
    and the next representable number, ``2 ** -M``.  Or work the numbers out from the
    dtype's name and size.

    Args:
        dtype: one of the six dtypes above.

    Returns:
        A tuple of three ``int``: (sign bits, exponent bits, mantissa bits).

    Raises:
        ValueError: for any other dtype: integer and bool dtypes, complex, and the other
        low-precision float types torch has (``float8_e4m3fnuz``, ``float8_e5m2fnuz``,
        ``float8_e8m0fnu``, ``float4_e2m1fn_x2``, ...).  Check the dtype against the six
        supported ones, not whether it is a floating-point type.
    """
    ### BEGIN SOLUTION
    formats = {
        torch.float64: (1, 11, 52),
        torch.float32: (1, 8, 23),
        torch.float16: (1, 5, 10),
        torch.bfloat16: (1, 8, 7),
        torch.float8_e4m3fn: (1, 4, 3),
        torch.float8_e5m2: (1, 5, 2),
    }
    if dtype not in formats:
        raise ValueError(f"no floating-point format table entry for {dtype}")
    return formats[dtype]
    ### END SOLUTION


def rounds_to_zero(value: float, dtype: torch.dtype) -> bool:
    """Return True if the nonzero number `value` becomes exactly 0 when stored in `dtype`.

    This is underflow: 1e-8 is below the smallest float16 number (about 6e-8, a subnormal),
    so ``rounds_to_zero(1e-8, torch.float16)`` is True, while bfloat16's normal numbers reach
    down to about 1.2e-38 (its subnormals to 2^-133, about 9.2e-41) and
    ``rounds_to_zero(1e-8, torch.bfloat16)`` is False.  Subnormal numbers count as
    representable: 1e-6 in float16 does not round to zero even though it is below the
    smallest *normal* float16 (about 6.1e-5).  Use round-to-nearest, as a tensor conversion does.

    At the boundary: let ``s`` be the smallest positive (subnormal) number of `dtype`.  A value
    with ``|value| < s/2`` rounds to 0; one with ``s/2 < |value| < s`` rounds *up* to ``s`` (not
    zero); one exactly at ``s/2`` is a tie, and round-half-to-even sends it to 0 (0 is the even
    neighbour).  The sign does not matter: -1e-8 in float16 rounds to (minus) zero too.  (torch
    converts a float64 to float16, bfloat16 and float8 through float32, so a value just above
    ``s/2`` that float32 rounds onto ``s/2`` lands on the tie: either answer is accepted there.)

    Every floating-point dtype torch holds one value per element in counts (not the packed
    ``float4_e2m1fn_x2``, two 4-bit values per byte, which torch cannot convert to), the float8
    ones included: the ``fnuz`` formats
    (``float8_e4m3fnuz``, ``float8_e5m2fnuz``) have no negative zero but round to 0 the same way;
    ``float8_e8m0fnu`` (exponent bits only, used for scale factors) has no zero at all, so
    nothing rounds to zero in it.  Converting a tensor handles all of these for you; a formula
    built on ``torch.finfo`` must take care (``finfo(float8_e5m2fnuz).eps`` is 0.125, not
    2**-2, and ``finfo`` does not tell that e8m0 has no zero).

    Args:
        value: a Python float (positive or negative).
        dtype: a floating-point dtype.

    Returns:
        ``bool``.  A value that is already 0.0 does not "round to zero" (nothing is lost): False.
    """
    ### BEGIN SOLUTION
    if value == 0.0:
        return False
    stored = torch.tensor(value, dtype=torch.float64).to(dtype)
    return bool(stored.item() == 0.0)
    ### END SOLUTION


def bytes_per_parameter(optimizer: str, mixed_precision: bool = False) -> int:
    """Return the bytes of memory needed per parameter while training, activations excluded.

    Count the parameter itself, its gradient, and the optimizer's state:

    ========= ============================ =====================
    optimizer state values per parameter    fp32 total (4 bytes each)
    ========= ============================ =====================
    "sgd"     0 (plain SGD, no momentum)   4 + 4 + 0 = 8
    "adagrad" 1 (sum of squared grads)     4 + 4 + 4 = 12
    "rmsprop" 1 (average of squared grads) 4 + 4 + 4 = 12
    "adam"    2 (first and second moment)  4 + 4 + 8 = 16
    "adamw"   2 (first and second moment)  4 + 4 + 8 = 16
    ========= ============================ =====================

    With ``mixed_precision=True`` the parameters and gradients are bfloat16 (2 bytes each),
    the optimizer state stays fp32, and an fp32 *master copy* of the parameters (4 bytes) is
    kept for the update: AdamW is 2 + 2 + 4 + 8 = 16 bytes, no saving at all.

    Args:
        optimizer: one of "sgd", "adagrad", "rmsprop", "adam", "adamw" (lower case).
        mixed_precision: bf16 parameters/gradients plus an fp32 master copy.

    Returns:
        ``int`` bytes per parameter.

    Raises:
        ValueError: for an unknown optimizer name.
    """
    ### BEGIN SOLUTION
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")
    state = state_values[optimizer] * FP32_BYTES
    if mixed_precision:
        return BF16_BYTES + BF16_BYTES + FP32_BYTES + state
    return FP32_BYTES + FP32_BYTES + state
    ### END SOLUTION


def max_trainable_parameters(gpu_bytes: float, num_gpus: int, bytes_per_param: float) -> float:
    """Return the largest number of parameters whose training state fits in the GPUs' memory.

    Total memory over bytes per parameter (activations ignored):
    8 GPUs × 80e9 bytes / 16 bytes per parameter (AdamW) = 40e9 parameters.

    Args:
        gpu_bytes: memory of one GPU, in bytes.
        num_gpus: how many GPUs share the state.
        bytes_per_param: e.g. ``bytes_per_parameter("adamw")``.

    Returns:
        A ``float`` (not rounded).
    """
    ### BEGIN SOLUTION
    return gpu_bytes * num_gpus / bytes_per_param
    ### END SOLUTION
