"""Public tests for `memory`: expected values come from torch itself or from closed-form facts."""

from __future__ import annotations

import pytest
import torch

from grader.expect import assert_cases, assert_close, assert_equal
from tests.probes._tensors import build, dtype_of

SPECS = [
    {"shape": [4, 8], "dtype": "float32"},
    {"shape": [4, 8], "dtype": "bfloat16"},
    {"shape": [3, 5, 7], "dtype": "float64"},
    {"shape": [10], "dtype": "int8"},
    {"shape": [2, 3], "dtype": "int64"},
    {"shape": [], "dtype": "float16"},
    {"shape": [0, 5], "dtype": "float32"},
]
VIEWS = [
    {"shape": [100, 10], "dtype": "float32", "slices": [[0, 2, 1]]},
    {"shape": [6, 4], "dtype": "float16", "permute": [1, 0]},
    {"shape": [50], "dtype": "float64", "slices": [[10, 50, 7]]},
    {"shape": [8, 8], "dtype": "bfloat16", "slices": [[1, 3, 1], [2, 5, 1]]},
]


def _spec(s):
    extra = [k for k in ("permute", "slices") if s.get(k) is not None]
    return f"a {s['dtype']} tensor of shape {tuple(s['shape'])}" + (f" ({', '.join(extra)})" if extra else "")


@pytest.mark.points(1)
def test_get_memory_usage(student):
    """get_memory_usage counts numel × element size for several dtypes and shapes"""
    specs = SPECS + VIEWS
    want = [build(s).numel() * build(s).element_size() for s in specs]
    got = student.probe("memory.get_memory_usage", specs=specs)
    assert_cases(got, want, "get_memory_usage", lambda i: _spec(specs[i]))


@pytest.mark.points(2)
def test_storage_bytes_of_views(student):
    """storage_bytes counts the whole storage a view pins, not the view's elements"""
    specs = VIEWS + SPECS[:2]
    want = [build(s).untyped_storage().nbytes() for s in specs]
    got = student.probe("memory.storage_bytes", specs=specs)
    assert_cases(got, want, "storage_bytes", lambda i: _spec(specs[i]))


FORMATS = ["float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


def _format_from_torch(name: str) -> tuple[int, int, int]:
    info = torch.finfo(dtype_of(name))
    mantissa = round(-torch.log2(torch.tensor(info.eps, dtype=torch.float64)).item())
    return (1, info.bits - 1 - mantissa, mantissa)


@pytest.mark.points(2)
def test_float_format(student):
    """float_format gives the (sign, exponent, mantissa) bits that torch.finfo implies, as a tuple"""
    for dtype in FORMATS:
        got = student.probe("memory.float_format", dtype=dtype)
        assert_equal(got, _format_from_torch(dtype), f"float_format({dtype})", kind=tuple)


@pytest.mark.points(1)
def test_float_format_rejects_non_float(student):
    """float_format raises ValueError for an integer dtype"""
    student.raises("memory.float_format", "ValueError", dtype="int32")


@pytest.mark.points(1)
def test_rounds_to_zero_lecture_example(student):
    """1e-8 underflows to 0 in float16 but not in bfloat16 or float32; subnormals are not zero"""
    cases = [(1e-8, "float16"), (1e-8, "bfloat16"), (1e-8, "float32"), (1e-6, "float16"), (-1e-8, "float16"),
             (1e-46, "float32"), (1e-40, "bfloat16")]
    want = [torch.tensor(v, dtype=torch.float64).to(dtype_of(d)).item() == 0.0 for v, d in cases]
    got = student.probe("memory.rounds_to_zero", cases=cases)
    assert_cases(got, want, "rounds_to_zero", lambda i: f"{cases[i][0]:g} in {cases[i][1]}")


# Closed-form facts of the lecture: params + grads + optimizer state (+ fp32 master copy).
BYTES = {"sgd": 8, "adagrad": 12, "rmsprop": 12, "adam": 16, "adamw": 16}


@pytest.mark.points(2)
def test_bytes_per_parameter(student):
    """bytes_per_parameter matches the memory table (fp32: 4 B params + 4 B grads + 4 B per state value)"""
    for optimizer, want in BYTES.items():
        got = student.probe("memory.bytes_per_parameter", optimizer=optimizer)
        assert_equal(got, want, f"bytes_per_parameter({optimizer!r})")


@pytest.mark.points(1)
def test_bytes_per_parameter_mixed_precision_adamw(student):
    """mixed-precision AdamW keeps bf16 params/grads, an fp32 master copy and fp32 state: 2+2+4+8"""
    got = student.probe("memory.bytes_per_parameter", optimizer="adamw", mixed_precision=True)
    assert_equal(got, 2 + 2 + 4 + 8, "bytes_per_parameter('adamw', mixed_precision=True)")
    student.raises("memory.bytes_per_parameter", "ValueError", optimizer="lion")


@pytest.mark.points(1)
def test_max_trainable_parameters(student):
    """8 GPUs × 80 GB / 16 bytes per parameter = 40e9 parameters"""
    got = student.probe("memory.max_trainable_parameters", gpu_bytes=80e9, num_gpus=8, bytes_per_param=16)
    assert_close(got, 40e9, "max_trainable_parameters(80e9, 8, 16)")
