"""Hidden tests for `gradients`: other shapes and seeds, float32, inference mode, partial gradients."""

from __future__ import annotations

import pytest

from tests.public.test_gradients import (assert_backward_by_hand, assert_no_autograd, check_inplace, check_matmul,
                                         check_regression, check_two_layer)


@pytest.mark.points(1)
def test_linear_regression_grad_more_cases(student):
    """linear_regression_grad on other shapes (a square batch too), in float32, and under torch.inference_mode (so no autograd)"""
    reached = [check_regression(student, n, d, seed, dtype, inference) for n, d, seed, dtype, inference in
               [(None, 1, 10, "float64", False), (1, 4, 11, "float64", True), (32, 9, 12, "float32", False),
                (5, 2, 13, "float64", True), (None, 6, 14, "float32", True),
                (4, 4, 15, "float64", False)]]  # a square batch (n == d): no telling a batch from one example by shape
    assert_no_autograd(student, "linear_regression_grad", reached)


@pytest.mark.points(2)
def test_two_layer_grads_more_cases(student):
    """two_layer_grads on other shapes (B=1, K=1, wide), and under torch.inference_mode (so no autograd)"""
    reached = [check_two_layer(student, 1, 4, 2, 5, seed=20),
               check_two_layer(student, 12, 6, 9, 1, seed=21, inference=True),
               check_two_layer(student, 3, 32, 16, 8, seed=22, dtype="float32", inference=True)]
    assert_no_autograd(student, "two_layer_grads", reached)


@pytest.mark.points(1)
def test_matmul_function_partial_grads(student):
    """MatmulFunction when only one input requires a gradient (whole Jacobian), on other shapes, and with
    another in-place change after forward"""
    check_matmul(student, [(4, 3, 5, 30, True, False, True), (3, 2, 6, 31, False, True, True),
                           (7, 1, 3, 32, True, True, True), (2, 9, 1, 33, True, True, True)])
    check_inplace(student, 5, 2, 3, 34)
    assert_backward_by_hand(student)
