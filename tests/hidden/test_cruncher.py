"""Hidden tests for `cruncher`: other fan-ins and seeds, other depths, more models and memory cases."""

from __future__ import annotations

import pytest
import torch

from grader.testing.expect import assert_cases, assert_tensor
from tests.public.test_cruncher import (check_cruncher_forward, check_cruncher_state, check_linear_init,
                                        check_linear_seeds, memory_want)


@pytest.mark.points(2)
def test_linear_initialisation_other_shapes(student):
    """Linear's initialisation statistics hold for other fan-ins and seeds (100→400, 1000→30, 2→32768)"""
    check_linear_init(student, 100, 400, seeds=[5])
    check_linear_init(student, 1000, 30, seeds=[6])
    check_linear_init(student, 2, 32768, seeds=[7])  # fan-in 2: σ = 1/√2 (1/√3 would be 0.82σ)
    check_linear_seeds(student, 30, 3, seeds=[11, 12, 13, 11])


@pytest.mark.points(1)
def test_cruncher_other_depths(student):
    """Cruncher with no square layer, and with five: state-dict keys, shapes and the forward chain; seeds reproduce it and gradients reach every weight"""
    check_cruncher_state(student, 48, 0)
    check_cruncher_forward(student, 48, 0, batch=4, seed=7)
    check_cruncher_state(student, 20, 5)
    check_cruncher_forward(student, 20, 5, batch=9, seed=8)
    check_cruncher_forward(student, 6, 0, batch=1, seed=9)
    check_cruncher_forward(student, 6, 6, batch=1, seed=10)
    check_cruncher_seeds(student, 12, 3, seeds=[21, 22, 21])
    check_cruncher_gradients(student, 10, 3, batch=6, seed=23)
    check_cruncher_gradients(student, 7, 0, batch=2, seed=24)


def check_cruncher_seeds(student, dim: int, num_layers: int, seeds: list[int]) -> None:
    """torch.manual_seed(s) then Cruncher(...): the same seed, the same weights; other seeds, other weights
    (no seed of its own inside, per layer or per model)."""
    states = [student.probe("cruncher.cruncher_forward", dim=dim, num_layers=num_layers, batch=1, seed=seed)[0]
              for seed in seeds]
    for i in range(len(seeds)):
        for j in range(i + 1, len(seeds)):
            same = states[i].keys() == states[j].keys() and all(
                states[i][k].shape == states[j][k].shape and torch.equal(states[i][k], states[j][k]) for k in states[i])
            assert same == (seeds[i] == seeds[j]), (
                f"Cruncher({dim}, {num_layers}) after torch.manual_seed({seeds[i]}) and torch.manual_seed({seeds[j]}): "
                + ("different weights for one seed" if seeds[i] == seeds[j] else "the same weights for two seeds")
                + ": draw every layer from PyTorch's default generator, without seeding it yourself")


def check_cruncher_gradients(student, dim: int, num_layers: int, batch: int, seed: int) -> None:
    """model(x).backward(g) gives every weight autograd's gradient of the chain (weights that train)."""
    got = student.probe("cruncher.cruncher_gradients", dim=dim, num_layers=num_layers, batch=batch, seed=seed)
    what = f"Cruncher({dim}, {num_layers}) on x of shape {(batch, dim)}"
    assert got["grads"] is not None, f"{what}: {got['why']}: its weights could never be trained"
    keys = [f"layers.{i}.weight" for i in range(num_layers)] + ["final.weight"]
    leaves = {k: got["state"][k].clone().requires_grad_(True) for k in keys}
    y = got["x"]
    for k in keys:
        y = y @ leaves[k]
    y.squeeze(-1).backward(got["upstream"])
    for k in keys:
        g = got["grads"].get(k)
        assert g is not None, f"{what}: no gradient reached {k} (is the forward pass cut from the weights?)"
        # float32, the same chain: autograd's own rounding differences only
        assert_tensor(g, leaves[k].grad, f"{what}: {k}.grad after backward (expected: autograd's through the chain)",
                      rtol=1e-4, atol=1e-5)


@pytest.mark.points(1)
def test_get_num_parameters_conv(student):
    """get_num_parameters on a conv + GroupNorm + linear model, a model without parameters, one on the meta device, and bigger Crunchers"""
    from tests.probes.cruncher import _torch_model

    kinds = {"conv": "a conv + GroupNorm + linear torch model", "no_parameters": "a model without parameters",
             "meta": "a model built on the meta device (no memory, every data_ptr() 0)"}
    got = student.probe("cruncher.num_parameters_torch", kinds=list(kinds))
    assert_cases(got, [sum(p.numel() for p in _torch_model(k).parameters()) for k in kinds], "get_num_parameters",
                 lambda i: list(kinds.values())[i])
    cases = [(33, 3), (128, 1)]
    got = student.probe("cruncher.num_parameters_cruncher", cases=cases)
    assert_cases(got, [layers * dim * dim + dim for dim, layers in cases], "get_num_parameters(Cruncher)",
                 lambda i: f"Cruncher{cases[i]}")


def memory_closed_form(batch: int, dim: int, layers: int, optimizer: str) -> int:
    """The handout's formula (hidden: it never ships), for sizes too big to build a real model:
    4 bytes × (P + activations + P + state·P), P = L·D² + D, activations B·D·L."""
    params = layers * dim * dim + dim
    state = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    return 4 * (params + batch * dim * layers + params + state * params)


@pytest.mark.points(1)
def test_memory_more_cases(student):
    """cruncher_memory_bytes for other sizes and every optimizer, a model too big to build (exact int);
    ValueError for a capitalised, unknown, empty, padded or partial name"""
    cases = [(1, 1, 1, "sgd"), (64, 256, 2, "adam"), (7, 5, 0, "adagrad"), (3, 8, 2, "rmsprop"),
             (3, 8, 2, "adamw")]
    big = [(33, 4097, 31, "adamw"), (129, 8191, 3, "rmsprop")]  # 8e9+ bytes, not multiples of 1024: exact ints only
    got = student.probe("cruncher.cruncher_memory_bytes", cases=cases + big)
    assert_cases(got, [memory_want(*c) for c in cases] + [memory_closed_form(*c) for c in big],
                 "cruncher_memory_bytes", lambda i: "batch {}, dim {}, num_layers {}, optimizer {!r}".format(
                     *(cases + big)[i]))
    for name in ("Adam", "momentum", "adamax", "", " adam", "sgd ", "grad"):
        student.raises("cruncher.cruncher_memory_bytes_one", "ValueError", batch=2, dim=4, num_layers=1, optimizer=name)
