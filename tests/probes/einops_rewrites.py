"""Probes for the `einops_rewrites` module: seeded inputs in, outputs back.

A *case* is plain data: ``{"fn": <function name>, <sizes>, "seed": int, "dtype": "float32"}``.
`_inputs(case)` builds the same seeded arguments on both sides of the boundary: the probe
hands them to the student's function, the test hands them to plain torch.
"""

from __future__ import annotations

from typing import Any

from tests.probes._tensors import randn

def _inputs(case: dict[str, Any]) -> tuple[Any, ...]:
    """The positional arguments of ``case["fn"]`` for this case (fresh tensors on every call)."""
    fn, seed, dtype = case["fn"], case.get("seed", 0), case.get("dtype", "float32")
    if fn == "pairwise_scores":
        return (randn([case["b"], case["s1"], case["h"]], seed, dtype),
                randn([case["b"], case["s2"], case["h"]], seed + 1, dtype))
    if fn == "row_sums":
        return (randn(list(case["shape"]), seed, dtype),)
    if fn == "split_heads":
        return randn([case["b"], case["s"], case["num_heads"] * case["d"]], seed, dtype), case["num_heads"]
    if fn == "merge_heads":
        return (randn([case["b"], case["heads"], case["s"], case["d"]], seed, dtype),)
    if fn == "per_head_linear":
        return (randn([*case["batch"], case["num_heads"] * case["d_in"]], seed, dtype),
                randn([case["d_in"], case["d_out"]], seed + 1, dtype), case["num_heads"])
    if fn == "avg_pool":
        return randn([case["c"], case["h"] * case["h2"], case["w"] * case["w2"]], seed, dtype), case["h2"], case["w2"]
    if fn == "broadcast_channels":
        return randn([case["h"], case["w"]], seed, dtype), case["c"]
    raise ValueError(f"unknown function {fn!r}")


def run_cases(impl, cases):
    """The student's result for every case, in order (one reply for many cases)."""
    e = impl.einops_rewrites
    return [getattr(e, case["fn"])(*_inputs(case)) for case in cases]


def pairwise_scores(impl, b, s1, s2, h, seed, dtype="float32"):
    return impl.einops_rewrites.pairwise_scores(*_inputs(dict(fn="pairwise_scores", b=b, s1=s1, s2=s2, h=h,
                                                             seed=seed, dtype=dtype)))


def row_sums(impl, shape, seed, dtype="float32"):
    return impl.einops_rewrites.row_sums(*_inputs(dict(fn="row_sums", shape=shape, seed=seed, dtype=dtype)))


def split_heads(impl, b, s, num_heads, d, seed, dtype="float32"):
    return impl.einops_rewrites.split_heads(*_inputs(dict(fn="split_heads", b=b, s=s, num_heads=num_heads, d=d,
                                                         seed=seed, dtype=dtype)))


def merge_heads(impl, b, heads, s, d, seed, dtype="float32"):
    return impl.einops_rewrites.merge_heads(*_inputs(dict(fn="merge_heads", b=b, heads=heads, s=s, d=d,
                                                         seed=seed, dtype=dtype)))


def per_head_linear(impl, batch, num_heads, d_in, d_out, seed, dtype="float32"):
    return impl.einops_rewrites.per_head_linear(*_inputs(dict(fn="per_head_linear", batch=batch, num_heads=num_heads,
                                                             d_in=d_in, d_out=d_out, seed=seed, dtype=dtype)))


def avg_pool(impl, c, h, h2, w, w2, seed, dtype="float32"):
    return impl.einops_rewrites.avg_pool(*_inputs(dict(fn="avg_pool", c=c, h=h, h2=h2, w=w, w2=w2, seed=seed,
                                                      dtype=dtype)))


def broadcast_channels(impl, h, w, c, seed, dtype="float32"):
    return impl.einops_rewrites.broadcast_channels(*_inputs(dict(fn="broadcast_channels", h=h, w=w, c=c, seed=seed,
                                                                dtype=dtype)))


# Wrong-shaped calls: (a correct call, then calls that must each fail at the call).
def _wrong_calls(e) -> dict[str, tuple[Any, dict[str, Any]]]:
    import torch

    def ints(shape):
        return torch.arange(int(torch.tensor(shape).prod()) if shape else 1).reshape(shape)

    return {
        "pairwise_scores": (lambda: e.pairwise_scores(randn([2, 3, 4], 0), randn([2, 5, 4], 1)), {
            "h mismatch": lambda: e.pairwise_scores(randn([2, 3, 4], 0), randn([2, 5, 7], 1)),
            "b mismatch": lambda: e.pairwise_scores(randn([2, 3, 4], 0), randn([3, 5, 4], 1)),
            "2-D x": lambda: e.pairwise_scores(randn([3, 4], 0), randn([2, 5, 4], 1)),
            "int x": lambda: e.pairwise_scores(ints([2, 3, 4]), randn([2, 5, 4], 1)),
        }),
        "row_sums": (lambda: e.row_sums(randn([2, 3], 0)), {
            "0-d x": lambda: e.row_sums(randn([], 0)),
            "int x": lambda: e.row_sums(ints([2, 3])),
        }),
        "split_heads": (lambda: e.split_heads(randn([2, 3, 8], 0), 2), {
            "2-D x": lambda: e.split_heads(randn([3, 8], 0), 2),
            "4-D x": lambda: e.split_heads(randn([2, 3, 2, 8], 0), 2),
            "int x": lambda: e.split_heads(ints([2, 3, 8]), 2),
        }),
        "merge_heads": (lambda: e.merge_heads(randn([2, 3, 4, 5], 0)), {
            "3-D x": lambda: e.merge_heads(randn([2, 3, 4], 0)),
            "5-D x": lambda: e.merge_heads(randn([1, 2, 3, 4, 5], 0)),
            "int x": lambda: e.merge_heads(ints([2, 3, 4, 5])),
        }),
        "per_head_linear": (lambda: e.per_head_linear(randn([2, 6], 0), randn([3, 4], 1), 2), {
            "3-D w": lambda: e.per_head_linear(randn([2, 6], 0), randn([1, 3, 4], 1), 2),
            "0-d x": lambda: e.per_head_linear(randn([], 0), randn([3, 4], 1), 2),
            "int w": lambda: e.per_head_linear(randn([2, 6], 0), ints([3, 4]), 2),
        }),
        "avg_pool": (lambda: e.avg_pool(randn([2, 4, 6], 0), 2, 3), {
            "2-D img": lambda: e.avg_pool(randn([4, 6], 0), 2, 3),
            "4-D img": lambda: e.avg_pool(randn([1, 2, 4, 6], 0), 2, 3),
            "int img": lambda: e.avg_pool(ints([2, 4, 6]), 2, 3),
        }),
        "broadcast_channels": (lambda: e.broadcast_channels(randn([3, 4], 0), 2), {
            "3-D img": lambda: e.broadcast_channels(randn([2, 3, 4], 0), 2),
            "1-D img": lambda: e.broadcast_channels(randn([4], 0), 2),
            "int img": lambda: e.broadcast_channels(ints([3, 4]), 2),
        }),
    }


def wrong_shape(impl, function, which=None):
    """Call `function` once correctly, then with the wrong input `which` (default: the first);
    the second call must raise (the exception travels back as data)."""
    ok, bad = _wrong_calls(impl.einops_rewrites)[function]
    ok()
    bad[which if which is not None else next(iter(bad))]()
    return "no error"


#: The wrong inputs `wrong_shape` knows, per function (for the tests; no student code runs).
WRONG_INPUTS = {function: tuple(bad) for function, (_, bad) in _wrong_calls(None).items()}
