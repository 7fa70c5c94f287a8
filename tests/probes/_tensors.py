"""Build tensors from plain-data descriptions, identically on both sides of the boundary.

A description is a dict: ``{"shape": [...], "dtype": "float32", "permute": [...] | None,
"slices": [[start, stop, step], ...] | None}``.  The base tensor is ``arange`` (so every
element is distinct), reshaped, then permuted, then sliced dimension by dimension.
Optional keys: ``"as_strided": [size, stride, offset]`` (applied to the base before the
permutation: any view of the storage) and ``"then": [op, ...]`` (`derive` ops applied last,
e.g. ``"detach"``, ``"from_numpy"``, ``"expand"``, ``"view_dtype"``).
"""

from __future__ import annotations

import math
from typing import Any

import torch


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return dtype


def build(spec: dict[str, Any]) -> torch.Tensor:
    shape = list(spec["shape"])
    dtype = dtype_of(spec.get("dtype", "float32"))
    base = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
    x = base.to(dtype) if dtype.is_floating_point or dtype == torch.bool else base.to(torch.int64).to(dtype)
    if spec.get("as_strided") is not None:
        size, stride, offset = spec["as_strided"]
        x = x.as_strided(size, stride, offset)
    if spec.get("permute") is not None:
        x = x.permute(*spec["permute"])
    if spec.get("slices") is not None:
        x = x[tuple(slice(*s) for s in spec["slices"])]
    for op in spec.get("then") or ():
        x = derive(x, op)
    return x


def randn(shape: list[int], seed: int, dtype: str = "float32") -> torch.Tensor:
    """A seeded standard-normal tensor (the same on both sides of the boundary)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype_of(dtype))


def derive(x: torch.Tensor, op: str) -> torch.Tensor:
    """A tensor related to `x` in a named way, for same-storage questions."""
    if op == "self":
        return x
    if op == "slice":
        return x[1:]
    if op == "transpose":
        return x.transpose(0, -1)
    if op == "view":
        return x.view(-1) if x.is_contiguous() else x.flatten()
    if op == "clone":
        return x.clone()
    if op == "contiguous":
        return x.contiguous()
    if op == "unrelated":
        return torch.zeros_like(x)
    if op == "detach":  # shares the storage, but no _base link
        return x.detach()
    if op == "from_numpy":  # a new tensor over the same memory, through numpy
        return torch.from_numpy(x.numpy())
    if op == "expand":  # a new leading dimension of stride 0
        return x.unsqueeze(0).expand(3, *x.shape)
    if op == "view_dtype":  # the same bytes read as another dtype (uint8 where torch allows it, else int32)
        return x.view(torch.uint8) if x.dim() and x.stride(-1) == 1 else x.view(torch.int32)
    if op == "empty_tail":  # a zero-size slice at the end of the (flattened-first-dim) tensor
        return x[x.shape[0]:] if x.dim() else x[None][1:]
    raise ValueError(f"unknown derivation {op!r}")
