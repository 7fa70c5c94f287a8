"""Probes for the `einops_rewrites` module: seeded inputs in, outputs back."""

from __future__ import annotations

from tests.probes._tensors import randn


def pairwise_scores(impl, b, s1, s2, h, seed):
    return impl.einops_rewrites.pairwise_scores(randn([b, s1, h], seed), randn([b, s2, h], seed + 1))


def row_sums(impl, shape, seed):
    return impl.einops_rewrites.row_sums(randn(shape, seed))


def split_heads(impl, b, s, num_heads, d, seed):
    return impl.einops_rewrites.split_heads(randn([b, s, num_heads * d], seed), num_heads)


def merge_heads(impl, b, heads, s, d, seed):
    return impl.einops_rewrites.merge_heads(randn([b, heads, s, d], seed))


def per_head_linear(impl, batch, num_heads, d_in, d_out, seed):
    return impl.einops_rewrites.per_head_linear(randn([*batch, num_heads * d_in], seed),
                                                randn([d_in, d_out], seed + 1), num_heads)


def avg_pool(impl, c, h, h2, w, w2, seed):
    return impl.einops_rewrites.avg_pool(randn([c, h * h2, w * w2], seed), h2, w2)


def broadcast_channels(impl, h, w, c, seed):
    return impl.einops_rewrites.broadcast_channels(randn([h, w], seed), c)


def wrong_shape(impl, function):
    """Call `function` once correctly, then with mismatched shapes; the second call must raise."""
    e = impl.einops_rewrites
    calls = {
        "pairwise_scores": (lambda: e.pairwise_scores(randn([2, 3, 4], 0), randn([2, 5, 4], 1)),
                            lambda: e.pairwise_scores(randn([2, 3, 4], 0), randn([2, 5, 7], 1))),
        "merge_heads": (lambda: e.merge_heads(randn([2, 3, 4, 5], 0)),
                        lambda: e.merge_heads(randn([2, 3, 4], 0))),
        "per_head_linear": (lambda: e.per_head_linear(randn([2, 6], 0), randn([3, 4], 1), 2),
                            lambda: e.per_head_linear(randn([2, 6], 0), randn([3, 4], 1)[None], 2)),
        "broadcast_channels": (lambda: e.broadcast_channels(randn([3, 4], 0), 2),
                               lambda: e.broadcast_channels(randn([2, 3, 4], 0), 2)),
    }
    ok, bad = calls[function]
    ok()
    bad()
    return "no error"
