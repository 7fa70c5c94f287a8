"""Public tests for `einops_rewrites`: each rewrite equals its plain-torch version; then (gates,
never points on their own) a wrong-shaped input fails with jaxtyping's error and the function
keeps the rules of the module docstring, read program-wide (`student.scope`)."""

from __future__ import annotations

import ast
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from grader.rules import static
from grader.testing.expect import assert_tensor
from tests.probes.einops_rewrites import WRONG_INPUTS, _inputs

FUNCTIONS = ("pairwise_scores", "row_sums", "split_heads", "merge_heads", "per_head_linear", "avg_pool",
             "broadcast_channels")
#: einops functions that count as "calls einops" (rule 1).
EINOPS_FUNCTIONS = frozenset({"rearrange", "reduce", "repeat", "einsum", "pack", "unpack"})
#: Names that exist in einops and in torch: allowed only as einops's (rule 2).
EINOPS_ONLY = frozenset({"einsum", "repeat"})
#: THE list of forbidden names (rule 3).  The module docstring and the handout must list every
#: one of them (tests/kit/test_rule_lists_einops_flops.py checks it).
FORBIDDEN = frozenset({
    "transpose", "permute", "view", "view_as", "reshape", "reshape_as", "swapaxes", "swapdims", "movedim",
    "moveaxis", "T", "mT", "t", "H", "mH", "expand", "expand_as", "unsqueeze", "flatten", "unflatten", "unfold",
    "as_strided", "repeat_interleave", "tile", "matmul", "mm", "bmm", "mv", "dot", "tensordot", "inner", "outer",
    "linear", "addmm", "baddbmm", "__matmul__", "__rmatmul__", "avg_pool2d", "adaptive_avg_pool2d",
})
#: Matrix and dot products torch has under names rule 3 does not list: rule 2 ("the only matrix
#: product allowed is einops.einsum") rules them out; the docstring and the handout name each.
MATRIX_PRODUCTS = frozenset({"chain_matmul", "multi_dot", "addbmm", "addmv", "addr", "ger", "vdot", "vecdot",
                             "bilinear", "__imatmul__", "imatmul"})
#: Functions whose result is a pure rearrangement of the input: compared exactly.
EXACT = frozenset({"split_heads", "merge_heads", "broadcast_channels"})


# -- expected values: plain torch, in this process ------------------------------------------------

def expected(case: dict[str, Any]) -> torch.Tensor:
    """The plain-torch version of ``case["fn"]`` (the handout's table) on the case's inputs."""
    fn, args = case["fn"], _inputs(case)
    if fn == "pairwise_scores":
        x, y = args
        return x @ y.transpose(-2, -1)
    if fn == "row_sums":
        return args[0].sum(-1)
    if fn == "split_heads":
        x, heads = args
        b, s, hd = x.shape
        return x.view(b, s, heads, hd // heads).transpose(1, 2)
    if fn == "merge_heads":
        x = args[0]
        b, heads, s, d = x.shape
        return x.transpose(1, 2).reshape(b, s, heads * d)
    if fn == "per_head_linear":
        x, w, heads = args
        d_in = w.shape[0]
        return torch.cat([x[..., k * d_in:(k + 1) * d_in] @ w for k in range(heads)], dim=-1)
    if fn == "avg_pool":
        img, h2, w2 = args
        return F.avg_pool2d(img[None], (h2, w2))[0]
    if fn == "broadcast_channels":
        img, c = args
        return img.unsqueeze(0).expand(c, -1, -1)
    raise ValueError(fn)


def tolerance(case: dict[str, Any]) -> tuple[float, float]:
    """(atol, rtol) for comparing the student's result with `expected(case)`."""
    if case["fn"] in EXACT:
        return 0.0, 0.0  # a rearrangement moves values, it never computes them: exact
    if case.get("dtype", "float32") == "float64":
        return 1e-12, 1e-12  # float64 sums of <= 64 terms differ by summation order only (~1e-15)
    if case.get("dtype") in ("bfloat16", "float16"):
        # 16-bit results: each spelling rounds to 8 (11) significant bits once or twice (a sum, then a mean's
        # division), a few ulps (2**-8 relative each); the dtype itself is checked exactly
        return 5e-2, 2e-2
    return 1e-5, 1e-5  # float32 einsum/reduce vs matmul/avg_pool2d: summation order, a few ulps


def describe(case: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in case.items() if k not in ("fn", "seed"))
    return f"{case['fn']}({sizes}, seed={case.get('seed', 0)})"


def check_values(student, cases: list[dict[str, Any]]) -> None:
    """One probe call for all cases; each result equals plain torch (shape, dtype, values)."""
    got = student.probe("einops_rewrites.run_cases", cases=cases)
    assert isinstance(got, list) and len(got) == len(cases), f"expected {len(cases)} results, got {got!r:.80}"
    for case, value in zip(cases, got):
        atol, rtol = tolerance(case)
        assert_tensor(value, expected(case), describe(case) + " vs plain torch", atol=atol, rtol=rtol)


# -- gates: jaxtyping and the rules (they only take points away) -----------------------------------

def check_wrong_shapes(student, function: str, which: tuple[str, ...] | None = None) -> None:
    """Each wrong input must fail at the call with jaxtyping's TypeCheckError (decorator kept)."""
    for bad in which or WRONG_INPUTS[function][:1]:
        try:
            student.raises("einops_rewrites.wrong_shape", "TypeCheckError", function=function, which=bad)
        except AssertionError as exc:
            raise AssertionError(f"{function} with a wrong input ({bad}): {exc} (keep @jaxtyped(typechecker="
                                 "beartype) and the jaxtyping annotations)") from None


def rule_breaches(scope: static.Scope) -> list[str]:
    """Everything in `scope` that breaks rules 2-4 of the module docstring (rule 1 is checked apart)."""
    nodes = [n for root in scope.nodes for n in ast.walk(root)]
    bound: set[str] = set()
    einops_aliases: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.Import):
            einops_aliases.update(a.asname or a.name for a in n.names if a.name == "einops")
        elif isinstance(n, ast.ImportFrom) and n.module != "einops":
            bound.update(a.asname or a.name for a in n.names)
    found: set[str] = set()
    banned = FORBIDDEN | MATRIX_PRODUCTS
    banned |= {f"{name}_" for name in FORBIDDEN if not name.endswith("_")}  # in-place forms: transpose_, t_, ...
    for n in nodes:
        if isinstance(n, (ast.BinOp, ast.AugAssign)) and isinstance(n.op, ast.MatMult):
            found.add("the @ operator")
        elif isinstance(n, ast.MatchClass) and banned & set(n.kwd_attrs):  # case C(permute=p): an attribute
            found.update(banned & set(n.kwd_attrs))
        elif isinstance(n, ast.Attribute):
            if n.attr in banned:
                found.add(n.attr)
            elif n.attr in EINOPS_ONLY and static.dotted_name(n.value) not in einops_aliases:
                found.add(f"{static.dotted_name(n)} (only einops.{n.attr} is allowed)")
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                if a.name in banned:
                    found.add(f"from {n.module} import {a.name}")
                elif a.name in EINOPS_ONLY and n.module != "einops":
                    found.add(f"from {n.module} import {a.name} (only einops.{a.name} is allowed)")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in banned and n.id not in bound:
            found.add(n.id)
        if isinstance(n, (ast.Name, ast.Attribute)):
            name = n.id if isinstance(n, ast.Name) else n.attr
            if name in static.DYNAMIC_ESCAPES:
                found.add(name)
    return sorted(found) + [b for b in scope.breaches if b.split(" (")[0] not in found]


def check_rules(student, function: str) -> None:
    """Rules 1-4 of the module docstring, for the program `function` runs."""
    scope = student.scope("einops_rewrites", function)
    hits = rule_breaches(scope)
    assert not hits, f"{function} breaks the einops rules: uses {', '.join(hits)} (see the module docstring)"
    assert static.calls_from(scope, "einops", EINOPS_FUNCTIONS), (
        f"{function} must call einops (rearrange, reduce, repeat, einsum, pack or unpack, from the einops package)")


def check_function(student, function: str, cases: list[dict[str, Any]]) -> None:
    """Values first (they earn the points), then the gates."""
    check_values(student, cases)
    check_wrong_shapes(student, function)
    check_rules(student, function)


# -- one test per function --------------------------------------------------------------------------

@pytest.mark.points(2)
def test_pairwise_scores(student):
    """pairwise_scores equals x @ y.transpose(-2, -1) (s1 != s2, float32 and float64); rules and jaxtyping kept"""
    check_function(student, "pairwise_scores", [
        dict(fn="pairwise_scores", b=2, s1=3, s2=5, h=8, seed=0),
        dict(fn="pairwise_scores", b=1, s1=4, s2=4, h=3, seed=10, dtype="float64"),
    ])


@pytest.mark.points(1)
def test_row_sums(student):
    """row_sums equals x.sum(-1) for 0, 1 and 3 leading axes; rules and jaxtyping kept"""
    check_function(student, "row_sums", [dict(fn="row_sums", shape=shape, seed=2) for shape in ([7], [3, 4], [2, 3, 4, 5])])


@pytest.mark.points(1)
def test_split_heads(student):
    """split_heads equals x.view(b, s, heads, d).transpose(1, 2) (heads outer); rules and jaxtyping kept"""
    check_function(student, "split_heads", [dict(fn="split_heads", b=2, s=5, num_heads=3, d=4, seed=3)])


@pytest.mark.points(1)
def test_merge_heads(student):
    """merge_heads equals x.transpose(1, 2).reshape(b, s, heads * d); rules and jaxtyping kept"""
    check_function(student, "merge_heads", [dict(fn="merge_heads", b=2, heads=3, s=5, d=4, seed=4)])


@pytest.mark.points(2)
def test_per_head_linear(student):
    """per_head_linear applies w to each head's slice (heads outer), leading axes kept; rules and jaxtyping kept"""
    check_function(student, "per_head_linear", [
        dict(fn="per_head_linear", batch=[2, 3], num_heads=4, d_in=5, d_out=6, seed=5),
        dict(fn="per_head_linear", batch=[3], num_heads=2, d_in=3, d_out=3, seed=15),
    ])


@pytest.mark.points(2)
def test_avg_pool(student):
    """avg_pool equals F.avg_pool2d(img, (h2, w2)) for non-square blocks; rules and jaxtyping kept"""
    check_function(student, "avg_pool", [dict(fn="avg_pool", c=3, h=4, h2=2, w=2, w2=3, seed=7)])


@pytest.mark.points(1)
def test_broadcast_channels(student):
    """broadcast_channels equals img.unsqueeze(0).expand(c, -1, -1), bfloat16 kept; rules and jaxtyping kept"""
    check_function(student, "broadcast_channels", [dict(fn="broadcast_channels", h=3, w=5, c=4, seed=8),
                                                   dict(fn="broadcast_channels", h=2, w=3, c=2, seed=9,
                                                        dtype="bfloat16")])  # the result keeps the input's dtype
