"""The graded tests' shared checks turn a wrong reply into a plain AssertionError the student can
read, never a crash of the test itself (a raw RuntimeError from comparing tensors of two shapes)."""

from __future__ import annotations

import pytest
import torch

from tests.public.test_fp8 import check_quantized

pytestmark = pytest.mark.kit


def _quantized(x: torch.Tensor, fmt: str = "float8_e4m3fn") -> dict:
    scale = x.abs().max() / torch.finfo(getattr(torch, fmt)).max
    return {"q": (x / scale).to(getattr(torch, fmt)), "x": x, "scale": scale, "x_unchanged": True}


def test_check_quantized_says_a_wrong_shape_of_q() -> None:
    """Issue 33: a flattened q made the comparison itself raise RuntimeError."""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    item = _quantized(x)
    check_quantized(item, "float8_e4m3fn", "fp8_quantize(x)")  # the right reply passes
    item["q"] = item["q"].reshape(-1)
    with pytest.raises(AssertionError, match=r"fp8_quantize\(x\): q's shape \(that of x\): expected \(3, 4\)"):
        check_quantized(item, "float8_e4m3fn", "fp8_quantize(x)")
