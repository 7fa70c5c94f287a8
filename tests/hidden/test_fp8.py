"""Hidden tests for `fp8`: other shapes, seeds, spreads and input dtypes."""

from __future__ import annotations

import pytest
import torch

from grader.testing.expect import assert_tensor
from tests.public.test_fp8 import DEFAULT_FORMAT, check_quantized, want_scale


def _midpoints_times(scale: float) -> torch.Tensor:
    """448·scale (the amax) and the midpoints between consecutive positive e4m3 values, times `scale`."""
    values = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)
    values = values[torch.isfinite(values) & (values > 0)].unique().sort().values
    s = torch.tensor(scale)
    return torch.cat([torch.tensor([448.0]) * s, (values[1:] + values[:-1]) / 2 * s])


@pytest.mark.points(1)
def test_quantize_other_inputs(student):
    """fp8_quantize on float64 and float16 inputs, wide spreads, a single element, an empty tensor, exact ties"""
    cases = [{"shape": [7, 9], "seed": 31, "spread": 12.0, "dtype": "float64", "format": "float8_e5m2"},
             {"shape": [50], "seed": 32, "spread": 3.0, "dtype": "float16", "format": "float8_e4m3fn"},
             {"x": torch.tensor([1e-30]), "format": "float8_e4m3fn"},
             {"x": torch.empty(0), "format": "float8_e5m2"},
             {"shape": [2, 3, 4], "seed": 33, "spread": 6.0, "format": "float8_e4m3fn"},
             # exact ties: with amax 3, x / scale lands on the midpoint of two e4m3 values (2.25 / (3/448) =
             # 336, between 320 and 352; 0.017578125 → 2.625): round to even.  x · (448/3) (multiplying by
             # the rounded reciprocal, not dividing by the scale) lands just above and rounds up.
             {"x": torch.tensor([3.0, 2.25, -1.125, 0.5625, 0.017578125, -0.0703125]), "format": "float8_e4m3fn"},
             # every midpoint between two positive e4m3 values, times a scale whose reciprocal is not exact:
             # x / scale lands on each tie (or next to it), x * (1 / scale) on the other side for about 1 in 8
             {"x": _midpoints_times(2.8031089305877686), "format": "float8_e4m3fn"}]
    got = student.probe("fp8.quantize", cases=cases)
    for case, item in zip(cases, got):
        check_quantized(item, case["format"], f"fp8_quantize({'given x' if 'x' in case else case})")


@pytest.mark.points(1)
def test_error_bound_other_inputs(student):
    """fp8_error_bound on 2-D inputs, very wide spreads (subnormal range), all-zero and empty x, for both formats and the default (e4m3fn), float32 for 16-bit input"""
    cases = [{"shape": [300], "seed": 40, "spread": 14.0, "format": "float8_e5m2"},
             {"shape": [300], "seed": 41, "spread": 0.5, "format": "float8_e4m3fn"},
             {"shape": [6, 20], "seed": 42, "spread": 4.0, "dtype": "bfloat16", "format": "float8_e4m3fn"},
             {"shape": [64], "seed": 43, "spread": 3.0, "dtype": "float16", "format": "float8_e5m2"},
             # all-zero and empty x: the scale is fp8_quantize's, 1.0, so zeros get the floor tiny·eps/2
             {"x": torch.zeros(4), "format": "float8_e4m3fn"}, {"x": torch.empty(0, 3), "format": "float8_e5m2"},
             # no dtype given: the default format, e4m3fn
             {"shape": [40], "seed": 44, "spread": 6.0, "format": None}]
    got = student.probe("fp8.error_bound", cases=cases)
    for case, item in zip(cases, got):
        fmt = getattr(torch, case["format"] or DEFAULT_FORMAT)
        info, x = torch.finfo(fmt), item["x"].to(torch.float32)
        # the bound is float32 whatever x's dtype (the docstring's "in float32"): assert_tensor checks the dtype
        want = torch.maximum(x.abs() * (info.eps / 2),
                             want_scale(x, case["format"] or DEFAULT_FORMAT) * (info.smallest_normal * info.eps / 2))
        assert_tensor(item["bound"], want, f"fp8_error_bound({'given x' if 'x' in case else case})", rtol=1e-6)
