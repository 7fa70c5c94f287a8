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


# ---- breaking pass, 2026-11-22 (written before reading the tests) ----


@mutant(replaces="element_offset", why="forgets the storage offset")
def offset_no_base(stride, index, storage_offset=0):
    if len(stride) != len(index):
        raise ValueError("length")
    return sum(i * s for i, s in zip(index, stride))


@mutant(replaces="element_offset", why="no length check: zip silently truncates a mismatched index")
def offset_no_check(stride, index, storage_offset=0):
    return storage_offset + sum(i * s for i, s in zip(index, stride))


@mutant(replaces="element_offset", why="asserts the lengths: AssertionError instead of ValueError")
def offset_assert(stride, index, storage_offset=0):
    assert len(stride) == len(index)
    return storage_offset + sum(i * s for i, s in zip(index, stride))


@mutant(replaces="contiguous_strides", why="size-0 dimensions not counted as 1: (2, 0, 3) gives (0, 3, 1)")
def strides_zero_size(shape):
    out, run = [], 1
    for n in reversed(shape):
        out.append(run)
        run *= n
    return tuple(reversed(out))


@mutant(replaces="contiguous_strides", why="starts from [1]: the 0-d shape () gives (1,)")
def strides_start_one(shape):
    strides = [1]
    for n in reversed(shape[1:]):
        strides.insert(0, strides[0] * max(n, 1))
    return tuple(strides)


@mutant(replaces="same_storage", why="compares first-element addresses: a slice x[1:] looks unrelated")
def same_data_ptr(x, y):
    return x.data_ptr() == y.data_ptr()


@mutant(replaces="same_storage", why="follows ._base: misses detach() and from_numpy twice, None is None for two roots")
def same_via_base(x, y):
    rx = x._base if x._base is not None else x
    ry = y._base if y._base is not None else y
    return rx is ry


@mutant(replaces="same_storage", why="checks y's first address lies inside x's storage: an empty slice at the end points nowhere")
def same_address_range(x, y):
    start = x.untyped_storage().data_ptr()
    return start <= y.data_ptr() < start + x.untyped_storage().nbytes()


@mutant(replaces="transpose_view", why="storage offset 0: a slice x[1:] is transposed from the storage's start")
def transpose_offset0(x, dim0, dim1):
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, 0)


@mutant(replaces="transpose_view", why="contiguous() first: a non-contiguous input is copied, not viewed")
def transpose_contig_first(x, dim0, dim1):
    x = x.contiguous()
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset())


@mutant(replaces="transpose_view", why="swaps the sizes but recomputes contiguous strides")
def transpose_fresh_strides(x, dim0, dim1):
    size = list(x.shape)
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride, run = [], 1
    for n in reversed(size):
        stride.insert(0, run)
        run *= max(n, 1)
    return x.as_strided(size, stride, x.storage_offset())


@mutant(replaces="transpose_view", why="wraps dims with % x.dim(): a 0-d tensor divides by zero")
def transpose_mod_dim(x, dim0, dim1):
    dim0, dim1 = dim0 % x.dim(), dim1 % x.dim()
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset())


@mutant(replaces="can_view", why="views only contiguous tensors (or the same shape)")
def can_view_contiguous_only_b(x, shape):
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
    return x.is_contiguous() or list(x.shape) == shape or x.numel() == 0


@mutant(replaces="can_view", why="size-1 dimensions break chunks: x[:, :1]-style views with odd strides refused")
def can_view_size1_breaks(x, shape):
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
    chunks, size, stride = [], list(x.shape), list(x.stride())
    cur = size[-1]
    for d in range(x.dim() - 2, -1, -1):
        if stride[d] == stride[d + 1] * size[d + 1]:
            cur *= size[d]
        else:
            chunks.append(cur)
            cur = size[d]
    chunks.append(cur)
    chunks.reverse()
    i = 0
    for c in chunks:
        p = 1
        while p < c and i < len(shape):
            p *= shape[i]
            i += 1
        if p != c:
            return False
        while i < len(shape) and shape[i] == 1 and c == 1:
            i += 1
    return all(s == 1 for s in shape[i:])


@mutant(replaces="can_view", why="-1 next to a zero-size dimension is inferred as 0 instead of rejected")
def can_view_minus_one_zero(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known and x.numel() % known:
            return False
        shape[shape.index(-1)] = x.numel() // known if known else 0
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


@mutant(replaces="can_view", why="0-d tensor: no dimensions, no chunks, so (1,) or (1, 1) is refused")
def can_view_zero_dim(x, shape):
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
    if x.dim() == 0:
        return len(shape) == 0
    if x.numel() == 0:
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


@mutant(replaces="can_view", why="an empty tensor is checked by chunks like any other (torch views it as any empty shape)")
def can_view_empty_any(x, shape):
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
    if x.dim() == 0:
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


@mutant(replaces="can_view", why="a size-1 dimension with an odd stride breaks the chunk")
def can_view_size1_stride(x, shape):
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
        chunk_ends = d == 0 or (old_stride[d - 1] != tensor_numel * chunk_base_stride)
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


@mutant(replaces="can_view", why="leading size-1 target dims left over after the first chunk: (1, 6, 4) refused")
def can_view_trailing_ones(x, shape):
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
            while view_d >= 0 and (view_numel < tensor_numel or (shape[view_d] == 1 and d > 0)):
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base_stride = old_stride[d - 1]
                tensor_numel, view_numel = 1, 1
    return view_d == -1


@mutant(replaces="can_view", why="more than one -1 accepted (the first one inferred)")
def can_view_many_minus_one(x, shape):
    shape = list(shape)
    if any(s < -1 for s in shape):
        return False
    if shape.count(-1) > 1:
        shape = [1 if s == -1 else s for s in shape[:1]] + shape[1:]
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


@mutant(replaces="sliding_windows", why="assumes x is contiguous: strides (step, 1) even for y[::2]")
def windows_unit_stride(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    return x.as_strided((count, size), (step, 1), x.storage_offset())


@mutant(replaces="sliding_windows", why="drops x's storage offset: windows of x[3:] start at the storage's start")
def windows_offset0(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), 0)


@mutant(replaces="sliding_windows", why="size == len(x) rejected (< instead of <=)")
def windows_full_rejected(x, size, step):
    if x.dim() != 1 or not 1 <= size < x.shape[0] or step < 1:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="sliding_windows", why="no step check: step 0 divides by zero (ZeroDivisionError)")
def windows_no_step_check(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0]:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="sliding_windows", why="count off by one: forgets the first window (+1)")
def windows_ceil(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


# ---- second round (after reading the tests): more ways to get sharing and edges wrong ----


@mutant(replaces="same_storage", why="compares the StorageImpl handles (_cdata): two from_numpy of one array are two handles on one memory")
def same_storage_cdata(x, y):
    return x.untyped_storage()._cdata == y.untyped_storage()._cdata


@mutant(replaces="same_storage", why="identity of the storage objects: from_numpy twice gives two objects over the same memory")
def same_storage_is(x, y):
    return x.untyped_storage() is y.untyped_storage()


@mutant(replaces="can_view", why="any -1 on an empty tensor refused, though (2, -1) of 0 elements is (2, 0) in torch")
def can_view_minus_one_empty(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known or x.numel() == 0:
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


@mutant(replaces="transpose_view", why="clones the as_strided result: right values, but a copy")
def transpose_view_clone(x, dim0, dim1):
    ndim = max(x.dim(), 1)
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    if x.dim() == 0:
        return x.clone()
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset()).clone()


@mutant(replaces="sliding_windows", why="stacks the slices: right values, but a copy")
def sliding_windows_stack(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    return torch.stack([x[i * step:i * step + size] for i in range(count)])


@mutant(replaces="element_offset", why="returns a float (sum of float products)")
def element_offset_float(stride, index, storage_offset=0):
    if len(stride) != len(index):
        raise ValueError("length")
    return float(storage_offset + sum(i * s for i, s in zip(index, stride)))


@mutant(replaces="same_storage", why="storage start computed from data_ptr and the offset: an empty slice has data_ptr 0")
def same_storage_from_data_ptr(x, y):
    return x.data_ptr() - x.storage_offset() * x.element_size() == y.data_ptr() - y.storage_offset() * y.element_size()


@mutant(replaces="element_offset", why="storage_offset defaults to 1 (the first element), not 0")
def element_offset_default_one(stride, index, storage_offset=1):
    if len(stride) != len(index):
        raise ValueError("length")
    return storage_offset + sum(i * s for i, s in zip(index, stride))


@mutant(replaces="sliding_windows", why="only step == 0 rejected: a negative step gives a RuntimeError from as_strided")
def sliding_windows_negative_step(x, size, step):
    if x.dim() != 1 or not 1 <= size <= x.shape[0] or step == 0:
        raise ValueError("bad")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="can_view", why="a stride-0 (broadcast) dimension always starts a new chunk")
def can_view_stride0_breaks(x, shape):
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
        chunk_ends = d == 0 or (old_size[d - 1] != 1 and (old_stride[d - 1] == 0 or old_stride[d - 1] != tensor_numel * chunk_base_stride))
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


@mutant(replaces="can_view", why="contiguity tested with the dimension's own size: stride[d] == stride[d+1] * size[d]")
def can_view_own_size(x, shape):
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
    size, stride = list(x.shape), list(x.stride())
    chunks, current = [], size[-1]
    for d in range(x.dim() - 2, -1, -1):
        if size[d] == 1 or stride[d] == stride[d + 1] * size[d]:
            current *= size[d]
        else:
            chunks.append(current)
            current = size[d]
    chunks.append(current)
    chunks.reverse()
    target = [s for s in shape if s != 1]
    i = 0
    for c in chunks:
        p = 1
        while p < c and i < len(target):
            p *= target[i]
            i += 1
        if p != c:
            return False
    return i == len(target)


@mutant(replaces="can_view", why="matches the chunk sizes as a multiset, ignoring their order")
def can_view_unordered(x, shape):
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
    size, stride = list(x.shape), list(x.stride())
    chunks, current = [], size[-1]
    for d in range(x.dim() - 2, -1, -1):
        if size[d] == 1 or stride[d] == stride[d + 1] * size[d + 1]:
            current *= size[d]
        else:
            chunks.append(current)
            current = size[d]
    chunks.append(current)
    target = [s for s in shape if s != 1]
    for order in (sorted(chunks), sorted(chunks, reverse=True), chunks, chunks[::-1]):
        i, ok = 0, True
        for c in order:
            p = 1
            while p < c and i < len(target):
                p *= target[i]
                i += 1
            ok = ok and p == c
        if ok and i == len(target):
            return True
    return False


# --- breaking pass 2 (written without reading the tests) ---

@mutant(replaces="element_offset", why="zip silently truncates: a length mismatch returns a number instead of raising")
def element_offset_no_length_check(stride, index, storage_offset=0):
    return storage_offset + sum(i * s for i, s in zip(index, stride))


@mutant(replaces="element_offset", why="dot product through torch: a 0-d index gives a float (empty tensor is float32)")
def element_offset_torch_dot(stride, index, storage_offset=0):
    if len(stride) != len(index):
        raise ValueError("length mismatch")
    return storage_offset + (torch.tensor(index) * torch.tensor(stride)).sum().item()


@mutant(replaces="element_offset", why="int32 arithmetic overflows for offsets past 2**31")
def element_offset_int32(stride, index, storage_offset=0):
    import numpy as np
    if len(stride) != len(index):
        raise ValueError("length mismatch")
    return int(np.int32(storage_offset) + np.dot(np.array(index, dtype=np.int32), np.array(stride, dtype=np.int32)))


@mutant(replaces="contiguous_strides", why="a size-0 dimension zeroes the product (torch counts it as 1)")
def contiguous_strides_zero_product(shape):
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return tuple(reversed(strides))


@mutant(replaces="contiguous_strides", why="seeds the list with the last stride 1, so a 0-d shape gets (1,)")
def contiguous_strides_seeded(shape):
    strides = [1]
    for size in reversed(shape[1:]):
        strides.insert(0, strides[0] * max(size, 1))
    return tuple(strides)


@mutant(replaces="same_storage", why="follows the _base link only: misses detach() and two from_numpy of one array")
def same_storage_base_link(x, y):
    bx = x._base if x._base is not None else x
    by = y._base if y._base is not None else y
    return bx is by


@mutant(replaces="same_storage", why="asks whether the two views' own byte ranges overlap, not the storages")
def same_storage_overlap(x, y):
    xs, xe = x.data_ptr(), x.data_ptr() + max(x.numel(), 1) * x.element_size()
    ys, ye = y.data_ptr(), y.data_ptr() + max(y.numel(), 1) * y.element_size()
    return xs < ye and ys < xe


@mutant(replaces="same_storage", why="compares the StorageImpl objects (_cdata): two from_numpy of one array share memory, not the object")
def same_storage_storage_object(x, y):
    return x.untyped_storage()._cdata == y.untyped_storage()._cdata


@mutant(replaces="same_storage", why="compares one storage start with the other view's first element: asymmetric")
def same_storage_asymmetric(x, y):
    return x.untyped_storage().data_ptr() == y.data_ptr()


@mutant(replaces="transpose_view", why="no 0-d case: indexing the empty size list raises for a 0-d tensor")
def transpose_view_no_0d(x, dim0, dim1):
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset())


@mutant(replaces="transpose_view", why="0-d case rebuilt at storage offset 0 (a 0-d element x[3] sits at 3)")
def transpose_view_0d_offset_zero(x, dim0, dim1):
    if x.dim() == 0:
        return x.as_strided((), (), 0)
    ndim = x.dim()
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    size, stride = list(x.shape), list(x.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return x.as_strided(size, stride, x.storage_offset())


@mutant(replaces="transpose_view", why="recomputes strides from the swapped shape: right only for contiguous inputs")
def transpose_view_recomputed_strides(x, dim0, dim1):
    ndim = max(x.dim(), 1)
    dim0, dim1 = dim0 % ndim, dim1 % ndim
    if x.dim() == 0:
        return x.as_strided((), (), x.storage_offset())
    size = list(x.shape)
    contiguous = []
    running = 1
    for s in reversed(size):
        contiguous.append(running)
        running *= max(s, 1)
    contiguous = contiguous[::-1]
    stride = list(contiguous)
    stride[dim0], stride[dim1] = contiguous[dim1], contiguous[dim0]
    size[dim0], size[dim1] = size[dim1], size[dim0]
    base = x.contiguous()
    return base.as_strided(size, stride, base.storage_offset())


@mutant(replaces="can_view", why="-1 beside a 0 judged only by its direct neighbours: (0, 3, -1) accepted")
def can_view_adjacent_zero_only(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        i = shape.index(-1)
        if (i > 0 and shape[i - 1] == 0) or (i + 1 < len(shape) and shape[i + 1] == 0):
            return False
        known = math.prod(s for s in shape if s != -1)
        shape[i] = x.numel() // known if known else 0
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


@mutant(replaces="can_view", why="a -1 on an empty tensor always refused, though (-1, 4) on a (0, 4) tensor is fine")
def can_view_empty_minus_one(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return False
    if -1 in shape:
        if x.numel() == 0:
            return False
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


@mutant(replaces="can_view", why="only checks the -1 count: other negative sizes like (-2, -3) pass the product test")
def can_view_other_negatives(x, shape):
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


@mutant(replaces="can_view", why="no 0-d shortcut: a 0-d tensor refuses (1,) and (1, 1)")
def can_view_no_0d(x, shape):
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
    if x.numel() == 0:
        return True
    old_size, old_stride = list(x.shape), list(x.stride())
    view_d = len(shape) - 1
    chunk_base_stride = old_stride[-1] if old_stride else 1
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


@mutant(replaces="can_view", why="size-1 dimensions break chunks like any other (their stride is compared)")
def can_view_size_one_breaks_bp2(x, shape):
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
        chunk_ends = d == 0 or old_stride[d - 1] != tensor_numel * chunk_base_stride
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


@mutant(replaces="can_view", why="leftover leading 1s in the new shape are not absorbed: (1, 6, 4) of a transposed (6, 4) refused")
def can_view_leading_ones(x, shape):
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
            while view_d >= 0 and view_numel < tensor_numel:
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base_stride = old_stride[d - 1]
                tensor_numel, view_numel = 1, 1
    return view_d == -1


@mutant(replaces="can_view", why="neighbours merge when the outer stride is a multiple of the inner span (stride 0 of expand merges)")
def can_view_divisible_strides(x, shape):
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
        span = tensor_numel * chunk_base_stride
        chunk_ends = d == 0 or (old_size[d - 1] != 1 and (span == 0 or old_stride[d - 1] % span != 0))
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


@mutant(replaces="sliding_windows", why="no step check: step 0 divides by zero, a negative step reaches as_strided (not ValueError)")
def sliding_windows_no_step_check(x, size, step):
    if x.dim() != 1:
        raise ValueError("expected a 1-D tensor")
    if not 1 <= size <= x.shape[0]:
        raise ValueError("size out of range")
    count = (x.shape[0] - size) // step + 1
    (s,) = x.stride()
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="sliding_windows", why="no 1-D check: a 2-D input is windowed along its rows instead of refused")
def sliding_windows_no_dim_check(x, size, step):
    if not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("out of range")
    count = (x.shape[0] - size) // step + 1
    s = x.stride(0)
    return x.as_strided((count, size), (step * s, s), x.storage_offset())


@mutant(replaces="sliding_windows", why="makes the input contiguous first: a stepped view y[::2] is copied")
def sliding_windows_contiguous_first(x, size, step):
    if x.dim() != 1:
        raise ValueError("expected a 1-D tensor")
    if not 1 <= size <= x.shape[0] or step < 1:
        raise ValueError("out of range")
    x = x.contiguous()
    count = (x.shape[0] - size) // step + 1
    return x.as_strided((count, size), (step, 1), x.storage_offset())
