"""Public tests for `flops`: FLOP counts come from torch's own FlopCounterMode, the rest from
closed-form facts (6·N·T, the datasheets' dense peaks)."""

from __future__ import annotations

import ast
import math
import random
import statistics

import pytest
import torch

from grader.testing import figures
from grader.rules import static
from grader.testing.expect import assert_cases, assert_close, assert_equal, assert_type
from grader.testing.reference import reference
from tests.probes._flops_models import (describe_case, torch_chain_flops, torch_flop_count,
                                        torch_matmul_flops)
from tests.probes._gpu import mfu_floor, tensor_core_dtype

# -- matmul_flops, forward_flops, backward_flops ----------------------------------------------

MATMUL_SHAPES = [([3, 4], [4, 5]), ([8, 3, 4], [4, 5]), ([5, 1, 3, 4], [2, 4, 6]), ([2, 3, 4], [2, 4, 5]),
                 ([64, 128], [128, 1])]


@pytest.mark.points(1)
def test_matmul_flops(student):
    """matmul_flops is 2·m·n·p times the broadcast batch size, as FlopCounterMode counts a @ b"""
    want = [torch_matmul_flops(a, b) for a, b in MATMUL_SHAPES]
    got = student.probe("flops.matmul_flops", cases=MATMUL_SHAPES)
    assert_cases(got, want, "matmul_flops", lambda i: f"{tuple(MATMUL_SHAPES[i][0])} @ {tuple(MATMUL_SHAPES[i][1])}")
    student.raises("flops.matmul_flops_one", "ValueError", a=[3, 4], b=[5, 6])


CHAINS = [(4, [8, 16, 2]), (3, [5, 7]), (2, [6, 6, 6, 6]), (5, [3, 9, 4, 1])]


@pytest.mark.points(2)
def test_forward_and_backward_flops(student):
    """forward_flops and backward_flops (with and without the input gradient) equal FlopCounterMode on x @ w1 @ w2 @ ..."""
    forward_want = [torch_chain_flops(b, d, True)[0] for b, d in CHAINS]
    got = student.probe("flops.forward_flops", cases=CHAINS)
    assert_cases(got, forward_want, "forward_flops", lambda i: f"batch {CHAINS[i][0]}, dims {CHAINS[i][1]}")
    cases = [(b, d, g) for b, d in CHAINS for g in (True, False)]
    want = [torch_chain_flops(b, d, g)[1] for b, d, g in cases]
    got = student.probe("flops.backward_flops", cases=cases)
    assert_cases(got, want, "backward_flops",
                 lambda i: f"batch {cases[i][0]}, dims {cases[i][1]}, input_grad={cases[i][2]}")


@pytest.mark.points(1)
def test_training_flops_and_days(student):
    """6·N·T training FLOPs; 70B params on 15T tokens on 1024 H100s at MFU 0.5 takes about 144 days"""
    got = student.probe("flops.training_flops", num_params=70e9, num_tokens=15e12)
    assert_close(got, 6 * 70e9 * 15e12, "training_flops(70e9, 15e12)", rel=1e-12)
    got = student.probe("flops.training_days", num_params=70e9, num_tokens=15e12, num_gpus=1024,
                        flop_per_sec=989.5e12, mfu=0.5)
    assert_close(got, 6 * 70e9 * 15e12 / (1024 * 989.5e12 * 0.5) / 86400, "training_days(70e9, 15e12, 1024 GPUs, "
                 "989.5e12 FLOP/s, MFU 0.5)", rel=1e-9)
    assert 143.5 < got < 144.5, f"the lecture's answer is about 144 days, got {got:.4g}"


# -- count_matmul_flops ----------------------------------------------------------------------

#: THE rule's names: flops.py must not name these (the docstring of count_matmul_flops and the
#: handout list every one: tests/kit/test_rule_lists_einops_flops.py checks it) ...
FLOP_COUNTER_NAMES = frozenset({"flop_counter", "FlopCounterMode"})
#: ... nor these dynamic escapes (static.forbidden_uses reports them; the Scope adds every breach).
DYNAMIC_ESCAPES = static.DYNAMIC_ESCAPES


def assert_no_flop_counter(student) -> None:
    """Static rule (a gate): neither flops.py nor anything the counter's program reaches
    (`student.scope`: count_matmul_flops, MatmulFlopCounter.__torch_dispatch__, the submission
    code they reach, module-level code) imports or names torch.utils.flop_counter, or looks
    names up dynamically."""
    hits: set[str] = set()
    imported: set[str] = set()
    for qualname in ("count_matmul_flops", "MatmulFlopCounter.__torch_dispatch__"):
        scope = student.scope("flops", qualname)  # first: a file the checks cannot read is a plain failure
        hits.update(static.forbidden_uses(scope, FLOP_COUNTER_NAMES))
        imported.update(m for m in static.imported_modules(scope) if "flop_counter" in m)
    tree = student.sources().tree("flops")  # the whole file, parsed once in this run ...
    runs = ast.Module(body=[s for s in tree.body if not static.is_main_guard(s)], type_ignores=[])
    hits.update(static.forbidden_uses(runs, FLOP_COUNTER_NAMES))  # ... but a __main__ block: never run on import
    imported.update(m for m in static.imported_modules(runs) if "flop_counter" in m)
    assert not imported and not hits, (
        "flops.py must count FLOPs itself, without torch.utils.flop_counter or a dynamic escape or import the rule "
        f"cannot read through (count_matmul_flops's docstring); found {sorted(imported | hits)}")


FORWARD_CASES = [
    {"model": "deep_linear", "dim": 32, "num_layers": 3, "batch": 8},
    {"model": "deep_linear", "dim": 16, "num_layers": 2, "batch": 1},
    {"model": "matvec", "m": 5, "n": 7, "p": 3, "batch": 4},
    {"model": "embed_mlp", "vocab": 11, "d": 6, "hidden": 12, "lead": [2, 5]},
    {"model": "mlp", "d_in": 16, "hidden": 32, "d_out": 8, "lead": [5]},
    {"model": "attention", "b": 2, "heads": 3, "s": 7, "t": 9, "d": 8},
    {"model": "einsum", "b": 2, "s": 5, "d": 12, "heads": 3, "d_head": 4},
    {"model": "baddbmm", "n": 6, "s": 7, "t": 9, "d": 8},
]

BACKWARD_CASES = [
    {"model": "deep_linear", "dim": 32, "num_layers": 3, "batch": 8, "backward": True},
    {"model": "deep_linear", "dim": 16, "num_layers": 2, "batch": 4, "backward": True, "input_grad": True},
    {"model": "mlp", "d_in": 16, "hidden": 32, "d_out": 8, "lead": [3, 5], "backward": True},
    {"model": "attention", "b": 2, "heads": 3, "s": 7, "t": 9, "d": 8, "backward": True},
    {"model": "einsum", "b": 2, "s": 5, "d": 12, "heads": 3, "d_head": 4, "backward": True, "input_grad": True},
    {"model": "baddbmm", "n": 6, "s": 7, "t": 9, "d": 8, "backward": True},
    {"model": "matvec", "m": 5, "n": 7, "p": 3, "batch": 4, "backward": True, "input_grad": True},
    {"model": "embed_mlp", "vocab": 11, "d": 6, "hidden": 12, "lead": [1, 4], "backward": True},
]


def attach_counts(cases: list[dict], replies: list, want: list[int]) -> None:
    """The feedback page's picture: count_matmul_flops's count per model next to FlopCounterMode's,
    the models that differ marked (the counts are what the probe returned; a reply that is not a
    count is left out of the bars)."""
    got = [r.get("flops") if isinstance(r, dict) and type(r.get("flops")) is int else None for r in replies]
    got = (got + [None] * len(cases))[:len(cases)]
    backward = any(c.get("backward") for c in cases)
    figures.attach(figures.figure(
        f"FLOPs per model ({'forward + backward' if backward else 'forward'}): yours vs torch's FlopCounterMode",
        [figures.series("your count_matmul_flops", got, style="bar"),
         figures.series("torch FlopCounterMode", want, style="bar")],
        kind="bars", categories=[f"{i + 1}. {c['model']}" for i, c in enumerate(cases)], y_label="FLOPs",
        log_y=True, marks=[figures.mark(i, w, "differs") for i, (g, w) in enumerate(zip(got, want)) if g != w],
        caption="; ".join(f"{i + 1}. {describe_case(c)}" for i, c in enumerate(cases))))


# FlopCounterMode on the kit's own model for a case: it depends on the case only (computed once
# per grading worker, grader/testing/reference.py)
expected_flop_count = reference(torch_flop_count)


def check_counts(student, cases) -> None:
    """Behaviour first (the counts, one probe call), then the gates: the runtime tripwire (torch's
    FlopCounterMode never entered during the student's call) and the static rule."""
    replies = student.probe("flops.count_matmul_flops_cases", cases=cases)
    assert_type(replies, list, "count_matmul_flops replies")
    assert len(replies) == len(cases), f"expected {len(cases)} replies, got {len(replies)}"
    reached: set[str] = set()
    want = [expected_flop_count(case) for case in cases]
    attach_counts(cases, replies, want)
    for case, reply, count in zip(cases, replies, want):
        assert_type(reply, dict, "count_matmul_flops reply")
        assert_equal(reply.get("flops"), count, f"count_matmul_flops on {describe_case(case)} "
                     "(expected: torch.utils.flop_counter.FlopCounterMode's total)", kind=int)
        assert reply.get("calls") == 1, (f"count_matmul_flops on {describe_case(case)} called fn "
                                         f"{reply.get('calls')} times: run it once, under the counter")
        # "run fn under a MatmulFlopCounter": under it, and no longer once the count is returned
        assert reply.get("modes_left") == 0, (f"count_matmul_flops on {describe_case(case)} left "
                                              f"{reply.get('modes_left')} dispatch mode(s) on after it returned: leave "
                                              "the counter when fn is done (with MatmulFlopCounter() as counter: ...)")
        assert_type(reply.get("reached"), list, "tripwires reached")
        reached.update(str(w) for w in reply["reached"])
    assert "FlopCounterMode" not in reached, (
        "count_matmul_flops entered torch.utils.flop_counter.FlopCounterMode while it ran: write the counting "
        "yourself (MatmulFlopCounter)")
    assert_no_flop_counter(student)


@pytest.mark.points(2)
def test_count_matmul_flops_forward(student):
    """count_matmul_flops equals FlopCounterMode on forward passes (mm, addmm, bmm, einops.einsum, baddbmm, mv, embedding, batch 1); no FlopCounterMode"""
    check_counts(student, FORWARD_CASES)


@pytest.mark.points(2)
def test_count_matmul_flops_forward_backward(student):
    """count_matmul_flops equals FlopCounterMode on forward + backward passes of the same models; no FlopCounterMode"""
    check_counts(student, BACKWARD_CASES)


# -- promised FLOP/s, MFU, timing ------------------------------------------------------------

# Dense peaks from NVIDIA's datasheets (tensor-core figures quoted only with sparsity, "*": halve
# them).  (float32, float16, bfloat16) in FLOP/s; None where the datasheet has no figure (the T4's
# Turing tensor cores have no bfloat16): get_promised_flop_per_sec raises ValueError there.
# Closed-form facts, kept here in the test.
DATASHEET = {
    "NVIDIA A100-SXM4-80GB": (19.5e12, 312e12, 312e12),
    "NVIDIA A100-SXM4-40GB": (19.5e12, 312e12, 312e12),  # Colab's A100
    "NVIDIA A100-PCIE-40GB": (19.5e12, 312e12, 312e12),
    "NVIDIA A100 80GB PCIe": (19.5e12, 312e12, 312e12),
    "NVIDIA H100 80GB HBM3": (67e12, 989.5e12, 989.5e12),
    "NVIDIA H100 PCIe": (51e12, 756.5e12, 756.5e12),
    "NVIDIA H100 PCIE": (51e12, 756.5e12, 756.5e12),  # the docstring: "PCIe" in any case (A100s report "PCIE")
    "NVIDIA H100 NVL": (60e12, 835.5e12, 835.5e12),
    "NVIDIA H200": (67e12, 989.5e12, 989.5e12),
    "NVIDIA H200 NVL": (60e12, 835.5e12, 835.5e12),
    "Tesla T4": (8.1e12, 65e12, None),  # dense: Turing has no sparsity; fp16 tensor cores only
    "NVIDIA L4": (30.3e12, 121e12, 121e12),  # 242* with sparsity
}
PEAK_DTYPES = ("float32", "float16", "bfloat16")  # DATASHEET's columns
#: The names the public test checks (Colab's three GPUs among them); the hidden test checks the rest.
PUBLIC_PEAK_NAMES = ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "Tesla T4",
                     "NVIDIA L4", "NVIDIA A100-SXM4-40GB"]
# 2% accepts both datasheet revisions of the H100's FP32 figure (67 and 67.5 TFLOP/s) but
# not a sparse figure (2×), the SXM figure for a PCIe card (+31%) or TF32 for FP32 (8×).
PEAK_REL = 0.02
#: time_matmul's default number of timed runs (its `trials` default in solutions/flops.py, which its
#: docstring states; tests/kit/test_totals.py checks the two agree): what the fake-clock checks expect of
#: `trials=None`, here and in the hidden tests.
TIME_MATMUL_DEFAULT_TRIALS = 10


def datasheet_peak(device_name: str, dtype: str) -> float | None:
    """DATASHEET's figure for `device_name` in `dtype` (a name), None where the datasheet has none."""
    if device_name not in DATASHEET:
        raise AssertionError(f"the kit's datasheet table has no entry for GPU {device_name!r}: add it to "
                             "tests/public/test_flops.py (DATASHEET)")
    return DATASHEET[device_name][PEAK_DTYPES.index(dtype)]


def check_peaks(student, names: list[str]) -> None:
    """The dense peak of every GPU of `names` in every dtype of the table, as a float within PEAK_REL
    (one probe call), and ValueError where the datasheet has no figure."""
    pairs = [(name, dtype) for name in names for dtype in PEAK_DTYPES]
    cases = [(name, dtype) for name, dtype in pairs if datasheet_peak(name, dtype) is not None]
    got = student.probe("flops.promised_flop_per_sec", cases=cases)
    assert_type(got, list, "get_promised_flop_per_sec")
    for (name, dtype), value in zip(cases, got, strict=True):
        assert_type(value, float, f"get_promised_flop_per_sec({name!r}, torch.{dtype}) (the docstring's \"A float\")")
        assert_close(value, datasheet_peak(name, dtype), f"get_promised_flop_per_sec({name!r}, torch.{dtype}) "
                     "(dense datasheet peak)", rel=PEAK_REL)
    for name, dtype in pairs:
        if datasheet_peak(name, dtype) is None:  # the T4's bfloat16: no datasheet figure
            student.raises("flops.promised_flop_per_sec_one", "ValueError", device_name=name, dtype=dtype)


@pytest.mark.points(1)
def test_promised_flop_per_sec(student):
    """get_promised_flop_per_sec gives the dense datasheet peaks of A100 (Colab's too), H100 SXM/PCIe, H200, T4, L4; ValueError otherwise (T4 bf16, L40S)"""
    check_peaks(student, PUBLIC_PEAK_NAMES)
    # the docstring: the model is a whole word of the name, so an L40S is not an L4
    for name, dtype in (("NVIDIA GeForce RTX 4090", "bfloat16"), ("NVIDIA L40S", "float32")):
        student.raises("flops.promised_flop_per_sec_one", "ValueError", device_name=name, dtype=dtype)


@pytest.mark.points(1)
def test_mfu_and_time_matmul(student):
    """mfu is achieved over promised FLOP/s; time_matmul returns seconds per a @ b, warm-up not timed"""
    # the second is above 1 (a clock read before the GPU finished): mfu reports it, never clamps it
    cases = [(1e12, 2e-3, 989.5e12), (1e12, 1e-3, 989.5e12), (2 * 4096**3, 0.5, 19.5e12),
             (6.3e24, 1.2e7, 1024 * 989.5e12)]
    got = student.probe("flops.mfu", cases=cases)
    assert_type(got, list, "mfu")
    for (flops, seconds, promised), value in zip(cases, got, strict=True):
        assert_close(value, flops / seconds / promised, f"mfu({flops:g}, {seconds:g}, {promised:g})", rel=1e-9)
    trials = 5
    check_fake_clock(student, n=16, trials=trials)


def check_fake_clock(student, n: int, trials: int | None, seed: int = 0) -> None:
    """time_matmul on a fake clock: the first matmul (cold) costs `cold` seconds, every later one
    about `tick`; tick, cold and the start time are drawn here, at random, for every call, so the
    only way to return `tick` is to time the runs after a warm-up and take their mean (or median)."""
    rng = random.SystemRandom()
    tick, start = rng.uniform(0.01, 5.0), rng.uniform(100.0, 1000.0)
    cold = tick * rng.uniform(20.0, 50.0)
    # the runs after the cold one take turns at these durations (mean `tick` over every 4): the mean
    # or the median of the timed runs is what time_matmul must return; their minimum is not it
    ticks = [tick * f for f in (1.3, 0.7, 1.15, 0.85)]
    seconds, matmuls, reads, syncs = student.probe("flops.time_matmul_fake_clock", n=n, trials=trials, ticks=ticks,
                                                   start=start, cold=cold, seed=seed)
    label = f"time_matmul({'default trials' if trials is None else f'trials={trials}'})"
    assert syncs == 0, (f"{label} on CPU tensors called torch.cuda.synchronize() {syncs} time(s): synchronise only "
                        "when the tensors are on a CUDA device (on a machine with a GPU it would wait for that "
                        "GPU; on one without, it raises)")
    assert_type(seconds, float, label)
    timed = TIME_MATMUL_DEFAULT_TRIALS if trials is None else trials
    assert matmuls > timed, (f"{label} ran a @ b {matmuls} times: expected the {timed} timed runs plus at "
                             "least one warm-up run")
    assert reads, f"{label} never read the clock (time.perf_counter)"
    first, last = reads[0], reads[-1]
    assert last - first == timed, (f"{label} ran a @ b {last - first} times between its first and last clock "
                                   f"reads: expected exactly the {timed} timed runs (trials)")
    # the runs between the two reads: matmul k (k >= 1) took ticks[(k - 1) % 4]; matmul 0 the cold one
    runs = [cold if k == 0 else ticks[(k - 1) % len(ticks)] for k in range(first, last)]
    mean, median = sum(runs) / timed, statistics.median(runs)
    # 1e-6: a clock read in integer nanoseconds (perf_counter_ns) rounds by 1 ns on >= 0.05 s of
    # fake time; a timed warm-up, a wrong divisor or the minimum run is off by 15% or more.
    if not math.isclose(seconds, median, rel_tol=1e-6):
        assert_close(seconds, mean, f"{label} on a fake clock that moves about {tick:.6g} s per matmul ({cold:.6g} s "
                     "for the first, cold one): seconds per multiplication, the mean (or median) over the timed "
                     "runs, warm-up not timed", rel=1e-6)


# -- on the GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.points(3)
def test_bf16_matmul_beats_fp32(student):
    """on the GPU, a 4096² bf16 matmul (tensor cores; fp16 on a GPU without bf16 ones, e.g. a T4) is at least twice as fast as in fp32"""
    half = tensor_core_dtype(torch.cuda.get_device_capability())  # tests/probes/_gpu.py
    fp32 = student.probe("flops.time_matmul_on_gpu", n=4096, dtype="float32", trials=10)
    fast = student.probe("flops.time_matmul_on_gpu", n=4096, dtype=half, trials=10)
    assert_type(fp32, float, "time_matmul (float32)")
    assert_type(fast, float, f"time_matmul ({half})")
    assert 0 < 2 * fast < fp32, f"expected {half} at least 2× faster than fp32, got {fast:.3g} s vs {fp32:.3g} s"


@pytest.mark.gpu
@pytest.mark.points(3)
def test_bf16_matmul_mfu(student):
    """on the GPU, an 8192² bf16 matmul (fp16 without bf16 tensor cores) timed by time_matmul reaches half the dense datasheet peak (a quarter on the 70 W T4, L4)"""
    n = 8192
    name, half = torch.cuda.get_device_name(), tensor_core_dtype(torch.cuda.get_device_capability())
    seconds = student.probe("flops.time_matmul_on_gpu", n=n, dtype=half, trials=20)
    assert_type(seconds, float, "time_matmul")
    peak = datasheet_peak(name, half)
    achieved = 2 * n**3 / seconds / peak
    # Above ~1 is impossible: it means the clock stopped before the GPU finished (no synchronize).
    assert achieved <= 1.05, (f"time_matmul measured {seconds:.3g} s, i.e. MFU {achieved:.2f} > 1: "
                              "the timing does not wait for the GPU (torch.cuda.synchronize)")
    floor = mfu_floor(name)
    assert achieved >= floor, (f"expected MFU ≥ {floor} for a large {half} matmul on {name}, got {achieved:.2f} "
                               f"({seconds:.3g} s)")
    promised = student.probe("flops.promised_on_this_gpu", dtype=half)
    assert_close(promised, peak, f"get_promised_flop_per_sec({name!r}, torch.{half})", rel=PEAK_REL)
