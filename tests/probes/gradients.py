"""Probes for the `gradients` module.

Inputs are built from seeds by `_inputs` (the tests build the same tensors and ask autograd
for the expected gradients); the probes return only the student's results.
"""

from __future__ import annotations

import contextlib

import torch

from tests.probes._tensors import dtype_of


def _inputs(shapes: list[list[int]], seed: int, dtype: str = "float64") -> list[torch.Tensor]:
    """Seeded standard-normal tensors of the given shapes (identical on both sides)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=torch.float64).to(dtype_of(dtype)) for shape in shapes]


def _regression_shapes(n: int | None, d: int) -> list[list[int]]:
    """x, w, y shapes: one example (n None) or a batch of n."""
    return [[d], [d], []] if n is None else [[n, d], [d], [n]]


def linear_regression_grad(impl, n, d, seed, dtype="float64", inference=False):
    x, w, y = _inputs(_regression_shapes(n, d), seed, dtype)
    with torch.inference_mode() if inference else contextlib.nullcontext():
        grad = impl.gradients.linear_regression_grad(x, w, y)
    return grad.clone() if type(grad) is torch.Tensor else grad


def linear_regression_lecture(impl):
    """The lecture's example: x = [1, 2, 3], w = [1, 1, 1], y = 5."""
    x, w, y = torch.tensor([1.0, 2, 3]), torch.tensor([1.0, 1, 1]), torch.tensor(5.0)
    return impl.gradients.linear_regression_grad(x, w, y).clone()


def two_layer_grads(impl, B, D, H, K, seed, dtype="float64", inference=False):
    x, w1, w2 = _inputs([[B, D], [D, H], [H, K]], seed, dtype)
    with torch.inference_mode() if inference else contextlib.nullcontext():
        grads = impl.gradients.two_layer_grads(x, w1, w2)
    return [g.clone() if type(g) is torch.Tensor else g for g in grads] if isinstance(grads, tuple) else grads


def matmul_gradcheck(impl, m, n, p, seed):
    """torch.autograd.gradcheck on MatmulFunction.apply in float64 (raises with details on failure)."""
    a, b = _inputs([[m, n], [n, p]], seed)
    a.requires_grad_(True)
    b.requires_grad_(True)
    return bool(torch.autograd.gradcheck(impl.gradients.MatmulFunction.apply, (a, b)))


def matmul_function_grads(impl, m, n, p, seed, a_grad=True, b_grad=True, dtype="float64"):
    """(output, a.grad, b.grad) after backpropagating a seeded upstream gradient through MatmulFunction."""
    a, b, upstream = _inputs([[m, n], [n, p], [m, p]], seed, dtype)
    a.requires_grad_(a_grad)
    b.requires_grad_(b_grad)
    out = impl.gradients.MatmulFunction.apply(a, b)
    out.backward(upstream)
    return [out.detach().clone(), None if a.grad is None else a.grad.clone(),
            None if b.grad is None else b.grad.clone()]
