"""Mutants of solutions/flops.py: each is one bug a student plausibly writes."""

import math
import time

import torch

from grader.mutants import edit, mutant

aten = torch.ops.aten


# -- matmul_flops, forward/backward ----------------------------------------------------------

@mutant(replaces="matmul_flops", why="counts multiplications only (m·n·p), forgetting the additions", against="39b49f3c6017")
def matmul_flops_no_factor_two(a_shape, b_shape):
    *batch_a, m, n = a_shape
    *batch_b, _, p = b_shape
    return math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * n * p


@mutant(replaces="matmul_flops", why="takes the batch size from a alone, ignoring broadcasting with b's batch dims", against="39b49f3c6017")
def matmul_flops_batch_of_a(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="never checks the inner dimensions (no ValueError for (3, 4) @ (5, 6))", against="39b49f3c6017")
def matmul_flops_no_check(a_shape, b_shape):
    *batch_a, m, n = a_shape
    *batch_b, _, p = b_shape
    return 2 * math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * n * p


edit("forward_flops_skip_last", within="forward_flops",
     why="off by one: skips the last layer of the chain",
     old="return sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims[:-1], dims[1:]))",
     new="return sum(2 * batch * dims[i] * dims[i + 1] for i in range(len(dims) - 2))")


@mutant(replaces="backward_flops", why="ignores input_grad: always 2× forward", against="fc82e0292c98")
def backward_flops_ignores_flag(batch, dims, input_grad=True):
    return 2 * sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))


@mutant(replaces="backward_flops", why="without the input gradient, leaves out the last layer's input gradient instead of the first", against="fc82e0292c98")
def backward_flops_drops_last_layer(batch, dims, input_grad=True):
    total = 2 * sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))
    return total if input_grad else total - 2 * batch * dims[-2] * dims[-1]


@mutant(replaces="backward_flops", why="without the input gradient, drops every input gradient (backward = forward)", against="fc82e0292c98")
def backward_flops_no_input_grads(batch, dims, input_grad=True):
    forward = sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))
    return 2 * forward if input_grad else forward


edit("training_flops_forward_only", within="training_flops",
     why="counts only the forward pass: 2·N·T",
     old="return 6.0 * num_params * num_tokens",
     new="return 2.0 * num_params * num_tokens")


edit("training_days_no_mfu", within="training_days",
     why="forgets the MFU (assumes the peak is reached)",
     old=("seconds = training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu)\n"
          "    return seconds / SECONDS_PER_DAY"),
     new="return 6.0 * num_params * num_tokens / (num_gpus * flop_per_sec) / 86400")


edit("training_days_hours", within="training_days",
     why="converts seconds to hours instead of days",
     old=("seconds = training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu)\n"
          "    return seconds / SECONDS_PER_DAY"),
     new="return 6.0 * num_params * num_tokens / (num_gpus * flop_per_sec * mfu) / 3600")


# -- the FLOP counter --------------------------------------------------------------------------

edit("dispatch_compares_packet", within="MatmulFlopCounter.__torch_dispatch__",
     why="compares func (an OpOverload, aten.mm.default) with the packet aten.mm: never matches, counts 0",
     old=("if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("if func in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            self.flops += matmul_flops(args[-2].shape, args[-1].shape)"))


edit("dispatch_mm_only", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts aten.mm only (misses addmm, bmm, baddbmm)",
     old=("if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("if func.overloadpacket is aten.mm:\n"
          "            self.flops += matmul_flops(args[0].shape, args[1].shape)"))


edit("dispatch_no_addmm", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts mm and bmm but not their bias-adding forms addmm/baddbmm",
     old=("if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("if func.overloadpacket in (aten.mm, aten.bmm):\n"
          "            self.flops += matmul_flops(args[0].shape, args[1].shape)"))


edit("dispatch_addmm_wrong_args", within="MatmulFlopCounter.__torch_dispatch__",
     why="reads addmm's operands as args[0], args[1] (the bias and a)",
     edits=[("a, b = args[-2], args[-1]", "a, b = args[0], args[1]"),
           ("self.flops += matmul_flops(a.shape, b.shape)",
            "self.flops += 2 * math.prod(a.shape) * b.shape[-1]")])


edit("dispatch_bmm_no_batch", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts bmm without its batch dimension",
     old="self.flops += matmul_flops(a.shape, b.shape)",
     new="self.flops += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1]")


edit("dispatch_counts_bias", within="MatmulFlopCounter.__torch_dispatch__",
     why="adds the bias addition's m·p FLOPs to addmm/baddbmm",
     edits=[("a, b = args[-2], args[-1]", "self.flops += matmul_flops(args[-2].shape, args[-1].shape)"),
           ("self.flops += matmul_flops(a.shape, b.shape)",
            ("if func.overloadpacket in (aten.addmm, aten.baddbmm):\n"
            "                self.flops += out.numel()"))])


edit("count_matmul_flops_no_grad", within="count_matmul_flops",
     why="counts only the forward pass: runs fn with gradients disabled",
     old=("with MatmulFlopCounter() as counter:\n"
          "        fn(*args)"),
     new=("with torch.no_grad(), MatmulFlopCounter() as counter:\n"
          "        try:\n"
          "            fn(*args)\n"
          "        except RuntimeError:  # backward() without a graph\n"
          "            pass"))


edit("count_matmul_flops_uses_torch", within="count_matmul_flops",
     why="uses torch's FlopCounterMode instead of writing the counter",
     edits=[("with MatmulFlopCounter() as counter:",
            ("from torch.utils.flop_counter import FlopCounterMode\n"
            "\n"
            "    with FlopCounterMode(display=False) as counter:")),
           ("return counter.flops", "return counter.get_total_flops()")])


# -- peaks, MFU, timing -----------------------------------------------------------------------

@mutant(replaces="get_promised_flop_per_sec", why="returns the datasheet's sparse tensor-core figures (2× too high)", against="48714c3db35d")
def promised_sparse(device_name, dtype):
    peaks = {"A100": (19.5e12, 624e12), "H100": (67e12, 1979e12), "H200": (67e12, 1979e12)}
    for gpu, (fp32, half) in peaks.items():
        if gpu in device_name:
            if "PCIe" in device_name and gpu == "H100":
                fp32, half = 51e12, 1513e12
            return fp32 if dtype == torch.float32 else half
    raise ValueError(device_name)


@mutant(replaces="get_promised_flop_per_sec", why="treats every H100 as the SXM module (PCIe card gets the SXM peak)", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="gives the TF32 tensor-core figure for float32", against="48714c3db35d")
def promised_tf32(device_name, dtype):
    if "A100" in device_name:
        return 156e12 if dtype == torch.float32 else 312e12
    if "H100" in device_name or "H200" in device_name:
        return 494.5e12 if dtype == torch.float32 else 989.5e12
    raise ValueError(device_name)


@mutant(replaces="get_promised_flop_per_sec", why="gives the bf16/fp16 peak to any float of 16 bits or fewer (float8 included) instead of raising", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="falls back to the H100 figure for an unknown GPU instead of raising", against="48714c3db35d")
def promised_no_error(device_name, dtype):
    fp32 = dtype == torch.float32
    if "A100" in device_name:
        return 19.5e12 if fp32 else 312e12
    if "PCIe" in device_name:
        return 51e12 if fp32 else 756.5e12
    if "NVL" in device_name:
        return 60e12 if fp32 else 835.5e12
    return 67e12 if fp32 else 989.5e12


edit("mfu_inverted", within="mfu",
     why="inverts the ratio: promised over achieved",
     old="return flops / seconds / promised_flop_per_sec",
     new="return promised_flop_per_sec / (flops / seconds)")


@mutant(replaces="time_matmul", why="returns the total time of all trials, not the time per multiplication", against="804815a59116")
def time_matmul_total(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


@mutant(replaces="time_matmul", why="no warm-up: the first (slow) call is timed", against="804815a59116")
def time_matmul_no_warmup(a, b, trials=10):
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="times the warm-up run together with the trials", against="804815a59116")
def time_matmul_times_warmup(a, b, trials=10):
    start = time.perf_counter()
    a @ b
    for _ in range(trials):
        a @ b
    if a.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / trials


# -- breaking pass (2026-11-22) ------------------------------------------------------------

@mutant(replaces="matmul_flops", why="batch count from a's batch dims only: ignores what b's batch dims broadcast in", against="39b49f3c6017")
def bk_matmul_batch_a_only(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="multiplies both batch sizes instead of broadcasting them: (8,3,4)@(8,4,5) counts 64 products", against="39b49f3c6017")
def bk_matmul_batch_product(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    return 2 * math.prod(a_shape[:-2]) * math.prod(b_shape[:-2]) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="batch = the larger of the two batch sizes: wrong when both broadcast, (5,1,..)@(2,..) gives 5, not 10", against="39b49f3c6017")
def bk_matmul_batch_max(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    batch = max(math.prod(a_shape[:-2]), math.prod(b_shape[:-2]))
    return 2 * batch * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="never checks the inner dimensions (no ValueError for (3,4)@(5,6))", against="39b49f3c6017")
def bk_matmul_no_inner_check(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("need 2 dims")
    batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    return 2 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="lets torch's RuntimeError escape for batch dims that do not broadcast (spec: ValueError)", against="39b49f3c6017")
def bk_matmul_runtime_error(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    return 2 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


@mutant(replaces="matmul_flops", why="treats a 1-D operand as a vector like torch.matmul instead of raising ValueError", against="39b49f3c6017")
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


@mutant(replaces="matmul_flops", why="returns a float (2.0 * ...) where the spec says an exact int", against="39b49f3c6017")
def bk_matmul_float(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        raise ValueError("bad shapes")
    try:
        batch = torch.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    except RuntimeError as e:
        raise ValueError("batch") from e
    return 2.0 * math.prod(batch) * a_shape[-2] * a_shape[-1] * b_shape[-1]


edit("bk_forward_single_width", within="forward_flops",
     why="a single width costs 2*batch*d (one 'layer') instead of 0",
     old="return sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims[:-1], dims[1:]))",
     new=("if len(dims) == 1:\n"
          "        return 2 * batch * dims[0]\n"
          "    return sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))"))


edit("bk_forward_first_layer_half", within="forward_flops",
     why="counts one multiply-add as 1 FLOP for the first layer only (drops the factor 2 there)",
     old="return sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims[:-1], dims[1:]))",
     new=("total = sum(2 * batch * a * b for a, b in zip(dims[:-1], dims[1:]))\n"
          "    if len(dims) >= 2:\n"
          "        total -= batch * dims[0] * dims[1]\n"
          "    return total"))


edit("bk_backward_last_layer", within="backward_flops",
     why="input_grad=False leaves out the LAST layer's input gradient instead of the first's",
     old="total -= 2 * batch * dims[0] * dims[1]",
     new="total -= 2 * batch * dims[-2] * dims[-1]")


@mutant(replaces="backward_flops", why="wrong default: input_grad defaults to False", against="fc82e0292c98")
def bk_backward_default_false(batch, dims, input_grad=False):
    total = 2 * forward_flops(batch, dims)
    if not input_grad and len(dims) >= 2:
        total -= 2 * batch * dims[0] * dims[1]
    return total


edit("bk_backward_single_width_crash", within="backward_flops",
     why="input_grad=False with a single width indexes dims[1] (IndexError) instead of returning 0",
     old="if not input_grad and len(dims) >= 2:",
     new="if not input_grad:")


@mutant(replaces="backward_flops", why="input_grad=False drops ALL input gradients (backward = forward)", against="fc82e0292c98")
def bk_backward_no_input_grads(batch, dims, input_grad=True):
    if input_grad:
        return 2 * forward_flops(batch, dims)
    return forward_flops(batch, dims)


edit("bk_training_flops_int", within="training_flops",
     why="returns an int for int inputs (spec: a float)",
     old="return 6.0 * num_params * num_tokens",
     new="return 6 * num_params * num_tokens")


edit("bk_training_days_rounded", within="training_days",
     why="rounds to whole days (spec: not rounded)",
     old=("seconds = training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu)\n"
          "    return seconds / SECONDS_PER_DAY"),
     new="return float(round(training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu) / SECONDS_PER_DAY))")


edit("bk_training_days_no_mfu", within="training_days",
     why="ignores the MFU (assumes the peak is reached)",
     old=("seconds = training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec * mfu)\n"
          "    return seconds / SECONDS_PER_DAY"),
     new="return training_flops(num_params, num_tokens) / (num_gpus * flop_per_sec) / SECONDS_PER_DAY")


edit("bk_counter_no_addmm", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts mm and bmm but not their bias forms addmm/baddbmm",
     old=("if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("if func.overloadpacket in (aten.mm, aten.bmm):\n"
          "            self.flops += matmul_flops(args[0].shape, args[1].shape)"))


edit("bk_counter_counts_mv", within="MatmulFlopCounter.__torch_dispatch__",
     why="also counts aten.mv and aten.dot (FlopCounterMode counts them 0)",
     old=("a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("self.flops += matmul_flops(args[-2].shape, args[-1].shape)\n"
          "        elif func.overloadpacket is aten.mv:\n"
          "            self.flops += 2 * args[0].shape[0] * args[0].shape[1]\n"
          "        elif func.overloadpacket is aten.dot:\n"
          "            self.flops += 2 * args[0].shape[0]"))


edit("bk_counter_no_batch", within="MatmulFlopCounter.__torch_dispatch__",
     why="bmm/baddbmm: forgets the batch factor B (counts one matrix pair)",
     old="self.flops += matmul_flops(a.shape, b.shape)",
     new="self.flops += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1]")


edit("bk_counter_wrong_inner", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts from the output's shape and a's first dim: m·p·m, wrong unless n == m",
     old=("a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new="self.flops += 2 * out.numel() * args[-2].shape[-2]")


edit("bk_counter_overload_mix", within="MatmulFlopCounter.__torch_dispatch__",
     why="compares func with aten.mm.default etc. but lists addmm's packet, so addmm is never matched",
     old=("if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):\n"
          "            a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("if func in (aten.mm.default, aten.addmm, aten.bmm.default, aten.baddbmm.default):\n"
          "            self.flops += matmul_flops(args[-2].shape, args[-1].shape)"))


edit("bk_count_cached_counter", within="count_matmul_flops",
     why="reuses one counter across calls (cached on the function): counts accumulate",
     old="with MatmulFlopCounter() as counter:",
     new=('counter = count_matmul_flops.__dict__.setdefault("counter", MatmulFlopCounter())\n'
          "    with counter:"))


edit("bk_count_runs_twice", within="count_matmul_flops",
     why="runs fn twice inside the mode (a 'dry run' then the real one): double count",
     old="fn(*args)",
     new=("fn(*args)\n"
          "        fn(*args)"))


edit("bk_count_flop_counter_mode", within="count_matmul_flops",
     why="uses torch's FlopCounterMode (rule: write the counting)",
     edits=[("with MatmulFlopCounter() as counter:",
            ("from torch.utils.flop_counter import FlopCounterMode\n"
            "\n"
            "    with FlopCounterMode(display=False) as c:")),
           ("return counter.flops", "return c.get_total_flops()")])


edit("bk_count_importlib", within="count_matmul_flops",
     why="reaches FlopCounterMode through importlib (dynamic escape + rule)",
     edits=[("with MatmulFlopCounter() as counter:",
            ("import importlib\n"
            "\n"
            '    mode = importlib.import_module("torch.utils.flop" + "_counter").FlopCounterMode(display=False)\n'
            "    with mode:")),
           ("return counter.flops", "return mode.get_total_flops()")])


@mutant(replaces="get_promised_flop_per_sec", why="returns the datasheet's sparse bf16 figures (2x dense)", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="matches 'PCIe' case-sensitively: 'NVIDIA H100 PCIE' becomes the SXM figure", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="H200 NVL gets the H200 SXM figures (form factor checked for H100 only)", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="any floating dtype other than the half types gets the fp32 figure (float64 should raise)", against="48714c3db35d")
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


@mutant(replaces="get_promised_flop_per_sec", why="float16 not recognised (raises ValueError): only bfloat16 gets the half-precision figure", against="48714c3db35d")
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


edit("bk_mfu_inverted", within="mfu",
     why="inverted ratio: promised over achieved",
     old="return flops / seconds / promised_flop_per_sec",
     new="return promised_flop_per_sec / (flops / seconds)")


@mutant(replaces="time_matmul", why="returns the total over all trials instead of the time per multiplication", against="804815a59116")
def bk_time_total(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    return time.perf_counter() - start


@mutant(replaces="time_matmul", why="starts the clock before the warm-up: times trials+1 matmuls, divides by trials", against="804815a59116")
def bk_time_warmup_timed(a, b, trials=10):
    start = time.perf_counter()
    a @ b
    for _ in range(trials):
        a @ b
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="no warm-up at all: the first (slow) call is timed", against="804815a59116")
def bk_time_no_warmup(a, b, trials=10):
    start = time.perf_counter()
    for _ in range(trials):
        a @ b
    return (time.perf_counter() - start) / trials


edit("bk_time_sync_always", within="time_matmul",
     why="calls torch.cuda.synchronize() unconditionally: fails (or touches CUDA) on CPU tensors",
     edits=[(("    def sync() -> None:\n"
            '        if a.device.type == "cuda":\n'
            "            torch.cuda.synchronize(a.device)\n"),
            ""),
           (("    a @ b  # warm-up\n"
            "    sync()"),
            ("    a @ b  # warm-up\n"
            "    torch.cuda.synchronize()")),
           (("        a @ b\n"
            "    sync()"),
            ("        a @ b\n"
            "    torch.cuda.synchronize()"))])


@mutant(replaces="time_matmul", why="ignores trials: always times 10 multiplications but divides by trials", against="804815a59116")
def bk_time_fixed_loop(a, b, trials=10):
    a @ b
    start = time.perf_counter()
    for _ in range(10):
        a @ b
    return (time.perf_counter() - start) / trials


@mutant(replaces="time_matmul", why="default trials=1 instead of 10", against="804815a59116")
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


@mutant(replaces="time_matmul", why="returns the clock reading at the end, not the difference (start not subtracted)", against="804815a59116")
def bk_time_no_subtract(a, b, trials=10):
    a @ b
    for _ in range(trials):
        a @ b
    return time.perf_counter() / trials


edit("bk_counter_counts_mv_only", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts aten.mv (matrix-vector) as 2·m·n: FlopCounterMode counts it 0",
     old=("a, b = args[-2], args[-1]  # (a, b) for mm/bmm, (bias, a, b) for addmm/baddbmm\n"
          "            self.flops += matmul_flops(a.shape, b.shape)"),
     new=("self.flops += matmul_flops(args[-2].shape, args[-1].shape)\n"
          "        elif func.overloadpacket == aten.mv:\n"
          "            self.flops += 2 * args[0].numel()"))


edit("bk_count_alias_module", within="count_matmul_flops",
     why="counts with torch's FlopCounterMode reached through a module alias (rule, runtime tripwire)",
     edits=[("with MatmulFlopCounter() as counter:",
            ("import torch.utils.flop_counter as fc\n"
            "\n"
            "    counter = fc.FlopCounterMode(display=False)\n"
            "    with counter:")),
           ("return counter.flops", "return counter.get_total_flops()")])


edit("bk_forward_batch_as_width", within="forward_flops",
     why="counts the input layer with the batch dimension as width (2·batch·batch·d_out for the first "
         "layer)",
     old="return sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims[:-1], dims[1:]))",
     new=("if len(dims) < 2:\n"
          "        return 0\n"
          "    total = 2 * batch * batch * dims[1]\n"
          "    return total + sum(2 * batch * a * b for a, b in zip(dims[1:-1], dims[2:]))"))


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

edit("disp_dot", within="MatmulFlopCounter.__torch_dispatch__",
     why="also counts aten.dot (2n) as a matmul",
     old="self.flops += matmul_flops(a.shape, b.shape)",
     new=("self.flops += matmul_flops(a.shape, b.shape)\n"
          "        elif func.overloadpacket is aten.dot:\n"
          "            self.flops += 2 * args[0].shape[0]"))


edit("disp_substring", within="MatmulFlopCounter.__torch_dispatch__",
     why="substring match 'mm' in the op name (also catches other ops)",
     old="if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):",
     new='if "mm" in str(func.overloadpacket):')


edit("disp_only_fp32", within="MatmulFlopCounter.__torch_dispatch__",
     why="counts mm/addmm only when the output is float32: a float64 model counts nothing",
     old="if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):",
     new="if func.overloadpacket in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm) and out.dtype == torch.float32 and out.dim() == 2 or (func.overloadpacket in (aten.bmm, aten.baddbmm)):")


edit("count_twice", within="count_matmul_flops",
     why="runs fn twice (once to warm up, once counted)",
     old="    with MatmulFlopCounter() as counter:",
     new=("    fn(*args)\n"
          "    with MatmulFlopCounter() as counter:"))


edit("mfu_clamped", within="mfu",
     why="clamped to at most 1.0 (hides a missing synchronize)",
     old="return flops / seconds / promised_flop_per_sec",
     new="return min(1.0, flops / seconds / promised_flop_per_sec)")


@mutant(replaces="time_matmul", why="default trials=100", against="804815a59116")
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


@mutant(replaces="time_matmul", why="returns the minimum per-trial time, not the average", against="804815a59116")
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


@mutant(replaces="time_matmul", why="ignores trials: always times 10 runs and divides by 10", against="804815a59116")
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


# -- every default and every case the docstrings name (issue 30) --------------------------------------

edit("i30_h200_pcie_is_sxm", within="get_promised_flop_per_sec",
     why="i30: an H200 name with 'PCIe' gets the H200 SXM figures (the H200 datasheet has no PCIe card)",
     old='form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"',
     new=('form = "NVL" if "NVL" in device_name else "SXM"\n'
          '        if model == "H100" and "pcie" in device_name.lower():\n'
          '            form = "PCIe"'))
edit("i30_h200_pcie_key_error", within="get_promised_flop_per_sec",
     why="i30: an H200 name with 'PCIe' looks up a table row that does not exist: KeyError, not ValueError",
     old=('        if gpu not in peaks:\n'
          '            raise ValueError(f"no datasheet figures for {device_name!r}")\n'),
     new="")
edit("i30_counter_left_on", within="count_matmul_flops",
     why="i30: enters the counter without a with block and never leaves it: the mode stays on after the call",
     old=("    with MatmulFlopCounter() as counter:\n"
          "        fn(*args)\n"),
     new=("    counter = MatmulFlopCounter()\n"
          "    counter.__enter__()\n"
          "    fn(*args)\n"))
edit("i30_peaks_as_ints", within="get_promised_flop_per_sec",
     why="i30: returns the table's figures as ints (312 * 10**12), not the float the docstring promises",
     old="fp32, half = peaks[gpu]", new="fp32, half = (int(v) for v in peaks[gpu])")
