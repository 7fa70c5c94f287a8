"""Seeded test computations for FLOP counting, built identically on both sides of the boundary.

A case is plain data: ``{"model": ..., "backward": bool, "seed": int, ...sizes}``.  `build_case`
turns it into ``(fn, args)``: a closure over a freshly built torch model and its input
tensors.  The probe hands them to the student's ``count_matmul_flops(fn, *args)``; the test
runs the same ``fn(*args)`` under ``torch.utils.flop_counter.FlopCounterMode`` in its own
process (torch, not student code) for the expected count.  Only torch.nn and einops are used
here, never the student's modules, so a broken `cruncher` cannot fail a `flops` test.

Models (and the ATen matmul operators they reach, forward and backward):
  deep_linear  x @ w1 @ ... @ wL @ w_final, squeezed: the Cruncher's shape   (mm)
  mlp          nn.Linear + ReLU + nn.Linear with biases, 2-D or 3-D input     (addmm, mm)
  attention    softmax(q @ kᵀ / √d) @ v with heads                            (bmm)
  einsum       einops.einsum projections and scores                           (bmm)
  baddbmm      torch.baddbmm(bias, q, kᵀ): attention scores with an additive bias (baddbmm, bmm)
  broadcast    (B, 1, m, n) @ (H, n, p): matmul broadcasting batch dimensions  (bmm)
  matvec       W @ x, x @ V, A @ x, y @ A with a vector x: matrix-vector products (mv: counts 0;
               vector @ matrix reaches mm and counts)                          (mv, mm)
  embed_mlp    nn.Embedding -> LayerNorm -> Linear -> GELU -> Linear: the first layer is not a
               matmul (token ids in, no input gradient)                        (embedding, addmm, mm)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import einops
import torch
from torch import nn

from grader.testing.reference import reference


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(shape: tuple[int, ...], g: torch.Generator, requires_grad: bool = False) -> torch.Tensor:
    return torch.randn(shape, generator=g).requires_grad_(requires_grad)


def seeded(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """A seeded standard-normal float32 tensor."""
    return torch.randn(shape, generator=_gen(seed))


def _finish(out: torch.Tensor, backward: bool) -> torch.Tensor:
    if backward:
        out.pow(2).mean().backward()
    return out


def build_case(case: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The closure and its arguments for one case (fresh model and tensors on every call)."""
    kind, backward, g = case["model"], bool(case.get("backward", False)), _gen(case.get("seed", 0))
    input_grad = bool(case.get("input_grad", False))

    if kind == "deep_linear":
        dim, layers, batch = case["dim"], case["num_layers"], case["batch"]
        weights = [_randn((dim, dim), g, True) for _ in range(layers)] + [_randn((dim, 1), g, True)]
        x = _randn((batch, dim), g, input_grad)

        def fn(x: torch.Tensor) -> torch.Tensor:
            for w in weights:
                x = x @ w
            return _finish(x.squeeze(-1), backward)

        return fn, (x,)

    if kind == "mlp":
        d_in, hidden, d_out = case["d_in"], case["hidden"], case["d_out"]
        torch.manual_seed(case.get("seed", 0))  # nn.Linear draws its init from the global generator
        mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))
        x = _randn((*case["lead"], d_in), g, input_grad)
        return (lambda x: _finish(mlp(x), backward)), (x,)

    if kind == "attention":
        b, h, s, t, d = case["b"], case["heads"], case["s"], case["t"], case["d"]
        q, k, v = _randn((b, h, s, d), g, True), _randn((b, h, t, d), g, True), _randn((b, h, t, d), g, True)

        def attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            scores = q @ k.transpose(-2, -1) / d ** 0.5
            return _finish(scores.softmax(dim=-1) @ v, backward)

        return attn, (q, k, v)

    if kind == "einsum":
        b, s, d, heads, d_head = case["b"], case["s"], case["d"], case["heads"], case["d_head"]
        x = _randn((b, s, d), g, input_grad)
        w_q, w_k = _randn((heads, d, d_head), g, True), _randn((heads, d, d_head), g, True)

        def scores(x: torch.Tensor) -> torch.Tensor:
            q = einops.einsum(x, w_q, "b s d, h d e -> b h s e")
            k = einops.einsum(x, w_k, "b t d, h d e -> b h t e")
            return _finish(einops.einsum(q, k, "b h s e, b h t e -> b h s t"), backward)

        return scores, (x,)

    if kind == "baddbmm":
        n, s, t, d = case["n"], case["s"], case["t"], case["d"]
        bias, q, k = _randn((n, s, t), g, False), _randn((n, s, d), g, True), _randn((n, t, d), g, True)
        return (lambda q, k: _finish(torch.baddbmm(bias, q, k.transpose(1, 2)), backward)), (q, k)

    if kind == "broadcast":
        a = _randn(tuple(case["a"]), g, True)
        b = _randn(tuple(case["b"]), g, True)
        return (lambda a, b: _finish(a @ b, backward)), (a, b)

    if kind == "matvec":
        m, n, p, batch = case["m"], case["n"], case["p"], case["batch"]
        w, v, a = _randn((m, n), g, True), _randn((n, p), g, True), _randn((batch, m, n), g, True)
        x = _randn((n,), g, input_grad)

        def products(x: torch.Tensor) -> torch.Tensor:
            y1 = w @ x          # matrix @ vector: aten.mv
            y2 = x @ v          # vector @ matrix: aten.mm on the unsqueezed vector
            y3 = a @ x          # batched matrix @ vector: aten.mv on the folded batch
            y4 = y1 @ a         # vector @ batched matrix: aten.mv
            return _finish(y1.sum() + y2.sum() + y3.sum() + y4.sum(), backward)

        return products, (x,)

    if kind == "odd_products":
        d, n = case["d"], case["n"]
        x, y = _randn((d,), g, input_grad), _randn((d,), g, True)
        m1, m2, base = _randn((n, d, d), g, True), _randn((n, d, d), g, True), _randn((d, d), g, False)
        a64, b64 = _randn((d, d), g, False).double().requires_grad_(True), _randn((d, d), g, False).double()

        def products(x: torch.Tensor) -> torch.Tensor:
            s = x @ y                                  # vector @ vector: aten.dot
            t = torch.addbmm(base, m1, m2)             # aten.addbmm (neither mm nor bmm for the counter)
            u = base.clone().addmm_(t.detach(), base)  # in-place aten.addmm_
            v = (a64 @ b64).float()                    # a float64 aten.mm
            return _finish(s + t.sum() + u.sum() + v.sum(), backward)

        return products, (x,)

    if kind == "embed_mlp":
        vocab, d, hidden = case["vocab"], case["d"], case["hidden"]
        torch.manual_seed(case.get("seed", 0))  # nn modules draw their init from the global generator
        model = nn.Sequential(nn.Embedding(vocab, d), nn.LayerNorm(d), nn.Linear(d, hidden), nn.GELU(),
                              nn.Linear(hidden, vocab))
        ids = torch.randint(0, vocab, tuple(case["lead"]), generator=g)
        return (lambda ids: _finish(model(ids), backward)), (ids,)

    raise ValueError(f"unknown model {kind!r}")


def describe_case(case: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in case.items() if k not in ("model", "backward", "seed"))
    return f"{case['model']} ({sizes}), {'forward + backward' if case.get('backward') else 'forward'}"


# -- trusted references (run by the tests with torch's own counter; never student code) ----

def torch_flop_count(case: dict[str, Any]) -> int:
    """FlopCounterMode's total for the same computation the probe hands to the student."""
    from torch.utils.flop_counter import FlopCounterMode

    fn, args = build_case(case)
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


@reference  # (the trusted tests' expected counts: computed once per grading worker)
def torch_matmul_flops(a_shape: list[int], b_shape: list[int]) -> int:
    """FlopCounterMode's count for ``a @ b`` on meta tensors (shapes only, no compute)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        torch.empty(a_shape, device="meta") @ torch.empty(b_shape, device="meta")
    return counter.get_total_flops()


@reference
def torch_chain_flops(batch: int, dims: list[int], input_grad: bool) -> tuple[int, int]:
    """(forward, backward) FLOPs that FlopCounterMode counts for ``x @ w1 @ w2 @ ...``.

    x has shape (batch, dims[0]) and requires a gradient only when `input_grad`; every weight
    requires one.  The backward pass starts from ``h.sum()``, whose gradient is a broadcast (no
    FLOPs), so the backward count is the matmuls of backpropagation alone.
    """
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.empty(batch, dims[0], device="meta", requires_grad=input_grad)
    weights = [torch.empty(a, b, device="meta", requires_grad=True) for a, b in zip(dims[:-1], dims[1:])]
    with FlopCounterMode(display=False) as counter:
        h = x
        for w in weights:
            h = h @ w
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        h.sum().backward()
    return forward, counter.get_total_flops()
