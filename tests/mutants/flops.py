"""Mutants of solutions/flops.py: each is one bug a student plausibly writes."""

import math
import time

import torch

from grader.mutants import edit, mutant

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


@mutant(replaces="get_promised_flop_per_sec", why="gives the bf16/fp16 peak to any float of 16 bits or fewer (float8 included) instead of raising")
def promised_any_small_float(device_name, dtype):
    peaks = {"A100": (19.5e12, 312e12), "H100 SXM": (67e12, 989.5e12), "H100 PCIe": (51e12, 756.5e12),
             "H100 NVL": (60e12, 835.5e12), "H200 SXM": (67e12, 989.5e12), "H200 NVL": (60e12, 835.5e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H100" in device_name or "H200" in device_name:
        form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"{'H100' if 'H100' in device_name else 'H200'} {form}"
        if gpu not in peaks:
            raise ValueError(device_name)
    else:
        raise ValueError(device_name)
    fp32, half = peaks[gpu]
    if dtype == torch.float32:
        return fp32
    if dtype.is_floating_point and dtype.itemsize <= 2:
        return half
    raise ValueError(dtype)


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


# -- breaking pass (2026-11-22) ------------------------------------------------------------

@mutant(replaces="matmul_flops", why="batch count from a's batch dims only: ignores what b's batch dims broadcast in")
def bk_matmul_batch_a_only(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="multiplies both batch sizes instead of broadcasting them: (8,3,4)@(8,4,5) counts 64 products")
def bk_matmul_batch_product(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * math.prod(b_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="batch = the larger of the two batch sizes: wrong when both broadcast, (5,1,..)@(2,..) gives 5, not 10")
def bk_matmul_batch_max(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    batch = max(math.prod(a_shape[:-2]), math.prod(b_shape[:-2]))
    return 2 * batch * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="never checks the inner dimensions (no ValueError for (3,4)@(5,6))")
def bk_matmul_no_inner_check(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("need 2 dims")
    batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    return 2 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="lets torch's RuntimeError escape for batch dims that do not broadcast (spec: ValueError)")
def bk_matmul_runtime_error(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    return 2 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="treats a 1-D operand as a vector like torch.matmul instead of raising ValueError")
def bk_matmul_vectors_ok(a_shape, b_shape):
    a, b = list(a_shape), list(b_shape)
    if len(a) == 1:
        a = [1] + a
    if len(b) == 1:
        b = b + [1]
    if a[-1] != b[-2]:
        raise ValueError("inner")
    try:
        batch = torch.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except RuntimeError as e:
        raise ValueError("batch") from e
    return 2 * math.prod(batch) * a[-2] * a[-1] * b[-1]


@mutant(replaces="matmul_flops", why="returns a float (2.0 * ...) where the spec says an exact int")
def bk_matmul_float(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    try:
        batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    except RuntimeError as e:
        raise ValueError("batch") from e
    return 2.0 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="forward_flops", why="a single width costs 2*batch*d (one 'layer') instead of 0")
def bk_forward_single_width(batch, dims):
    if len(dims) == 1:
        return 2 * batch * dims[0]
    return sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))


@mutant(replaces="forward_flops", why="counts one multiply-add as 1 FLOP for the first layer only (drops the factor 2 there)")
def bk_forward_first_layer_half(batch, dims):
    total = sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))
    if len(dims) >= 2:
        total -= batch * dims[0] * dims[1]
    return total


@mutant(replaces="backward_flops", why="input_grad=False leaves out the LAST layer's input gradient instead of the first's")
def bk_backward_last_layer(batch, dims, input_grad=True):
    total = 2 * forward_flops(batch, dims)
    if not input_grad and len(dims) >= 2:
        total -= 2 * batch * dims[-2] * dims[-1]
    return total


@mutant(replaces="backward_flops", why="wrong default: input_grad defaults to False")
def bk_backward_default_false(batch, dims, input_grad=False):
    total = 2 * forward_flops(batch, dims)
    if not input_grad and len(dims) >= 2:
        total -= 2 * batch * dims[0] * dims[1]
    return total


@mutant(replaces="backward_flops", why="input_grad=False with a single width indexes dims[1] (IndexError) instead of returning 0")
def bk_backward_single_width_crash(batch, dims, input_grad=True):
    total = 2 * forward_flops(batch, dims)
    if not input_grad:
        total -= 2 * batch * dims[0] * dims[1]
    return total


@mutant(replaces="backward_flops", why="input_grad=False drops ALL input gradients (backward = forward)")
def bk_backward_no_input_grads(batch, dims, input_grad=True):
    if input_grad:
        return 2 * forward_flops(batch, dims)
    return forward_flops(batch, dims)


@mutant(replaces="training_flops", why="returns an int for int inputs (spec: a float)")
def bk_training_flops_int(num_params, num_tokens):
    return 6 * num_params * num_tokens


@mutant(replaces="training_days", why="rounds to whole days (spec: not rounded)")
def bk_training_days_rounded(num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    return float(round(training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu) / SECONDS_PER_DAY))


@mutant(replaces="training_days", why="ignores the MFU (assumes the peak is reached)")
def bk_training_days_no_mfu(num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    return training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec) / SECONDS_PER_DAY


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts mm and bmm but not their bias forms addmm/baddbmm")
def bk_counter_no_addmm(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.bmm):
        self.flops += matmul_flops(args[0].shape, args[1].shape)
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="also counts aten.mv and aten.dot (FlopCounterMode counts them 0)")
def bk_counter_counts_mv(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        self.flops += matmul_flops(args[-2].shape, args[-1].shape)
    elif func.overloadpacket is aten.mv:
        self.flops += 2 * args[0].shape[0] * args[0].shape[1]
    elif func.overloadpacket is aten.dot:
        self.flops += 2 * args[0].shape[0]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="bmm/baddbmm: forgets the batch factor B (counts one matrix pair)")
def bk_counter_no_batch(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        a, b = args[-2], args[-1]
        self.flops += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts from the output's shape and a's first dim: m·p·m, wrong unless n == m")
def bk_counter_wrong_inner(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        self.flops += 2 * out.numel() * args[-2].shape[-2]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="compares func with aten.mm.default etc. but lists addmm's packet, so addmm is never matched")
def bk_counter_overload_mix(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func in (aten.mm.default, aten.addmm, aten.bmm.default, aten.baddbmm.default):
        self.flops += matmul_flops(args[-2].shape, args[-1].shape)
    return out


@mutant(replaces="count_matmul_flops", why="reuses one counter across calls (cached on the function): counts accumulate")
def bk_count_cached_counter(fn, *args):
    counter = count_matmul_flops.__dict__.setdefault("counter", MatmulFlopCounter())
    with counter:
        fn(*args)
    return counter.flops


@mutant(replaces="count_matmul_flops", why="runs fn twice inside the mode (a 'dry run' then the real one): double count")
def bk_count_runs_twice(fn, *args):
    with MatmulFlopCounter() as counter:
        fn(*args)
        fn(*args)
    return counter.flops


@mutant(replaces="count_matmul_flops", why="uses torch's FlopCounterMode (rule: write the counting)")
def bk_count_flop_counter_mode(fn, *args):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as c:
        fn(*args)
    return c.get_total_flops()


@mutant(replaces="count_matmul_flops", why="reaches FlopCounterMode through importlib (dynamic escape + rule)")
def bk_count_importlib(fn, *args):
    import importlib

    mode = importlib.import_module("torch.utils.flop" + "_counter").FlopCounterMode(display=False)
    with mode:
        fn(*args)
    return mode.get_total_flops()


@mutant(replaces="get_promised_flop_per_sec", why="returns the datasheet's sparse bf16 figures (2x dense)")
def bk_peak_sparse(device_name, dtype):
    table = {"A100": (19.5e12, 624e12), "H100 SXM": (67e12, 1979e12), "H100 PCIe": (51e12, 1513e12),
             "H100 NVL": (60e12, 1671e12), "H200 SXM": (67e12, 1979e12), "H200 NVL": (60e12, 1671e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H100" in device_name or "H200" in device_name:
        model = "H100" if "H100" in device_name else "H200"
        form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"{model} {form}"
    else:
        raise ValueError(device_name)
    if dtype == torch.float32:
        return table[gpu][0]
    if dtype in (torch.bfloat16, torch.float16):
        return table[gpu][1]
    raise ValueError(dtype)


@mutant(replaces="get_promised_flop_per_sec", why="matches 'PCIe' case-sensitively: 'NVIDIA H100 PCIE' becomes the SXM figure")
def bk_peak_pcie_case(device_name, dtype):
    table = {"A100": (19.5e12, 312e12), "H100 SXM": (67e12, 989.5e12), "H100 PCIe": (51e12, 756.5e12),
             "H100 NVL": (60e12, 835.5e12), "H200 SXM": (67e12, 989.5e12), "H200 NVL": (60e12, 835.5e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H100" in device_name or "H200" in device_name:
        model = "H100" if "H100" in device_name else "H200"
        form = "PCIe" if "PCIe" in device_name else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"{model} {form}"
    else:
        raise ValueError(device_name)
    if dtype == torch.float32:
        return table[gpu][0]
    if dtype in (torch.bfloat16, torch.float16):
        return table[gpu][1]
    raise ValueError(dtype)


@mutant(replaces="get_promised_flop_per_sec", why="H200 NVL gets the H200 SXM figures (form factor checked for H100 only)")
def bk_peak_h200_nvl(device_name, dtype):
    table = {"A100": (19.5e12, 312e12), "H100 SXM": (67e12, 989.5e12), "H100 PCIe": (51e12, 756.5e12),
             "H100 NVL": (60e12, 835.5e12), "H200": (67e12, 989.5e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H200" in device_name:
        gpu = "H200"
    elif "H100" in device_name:
        form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"H100 {form}"
    else:
        raise ValueError(device_name)
    if dtype == torch.float32:
        return table[gpu][0]
    if dtype in (torch.bfloat16, torch.float16):
        return table[gpu][1]
    raise ValueError(dtype)


@mutant(replaces="get_promised_flop_per_sec", why="any floating dtype other than the half types gets the fp32 figure (float64 should raise)")
def bk_peak_float64(device_name, dtype):
    table = {"A100": (19.5e12, 312e12), "H100 SXM": (67e12, 989.5e12), "H100 PCIe": (51e12, 756.5e12),
             "H100 NVL": (60e12, 835.5e12), "H200 SXM": (67e12, 989.5e12), "H200 NVL": (60e12, 835.5e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H100" in device_name or "H200" in device_name:
        model = "H100" if "H100" in device_name else "H200"
        form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"{model} {form}"
    else:
        raise ValueError(device_name)
    if dtype in (torch.bfloat16, torch.float16):
        return table[gpu][1]
    return table[gpu][0]


@mutant(replaces="get_promised_flop_per_sec", why="float16 not recognised (raises ValueError): only bfloat16 gets the half-precision figure")
def bk_peak_no_fp16(device_name, dtype):
    table = {"A100": (19.5e12, 312e12), "H100 SXM": (67e12, 989.5e12), "H100 PCIe": (51e12, 756.5e12),
             "H100 NVL": (60e12, 835.5e12), "H200 SXM": (67e12, 989.5e12), "H200 NVL": (60e12, 835.5e12)}
    if "A100" in device_name:
        gpu = "A100"
    elif "H100" in device_name or "H200" in device_name:
        model = "H100" if "H100" in device_name else "H200"
        form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"
        gpu = f"{model} {form}"
    else:
        raise ValueError(device_name)
    if dtype == torch.float32:
        return table[gpu][0]
    if dtype == torch.bfloat16:
        return table[gpu][1]
    raise ValueError(dtype)


@mutant(replaces="mfu", why="inverted ratio: promised over achieved")
def bk_mfu_inverted(flops, seconds, promised_flop_per_sec):
    return promised_flop_per_sec / (flops / seconds)


@mutant(replaces="time_matmul", why="returns the total over all trials instead of the time per multiplication")
def bk_time_total(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    return time.perf_counter() - start


@mutant(replaces="time_matmul", why="starts the clock before the warm-up: times trials+1 matmuls, divides by trials")
def bk_time_warmup_timed(a, b, trials=10):
    start = time.perf_counter()
    a @ b
    for _ in range(trials):
        a @ b
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="no warm-up at all: the first (slow) call is timed")
def bk_time_no_warmup(a, b, trials=10):
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="calls torch.cuda.synchronize() unconditionally: fails (or touches CUDA) on CPU tensors")
def bk_time_sync_always(a, b, trials=10):
    a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="ignores trials: always times 10 multiplications but divides by trials")
def bk_time_fixed_loop(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(10):
        a @ b
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="default trials=1 instead of 10")
def bk_time_default_one(a, b, trials=1):
    a @ b
    if a.device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    if a.device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="returns the clock reading at the end, not the difference (start not subtracted)")
def bk_time_no_subtract(a, b, trials=10):
    a @ b
    for _ in range(trials):
        a @ b
    return time.perf_counter() / trials


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts aten.mv (matrix-vector) as 2·m·n: FlopCounterMode counts it 0")
def bk_counter_counts_mv_only(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        self.flops += matmul_flops(args[-2].shape, args[-1].shape)
    elif func.overloadpacket == aten.mv:
        self.flops += 2 * args[0].numel()
    return out


@mutant(replaces="count_matmul_flops", why="counts with torch's FlopCounterMode reached through a module alias (rule, runtime tripwire)")
def bk_count_alias_module(fn, *args):
    import torch.utils.flop_counter as fc

    counter = fc.FlopCounterMode(display=False)
    with counter:
        fn(*args)
    return counter.get_total_flops()


@mutant(replaces="forward_flops", why="counts the input layer with the batch dimension as width (2·batch·batch·d_out for the first layer)")
def bk_forward_batch_as_width(batch, dims):
    if len(dims) < 2:
        return 0
    total = 2 * batch * batch * dims[1]
    return total + sum(2 * batch * a * b for a, b in zip(dims[1:-1], dims[2:]))


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="also counts aten.dot (2n) as a matmul")
def disp_dot(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
        a, b = args[-2], args[-1]
        self.flops += matmul_flops(a.shape, b.shape)
    elif func.overloadpacket is aten.dot:
        self.flops += 2 * args[0].shape[0]
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="substring match 'mm' in the op name (also catches other ops)")
def disp_substring(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if "mm" in str(func.overloadpacket):
        a, b = args[-2], args[-1]
        self.flops += matmul_flops(a.shape, b.shape)
    return out


@mutant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts mm/addmm only when the output is float32: a float64 model counts nothing")
def disp_only_fp32(self, func, types, args=(), kwargs=None):
    out = func(*args, **(kwargs or {}))
    if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm) and out.dtype == torch.float32 and out.dim() == 2 or (func.overloadpacket in (aten.bmm, aten.baddbmm)):
        a, b = args[-2], args[-1]
        self.flops += matmul_flops(a.shape, b.shape)
    return out


@mutant(replaces="count_matmul_flops", why="runs fn twice (once to warm up, once counted)")
def count_twice(fn, *args):
    fn(*args)
    with MatmulFlopCounter() as counter:
        fn(*args)
    return counter.flops


@mutant(replaces="mfu", why="clamped to at most 1.0 (hides a missing synchronize)")
def mfu_clamped(flops, seconds, promised_flop_per_sec):
    return min(1.0, flops / seconds / promised_flop_per_sec)


@mutant(replaces="time_matmul", why="default trials=100")
def time_default_100(a, b, trials=100):
    def sync():
        if a.device.type == "cuda":
            torch.cuda.synchronize(a.device)
    a @ b
    sync()
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    sync()
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="returns the minimum per-trial time, not the average")
def time_min(a, b, trials=10):
    a @ b
    times = []
    for _ in range(trials):
        if a.device.type == "cuda":
            torch.cuda.synchronize(a.device)
        t = time.perf_counter()
        a @ b
        if a.device.type == "cuda":
            torch.cuda.synchronize(a.device)
        times.append(time.perf_counter() - t)
    return min(times)


@mutant(replaces="time_matmul", why="ignores trials: always times 10 runs and divides by 10")
def time_ignore_trials(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(10):
        a @ b
    return (time.perf_counter() - start) / 10


# Independent breaking pass (session 8): had full marks; caught since the fake clock's probe answers
# torch.cuda.is_available() with True, as a GPU machine would.

edit("bk8_sync_when_cuda_exists", within="time_matmul",
     why="synchronises whenever torch.cuda.is_available(), also for CPU tensors",
     old='        if a.device.type == "cuda":', new="        if torch.cuda.is_available():")
