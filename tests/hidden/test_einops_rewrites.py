"""Hidden tests for `einops_rewrites`: other sizes and seeds, more wrong shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from grader.expect import assert_tensor
from tests.probes._tensors import randn

ATOL, RTOL = 1e-5, 1e-5


@pytest.mark.points(2)
def test_rewrites_other_sizes(student):
    """every rewrite on other sizes and seeds equals its plain-torch version"""
    got = student.probe("einops_rewrites.pairwise_scores", b=3, s1=1, s2=4, h=16, seed=20)
    assert_tensor(got, randn([3, 1, 16], 20) @ randn([3, 4, 16], 21).mT, "pairwise_scores", atol=ATOL, rtol=RTOL)
    got = student.probe("einops_rewrites.split_heads", b=1, s=3, num_heads=4, d=2, seed=22)
    assert_tensor(got, randn([1, 3, 8], 22).view(1, 3, 4, 2).transpose(1, 2), "split_heads")
    got = student.probe("einops_rewrites.merge_heads", b=2, heads=1, s=3, d=5, seed=23)
    assert_tensor(got, randn([2, 1, 3, 5], 23).transpose(1, 2).reshape(2, 3, 5), "merge_heads")
    got = student.probe("einops_rewrites.per_head_linear", batch=[], num_heads=2, d_in=3, d_out=1, seed=24)
    x, w = randn([6], 24), randn([3, 1], 25)
    assert_tensor(got, torch.cat([x[:3] @ w, x[3:] @ w]), "per_head_linear without leading axes", atol=ATOL, rtol=RTOL)
    got = student.probe("einops_rewrites.avg_pool", c=1, h=3, h2=3, w=1, w2=4, seed=26)
    assert_tensor(got, F.avg_pool2d(randn([1, 9, 4], 26)[None], (3, 4))[0], "avg_pool", atol=ATOL, rtol=RTOL)
    got = student.probe("einops_rewrites.row_sums", shape=[2, 1, 9], seed=27)
    assert_tensor(got, randn([2, 1, 9], 27).sum(-1), "row_sums", atol=ATOL, rtol=RTOL)
    got = student.probe("einops_rewrites.broadcast_channels", h=1, w=2, c=3, seed=28)
    assert_tensor(got, randn([1, 2], 28).expand(3, 1, 2), "broadcast_channels")


@pytest.mark.points(1)
def test_more_wrong_shapes(student):
    """per_head_linear and broadcast_channels with wrong ranks raise jaxtyping's TypeCheckError"""
    for function in ("per_head_linear", "broadcast_channels"):
        student.raises("einops_rewrites.wrong_shape", "TypeCheckError", function=function)
