"""Hidden tests for `flops`: other shapes, other models and seeds, more devices, edge cases."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader.testing.expect import assert_cases, assert_close, assert_equal, assert_type
from grader.testing.reference import reference
from tests.probes._flops_models import torch_chain_flops, torch_matmul_flops
from tests.probes._gpu import tensor_core_dtype
from tests.probes._tensors import dtype_of
from tests.public.test_flops import DATASHEET, PUBLIC_PEAK_NAMES, check_counts, check_fake_clock, check_peaks


def draw(strategy: st.SearchStrategy, n: int) -> list[Any]:
    """`n` examples of `strategy`, drawn by hypothesis derandomized (the same list on every run;
    the first ones are the simplest: sizes of 1), to send to the student in ONE probe call."""
    out: list[Any] = []

    @settings(derandomize=True, max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    collect()
    return out


def torch_matmul_outcome(a: list[int], b: list[int]) -> int | None:
    """FlopCounterMode's count for a @ b, or None where the spec says ValueError: fewer than two
    dimensions, or torch.matmul itself refuses the shapes (inner or batch dimensions)."""
    if len(a) < 2 or len(b) < 2:
        return None
    try:
        torch.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except RuntimeError:
        return None
    if a[-1] != b[-2]:
        return None
    return torch_matmul_flops(a, b)


@st.composite
def matmul_shapes(draw_: st.DrawFn) -> tuple[list[int], list[int]]:
    """Two shapes with broadcasting batch dimensions (sizes of 1 on either side, different ranks);
    sometimes broken: a mismatched inner dimension, batch dimensions that do not broadcast, a vector."""
    dim = st.integers(1, 5)
    m, n, p = draw_(dim), draw_(dim), draw_(dim)
    batch = draw_(st.lists(st.integers(1, 4), max_size=3))
    a_batch = [draw_(st.sampled_from([d, 1])) for d in batch]
    b_batch = [draw_(st.sampled_from([d, 1])) for d in batch]
    a_batch = a_batch[draw_(st.integers(0, len(a_batch))):]  # ranks may differ
    a, b = [*a_batch, m, n], [*b_batch, n, p]
    broken = draw_(st.sampled_from([None] * 6 + ["inner", "batch", "vector"]))
    if broken == "inner":
        b[-2] = n + draw_(st.integers(1, 3))
    elif broken == "batch":
        a, b = [2, *a], [3, *b[-2:]] if len(b) == 2 else [3, *b]
    elif broken == "vector":
        a, b = ([n], b) if draw_(st.booleans()) else (a, [n])
    return a, b

SHAPES = [([1, 1], [1, 1]), ([7, 1, 2, 3, 4], [1, 6, 1, 4, 2]), ([3, 4], [2, 4, 5]), ([10, 2, 3], [10, 3, 1]),
          ([0, 3, 4], [4, 5]), ([128, 256], [256, 512]), ([4], [4, 5]), ([2, 3, 4], [3, 4, 5]), ([3, 4, 5], [3, 4])]


@reference  # derandomized: the same examples for every submission, so drawn once per grading worker
def drawn_matmul_shapes() -> list[Any]:
    return draw(matmul_shapes(), 40)


@pytest.mark.points(1)
def test_matmul_flops_generated_shapes(student):
    """matmul_flops equals FlopCounterMode on hypothesis-generated broadcasting shapes; bad shapes raise ValueError"""
    cases = SHAPES + drawn_matmul_shapes()
    got = student.probe("flops.matmul_flops_outcomes", cases=cases)
    assert_type(got, list, "matmul_flops")
    assert len(got) == len(cases), f"expected {len(cases)} results, got {len(got)}"
    for (a, b), value in zip(cases, got):
        want = torch_matmul_outcome(a, b)
        label = f"matmul_flops({tuple(a)}, {tuple(b)})"
        if want is None:
            raised = value.get("raised", []) if isinstance(value, dict) else []
            assert "ValueError" in raised, (f"{label}: expected ValueError (torch.matmul refuses these shapes, or "
                                            f"one has fewer than 2 dimensions), got {value!r:.120}")
        else:
            if isinstance(value, dict):
                raise AssertionError(f"{label}: expected {want}, your code raised {value.get('raised', ['?'])[0]}: "
                                     f"{value.get('message', '')}")
            assert_equal(value, want, f"{label} (FlopCounterMode's count for a @ b)", kind=int)


@st.composite
def chains(draw_: st.DrawFn) -> tuple[int, list[int], bool]:
    return (draw_(st.integers(1, 6)), draw_(st.lists(st.integers(1, 9), min_size=1, max_size=5)), draw_(st.booleans()))


def chain_flops(batch: int, dims: list[int], input_grad: bool) -> tuple[int, int]:
    """(forward, backward) from FlopCounterMode on x @ w1 @ ...; a single width has no matmul: 0."""
    return (0, 0) if len(dims) < 2 else torch_chain_flops(batch, dims, input_grad)


@reference
def drawn_chains() -> list[Any]:
    return draw(chains(), 30)


@pytest.mark.points(1)
def test_forward_and_backward_flops_generated_chains(student):
    """forward_flops / backward_flops (default and explicit input_grad) equal FlopCounterMode on generated chains, batch 1 and single widths included"""
    cases = [(1, [5, 3], False), (7, [2, 11, 3, 8, 5], True), (16, [64, 64, 64, 1], False), (3, [9], False),
             (1, [1], True)] + drawn_chains()
    want = [chain_flops(b, d, g) for b, d, g in cases]
    got = student.probe("flops.forward_flops", cases=[(b, d) for b, d, _ in cases])
    assert_cases(got, [f for f, _ in want], "forward_flops", lambda i: f"batch {cases[i][0]}, dims {cases[i][1]}")
    got = student.probe("flops.backward_flops", cases=cases)
    assert_cases(got, [bw for _, bw in want], "backward_flops",
                 lambda i: f"batch {cases[i][0]}, dims {cases[i][1]}, input_grad={cases[i][2]}")
    defaults = [(b, d) for b, d, _ in cases[:8]]
    got = student.probe("flops.backward_flops_default", cases=defaults)
    assert_cases(got, [chain_flops(b, d, True)[1] for b, d in defaults], "backward_flops without input_grad",
                 lambda i: f"batch {defaults[i][0]}, dims {defaults[i][1]} (default: input_grad=True)")


@pytest.mark.points(1)
def test_training_days_other_run(student):
    """training_days for 7B params on 2T tokens, 256 A100s at 312e12 FLOP/s, MFU 0.4; training_flops of ints is a float"""
    got = student.probe("flops.training_days", num_params=7e9, num_tokens=2e12, num_gpus=256,
                        flop_per_sec=312e12, mfu=0.4)
    assert_type(got, float, "training_days(7e9, 2e12, 256, 312e12, 0.4)")
    # 1e-9: the same few float operations in any order agree to ~1e-15; rounding to days is off by >1e-4
    assert_close(got, 6 * 7e9 * 2e12 / (256 * 312e12 * 0.4) / 86400, "training_days(7e9, 2e12, 256, 312e12, 0.4)",
                 rel=1e-9)
    got = student.probe("flops.training_flops", num_params=7, num_tokens=11)
    assert_type(got, float, "training_flops(7, 11) (an estimate: a float, even for int arguments)")
    assert_close(got, 462.0, "training_flops(7, 11)", rel=1e-12)


HIDDEN_FORWARD = [
    {"model": "deep_linear", "dim": 24, "num_layers": 5, "batch": 3, "seed": 4},
    {"model": "mlp", "d_in": 9, "hidden": 5, "d_out": 4, "lead": [], "seed": 3},
    {"model": "mlp", "d_in": 9, "hidden": 5, "d_out": 4, "lead": [1], "seed": 3},
    {"model": "matvec", "m": 3, "n": 1, "p": 6, "batch": 1, "seed": 2},
    {"model": "broadcast", "a": [2, 1, 3, 4], "b": [1, 5, 4, 6], "seed": 1},
    {"model": "broadcast", "a": [3, 4], "b": [2, 2, 4, 5], "seed": 1},
    {"model": "mlp", "d_in": 10, "hidden": 20, "d_out": 6, "lead": [2, 3, 4], "seed": 5},
    {"model": "attention", "b": 1, "heads": 4, "s": 5, "t": 5, "d": 16, "seed": 6},
    {"model": "broadcast", "a": [4, 1, 3, 5], "b": [2, 5, 7], "seed": 7},
    # a vector·vector dot, addbmm and an in-place addmm_ (none of them mm/addmm/bmm/baddbmm: 0), a float64 mm
    {"model": "odd_products", "d": 5, "n": 3, "seed": 11},
]
HIDDEN_BACKWARD = [
    {"model": "deep_linear", "dim": 24, "num_layers": 5, "batch": 3, "backward": True, "input_grad": True, "seed": 4},
    {"model": "mlp", "d_in": 10, "hidden": 20, "d_out": 6, "lead": [7], "backward": True, "input_grad": True,
     "seed": 5},
    {"model": "einsum", "b": 3, "s": 4, "d": 6, "heads": 2, "d_head": 5, "backward": True, "seed": 8},
    {"model": "baddbmm", "n": 2, "s": 3, "t": 11, "d": 5, "backward": True, "seed": 9},
    {"model": "broadcast", "a": [4, 1, 3, 5], "b": [2, 5, 7], "backward": True, "seed": 7},
    {"model": "matvec", "m": 6, "n": 2, "p": 3, "batch": 2, "backward": True, "seed": 2},
    {"model": "embed_mlp", "vocab": 7, "d": 4, "hidden": 9, "lead": [3], "backward": True, "seed": 6},
    {"model": "deep_linear", "dim": 8, "num_layers": 1, "batch": 1, "backward": True, "input_grad": True, "seed": 1},
    {"model": "odd_products", "d": 5, "n": 3, "backward": True, "input_grad": True, "seed": 11},
]


@pytest.mark.points(1)
def test_count_matmul_flops_more_models(student):
    """count_matmul_flops equals FlopCounterMode on other sizes, 1-D/3-D MLP input, broadcast and vector products, embeddings, dot/addbmm/addmm_ and float64"""
    check_counts(student, HIDDEN_FORWARD + HIDDEN_BACKWARD)


@pytest.mark.points(1)
def test_promised_flop_per_sec_more_devices(student):
    """dense peaks for the other A100 names and the NVL cards; ValueError for unknown GPUs (an H200 PCIe, names with T4/L4/A100/H200 inside a word) and dtypes"""
    check_peaks(student, [n for n in DATASHEET if n not in PUBLIC_PEAK_NAMES])
    # the docstring: the H200 datasheet has no PCIe card, so an H200 name with "PCIe" (any case) is a GPU not
    # in the table (not the SXM figures, not a KeyError); the model is a whole word of the name, so a T400,
    # an RTX A1000 or a GH200 is not a T4, an A100 or an H200
    for name, dtype in (("cpu", "float32"), ("Tesla V100-SXM2-16GB", "float16"), ("NVIDIA H100 80GB HBM3", "float64"),
                        ("NVIDIA H100 80GB HBM3", "float8_e4m3fn"), ("NVIDIA A100-SXM4-80GB", "float8_e5m2"),
                        ("NVIDIA H200 PCIe", "bfloat16"), ("NVIDIA H200 141GB PCIE", "float32"),
                        ("NVIDIA L4", "float8_e4m3fn"), ("NVIDIA T400 4GB", "float16"),
                        ("NVIDIA RTX A1000 6GB Laptop GPU", "float32"), ("NVIDIA GH200 480GB", "bfloat16"),
                        ("NVIDIA L40S", "bfloat16")):
        student.raises("flops.promised_flop_per_sec_one", "ValueError", device_name=name, dtype=dtype)


@pytest.mark.points(1)
def test_time_matmul_trials(student):
    """time_matmul divides by the number of trials and excludes the warm-up, for trials=1, 8 and the default"""
    for trials in (1, 8, None):
        check_fake_clock(student, n=8, trials=trials, seed=3)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_matmul_agrees_with_cuda_events(student):
    """on the GPU, time_matmul agrees within 2× with a CUDA-event measurement of the same bf16 matmul (fp16 on a GPU without bf16 tensor cores)"""
    n, trials = 4096, 20
    half = tensor_core_dtype(torch.cuda.get_device_capability())  # tests/probes/_gpu.py
    got = student.probe("flops.time_matmul_on_gpu", n=n, dtype=half, trials=trials)
    assert_type(got, float, "time_matmul")
    a = torch.randn(n, n, device="cuda", dtype=dtype_of(half))
    b = torch.randn(n, n, device="cuda", dtype=dtype_of(half))
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
