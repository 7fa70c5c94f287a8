"""Mutants of solutions/views.py: each is one bug a student plausibly writes."""

import math

import torch

from grader.mutants import mutant


@mutant(replaces="element_offset", why="ignores the storage offset")
def element_offset_no_offset(stride, index, storage_offset=0):
    return sum(i * s for i, s in zip(index, stride))


@mutant(replaces="contiguous_strides", why="multiplies raw sizes, so a size-0 dimension zeroes the strides before it")
def contiguous_strides_zero_sizes(shape):
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return tuple(reversed(strides))


@mutant(replaces="same_storage", why="compares first-element addresses, so a slice looks like a different storage")
def same_storage_data_ptr(x, y):
    return x.data_ptr() == y.data_ptr()


@mutant(replaces="transpose_view", why="starts the view at storage position 0, so slices view the wrong elements")
def transpose_view_offset_zero(x, dim0, dim1):
    dim0, dim1 = dim0 % x.dim(), dim1 % x.dim()
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, 0)


@mutant(replaces="transpose_view", why="swaps the sizes but not the strides")
def transpose_view_sizes_only(x, dim0, dim1):
    dim0, dim1 = dim0 % x.dim(), dim1 % x.dim()
    size = list(x.shape)
    size[dim0], size[dim1] = size[dim1], size[dim0]
    return x.as_strided(size, x.stride(), x.storage_offset())


@mutant(replaces="transpose_view", why="calls transpose instead of building the view")
def transpose_view_calls_transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


@mutant(replaces="can_view", why="only contiguous tensors are viewable")
def can_view_contiguous_only(x, shape):
    shape = list(shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known:
            return False
        shape[shape.index(-1)] = x.numel() // known
    return math.prod(shape) == x.numel() and x.is_contiguous()


@mutant(replaces="can_view", why="asks torch by trying view()")
def can_view_tries(x, shape):
    try:
        x.view(shape)
        return True
    except RuntimeError:
        return False


@mutant(replaces="can_view", why="size-1 dimensions break chunks (their strides are compared too)")
def can_view_size_one_breaks(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
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
    view_d, base = len(shape) - 1, old_stride[-1]
    tensor_numel = view_numel = 1
    for d in range(x.dim() - 1, -1, -1):
        tensor_numel *= old_size[d]
        if d == 0 or old_stride[d - 1] != tensor_numel * base:
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                base, tensor_numel, view_numel = old_stride[d - 1], 1, 1
    return view_d == -1


@mutant(replaces="sliding_windows", why="off by one: drops the last full window")
def sliding_windows_off_by_one(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad arguments")
    count = (x.shape[0] - size) // step
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="sliding_windows", why="copies the windows with torch.stack (not zero-copy)")
def sliding_windows_copies(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad arguments")
    return torch.stack([x[i:i + size] for i in range(0, x.shape[0] - size + 1, step)])


@mutant(replaces="sliding_windows", why="assumes x is contiguous (stride 1) and starts at storage position 0")
def sliding_windows_assumes_contiguous(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad arguments")
    count = (x.shape[0] - size) // step + 1
    return x.as_strided((count, size), (step, 1))
