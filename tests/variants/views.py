"""Correct but different formulations of solutions/views.py: each must pass every graded test."""

import math

import torch

from grader.mutants import variant


@variant(replaces="same_storage", why="same storage start address and same storage size")
def same_storage_ptr_eq(x, y):
    sx, sy = x.untyped_storage(), y.untyped_storage()
    return bool(sx.data_ptr() == sy.data_ptr() and sx.nbytes() == sy.nbytes())


@variant(replaces="transpose_view", why="normalises dims by hand with if dim < 0: dim += ndim, max(ndim, 1) for 0-d")
def transpose_manual_dims(x, dim0, dim1):
    n = max(x.dim(), 1)
    dim0 = dim0 + n if dim0 < 0 else dim0
    dim1 = dim1 + n if dim1 < 0 else dim1
    if x.dim() == 0:
        return x.as_strided((), (), x.storage_offset())
    size, stride = list(x.size()), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return torch.as_strided(x, size, stride, x.storage_offset())


@variant(replaces="sliding_windows", why="x.unfold(0, size, step): the same zero-copy view")
def windows_unfold(x, size, step):
    if x.dim() != 1:
        raise ValueError("1-D only")
    if not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("range")
    return x.unfold(0, size, step)


@variant(replaces="contiguous_strides", why="itertools.accumulate of the reversed clamped sizes")
def strides_accumulate(shape):
    import itertools
    import operator
    clamped = [max(n, 1) for n in reversed(shape)]
    acc = list(itertools.accumulate([1] + clamped[:-1], operator.mul)) if shape else []
    return tuple(reversed(acc))


@variant(replaces="element_offset", why="math.sumprod-free loop with explicit index")
def offset_loop(stride, index, storage_offset=0):
    if len(index) != len(stride):
        raise ValueError("mismatch")
    total = storage_offset
    for d in range(len(stride)):
        total += index[d] * stride[d]
    return total


@variant(replaces="transpose_view", why="as_strided without the offset argument: torch keeps x's storage offset")
def transpose_default_offset(x, dim0, dim1):
    if x.dim() == 0:
        return x.as_strided((), ())
    dims = list(range(x.dim()))
    a, b = dims[dim0], dims[dim1]
    size, stride = list(x.shape), list(x.stride())
    size[a], size[b] = size[b], size[a]
    stride[a], stride[b] = stride[b], stride[a]
    return x.as_strided(size, stride)


@variant(replaces="can_view", why="drops size-1 dims, builds the chunk list left to right, then matches the non-1 target sizes")
def can_view_chunk_list(x, shape):
    shape = list(shape)
    n = x.numel()
    if sum(1 for s in shape if s == -1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        if rest == 0 or n % rest:
            return False
        shape[shape.index(-1)] = n // rest
    if math.prod(shape) != n:
        return False
    if n == 0 or x.dim() == 0:
        return True
    chunks = []  # [elements, stride of the innermost dim]
    for size, stride in zip(x.shape, x.stride()):
        if size == 1:
            continue
        if chunks and chunks[-1][1] == stride * size:
            chunks[-1] = [chunks[-1][0] * size, stride]
        else:
            chunks.append([size, stride])
    target = [s for s in shape if s != 1]
    i = 0
    for elements, _ in chunks:
        product = 1
        while product < elements:
            if i >= len(target):
                return False
            product *= target[i]
            i += 1
        if product != elements:
            return False
    return i == len(target)


@variant(replaces="sliding_windows", why="as_strided through torch.as_strided with x.stride(0)")
def windows_torch_as_strided(x, size, step):
    if x.dim() != 1:
        raise ValueError("sliding_windows needs a 1-D tensor")
    length = x.size(0)
    if size < 1 or size > length or step < 1:
        raise ValueError("bad size or step")
    rows = 1 + (length - size) // step
    return torch.as_strided(x, (rows, size), (x.stride(0) * step, x.stride(0)), x.storage_offset())
