"""Public tests for `einops_rewrites`: each rewrite equals its plain-torch version, uses einops,
and fails on wrong shapes with jaxtyping's error."""

from __future__ import annotations

import ast

import pytest
import torch
import torch.nn.functional as F

from grader import static
from grader.expect import assert_tensor
from tests.probes._tensors import randn

FUNCTIONS = ("pairwise_scores", "row_sums", "split_heads", "merge_heads", "per_head_linear", "avg_pool",
             "broadcast_channels")
EINOPS_FUNCTIONS = {"rearrange", "reduce", "repeat", "einsum", "pack", "unpack"}
FORBIDDEN = {"transpose", "permute", "view", "reshape", "swapaxes", "swapdims", "movedim", "T", "mT", "t",
             "expand", "matmul", "bmm", "mm", "unsqueeze", "unfold", "avg_pool2d", "flatten", "unflatten"}
# Float32 results of einsum vs matmul differ only by summation order: a few ulps.
ATOL, RTOL = 1e-5, 1e-5


@pytest.mark.points(1)
def test_pairwise_scores(student):
    """pairwise_scores equals x @ y.transpose(-2, -1)"""
    got = student.probe("einops_rewrites.pairwise_scores", b=2, s1=3, s2=5, h=8, seed=0)
    want = randn([2, 3, 8], 0) @ randn([2, 5, 8], 1).transpose(-2, -1)
    assert_tensor(got, want, "pairwise_scores (b=2, s1=3, s2=5, h=8)", atol=ATOL, rtol=RTOL)


@pytest.mark.points(1)
def test_row_sums(student):
    """row_sums equals x.sum(-1) for 1, 2 and 4 leading axes"""
    for shape in ([7], [3, 4], [2, 3, 4, 5]):
        got = student.probe("einops_rewrites.row_sums", shape=shape, seed=2)
        assert_tensor(got, randn(shape, 2).sum(-1), f"row_sums of shape {tuple(shape)}", atol=ATOL, rtol=RTOL)


@pytest.mark.points(1)
def test_split_heads(student):
    """split_heads equals x.view(b, s, heads, d).transpose(1, 2) (heads is the outer factor)"""
    got = student.probe("einops_rewrites.split_heads", b=2, s=5, num_heads=3, d=4, seed=3)
    want = randn([2, 5, 12], 3).view(2, 5, 3, 4).transpose(1, 2)
    assert_tensor(got, want, "split_heads (b=2, s=5, heads=3, d=4)")


@pytest.mark.points(1)
def test_merge_heads(student):
    """merge_heads equals x.transpose(1, 2).reshape(b, s, heads * d)"""
    got = student.probe("einops_rewrites.merge_heads", b=2, heads=3, s=5, d=4, seed=4)
    want = randn([2, 3, 5, 4], 4).transpose(1, 2).reshape(2, 5, 12)
    assert_tensor(got, want, "merge_heads (b=2, heads=3, s=5, d=4)")


@pytest.mark.points(1)
def test_per_head_linear(student):
    """per_head_linear applies w to each head's slice, heads outer, leading axes kept"""
    got = student.probe("einops_rewrites.per_head_linear", batch=[2, 3], num_heads=4, d_in=5, d_out=6, seed=5)
    x, w = randn([2, 3, 20], 5), randn([5, 6], 6)
    want = torch.cat([x[..., k * 5:(k + 1) * 5] @ w for k in range(4)], dim=-1)
    assert_tensor(got, want, "per_head_linear (batch (2, 3), heads=4, d_in=5, d_out=6)", atol=ATOL, rtol=RTOL)


@pytest.mark.points(1)
def test_avg_pool(student):
    """avg_pool equals F.avg_pool2d(img, (h2, w2)) for non-square blocks"""
    got = student.probe("einops_rewrites.avg_pool", c=3, h=4, h2=2, w=2, w2=3, seed=7)
    want = F.avg_pool2d(randn([3, 8, 6], 7)[None], (2, 3))[0]
    assert_tensor(got, want, "avg_pool (c=3, 8×6 image, 2×3 blocks)", atol=ATOL, rtol=RTOL)


@pytest.mark.points(1)
def test_broadcast_channels(student):
    """broadcast_channels equals img.unsqueeze(0).expand(c, -1, -1)"""
    got = student.probe("einops_rewrites.broadcast_channels", h=3, w=5, c=4, seed=8)
    assert_tensor(got, randn([3, 5], 8).unsqueeze(0).expand(4, -1, -1), "broadcast_channels (h=3, w=5, c=4)")


@pytest.mark.points(2)
def test_rewrites_use_einops(student):
    """every rewrite calls einops and none calls transpose/permute/view/reshape/expand/matmul"""
    tree = ast.parse(student.source("einops_rewrites"))
    for name in FUNCTIONS:
        node = student.function("einops_rewrites", name)
        hits = static.forbidden_uses(node, FORBIDDEN)
        assert not hits, f"{name} must not use {', '.join(hits)}: rewrite it with einops"
        assert static.calls_from(node, tree, "einops", EINOPS_FUNCTIONS), \
            f"{name} must call einops (rearrange, reduce, repeat or einsum, from the einops package)"


@pytest.mark.points(1)
def test_wrong_shapes_raise_jaxtyping_error(student):
    """a wrong input shape fails at the call with jaxtyping's TypeCheckError, not deep in torch"""
    for function in ("pairwise_scores", "merge_heads"):
        student.raises("einops_rewrites.wrong_shape", "TypeCheckError", function=function)
