"""Probes for the `fp8` module: inputs built from seeds and shapes, results returned as data."""

from __future__ import annotations

import torch

from tests.probes._tensors import dtype_of


def make(shape, seed, spread=1.0, dtype="float32"):
    """Values spread over `spread` orders of magnitude with random signs (a few exact zeros)."""
    g = torch.Generator().manual_seed(seed)
    mags = 10 ** (torch.rand(shape, generator=g, dtype=torch.float64) * spread - spread / 2)
    signs = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    x = mags * signs
    if x.numel() > 4:
        x.view(-1)[::7] = 0.0
    return x.to(dtype_of(dtype))


def quantize(impl, cases):
    """For each case: the input, q (as returned) and scale; the input travels back so the test
    judges exactly what the code saw."""
    out = []
    for case in cases:
        x = case["x"] if "x" in case else make(case["shape"], case["seed"], case.get("spread", 1.0),
                                                  case.get("dtype", "float32"))
        before = x.clone()
        fmt = case["format"]  # None: called without a dtype (the default)
        q, scale = impl.fp8.fp8_quantize(x) if fmt is None else impl.fp8.fp8_quantize(x, dtype_of(fmt))
        out.append({"x": x, "q": q, "scale": scale, "x_unchanged": bool(torch.equal(before, x))})
    return out


def dequantize(impl, cases):
    """A case's "dtype" of None calls without one (the default)."""
    return [impl.fp8.fp8_dequantize(c["q"], c["scale"]) if c.get("dtype", "float32") is None
            else impl.fp8.fp8_dequantize(c["q"], c["scale"], dtype_of(c.get("dtype", "float32"))) for c in cases]


def error_bound(impl, cases):
    out = []
    for case in cases:
        x = case["x"] if "x" in case else make(case["shape"], case["seed"], case.get("spread", 1.0),
                                                  case.get("dtype", "float32"))
        fmt = case["format"]  # None: called without a dtype (the default)
        out.append({"x": x, "bound": impl.fp8.fp8_error_bound(x) if fmt is None
                    else impl.fp8.fp8_error_bound(x, dtype_of(fmt))})
    return out


def matmul(impl, m, k, n, seed, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = impl.fp8.fp8_matmul(a.to(device), b.to(device))
    return {"a": a, "b": b, "out": out.detach().to("cpu")}
