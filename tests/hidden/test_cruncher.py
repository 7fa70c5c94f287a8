"""Hidden tests for `cruncher`: other fan-ins and seeds, other depths, more models and memory cases."""

from __future__ import annotations

import pytest

from grader.expect import assert_cases
from tests.public.test_cruncher import (check_cruncher_forward, check_cruncher_state, check_linear_init,
                                        check_linear_seeds, memory_want)


@pytest.mark.points(2)
def test_linear_initialisation_other_shapes(student):
    """Linear's initialisation statistics hold for other fan-ins and seeds (100→400, 1000→30)"""
    check_linear_init(student, 100, 400, seeds=[5])
    check_linear_init(student, 1000, 30, seeds=[6])
    check_linear_seeds(student, 30, 3, seeds=[11, 12, 13, 11])


@pytest.mark.points(1)
def test_cruncher_other_depths(student):
    """Cruncher with no square layer, and with five: state-dict keys, shapes and the forward chain"""
    check_cruncher_state(student, 48, 0)
    check_cruncher_forward(student, 48, 0, batch=4, seed=7)
    check_cruncher_state(student, 20, 5)
    check_cruncher_forward(student, 20, 5, batch=9, seed=8)
    check_cruncher_forward(student, 6, 0, batch=1, seed=9)
    check_cruncher_forward(student, 6, 6, batch=1, seed=10)


@pytest.mark.points(1)
def test_get_num_parameters_conv(student):
    """get_num_parameters on a conv + GroupNorm + linear model and on bigger Crunchers"""
    from tests.probes.cruncher import _torch_model

    got = student.probe("cruncher.num_parameters_torch", kinds=["conv"])
    assert_cases(got, [sum(p.numel() for p in _torch_model("conv").parameters())], "get_num_parameters",
                 lambda i: "a conv + GroupNorm + linear torch model")
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
    ValueError for a capitalised or unknown name"""
    cases = [(1, 1, 1, "sgd"), (64, 256, 2, "adam"), (7, 5, 0, "adagrad"), (3, 8, 2, "rmsprop"),
             (3, 8, 2, "adamw")]
    big = [(33, 4097, 31, "adamw"), (129, 8191, 3, "rmsprop")]  # 8e9+ bytes, not multiples of 1024: exact ints only
    got = student.probe("cruncher.cruncher_memory_bytes", cases=cases + big)
    assert_cases(got, [memory_want(*c) for c in cases] + [memory_closed_form(*c) for c in big],
                 "cruncher_memory_bytes", lambda i: "batch {}, dim {}, num_layers {}, optimizer {!r}".format(
                     *(cases + big)[i]))
    for name in ("Adam", "momentum"):
        student.raises("cruncher.cruncher_memory_bytes_one", "ValueError", batch=2, dim=4, num_layers=1, optimizer=name)
