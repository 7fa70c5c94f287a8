"""Hidden tests for `memory`: other shapes, dtypes and numbers than the public suite."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.testing.expect import assert_cases, assert_close, assert_equal, assert_type
from tests.hidden.strategies_memory_views import memory_specs, property_settings
from tests.probes._tensors import build, dtype_of
from tests.public.test_memory import FORMATS, _spec as describe, other_float_dtypes

SPECS = [
    {"shape": [3, 17], "dtype": "float8_e4m3fn"},
    {"shape": [5, 5, 5], "dtype": "int32"},
    {"shape": [1], "dtype": "bool"},
    {"shape": [64, 3], "dtype": "float64", "permute": [1, 0], "slices": [[0, 2, 1], [3, 60, 5]]},
    {"shape": [2, 0], "dtype": "float16"},
    {"shape": [5, 4], "dtype": "complex64", "slices": [[1, 2, 1]]},
    {"shape": [], "dtype": "bool"},
    {"shape": [1, 1, 1], "dtype": "float8_e8m0fnu"},
    {"shape": [9], "dtype": "float8_e4m3fnuz", "slices": [[0, 9, 4]]},
    {"shape": [2, 3], "dtype": "float8_e5m2fnuz", "then": ["expand"]},
    {"shape": [12], "dtype": "float32", "slices": [[2, 5, 1]], "then": ["from_numpy"]},
    {"shape": [6, 6], "dtype": "int16", "slices": [[3, 4, 1], [2, 3, 1]], "then": ["detach"]},
]


@pytest.mark.points(1)
@property_settings(2)
@given(generated=st.lists(memory_specs(), min_size=20, max_size=40))
def test_memory_usage_and_storage_other_dtypes(student, generated):
    """get_memory_usage and storage_bytes on every float8 type, int, bool, complex, detached, expanded and as_strided views"""
    specs = SPECS + generated
    want_usage = [build(s).nbytes for s in specs]
    want_storage = [build(s).untyped_storage().nbytes() for s in specs]
    assert_cases(student.probe("memory.get_memory_usage", specs=specs), want_usage, "get_memory_usage",
                 lambda i: describe(specs[i]))
    assert_cases(student.probe("memory.storage_bytes", specs=specs), want_storage, "storage_bytes",
                 lambda i: describe(specs[i]))


@pytest.mark.points(1)
def test_float_format_rejects_other_dtypes(student):
    """float_format raises ValueError for bool, int64, complex64, uint8 and every unsupported float type"""
    for dtype, want in FORMATS.items():
        assert_equal(student.probe("memory.float_format", dtype=dtype), want, f"float_format({dtype})", kind=tuple)
    for dtype in ("bool", "int64", "complex64", "uint8", *other_float_dtypes()):
        student.raises("memory.float_format", "ValueError", dtype=dtype)


# the formats with a zero, and their mantissa bits (facts; the unsupported float8 types included)
MANTISSA = {**{d: f[2] for d, f in FORMATS.items()}, "float8_e4m3fnuz": 3, "float8_e5m2fnuz": 2}


@pytest.mark.points(1)
def test_rounds_to_zero_boundaries(student):
    """rounds_to_zero around half the smallest subnormal of every float type (float8 included), signs, and 0.0"""
    cases, want = [], []
    for name, mantissa in MANTISSA.items():
        s = math.ldexp(torch.finfo(dtype_of(name)).tiny, -mantissa)  # the smallest subnormal
        # s/2 is a tie (to the even 0); s/2·(1 + 2**-10) is above it in float32 too (no double-rounding ambiguity)
        for value in (s, 0.75 * s, s / 2, s / 2 * (1 + 2 ** -10), s / 4, s * 2.0 ** -30, 3 * s, 1.0):
            for signed in (value, -value):
                if signed != 0.0:  # s/2 of float64 is not a Python float
                    cases.append((signed, name))
                    want.append(abs(signed) <= s / 2)
    # float8_e8m0fnu (exponent only) has no zero at all: nothing rounds to it
    for value in (1e-50, 1e-300, 2.0 ** -140):
        cases.append((value, "float8_e8m0fnu"))
        want.append(False)
    cases.append((0.0, "bfloat16"))
    want.append(False)
    got = student.probe("memory.rounds_to_zero", cases=cases)
    assert_cases(got, want, "rounds_to_zero", lambda i: f"{cases[i][0]!r} in {cases[i][1]}")


@pytest.mark.points(1)
def test_bytes_per_parameter_mixed_all(student):
    """mixed-precision bytes per parameter: 2 + 2 + 4 (master) + 4 × state values, for every optimizer; unknown names raise"""
    for optimizer, state in {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}.items():
        got = student.probe("memory.bytes_per_parameter", optimizer=optimizer, mixed_precision=True)
        assert_equal(got, 8 + 4 * state, f"bytes_per_parameter({optimizer!r}, mixed_precision=True)")
    student.raises("memory.bytes_per_parameter", "ValueError", optimizer="AdamWW")
    # an unknown name is an error on the mixed-precision path too, not a fallback to 0 state values
    student.raises("memory.bytes_per_parameter", "ValueError", optimizer="lion", mixed_precision=True)


@pytest.mark.points(1)
def test_max_trainable_parameters_other_cluster(student):
    """4 × 40 GB with SGD (8 bytes) = 20e9; 1 × 24 GB with Adagrad (12 bytes) = 2e9"""
    # rel 1e-9 (assert_close's default) throughout: a few roundings of products of exact integers, any order
    assert_close(student.probe("memory.max_trainable_parameters", gpu_bytes=40e9, num_gpus=4, bytes_per_param=8),
                 20e9, "max_trainable_parameters(40e9, 4, 8)")
    assert_close(student.probe("memory.max_trainable_parameters", gpu_bytes=24e9, num_gpus=1, bytes_per_param=12),
                 2e9, "max_trainable_parameters(24e9, 1, 12)")  # rel 1e-9: a few roundings of exact integers
    got = student.probe("memory.max_trainable_parameters", gpu_bytes=1000, num_gpus=3, bytes_per_param=16)
    assert_type(got, float, "max_trainable_parameters(1000, 3, 16)")
    assert_close(got, 187.5, "max_trainable_parameters(1000, 3, 16) (not rounded)")  # rel 1e-9: exact in binary
