"""Index juggling rewritten with named axes.

Code full of ``x.transpose(1, 2).reshape(b, s, -1)`` is where shape bugs hide.  einops
names every axis, so the code says what it does and checks it.  Each function below has a
jaxtyping annotation that documents the shapes and, through the ``@jaxtyped(typechecker=
beartype)`` decorator, checks them at call time: a wrong shape fails at the call with a
clear message instead of deep inside torch.

Inputs may be any floating dtype (float32, float64, ...); every result keeps the input's dtype,
as the plain torch it replaces does.

Rules (checked by reading your code, program-wide: each function, every function of your
submission it reaches by name, and the module-level code of the files involved):

1. Every function calls einops: ``rearrange``, ``reduce``, ``repeat``, ``einsum``, ``pack`` or
   ``unpack``, imported from the ``einops`` package (``einops.rearrange(...)`` or
   ``from einops import rearrange``).
2. The only matrix product allowed is ``einops.einsum``: no ``@`` operator (``a @ b``,
   ``a @= b``), and no ``einsum`` or ``repeat`` other than einops's (``torch.einsum``,
   ``Tensor.repeat`` are out), nor any other torch matrix or dot product: ``chain_matmul``,
   ``multi_dot``, ``addbmm``, ``addmv``, ``addr``, ``ger``, ``vdot``, ``vecdot``, ``bilinear``,
   ``__imatmul__``, ``imatmul``.
3. None of these names appears as a method or attribute (``x.view(...)``, ``torch.reshape``),
   as an import (``from torch import reshape``) or as a name your code does not define:
   ``transpose``, ``permute``, ``view``, ``view_as``, ``reshape``, ``reshape_as``, ``swapaxes``,
   ``swapdims``, ``movedim``, ``moveaxis``, ``T``, ``mT``, ``t``, ``H``, ``mH``, ``expand``,
   ``expand_as``, ``unsqueeze``, ``flatten``, ``unflatten``, ``unfold``, ``as_strided``,
   ``repeat_interleave``, ``tile``, ``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``, ``tensordot``,
   ``inner``, ``outer``, ``linear``, ``addmm``, ``baddbmm``, ``__matmul__``, ``__rmatmul__``,
   ``avg_pool2d``, ``adaptive_avg_pool2d``; nor their in-place forms (``transpose_``, ``t_``,
   ``unsqueeze_``, ...: the name with a trailing underscore).
4. No dynamic lookups (``getattr``, ``eval``, ``exec``, ``__import__``, ``importlib``, ``__dict__``,
   ``globals``, ...): they count as breaking the rules.

Keep the decorators and the annotations: they are part of the task.  Each function must
reject a wrong-shaped input (a missing or extra axis, axes that do not match, a non-float
tensor) at the call with jaxtyping's ``TypeCheckError``.  Points come from correct values;
the rules and the jaxtyping check can only take a function's points away.
"""

from __future__ import annotations

import torch
from beartype import beartype
from einops import einsum, rearrange, reduce, repeat
from jaxtyping import Float, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def pairwise_scores(x: Float[Tensor, "b s1 h"], y: Float[Tensor, "b s2 h"]) -> Float[Tensor, "b s1 s2"]:
    """Dot product of every row of `x` with every row of `y`, per batch element.

    ``out[b, i, j] = Σ_h x[b, i, h] · y[b, j, h]`` (attention scores before scaling).
    Plain torch: ``x @ y.transpose(-2, -1)``.  Use ``einops.einsum``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def row_sums(x: Float[Tensor, "*batch h"]) -> Float[Tensor, "*batch"]:
    """Sum over the last axis, keeping every leading axis (there may be any number of them).

    Plain torch: ``x.sum(dim=-1)``.  Use ``einops.reduce`` with an ellipsis.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def split_heads(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
    """Split the hidden axis into heads and move the head axis before the sequence axis.

    The hidden axis ``hd`` is ``(heads d)`` with heads as the *outer* factor: hidden unit
    ``k`` belongs to head ``k // d``, position ``k % d``.  Output ``[b, heads, s, d]``.
    Plain torch: ``x.view(b, s, heads, d).transpose(1, 2)``.  Use ``einops.rearrange``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def merge_heads(x: Float[Tensor, "b heads s d"]) -> Float[Tensor, "b s heads*d"]:
    """The inverse of `split_heads`: ``[b, heads, s, d] → [b, s, (heads d)]``, heads outer.

    Plain torch: ``x.transpose(1, 2).reshape(b, s, heads * d)``.  Use ``einops.rearrange``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def per_head_linear(
    x: Float[Tensor, "*batch hd_in"], w: Float[Tensor, "d_in d_out"], num_heads: int
) -> Float[Tensor, "*batch hd_out"]:
    """Apply the same linear map `w` to each head's slice of the last axis.

    The last axis of `x` is ``(heads d_in)`` (heads outer).  For every head ``k``:
    ``out[..., k·d_out:(k+1)·d_out] = x[..., k·d_in:(k+1)·d_in] @ w``.
    Output last axis ``(heads d_out)``, heads outer; leading axes are kept as they are.
    Use ``einops.rearrange`` and ``einops.einsum``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def avg_pool(img: Float[Tensor, "c hh ww"], h2: int, w2: int) -> Float[Tensor, "c h w"]:
    """Average-pool an image over non-overlapping ``h2 × w2`` blocks.

    ``hh = h·h2`` and ``ww = w·w2`` (the block index is the *outer* factor):
    ``out[c, i, j] = mean(img[c, i·h2:(i+1)·h2, j·w2:(j+1)·w2])``.
    Plain torch: ``torch.nn.functional.avg_pool2d(img, (h2, w2))``.  Use ``einops.reduce``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


@jaxtyped(typechecker=beartype)
def broadcast_channels(img: Float[Tensor, "h w"], c: int) -> Float[Tensor, "c h w"]:
    """Repeat a single-channel image into `c` identical channels.

    ``out[k, i, j] = img[i, j]`` for every channel ``k``.
    Plain torch: ``img.unsqueeze(0).expand(c, -1, -1)``.  Use ``einops.repeat``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
