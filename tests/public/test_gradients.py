"""Public tests for `gradients`: expected gradients come from torch autograd, run here on the
same seeded inputs; MatmulFunction is checked with torch.autograd.gradcheck."""

from __future__ import annotations

import ast

import pytest
import torch

from grader import static
from grader.expect import assert_tensor, assert_type
from tests.probes.gradients import _inputs, _regression_shapes

# Attribute names (x.backward, torch.autograd, w.grad, torch.func, ...) and bare names that mean
# "autograd did it".  Bare `grad` is a fine variable name, so it is only forbidden as an attribute.
AUTOGRAD_ATTRIBUTES = {"backward", "autograd", "grad", "func", "functional", "requires_grad", "requires_grad_",
                       "enable_grad", "set_grad_enabled", "vjp", "jvp", "jacrev", "jacfwd", "vmap"}
AUTOGRAD_NAMES = {"autograd", "functorch", "vjp", "jvp", "jacrev", "jacfwd", "enable_grad", "set_grad_enabled"}
AUTOGRAD_MODULES = ("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional", "torch.func",
                    "functorch")


def autograd_uses(node: ast.AST, tree: ast.AST | None = None) -> list[str]:
    """What in `node` (and in the module's imports) uses autograd or could hide it."""
    attributes = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    bare = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    hits = sorted((attributes & AUTOGRAD_ATTRIBUTES) | (bare & AUTOGRAD_NAMES)
                  | (static.DYNAMIC_ESCAPES & (attributes | bare)))
    if tree is not None:
        hits += sorted(m for m in static.imported_modules(tree) if m.startswith(AUTOGRAD_MODULES))
    return hits


def assert_no_autograd(student, qualname: str) -> None:
    node = student.function("gradients", qualname)
    hits = autograd_uses(node, ast.parse(student.source("gradients")))
    assert not hits, f"{qualname} must compute gradients by hand, without autograd; found {hits}"


# -- linear_regression_grad ------------------------------------------------------------------

def regression_want(n: int | None, d: int, seed: int, dtype: str = "float64") -> torch.Tensor:
    x, w, y = _inputs(_regression_shapes(n, d), seed, dtype)
    w.requires_grad_(True)
    (0.5 * (x @ w - y).pow(2).sum()).backward()
    return w.grad


@pytest.mark.points(2)
def test_linear_regression_grad(student):
    """linear_regression_grad equals autograd on ½Σ(x·w − y)², one example and a batch; no autograd used"""
    got = student.probe("gradients.linear_regression_lecture")
    assert_tensor(got, torch.tensor([1.0, 2.0, 3.0]), "linear_regression_grad(x=[1,2,3], w=[1,1,1], y=5)",
                  atol=1e-6)
    for n, d, seed in [(None, 5, 0), (8, 3, 1), (16, 7, 2)]:
        got = student.probe("gradients.linear_regression_grad", n=n, d=d, seed=seed)
        assert_tensor(got, regression_want(n, d, seed), f"linear_regression_grad with x of shape "
                      f"{(d,) if n is None else (n, d)} (float64; expected: autograd's w.grad)", rtol=1e-9, atol=1e-12)
    assert_no_autograd(student, "linear_regression_grad")


# -- two_layer_grads -------------------------------------------------------------------------

def two_layer_want(B: int, D: int, H: int, K: int, seed: int, dtype: str = "float64") -> list[torch.Tensor]:
    x, w1, w2 = _inputs([[B, D], [D, H], [H, K]], seed, dtype)
    w1.requires_grad_(True)
    w2.requires_grad_(True)
    (x @ w1 @ w2).pow(2).mean().backward()
    return [w1.grad, w2.grad]


def check_two_layer(student, B: int, D: int, H: int, K: int, seed: int, dtype: str = "float64",
                    inference: bool = False) -> None:
    # float64: the hand-written matmuls and autograd's agree to rounding (~1e-15 relative);
    # float32: different association orders differ by ~1e-6 relative.
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-4, 1e-6)
    got = student.probe("gradients.two_layer_grads", B=B, D=D, H=H, K=K, seed=seed, dtype=dtype, inference=inference)
    assert_type(got, list, "two_layer_grads (a tuple of two tensors)")
    assert len(got) == 2, f"two_layer_grads: expected a tuple (grad_w1, grad_w2), got {len(got)} items"
    for name, g, want in zip(("grad_w1", "grad_w2"), got, two_layer_want(B, D, H, K, seed, dtype)):
        assert_tensor(g, want, f"two_layer_grads {name} for x {(B, D)}, w1 {(D, H)}, w2 {(H, K)}, {dtype} "
                      "(expected: autograd's grad)", rtol=rtol, atol=atol)


@pytest.mark.points(3)
def test_two_layer_grads(student):
    """two_layer_grads equals autograd on mean((x @ w1 @ w2)²), computed without autograd"""
    check_two_layer(student, 4, 5, 6, 3, seed=0)
    check_two_layer(student, 8, 3, 3, 3, seed=1)
    check_two_layer(student, 16, 10, 7, 2, seed=2, dtype="float32")
    assert_no_autograd(student, "two_layer_grads")


# -- MatmulFunction --------------------------------------------------------------------------

def assert_backward_by_hand(student) -> None:
    for method in ("MatmulFunction.forward", "MatmulFunction.backward"):
        node = student.function("gradients", method)
        hits = autograd_uses(node)
        assert not hits, f"{method} must not call autograd itself (write the matmuls); found {hits}"


@pytest.mark.points(2)
def test_matmul_function_gradcheck(student):
    """MatmulFunction passes torch.autograd.gradcheck in float64 (square and non-square shapes)"""
    for m, n, p, seed in [(3, 4, 5, 0), (4, 4, 4, 1), (1, 6, 2, 2)]:
        ok = student.probe("gradients.matmul_gradcheck", m=m, n=n, p=p, seed=seed)
        assert ok is True, f"gradcheck on MatmulFunction with a {(m, n)} @ {(n, p)} returned {ok!r}"
    assert_backward_by_hand(student)


def matmul_want(m: int, n: int, p: int, seed: int, dtype: str = "float64") -> list[torch.Tensor]:
    a, b, upstream = _inputs([[m, n], [n, p], [m, p]], seed, dtype)
    a.requires_grad_(True)
    b.requires_grad_(True)
    out = a @ b
    out.backward(upstream)
    return [out.detach(), a.grad, b.grad]


@pytest.mark.points(2)
def test_matmul_function_matches_autograd(student):
    """MatmulFunction's output and gradients equal those of a @ b for a random upstream gradient"""
    for m, n, p, seed in [(5, 3, 2, 3), (2, 7, 6, 4)]:
        got = student.probe("gradients.matmul_function_grads", m=m, n=n, p=p, seed=seed)
        assert_type(got, list, "MatmulFunction results")
        for name, g, want in zip(("a @ b", "a.grad", "b.grad"), got, matmul_want(m, n, p, seed)):
            assert_tensor(g, want, f"MatmulFunction {name} for {(m, n)} @ {(n, p)} (expected: those of a @ b)",
                          rtol=1e-9, atol=1e-12)
    assert_backward_by_hand(student)
