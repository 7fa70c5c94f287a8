"""Public tests for `memory`: expected values come from torch itself or from closed-form facts."""

from __future__ import annotations

import math

import pytest
import torch

from grader.testing.expect import assert_cases, assert_close, assert_equal, assert_type
from tests.probes._tensors import build, dtype_of

SPECS = [
    {"shape": [4, 8], "dtype": "float32"},
    {"shape": [4, 8], "dtype": "bfloat16"},
    {"shape": [3, 5, 7], "dtype": "float64"},
    {"shape": [10], "dtype": "int8"},
    {"shape": [2, 3], "dtype": "int64"},
    {"shape": [], "dtype": "float16"},
    {"shape": [0, 5], "dtype": "float32"},
    {"shape": [1, 8], "dtype": "float32"},  # a batch of 1
    {"shape": [6], "dtype": "float8_e5m2"},
]
VIEWS = [
    {"shape": [100, 10], "dtype": "float32", "slices": [[0, 2, 1]]},
    {"shape": [6, 4], "dtype": "float16", "permute": [1, 0]},
    {"shape": [50], "dtype": "float64", "slices": [[10, 50, 7]]},
    {"shape": [8, 8], "dtype": "bfloat16", "slices": [[1, 3, 1], [2, 5, 1]]},
    {"shape": [40, 3], "dtype": "float32", "slices": [[5, 7, 1]], "then": ["detach"]},  # no view op, no _base
    {"shape": [4, 5], "dtype": "float32", "then": ["expand"]},  # stride 0: 3 rows, one storage
    {"shape": [7], "dtype": "int32", "as_strided": [[], [], 4]},  # a 0-d element of a 7-element storage
    {"shape": [30], "dtype": "float32", "slices": [[0, 1, 1]]},  # a batch of 1 sliced off
]


def _spec(s):
    """The tensor in words: how it was made, then what it is (shape, strides, offset, storage)."""
    how = [f"{k} {s[k]}" for k in ("as_strided", "permute", "slices", "then") if s.get(k)]
    x = build(s)
    return (f"a {s['dtype']} tensor made from shape {tuple(s['shape'])}" + (f" ({'; '.join(how)})" if how else "")
            + f": shape {tuple(x.shape)}, stride {x.stride()}, storage offset {x.storage_offset()}, "
            f"in a storage of {x.untyped_storage().nbytes()} bytes")


@pytest.mark.points(1)
def test_get_memory_usage(student):
    """get_memory_usage counts numel × element size for several dtypes and shapes"""
    specs = SPECS + VIEWS
    want = [build(s).nbytes for s in specs]
    got = student.probe("memory.get_memory_usage", specs=specs)
    assert_cases(got, want, "get_memory_usage", lambda i: _spec(specs[i]))


@pytest.mark.points(2)
def test_storage_bytes_of_views(student):
    """storage_bytes counts the whole storage a view pins, not the view's elements"""
    specs = VIEWS + SPECS[:2]
    want = [build(s).untyped_storage().nbytes() for s in specs]
    got = student.probe("memory.storage_bytes", specs=specs)
    assert_cases(got, want, "storage_bytes", lambda i: _spec(specs[i]))


# Facts of the formats (IEEE 754 and the OCP float8 spec): (sign, exponent, mantissa) bits.
# tests/kit/test_rule_lists_views_memory.py checks each row against torch.finfo (bits and eps).
FORMATS = {"float32": (1, 8, 23), "float16": (1, 5, 10), "bfloat16": (1, 8, 7), "float64": (1, 11, 52),
           "float8_e4m3fn": (1, 4, 3), "float8_e5m2": (1, 5, 2)}


def other_float_dtypes() -> list[str]:
    """Every floating-point dtype this torch has beyond the six supported ones (fnuz and e8m0
    float8 types, float4, ...): float_format must reject each with ValueError."""
    names = {str(getattr(torch, n)).removeprefix("torch.") for n in dir(torch)
             if isinstance(getattr(torch, n, None), torch.dtype) and getattr(torch, n).is_floating_point}
    return sorted(names - set(FORMATS))


@pytest.mark.points(2)
def test_float_format(student):
    """float_format gives the (sign, exponent, mantissa) bits of each supported format, as a tuple"""
    for dtype, want in FORMATS.items():
        got = student.probe("memory.float_format", dtype=dtype)
        assert_equal(got, want, f"float_format({dtype})", kind=tuple)
        # the docstring's "a tuple of three int": 23.0 == 23, so the element types are checked apart
        assert_cases(list(got), list(want), f"float_format({dtype})", lambda i: ("sign", "exponent", "mantissa")[i]
                     + " bits (an int)", kind=int)


@pytest.mark.points(1)
def test_float_format_rejects_non_float(student):
    """float_format raises ValueError for an integer dtype and for every other low-precision float type"""
    assert_equal(student.probe("memory.float_format", dtype="float16"), (1, 5, 10), "float_format(float16)", kind=tuple)
    for dtype in ["int32"] + other_float_dtypes():
        student.raises("memory.float_format", "ValueError", dtype=dtype)


def smallest_subnormal(dtype: str) -> float:
    """2**-M times the smallest normal number (torch.finfo's tiny): the smallest positive value."""
    return math.ldexp(torch.finfo(dtype_of(dtype)).tiny, -FORMATS[dtype][2])


def rounds_to_zero_want(value: float, dtype: str) -> bool:
    """Closed form: nonzero and at most half the smallest subnormal (the tie at exactly half goes
    to the even neighbour, 0)."""
    return value != 0.0 and abs(value) <= smallest_subnormal(dtype) / 2


@pytest.mark.points(1)
def test_rounds_to_zero_lecture_example(student):
    """1e-8 underflows to 0 in float16 but not in bfloat16 or float32; subnormals are not zero; half of the smallest ties to 0"""
    s = smallest_subnormal("float16")  # 2**-24, about 6e-8
    cases = [(1e-8, "float16"), (1e-8, "bfloat16"), (1e-8, "float32"), (1e-6, "float16"), (-1e-8, "float16"),
             (1e-46, "float32"), (1e-40, "bfloat16"), (0.0, "float16"), (1e-320, "float64"),
             (s, "float16"), (0.75 * s, "float16"), (s / 2, "float16"), (-s / 2, "float16"),
             (s / 2 * (1 + 2 ** -10), "float16")]
    want = [rounds_to_zero_want(v, d) for v, d in cases]
    got = student.probe("memory.rounds_to_zero", cases=cases)
    assert_cases(got, want, "rounds_to_zero", lambda i: f"{cases[i][0]!r} in {cases[i][1]}")


# Closed-form facts of the lecture: params + grads + optimizer state (+ fp32 master copy).
BYTES = {"sgd": 8, "adagrad": 12, "rmsprop": 12, "adam": 16, "adamw": 16}


@pytest.mark.points(2)
def test_bytes_per_parameter(student):
    """bytes_per_parameter matches the memory table (fp32: 4 B params + 4 B grads + 4 B per state value)"""
    for optimizer, want in BYTES.items():
        got = student.probe("memory.bytes_per_parameter", optimizer=optimizer)  # the default: fp32
        assert_equal(got, want, f"bytes_per_parameter({optimizer!r})")
    got = student.probe("memory.bytes_per_parameter", optimizer="adam", mixed_precision=False)
    assert_equal(got, 16, "bytes_per_parameter('adam', mixed_precision=False)")


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
    assert_type(got, float, "max_trainable_parameters(80e9, 8, 16)")  # a float even when the division is exact
    assert_close(got, 40e9, "max_trainable_parameters(80e9, 8, 16)")  # rel 1e-9: any order of * and / is exact enough
    got = student.probe("memory.max_trainable_parameters", gpu_bytes=100, num_gpus=1, bytes_per_param=16)
    assert_type(got, float, "max_trainable_parameters(100, 1, 16)")
    assert_close(got, 6.25, "max_trainable_parameters(100, 1, 16) (not rounded)")  # rel 1e-9: exact in binary


# -- on the GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.points(1)
def test_accounting_matches_the_cuda_allocator(student):
    """on the GPU, a new tensor costs its bytes, a view nothing, a copy its own bytes (memory_allocated)"""
    cases = [([4, 8], "float32"), ([1000, 1000], "float32"), ([3, 5, 7], "bfloat16"), ([2, 4096], "float8_e4m3fn")]
    got = student.probe("memory.cuda_allocations", cases=cases)
    # The caching allocator hands out blocks in multiples of 512 bytes: a tensor of n bytes makes
    # memory_allocated() grow by n rounded up to the next multiple of 512.
    def block(n: int) -> int:
        return -(-n // 512) * 512

    for (shape, dtype), g in zip(cases, got):
        what = f"a {dtype} tensor of shape {tuple(shape)} on the GPU"
        new, view, copy = g["deltas"]
        usage, storage = g["usage"], g["storage"]
        assert usage[0] == storage[0] and block(usage[0]) == new, (
            f"{what}: memory_allocated() grew by {new} bytes; your get_memory_usage says {usage[0]}, "
            f"storage_bytes {storage[0]} (the allocator rounds up to 512-byte blocks)")
        assert view == 0 and storage[1] == storage[0], (
            f"{what}: the view x[1:] allocated {view} bytes (nothing, as it shares x's storage); your storage_bytes "
            f"says {storage[1]} for it, x's storage is {storage[0]}")
        assert block(usage[1]) == copy and storage[2] == usage[1], (
            f"{what}: copying the view allocated {copy} bytes; your get_memory_usage of the view says {usage[1]} "
            f"and storage_bytes of the copy {storage[2]}")
