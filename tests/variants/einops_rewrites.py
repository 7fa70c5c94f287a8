"""Correct but different formulations of solutions/einops_rewrites.py: every graded test must pass on each."""

import torch
from beartype import beartype
from einops import einsum, rearrange, reduce, repeat
from jaxtyping import Float, jaxtyped
from torch import Tensor

from grader.authoring.mutants import variant


@variant(replaces="pairwise_scores", why="broadcast product then einops.reduce over h")
@jaxtyped(typechecker=beartype)
def ok_pairwise_reduce(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    prod = rearrange(x, "b i h -> b i 1 h") * rearrange(y, "b j h -> b 1 j h")
    return reduce(prod, "b i j h -> b i j", "sum")


@variant(replaces="row_sums", why="einops.einsum with a ones vector")
@jaxtyped(typechecker=beartype)
def ok_row_sums_einsum(x: Float[Tensor, "*batch h"]) -> Float[Tensor, "*batch"]:
    return einsum(x, torch.ones(x.shape[-1], dtype=x.dtype), "... h, h -> ...")


@variant(replaces="split_heads", why="explicit d instead of heads in the pattern")
@jaxtyped(typechecker=beartype)
def ok_split_heads_d(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
    return rearrange(x, "b s (heads d) -> b heads s d", d=x.shape[-1] // num_heads).contiguous()


@variant(replaces="merge_heads", why="two rearranges (move, then merge)")
@jaxtyped(typechecker=beartype)
def ok_merge_heads_two_steps(x: Float[Tensor, "b heads s d"]) -> Float[Tensor, "b s heads*d"]:
    moved = rearrange(x, "b heads s d -> b s heads d")
    return rearrange(moved, "b s heads d -> b s (heads d)")


@variant(replaces="per_head_linear", why="pack/unpack the leading axes, one einsum with a named head axis")
@jaxtyped(typechecker=beartype)
def ok_per_head_pack(x: Float[Tensor, "*batch hd_in"], w: Float[Tensor, "d_in d_out"], num_heads: int) -> Float[Tensor, "*batch hd_out"]:
    from einops import pack, unpack

    flat, ps = pack([x], "* hd")
    h = rearrange(flat, "n (heads d_in) -> n heads d_in", heads=num_heads)
    out = rearrange(einsum(h, w, "n heads d_in, d_in d_out -> n heads d_out"), "n heads d_out -> n (heads d_out)")
    return unpack(out, ps, "* hd")[0]


@variant(replaces="avg_pool", why="sum over the block divided by its size")
@jaxtyped(typechecker=beartype)
def ok_avg_pool_sum(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    return reduce(img, "c (h h2) (w w2) -> c h w", "sum", h2=h2, w2=w2) / (h2 * w2)


@variant(replaces="avg_pool", why="two reduces, one axis at a time")
@jaxtyped(typechecker=beartype)
def ok_avg_pool_two_steps(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    rows = reduce(img, "c (h h2) ww -> c h ww", "mean", h2=h2)
    return reduce(rows, "c h (w w2) -> c h w", "mean", w2=w2)


@variant(replaces="broadcast_channels", why="a copy rather than a broadcast view")
@jaxtyped(typechecker=beartype)
def ok_broadcast_copy(img: Float[Tensor, "h w"], c: int) -> Float[Tensor, "c h w"]:
    return repeat(img, "h w -> c h w", c=c).clone()


@variant(replaces="pairwise_scores", why="einops imported as a module under an alias, einsum through it")
@jaxtyped(typechecker=beartype)
def ok_pairwise_module_alias(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    import einops as eo

    return eo.einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


@variant(replaces="broadcast_channels", why="einops.repeat through the module, local variables named like torch methods")
@jaxtyped(typechecker=beartype)
def ok_broadcast_named_locals(img: Float[Tensor, "h w"], c: int) -> Float[Tensor, "c h w"]:
    import einops

    view = einops.repeat(img, "h w -> c h w", c=c)
    expand = view.contiguous()
    return expand


@variant(replaces="merge_heads", why="pack/unpack-free, rearrange with explicit sizes taken from the shape")
@jaxtyped(typechecker=beartype)
def ok_merge_heads_sizes(x: Float[Tensor, "b heads s d"]) -> Float[Tensor, "b s heads*d"]:
    b, heads, s, d = x.shape
    return rearrange(x, "b heads s d -> b s (heads d)", b=b, heads=heads, s=s, d=d)


# ---- breaking pass 2 (independent eyes) ----
@variant(replaces="pairwise_scores", why="broadcast multiply then einops.reduce sum: no @, no einsum, no banned name")
@jaxtyped(typechecker=beartype)
def pairwise_scores_broadcast(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    prod = rearrange(x, "b i h -> b i 1 h") * rearrange(y, "b j h -> b 1 j h")
    return reduce(prod, "b i j h -> b i j", "sum")


@variant(replaces="pairwise_scores", why="rearrange y to [b h s2], then an einops.einsum over h")
@jaxtyped(typechecker=beartype)
def pairwise_scores_rearranged(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, rearrange(y, "b j h -> b h j"), "b i h, b h j -> b i j")


@variant(replaces="row_sums", why="single-operand einops.einsum")
@jaxtyped(typechecker=beartype)
def row_sums_einsum(x: Float[Tensor, "*batch h"]) -> Float[Tensor, "*batch"]:
    return einsum(x, "... h -> ...")


@variant(replaces="row_sums", why="mean times the axis length (other rounding)")
@jaxtyped(typechecker=beartype)
def row_sums_mean_times_h(x: Float[Tensor, "*batch h"]) -> Float[Tensor, "*batch"]:
    return reduce(x, "... h -> ...", "mean") * x.shape[-1]


@variant(replaces="split_heads", why="d from hd // num_heads, then a contiguous copy")
@jaxtyped(typechecker=beartype)
def split_heads_contiguous(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
    return rearrange(x, "b s (h d) -> b h s d", d=x.shape[-1] // num_heads).contiguous()


@variant(replaces="per_head_linear", why="heads derived from w's d_in; einsum straight to the merged axis via rearrange")
@jaxtyped(typechecker=beartype)
def per_head_linear_from_w(
    x: Float[Tensor, "*batch hd_in"], w: Float[Tensor, "d_in d_out"], num_heads: int
) -> Float[Tensor, "*batch hd_out"]:
    split = rearrange(x, "... (k i) -> ... k i", i=w.shape[0])
    return rearrange(einsum(split, w, "... k i, i o -> ... k o"), "... k o -> ... (k o)")


@variant(replaces="avg_pool", why="einops sum divided by the block size")
@jaxtyped(typechecker=beartype)
def avg_pool_sum_div(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    return reduce(img, "c (h h2) (w w2) -> c h w", "sum", h2=h2, w2=w2) / (h2 * w2)


@variant(replaces="broadcast_channels", why="index a new axis with None, then einops.repeat the size-1 axis")
@jaxtyped(typechecker=beartype)
def broadcast_channels_none_index(img: Float[Tensor, "h w"], c: int) -> Float[Tensor, "c h w"]:
    return repeat(img[None], "1 h w -> c h w", c=c)
