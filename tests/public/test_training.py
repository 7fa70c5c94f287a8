"""Public tests for `training`.

The expected losses come from a reference loop run here with torch's own pieces (a plain
deep-linear model of torch ops with the same initial weights, torch.optim.SGD/AdamW, the same
batches from the same seed).  The probes hand the student's `train` those same pieces, and
stand-ins for the student's checkpoint functions and mixed-precision step that record how the
loop called them (tests/probes/_training_parts.py): these tests judge the loop alone, so a bug in
another module (or one of its accepted variants, such as AdamW's decay after the update) costs
points in that module only.  FLOPs come from torch's FlopCounterMode on one real step.  Resuming
is compared with the student's own uninterrupted run, bit for bit.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from grader.testing.expect import assert_close, assert_equal, assert_tensor, assert_type
from grader.testing.reference import reference as cached

# The student's loop runs the very model and torch.optim optimizer of the reference loop, in
# float32: another (correct) spelling of the loss, e.g. ((out - y) ** 2).mean(), or of the
# loss's conversion to a float differs only by rounding, a few ulps per step, well under 1e-5
# relative after a dozen steps.  The known bugs (missing zero_grad, a second optimizer step, a
# wrong loss) change the losses by more than 1e-2 from step 2 on.
RTOL = 1e-5
# A loop that does the bfloat16 step itself, as mixed_precision_step does it, against the reference
# loop under CPU autocast: the same pieces, but the bf16 matmuls round differently across spellings;
# a run without autocast is off by ~1e-2 or more.
RTOL_BF16 = 2e-3


def make_init(dim: int, num_layers: int, seed: int) -> dict[str, torch.Tensor]:
    """Initial weights (state-dict keys of Cruncher) drawn here, so every implementation starts equal."""
    g = torch.Generator().manual_seed(seed)
    init = {f"layers.{i}.weight": torch.randn(dim, dim, generator=g) / math.sqrt(dim) for i in range(num_layers)}
    init["final.weight"] = torch.randn(dim, 1, generator=g) / math.sqrt(dim)
    return init


def make_target(dim: int, seed: int) -> torch.Tensor:
    return torch.randn(dim, generator=torch.Generator().manual_seed(seed + 1000))


def reference(init, w_true, batch, steps, optimizer="sgd", lr=0.01, seed=0, autocast=False):
    """The lecture's loop with torch's own pieces: losses and final weights."""
    params = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    layers = [params[f"layers.{i}.weight"] for i in range(len(params) - 1)]
    opt = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[optimizer](list(params.values()), lr=lr)
    torch.manual_seed(seed)
    losses = []
    for _ in range(steps):
        x = torch.randn(batch, w_true.shape[0])
        y = x @ w_true
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            h = x
            for w in layers:
                h = h @ w
            loss = F.mse_loss((h @ params["final.weight"]).squeeze(-1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().clone() for k, v in params.items()}


def check_losses(got, want, what: str, rtol: float) -> None:
    assert_type(got, list, what)
    assert_equal(len(got), len(want), f"{what}: number of losses returned")
    for step, (g, w) in enumerate(zip(got, want)):
        assert_type(g, float, f"{what}: loss of step {step}")
        if not math.isclose(g, w, rel_tol=rtol, abs_tol=1e-12):
            raise AssertionError(f"{what}: the loss of step {step} is {g:.8g}, the reference loop's is {w:.8g} "
                                 f"(first difference at step {step}; relative tolerance {rtol:g})")


def check_checkpoint_calls(got, what: str) -> None:
    """The loop used save_checkpoint / load_checkpoint (stand-ins here, recording their calls) as the
    docstring says: a load of a file no save_checkpoint wrote means it saved some other way."""
    assert_type(got, dict, what)
    if got.get("problems"):
        raise AssertionError(f"{what}: " + "; ".join(str(p) for p in got["problems"][:3]) + " (save with your "
                             f"save_checkpoint and resume with your load_checkpoint; calls seen: {got.get('calls')})")


def run(student, dim, num_layers, batch, steps, optimizer="sgd", lr=0.01, seed=0, mixed_precision=None):
    """The probe's run and the reference loop's; `mixed_precision` None: not given (train's default, False)."""
    init, w_true = make_init(dim, num_layers, seed), make_target(dim, seed)
    got = student.probe("training.run", init=init, w_true=w_true, dim=dim, num_layers=num_layers, batch=batch,
                        steps=steps, optimizer=optimizer, lr=lr, seed=seed, mixed_precision=mixed_precision)
    # (mixed_precision_step is a float32 stand-in in the probe: the reference runs without autocast)
    want, state = reference_run(dim, num_layers, batch, steps, optimizer, lr, seed)
    return got, want, state


@cached  # plain arguments: the reference loop on make_init/make_target's weights, once per grading worker
def reference_run(dim, num_layers, batch, steps, optimizer="sgd", lr=0.01, seed=0, autocast=False):
    with torch.random.fork_rng(devices=[]):  # (the loop seeds the global generator: leave it as it was)
        return reference(make_init(dim, num_layers, seed), make_target(dim, seed), batch, steps, optimizer, lr,
                         seed, autocast=autocast)


@pytest.mark.points(2)
def test_train_sgd_matches_reference(student):
    """train with an SGD optimizer gives the reference loop's losses and final weights (torch.optim.SGD, same batches)"""
    got, want, state = run(student, dim=8, num_layers=2, batch=4, steps=12, optimizer="sgd", lr=0.05)
    what = "train(deep linear model (8, 2 layers), torch.optim.SGD(lr=0.05), batch 4, 12 steps)"
    check_losses(got["losses"], want, what, RTOL)
    assert_equal(got["batches"], 12, f"{what}: get_batch calls (exactly one per step)")
    # mixed_precision and device not given: the defaults, False and "cpu" (a float32 step of the loop's own; the
    # stand-in mixed_precision_step does a float32 step too, so only its calls tell)
    assert_equal([c for c in got["calls"] if c[0] == "step"], [],
                 f"{what} without mixed_precision (default False): calls of mixed_precision_step", kind=list)
    for key, value in state.items():
        assert_tensor(got["state"][key], value, f"{what}: final {key}", rtol=RTOL, atol=1e-7)


@pytest.mark.points(2)
def test_train_adamw_matches_reference(student):
    """train with an AdamW optimizer gives the reference loop's losses (torch.optim.AdamW, same batches)"""
    got, want, _ = run(student, dim=6, num_layers=3, batch=5, steps=10, optimizer="adamw", lr=0.01, seed=1)
    check_losses(got["losses"], want, "train(deep linear model (6, 3 layers), torch.optim.AdamW(lr=0.01), batch 5, "
                 "10 steps)", RTOL)


@pytest.mark.points(1)
def test_train_sets_grads_to_none(student):
    """every step starts its forward pass with no gradients held (zero_grad(set_to_none=True))"""
    got, _, _ = run(student, dim=4, num_layers=1, batch=3, steps=4)
    assert_equal(got["grads_none"], [True] * 4,
                 "whether every p.grad was None when each step's forward pass began (set_to_none=True frees them)")


@pytest.mark.points(1)
def test_train_mixed_precision(student):
    """train(mixed_precision=True) runs each step through mixed_precision_step (or does its bfloat16 step itself)"""
    steps = 6
    got, want, _ = run(student, dim=16, num_layers=2, batch=8, steps=steps, lr=0.05, mixed_precision=True)
    what = "train(..., mixed_precision=True)"
    # mixed_precision_step is a stand-in here (a plain float32 step that records its calls): its own
    # module's tests judge yours; this test judges that the loop hands every step to it ...
    calls = [c[0] for c in got["calls"]].count("step")
    if calls:
        assert_equal(calls, steps, f"{what}: calls of mixed_precision_step in {steps} steps (exactly one per step)")
        dtypes = sorted({c[1] for c in got["calls"] if c[0] == "step"})
        assert_equal(dtypes, ["bfloat16"], f"{what}: the autocast dtype mixed_precision_step was given (bfloat16, "
                     "its default)", kind=list)
        check_losses(got["losses"], want, f"{what}: the losses recorded (the floats mixed_precision_step returned)",
                     RTOL)
        return
    # ... or does exactly what mixed_precision_step does, itself (bfloat16 autocast on x's device)
    autocast, _ = reference_run(16, 2, 8, steps, "sgd", 0.05, 0, autocast=True)
    check_losses(got["losses"], autocast, f"{what}, which never called mixed_precision_step: its own step against "
                 "the reference loop under bfloat16 autocast", RTOL_BF16)


@pytest.mark.points(3)
def test_train_resumes_bit_for_bit(student):
    """a run killed after a checkpoint and resumed by a fresh model reproduces the losses bit for bit"""
    dim, layers, batch, steps, every, kill = 6, 2, 4, 10, 3, 7
    init, other = make_init(dim, layers, 2), make_init(dim, layers, 99)
    got = student.probe("training.resume", init=init, other_init=other, w_true=make_target(dim, 2), dim=dim,
                        num_layers=layers, batch=batch, steps=steps, every=every, kill_at=kill)
    what = f"train for {steps} steps with a checkpoint every {every}, killed before step {kill}, then resumed"
    check_checkpoint_calls(got, what)
    assert_type(got["resumed"], list, what)
    last = kill // every * every
    assert_equal(len(got["resumed"]), steps - last,
                 f"{what}: steps run by the resumed call (it must start from the checkpoint of step {last})")
    for i, (g, w) in enumerate(zip(got["resumed"], got["full"][last:])):
        if g != w:
            raise AssertionError(f"{what}: the resumed loss of step {last + i} is {g!r}, the uninterrupted run's "
                                 f"is {w!r} (bit for bit: the checkpoint must restore the weights, the optimizer "
                                 "state and torch's generator)")
    for key, value in got["full_state"].items():
        assert_tensor(got["resumed_state"][key], value, f"{what}: final {key}")
    assert_equal(got["files"], ["run.pt"], f"{what}: files left in the checkpoint folder")


@pytest.mark.points(1)
def test_train_rejects_bad_arguments(student):
    """train raises ValueError for a negative number of steps or checkpoint interval"""
    student.probe("training.bad_steps", num_steps=0, checkpoint_every=0)  # zero steps: nothing to do
    student.raises("training.bad_steps", "ValueError", num_steps=-1, checkpoint_every=0)
    student.raises("training.bad_steps", "ValueError", num_steps=3, checkpoint_every=-2)


@cached  # the counts depend on the shapes only: computed once per grading worker
def measured_step_flops(batch: int, dim: int, num_layers: int) -> dict[str, int]:
    """One real training step of a deep linear model of torch ops, counted by FlopCounterMode."""
    g = torch.Generator().manual_seed(0)  # (the values do not matter: the counts depend on the shapes)
    ws = [torch.randn(dim, dim, generator=g, requires_grad=True) for _ in range(num_layers)]
    wf = torch.randn(dim, 1, generator=g, requires_grad=True)
    x, y = torch.randn(batch, dim, generator=g), torch.randn(batch, generator=g)
    with FlopCounterMode(display=False) as fwd:
        h = x
        for w in ws:
            h = h @ w
        loss = F.mse_loss((h @ wf).squeeze(-1), y)
    with FlopCounterMode(display=False) as bwd:
        loss.backward()
    forward = fwd.get_flop_counts()["Global"]
    backward = bwd.get_flop_counts()["Global"]
    mm = [torch.ops.aten.mm, torch.ops.aten.mm.default]
    f = sum(int(v) for k, v in forward.items() if k in mm)
    b = sum(int(v) for k, v in backward.items() if k in mm)
    return {"forward": f, "backward": b, "total": f + b}


STEP_CASES = [(2, 64, 2), (1, 8, 0), (5, 16, 3), (3, 7, 1)]


@pytest.mark.points(2)
def test_step_flops_match_a_real_step(student):
    """step_flops equals what FlopCounterMode counts on one real step (and 6·B·P for six_bp)"""
    check_step_flops(student, STEP_CASES)


def check_step_flops(student, cases) -> None:
    got = student.probe("training.step_flops", cases=cases)
    assert_type(got, list, "step_flops results")
    for (batch, dim, layers), g in zip(cases, got):
        what = f"step_flops(batch={batch}, dim={dim}, num_layers={layers})"
        assert_type(g, dict, what)
        want = measured_step_flops(batch, dim, layers)
        params = layers * dim * dim + dim  # counted from the shapes: every parameter is a matmul weight
        for key in ("forward", "backward", "total"):
            assert_equal(g.get(key), want[key], f"{what}[{key!r}] (FlopCounterMode on a real step)")
        # (cruncher_num_parameters is a stand-in giving this P in the probe: cruncher's tests judge yours)
        assert_equal(g.get("six_bp"), 6 * batch * params, f"{what}['six_bp'] (6·B·P)")


@pytest.mark.points(2)
def test_napkin_numbers(student):
    """GPT-3's feed-forward weight in bytes, what 8 H100s deliver in a week, elementwise FLOPs"""
    weights = [(12288, 49152, "float32"), (12288, 49152, "bfloat16"), (3, 5, "float8_e4m3fn"), (7, 2, "float64"),
               (3, 5, "int8"), (4, 2, "int64"), (2, 3, "bool")]  # any dtype: integer ones have no finfo
    deliveries = [(8, 7, 989.5e12), (8, 14, 989.5e12), (1, 0.5, 67e12, 0.5)]
    elementwise = [(12288, 49152), (3, 4, 2)]
    got = student.probe("training.napkin", weights=weights, deliveries=deliveries, elementwise=elementwise)
    sizes = {"float32": 4, "bfloat16": 2, "float8_e4m3fn": 1, "float64": 8, "int8": 1, "int64": 8, "bool": 1}
    for (r, c, d), g in zip(weights, got["weight_bytes"]):
        assert_equal(g, r * c * sizes[d], f"weight_bytes({r}, {c}, torch.{d})")
    assert got["weight_bytes"][0] == 2_415_919_104, "GPT-3's 12288 x 49152 float32 matrix is 2.42e9 bytes (2.25 GiB)"
    for case, g in zip(deliveries, got["flops_delivered"]):
        gpus, days, rate, *rest = case
        want = gpus * rate * (rest[0] if rest else 1.0) * days * 86400
        assert_close(g, want, f"flops_delivered{case}", rel=1e-12)  # one product: exact up to rounding
    assert_close(got["flops_delivered"][0], 4.79e21, "8 H100s for the lecture's 7 days", rel=1e-3)
    assert_equal(got["elementwise_flops"], [12288 * 49152, 2 * 3 * 4], "elementwise_flops cases", kind=list)


# -- GPU -------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.points(1)
def test_training_memory_on_cuda(student):
    """on the GPU, training with AdamW peaks near the lecture's accounting 4·(P + activations + grads + 2P)"""
    dim, layers, batch = 1024, 4, 256
    init, w_true = make_init(dim, layers, 3), make_target(dim, 3)
    got = student.probe("training.cuda_memory", init=init, w_true=w_true, dim=dim, num_layers=layers, batch=batch,
                        steps=3)
    params = layers * dim * dim + dim
    predicted = 4 * (params + batch * dim * layers + params + 2 * params)  # the lecture's accounting, fp32
    measured = got["peak"] - got["base"]
    # The accounting leaves out the batch, the loss, the activation gradients of the backward pass,
    # the optimizer's per-parameter temporaries and the allocator's 512-byte block rounding: a few
    # MB on top of ~70 MB here.  Keeping an extra copy of the parameters or the gradients adds 25%.
    assert 0.9 * predicted <= measured <= 1.2 * predicted, (
        f"peak CUDA memory while training Cruncher({dim}, {layers}) with AdamW on batch {batch}: {measured / 2**20:.1f} "
        f"MiB, the lecture's accounting says {predicted / 2**20:.1f} MiB (accepted: 0.9x to 1.2x)")


#: step_mfu's default num_steps (its docstring's signature)
STEP_MFU_DEFAULT_STEPS = 10


@pytest.mark.gpu
@pytest.mark.points(1)
def test_step_mfu_on_cuda(student):
    """on the GPU, step_mfu with its defaults (10 steps, "cuda") reports a plausible MFU (above 0, at most 1) consistent with its own numbers"""
    dim, layers, batch = 2048, 4, 1024
    init, w_true = make_init(dim, layers, 4), make_target(dim, 4)
    # num_steps and device not given: the defaults, 10 steps on "cuda"
    got = student.probe("training.mfu", init=init, w_true=w_true, dim=dim, num_layers=layers, batch=batch, steps=None)
    report = got["report"]
    assert_type(report, dict, "step_mfu's report")
    # one untimed warm-up step, then the num_steps timed ones: one get_batch call each
    assert_equal(got["batches"], STEP_MFU_DEFAULT_STEPS + 1, "get_batch calls made by step_mfu without num_steps "
                 f"(1 warm-up step + the default {STEP_MFU_DEFAULT_STEPS} timed steps)")
    params = layers * dim * dim + dim
    flops = 6 * batch * params - 2 * batch * dim * dim  # the rule test_step_flops_match_a_real_step checks
    assert_close(report["flops_per_step"], flops, "step_mfu's flops_per_step", rel=1e-9)
    assert 0 < report["mfu"] <= 1.0, (f"step_mfu reports an MFU of {report['mfu']:.3g}: above 1 means the clock "
                                      "stopped before the GPU finished (synchronize before reading it)")
    assert_close(report["mfu"], flops / report["seconds_per_step"] / report["peak"],
                 "mfu = flops_per_step / seconds_per_step / peak", rel=1e-6)
