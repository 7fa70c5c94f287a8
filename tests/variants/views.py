"""Correct but different formulations of solutions/views.py: each must pass every graded test."""

import math

import torch

from grader.authoring.mutants import variant


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


# --- breaking pass 2 ---

@variant(replaces="transpose_view", why="omits storage_offset: as_strided keeps the input's offset by default")
def transpose_view_default_offset(x, dim0, dim1):
    if x.dim() == 0:
        if dim0 not in (0, -1) or dim1 not in (0, -1):
            raise IndexError("dimension out of range")
        return x.as_strided((), ())
    n = x.dim()
    dims = [d + n if d < 0 else d for d in (dim0, dim1)]
    order = list(range(n))
    order[dims[0]], order[dims[1]] = order[dims[1]], order[dims[0]]
    return x.as_strided([x.shape[i] for i in order], [x.stride(i) for i in order])


@variant(replaces="sliding_windows", why="window count as a ceiling division, strides read per dimension")
def sliding_windows_ceil(x, size, step):
    if x.dim() != 1:
        raise ValueError("need 1-D")
    n = x.shape[0]
    if size < 1 or size > n or step < 1:
        raise ValueError("bad size/step")
    count = -(-(n - size + 1) // step)
    return torch.as_strided(x, (count, size), (step * x.stride(0), x.stride(0)), x.storage_offset())


@variant(replaces="contiguous_strides", why="suffix products with math.prod over the clamped later sizes")
def contiguous_strides_prod(shape):
    return tuple(math.prod(max(s, 1) for s in shape[i + 1:]) for i in range(len(shape)))


@variant(replaces="can_view", why="forward greedy grouping of chunks, left to right, ones skipped")
def can_view_forward(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    n = x.numel()
    if -1 in shape:
        rest = 1
        for s in shape:
            if s != -1:
                rest *= s
        if rest == 0 or n % rest:
            return False
        shape[shape.index(-1)] = n // rest
    total = 1
    for s in shape:
        total *= s
    if total != n:
        return False
    if x.dim() == 0 or n == 0:
        return True
    dims = [(sz, st) for sz, st in zip(x.shape, x.stride()) if sz != 1]
    chunks = []
    for sz, st in dims:
        if chunks and chunks[-1][1] == st * sz:
            chunks[-1] = (chunks[-1][0] * sz, st)
        else:
            chunks.append((sz, st))
    new = [s for s in shape if s != 1]
    i = 0
    for size, _ in chunks:
        acc = 1
        while acc < size and i < len(new):
            acc *= new[i]
            i += 1
        if acc != size:
            return False
    return i == len(new)


@variant(replaces="transpose_view", why="the new dimension order in a local list named `permute` (no torch call)")
def ok_transpose_local_permute(x, dim0, dim1):
    ndim = max(x.dim(), 1)
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    if x.dim() == 0:
        return x.as_strided((), (), x.storage_offset())
    permute = list(range(x.dim()))
    permute[dim0], permute[dim1] = permute[dim1], permute[dim0]
    return x.as_strided([x.shape[i] for i in permute], [x.stride()[i] for i in permute], x.storage_offset())


@variant(replaces="can_view", why="the target shape, -1 resolved, kept in a local named `view` (no torch call)")
def ok_can_view_local_name(x, shape):
    view = list(shape)
    if view.count(-1) > 1 or any(s < -1 for s in view):
        return False
    if -1 in view:
        known = math.prod(s for s in view if s != -1)
        if known == 0 or x.numel() % known:
            return False
        view[view.index(-1)] = x.numel() // known
    if math.prod(view) != x.numel():
        return False
    if x.dim() == 0 or x.numel() == 0:
        return True
    old_size, old_stride = list(x.shape), list(x.stride())
    view_d = len(view) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel, view_numel = 1, 1
    for d in range(x.dim() - 1, -1, -1):
        tensor_numel *= old_size[d]
        chunk_ends = d == 0 or (old_size[d - 1] != 1 and old_stride[d - 1] != tensor_numel * chunk_base_stride)
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or view[view_d] == 1):
                view_numel *= view[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base_stride = old_stride[d - 1]
                tensor_numel, view_numel = 1, 1
    return view_d == -1
