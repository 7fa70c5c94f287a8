"""Correct but different formulations of solutions/flops.py: every graded test must pass on each.

A default written `...` (`trials=...`) is the reference's default (grader.authoring.mutants.reference_defaults).
"""

import time

import torch

from grader.authoring.mutants import variant

aten = torch.ops.aten


@variant(replaces="matmul_flops", why="broadcast batch via torch.empty on the meta device instead of broadcast_shapes")
def ok_matmul_meta(a_shape, b_shape):
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("need at least 2 dimensions")
    if a_shape[-1] != b_shape[-2]:
        raise ValueError("inner dimensions differ")
    try:
        out = torch.empty(tuple(a_shape), device="meta") @ torch.empty(tuple(b_shape), device="meta")
    except RuntimeError as e:
        raise ValueError("batch dims do not broadcast") from e
    return 2 * out.numel() * a_shape[-1]


@variant(replaces="forward_flops", why="via matmul_flops per layer, explicit loop")
def ok_forward_loop(batch, dims):
    total = 0
    for i in range(len(dims) - 1):
        total += matmul_flops((batch, dims[i]), (dims[i], dims[i + 1]))
    return total


@variant(replaces="backward_flops", why="weight grads + input grads counted separately")
def ok_backward_split(batch, dims, input_grad=True):
    layers = list(zip(dims[:-1], dims[1:]))
    weight = sum(2 * batch * a * b for a, b in layers)
    inputs = sum(2 * batch * a * b for i, (a, b) in enumerate(layers) if i > 0 or input_grad)
    return weight + inputs


@variant(replaces="training_days", why="divides step by step in another order, SECONDS as 86400.0")
def ok_training_days_order(num_params, num_tokens, num_gpus, flop_per_sec, mfu):
    per_gpu = training_flops(num_params, num_tokens) / num_gpus
    return per_gpu / mfu / flop_per_sec / 86400.0


@variant(replaces="MatmulFlopCounter.__torch_dispatch__", why="counts from the output size: 2 * out.numel() * inner dim")
def ok_counter_from_output(self, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    out = func(*args, **kwargs)
    if func in (aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default):
        self.flops += 2 * out.numel() * args[-1].shape[-2]
    return out


@variant(replaces="get_promised_flop_per_sec", why="regex-free checks of lower-cased words in another order, lecture's 67.5e12 for H100 SXM fp32")
def ok_peak_lecture(device_name, dtype):
    name = device_name.lower()
    words = name.replace("-", " ").split()
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"dtype {dtype}")
    half = dtype != torch.float32
    if "t4" in words:
        if dtype == torch.bfloat16:
            raise ValueError("the T4 has no bfloat16 tensor cores")
        return 65e12 if half else 8.1e12
    if "l4" in words:
        return 121e12 if half else 30.3e12
    if "a100" in words:
        return 312e12 if half else 19.5e12
    if "h100" in words or "h200" in words:
        if "pcie" in name:
            if "h200" in words:
                raise ValueError(device_name)
            return 756.5e12 if half else 51e12
        if "nvl" in name:
            return 835.5e12 if half else 60e12
        return 989.5e12 if half else 67.5e12
    raise ValueError(device_name)


@variant(replaces="get_promised_flop_per_sec", why="the words by re.split (re imported in the function), one dict keyed by (model, form)")
def ok_peak_regex_words(device_name, dtype):
    import re

    table = {("T4", ""): (8.1e12, 65e12), ("L4", ""): (30.3e12, 121e12), ("A100", ""): (19.5e12, 312e12),
             ("H100", "SXM"): (67e12, 989.5e12), ("H100", "PCIe"): (51e12, 756.5e12), ("H100", "NVL"): (60e12, 835.5e12),
             ("H200", "SXM"): (67e12, 989.5e12), ("H200", "NVL"): (60e12, 835.5e12)}
    words = re.split(r"[\s-]+", device_name.strip())
    model = next((w for w in words if w in ("T4", "L4", "A100", "H100", "H200")), None)
    form = ""
    if model in ("H100", "H200"):
        form = "PCIe" if re.search("pcie", device_name, re.IGNORECASE) else "NVL" if "NVL" in device_name else "SXM"
    if (model, form) not in table or dtype not in (torch.float32, torch.float16, torch.bfloat16) \
            or (model == "T4" and dtype == torch.bfloat16):
        raise ValueError(f"no datasheet figure for {dtype} on {device_name!r}")
    fp32, half = table[(model, form)]
    return fp32 if dtype == torch.float32 else half


@variant(replaces="time_matmul", why="mean of per-trial perf_counter intervals, two warm-ups")
def ok_time_per_trial(a, b, trials=...):
    cuda = a.device.type == "cuda"
    for _ in range(2):
        a @ b
    times = []
    for _ in range(trials):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sum(times) / len(times)


@variant(replaces="time_matmul", why="median of per-trial times (statistics.median), synchronising via the tensor's device")
def ok_time_median(a, b, trials=...):
    import statistics

    def sync():
        if a.is_cuda:
            torch.cuda.synchronize(a.device)

    a @ b
    sync()
    times = []
    for _ in range(trials):
        t0 = time.perf_counter()
        a @ b
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@variant(replaces="time_matmul", why="integer-nanosecond clock (perf_counter_ns), total over trials")
def ok_time_ns(a, b, trials=...):
    def sync():
        if a.is_cuda:
            torch.cuda.synchronize()

    _ = a @ b
    sync()
    t0 = time.perf_counter_ns()
    for _ in range(trials):
        _ = a @ b
    sync()
    return (time.perf_counter_ns() - t0) / 1e9 / trials


@variant(replaces="matmul_flops", why="broadcasts the batch dims by hand, right-aligned")
def ok_matmul_by_hand(a_shape, b_shape):
    a, b = list(a_shape), list(b_shape)
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"need at least 2 dims: {a} @ {b}")
    if a[-1] != b[-2]:
        raise ValueError(f"inner dims differ: {a} @ {b}")
    ba, bb = a[:-2], b[:-2]
    n = max(len(ba), len(bb))
    ba, bb = [1] * (n - len(ba)) + ba, [1] * (n - len(bb)) + bb
    count = 1
    for x, y in zip(ba, bb):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch dims do not broadcast: {a} @ {b}")
        count *= max(x, y) if min(x, y) != 0 else 0
    return 2 * count * a[-2] * a[-1] * b[-1]


@variant(replaces="count_matmul_flops", why="its own inline TorchDispatchMode, matching OpOverloads by name")
def ok_count_inline(fn, *args):
    from torch.utils._python_dispatch import TorchDispatchMode

    names = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            if func.name().split(".")[0] in names:
                a, b = args[-2], args[-1]
                self.total += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if a.dim() == 3 else 1)
            return result

    with Counter() as counter:
        fn(*args)
    return int(counter.total)


# third independent pass (2026-11-23): the fake clock now checks exactly `trials` timed runs and their mean
@variant(replaces="time_matmul", why="perf_counter_ns, 3 warm-ups, mean of per-trial synced times")
def time_mean_of_trials_ns(a, b, trials=...):
    cuda = a.device.type == "cuda"
    for _ in range(3):
        a @ b
    total = 0
    for _ in range(trials):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter_ns()
        a @ b
        if cuda:
            torch.cuda.synchronize()
        total += time.perf_counter_ns() - t
    return total / trials / 1e9
