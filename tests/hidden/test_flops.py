"""Hidden tests for `flops`: other shapes, other models and seeds, more devices, edge cases."""

from __future__ import annotations

import pytest
import torch

from grader.expect import assert_cases, assert_close, assert_type
from tests.probes._flops_models import torch_chain_flops, torch_matmul_flops
from tests.public.test_flops import DATASHEET, check_counts, check_peaks

SHAPES = [([1, 1], [1, 1]), ([7, 1, 2, 3, 4], [1, 6, 1, 4, 2]), ([3, 4], [2, 4, 5]), ([10, 2, 3], [10, 3, 1]),
          ([0, 3, 4], [4, 5]), ([128, 256], [256, 512])]


@pytest.mark.points(1)
def test_matmul_flops_more_shapes_and_errors(student):
    """matmul_flops broadcasts batch dimensions like torch.matmul; bad shapes raise ValueError"""
    got = student.probe("flops.matmul_flops", cases=SHAPES)
    assert_cases(got, [torch_matmul_flops(a, b) for a, b in SHAPES], "matmul_flops",
                 lambda i: f"{tuple(SHAPES[i][0])} @ {tuple(SHAPES[i][1])}")
    for a, b in ([[4], [4, 5]], [[2, 3, 4], [3, 4, 5]], [[3, 4, 5], [3, 4]]):
        student.raises("flops.matmul_flops_one", "ValueError", a=a, b=b)


CHAINS = [(1, [5, 3]), (7, [2, 11, 3, 8, 5]), (16, [64, 64, 64, 1]), (3, [9])]


@pytest.mark.points(1)
def test_forward_and_backward_flops_more_chains(student):
    """forward_flops / backward_flops equal FlopCounterMode on more chains, including a single layer"""
    got = student.probe("flops.forward_flops", cases=CHAINS[:-1])
    assert_cases(got, [torch_chain_flops(b, d, True)[0] for b, d in CHAINS[:-1]], "forward_flops",
                 lambda i: f"batch {CHAINS[i][0]}, dims {CHAINS[i][1]}")
    cases = [(b, d, g) for b, d in CHAINS[:-1] for g in (False, True)]
    got = student.probe("flops.backward_flops", cases=cases)
    assert_cases(got, [torch_chain_flops(b, d, g)[1] for b, d, g in cases], "backward_flops",
                 lambda i: f"batch {cases[i][0]}, dims {cases[i][1]}, input_grad={cases[i][2]}")
    got = student.probe("flops.forward_flops", cases=[CHAINS[-1]])
    assert_cases(got, [0], "forward_flops", lambda i: "a chain with a single width (no matmul)")


@pytest.mark.points(1)
def test_training_days_other_run(student):
    """training_days for 7B params on 2T tokens, 256 A100s at 312e12 FLOP/s, MFU 0.4"""
    got = student.probe("flops.training_days", num_params=7e9, num_tokens=2e12, num_gpus=256,
                        flop_per_sec=312e12, mfu=0.4)
    assert_close(got, 6 * 7e9 * 2e12 / (256 * 312e12 * 0.4) / 86400, "training_days(7e9, 2e12, 256, 312e12, 0.4)",
                 rel=1e-9)


HIDDEN_FORWARD = [
    {"model": "deep_linear", "dim": 24, "num_layers": 5, "batch": 3, "seed": 4},
    {"model": "mlp", "d_in": 10, "hidden": 20, "d_out": 6, "lead": [2, 3, 4], "seed": 5},
    {"model": "attention", "b": 1, "heads": 4, "s": 5, "t": 5, "d": 16, "seed": 6},
    {"model": "broadcast", "a": [4, 1, 3, 5], "b": [2, 5, 7], "seed": 7},
]
HIDDEN_BACKWARD = [
    {"model": "deep_linear", "dim": 24, "num_layers": 5, "batch": 3, "backward": True, "input_grad": True, "seed": 4},
    {"model": "mlp", "d_in": 10, "hidden": 20, "d_out": 6, "lead": [7], "backward": True, "input_grad": True,
     "seed": 5},
    {"model": "einsum", "b": 3, "s": 4, "d": 6, "heads": 2, "d_head": 5, "backward": True, "seed": 8},
    {"model": "baddbmm", "n": 2, "s": 3, "t": 11, "d": 5, "backward": True, "seed": 9},
    {"model": "broadcast", "a": [4, 1, 3, 5], "b": [2, 5, 7], "backward": True, "seed": 7},
]


@pytest.mark.points(1)
def test_count_matmul_flops_more_models(student):
    """count_matmul_flops equals FlopCounterMode on other sizes, 3-D MLP input, broadcast matmul, input gradients"""
    check_counts(student, HIDDEN_FORWARD + HIDDEN_BACKWARD)


@pytest.mark.points(1)
def test_promised_flop_per_sec_more_devices(student):
    """dense peaks for the other A100 names and the NVL cards; ValueError for unknown GPUs and dtypes"""
    check_peaks(student, [n for n in DATASHEET if n not in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")])
    for name, dtype in (("cpu", "float32"), ("Tesla V100-SXM2-16GB", "float16"), ("NVIDIA H100 80GB HBM3", "float64")):
        student.raises("flops.promised_flop_per_sec_one", "ValueError", device_name=name, dtype=dtype)


@pytest.mark.points(1)
def test_time_matmul_trials(student):
    """time_matmul divides by the number of trials and excludes the warm-up, for trials=1 and trials=8"""
    for trials in (1, 8):
        seconds, matmuls = student.probe("flops.time_matmul_fake_clock", n=8, trials=trials, seed=3)
        assert_type(seconds, float, "time_matmul")
        assert matmuls > trials, f"time_matmul ran a @ b {matmuls} times for trials={trials}: no warm-up"
        assert_close(seconds, 1.0, f"time_matmul(trials={trials}) on a clock that moves 1 s per matmul", rel=1e-9)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_matmul_agrees_with_cuda_events(student):
    """on the GPU, time_matmul agrees within 2× with a CUDA-event measurement of the same bf16 matmul"""
    n, trials = 4096, 20
    got = student.probe("flops.time_matmul_on_gpu", n=n, dtype="bfloat16", trials=trials)
    assert_type(got, float, "time_matmul")
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):  # warm-up
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(trials):
        a @ b
    end.record()
    torch.cuda.synchronize()
    want = start.elapsed_time(end) / 1000 / trials
    # A factor of 2 absorbs clocks and launch overhead; a missing synchronize is off by 10-100×.
    assert want / 2 <= got <= want * 2, f"time_matmul says {got:.3g} s per matmul, CUDA events say {want:.3g} s"
