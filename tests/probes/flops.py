"""Probes for the `flops` module."""

from __future__ import annotations

import time
import timeit
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tests.probes._flops_models import build_case, seeded
from tests.probes._tensors import dtype_of


def matmul_flops(impl, cases):
    return [impl.flops.matmul_flops(tuple(a), tuple(b)) for a, b in cases]


def matmul_flops_one(impl, a, b):
    return impl.flops.matmul_flops(tuple(a), tuple(b))


def forward_flops(impl, cases):
    return [impl.flops.forward_flops(batch, list(dims)) for batch, dims in cases]


def backward_flops(impl, cases):
    return [impl.flops.backward_flops(batch, list(dims), input_grad=input_grad) for batch, dims, input_grad in cases]


def training_flops(impl, num_params, num_tokens):
    return impl.flops.training_flops(num_params, num_tokens)


def training_days(impl, num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    return impl.flops.training_days(num_params, num_tokens, num_gpus, flop_per_sec, mfu)


def count_matmul_flops(impl, case):
    """The student's count for one seeded computation (see tests/probes/_flops_models.py)."""
    fn, args = build_case(case)
    return impl.flops.count_matmul_flops(fn, *args)


def promised_flop_per_sec(impl, cases):
    return [impl.flops.get_promised_flop_per_sec(name, dtype_of(dtype)) for name, dtype in cases]


def promised_flop_per_sec_one(impl, device_name, dtype):
    return impl.flops.get_promised_flop_per_sec(device_name, dtype_of(dtype))


def mfu(impl, cases):
    return [impl.flops.mfu(flops, seconds, promised) for flops, seconds, promised in cases]


class _FakeClock(TorchDispatchMode):
    """Counts matrix multiplications; each one advances a fake clock by exactly one second."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0
        self.matmuls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.bmm):
            self.now += 1.0
            self.matmuls += 1
        return out


_CLOCKS = ("perf_counter", "monotonic", "time")


def time_matmul_fake_clock(impl, n, trials, seed=0):
    """Run the student's time_matmul on CPU with the wall clock replaced by a fake clock.

    The fake clock only moves when a matmul runs (one second each), so an honest
    "seconds per a @ b, warm-up excluded" is exactly 1.0 whatever the loop looks like.
    Returns (seconds, number of matmuls run).  Every clock the student may reasonably read
    (time.perf_counter/monotonic/time and their _ns forms, timeit.default_timer, and names
    bound with `from time import ...`) is replaced for the duration of the call.
    """
    a, b = seeded((n, n), seed), seeded((n, n), seed + 1)
    clock = _FakeClock()
    seconds = lambda: clock.now  # noqa: E731
    nanoseconds = lambda: int(clock.now * 1e9)  # noqa: E731
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    originals = {}
    for name in _CLOCKS:
        originals[id(getattr(time, name))] = seconds
        originals[id(getattr(time, f"{name}_ns"))] = nanoseconds
        patch(time, name, seconds)
        patch(time, f"{name}_ns", nanoseconds)
    module = impl.flops
    for name, value in list(vars(module).items()):
        if id(value) in originals:
            patch(module, name, originals[id(value)])
    patch(timeit, "default_timer", seconds)
    # timeit's functions bind default_timer as a default argument when timeit is imported
    for fn in (timeit.Timer.__init__, timeit.timeit, timeit.repeat):
        patch(fn, "__defaults__", tuple(seconds if id(d) in originals else d for d in fn.__defaults__ or ()))
    try:
        with clock:
            result = module.time_matmul(a, b, trials=trials)
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
    return [result, clock.matmuls]


def time_matmul_on_gpu(impl, n, dtype, trials, seed=0):
    """Seconds per (n × n) @ (n × n) on the GPU, as measured by the student's time_matmul."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(n, n, device="cuda", dtype=dtype_of(dtype), generator=g)
    b = torch.randn(n, n, device="cuda", dtype=dtype_of(dtype), generator=g)
    return impl.flops.time_matmul(a, b, trials=trials)


def promised_on_this_gpu(impl, dtype):
    return impl.flops.get_promised_flop_per_sec(torch.cuda.get_device_name(), dtype_of(dtype))
