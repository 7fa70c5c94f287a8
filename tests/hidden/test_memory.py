"""Hidden tests for `memory`: other shapes, dtypes and numbers than the public suite."""

from __future__ import annotations

import pytest
import torch

from grader.expect import assert_cases, assert_close, assert_equal
from tests.probes._tensors import build, dtype_of

SPECS = [
    {"shape": [3, 17], "dtype": "float8_e4m3fn"},
    {"shape": [5, 5, 5], "dtype": "int32"},
    {"shape": [1], "dtype": "bool"},
    {"shape": [64, 3], "dtype": "float64", "permute": [1, 0], "slices": [[0, 2, 1], [3, 60, 5]]},
    {"shape": [2, 0], "dtype": "float16"},
]


@pytest.mark.points(1)
def test_memory_usage_and_storage_other_dtypes(student):
    """get_memory_usage and storage_bytes on float8, int32, bool, sliced float64 and empty tensors"""
    want_usage = [build(s).numel() * build(s).element_size() for s in SPECS]
    want_storage = [build(s).untyped_storage().nbytes() for s in SPECS]
    assert_cases(student.probe("memory.get_memory_usage", specs=SPECS), want_usage, "get_memory_usage",
                 lambda i: f"{SPECS[i]}")
    assert_cases(student.probe("memory.storage_bytes", specs=SPECS), want_storage, "storage_bytes",
                 lambda i: f"{SPECS[i]}")


@pytest.mark.points(1)
def test_float_format_rejects_other_dtypes(student):
    """float_format raises ValueError for bool, int64, complex64 and float8_e4m3fnuz-like types"""
    assert_equal(tuple(student.probe("memory.float_format", dtype="float8_e5m2")), (1, 5, 2), "float_format(float8_e5m2)")
    for dtype in ("bool", "int64", "complex64", "uint8"):
        student.raises("memory.float_format", "ValueError", dtype=dtype)


@pytest.mark.points(1)
def test_rounds_to_zero_boundaries(student):
    """rounds_to_zero near the smallest subnormals of float16, bfloat16 and float8, and for 0.0"""
    cases = []
    for name in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float32"):
        tiny = torch.finfo(dtype_of(name)).smallest_normal
        for factor in (2.0 ** -30, 2.0 ** -12, 0.4, 1.0):
            cases.append((tiny * factor, name))
    want = [torch.tensor(v, dtype=torch.float64).to(dtype_of(d)).item() == 0.0 for v, d in cases]
    cases.append((0.0, "float16"))
    want.append(False)
    got = student.probe("memory.rounds_to_zero", cases=cases)
    assert_cases(got, want, "rounds_to_zero", lambda i: f"{cases[i][0]:g} in {cases[i][1]}")


@pytest.mark.points(1)
def test_bytes_per_parameter_mixed_all(student):
    """mixed-precision bytes per parameter: 2 + 2 + 4 (master) + 4 × state values, for every optimizer"""
    for optimizer, state in {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}.items():
        got = student.probe("memory.bytes_per_parameter", optimizer=optimizer, mixed_precision=True)
        assert_equal(got, 8 + 4 * state, f"bytes_per_parameter({optimizer!r}, mixed_precision=True)")
    student.raises("memory.bytes_per_parameter", "ValueError", optimizer="AdamWW")


@pytest.mark.points(1)
def test_max_trainable_parameters_other_cluster(student):
    """4 × 40 GB with SGD (8 bytes) = 20e9; 1 × 24 GB with Adagrad (12 bytes) = 2e9"""
    assert_close(student.probe("memory.max_trainable_parameters", gpu_bytes=40e9, num_gpus=4, bytes_per_param=8),
                 20e9, "max_trainable_parameters(40e9, 4, 8)")
    assert_close(student.probe("memory.max_trainable_parameters", gpu_bytes=24e9, num_gpus=1, bytes_per_param=12),
                 2e9, "max_trainable_parameters(24e9, 1, 12)")
