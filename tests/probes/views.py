"""Probes for the `views` module."""

from __future__ import annotations

from tests.probes._tensors import build, derive


def _shares(result, x) -> bool:
    return result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def element_offset(impl, cases):
    return [impl.views.element_offset(tuple(stride), tuple(index), offset) for stride, index, offset in cases]


def contiguous_strides(impl, shapes):
    return [impl.views.contiguous_strides(tuple(shape)) for shape in shapes]


def same_storage(impl, cases):
    out = []
    for spec, op in cases:
        x = build(spec)
        out.append(impl.views.same_storage(x, derive(x, op)))
    return out


def transpose_view(impl, spec, dim0, dim1):
    x = build(spec)
    result = impl.views.transpose_view(x, dim0, dim1)
    return {"value": result.clone(), "stride": list(result.stride()), "offset": result.storage_offset(),
            "shares": _shares(result, x)}


def can_view(impl, cases):
    return [impl.views.can_view(build(spec), tuple(shape)) for spec, shape in cases]


def sliding_windows(impl, spec, size, step):
    x = build(spec)
    result = impl.views.sliding_windows(x, size, step)
    return {"value": result.clone(), "shares": _shares(result, x)}
