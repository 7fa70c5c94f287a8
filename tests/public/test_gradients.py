"""Public tests for `gradients`: expected gradients come from torch autograd on torch's own ops
(`x @ w`, `a @ b`), run here, in the test process, on the same seeded inputs.  The probes only
return what the student's code produced (and which autograd entry points it reached).

Rules ("no autograd" in the by-hand gradients, "backward by hand" in MatmulFunction) are gates:
they are checked after the behaviour, inside tests that earn their points for the behaviour.
"""

from __future__ import annotations

import ast

import pytest
import torch

from grader.rules import static
from grader.testing.expect import assert_tensor, assert_type
from tests.probes.gradients import _inputs, _matmul_upstreams, _regression_shapes

# Attribute names (x.backward, torch.autograd, w.grad, torch.func, ...) and bare names that mean
# "autograd did it".  Bare `grad` is a fine variable name, so it is only forbidden as an attribute.
AUTOGRAD_ATTRIBUTES = {"backward", "autograd", "grad", "func", "requires_grad", "requires_grad_",
                       "enable_grad", "set_grad_enabled", "vjp", "jvp", "jacrev", "jacfwd", "vmap"}
AUTOGRAD_NAMES = {"autograd", "functorch", "vjp", "jvp", "jacrev", "jacfwd", "enable_grad", "set_grad_enabled"}
AUTOGRAD_MODULES = ("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional", "torch.func",
                    "functorch")
# What the rule allows: MatmulFunction's base class and the helpers of torch.autograd.function
# (`class MatmulFunction(torch.autograd.Function)`, `ctx: torch.autograd.function.FunctionCtx`,
# `@torch.autograd.function.once_differentiable`), however torch.autograd was imported.
ALLOWED_DOTTED = ("torch.autograd.Function", "autograd.Function")
ALLOWED_PREFIXES = ("torch.autograd.function.", "autograd.function.")
# Tripwires (grader.rules.tripwire) that mean autograd computed the gradient.
AUTOGRAD_WIRES = ("torch.autograd.", "torch.func")


def _is_main_block(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` — a self-test block, never run when the module is imported."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _lines(node: ast.AST) -> range:
    return range(node.lineno, (node.end_lineno or node.lineno) + 1)


def autograd_uses(scope: static.Scope) -> list[str]:
    """What in the program a rule covers (`student.scope`) uses autograd or could hide it: the
    forbidden names above, autograd imports, and every dynamic lookup the scope found."""
    nodes = [n for n in scope.nodes if not _is_main_block(n)]
    skipped = [_lines(n) for n in scope.nodes if _is_main_block(n)]
    allowed: set[int] = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Attribute) and (static.dotted_name(n) in ALLOWED_DOTTED
                                                 or static.dotted_name(n).startswith(ALLOWED_PREFIXES)):
                allowed.update(id(m) for m in ast.walk(n))
    attributes, bare, bound = set(), set(), set()
    for root in nodes:
        for n in ast.walk(root):
            if id(n) in allowed:
                continue
            if isinstance(n, ast.Attribute):
                attributes.add(n.attr)
            elif isinstance(n, ast.MatchClass):  # case C(grad=g): an attribute fetched with no attribute node
                attributes.update(n.kwd_attrs)
            elif isinstance(n, ast.Name):
                (bound if isinstance(n.ctx, (ast.Store, ast.Del)) else bare).add(n.id)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(n.name)
            elif isinstance(n, ast.alias):
                bound.add((n.asname or n.name).split(".")[0])
    # a name the code reads but never binds comes from a star import (`from torch.autograd import *`
    # then `grad(...)`): there, even `grad` is autograd's
    hits = sorted((attributes & AUTOGRAD_ATTRIBUTES) | (bare & AUTOGRAD_NAMES) | ((bare - bound) & AUTOGRAD_ATTRIBUTES)
                  | (static.DYNAMIC_ESCAPES & (attributes | bare)))
    imported = set()
    for root in nodes:
        imported |= static.imported_modules(root)
    hits += sorted(m for m in imported if any(m == a or m.startswith(a + ".") for a in AUTOGRAD_MODULES))

    def in_main_block(breach: str) -> bool:
        where = breach.rsplit(":", 1)[-1].rstrip(")")
        return where.isdigit() and any(int(where) in r for r in skipped)

    hits += [b for b in scope.breaches if not in_main_block(b)]
    return hits


def assert_no_autograd(student, qualname: str, reached: list[list[str]] | None = None) -> None:
    """The gate: `qualname` (and every function of the submission it reaches) uses no autograd,
    read from the source; and, at run time, none of its calls reached an autograd entry point."""
    for wires in reached or []:
        assert_type(wires, list, f"{qualname}: the tripwires reached")
        hit = sorted(w for w in wires if isinstance(w, str) and w.startswith(AUTOGRAD_WIRES))
        assert not hit, (f"{qualname} must compute gradients by hand, without autograd; while it ran it "
                         f"called {hit}")
    hits = autograd_uses(student.scope("gradients", qualname))
    assert not hits, f"{qualname} must compute gradients by hand, without autograd; found {hits}"


# -- linear_regression_grad ------------------------------------------------------------------

def regression_want(n: int | None, d: int, seed: int, dtype: str = "float64") -> torch.Tensor:
    x, w, y = _inputs(_regression_shapes(n, d), seed, dtype)
    w.requires_grad_(True)
    (0.5 * (x @ w - y).pow(2).sum()).backward()
    return w.grad


def check_regression(student, n: int | None, d: int, seed: int, dtype: str = "float64",
                     inference: bool = False) -> list[str]:
    """Compare with autograd; return the tripwires the call reached (for the gate)."""
    got = student.probe("gradients.linear_regression_grad", n=n, d=d, seed=seed, dtype=dtype, inference=inference)
    # float64: the formula and autograd agree to rounding (~1e-15 relative); float32: ~1e-6 relative
    # from a different summation order, so 1e-4 leaves room for any association.
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-4, 1e-5)
    assert_tensor(got["grad"], regression_want(n, d, seed, dtype), f"linear_regression_grad with x of shape "
                  f"{(d,) if n is None else (n, d)}, {dtype}{' under inference_mode' if inference else ''} "
                  "(expected: autograd's w.grad)", rtol=rtol, atol=atol)
    assert_inputs_unchanged(got["inputs"], _inputs(_regression_shapes(n, d), seed, dtype), ("x", "w", "y"),
                            "linear_regression_grad")
    return got["reached"]


def assert_inputs_unchanged(after: list, before: list[torch.Tensor], names: tuple[str, ...], qualname: str) -> None:
    """A gradient is returned, never written over the caller's tensors (an in-place `mul_`, `t_()`, `out=`)."""
    assert_type(after, list, f"{qualname}: the inputs after the call")
    for name, got, want in zip(names, after, before, strict=True):
        assert type(got) is torch.Tensor and got.shape == want.shape and torch.equal(got, want), (
            f"{qualname} changed its argument {name} in place: compute the gradient into new tensors and "
            "leave the caller's x and weights as they were")


@pytest.mark.points(2)
def test_linear_regression_grad(student):
    """linear_regression_grad equals autograd on ½Σ(x·w − y)², one example and a batch; no autograd used"""
    got = student.probe("gradients.linear_regression_lecture")
    # exact small integers in float32: any formulation gets them to rounding
    assert_tensor(got, torch.tensor([1.0, 2.0, 3.0]), "linear_regression_grad(x=[1,2,3], w=[1,1,1], y=5)",
                  atol=1e-6)
    reached = [check_regression(student, n, d, seed) for n, d, seed in [(None, 5, 0), (8, 3, 1), (16, 7, 2)]]
    assert_no_autograd(student, "linear_regression_grad", reached)


# -- two_layer_grads -------------------------------------------------------------------------

def two_layer_want(B: int, D: int, H: int, K: int, seed: int, dtype: str = "float64") -> list[torch.Tensor]:
    x, w1, w2 = _inputs([[B, D], [D, H], [H, K]], seed, dtype)
    w1.requires_grad_(True)
    w2.requires_grad_(True)
    (x @ w1 @ w2).pow(2).mean().backward()
    return [w1.grad, w2.grad]


def check_two_layer(student, B: int, D: int, H: int, K: int, seed: int, dtype: str = "float64",
                    inference: bool = False) -> list[str]:
    """Compare with autograd; return the tripwires the call reached (for the gate)."""
    # float64: the hand-written matmuls and autograd's agree to rounding (~1e-15 relative);
    # float32: different association orders differ by ~1e-6 relative.
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-4, 1e-6)
    got = student.probe("gradients.two_layer_grads", B=B, D=D, H=H, K=K, seed=seed, dtype=dtype, inference=inference)
    grads = got["grads"]
    assert got["kind"] == "tuple", f"two_layer_grads: expected a tuple (grad_w1, grad_w2), got a {got['kind']}"
    assert len(grads) == 2, f"two_layer_grads: expected a tuple (grad_w1, grad_w2), got {len(grads)} items"
    for name, g, want in zip(("grad_w1", "grad_w2"), grads, two_layer_want(B, D, H, K, seed, dtype)):
        assert_tensor(g, want, f"two_layer_grads {name} for x {(B, D)}, w1 {(D, H)}, w2 {(H, K)}, {dtype}"
                      f"{' under inference_mode' if inference else ''} (expected: autograd's grad)",
                      rtol=rtol, atol=atol)
    assert_inputs_unchanged(got["inputs"], _inputs([[B, D], [D, H], [H, K]], seed, dtype), ("x", "w1", "w2"),
                            "two_layer_grads")
    return got["reached"]


@pytest.mark.points(3)
def test_two_layer_grads(student):
    """two_layer_grads equals autograd on mean((x @ w1 @ w2)²), computed without autograd"""
    reached = [check_two_layer(student, 4, 5, 6, 3, seed=0),
               check_two_layer(student, 8, 3, 3, 3, seed=1),
               check_two_layer(student, 16, 10, 7, 2, seed=2, dtype="float32")]
    assert_no_autograd(student, "two_layer_grads", reached)


# -- MatmulFunction --------------------------------------------------------------------------

def assert_backward_by_hand(student) -> None:
    """The gate: MatmulFunction.forward/backward (and what they reach) do not call autograd."""
    for method in ("MatmulFunction.forward", "MatmulFunction.backward"):
        hits = autograd_uses(student.scope("gradients", method))
        assert not hits, f"{method} must not call autograd itself (write the matmuls); found {hits}"


def matmul_want(m: int, n: int, p: int, seed: int, one_hot: bool) -> dict:
    """What autograd gives for torch's own `a @ b`, on the probe's inputs and upstream gradients."""
    a, b = _inputs([[m, n], [n, p]], seed)
    a.requires_grad_(True)
    b.requires_grad_(True)
    out = a @ b
    a_grads, b_grads = [], []
    for upstream in _matmul_upstreams(m, p, seed, a.dtype, one_hot):
        ga, gb = torch.autograd.grad(out, (a, b), upstream, retain_graph=True)
        a_grads.append(ga)
        b_grads.append(gb)
    return {"out": out.detach(), "a_grads": a_grads, "b_grads": b_grads}


def check_matmul(student, cases: list[tuple]) -> None:
    """cases: (m, n, p, seed, a_grad, b_grad, one_hot).  One probe call for all of them."""
    keys = ("m", "n", "p", "seed", "a_grad", "b_grad", "one_hot")
    got = student.probe("gradients.matmul_function_backward", cases=[dict(zip(keys, c)) for c in cases])
    assert_type(got, list, "MatmulFunction results")
    for (m, n, p, seed, a_grad, b_grad, one_hot), item in zip(cases, got, strict=True):
        want = matmul_want(m, n, p, seed, one_hot)
        shapes = f"a {(m, n)} @ b {(n, p)} (float64)"
        # float64 matmuls of a few terms: equal to rounding (~1e-16); 1e-9 relative rejects any float32 step
        assert_tensor(item["out"], want["out"], f"MatmulFunction.apply(a, b) for {shapes} (expected: a @ b)",
                      rtol=1e-9, atol=1e-12)
        for name, needed, grads, wants in (("a", a_grad, item["a_grads"], want["a_grads"]),
                                           ("b", b_grad, item["b_grads"], want["b_grads"])):
            assert_type(grads, list, f"MatmulFunction {name}.grad results")
            for k, (g, w) in enumerate(zip(grads, wants, strict=True)):
                upstream = ("a random upstream gradient" if k == 0 else
                            f"the one-hot upstream gradient at output entry {divmod(k - 1, p)}")
                if not needed:
                    assert g is None, (f"MatmulFunction: {name}.grad should stay None when {name} does not "
                                       f"require a gradient ({shapes}), got a tensor")
                    continue
                assert_tensor(g, w, f"MatmulFunction {name}.grad for {shapes}, only "
                              f"{'a' if not b_grad else 'b' if not a_grad else 'both'} requiring a gradient, "
                              f"after backward with {upstream} (expected: that of a @ b)", rtol=1e-9, atol=1e-12)


@pytest.mark.points(2)
def test_matmul_function_jacobian(student):
    """MatmulFunction's output and its gradients for every one-hot upstream gradient (the whole Jacobian)
    equal those of a @ b in float64, square and non-square shapes"""
    check_matmul(student, [(3, 4, 5, 0, True, True, True), (4, 4, 4, 1, True, True, True),
                           (1, 6, 2, 2, True, True, True)])
    assert_backward_by_hand(student)


def inplace_want(m: int, n: int, p: int, seed: int) -> list[torch.Tensor]:
    """Autograd's gradients of a @ b at the inputs' values *at forward time*."""
    want = matmul_want(m, n, p, seed, one_hot=False)
    return [want["a_grads"][0], want["b_grads"][0]]


def check_inplace(student, m: int, n: int, p: int, seed: int) -> None:
    """An input changed in place between forward and backward: autograd must refuse (save_for_backward's
    version counter) or the gradients must still be those at forward time, never silently others."""
    from grader.boundary.messages import ErrorData

    for modify in ("a", "b"):
        got = student.outcome("gradients.matmul_inplace_after_forward", m=m, n=n, p=p, seed=seed, modify=modify)
        what = (f"MatmulFunction for a {(m, n)} @ b {(n, p)} when {modify} is modified in place after forward "
                "and before backward")
        if isinstance(got, ErrorData):
            if got.not_implemented:
                student.probe("gradients.matmul_inplace_after_forward", m=m, n=n, p=p, seed=seed, modify=modify)
            assert "RuntimeError" in got.bases and "inplace" in got.message.replace("in-place", "inplace"), (
                f"{what}: expected autograd's RuntimeError 'one of the variables needed for gradient computation "
                f"has been modified by an inplace operation' (what ctx.save_for_backward gives), got "
                f"{got.type}: {got.message[:200]}")
            continue
        assert_type(got, list, f"{what}: (a.grad, b.grad)")
        for name, g, w in zip(("a.grad", "b.grad"), got, inplace_want(m, n, p, seed)):
            assert_tensor(g, w, f"{what}: {name} (expected: autograd's RuntimeError, as ctx.save_for_backward "
                          "gives, or the gradient at the forward-time values; tensors kept as ctx attributes "
                          "see the change)", rtol=1e-9, atol=1e-12)


@pytest.mark.points(2)
def test_matmul_function_matches_autograd(student):
    """MatmulFunction matches a @ b for random upstream gradients, and an in-place change of an input
    after forward is refused (save_for_backward), never turned into wrong gradients"""
    check_matmul(student, [(5, 3, 2, 3, True, True, False), (2, 7, 6, 4, True, True, False)])
    check_inplace(student, 3, 4, 2, 5)
    assert_backward_by_hand(student)
