"""fp8: per-tensor scaled 8-bit floats.

An 8-bit float has so few bits that no single format covers a tensor's values as they come:
float8_e4m3fn (4 exponent bits, 3 mantissa bits) reaches only ±448, float8_e5m2 (5, 2)
±57344 but with a quarter of e4m3's precision.  Training in fp8 therefore stores each tensor
as 8-bit values *and a scale*: divide by ``scale = amax(|x|) / finfo(dtype).max`` so that the
largest magnitude lands exactly on the format's largest finite value, cast, and multiply by
the scale again to read the values back.  e4m3 (more precision, less range) carries weights
and activations, whose range the scale can fit; e5m2 (more range, less precision) carries
gradients, which spread over many orders of magnitude within one tensor.
"""

from __future__ import annotations

import torch

FP8_FORMATS = (torch.float8_e4m3fn, torch.float8_e5m2)


def fp8_quantize(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise `x` to `dtype` with one scale for the whole tensor; return ``(q, scale)``.

    * ``scale = amax / finfo(dtype).max`` where ``amax = x.abs().max()``, computed in float32
      (a 0-d float32 tensor on x's device).  If ``amax`` is 0 (an all-zero tensor) use
      ``scale = 1.0``.
    * ``q = (x / scale)``, clamped to ``[-finfo(dtype).max, finfo(dtype).max]``, then cast
      with ``.to(dtype)`` (round to nearest even).  The division happens in float32 too:
      ``x.to(torch.float32) / scale`` (for a bfloat16 or float16 `x`, dividing in x's own dtype
      rounds once more before the fp8 cast and moves about 4% of the values); divide, do not
      multiply by ``1 / scale`` (the reciprocal is rounded, and values that sit on a rounding
      boundary, ties included, then land on the other side).  With this scale nothing exceeds the range,
      but keep the clamp: real fp8 training reuses a scale computed from *earlier* steps'
      amax (delayed scaling), and float8_e4m3fn has no infinity: a value beyond the range
      casts to NaN.
    * `x` may be any floating dtype (float32, bfloat16, float16, float64) and shape, including
      0-d and empty tensors (an empty tensor has no amax: use ``scale = 1.0``).  Do not modify `x`.

    Args:
        x: the tensor to quantise (finite values).
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.

    Returns:
        ``q`` (same shape as x, dtype `dtype`) and ``scale`` (0-d float32 tensor).

    Raises:
        ValueError: if `dtype` is not one of the two formats.
    """
    ### BEGIN SOLUTION
    if dtype not in FP8_FORMATS:
        raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")
    top = torch.finfo(dtype).max
    x32 = x.to(torch.float32)
    amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)
    scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))
    q = (x32 / scale).clamp(-top, top).to(dtype)
    return q, scale
    ### END SOLUTION


def fp8_dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Read quantised values back: ``q.to(float32) * scale``, returned in `dtype`.

    Multiply in float32 (an fp8 tensor has almost no arithmetic of its own), then cast.

    Returns:
        A tensor of q's shape and dtype `dtype`.
    """
    ### BEGIN SOLUTION
    return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)
    ### END SOLUTION


def fp8_error_bound(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn) -> torch.Tensor:
    """The largest error ``|dequantize(quantize(x)) - x|`` rounding to nearest may make, per element.

    With ``scale`` as in `fp8_quantize`, ``eps = finfo(dtype).eps`` (the gap between 1 and the
    next value: 2^-3 for e4m3, 2^-2 for e5m2) and ``tiny = finfo(dtype).smallest_normal``:

    * a value whose scaled magnitude ``|x| / scale`` is at least ``tiny`` is a normal fp8
      number after rounding, off by at most half a gap: ``|x| · eps / 2``;
    * below ``tiny`` the format is subnormal with a fixed gap ``tiny · eps``: the error is at
      most half of it, ``scale · tiny · eps / 2``.

    Return ``max(|x| · eps / 2, scale · tiny · eps / 2)`` elementwise, in float32 (the second
    term is also the right bound for the normal values just above ``tiny``, so the maximum of
    the two covers both cases).

    Returns:
        A float32 tensor of x's shape.
    """
    ### BEGIN SOLUTION
    _, scale = fp8_quantize(x, dtype)
    info = torch.finfo(dtype)
    return torch.maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))
    ### END SOLUTION


def fp8_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` in fp8 on the GPU: quantise both to float8_e4m3fn, multiply with
    ``torch._scaled_mm``, return bfloat16.

    ``torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)`` computes
    ``(qa · sa) @ (qb · sb)`` on the tensor cores with fp32 accumulation.  Its requirements
    (Hopper or newer GPUs, or Ada): 2-D inputs on CUDA, every dimension a multiple of 16, `qa`
    row-major (contiguous) and `qb` *column-major* (``qb = qb.t().contiguous().t()``), and
    the scales as 0-d (or 1-element) float32 tensors on the same device.

    Args:
        a: (m, k) on CUDA, any floating dtype.
        b: (k, n) on CUDA.

    Returns:
        A bfloat16 (m, n) tensor.
    """
    ### BEGIN SOLUTION
    qa, sa = fp8_quantize(a.contiguous())
    qb, sb = fp8_quantize(b)
    qb = qb.t().contiguous().t()
    return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    ### END SOLUTION
