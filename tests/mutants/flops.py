"""Mutants of solutions/flops.py: each is one bug a student plausibly writes."""

import math
import time

import torch

from grader.mutants import mutant

aten = torch.ops.aten


# -- matmul_flops, forward/backward ----------------------------------------------------------

@mutant(replaces="matmul_flops", why="counts multiplications only (m·n·p), forgetting the additions")
def matmul_flops_no_factor_two(a_shape, b_shape):
    *batch_a, m, n = a_shape
    *batch_b, _, p = b_shape
    return math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * n * p


@mutant(replaces="matmul_flops", why="takes the batch size from a alone, ignoring broadcasting with b's batch dims")
def matmul_flops_batch_of_a(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="never checks the inner dimensions (no ValueError for (3, 4) @ (5, 6))")
def matmul_flops_no_check(a_shape, b_shape):
    *batch_a, m, n = a_shape
    *batch_b, _, p = b_shape
    return 2 * math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * n * p


@mutant(replaces="forward_flops", why="off by one: skips the last layer of the chain")
def forward_flops_skip_last(batch, dims):
    return sum(2 * batch * dims[i] * dims[i + 1] for i in range(len(dims) - 2))


@mutant(replaces="backward_flops", why="ignores input_grad: always 2× forward")
def backward_flops_ignores_flag(batch, dims, input_grad=True):
    return 2 * sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))


@mutant(replaces="backward_flops", why="without the input gradient, leaves out the last layer's input gradient instead of the first")
def backward_flops_drops_last_layer(batch, dims, input_grad=True):
    total = 2 * sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))
    return total if input_grad else total - 2 * batch * dims[-2] * dims[-1]


@mutant(replaces="backward_flops", why="without the input gradient, drops every input gradient (backward = forward)")
def backward_flops_no_input_grads(batch, dims, input_grad=True):
    forward = sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))
    return 2 * forward if input_grad else forward


@mutant(replaces="training_flops", why="counts only the forward pass: 2·N·T")
def training_flops_forward_only(num_params, num_tokens):
    return 2.0 * num_params * num_tokens


@mutant(replaces="training_days", why="forgets the MFU (assumes the peak is reached)")
def training_days_no_mfu(num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    return 6.0 * num_params * num_tokens / (num_gpus * flop_per_sec) / 86400


@mutant(replaces="training_days", why="converts seconds to hours instead of days")
def training_days_hours(num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    return 6.0 * num_params * num_tokens / (num_gpus * flop_per_sec * mfu) / 3600


# -- the FLOP counter --------------------------------------------------------------------------

@mutant(replaces="MatmulFlopCounter.__torch_dispatch__",
        why="compares func (an OpOverload, aten.mm.default) with the packet aten.mm: never matches, counts 0")
def dispatch_compares_packet(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        self.flops += matmul_flops(args[-2].shape, args[-1].shape)
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts aten.mm only (misses addmm, bmm, baddbmm)")
def dispatch_mm_only(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket is aten.mm:
        self.flops += matmul_flops(args[0].shape, args[1].shape)
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts mm and bmm but not their bias-adding forms addmm/baddbmm")
def dispatch_no_addmm(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.bmm):
        self.flops += matmul_flops(args[0].shape, args[1].shape)
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="reads addmm's operands as args[0], args[1] (the bias and a)")
def dispatch_addmm_wrong_args(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        a, b = args[0], args[1]
        self.flops += 2 * math.prod(a.shape) * b.shape[-1]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts bmm without its batch dimension")
def dispatch_bmm_no_batch(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        a, b = args[-2], args[-1]
        self.flops += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="adds the bias addition's m·p FLOPs to addmm/baddbmm")
def dispatch_counts_bias(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        self.flops += matmul_flops(args[-2].shape, args[-1].shape)
        if func.overloadpacket in (aten.addmm, aten.baddbmm):
            self.flops += out.numel()
    return out


@mutant(replaces="count_matmul_flops", why="counts only the forward pass: runs fn with gradients disabled")
def count_matmul_flops_no_grad(fn, *args):
    with torch.no_grad(), MatmulFlopCounter() as counter:
        try:
            fn(*args)
        except RuntimeError:  # backward() without a graph
            pass
    return counter.flops


@mutant(replaces="count_matmul_flops", why="uses torch's FlopCounterMode instead of writing the counter")
def count_matmul_flops_uses_torch(fn, *args):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


# -- peaks, MFU, timing -----------------------------------------------------------------------

@mutant(replaces="get_promised_flop_per_sec", why="returns the datasheet's sparse tensor-core figures (2× too high)")
def promised_sparse(device_name, dtype):
    peaks = {"A100": (19.5e12, 624e12), "H100": (67e12, 1979e12), "H200": (67e12, 1979e12)}
    for gpu, (fp32, half) in peaks.items():
        if gpu in device_name:
            if "PCIe" in device_name and gpu == "H100":
                fp32, half = 51e12, 1513e12
            return fp32 if dtype == torch.float32 else half
    raise ValueError(device_name)


@mutant(replaces="get_promised_flop_per_sec", why="treats every H100 as the SXM module (PCIe card gets the SXM peak)")
def promised_pcie_as_sxm(device_name, dtype):
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(dtype)
    fp32 = dtype == torch.float32
    if "A100" in device_name:
        return 19.5e12 if fp32 else 312e12
    if "H100" in device_name or "H200" in device_name:
        if "NVL" in device_name:
            return 60e12 if fp32 else 835.5e12
        return 67e12 if fp32 else 989.5e12
    raise ValueError(device_name)


@mutant(replaces="get_promised_flop_per_sec", why="gives the TF32 tensor-core figure for float32")
def promised_tf32(device_name, dtype):
    if "A100" in device_name:
        return 156e12 if dtype == torch.float32 else 312e12
    if "H100" in device_name or "H200" in device_name:
        return 494.5e12 if dtype == torch.float32 else 989.5e12
    raise ValueError(device_name)


@mutant(replaces="get_promised_flop_per_sec", why="falls back to the H100 figure for an unknown GPU instead of raising")
def promised_no_error(device_name, dtype):
    fp32 = dtype == torch.float32
    if "A100" in device_name:
        return 19.5e12 if fp32 else 312e12
    if "PCIe" in device_name:
        return 51e12 if fp32 else 756.5e12
    if "NVL" in device_name:
        return 60e12 if fp32 else 835.5e12
    return 67e12 if fp32 else 989.5e12


@mutant(replaces="mfu", why="inverts the ratio: promised over achieved")
def mfu_inverted(flops, seconds, promised_flop_per_sec):
    return promised_flop_per_sec / (flops / seconds)


@mutant(replaces="time_matmul", why="returns the total time of all trials, not the time per multiplication")
def time_matmul_total(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


@mutant(replaces="time_matmul", why="no warm-up: the first (slow) call is timed")
def time_matmul_no_warmup(a, b, trials=10):
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="times the warm-up run together with the trials")
def time_matmul_times_warmup(a, b, trials=10):
    start = time.perf_counter()
    a @ b
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials
