"""Public tests for `fp8`.  Expected values come from torch's own casts (`.to(float8)`),
`torch.finfo`, and the closed forms the docstrings state, computed here from the inputs the
probe returns."""

from __future__ import annotations

import pytest
import torch

from grader.testing.expect import assert_equal, assert_tensor, assert_type

FORMATS = ("float8_e4m3fn", "float8_e5m2")
#: the format fp8_quantize and fp8_error_bound use when none is given (their docstrings' default); a case's
#: "format" of None calls them without one
DEFAULT_FORMAT = "float8_e4m3fn"
#: what fp8_dequantize returns when no dtype is given (its docstring's default); a case's "dtype" of None
DEQUANTIZE_DEFAULT = "float32"


def want_scale(x: torch.Tensor, fmt: str) -> torch.Tensor:
    amax = x.to(torch.float32).abs().max() if x.numel() else torch.zeros(())
    return amax / torch.finfo(getattr(torch, fmt)).max if amax > 0 else torch.ones(())


def check_quantized(item, fmt: str | None, what: str) -> None:
    fmt = fmt or DEFAULT_FORMAT
    assert_type(item["q"], torch.Tensor, f"{what}: q")
    assert_equal(item["q"].dtype, getattr(torch, fmt), f"{what}: q's dtype", kind=torch.dtype)
    x = item["x"]
    assert_equal(tuple(item["q"].shape), tuple(x.shape), f"{what}: q's shape (that of x)")
    scale = want_scale(x, fmt)
    # exactly: one division in float32 is correctly rounded, whoever writes it; amax times a rounded
    # 1 / finfo.max is a different number for about half of all amax (one ulp off, and amax / scale then
    # misses finfo.max)
    assert_tensor(item["scale"], scale, f"{what}: scale = amax / finfo.max (0-d float32, one float32 division)")
    top = torch.finfo(getattr(torch, fmt)).max
    # torch's own cast of the clamped scaled values: the nearest fp8 value, ties to even
    want = (x.to(torch.float32) / scale).clamp(-top, top).to(getattr(torch, fmt))
    got = item["q"].to(torch.float32)
    differ = got != want.to(torch.float32)
    if differ.any():
        i = int(differ.nonzero()[0][0]) if differ.dim() else 0
        flat_x = x.reshape(-1)[i].item() if x.numel() else 0.0
        raise AssertionError(f"{what}: {int(differ.sum())} of {differ.numel()} quantised values differ from torch's "
                             f"cast of clamp(x / scale); e.g. x = {flat_x:.6g} gave {got.reshape(-1)[i].item():.6g}, "
                             f"expected {want.to(torch.float32).reshape(-1)[i].item():.6g}")
    assert_equal(item["x_unchanged"], True, f"{what}: x is left unchanged")


@pytest.mark.points(2)
def test_quantize_both_formats(student):
    """fp8_quantize gives amax/finfo.max as the scale and torch's nearest fp8 values, for e4m3 and e5m2"""
    cases = [{"shape": [64], "seed": s, "spread": sp, "format": f}
             for s, (sp, f) in enumerate([(1.0, f) for f in FORMATS] + [(4.0, f) for f in FORMATS])]
    got = student.probe("fp8.quantize", cases=cases)
    for case, item in zip(cases, got):
        check_quantized(item, case["format"], f"fp8_quantize(x of 64 values over {case['spread']:g} decades, "
                                              f"torch.{case['format']})")


@pytest.mark.points(1)
def test_quantize_edge_cases(student):
    """fp8_quantize handles all-zero, 0-d, 2-D, bfloat16 input, values that land on finfo.max, and no dtype (e4m3fn)"""
    cases = [{"x": torch.zeros(5), "format": "float8_e4m3fn"},
             {"shape": [24], "seed": 11, "spread": 2.0, "format": None},  # no dtype given: the default
             {"x": torch.tensor(-3.5), "format": "float8_e5m2"},
             {"shape": [3, 4], "seed": 9, "format": "float8_e4m3fn"},
             {"shape": [16], "seed": 10, "dtype": "bfloat16", "format": "float8_e4m3fn"},
             {"x": torch.tensor([1.0, -1.0, 0.3333333]), "format": "float8_e4m3fn"}]
    got = student.probe("fp8.quantize", cases=cases)
    for case, item in zip(cases, got):
        what = f"fp8_quantize({'given x' if 'x' in case else case})"
        check_quantized(item, case["format"], what + (f" with no dtype (the default: torch.{DEFAULT_FORMAT})"
                                                      if case["format"] is None else ""))
        assert not item["q"].to(torch.float32).isnan().any(), "a quantised value is NaN (clamp before the cast)"


@pytest.mark.points(1)
def test_quantize_rejects_other_dtypes(student):
    """fp8_quantize raises ValueError for a dtype that is not one of the two fp8 formats"""
    student.probe("fp8.quantize", cases=[{"shape": [4], "seed": 1, "format": "float8_e4m3fn"}])
    student.raises("fp8.quantize", "ValueError", cases=[{"shape": [4], "seed": 1, "format": "bfloat16"}])
    # torch's other 8-bit floats are not "one of the two formats" either (an itemsize == 1 test lets them through)
    for other in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
        student.raises("fp8.quantize", "ValueError", cases=[{"shape": [4], "seed": 1, "format": other}])


@pytest.mark.points(1)
def test_dequantize(student):
    """fp8_dequantize multiplies in float32 and returns the requested dtype (float32 by default)"""
    q = torch.tensor([1.0, -2.5, 448.0, 0.0]).to(torch.float8_e4m3fn)
    scale = torch.tensor(0.125)
    cases = [{"q": q, "scale": scale}, {"q": torch.linspace(-440, 440, 45).to(torch.float8_e4m3fn), "scale": torch.tensor(0.1), "dtype": "bfloat16"},
             {"q": torch.tensor([3.0, -57344.0]).to(torch.float8_e5m2), "scale": torch.tensor(2.0**-10)},
             # float64 out: the product is rounded to float32 first (multiply in float32, then cast)
             {"q": torch.linspace(-440, 440, 45).to(torch.float8_e4m3fn), "scale": torch.tensor(0.1), "dtype": "float64"},
             # no dtype given: the default, float32
             {"q": torch.tensor([2.0, -0.5, 6.0]).to(torch.float8_e5m2), "scale": torch.tensor(0.3), "dtype": None}]
    got = student.probe("fp8.dequantize", cases=cases)
    for case, g in zip(cases, got):
        dtype = getattr(torch, case.get("dtype", "float32") or DEQUANTIZE_DEFAULT)
        want = (case["q"].to(torch.float32) * case["scale"]).to(dtype)
        assert_tensor(g, want, f"fp8_dequantize(q of {case['q'].dtype}, scale {case['scale'].item():g}) in {dtype}"
                      + (" (no dtype given: the default)" if case.get("dtype", "float32") is None else ""))


@pytest.mark.points(2)
def test_error_bound_holds_and_is_tight(student):
    """fp8_error_bound is max(|x|·eps/2, scale·tiny·eps/2) and round trips stay within it"""
    cases = [{"shape": [200], "seed": 20 + i, "spread": sp, "format": f}
             for i, (sp, f) in enumerate([(2.0, "float8_e4m3fn"), (8.0, "float8_e4m3fn"), (8.0, "float8_e5m2")])]
    got = student.probe("fp8.error_bound", cases=cases)
    for case, item in zip(cases, got):
        fmt = getattr(torch, case["format"])
        info, x = torch.finfo(fmt), item["x"]
        scale = want_scale(x, case["format"])
        want = torch.maximum(x.abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))
        # float32 arithmetic on both sides: a few ulps
        assert_tensor(item["bound"], want, f"fp8_error_bound(x over {case['spread']:g} decades, torch.{case['format']})",
                      rtol=1e-6)
        top = info.max
        err = ((x / scale).clamp(-top, top).to(fmt).to(torch.float32) * scale - x).abs()
        assert (err <= want * (1 + 2**-20) + x.abs() * 2**-22).all(), "torch's own round trip exceeds the bound?"


@pytest.mark.points(1)
def test_fp8_matmul_on_cpu(student):
    """fp8_matmul equals the product of the dequantised inputs, rounded to bfloat16 (torch._scaled_mm on CPU)"""
    try:  # CPU support for _scaled_mm arrived in recent torch releases: without it the test is pending
        torch._scaled_mm(torch.zeros(16, 16).to(torch.float8_e4m3fn), torch.zeros(16, 16).to(torch.float8_e4m3fn).t(),
                         scale_a=torch.tensor(1.0), scale_b=torch.tensor(1.0), out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError):
        pytest.skip("pending: this torch has no torch._scaled_mm on the CPU")
    check_fp8_matmul(student, "cpu")


def check_fp8_matmul(student, device: str) -> None:
    got = student.probe("fp8.matmul", m=32, k=64, n=48, seed=5, device=device)
    a, b = got["a"], got["b"]
    deq = []
    for t in (a, b):
        s = want_scale(t, "float8_e4m3fn")
        deq.append((t / s).clamp(-448, 448).to(torch.float8_e4m3fn).to(torch.float32) * s)
    want = deq[0] @ deq[1]
    assert_type(got["out"], torch.Tensor, "fp8_matmul result")
    assert_equal(got["out"].dtype, torch.bfloat16, "fp8_matmul's output dtype", kind=torch.dtype)
    # bfloat16 output: 2^-8 relative rounding; fp32 accumulation in another order: far less.
    assert_tensor(got["out"].to(torch.float32), want, f"fp8_matmul (32x64 @ 64x48) on {device}", atol=1e-3,
                  rtol=2**-7)
    exact = a @ b
    rel = ((got["out"].to(torch.float32) - exact).norm() / exact.norm()).item()
    assert rel < 0.08, f"fp8_matmul is {rel:.3f} (relative Frobenius error) from the float32 product: over e4m3's ~0.05"


@pytest.mark.gpu
@pytest.mark.points(1)
def test_fp8_matmul_on_cuda(student):
    """on a GPU with fp8 tensor cores (compute capability 8.9+), fp8_matmul matches the dequantised product"""
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("pending: this GPU has no fp8 tensor cores (compute capability below 8.9)")
    check_fp8_matmul(student, "cuda")
