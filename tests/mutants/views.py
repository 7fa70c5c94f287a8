"""Mutants of solutions/views.py: each is one bug a student plausibly writes."""

import math

from grader.authoring.mutants import edit, mutant


edit("element_offset_no_offset", within="element_offset",
     why="ignores the storage offset",
     old=("if len(stride) != len(index):\n"
          '        raise ValueError(f"{len(index)} indices for {len(stride)} strides")\n'
          "    return storage_offset + sum(i * s for i, s in zip(index, stride))"),
     new="return sum(i * s for i, s in zip(index, stride))")


edit("contiguous_strides_zero_sizes", within="contiguous_strides",
     why="multiplies raw sizes, so a size-0 dimension zeroes the strides before it",
     edits=[(("strides = []\n"
            "    running = 1"),
            "strides, running = [], 1"),
           ("running *= max(size, 1)", "running *= size")])


edit("same_storage_data_ptr", within="same_storage",
     why="compares first-element addresses, so a slice looks like a different storage",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.data_ptr() == y.data_ptr()")


edit("transpose_view_offset_zero", within="transpose_view",
     why="starts the view at storage position 0, so slices view the wrong elements",
     old="return x.as_strided(size, stride, x.storage_offset())",
     new="return x.as_strided(size, stride, 0)")


edit("transpose_view_sizes_only", within="transpose_view",
     why="swaps the sizes but not the strides",
     old="    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]\n",
     new="")


edit("transpose_view_calls_transpose", within="transpose_view",
     why="calls transpose instead of building the view",
     old="return x.as_strided(size, stride, x.storage_offset())",
     new="return x.transpose(dim0, dim1)")


edit("can_view_contiguous_only", within="can_view",
     why="only contiguous tensors are viewable",
     old=("    if x.dim() == 0 or x.numel() == 0:\n"
          "        return True\n"),
     new="    return x.is_contiguous()\n")


@mutant(replaces="can_view", why="asks torch by trying view()", against="4c7b43defc51")
def can_view_tries(x, shape):
    try:
        x.view(shape)
        return True
    except RuntimeError:
        return False


edit("can_view_size_one_breaks", within="can_view",
     why="size-1 dimensions break chunks (their strides are compared too)",
     edits=[("if shape.count(-1) > 1 or any(s < -1 for s in shape):", "if shape.count(-1) > 1:"),
           (("view_d = len(shape) - 1\n"
            "    chunk_base_stride = old_stride[-1]\n"
            "    tensor_numel, view_numel = 1, 1"),
            ("view_d, base = len(shape) - 1, old_stride[-1]\n"
            "    tensor_numel = view_numel = 1")),
           (("chunk_ends = d == 0 or (old_size[d - 1] != 1 and old_stride[d - 1] != tensor_numel * chunk_base_stride)\n"
            "        if chunk_ends:"),
            "if d == 0 or old_stride[d - 1] != tensor_numel * base:"),
           (("chunk_base_stride = old_stride[d - 1]\n"
            "                tensor_numel, view_numel = 1, 1"),
            "base, tensor_numel, view_numel = old_stride[d - 1], 1, 1")])


edit("sliding_windows_off_by_one", within="sliding_windows",
     why="off by one: drops the last full window",
     old="count = (x.shape[0] - size) // step + 1",
     new="count = (x.shape[0] - size) // step")


edit("sliding_windows_copies", within="sliding_windows",
     why="copies the windows with torch.stack (not zero-copy)",
     old="return x.as_strided((count, size), (step * s, s), x.storage_offset())",
     new="return torch.stack([x[i:i + size] for i in range(0, x.shape[0] - size + 1, step)])")


edit("sliding_windows_assumes_contiguous", within="sliding_windows",
     why="assumes x is contiguous (stride 1) and starts at storage position 0",
     old="return x.as_strided((count, size), (step * s, s), x.storage_offset())",
     new="return x.as_strided((count, size), (step, 1))")


# ---- breaking pass, 2026-11-22 (written before reading the tests) ----


edit("offset_no_base", within="element_offset",
     why="forgets the storage offset",
     edits=[('raise ValueError(f"{len(index)} indices for {len(stride)} strides")',
            'raise ValueError("length")'),
           ("return storage_offset + sum(i * s for i, s in zip(index, stride))",
            "return sum(i * s for i, s in zip(index, stride))")])


edit("offset_no_check", within="element_offset",
     why="no length check: zip silently truncates a mismatched index",
     old=("    if len(stride) != len(index):\n"
          '        raise ValueError(f"{len(index)} indices for {len(stride)} strides")\n'),
     new="")


edit("offset_assert", within="element_offset",
     why="asserts the lengths: AssertionError instead of ValueError",
     old=("if len(stride) != len(index):\n"
          '        raise ValueError(f"{len(index)} indices for {len(stride)} strides")'),
     new="assert len(stride) == len(index)")


edit("strides_zero_size", within="contiguous_strides",
     why="size-0 dimensions not counted as 1: (2, 0, 3) gives (0, 3, 1)",
     old="running *= max(size, 1)",
     new="running *= size")


edit("strides_start_one", within="contiguous_strides",
     why="starts from [1]: the 0-d shape () gives (1,)",
     old="strides = []",
     new="strides = [] if shape else [1]")


edit("same_data_ptr", within="same_storage",
     why="compares first-element addresses: a slice x[1:] looks unrelated",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.data_ptr() == y.data_ptr()")


edit("same_via_base", within="same_storage",
     why="follows ._base: misses detach() and from_numpy twice, None is None for two roots",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new=("rx = x._base if x._base is not None else x\n"
          "    ry = y._base if y._base is not None else y\n"
          "    return rx is ry"))


edit("same_address_range", within="same_storage",
     why="checks y's first address lies inside x's storage: an empty slice at the end points nowhere",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new=("start = x.untyped_storage().data_ptr()\n"
          "    return start <= y.data_ptr() < start + x.untyped_storage().nbytes()"))


edit("transpose_offset0", within="transpose_view",
     why="storage offset 0: a slice x[1:] is transposed from the storage's start",
     old="return x.as_strided(size, stride, x.storage_offset())",
     new="return x.as_strided(size, stride, 0)")


edit("transpose_contig_first", within="transpose_view",
     why="contiguous() first: a non-contiguous input is copied, not viewed",
     old=("ndim = max(x.dim(), 1)  # torch lets a 0-d tensor use the dims 0 and -1\n"
          "    dim0, dim1 = dim0 % ndim, dim1 % ndim\n"
          "    if x.dim() == 0:\n"
          "        return x.as_strided((), (), x.storage_offset())"),
     new="x = x.contiguous()")


edit("transpose_fresh_strides", within="transpose_view",
     why="swaps the sizes but recomputes contiguous strides",
     old="    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]\n",
     new=("    stride, run = [], 1\n"
          "    for n in reversed(size):\n"
          "        stride.insert(0, run)\n"
          "        run *= max(n, 1)\n"))


edit("transpose_mod_dim", within="transpose_view",
     why="wraps dims with % x.dim(): a 0-d tensor divides by zero",
     old=("ndim = max(x.dim(), 1)  # torch lets a 0-d tensor use the dims 0 and -1\n"
          "    dim0, dim1 = dim0 % ndim, dim1 % ndim\n"
          "    if x.dim() == 0:\n"
          "        return x.as_strided((), (), x.storage_offset())"),
     new="dim0, dim1 = dim0 % x.dim(), dim1 % x.dim()")


edit("can_view_contiguous_only_b", within="can_view",
     why="views only contiguous tensors (or the same shape)",
     old=("    if x.dim() == 0 or x.numel() == 0:\n"
          "        return True\n"),
     new="    return x.is_contiguous() or list(x.shape) == shape or x.numel() == 0\n")


@mutant(replaces="can_view", why="size-1 dimensions break chunks: x[:, :1]-style views with odd strides refused", against="4c7b43defc51")
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


edit("can_view_minus_one_zero", within="can_view",
     why="-1 next to a zero-size dimension is inferred as 0 instead of rejected",
     edits=[("if known == 0 or x.numel() % known:", "if known and x.numel() % known:"),
           ("shape[shape.index(-1)] = x.numel() // known",
            "shape[shape.index(-1)] = x.numel() // known if known else 0")])


edit("can_view_zero_dim", within="can_view",
     why="0-d tensor: no dimensions, no chunks, so (1,) or (1, 1) is refused",
     old="if x.dim() == 0 or x.numel() == 0:",
     new=("if x.dim() == 0:\n"
          "        return len(shape) == 0\n"
          "    if x.numel() == 0:"))


edit("can_view_empty_any", within="can_view",
     why="an empty tensor is checked by chunks like any other (torch views it as any empty shape)",
     old="if x.dim() == 0 or x.numel() == 0:",
     new="if x.dim() == 0:")


edit("can_view_size1_stride", within="can_view",
     why="a size-1 dimension with an odd stride breaks the chunk",
     old="old_size[d - 1] != 1 and old_stride",
     new="old_stride")


edit("can_view_trailing_ones", within="can_view",
     why="leading size-1 target dims left over after the first chunk: (1, 6, 4) refused",
     old="while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):",
     new="while view_d >= 0 and (view_numel < tensor_numel or (shape[view_d] == 1 and d > 0)):")


edit("can_view_many_minus_one", within="can_view",
     why="more than one -1 accepted (the first one inferred)",
     edits=[(("if shape.count(-1) > 1 or any(s < -1 for s in shape):\n"
            "        return False"),
            ("if shape.count(-1) > 1 or any(s < -1 for s in shape):\n"
            "        return False\n"
            "    if shape.count(-1) > 1:\n"
            "        shape = [1 if s == -1 else s for s in shape[:1]] + shape[1:]")),
           ("if shape.count(-1) > 1 or any(s < -1 for s in shape):", "if any(s < -1 for s in shape):")])


edit("windows_unit_stride", within="sliding_windows",
     why="assumes x is contiguous: strides (step, 1) even for y[::2]",
     old="return x.as_strided((count, size), (step * s, s), x.storage_offset())",
     new="return x.as_strided((count, size), (step, 1), x.storage_offset())")


edit("windows_offset0", within="sliding_windows",
     why="drops x's storage offset: windows of x[3:] start at the storage's start",
     old="return x.as_strided((count, size), (step * s, s), x.storage_offset())",
     new="return x.as_strided((count, size), (step * s, s), 0)")


edit("windows_full_rejected", within="sliding_windows",
     why="size == len(x) rejected (< instead of <=)",
     old="if not 1 <= size <= x.shape[0] or step < 1:",
     new="if not 1 <= size < x.shape[0] or step < 1:")


edit("windows_no_step_check", within="sliding_windows",
     why="no step check: step 0 divides by zero (ZeroDivisionError)",
     old="if not 1 <= size <= x.shape[0] or step < 1:",
     new="if not 1 <= size <= x.shape[0]:")


edit("windows_ceil", within="sliding_windows",
     why="count off by one: forgets the first window (+1)",
     old="count = (x.shape[0] - size) // step + 1",
     new="count = (x.shape[0] - size) // step")


# ---- second round (after reading the tests): more ways to get sharing and edges wrong ----


edit("same_storage_cdata", within="same_storage",
     why="compares the StorageImpl handles (_cdata): two from_numpy of one array are two handles on one "
         "memory",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.untyped_storage()._cdata == y.untyped_storage()._cdata")


edit("same_storage_is", within="same_storage",
     why="identity of the storage objects: from_numpy twice gives two objects over the same memory",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.untyped_storage() is y.untyped_storage()")


edit("can_view_minus_one_empty", within="can_view",
     why="any -1 on an empty tensor refused, though (2, -1) of 0 elements is (2, 0) in torch",
     old="if known == 0 or x.numel() % known:",
     new="if known == 0 or x.numel() % known or x.numel() == 0:")


edit("transpose_view_clone", within="transpose_view",
     why="clones the as_strided result: right values, but a copy",
     edits=[("return x.as_strided((), (), x.storage_offset())", "return x.clone()"),
           ("return x.as_strided(size, stride, x.storage_offset())",
            "return x.as_strided(size, stride, x.storage_offset()).clone()")])


edit("sliding_windows_stack", within="sliding_windows",
     why="stacks the slices: right values, but a copy",
     old="return x.as_strided((count, size), (step * s, s), x.storage_offset())",
     new="return torch.stack([x[i * step:i * step + size] for i in range(count)])")


edit("element_offset_float", within="element_offset",
     why="returns a float (sum of float products)",
     edits=[('raise ValueError(f"{len(index)} indices for {len(stride)} strides")',
            'raise ValueError("length")'),
           ("return storage_offset + sum(i * s for i, s in zip(index, stride))",
            "return float(storage_offset + sum(i * s for i, s in zip(index, stride)))")])


edit("same_storage_from_data_ptr", within="same_storage",
     why="storage start computed from data_ptr and the offset: an empty slice has data_ptr 0",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.data_ptr() - x.storage_offset() * x.element_size() == y.data_ptr() - y.storage_offset() * y.element_size()")


@mutant(replaces="element_offset", why="storage_offset defaults to 1 (the first element), not 0", against="0d444c47ce12")
def element_offset_default_one(stride, index, storage_offset=1):
    if len(stride) != len(index):
        raise ValueError("length")
    return storage_offset + sum(i * s for i, s in zip(index, stride))


edit("sliding_windows_negative_step", within="sliding_windows",
     why="only step == 0 rejected: a negative step gives a RuntimeError from as_strided",
     old="if not 1 <= size <= x.shape[0] or step < 1:",
     new="if not 1 <= size <= x.shape[0] or step == 0:")


edit("can_view_stride0_breaks", within="can_view",
     why="a stride-0 (broadcast) dimension always starts a new chunk",
     old="old_stride[d - 1] != tensor_numel * chunk_base_stride",
     new="(old_stride[d - 1] == 0 or old_stride[d - 1] != tensor_numel * chunk_base_stride)")


@mutant(replaces="can_view", why="contiguity tested with the dimension's own size: stride[d] == stride[d+1] * size[d]", against="4c7b43defc51")
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


@mutant(replaces="can_view", why="matches the chunk sizes as a multiset, ignoring their order", against="4c7b43defc51")
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

edit("element_offset_no_length_check", within="element_offset",
     why="zip silently truncates: a length mismatch returns a number instead of raising",
     old=("    if len(stride) != len(index):\n"
          '        raise ValueError(f"{len(index)} indices for {len(stride)} strides")\n'),
     new="")


edit("element_offset_torch_dot", within="element_offset",
     why="dot product through torch: a 0-d index gives a float (empty tensor is float32)",
     edits=[('raise ValueError(f"{len(index)} indices for {len(stride)} strides")',
            'raise ValueError("length mismatch")'),
           ("return storage_offset + sum(i * s for i, s in zip(index, stride))",
            "return storage_offset + (torch.tensor(index) * torch.tensor(stride)).sum().item()")])


edit("element_offset_int32", within="element_offset",
     why="int32 arithmetic overflows for offsets past 2**31",
     edits=[("    if len(stride) != len(index):",
            ("    import numpy as np\n"
            "    if len(stride) != len(index):")),
           (('raise ValueError(f"{len(index)} indices for {len(stride)} strides")\n'
            "    return storage_offset + sum(i * s for i, s in zip(index, stride))"),
            ('raise ValueError("length mismatch")\n'
            "    return int(np.int32(storage_offset) + np.dot(np.array(index, dtype=np.int32), np.array(stride, dtype=np.int32)))"))])


edit("contiguous_strides_zero_product", within="contiguous_strides",
     why="a size-0 dimension zeroes the product (torch counts it as 1)",
     edits=[(("strides = []\n"
            "    running = 1"),
            "strides, running = [], 1"),
           ("running *= max(size, 1)", "running *= size")])


edit("contiguous_strides_seeded", within="contiguous_strides",
     why="seeds the list with the last stride 1, so a 0-d shape gets (1,)",
     old="return tuple(reversed(strides))",
     new="return tuple(reversed(strides)) or (1,)")


edit("same_storage_base_link", within="same_storage",
     why="follows the _base link only: misses detach() and two from_numpy of one array",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new=("bx = x._base if x._base is not None else x\n"
          "    by = y._base if y._base is not None else y\n"
          "    return bx is by"))


edit("same_storage_overlap", within="same_storage",
     why="asks whether the two views' own byte ranges overlap, not the storages",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new=("xs, xe = x.data_ptr(), x.data_ptr() + max(x.numel(), 1) * x.element_size()\n"
          "    ys, ye = y.data_ptr(), y.data_ptr() + max(y.numel(), 1) * y.element_size()\n"
          "    return xs < ye and ys < xe"))


edit("same_storage_storage_object", within="same_storage",
     why="compares the StorageImpl objects (_cdata): two from_numpy of one array share memory, not the "
         "object",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.untyped_storage()._cdata == y.untyped_storage()._cdata")


edit("same_storage_asymmetric", within="same_storage",
     why="compares one storage start with the other view's first element: asymmetric",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.untyped_storage().data_ptr() == y.data_ptr()")


edit("transpose_view_no_0d", within="transpose_view",
     why="no 0-d case: indexing the empty size list raises for a 0-d tensor",
     old=("    ndim = max(x.dim(), 1)  # torch lets a 0-d tensor use the dims 0 and -1\n"
          "    dim0, dim1 = dim0 % ndim, dim1 % ndim\n"
          "    if x.dim() == 0:\n"
          "        return x.as_strided((), (), x.storage_offset())\n"),
     new="")


edit("transpose_view_0d_offset_zero", within="transpose_view",
     why="0-d case rebuilt at storage offset 0 (a 0-d element x[3] sits at 3)",
     edits=[("ndim = max(x.dim(), 1)  # torch lets a 0-d tensor use the dims 0 and -1",
            ("if x.dim() == 0:\n"
            "        return x.as_strided((), (), 0)\n"
            "    ndim = x.dim()")),
           (("    if x.dim() == 0:\n"
            "        return x.as_strided((), (), x.storage_offset())\n"),
            "")])


edit("transpose_view_recomputed_strides", within="transpose_view",
     why="recomputes strides from the swapped shape: right only for contiguous inputs",
     edits=[("size, stride = list(x.shape), list(x.stride())",
            ("size = list(x.shape)\n"
            "    contiguous = []\n"
            "    running = 1\n"
            "    for s in reversed(size):\n"
            "        contiguous.append(running)\n"
            "        running *= max(s, 1)\n"
            "    contiguous = contiguous[::-1]\n"
            "    stride = list(contiguous)\n"
            "    stride[dim0], stride[dim1] = contiguous[dim1], contiguous[dim0]")),
           ("stride[dim0], stride[dim1] = stride[dim1], stride[dim0]", "base = x.contiguous()"),
           ("return x.as_strided(size, stride, x.storage_offset())",
            "return base.as_strided(size, stride, base.storage_offset())")])


edit("can_view_adjacent_zero_only", within="can_view",
     why="-1 beside a 0 judged only by its direct neighbours: (0, 3, -1) accepted",
     edits=[("        known = math.prod(s for s in shape if s != -1)",
            ("        i = shape.index(-1)\n"
            "        if (i > 0 and shape[i - 1] == 0) or (i + 1 < len(shape) and shape[i + 1] == 0):\n"
            "            return False\n"
            "        known = math.prod(s for s in shape if s != -1)")),
           (("if known == 0 or x.numel() % known:\n"
            "            return False\n"
            "        shape[shape.index(-1)] = x.numel() // known"),
            "shape[i] = x.numel() // known if known else 0")])


edit("can_view_empty_minus_one", within="can_view",
     why="a -1 on an empty tensor always refused, though (-1, 4) on a (0, 4) tensor is fine",
     old="        known = math.prod(s for s in shape if s != -1)",
     new=("        if x.numel() == 0:\n"
          "            return False\n"
          "        known = math.prod(s for s in shape if s != -1)"))


edit("can_view_other_negatives", within="can_view",
     why="only checks the -1 count: other negative sizes like (-2, -3) pass the product test",
     old="if shape.count(-1) > 1 or any(s < -1 for s in shape):",
     new="if shape.count(-1) > 1:")


edit("can_view_no_0d", within="can_view",
     why="no 0-d shortcut: a 0-d tensor refuses (1,) and (1, 1)",
     edits=[("if x.dim() == 0 or x.numel() == 0:", "if x.numel() == 0:"),
           ("chunk_base_stride = old_stride[-1]",
            "chunk_base_stride = old_stride[-1] if old_stride else 1")])


edit("can_view_size_one_breaks_bp2", within="can_view",
     why="size-1 dimensions break chunks like any other (their stride is compared)",
     old="(old_size[d - 1] != 1 and old_stride[d - 1] != tensor_numel * chunk_base_stride)",
     new="old_stride[d - 1] != tensor_numel * chunk_base_stride")


edit("can_view_leading_ones", within="can_view",
     why="leftover leading 1s in the new shape are not absorbed: (1, 6, 4) of a transposed (6, 4) refused",
     old="while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):",
     new="while view_d >= 0 and view_numel < tensor_numel:")


edit("can_view_divisible_strides", within="can_view",
     why="neighbours merge when the outer stride is a multiple of the inner span (stride 0 of expand "
         "merges)",
     old="chunk_ends = d == 0 or (old_size[d - 1] != 1 and old_stride[d - 1] != tensor_numel * chunk_base_stride)",
     new=("span = tensor_numel * chunk_base_stride\n"
          "        chunk_ends = d == 0 or (old_size[d - 1] != 1 and (span == 0 or old_stride[d - 1] % span != 0))"))


edit("sliding_windows_no_step_check", within="sliding_windows",
     why="no step check: step 0 divides by zero, a negative step reaches as_strided (not ValueError)",
     edits=[('raise ValueError(f"expected a 1-D tensor, got {x.dim()} dimensions")',
            'raise ValueError("expected a 1-D tensor")'),
           (("if not 1 <= size <= x.shape[0] or step < 1:\n"
            '        raise ValueError(f"need 1 <= size <= {x.shape[0]} and step >= 1, got size={size}, step={step}")'),
            ("if not 1 <= size <= x.shape[0]:\n"
            '        raise ValueError("size out of range")'))])


edit("sliding_windows_no_dim_check", within="sliding_windows",
     why="no 1-D check: a 2-D input is windowed along its rows instead of refused",
     edits=[(("    if x.dim() != 1:\n"
              '        raise ValueError(f"expected a 1-D tensor, got {x.dim()} dimensions")\n'),
             ""),
            ("(s,) = x.stride()",
             "s = x.stride(0)")])


edit("sliding_windows_contiguous_first", within="sliding_windows",
     why="makes the input contiguous first: a stepped view y[::2] is copied",
     old="count = (x.shape[0] - size) // step + 1",
     new=("x = x.contiguous()\n"
          "    count = (x.shape[0] - size) // step + 1"))


# -- every default and every case the docstrings name (issue 30) --------------------------------------

edit("i30_same_storage_same_dtype", within="same_storage",
     why="i30: also asks for the same dtype: a view with another dtype (x.view(torch.uint8)) is called unshared",
     old="return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()",
     new="return x.dtype == y.dtype and x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()")
