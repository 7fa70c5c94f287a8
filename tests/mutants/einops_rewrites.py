"""Mutants of solutions/einops_rewrites.py: each is one bug a student plausibly writes."""

import torch
from beartype import beartype
from einops import einsum, rearrange, reduce, repeat
from jaxtyping import Float, jaxtyped
from torch import Tensor

from grader.mutants import mutant


@mutant(replaces="split_heads", why="heads as the inner factor of the hidden axis: (d heads)")
@jaxtyped(typechecker=beartype)
def split_heads_inner(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
    return rearrange(x, "b s (d heads) -> b heads s d", heads=num_heads)


@mutant(replaces="merge_heads", why="merges as (d heads), not (heads d)")
@jaxtyped(typechecker=beartype)
def merge_heads_inner(x: Float[Tensor, "b heads s d"]) -> Float[Tensor, "b s heads*d"]:
    return rearrange(x, "b heads s d -> b s (d heads)")


@mutant(replaces="avg_pool", why="sums the blocks instead of averaging them")
@jaxtyped(typechecker=beartype)
def avg_pool_sum(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    return reduce(img, "c (h h2) (w w2) -> c h w", "sum", h2=h2, w2=w2)


@mutant(replaces="avg_pool", why="block index as the inner factor: (h2 h)")
@jaxtyped(typechecker=beartype)
def avg_pool_inner(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    return reduce(img, "c (h2 h) (w2 w) -> c h w", "mean", h2=h2, w2=w2)


@mutant(replaces="pairwise_scores", why="plain matmul with a transpose instead of einops")
@jaxtyped(typechecker=beartype)
def pairwise_scores_matmul(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return x @ y.transpose(-2, -1)


@mutant(replaces="pairwise_scores", why="the jaxtyped decorator dropped, so wrong shapes fail deep in einops")
def pairwise_scores_unchecked(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


@mutant(replaces="broadcast_channels", why="expand instead of einops.repeat")
@jaxtyped(typechecker=beartype)
def broadcast_channels_expand(img: Float[Tensor, "h w"], c: int) -> Float[Tensor, "c h w"]:
    return img.unsqueeze(0).expand(c, -1, -1)


@mutant(replaces="per_head_linear", why="the heads split as the inner factor of the hidden axis")
@jaxtyped(typechecker=beartype)
def per_head_linear_inner(x: Float[Tensor, "*batch hd_in"], w: Float[Tensor, "d_in d_out"],
                          num_heads: int) -> Float[Tensor, "*batch hd_out"]:
    heads = rearrange(x, "... (d_in heads) -> ... heads d_in", heads=num_heads)
    out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")
    return rearrange(out, "... heads d_out -> ... (heads d_out)")


@mutant(replaces="row_sums", why="torch's sum instead of einops.reduce")
@jaxtyped(typechecker=beartype)
def row_sums_torch(x: Float[Tensor, "*batch h"]) -> Float[Tensor, "*batch"]:
    return x.sum(dim=-1)
