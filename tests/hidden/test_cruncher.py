"""Hidden tests for `cruncher`: other fan-ins and seeds, other depths, more models and memory cases."""

from __future__ import annotations

import pytest

from grader.expect import assert_cases
from tests.public.test_cruncher import check_cruncher_forward, check_cruncher_state, check_linear_init, memory_want


@pytest.mark.points(2)
def test_linear_initialisation_other_shapes(student):
    """Linear's initialisation statistics hold for other fan-ins and seeds (100→400, 1000→30)"""
    check_linear_init(student, 100, 400, seeds=[5])
    check_linear_init(student, 1000, 30, seeds=[6])


@pytest.mark.points(1)
def test_cruncher_other_depths(student):
    """Cruncher with no square layer, and with five: state-dict keys, shapes and the forward chain"""
    check_cruncher_state(student, 48, 0)
    check_cruncher_forward(student, 48, 0, batch=4, seed=7)
    check_cruncher_state(student, 20, 5)
    check_cruncher_forward(student, 20, 5, batch=9, seed=8)


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


@pytest.mark.points(1)
def test_memory_more_cases(student):
    """cruncher_memory_bytes for other sizes and every optimizer; ValueError for a capitalised or unknown name"""
    cases = [(1, 1, 1, "sgd"), (128, 4096, 32, "adam"), (7, 5, 0, "adagrad"), (3, 8, 2, "rmsprop"),
             (3, 8, 2, "adamw")]
    got = student.probe("cruncher.cruncher_memory_bytes", cases=cases)
    assert_cases(got, [memory_want(*c) for c in cases], "cruncher_memory_bytes",
                 lambda i: "batch {}, dim {}, num_layers {}, optimizer {!r}".format(*cases[i]))
    for name in ("Adam", "momentum"):
        student.raises("cruncher.cruncher_memory_bytes_one", "ValueError", batch=2, dim=4, num_layers=1, optimizer=name)
