"""Probes for the `flops` module."""

from __future__ import annotations

import time
import timeit
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack, _pop_mode

from tests.probes._flops_models import build_case, seeded
from tests.probes._tensors import dtype_of


def matmul_flops(impl, cases):
    return [impl.flops.matmul_flops(tuple(a), tuple(b)) for a, b in cases]


def matmul_flops_outcomes(impl, cases):
    """For each (a_shape, b_shape): the student's value, or the exception it raised as
    ``{"raised": [class names of its MRO], "message": str}`` (an observation: the test decides)."""
    out = []
    for a, b in cases:
        try:
            out.append(impl.flops.matmul_flops(tuple(a), tuple(b)))
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the student's exception, reported as data
            out.append({"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)[:200]})
    return out


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


def count_matmul_flops_cases(impl, cases):
    """For each case: the student's count, the tripwires its call reached, how many times it
    called fn and how many dispatch modes its call left on the stack (``{"flops": ..., "reached":
    [...], "calls": n, "modes_left": k}``; "FlopCounterMode" when it entered torch's counter).  Modes
    left behind are popped after they are counted, so that the next case starts clean."""
    from grader.rules import tripwire

    out = []
    for case in cases:
        fn, args = build_case(case)
        calls = [0]

        def counted(*a, _fn=fn):
            calls[0] += 1
            return _fn(*a)

        modes = len(_get_current_dispatch_mode_stack())
        with tripwire.watch() as reached:
            flops = impl.flops.count_matmul_flops(counted, *args)
        left = len(_get_current_dispatch_mode_stack()) - modes
        for _ in range(left):
            _pop_mode()
        out.append({"flops": flops, "reached": sorted(reached), "calls": calls[0], "modes_left": left})
    return out


def promised_flop_per_sec(impl, cases):
    return [impl.flops.get_promised_flop_per_sec(name, dtype_of(dtype)) for name, dtype in cases]


def promised_flop_per_sec_one(impl, device_name, dtype):
    return impl.flops.get_promised_flop_per_sec(device_name, dtype_of(dtype))


def mfu(impl, cases):
    return [impl.flops.mfu(flops, seconds, promised) for flops, seconds, promised in cases]


def _fake_clock(ticks: list[float], start: float, cold: float) -> tuple[TorchDispatchMode, Any, Any, list[int]]:
    """A dispatch mode that counts matrix multiplications and moves a fake clock: `cold` seconds
    for the very first one (kernel selection, allocation), then ``ticks[(k - 1) % len(ticks)]``
    seconds for the k-th.  Returns (mode, read the clock in seconds, number of matmuls so far,
    [matmuls at the first clock read, at the last]).  The state lives in this closure, not on
    the mode: the code under test sees no `tick` attribute to read."""
    state = [start, 0]  # now, matmuls
    reads: list[int] = []

    class FakeClock(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.bmm):
                state[0] += cold if state[1] == 0 else ticks[(state[1] - 1) % len(ticks)]
                state[1] += 1
            return out

    def read() -> float:
        if reads:
            reads[1:] = [state[1]]
        else:
            reads.append(state[1])
        return state[0]

    return FakeClock(), read, (lambda: state[1]), reads


_CLOCKS = ("perf_counter", "monotonic", "time")


def time_matmul_fake_clock(impl, n, trials, ticks, start, cold, seed=0):
    """Run the student's time_matmul on CPU with the wall clock replaced by a fake clock.

    The fake clock starts at `start` and only moves when a matmul runs: `cold` seconds for the
    first one, then the `ticks` in turn (the test chooses them at random per call), so an honest
    "seconds per a @ b, warm-up excluded" is the mean of the ticks of the timed runs.  Returns
    (seconds, number of matmuls run, [matmuls run at the first clock read, at the last], calls of
    torch.cuda.synchronize).  Every clock the
    student may reasonably read (time.perf_counter/monotonic/time and their _ns forms,
    timeit.default_timer, and names bound with `from time import ...`) is replaced for the
    duration of the call, and so is torch.cuda.synchronize (counted, never run: the tensors are on
    the CPU, where the docstring says not to touch torch.cuda), with torch.cuda.is_available()
    answering True as on a GPU machine.
    """
    a, b = seeded((n, n), seed), seeded((n, n), seed + 1)
    clock, seconds, matmuls, reads = _fake_clock([float(t) for t in ticks], float(start), float(cold))
    nanoseconds = lambda: int(seconds() * 1e9)  # noqa: E731
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
    syncs = [0]

    def synchronize(*args: Any, **kwargs: Any) -> None:
        syncs[0] += 1

    originals[id(torch.cuda.synchronize)] = synchronize
    patch(torch.cuda, "synchronize", synchronize)
    # and CUDA "available", as on a GPU machine: code that synchronises whenever CUDA exists (not when
    # the tensors are on it) does so here too, and is counted
    patch(torch.cuda, "is_available", lambda: True)
    for name, value in list(vars(module).items()):
        if value is saved[-1][2]:  # `from torch.cuda import synchronize`
            patch(module, name, synchronize)
    patch(timeit, "default_timer", seconds)
    # timeit's functions bind default_timer as a default argument when timeit is imported
    for fn in (timeit.Timer.__init__, timeit.timeit, timeit.repeat):
        patch(fn, "__defaults__", tuple(seconds if id(d) in originals else d for d in fn.__defaults__ or ()))
    try:
        with clock:
            # trials=None: the test checks the default (10 timed runs)
            result = module.time_matmul(a, b) if trials is None else module.time_matmul(a, b, trials=trials)
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
    return [result, matmuls(), list(reads), syncs[0]]


def time_matmul_on_gpu(impl, n, dtype, trials, seed=0):
    """Seconds per (n × n) @ (n × n) on the GPU, as measured by the student's time_matmul."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(n, n, device="cuda", dtype=dtype_of(dtype), generator=g)
    b = torch.randn(n, n, device="cuda", dtype=dtype_of(dtype), generator=g)
    return impl.flops.time_matmul(a, b, trials=trials)


def promised_on_this_gpu(impl, dtype):
    return impl.flops.get_promised_flop_per_sec(torch.cuda.get_device_name(), dtype_of(dtype))


def backward_flops_default(impl, cases):
    """backward_flops called without input_grad (its default)."""
    return [impl.flops.backward_flops(batch, list(dims)) for batch, dims in cases]
