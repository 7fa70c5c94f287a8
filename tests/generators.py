"""Seeded generators of test cases shared by the public and hidden suites (trusted side).

Cases are plain data (see tests/probes/_tensors.py for the tensor descriptions), so the same
case can be sent to a probe and rebuilt here to ask torch for the expected answer.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import torch

from grader.testing.expect import assert_tensor, assert_type
from grader.testing.reference import reference
from tests.probes._tensors import build


def _factorizations(n: int, rng: random.Random, max_dims: int = 4) -> list[int]:
    """A random shape with exactly n elements (sizes of 1 sprinkled in)."""
    dims: list[int] = []
    remaining = n
    while remaining > 1 and len(dims) < max_dims - 1:
        divisors = [d for d in range(2, remaining + 1) if remaining % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        remaining //= d
    if remaining > 1 or not dims:
        dims.append(remaining)
    if rng.random() < 0.3:
        dims.insert(rng.randrange(len(dims) + 1), 1)
    rng.shuffle(dims) if rng.random() < 0.3 else None
    return dims


@reference  # seeded: the same cases for every submission, so built once per grading worker
def view_cases(seed: int, count: int) -> list[tuple[dict[str, Any], list[int]]]:
    """(tensor description, requested shape) pairs: permuted and sliced tensors, many shapes."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        ndim = rng.randint(1, 4)
        shape = [rng.choice([1, 2, 2, 3, 4, 6]) for _ in range(ndim)]
        if rng.random() < 0.03:
            shape[rng.randrange(ndim)] = 0
        perm = list(range(ndim))
        if rng.random() < 0.6:
            rng.shuffle(perm)
        slices = None
        if rng.random() < 0.45:
            slices = []
            for d in perm:
                size = shape[d]
                r = rng.random()
                if size >= 2 and r < 0.25:  # cut down to one element: a size-1 dim with a large stride
                    k = rng.randrange(size)
                    slices.append([k, k + 1, 1])
                elif size >= 2 and r < 0.65:
                    slices.append([rng.randint(0, 1), size, rng.choice([1, 2])])
                else:
                    slices.append([0, max(size, 1), 1])
        spec = {"shape": shape, "dtype": "float32", "permute": perm, "slices": slices}
        x = build(spec)
        n = x.numel()
        if n == 0:
            target = [0, rng.randint(1, 3)] if rng.random() < 0.5 else [rng.randint(1, 3), 0]
        elif rng.random() < 0.1:
            target = _factorizations(n + 1, rng)  # wrong element count
        else:
            target = _factorizations(n, rng)
            if rng.random() < 0.15:
                target[rng.randrange(len(target))] = -1
        if rng.random() < 0.04 and n == 1:
            target = []
        cases.append((spec, target))
    return cases


def torch_can_view(spec: dict[str, Any], shape: list[int]) -> bool:
    """Ask torch itself whether the view succeeds."""
    x = build(spec)
    try:
        x.view(shape)
        return True
    except RuntimeError:
        return False


@reference
def torch_can_view_all(cases: list) -> list[bool]:
    """`torch_can_view` for every (spec, shape) case: a pure function of the cases (plain data),
    so computed once per trusted worker for each list (`grader.testing.reference`)."""
    return [torch_can_view(spec, shape) for spec, shape in cases]


def sliding_reference(spec: dict[str, Any], size: int, step: int) -> torch.Tensor:
    return build(spec).unfold(0, size, step)


def describe_spec(spec: dict[str, Any]) -> str:
    """Plain words for a tensor description: how it was made, then its shape, strides and offset."""
    text = f"a tensor of shape {tuple(spec['shape'])}"
    if spec.get("as_strided") is not None:
        size, stride, offset = spec["as_strided"]
        text = f"as_strided(size={tuple(size)}, stride={tuple(stride)}, offset={offset}) of a {spec['shape'][0]}-element storage"
    if spec.get("permute") is not None and spec["permute"] != sorted(spec["permute"]):
        text += f" permuted to {tuple(spec['permute'])}"
    if spec.get("slices"):
        text += " sliced [" + ", ".join(f"{a}:{b}:{c}" for a, b, c in spec["slices"]) + "]"
    if spec.get("then"):
        text += " then " + ", ".join(spec["then"])
    x = build(spec)
    return text + f" (shape {tuple(x.shape)}, stride {x.stride()}, storage offset {x.storage_offset()})"


def describe_view_case(spec: dict[str, Any], shape: list[int]) -> str:
    """A can_view case in words: the tensor (shape, strides, storage offset) and the target shape."""
    return f"{describe_spec(spec)} viewed as {tuple(shape)}"


def strided_spec(size: list[int], stride: list[int], offset: int) -> dict[str, Any]:
    """The description of ``as_strided(size, stride, offset)`` of an arange storage just big enough."""
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset + 1
    return {"shape": [extent], "dtype": "float32", "as_strided": [list(size), list(stride), offset]}


def check_view_of(got: Any, spec: dict[str, Any], want_of: Callable[[torch.Tensor], torch.Tensor], what: str) -> None:
    """`got` is {"input": x, "result": y} from one probe reply.  y must equal want_of(x) (torch's own op,
    applied here to the very input the student's code saw) in values, and be a zero-copy view of it:
    the same storage, the same storage offset and strides as torch's own result."""
    assert_type(got, dict, what)
    x, y = got.get("input"), got.get("result")
    assert_type(x, torch.Tensor, f"{what}: the input")
    assert_tensor(x, build(spec), f"{what}: the input after the call (it must not be modified)")
    want = want_of(x)
    assert_tensor(y, want, what)
    if y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        raise AssertionError(f"{what}: expected a view sharing x's storage, got a tensor with its own storage (a copy)")
    if y.storage_offset() != want.storage_offset():
        raise AssertionError(f"{what}: expected storage offset {want.storage_offset()} (as torch's own op gives), "
                             f"got {y.storage_offset()}")
    if tuple(y.stride()) != tuple(want.stride()):
        raise AssertionError(f"{what}: expected strides {tuple(want.stride())} (as torch's own op gives), got {tuple(y.stride())}")


def prod(xs: list[int]) -> int:
    return math.prod(xs)
