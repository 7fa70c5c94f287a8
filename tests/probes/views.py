"""Probes for the `views` module.

Zero-copy questions are answered with observations: the input and the result travel back in
ONE reply (torch.save keeps storage sharing inside one object), and the trusted test compares
their storages, offsets and strides itself.
"""

from __future__ import annotations

import torch

from grader.rules import tripwire
from tests.probes._tensors import build, derive


def element_offset(impl, cases):
    """cases: [stride, index, storage offset]; an offset of None calls without it (the default)."""
    return [impl.views.element_offset(tuple(stride), tuple(index)) if offset is None
            else impl.views.element_offset(tuple(stride), tuple(index), offset) for stride, index, offset in cases]


def contiguous_strides(impl, shapes):
    return [impl.views.contiguous_strides(tuple(shape)) for shape in shapes]


def _pair(spec, op):
    """(x, y) for a same-storage question; "from_numpy_twice" wraps one numpy array twice."""
    if op == "from_numpy_twice":
        array = build(spec).numpy()
        return torch.from_numpy(array), torch.from_numpy(array)
    x = build(spec)
    return x, derive(x, op)


def same_storage(impl, cases):
    out = []
    for spec, op in cases:
        x, y = _pair(spec, op)
        out.append(impl.views.same_storage(x, y))
    return out


def transpose_view(impl, cases):
    """cases: [spec, dim0, dim1] each; one {"input", "result"} per case."""
    out = []
    for spec, dim0, dim1 in cases:
        x = build(spec)
        out.append({"input": x, "result": impl.views.transpose_view(x, dim0, dim1)})
    return out


def can_view(impl, cases):
    return [impl.views.can_view(build(spec), tuple(shape)) for spec, shape in cases]


def can_view_ops(impl, cases):
    """The aten ops dispatched while can_view ran on each case (`grader.rules.tripwire.watch_ops`; the
    inputs are built before): an observation for the rule's runtime layer, the answers dropped."""
    inputs = [(build(spec), tuple(shape)) for spec, shape in cases]
    with tripwire.watch_ops() as ops:
        for x, shape in inputs:
            impl.views.can_view(x, shape)
    return sorted(ops)


def transpose_view_ops(impl, cases):
    """The aten ops dispatched while transpose_view ran on each case [spec, dim0, dim1] (as above)."""
    inputs = [(build(spec), dim0, dim1) for spec, dim0, dim1 in cases]
    with tripwire.watch_ops() as ops:
        for x, dim0, dim1 in inputs:
            impl.views.transpose_view(x, dim0, dim1)
    return sorted(ops)


def sliding_windows(impl, cases):
    """cases: [spec, size, step] each; one {"input", "result"} per case."""
    out = []
    for spec, size, step in cases:
        x = build(spec)
        out.append({"input": x, "result": impl.views.sliding_windows(x, size, step)})
    return out


