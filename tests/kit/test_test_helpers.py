"""The graded tests' shared checks turn a wrong reply into a plain AssertionError the student can
read, never a crash of the test itself (a raw RuntimeError from comparing tensors of two shapes);
the GPU tests' choices (tests/probes/_gpu.py) hold for every GPU Colab hands out, checked here
without one."""

from __future__ import annotations

import pytest
import torch

from tests.probes._gpu import mfu_floor, tensor_core_dtype
from tests.public.test_flops import DATASHEET, datasheet_peak
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


# (compute capability, torch.cuda.get_device_name()) of GPUs the tests may run on
GPUS = {"T4": ((7, 5), "Tesla T4"), "V100": ((7, 0), "Tesla V100-SXM2-16GB"), "A100": ((8, 0), "NVIDIA A100-SXM4-40GB"),
        "A10": ((8, 6), "NVIDIA A10"), "L4": ((8, 9), "NVIDIA L4"), "H100": ((9, 0), "NVIDIA H100 80GB HBM3"),
        "H200": ((9, 0), "NVIDIA H200")}


@pytest.mark.parametrize("gpu, want", [("T4", "float16"), ("V100", "float16"), ("A100", "bfloat16"),
                                       ("A10", "bfloat16"), ("L4", "bfloat16"), ("H100", "bfloat16"),
                                       ("H200", "bfloat16")])
def test_tensor_core_dtype_is_bf16_from_ampere_on(gpu: str, want: str) -> None:
    """Issue 31: a T4 (Turing) has no bf16 tensor cores, so the GPU tests time fp16 there."""
    assert tensor_core_dtype(GPUS[gpu][0]) == want


@pytest.mark.parametrize("name", ["Tesla T4", "NVIDIA L4", "NVIDIA A100-SXM4-40GB"])
def test_colab_gpus_have_a_datasheet_peak_in_the_dtype_their_tests_time(name: str) -> None:
    """Issue 31: each GPU Colab hands out has a figure, in the test's DATASHEET, for the dtype the
    GPU tests time on it (a T4's bfloat16 has none: its tests time float16)."""
    capability = next(c for c, n in GPUS.values() if n == name)
    dtype = tensor_core_dtype(capability)
    assert name in DATASHEET and datasheet_peak(name, dtype) is not None
    assert (datasheet_peak(name, "bfloat16") is None) == (dtype == "float16")


def test_mfu_floor_is_lower_on_the_power_capped_boards_only() -> None:
    """Issue 31: the 70 W T4 and 72 W L4 throttle under a sustained matmul (MFU about 0.37 and 0.45 for
    a correct timing): a quarter there, half of the peak everywhere else (an L40S is no L4)."""
    assert mfu_floor("Tesla T4") == mfu_floor("NVIDIA L4") == 0.25
    for name in ("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA L40S", "NVIDIA T400 4GB"):
        assert mfu_floor(name) == 0.5, name
