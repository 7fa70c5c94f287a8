"""Mutants of solutions/flops.py: each is one bug a student plausibly writes."""

import time

import torch

from grader.authoring.mutants import edit, mutant
from tests.mutants import reference_default

aten = torch.ops.aten

TRIALS = reference_default("time_matmul", "trials")  # time_matmul's default number of timed runs


# -- matmul_flops, forward/backward ----------------------------------------------------------

edit("matmul_flops_no_factor_two", within="matmul_flops",
     why="counts multiplications only (m·n·p), forgetting the additions",
     old="return 2 * math.prod(batch) * m * n * p", new="return math.prod(batch) * m * n * p")


edit("matmul_flops_batch_of_a", within="matmul_flops",
     why="takes the batch size from a alone, ignoring broadcasting with b's batch dims",
     old="batch = torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))", new="batch = batch_a")


edit("matmul_flops_no_check", within="matmul_flops",
     why="never checks the inner dimensions (no ValueError for (3, 4) @ (5, 6))",
     old="*batch_b, n2, p = b_shape", new=("*batch_b, _, p = b_shape\n"
                                         "    n2 = n"))


edit("forward_flops_skip_last", within="forward_flops",
     why="off by one: skips the last layer of the chain",
     old="return sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims[:-1], dims[1:]))",
     new="return sum(2 * batch * dims[i] * dims[i + 1] for i in range(len(dims) - 2))")


edit("backward_flops_ignores_flag", within="backward_flops",
     why="ignores input_grad: always 2× forward",
     old="total = 2 * forward_flops(batch, dims)", new="return 2 * forward_flops(batch, dims)")


edit("backward_flops_drops_last_layer", within="backward_flops",
     why="without the input gradient, leaves out the last layer's input gradient instead of the first "
         "(and indexes dims[-2] for a single width)",
     edits=[("if not input_grad and len(dims) >= 2:", "if not input_grad:"),
            ("total -= 2 * batch * dims[0] * dims[1]", "total -= 2 * batch * dims[-2] * dims[-1]")])


edit("backward_flops_no_input_grads", within="backward_flops",
     why="without the input gradient, drops every input gradient (backward = forward)",
     old="total -= 2 * batch * dims[0] * dims[1]", new="total = forward_flops(batch, dims)")


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

edit("promised_sparse", within="get_promised_flop_per_sec",
     why="returns the datasheet's sparse tensor-core figures (2× too high)",
     old="fp32, half = peaks[gpu]", new="fp32, half = peaks[gpu][0], 2 * peaks[gpu][1]")


edit("promised_pcie_as_sxm", within="get_promised_flop_per_sec",
     why="treats every H100 as the SXM module (PCIe card gets the SXM peak)",
     old='form = "PCIe" if "pcie" in device_name.lower() else "NVL" if "NVL" in device_name else "SXM"',
     new='form = "NVL" if "NVL" in device_name else "SXM"')


edit("promised_tf32", within="get_promised_flop_per_sec",
     why="gives the TF32 tensor-core figure (half the dense bf16 one) for float32",
     old="fp32, half = peaks[gpu]", new="fp32, half = peaks[gpu][1] / 2, peaks[gpu][1]")


edit("promised_any_small_float", within="get_promised_flop_per_sec",
     why="gives the bf16/fp16 peak to any float of 16 bits or fewer (float8 included) instead of raising",
     old="if dtype in (torch.bfloat16, torch.float16):",
     new="if dtype.is_floating_point and dtype.itemsize <= 2:")


edit("promised_no_error", within="get_promised_flop_per_sec",
     why="falls back to the H100 figure for an unknown GPU instead of raising",
     old=("    else:\n"
          '        raise ValueError(f"no datasheet figures for {device_name!r}")'),
     new=("    else:\n"
          '        gpu = "H100 SXM"'))


edit("mfu_inverted", within="mfu",
     why="inverts the ratio: promised over achieved",
     old="return flops / seconds / promised_flop_per_sec",
     new="return promised_flop_per_sec / (flops / seconds)")


edit("time_matmul_total", within="time_matmul",
     why="returns the total time of all trials, not the time per multiplication",
     old="return (time.perf_counter() - start) / trials", new="return time.perf_counter() - start")


edit("time_matmul_no_warmup", within="time_matmul",
     why="no warm-up: the first (slow) call is timed",
     old="    a @ b  # warm-up\n", new="")


edit("time_matmul_times_warmup", within="time_matmul",
     why="times the warm-up run together with the trials",
     old=("a @ b  # warm-up\n"
          "    sync()\n"
          "    start = time.perf_counter()"),
     new=("start = time.perf_counter()\n"
          "    a @ b  # warm-up\n"
          "    sync()"))


# -- breaking pass (2026-11-22) ------------------------------------------------------------

edit("bk_matmul_batch_a_only", within="matmul_flops",
     why="batch count from a's batch dims only: ignores what b's batch dims broadcast in",
     old="batch = torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))", new="batch = tuple(a_shape[:-2])")


edit("bk_matmul_batch_product", within="matmul_flops",
     why="multiplies both batch sizes instead of broadcasting them: (8,3,4)@(8,4,5) counts 64 products",
     old="batch = torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))",
     new="batch = (math.prod(batch_a), math.prod(batch_b))")


edit("bk_matmul_batch_max", within="matmul_flops",
     why="batch = the larger of the two batch sizes: wrong when both broadcast, (5,1,..)@(2,..) gives 5, not 10",
     old="batch = torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))",
     new="batch = (max(math.prod(batch_a), math.prod(batch_b)),)")


edit("bk_matmul_no_inner_check", within="matmul_flops",
     why="never checks the inner dimensions (no ValueError for (3,4)@(5,6))",
     old=("    if n != n2:\n"
          '        raise ValueError(f"inner dimensions differ: {tuple(a_shape)} @ {tuple(b_shape)}")\n'),
     new="")


edit("bk_matmul_runtime_error", within="matmul_flops",
     why="lets torch's RuntimeError escape for batch dims that do not broadcast (spec: ValueError)",
     old="except RuntimeError as exc:", new="except ValueError as exc:")


edit("bk_matmul_vectors_ok", within="matmul_flops",
     why="treats a 1-D operand as a vector like torch.matmul instead of raising ValueError",
     edits=[("if len(a_shape) < 2 or len(b_shape) < 2:", "if len(a_shape) < 1 or len(b_shape) < 1:"),
            ("*batch_a, m, n = a_shape", "*batch_a, m, n = [1, *a_shape] if len(a_shape) == 1 else a_shape"),
            ("*batch_b, n2, p = b_shape", "*batch_b, n2, p = [*b_shape, 1] if len(b_shape) == 1 else b_shape")])


edit("bk_matmul_float", within="matmul_flops",
     why="returns a float (2.0 * ...) where the spec says an exact int",
     old="return 2 * math.prod(batch) * m * n * p", new="return 2.0 * math.prod(batch) * m * n * p")


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


edit("bk_backward_no_input_grads", within="backward_flops",
     why="input_grad=False drops ALL input gradients (backward = forward)",
     old="total -= 2 * batch * dims[0] * dims[1]", new="total //= 2")


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


edit("bk_peak_sparse", within="get_promised_flop_per_sec",
     why="returns the datasheet's sparse bf16 figures (2x dense)",
     old="return half", new="return 2 * half")


edit("bk_peak_pcie_case", within="get_promised_flop_per_sec",
     why="matches 'PCIe' case-sensitively: 'NVIDIA H100 PCIE' becomes the SXM figure",
     old='"pcie" in device_name.lower()', new='"PCIe" in device_name')


edit("bk_peak_h200_nvl", within="get_promised_flop_per_sec",
     why="H200 NVL gets the H200 SXM figures (form factor checked for H100 only)",
     old='form = "PCIe" if',
     new='form = "SXM" if model == "H200" else "PCIe" if')


edit("bk_peak_float64", within="get_promised_flop_per_sec",
     why="any floating dtype other than the half types gets the fp32 figure (float64 should raise)",
     old="if dtype == torch.float32:", new="if dtype not in (torch.bfloat16, torch.float16):")


edit("bk_peak_no_fp16", within="get_promised_flop_per_sec",
     why="float16 not recognised (raises ValueError): only bfloat16 gets the half-precision figure",
     old="if dtype in (torch.bfloat16, torch.float16):", new="if dtype == torch.bfloat16:")


edit("bk_mfu_inverted", within="mfu",
     why="inverted ratio: promised over achieved",
     old="return flops / seconds / promised_flop_per_sec",
     new="return promised_flop_per_sec / (flops / seconds)")


edit("bk_time_total", within="time_matmul",
     why="returns the total over all trials instead of the time per multiplication",
     old=" / trials", new="")


edit("bk_time_warmup_timed", within="time_matmul",
     why="starts the clock before the warm-up: times trials+1 matmuls, divides by trials",
     edits=[("    a @ b  # warm-up\n", ("    start = time.perf_counter()\n"
                                       "    a @ b  # warm-up\n")),
            ("    sync()\n    start = time.perf_counter()\n", "    sync()\n")])


edit("bk_time_no_warmup", within="time_matmul",
     why="no warm-up at all: the first (slow) call is timed",
     old=("    a @ b  # warm-up\n"
          "    sync()\n"),
     new="")


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


edit("bk_time_fixed_loop", within="time_matmul",
     why=f"ignores trials: always times {TRIALS} multiplications (the default) but divides by trials",
     old="for _ in range(trials):", new=f"for _ in range({TRIALS}):")


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


edit("bk_time_no_subtract", within="time_matmul",
     why="returns the clock reading at the end, not the difference (start not subtracted)",
     old="return (time.perf_counter() - start) / trials", new="return time.perf_counter() / trials")


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


edit("time_min", within="time_matmul",
     why="returns the minimum per-trial time, not the average",
     old=("    start = time.perf_counter()\n"
          "    for _ in range(trials):\n"
          "        a @ b\n"
          "    sync()\n"
          "    return (time.perf_counter() - start) / trials"),
     new=("    times = []\n"
          "    for _ in range(trials):\n"
          "        sync()\n"
          "        start = time.perf_counter()\n"
          "        a @ b\n"
          "        sync()\n"
          "        times.append(time.perf_counter() - start)\n"
          "    return min(times)"))


edit("time_ignore_trials", within="time_matmul",
     why=f"ignores trials: always times {TRIALS} runs (the default) and divides by {TRIALS}",
     edits=[("range(trials)", f"range({TRIALS})"), ("/ trials", f"/ {TRIALS}")])


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


# -- the GPUs Colab hands out: T4, L4, A100 (issue 31) -------------------------------------------

edit("i31_l4_sparse", within="get_promised_flop_per_sec",
     why="i31: the L4's datasheet figure (242*, with sparsity) taken as dense: 2x too high",
     old='"L4": (30.3e12, 242e12 / 2),', new='"L4": (30.3e12, 242e12),')
edit("i31_t4_halved", within="get_promised_flop_per_sec",
     why="i31: halves the T4's 65 TFLOP/s as if it were a sparse figure (Turing has no sparsity: it is dense)",
     old='"T4": (8.1e12, 65e12),', new='"T4": (8.1e12, 65e12 / 2),')
edit("i31_l4_fp32_tf32", within="get_promised_flop_per_sec",
     why="i31: the L4's float32 figure from its TF32 tensor-core line (120*, halved) instead of plain FP32 30.3",
     old='"L4": (30.3e12,', new='"L4": (120e12 / 2,')
edit("i31_t4_bf16_as_fp16", within="get_promised_flop_per_sec",
     why="i31: gives the T4's fp16 figure for bfloat16 too (the T4 has no bfloat16 tensor cores: ValueError)",
     old=('    if dtype == torch.bfloat16 and gpu == "T4":\n'
          '        raise ValueError(f"the T4 has no bfloat16 tensor cores: no datasheet figure for {dtype}")\n'),
     new="")
edit("i31_t4_bf16_nan", within="get_promised_flop_per_sec",
     why="i31: returns NaN for the T4's bfloat16 (no figure) instead of raising ValueError",
     old='raise ValueError(f"the T4 has no bfloat16 tensor cores: no datasheet figure for {dtype}")',
     new='return float("nan")')
edit("i31_t4_no_half_at_all", within="get_promised_flop_per_sec",
     why="i31: refuses float16 on the T4 as well as bfloat16 (its fp16 tensor cores give 65 TFLOP/s)",
     old='if dtype == torch.bfloat16 and gpu == "T4":', new='if gpu == "T4":')
edit("i31_l4_no_bf16", within="get_promised_flop_per_sec",
     why="i31: refuses bfloat16 on the L4 too (Ada has bfloat16 tensor cores; only the T4 lacks them)",
     old='if dtype == torch.bfloat16 and gpu == "T4":', new='if dtype == torch.bfloat16 and gpu in ("T4", "L4"):')
edit("i31_model_substring", within="get_promised_flop_per_sec",
     why="i31: matches the model as a substring of the name, not a word: an L40S is an L4, a T400 a T4, a GH200 an H200",
     old='model = next((word for word in words if word in ("T4", "L4", "A100", "H100", "H200")), None)',
     new='model = next((m for m in ("T4", "L4", "A100", "H100", "H200") if m in device_name), None)')
edit("i31_words_at_spaces_only", within="get_promised_flop_per_sec",
     why="i31: splits the name at spaces only, so Colab's 'NVIDIA A100-SXM4-40GB' has no word A100 (ValueError)",
     old='words = device_name.replace("-", " ").split()', new="words = device_name.split()")
