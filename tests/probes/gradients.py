"""Probes for the `gradients` module.

Inputs are built from seeds by `_inputs` (the tests build the same tensors and ask autograd,
on torch's own ops, for the expected gradients); the probes return only the student's results
and, for the by-hand gradients, the names of the autograd entry points (`grader.rules.tripwire`) the
student's call reached: observations, never verdicts.
"""

from __future__ import annotations

import contextlib

import torch

from grader.rules import tripwire
from tests.probes._tensors import dtype_of


def _inputs(shapes: list[list[int]], seed: int, dtype: str = "float64") -> list[torch.Tensor]:
    """Seeded standard-normal tensors of the given shapes (identical on both sides)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=torch.float64).to(dtype_of(dtype)) for shape in shapes]


def _regression_shapes(n: int | None, d: int) -> list[list[int]]:
    """x, w, y shapes: one example (n None) or a batch of n."""
    return [[d], [d], []] if n is None else [[n, d], [d], [n]]


def linear_regression_grad(impl, n, d, seed, dtype="float64", inference=False):
    """The student's dL/dw on seeded inputs, the tripwires (autograd entry points) its call reached, and
    the inputs as the call left them."""
    x, w, y = _inputs(_regression_shapes(n, d), seed, dtype)
    with tripwire.watch(autograd_graph=True) as reached:
        with torch.inference_mode() if inference else contextlib.nullcontext():
            grad = impl.gradients.linear_regression_grad(x, w, y)
    return {"grad": grad.clone() if type(grad) is torch.Tensor else grad, "reached": sorted(reached),
            "inputs": [t.clone() for t in (x, w, y)]}  # as the call left them


def linear_regression_lecture(impl):
    """The lecture's example: x = [1, 2, 3], w = [1, 1, 1], y = 5."""
    x, w, y = torch.tensor([1.0, 2, 3]), torch.tensor([1.0, 1, 1]), torch.tensor(5.0)
    grad = impl.gradients.linear_regression_grad(x, w, y)
    return grad.clone() if type(grad) is torch.Tensor else grad


def two_layer_grads(impl, B, D, H, K, seed, dtype="float64", inference=False):
    """The student's (dL/dw1, dL/dw2) on seeded inputs (and the type of what it returned), the tripwires
    its call reached, and the inputs as the call left them."""
    x, w1, w2 = _inputs([[B, D], [D, H], [H, K]], seed, dtype)
    with tripwire.watch(autograd_graph=True) as reached:
        with torch.inference_mode() if inference else contextlib.nullcontext():
            grads = impl.gradients.two_layer_grads(x, w1, w2)
    kind = type(grads).__name__
    if isinstance(grads, (tuple, list)):
        grads = [g.clone() if type(g) is torch.Tensor else g for g in grads]
    return {"grads": grads, "kind": kind, "reached": sorted(reached),
            "inputs": [t.clone() for t in (x, w1, w2)]}  # as the call left them


def _matmul_upstreams(m: int, p: int, seed: int, dtype: torch.dtype, one_hot: bool) -> list[torch.Tensor]:
    """The upstream gradients fed to backward: one seeded random (m, p) tensor, then (if one_hot)
    every one-hot (m, p) tensor, whose gradients are the Jacobian's columns (identical on both sides)."""
    (upstream,) = _inputs([[m, p]], seed + 7919, "float64")
    out = [upstream.to(dtype)]
    if one_hot:
        for k in range(m * p):
            e = torch.zeros(m * p, dtype=dtype)
            e[k] = 1
            out.append(e.reshape(m, p))
    return out


def matmul_function_backward(impl, cases):
    """For each case {m, n, p, seed, a_grad, b_grad, one_hot}: MatmulFunction.apply(a, b) on seeded
    float64 a (m, n), b (n, p), then one backward per upstream gradient of `_matmul_upstreams`
    (graph retained): the output and, per upstream, a.grad and b.grad (None when autograd left none)."""
    results = []
    for case in cases:
        m, n, p, seed = case["m"], case["n"], case["p"], case["seed"]
        a, b = _inputs([[m, n], [n, p]], seed)
        a.requires_grad_(case.get("a_grad", True))
        b.requires_grad_(case.get("b_grad", True))
        out = impl.gradients.MatmulFunction.apply(a, b)
        a_grads, b_grads = [], []
        for upstream in _matmul_upstreams(m, p, seed, a.dtype, case.get("one_hot", True)):
            a.grad = None
            b.grad = None
            out.backward(upstream, retain_graph=True)
            a_grads.append(None if a.grad is None else a.grad.detach().clone())
            b_grads.append(None if b.grad is None else b.grad.detach().clone())
        results.append({"out": out.detach().clone() if type(out) is torch.Tensor else out,
                        "a_grads": a_grads, "b_grads": b_grads})
    return results


def matmul_inplace_after_forward(impl, m, n, p, seed, modify):
    """MatmulFunction.apply(a, b), then `modify` ("a" or "b") is changed in place (under no_grad,
    as an optimizer step would) before backward.  Returns (a.grad, b.grad); if autograd refuses
    (a saved tensor was modified), its exception comes back as data."""
    a, b = _inputs([[m, n], [n, p]], seed)
    (upstream,) = _matmul_upstreams(m, p, seed, a.dtype, one_hot=False)
    a.requires_grad_(True)
    b.requires_grad_(True)
    out = impl.gradients.MatmulFunction.apply(a, b)
    with torch.no_grad():
        (a if modify == "a" else b).mul_(-2.0).add_(0.5)
    out.backward(upstream)
    return [None if a.grad is None else a.grad.detach().clone(), None if b.grad is None else b.grad.detach().clone()]
