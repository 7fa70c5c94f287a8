"""Strides, views and copies.

A tensor is a storage (a flat run of elements) plus a *view* of it: a shape, a stride per
dimension and a storage offset.  Element ``x[i0, i1, ...]`` lives at storage position
``offset + i0·stride0 + i1·stride1 + ...``.  Transposes, slices and many reshapes only change
the view; knowing when that is possible, and when it is not, is the point of this module.
"""

from __future__ import annotations

import math

import torch


def element_offset(stride: tuple[int, ...], index: tuple[int, ...], storage_offset: int = 0) -> int:
    """Return the storage position of the element at `index`.

    ``storage_offset + Σ_d index[d] · stride[d]``.  For a contiguous (3, 4) tensor, stride
    (4, 1), the element [1, 2] is at 1·4 + 2·1 = 6.

    Args:
        stride: one stride per dimension (non-negative ints).
        index: one non-negative index per dimension (same length as `stride`).
        storage_offset: where the view starts in its storage.

    Returns:
        ``int``.

    Raises:
        ValueError: if `stride` and `index` have different lengths.
    """
    ### BEGIN SOLUTION
    if len(stride) != len(index):
        raise ValueError(f"{len(index)} indices for {len(stride)} strides")
    return storage_offset + sum(i * s for i, s in zip(index, stride))
    ### END SOLUTION


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Return the strides of a contiguous (row-major) tensor of this shape.

    The last dimension has stride 1; each other dimension's stride is the product of the
    sizes of the dimensions after it: (2, 3, 4) → (12, 4, 1).  Follow torch's convention for
    dimensions of size 0: they count as size 1 in that product, so (2, 0, 3) → (3, 3, 1),
    exactly what ``torch.empty(shape).stride()`` reports.  A 0-dimensional shape () → ().

    Args:
        shape: a tuple of non-negative ints.

    Returns:
        A tuple of ints, one per dimension.
    """
    ### BEGIN SOLUTION
    strides = []
    running = 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))
    ### END SOLUTION


def same_storage(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Return True if `x` and `y` view the same underlying storage.

    A slice that starts at a later element, a transpose, or any other view of ``x`` shares
    its storage; ``x.clone()`` or ``x.contiguous()`` of a non-contiguous tensor does not.
    Compare the storages themselves, not the first-element addresses (``x[1:]`` starts at a
    different address but shares ``x``'s storage).  Tensors can share a storage without one
    being made from the other by a view op: ``x.detach()``, or ``torch.from_numpy(a)`` called
    twice on the same numpy array, give tensors with no ``_base`` link that still share it.

    Returns:
        ``bool``.
    """
    ### BEGIN SOLUTION
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    ### END SOLUTION


def transpose_view(x: torch.Tensor, dim0: int, dim1: int) -> torch.Tensor:
    """Return `x` with dimensions `dim0` and `dim1` swapped, as a view built with ``as_strided``.

    Swapping two dimensions swaps their sizes *and* their strides; nothing in the storage
    moves.  Build the result with ``x.as_strided(size, stride, storage_offset)`` and keep
    ``x``'s storage offset (a slice like ``x[1:]`` does not start at position 0).  The input
    may be non-contiguous (sliced, stepped, permuted): never copy it.
    Negative dims count from the end, as in torch (-1 is the last dimension).  A 0-dimensional
    tensor accepts the dims 0 and -1, as in torch, and its result is a 0-d view of it.

    Rules (checked by reading your code, and any of your code it reaches): do not use
    ``transpose``, ``permute``, ``t``, ``T``, ``mT``, ``H``, ``mH``, ``adjoint``, ``swapaxes``,
    ``swapdims`` or ``movedim``.

    Returns:
        A tensor equal to ``x.transpose(dim0, dim1)`` that shares ``x``'s storage, with the
        same storage offset and strides as torch's own ``x.transpose(dim0, dim1)``.
    """
    ### BEGIN SOLUTION
    ndim = max(x.dim(), 1)  # torch lets a 0-d tensor use the dims 0 and -1
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    if x.dim() == 0:
        return x.as_strided((), (), x.storage_offset())
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset())
    ### END SOLUTION


def can_view(x: torch.Tensor, shape: tuple[int, ...]) -> bool:
    """Return True if ``x.view(shape)`` would succeed (without copying), False otherwise.

    Decide it from ``x.shape`` and ``x.stride()`` alone.  The rule torch follows:

    1. ``shape`` may hold one -1, inferred from ``x.numel()``; the element counts must match
       (otherwise False).  As in torch, two -1s, any other negative size, or a -1 in a shape that
       also holds a size 0 anywhere (its value could be anything, e.g. ``(0, -1)`` or
       ``(0, 3, -1)``) give False.
    2. Split ``x``'s dimensions into *chunks*: maximal runs of neighbouring dimensions that
       are contiguous with each other, i.e. ``stride[d] == stride[d+1] · size[d+1]``.
       Dimensions of size 1 never break a chunk (their stride does not matter).
    3. The new shape is viewable iff its dimensions can be grouped, left to right, into runs
       whose sizes multiply to exactly the sizes of those chunks, in order (sizes of 1 may be
       put in any run).  A chunk may be split or merged with nothing but itself.
    4. A tensor with no elements can be viewed as any shape with no elements; a 0-dimensional
       tensor as any shape with one element.

    Example: ``torch.zeros(4, 6).t()`` has shape (6, 4), stride (1, 6): two chunks, (6) and
    (4).  (3, 2, 4) is viewable (6 splits into 3·2), (24,) and (4, 6) are not.

    Rules (checked by reading your code, and any of your code it reaches): do not use
    ``view``, ``reshape``, ``view_as``, ``reshape_as``, ``flatten``, ``unflatten`` or
    ``_reshape_alias`` (that would be asking torch instead of deciding).

    Args:
        x: any tensor.
        shape: the requested shape, a tuple of ints (at most one -1).

    Returns:
        ``bool``.
    """
    ### BEGIN SOLUTION
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known:
            return False
        shape[shape.index(-1)] = x.numel() // known
    if math.prod(shape) != x.numel():
        return False
    if x.dim() == 0 or x.numel() == 0:
        return True
    old_size, old_stride = list(x.shape), list(x.stride())
    view_d = len(shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel, view_numel = 1, 1
    for d in range(x.dim() - 1, -1, -1):
        tensor_numel *= old_size[d]
        chunk_ends = d == 0 or (old_size[d - 1] != 1 and old_stride[d - 1] != tensor_numel * chunk_base_stride)
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base_stride = old_stride[d - 1]
                tensor_numel, view_numel = 1, 1
    return view_d == -1
    ### END SOLUTION


def sliding_windows(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """Return every window of `size` consecutive elements of the 1-D tensor `x`, `step` apart,
    as a zero-copy view.

    Row ``i`` of the result is ``x[i·step : i·step + size]``; there are
    ``(len(x) − size) // step + 1`` windows (a tail too short for a full window is dropped).
    The result must share ``x``'s storage (use ``as_strided`` with the strides ``(step·s, s)``,
    where ``s`` is ``x``'s stride, and ``x``'s storage offset: exactly the view
    ``x.unfold(0, size, step)`` is); no element may be copied.

    Args:
        x: a 1-D tensor, possibly itself a strided view (e.g. ``y[::2]``).
        size: window length, ``1 <= size <= len(x)``.
        step: distance between window starts, ``>= 1``.

    Returns:
        A tensor of shape (number of windows, size) equal to ``x.unfold(0, size, step)``.

    Raises:
        ValueError: if ``x`` is not 1-D, or `size`/`step` are out of range.
    """
    ### BEGIN SOLUTION
    if x.dim() != 1:
        raise ValueError(f"expected a 1-D tensor, got {x.dim()} dimensions")
    if not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError(f"need 1 <= size <= {x.shape[0]} and step >= 1, got size={size}, step={step}")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())
    ### END SOLUTION
