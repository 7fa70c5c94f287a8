"""Hidden tests for `gradients`: other shapes and seeds, float32, inference mode, partial gradients."""

from __future__ import annotations

import pytest

from grader.expect import assert_tensor, assert_type
from tests.public.test_gradients import check_two_layer, matmul_want, regression_want


@pytest.mark.points(1)
def test_linear_regression_grad_more_cases(student):
    """linear_regression_grad on other shapes, in float32, and under torch.inference_mode (so no autograd)"""
    for n, d, seed, dtype, inference in [(None, 1, 10, "float64", False), (1, 4, 11, "float64", True),
                                         (32, 9, 12, "float32", False), (5, 2, 13, "float64", True)]:
        got = student.probe("gradients.linear_regression_grad", n=n, d=d, seed=seed, dtype=dtype, inference=inference)
        rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-4, 1e-5)
        assert_tensor(got, regression_want(n, d, seed, dtype), f"linear_regression_grad with x of shape "
                      f"{(d,) if n is None else (n, d)}, {dtype}{' under inference_mode' if inference else ''}",
                      rtol=rtol, atol=atol)


@pytest.mark.points(2)
def test_two_layer_grads_more_cases(student):
    """two_layer_grads on other shapes (B=1, K=1, wide), and under torch.inference_mode (so no autograd)"""
    check_two_layer(student, 1, 4, 2, 5, seed=20)
    check_two_layer(student, 12, 6, 9, 1, seed=21, inference=True)
    check_two_layer(student, 3, 32, 16, 8, seed=22, dtype="float32", inference=True)


@pytest.mark.points(1)
def test_matmul_function_partial_grads(student):
    """MatmulFunction works when only one input requires a gradient, and on other shapes (gradcheck)"""
    for m, n, p, seed, a_grad, b_grad in [(4, 3, 5, 30, True, False), (3, 2, 6, 31, False, True)]:
        got = student.probe("gradients.matmul_function_grads", m=m, n=n, p=p, seed=seed, a_grad=a_grad, b_grad=b_grad)
        assert_type(got, list, "MatmulFunction results")
        out, a_want, b_want = matmul_want(m, n, p, seed)
        assert_tensor(got[0], out, f"MatmulFunction a @ b for {(m, n)} @ {(n, p)}", rtol=1e-9, atol=1e-12)
        for name, needed, g, want in (("a.grad", a_grad, got[1], a_want), ("b.grad", b_grad, got[2], b_want)):
            if needed:
                assert_tensor(g, want, f"MatmulFunction {name} for {(m, n)} @ {(n, p)} with only {name[0]} "
                              "requiring a gradient", rtol=1e-9, atol=1e-12)
            else:
                assert g is None, f"{name} should stay None (it does not require a gradient)"
    for m, n, p, seed in [(7, 1, 3, 32), (2, 9, 1, 33)]:
        ok = student.probe("gradients.matmul_gradcheck", m=m, n=n, p=p, seed=seed)
        assert ok is True, f"gradcheck on MatmulFunction with a {(m, n)} @ {(n, p)} returned {ok!r}"
