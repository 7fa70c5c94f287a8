"""Public tests for `cruncher`: initialisation statistics (with tolerances derived from the
sample size), the model's structure and forward pass (recomputed here from its own state dict),
parameter counts (from torch) and the lecture's memory accounting (measured on an equivalent
torch model and optimizer on the meta device)."""

from __future__ import annotations

import math

import pytest
import torch

from grader.testing.expect import assert_cases, assert_equal, assert_tensor, assert_type
from grader.testing.reference import reference

# Std of a standard normal truncated to [-3, 3]: sqrt(1 - 2·3·φ(3) / (2Φ(3) - 1)) ≈ 0.98659.
TRUNC3_STD = math.sqrt(1 - 6 * math.exp(-4.5) / math.sqrt(2 * math.pi) / math.erf(3 / math.sqrt(2)))
# Fraction of that truncated normal beyond ±2σ: (P(|z| > 2) - P(|z| > 3)) / P(|z| < 3) ≈ 0.0429.
TAIL2 = (math.erfc(2 / math.sqrt(2)) - math.erfc(3 / math.sqrt(2))) / math.erf(3 / math.sqrt(2))
SIGMAS = 6  # every statistical check sits 6 standard errors out: false-failure probability < 1e-8


def check_linear_init(student, input_dim: int, output_dim: int, seeds: list[int]) -> None:
    """Linear(input_dim, output_dim)'s weight: a Parameter of shape (in, out) whose entries look
    like N(0, σ²) truncated at ±3σ, σ = 1/√input_dim.

    Statistics (N entries per seed, seeds fixed so the test is deterministic; the tolerances
    below say how unlikely a correct implementation is to fail with another seed):
    * std: the relative standard error of a sample std is sqrt((κ - 1) / 4N), κ the kurtosis
      (3 for a normal, 2.85 for the ±3σ-truncated one), so at most 1/sqrt(2N).  Accept any std
      from the truncated normal's (0.9866σ, the lecture's `trunc_normal_(std=σ, a=-3σ, b=3σ)`)
      to σ itself, widened by 6 standard errors.  Wrong scales (std 1, std 1/in, std 1/√out
      for in ≠ out) are off by factors, a ±2σ or ±2.5σ cut gives 0.88σ or 0.95σ.
    * mean: |mean| ≤ 6σ/√N.
    * truncation: no entry beyond 3σ (plus float32 rounding); an untruncated normal puts
      0.27% of N ≥ 16384 entries (≥ 44 expected, P(none) < 1e-19) there.
    * shape: about 4.3% of entries beyond 2σ (binomial standard error sqrt(p(1-p)/N)), which a
      uniform distribution with the right std (none beyond 1.73σ) fails.
    """
    got = student.probe("cruncher.linear_weights", input_dim=input_dim, output_dim=output_dim, seeds=seeds)
    assert_type(got, list, "Linear weights")
    sigma = 1 / math.sqrt(input_dim)
    what = f"Linear({input_dim}, {output_dim}).weight"
    for seed, item in zip(seeds, got, strict=True):
        w = item["weight"]
        assert_type(w, torch.Tensor, what)
        assert tuple(w.shape) == (input_dim, output_dim), (
            f"{what}: expected shape (input_dim, output_dim) = {(input_dim, output_dim)}, got {tuple(w.shape)}")
        assert w.dtype == torch.float32, f"{what}: expected float32, got {w.dtype}"
        assert item["is_parameter"] is True, f"{what} must be an nn.Parameter"
        assert item["requires_grad"] is True, f"{what} must require a gradient (a frozen weight never trains)"
        assert item["parameters"] == ["weight"] and item["buffers"] == [], (
            f"Linear must have exactly one parameter named 'weight' and no buffers; got parameters "
            f"{item['parameters']}, buffers {item['buffers']}")
        w = w.double().flatten()
        n = w.numel()
        se = 1 / math.sqrt(2 * n)
        std = w.std().item() / sigma
        assert TRUNC3_STD - SIGMAS * se <= std <= 1 + SIGMAS * se, (
            f"{what} (seed {seed}): expected entries of std ≈ σ = 1/√{input_dim} = {sigma:.4g} (between "
            f"{TRUNC3_STD - SIGMAS * se:.3f}σ and {1 + SIGMAS * se:.3f}σ), got {std:.4f}σ")
        mean = w.mean().item() / sigma
        assert abs(mean) <= SIGMAS / math.sqrt(n), f"{what} (seed {seed}): expected mean ≈ 0, got {mean:.4f}σ"
        biggest = w.abs().max().item() / sigma
        assert biggest <= 3 * (1 + 1e-5), (
            f"{what} (seed {seed}): expected no entry beyond 3σ (truncation at ±3/√{input_dim}), "
            f"got one at {biggest:.3f}σ")
        # A normal *clamped* to ±3σ (not truncated) piles its 0.27% tail onto ±3σ exactly.  A truncated
        # normal puts N·2φ(3)·0.001/P(|z|<3) ≈ 8.9e-6·N entries (λ ≤ 0.6 here) within 0.001σ of the
        # cut: allow λ + 6√λ + 4 (Poisson tail < 1e-8); a clamp puts ≥ 0.27%·N (≥ 44) there.
        edge = int((w.abs() > (3 - 1e-3) * sigma).sum())
        lam = n * 2 * math.exp(-4.5) / math.sqrt(2 * math.pi) * 1e-3 / math.erf(3 / math.sqrt(2))
        allowed = math.ceil(lam + 6 * math.sqrt(lam)) + 4
        assert edge <= allowed, (
            f"{what} (seed {seed}): {edge} of {n} entries sit at the cut-off ±3σ (expected about {lam:.1f}): "
            "entries beyond 3σ must be redrawn (truncated normal, e.g. nn.init.trunc_normal_), not clamped")
        # Exact zeros: a continuous draw gives none (float32 spacing near 0 makes even one unlikely);
        # outliers set to 0 instead of redrawn give 0.27% of N.
        zeros = int((w == 0).sum())
        assert zeros <= 2, (f"{what} (seed {seed}): {zeros} of {n} entries are exactly 0: entries beyond 3σ must be "
                            "redrawn from the truncated normal, not zeroed")
        # The truncated normal reaches the cut: N·P(2.95σ < |z| < 3σ)/P(|z| < 3) ≈ 4.8e-4·N entries lie
        # in that band; where that is ≥ 18 (N ≥ 37500), none there (a cut at ±2.9σ) has P < 2e-8.
        band = n * (math.erf(3 / math.sqrt(2)) - math.erf(2.95 / math.sqrt(2))) / math.erf(3 / math.sqrt(2))
        if band >= 18:
            near = int((w.abs() > 2.95 * sigma).sum())
            assert near > 0, (f"{what} (seed {seed}): no entry beyond 2.95σ (about {band:.0f} expected): the "
                              "truncation is at ±3σ, σ = 1/√input_dim")
        tail = (w.abs() > 2 * sigma).double().mean().item()
        tail_se = math.sqrt(TAIL2 * (1 - TAIL2) / n)
        assert abs(tail - TAIL2) <= SIGMAS * tail_se + 0.005, (
            f"{what} (seed {seed}): a ±3σ-truncated normal has {TAIL2:.1%} of its entries beyond 2σ, got {tail:.2%}")


def check_linear_seeds(student, input_dim: int, output_dim: int, seeds: list[int]) -> None:
    """torch.manual_seed(s) then Linear(...): the same seed gives the same weight (PyTorch's default
    generator), different seeds give different weights (no fixed seed or private generator)."""
    got = student.probe("cruncher.linear_weights", input_dim=input_dim, output_dim=output_dim, seeds=seeds)
    assert_type(got, list, "Linear weights")
    weights = [item["weight"] for item in got]
    for w in weights:
        assert_type(w, torch.Tensor, f"Linear({input_dim}, {output_dim}).weight")
    for i in range(len(seeds)):
        for j in range(i + 1, len(seeds)):
            same = weights[i].shape == weights[j].shape and torch.equal(weights[i], weights[j])
            if seeds[i] == seeds[j]:
                assert same, (f"Linear({input_dim}, {output_dim}): torch.manual_seed({seeds[i]}) twice gave two "
                              "different weights; draw from PyTorch's default generator so the seed reproduces them")
            else:
                assert not same, (f"Linear({input_dim}, {output_dim}): torch.manual_seed({seeds[i]}) and "
                                  f"torch.manual_seed({seeds[j]}) gave the same weight; draw from PyTorch's default "
                                  "generator (no fixed seed, no generator of your own)")


@pytest.mark.points(3)
def test_linear_initialisation(student):
    """Linear's weight is an (in, out) Parameter ~ N(0, 1/in) truncated at ±3σ (std, mean, cut-off and tails
    checked), reproducible with torch.manual_seed and different for different seeds"""
    check_linear_init(student, 512, 128, seeds=[0])
    check_linear_init(student, 64, 256, seeds=[1])
    check_linear_seeds(student, 8, 5, seeds=[3, 4, 3])


@pytest.mark.points(1)
def test_linear_forward(student):
    """Linear(in, out)(x) is x @ weight, for 2-D and 3-D x"""
    for input_dim, output_dim, lead, seed in [(6, 4, [5], 0), (3, 7, [2, 4], 1)]:
        weight, x, y = student.probe("cruncher.linear_forward", input_dim=input_dim, output_dim=output_dim,
                                     lead=lead, seed=seed)
        assert_type(weight, torch.Tensor, "Linear.weight")
        assert tuple(weight.shape) == (input_dim, output_dim), (
            f"Linear({input_dim}, {output_dim}).weight: expected shape {(input_dim, output_dim)}, got {tuple(weight.shape)}")
        assert_tensor(y, x @ weight, f"Linear({input_dim}, {output_dim}) on x of shape {(*lead, input_dim)} "
                      "(expected: x @ weight)", rtol=1e-6, atol=1e-6)


def check_cruncher_state(student, dim: int, num_layers: int) -> None:
    got = student.probe("cruncher.cruncher_state", dim=dim, num_layers=num_layers)
    keys = [f"layers.{i}.weight" for i in range(num_layers)] + ["final.weight"]
    assert_equal(got["keys"], keys, f"Cruncher({dim}, {num_layers}).state_dict() keys")
    assert_equal(got["parameters"], keys, f"Cruncher({dim}, {num_layers}).named_parameters() names")
    shapes = {k: [dim, dim] for k in keys[:-1]} | {"final.weight": [dim, 1]}
    for key in keys:
        assert_equal(got["shapes"][key], shapes[key], f"Cruncher({dim}, {num_layers}) {key} shape")


def check_cruncher_forward(student, dim: int, num_layers: int, batch: int, seed: int) -> None:
    state, x, y = student.probe("cruncher.cruncher_forward", dim=dim, num_layers=num_layers, batch=batch, seed=seed)
    keys = [f"layers.{i}.weight" for i in range(num_layers)] + ["final.weight"]
    assert_equal(sorted(state), sorted(keys), f"Cruncher({dim}, {num_layers}).state_dict() keys")
    want = x
    for i in range(num_layers):
        want = want @ state[f"layers.{i}.weight"]
    want = (want @ state["final.weight"]).squeeze(-1)
    for i in range(num_layers):
        for j in range(i + 1, num_layers):
            assert not torch.equal(state[f"layers.{i}.weight"], state[f"layers.{j}.weight"]), (
                f"Cruncher({dim}, {num_layers}): layers.{i}.weight and layers.{j}.weight are identical; each layer "
                "must be a Linear of its own, drawn separately (not one layer repeated, not re-seeded)")
    # float32, same operations in the same order: differences are rounding at most
    assert_tensor(y, want, f"Cruncher({dim}, {num_layers}) on x of shape {(batch, dim)} (expected: x @ layers.0.weight "
                  "@ ... @ final.weight, squeezed to shape (batch,))", rtol=1e-5, atol=1e-6)


@pytest.mark.points(2)
def test_cruncher_structure_and_forward(student):
    """Cruncher(64, 2) has layers.0.weight, layers.1.weight (64×64) and final.weight (64×1); forward is the chain, shape [batch]"""
    check_cruncher_state(student, 64, 2)
    check_cruncher_forward(student, 64, 2, batch=5, seed=0)
    check_cruncher_forward(student, 16, 4, batch=3, seed=1)
    check_cruncher_forward(student, 8, 3, batch=1, seed=2)  # a batch of one still gives shape (1,)


@pytest.mark.points(1)
def test_cruncher_output_scale(student):
    """the Cruncher's output scale stays O(1) as dim grows from 32 to 512 (the point of the 1/√fan-in rule)"""
    # The output for x ~ N(0, I) has variance |W1 W2 w|², a product of 3 independent factors of
    # mean ≈ 0.973 (truncation) and relative spread √(2/dim) each.  Measured over many seeds the
    # log of the RMS output has standard deviation ≈ 0.25 per seed at dim 32, 0.15 at 128, 0.07
    # at 512; pooling 8, 4 and 1 seeds keeps each within ±0.1, so the band [0.5, 2] (±0.69 in
    # log) is ≥ 7 standard deviations wide.  Without the 1/√fan-in rule the RMS is ~dim^1.5.
    dims, seeds = [32, 128, 512], [list(range(8)), list(range(4)), [0]]
    for dim, s in zip(dims, seeds):
        outputs = student.probe("cruncher.cruncher_outputs", dims=[dim], num_layers=2, batch=256, seeds=s)[0]
        for y in outputs:
            assert_type(y, torch.Tensor, f"Cruncher({dim}, 2) output")
            assert tuple(y.shape) == (256,), f"Cruncher({dim}, 2) output: expected shape (256,), got {tuple(y.shape)}"
        rms = torch.cat(outputs).double().pow(2).mean().sqrt().item()
        assert 0.5 <= rms <= 2.0, (f"Cruncher({dim}, 2) on N(0, 1) inputs: expected outputs of RMS ≈ 1 (between 0.5 "
                                   f"and 2) for every dim, got {rms:.4g}")


@pytest.mark.points(1)
def test_get_num_parameters(student):
    """get_num_parameters counts parameters like torch (frozen ones too, tied ones once, no buffers)"""
    from tests.probes.cruncher import _torch_model

    kinds = ["mlp_batchnorm_frozen", "tied", "no_linear_first"]
    want = [sum(p.numel() for p in _torch_model(k).parameters()) for k in kinds]
    got = student.probe("cruncher.num_parameters_torch", kinds=kinds)
    assert_cases(got, want, "get_num_parameters", lambda i: f"the torch model {kinds[i]!r} (see "
                 "tests/probes/cruncher.py: every parameter counts, frozen or not, shared ones once, buffers never)")
    cases = [(64, 2), (10, 0)]
    got = student.probe("cruncher.num_parameters_cruncher", cases=cases)
    assert_cases(got, [64 * 64 * 2 + 64, 10], "get_num_parameters(Cruncher(dim, num_layers))",
                 lambda i: f"Cruncher{cases[i]}")


TORCH_OPTIMIZERS = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad, "rmsprop": torch.optim.RMSprop,
                    "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


@reference  # plain arguments: torch's own accounting, computed once per grading worker
def memory_want(batch: int, dim: int, layers: int, optimizer: str) -> int:
    """The lecture's accounting, measured on torch itself: an equivalent torch model (bias-free
    nn.Linear layers, float32), one forward and backward pass on a (batch, dim) input and one
    step of the torch optimizer; then the bytes of the parameters, of their gradients, of the
    optimizer's per-value state (the tensors shaped like their parameter; the 0-d `step` counter
    is per tensor, not per value, and the lecture ignores it) and of the activations kept for
    backward (each square layer's output).  Keep the sizes moderate: the model is real."""
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)  # nn.Linear's own initialisation: values do not matter here, only bytes
    square = [torch.nn.Linear(dim, dim, bias=False) for _ in range(layers)]
    final = torch.nn.Linear(dim, 1, bias=False)
    params = [p for m in [*square, final] for p in m.parameters()]
    h = torch.randn(batch, dim, generator=gen)
    activations = []
    for layer in square:
        h = layer(h)
        activations.append(h)
    final(h).squeeze(-1).sum().backward()
    opt = TORCH_OPTIMIZERS[optimizer](params, lr=1e-3)
    opt.step()
    state = sum(t.nbytes for p in params for t in opt.state[p].values()
                if isinstance(t, torch.Tensor) and t.shape == p.shape)
    return (sum(p.nbytes for p in params) + sum(p.grad.nbytes for p in params) + state
            + sum(a.nbytes for a in activations))


@pytest.mark.points(2)
def test_num_parameters_and_memory(student):
    """cruncher_num_parameters = L·D² + D; cruncher_memory_bytes = 4·(params + activations + grads + optimizer state)"""
    cases = [(64, 2), (1024, 8), (3, 0)]
    got = student.probe("cruncher.cruncher_num_parameters", cases=cases)
    assert_cases(got, [layers * dim * dim + dim for dim, layers in cases], "cruncher_num_parameters",
                 lambda i: f"dim {cases[i][0]}, num_layers {cases[i][1]}")
    cases = [(2, 64, 2, "adagrad"), (2, 64, 2, "sgd"), (2, 64, 2, "adam"), (32, 96, 8, "adamw"),
             (8, 16, 3, "rmsprop")]
    got = student.probe("cruncher.cruncher_memory_bytes", cases=cases)
    assert_cases(got, [memory_want(*c) for c in cases], "cruncher_memory_bytes",
                 lambda i: "batch {}, dim {}, num_layers {}, optimizer {!r}".format(*cases[i]))
    got = student.probe("cruncher.cruncher_memory_bytes_default", batch=4, dim=16, num_layers=3)
    assert_cases([got], [memory_want(4, 16, 3, "adagrad")], "cruncher_memory_bytes(4, 16, 3) without an optimizer",
                 lambda i: "the default optimizer (AdaGrad)")
    student.raises("cruncher.cruncher_memory_bytes_one", "ValueError", batch=2, dim=64, num_layers=2,
                   optimizer="lion")
