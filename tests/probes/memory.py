"""Probes for the `memory` module."""

from __future__ import annotations

from tests.probes._tensors import build, dtype_of


def get_memory_usage(impl, specs):
    return [impl.memory.get_memory_usage(build(s)) for s in specs]


def storage_bytes(impl, specs):
    return [impl.memory.storage_bytes(build(s)) for s in specs]


def float_format(impl, dtype):
    return impl.memory.float_format(dtype_of(dtype))


def rounds_to_zero(impl, cases):
    return [impl.memory.rounds_to_zero(value, dtype_of(dtype)) for value, dtype in cases]


def bytes_per_parameter(impl, optimizer, mixed_precision=None):
    """mixed_precision=None calls without it (the default)."""
    if mixed_precision is None:
        return impl.memory.bytes_per_parameter(optimizer)
    return impl.memory.bytes_per_parameter(optimizer, mixed_precision=mixed_precision)


def max_trainable_parameters(impl, gpu_bytes, num_gpus, bytes_per_param):
    return impl.memory.max_trainable_parameters(gpu_bytes, num_gpus, bytes_per_param)


def cuda_allocations(impl, cases):
    """On the GPU: what the CUDA caching allocator's `memory_allocated()` grew by for a new tensor, a
    view of it and a copy of that view, next to what the student's accounting says of each."""
    import torch

    out = []
    for shape, dtype in cases:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        x = torch.zeros(shape, dtype=dtype_of(dtype), device="cuda")
        after_x = torch.cuda.memory_allocated()
        view = x[1:]
        after_view = torch.cuda.memory_allocated()
        copy = view.clone()
        after_copy = torch.cuda.memory_allocated()
        out.append({"deltas": [after_x - before, after_view - after_x, after_copy - after_view],
                    "usage": [impl.memory.get_memory_usage(t) for t in (x, view, copy)],
                    "storage": [impl.memory.storage_bytes(t) for t in (x, view, copy)]})
        del x, view, copy
    return out
