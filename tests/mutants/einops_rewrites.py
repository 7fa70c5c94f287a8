"""Mutants of solutions/einops_rewrites.py: each is one bug a student plausibly writes."""

from beartype import beartype
from einops import einsum, rearrange, reduce
from jaxtyping import Float, jaxtyped
from torch import Tensor

from grader.authoring.mutants import edit, mutant


edit("split_heads_inner", within="split_heads",
     why="heads as the inner factor of the hidden axis: (d heads)",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (d heads) -> b heads s d", heads=num_heads)')


edit("merge_heads_inner", within="merge_heads",
     why="merges as (d heads), not (heads d)",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new='return rearrange(x, "b heads s d -> b s (d heads)")')


edit("avg_pool_sum", within="avg_pool",
     why="sums the blocks instead of averaging them",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "sum", h2=h2, w2=w2)')


edit("avg_pool_inner", within="avg_pool",
     why="block index as the inner factor: (h2 h)",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h2 h) (w2 w) -> c h w", "mean", h2=h2, w2=w2)')


edit("pairwise_scores_matmul", within="pairwise_scores",
     why="plain matmul with a transpose instead of einops",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new="return x @ y.transpose(-2, -1)")


@mutant(replaces="pairwise_scores", why="the jaxtyped decorator dropped, so wrong shapes fail deep in einops", against="5f91f0a97f88")
def pairwise_scores_unchecked(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


edit("broadcast_channels_expand", within="broadcast_channels",
     why="expand instead of einops.repeat",
     old='return repeat(img, "h w -> c h w", c=c)',
     new="return img.unsqueeze(0).expand(c, -1, -1)")


edit("per_head_linear_inner", within="per_head_linear",
     why="the heads split as the inner factor of the hidden axis",
     old='heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
     new='heads = rearrange(x, "... (d_in heads) -> ... heads d_in", heads=num_heads)')


edit("row_sums_torch", within="row_sums",
     why="torch's sum instead of einops.reduce",
     old='return reduce(x, "... h -> ...", "sum")',
     new="return x.sum(dim=-1)")


# -- breaking pass (2026-11-22) ------------------------------------------------------------

edit("bk_pairwise_transposed", within="pairwise_scores",
     why="returns the scores transposed (b s2 s1): right shape only when s1 == s2",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return rearrange(einsum(x, y, "b s1 h, b s2 h -> b s2 s1"), "b i j -> b i j")')


edit("bk_pairwise_scaled", within="pairwise_scores",
     why="scales by 1/sqrt(h) as attention does; the task is the raw dot product",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2") / x.shape[-1] ** 0.5')


edit("bk_pairwise_float32", within="pairwise_scores",
     why="computes in float32 whatever the input dtype (float64 loses precision and dtype)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return einsum(x.float(), y.float(), "b s1 h, b s2 h -> b s1 s2")')


edit("bk_row_means", within="row_sums",
     why="averages instead of summing: equal only when h == 1",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x, "... h -> ...", "mean")')


edit("bk_row_sums_needs_batch", within="row_sums",
     why="assumes at least one leading axis: a 1-D input fails",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x, "b ... h -> b ...", "sum")')


edit("bk_row_sums_2d", within="row_sums",
     why="assumes exactly one leading axis (2-D input only)",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x, "b h -> b", "sum")')


edit("bk_split_heads_inner", within="split_heads",
     why="heads as the inner factor of (heads d): unit k goes to head k % heads",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (d heads) -> b heads s d", heads=num_heads)')


edit("bk_split_heads_d", within="split_heads",
     why="reads num_heads as the head size d: right only when heads == d",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (heads d) -> b heads s d", d=num_heads)')


edit("bk_split_heads_no_move", within="split_heads",
     why="keeps the sequence axis before the heads: [b s heads d] (right shape when s == heads)",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (heads d) -> b s heads d", heads=num_heads)')


edit("bk_merge_heads_inner", within="merge_heads",
     why="merges with heads as the inner factor: (d heads)",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new='return rearrange(x, "b heads s d -> b s (d heads)")')


edit("bk_merge_heads_no_move", within="merge_heads",
     why="reads the input as [b s heads d] (no axis move): right shape only when heads == s",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new='return rearrange(x, "b s heads d -> b s (heads d)")')


edit("bk_per_head_in_inner", within="per_head_linear",
     why="splits the input's last axis with heads inner: (d_in heads)",
     edits=[('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
            'h = rearrange(x, "... (d_in heads) -> ... heads d_in", heads=num_heads)'),
           ('out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
            'out = einsum(h, w, "... heads d_in, d_in d_out -> ... heads d_out")')])


edit("bk_per_head_out_inner", within="per_head_linear",
     why="merges the output with heads inner: (d_out heads)",
     edits=[('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
            'h = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)'),
           ('out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
            'out = einsum(h, w, "... heads d_in, d_in d_out -> ... heads d_out")'),
           ('return rearrange(out, "... heads d_out -> ... (heads d_out)")',
            'return rearrange(out, "... heads d_out -> ... (d_out heads)")')])


edit("bk_per_head_3d_only", within="per_head_linear",
     why="handles only [b s hd] inputs: other numbers of leading axes fail",
     edits=[('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
            'h = rearrange(x, "b s (heads d_in) -> b s heads d_in", heads=num_heads)'),
           ('out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
            'out = einsum(h, w, "b s heads d_in, d_in d_out -> b s heads d_out")'),
           ('return rearrange(out, "... heads d_out -> ... (heads d_out)")',
            'return rearrange(out, "b s heads d_out -> b s (heads d_out)")')])


edit("bk_per_head_w_transposed", within="per_head_linear",
     why="contracts with w's output axis (uses w transposed): right shape only for square w",
     edits=[('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
            'h = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)'),
           ('out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
            'out = einsum(h, w, "... heads d_in, d_out d_in -> ... heads d_out")')])


edit("bk_avg_pool_strided", within="avg_pool",
     why="block index inner (strided sampling): averages img[c, i::h, j::w], not blocks",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h2 h) (w2 w) -> c h w", "mean", h2=h2, w2=w2)')


edit("bk_avg_pool_swapped", within="avg_pool",
     why="swaps the block sizes (h2 along the width): right only for square blocks",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=w2, w2=h2)')


edit("bk_avg_pool_max", within="avg_pool",
     why="max-pools instead of averaging",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "max", h2=h2, w2=w2)')


edit("bk_avg_pool_output_size", within="avg_pool",
     why="treats h2, w2 as the output size (h, w) instead of the block size",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h=h2, w=w2)')


edit("bk_broadcast_transposed", within="broadcast_channels",
     why="transposes the image (c w h): right shape only for square images",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return repeat(img, "h w -> c w h", c=c)')


edit("bk_broadcast_one_channel", within="broadcast_channels",
     why="ignores c and returns one channel [1 h w] (jaxtyping cannot see it: c is not bound by the input)",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return repeat(img, "h w -> k h w", k=1)')


@mutant(replaces="merge_heads", why="drops the @jaxtyped decorator: wrong shapes fail inside einops, not with TypeCheckError", against="1a610c1cdae2")
def bk_merge_heads_no_decorator(x: Float[Tensor, "b heads s d"]) -> Float[Tensor, "b s heads*d"]:
    return rearrange(x, "b heads s d -> b s (heads d)")


@mutant(replaces="pairwise_scores", why="checks nothing: typechecker=None makes @jaxtyped a no-op for the arguments", against="5f91f0a97f88")
@jaxtyped(typechecker=None)
def bk_pairwise_no_typechecker(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


@mutant(replaces="split_heads", why="loosens the annotation to any shape: a 2-D input is not rejected by jaxtyping", against="ea1c99a15575")
@jaxtyped(typechecker=beartype)
def bk_split_heads_loose(x: Float[Tensor, "..."], num_heads: int) -> Float[Tensor, "..."]:
    return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)


edit("bk_pairwise_matmul_op", within="pairwise_scores",
     why="uses the @ operator on an einops-transposed y (rule: no @)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return x @ rearrange(y, "b s h -> b h s")')


edit("bk_pairwise_torch_einsum", within="pairwise_scores",
     why="torch.einsum instead of einops.einsum (rule)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return torch.einsum("bih,bjh->bij", rearrange(x, "b s h -> b s h"), y)')


edit("bk_broadcast_unsqueeze", within="broadcast_channels",
     why="unsqueeze + expand, with an einops no-op to look compliant (rule)",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return rearrange(img, "h w -> h w").unsqueeze(0).expand(c, -1, -1)')


edit("bk_avg_pool_torch", within="avg_pool",
     why="F.avg_pool2d behind an einops no-op (rule)",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return torch.nn.functional.avg_pool2d(rearrange(img, "c h w -> c h w"), (h2, w2))')


edit("bk_merge_heads_helper", within="merge_heads",
     why="transpose + flatten hidden behind a nested helper (rule, program-wide)",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new=("def _swap(t):\n"
          "        return t.transpose(1, 2).flatten(2)\n"
          '    return _swap(rearrange(x, "b h s d -> b h s d"))'))


edit("bk_split_heads_getattr", within="split_heads",
     why="reaches view via getattr (a dynamic escape counts as breaking the rule)",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new=("b, s, hd = x.shape\n"
          '    v = getattr(x, "vi" + "ew")(b, s, num_heads, hd // num_heads)\n'
          '    return rearrange(v, "b s h d -> b h s d")'))


edit("bk_row_sums_torch", within="row_sums",
     why="x.sum(-1) with no einops call at all (rule: every function calls einops)",
     old='return reduce(x, "... h -> ...", "sum")',
     new="return x.sum(dim=-1)")


edit("bk_broadcast_tensor_repeat", within="broadcast_channels",
     why="Tensor.repeat after an einops unsqueeze (rule: only einops.repeat)",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return rearrange(img, "h w -> 1 h w").repeat(c, 1, 1)')


edit("bk_pairwise_dunder_matmul", within="pairwise_scores",
     why="calls __matmul__ by name instead of the @ operator (rule)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return x.__matmul__(rearrange(y, "b s h -> b h s"))')


edit("bk_per_head_f_linear", within="per_head_linear",
     why="F.linear on einops-split heads instead of einops.einsum (rule: linear)",
     old='out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
     new='out = torch.nn.functional.linear(heads, rearrange(w, "i o -> o i"))')


edit("bk_pairwise_from_torch_import", within="pairwise_scores",
     why="imports torch's einsum by name inside the function (rule: only einops.einsum)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new=("from torch import einsum as tensor_einsum\n"
          "\n"
          '    return rearrange(tensor_einsum("bih,bjh->bij", x, y), "b i j -> b i j")'))


edit("bk_row_sums_no_return", within="row_sums",
     why="computes the sum but forgets to return it (returns None)",
     old='return reduce(x, "... h -> ...", "sum")',
     new='reduce(x, "... h -> ...", "sum")')


@mutant(replaces="avg_pool", why="@beartype alone instead of @jaxtyped: a wrong rank raises beartype's error, not TypeCheckError", against="38483d9dd1c9")
@beartype
def bk_avg_pool_beartype_only(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)


edit("bk_merge_heads_alias_import", within="merge_heads",
     why="imports torch's reshape under another name (rule: no forbidden name as an import)",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new=("from torch import reshape as merge\n"
          "\n"
          '    moved = rearrange(x, "b heads s d -> b s heads d")\n'
          "    return merge(moved, (x.shape[0], x.shape[2], -1))"))


# ---- breaking pass 2 (independent eyes) ----
edit("pairwise_scores_f32", within="pairwise_scores",
     why="computes in float32 for speed: a float64 input comes back float32",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return einsum(x.float(), y.float(), "b s1 h, b s2 h -> b s1 s2")')


edit("pairwise_scores_scaled", within="pairwise_scores",
     why="scales by 1/sqrt(h) like attention (the docstring says before scaling)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2") / x.shape[-1] ** 0.5')


edit("pairwise_scores_attrgetter", within="pairwise_scores",
     why="dodges the name rule with operator.attrgetter('mT'): a dynamic lookup",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new=("import operator\n"
          "\n"
          '    return einsum(x, operator.attrgetter("mT")(y), "b i h, b h j -> b i j")'))


@mutant(replaces="pairwise_scores", why="y's batch axis given its own name: a batch mismatch is not a TypeCheckError", against="5f91f0a97f88")
@jaxtyped(typechecker=beartype)
def pairwise_scores_loose_batch(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "c s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


@mutant(replaces="pairwise_scores", why="@beartype without @jaxtyped: wrong shapes raise beartype's violation, not jaxtyping's TypeCheckError", against="5f91f0a97f88")
@beartype
def pairwise_scores_beartype_only(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")


edit("pairwise_scores_getattribute", within="pairwise_scores",
     why="type(y).__getattribute__(y, 'mT'): a dynamic lookup of a banned name",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new=('yt = type(y).__getattribute__(y, "m" + "T")\n'
          '    return einsum(x, yt, "b i h, b h j -> b i j")'))


edit("row_sums_needs_batch", within="row_sums",
     why="'b ... h -> b ...' needs one leading axis: a 1-D input fails",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x, "b ... h -> b ...", "sum")')


edit("row_sums_keepdim", within="row_sums",
     why="keeps the summed axis as size 1",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x, "... h -> ... 1", "sum")')


@mutant(replaces="row_sums", why="annotations loosened to plain Tensor: an integer tensor is summed instead of rejected", against="09bdb0419d65")
@jaxtyped(typechecker=beartype)
def row_sums_plain_tensor(x: Tensor) -> Tensor:
    return reduce(x, "... h -> ...", "sum")


edit("split_heads_d_is_heads", within="split_heads",
     why="num_heads passed as d: right only when hd == heads**2",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (heads d) -> b heads s d", d=num_heads)')


edit("split_heads_no_move", within="split_heads",
     why="forgets to move heads before the sequence axis (same shape when s == heads)",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (heads d) -> b s heads d", heads=num_heads)')


edit("split_heads_before_batch", within="split_heads",
     why="heads moved in front of the batch axis (same shape when b == 1 and heads == 1)",
     old='return rearrange(x, "b s (heads d) -> b heads s d", heads=num_heads)',
     new='return rearrange(x, "b s (heads d) -> heads b s d", heads=num_heads)')


edit("merge_heads_no_move", within="merge_heads",
     why="merges (s d) and leaves heads in place (passes the shape check when heads == s)",
     old='return rearrange(x, "b heads s d -> b s (heads d)")',
     new='return rearrange(x, "b heads s d -> b heads (s d)")')


edit("per_head_linear_one_lead", within="per_head_linear",
     why="assumes exactly one leading axis",
     edits=[('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)',
            'heads = rearrange(x, "b (heads d_in) -> b heads d_in", heads=num_heads)'),
           ('out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
            'out = einsum(heads, w, "b heads d_in, d_in d_out -> b heads d_out")'),
           ('return rearrange(out, "... heads d_out -> ... (heads d_out)")',
            'return rearrange(out, "b heads d_out -> b (heads d_out)")')])


edit("per_head_linear_w_transposed", within="per_head_linear",
     why="contracts w's output axis (w used transposed; runs only for square w)",
     old='out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")',
     new='out = einsum(heads, w, "... heads k, j k -> ... heads j")')


edit("per_head_linear_out_inner", within="per_head_linear",
     why="output merged heads-inner: (d_out heads)",
     old='return rearrange(out, "... heads d_out -> ... (heads d_out)")',
     new='return rearrange(out, "... heads d_out -> ... (d_out heads)")')


edit("avg_pool_swapped_blocks", within="avg_pool",
     why="h2 and w2 swapped: right only for square blocks",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=w2, w2=h2)')


edit("avg_pool_div_h2_squared", within="avg_pool",
     why="divides the block sum by h2*h2",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w w2) -> c h w", "sum", h2=h2, w2=w2) / (h2 * h2)')


edit("avg_pool_width_inner", within="avg_pool",
     why="block index inner on the width axis only: (w2 w)",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img, "c (h h2) (w2 w) -> c h w", "mean", h2=h2, w2=w2)')


edit("avg_pool_f32", within="avg_pool",
     why="averages in float32: a float64 image comes back float32",
     old='return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)',
     new='return reduce(img.float(), "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)')


@mutant(replaces="avg_pool", why="channel axis made variadic: a 2-D image reaches einops instead of raising TypeCheckError", against="38483d9dd1c9")
@jaxtyped(typechecker=beartype)
def avg_pool_variadic(img: Float[Tensor, "*c hh ww"], h2: int, w2: int) -> Float[Tensor, "*c h w"]:
    return reduce(img, "c (h h2) (w w2) -> c h w", "mean", h2=h2, w2=w2)


edit("broadcast_channels_zeros", within="broadcast_channels",
     why="broadcasts against float32 zeros: a float16/bfloat16 image comes back float32",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return rearrange(img, "h w -> 1 h w") + torch.zeros(c, 1, 1)')


edit("broadcast_channels_tensor_repeat", within="broadcast_channels",
     why="Tensor.repeat after a rearrange: only einops's repeat is allowed",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return rearrange(img, "h w -> 1 h w").repeat(c, 1, 1)')


edit("broadcast_channels_transposed", within="broadcast_channels",
     why="repeats into (c w h): right shape only for a square image",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return repeat(img, "h w -> c w h", c=c)')


edit("per_head_linear_multi_dot", within="per_head_linear",
     why="torch.linalg.multi_dot on the flattened heads: a matrix product other than einops.einsum (rule 2)",
     old=('heads = rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)\n'
          '    out = einsum(heads, w, "... heads d_in, d_in d_out -> ... heads d_out")\n'
          '    return rearrange(out, "... heads d_out -> ... (heads d_out)")'),
     new=("import einops\n"
          "\n"
          '    rows, packed = einops.pack([rearrange(x, "... (heads d_in) -> ... heads d_in", heads=num_heads)], "* d_in")\n'
          "    out = torch.linalg.multi_dot([rows, w])\n"
          '    [unpacked] = einops.unpack(out, packed, "* d_out")\n'
          '    return rearrange(unpacked, "... heads d_out -> ... (heads d_out)")'))


edit("pairwise_scores_vecdot", within="pairwise_scores",
     why="torch.linalg.vecdot of broadcast rows: a dot product other than einops.einsum (rule 2)",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return torch.linalg.vecdot(rearrange(x, "b i h -> b i 1 h"), rearrange(y, "b j h -> b 1 j h"))')


edit("pairwise_scores_transpose_inplace", within="pairwise_scores",
     why="the in-place transpose_ on a copy: the name rule covers in-place forms too",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new='return einsum(x, y.clone().transpose_(-2, -1), "b i h, b h j -> b i j")')


edit("broadcast_channels_unsqueeze_inplace", within="broadcast_channels",
     why="the in-place unsqueeze_ on a copy before einops.repeat",
     old='return repeat(img, "h w -> c h w", c=c)',
     new='return repeat(img.clone().unsqueeze_(0), "1 h w -> c h w", c=c)')


# -- every default and every case the docstrings name (issue 30): the result keeps the input's dtype ---

edit("i30_row_sums_half_upcast", within="row_sums",
     why="i30: sums 16-bit input in float32 (for accuracy) and returns float32, not the input's dtype",
     old='return reduce(x, "... h -> ...", "sum")',
     new='return reduce(x.float() if x.element_size() == 2 else x, "... h -> ...", "sum")')
edit("i30_pairwise_half_upcast", within="pairwise_scores",
     why="i30: multiplies 16-bit input in float32 (for accuracy) and returns float32, not the input's dtype",
     old='return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")',
     new=('if x.element_size() == 2:\n'
          '        x, y = x.float(), y.float()\n'
          '    return einsum(x, y, "b s1 h, b s2 h -> b s1 s2")'))
