"""Probes for the `data` module.

Token files are written under ``tempfile.mkdtemp()`` and removed afterwards.  The batch probes
use an *arange* token file (token i at position i, plus an offset), so that every row of x
names its own start position and y = x + 1 exactly.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np
import torch


@contextmanager
def _scratch():
    folder = tempfile.mkdtemp(prefix="kit-data-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def write_tokens(impl, tokens, dtype="uint16", existing=0):
    """Write with the student's write_tokens; return the file's raw bytes as read by the kit.
    With `existing` > 0 the path already holds that many 0xFF bytes (write_tokens overwrites).
    A `dtype` of None calls it without one (the default)."""
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        if existing:
            with open(path, "wb") as f:
                f.write(b"\xff" * existing)
        if dtype is None:
            impl.data.write_tokens(tokens, path)
        else:
            impl.data.write_tokens(tokens, path, dtype=np.dtype(dtype))
        raw = open(path, "rb").read()
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone() if raw else torch.zeros(0, dtype=torch.uint8)


def write_numpy_tokens(impl, tokens, dtype="uint16"):
    """write_tokens given a numpy int64 array rather than a list."""
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        impl.data.write_tokens(np.asarray(tokens, dtype=np.int64), path, dtype=np.dtype(dtype))
        raw = open(path, "rb").read()
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone()


def load_tokens(impl, tokens, dtype="uint16", default=False):
    """The kit writes a raw file with numpy; the student's load_tokens opens it (`default`: without
    a dtype argument, the file being `dtype`)."""
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        np.asarray(tokens, dtype=np.dtype(dtype)).tofile(path)
        array = impl.data.load_tokens(path) if default else impl.data.load_tokens(path, dtype=np.dtype(dtype))
        result = {
            "type": f"{type(array).__module__}.{type(array).__qualname__}",
            "is_memmap": isinstance(array, np.memmap),
            "dtype": str(getattr(array, "dtype", None)),
            "shape": [int(n) for n in getattr(array, "shape", ())],
            "writeable": bool(array.flags.writeable) if hasattr(array, "flags") else None,
            "mode": str(getattr(array, "mode", None)),
            "values": torch.from_numpy(np.array(array, dtype=np.int64)),
        }
        del array
    return result


def load_raw(impl, nbytes, dtype="uint16"):
    """load_tokens on a file of `nbytes` bytes (0: empty; odd: not a whole number of items)."""
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        with open(path, "wb") as f:
            f.write(bytes(range(256)) * (nbytes // 256) + bytes(range(nbytes % 256)))
        array = impl.data.load_tokens(path, dtype=np.dtype(dtype))
        shape = [int(n) for n in getattr(array, "shape", ())]
        del array
    return {"shape": shape}


def batch_devices(impl, devices, length=50, context_length=4, batch_size=3):
    """get_batch with each device in `devices` ("meta", "cpu", or "torch.device:<name>" for a
    torch.device): what the kit sees of x and y (type, dtype, device, shape)."""
    data = np.arange(length, dtype=np.uint16)
    seen = []
    for spec in devices:
        device = torch.device(spec.split(":", 1)[1]) if spec.startswith("torch.device:") else spec
        x, y = impl.data.get_batch(data, batch_size, context_length, device)
        seen.append({name: {"type": type(t).__name__, "dtype": str(getattr(t, "dtype", None)),
                            "device": str(getattr(t, "device", None)),
                            "shape": [int(n) for n in getattr(t, "shape", ())]}
                     for name, t in (("x", x), ("y", y))})
    return seen


def batches(impl, length, context_length, batch_size, calls, seed, offset=0, dtype="uint16", kind="memmap",
            device="cpu", torch_device=False):
    """`calls` batches from an arange token file (token at position i is offset + i).

    `kind`: "memmap" (a read-only np.memmap opened by the kit), or "array" (a plain in-memory
    numpy array of `dtype`).  `device` is passed as a string, or as a torch.device when
    `torch_device`.  Returns the batches stacked (on the CPU), plus what the kit saw of the tensors.
    """
    tokens = np.arange(offset, offset + length, dtype=np.int64).astype(np.dtype(dtype))
    with _scratch() as folder:
        if kind == "memmap":
            path = os.path.join(folder, "tokens.bin")
            tokens.tofile(path)
            data = np.memmap(path, dtype=np.dtype(dtype), mode="r")
        else:
            data = tokens
        _seed_everything(seed)
        xs, ys, seen = [], [], []
        for _ in range(calls):
            x, y = impl.data.get_batch(data, batch_size, context_length, torch.device(device) if torch_device else device)
            seen.append({name: {"type": type(t).__name__, "dtype": str(getattr(t, "dtype", None)),
                                "device": str(getattr(t, "device", None)),
                                "contiguous": bool(t.is_contiguous()) if type(t) is torch.Tensor else None}
                         for name, t in (("x", x), ("y", y))})
            xs.append(x.detach().cpu().clone() if type(x) is torch.Tensor else torch.zeros(0))
            ys.append(y.detach().cpu().clone() if type(y) is torch.Tensor else torch.zeros(0))
        del data
    same_shapes = len({tuple(t.shape) for t in xs + ys}) == 1
    return {"x": torch.stack(xs) if same_shapes else xs[0], "y": torch.stack(ys) if same_shapes else ys[0],
            "seen": seen}


def round_trip_batch(impl, tokens, context_length, batch_size, seed):
    """The student's write_tokens, then load_tokens, then get_batch."""
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        impl.data.write_tokens(tokens, path)
        data = impl.data.load_tokens(path)
        _seed_everything(seed)
        x, y = impl.data.get_batch(data, batch_size, context_length, "cpu")
        del data
    return {"x": x.detach().cpu().clone(), "y": y.detach().cpu().clone()}


def short_data(impl, length, context_length, batch_size=2):
    """get_batch on `length` tokens (an arange), which may be too short."""
    data = np.arange(length, dtype=np.uint16)
    x, y = impl.data.get_batch(data, batch_size, context_length, "cpu")
    return {"x": x.detach().cpu().clone(), "y": y.detach().cpu().clone()}


def _scramble() -> None:
    """Put every generator in an unpredictable state, so that only set_seed can make draws agree."""
    random.seed(os.urandom(8))
    np.random.seed(int.from_bytes(os.urandom(4), "little"))
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))


def seeded_draws(impl, seed):
    """What Python, numpy and torch draw right after the student's set_seed(seed), called when
    NumPy's and Python's generators each hold a cached Gaussian (an odd number of normal draws)."""
    _scramble()
    np.random.standard_normal(1)  # NumPy's legacy generator now caches the second Gaussian (has_gauss = 1)
    random.gauss(0.0, 1.0)        # so does Python's (gauss_next)
    impl.data.set_seed(seed)
    return {"python": random.random(), "numpy": torch.from_numpy(np.random.rand(3)), "torch": torch.rand(3),
            "numpy_normal": torch.from_numpy(np.random.standard_normal(3)), "python_gauss": random.gauss(0.0, 1.0)}


def cuda_seeded_draws(impl, seed, count):
    """(CUDA) torch.rand(count) on every GPU right after set_seed(seed), the GPUs' generators
    first put in other states."""
    for d in range(torch.cuda.device_count()):
        with torch.cuda.device(d):
            torch.cuda.manual_seed(int.from_bytes(os.urandom(4), "little"))
    impl.data.set_seed(seed)
    return [torch.rand(count, device=f"cuda:{d}").cpu() for d in range(torch.cuda.device_count())]


def batch_after_seed(impl, seed, length=5000, context_length=16, batch_size=8):
    """set_seed, then a batch; twice.  Data is a plain arange array."""
    data = np.arange(length, dtype=np.uint16)
    out = []
    for _ in range(2):
        _scramble()
        impl.data.set_seed(seed)
        x, _ = impl.data.get_batch(data, batch_size, context_length, "cpu")
        out.append(x.detach().cpu().clone())
    return out


# -- memory: batching from a multi-GB memmap ----------------------------------------------------

#: Anonymous memory (malloc, numpy and torch buffers) the student's code may add before allocations fail:
#: a copy of the whole file would need gigabytes and fails at once with MemoryError instead of
#: filling the machine.
DATA_LIMIT_BYTES = 1 << 30


def _proc_status() -> dict[str, int]:
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "VmData"):
                fields[key] = int(value.split()[0]) * 1024
    return fields


def _largest_file_allowed(requested: int) -> tuple[int, str]:
    """`requested` bytes, or less where this process's rlimits forbid a file (RLIMIT_FSIZE) or a
    mapping (RLIMIT_AS, keeping 1 GiB for everything else) that large; and why."""
    import resource

    size, why = requested, ""
    fsize = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if fsize != resource.RLIM_INFINITY and fsize < size:
        size, why = fsize, f"RLIMIT_FSIZE is {fsize} bytes"
    address_space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if address_space != resource.RLIM_INFINITY and os.path.exists("/proc/self/status"):
        with open("/proc/self/status") as f:
            used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        room = address_space - used - (1 << 30)
        if room < size:
            size, why = max(room, 0), f"RLIMIT_AS is {address_space} bytes"
    return size - size % 8, why


def batch_memory_here(impl, gigabytes, batch_size, context_length, calls):
    """In THIS process (the caller measures its memory from outside): create a sparse token file
    of `gigabytes` GiB (no disk used), load_tokens it and call get_batch `calls` times.

    While the student's code runs, the process's anonymous memory (RLIMIT_DATA) is capped 1 GiB
    above what it uses now, so a copy of the file fails at once with MemoryError instead of
    filling the machine; the limit is put back afterwards.  Inside a sandbox whose rlimits forbid
    a file or a mapping that large, the file is the largest they allow (`file_bytes`,
    `limited_by`).  Returns only what the code produced: length and batch shapes/dtypes."""
    import resource

    size, limited_by = _largest_file_allowed(int(gigabytes * (1 << 30)))
    # warm up: first-call allocations (numpy/torch internals) are not the data's fault
    impl.data.get_batch(np.arange(4 * context_length, dtype=np.uint16), batch_size, context_length, "cpu")
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        with open(path, "wb") as f:
            f.truncate(size)
        saved = resource.getrlimit(resource.RLIMIT_DATA)
        capped = False
        if os.path.exists("/proc/self/status"):
            cap = _proc_status()["VmData"] + DATA_LIMIT_BYTES
            hard = saved[1]
            try:
                resource.setrlimit(resource.RLIMIT_DATA, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
                capped = True
            except (ValueError, OSError):
                pass  # the sandbox's own limits still stop a copy of the file
        try:
            data = impl.data.load_tokens(path)
            shapes = set()
            for _ in range(calls):
                x, y = impl.data.get_batch(data, batch_size, context_length, "cpu")
                shapes.add((tuple(x.shape), tuple(y.shape), str(x.dtype), str(y.dtype)))
                del x, y
            tokens = int(len(data))
            del data
        finally:
            if capped:
                resource.setrlimit(resource.RLIMIT_DATA, saved)
    return {"tokens": tokens, "shapes": [list(map(str, s)) for s in sorted(shapes)], "file_bytes": size,
            "limited_by": limited_by}


# -- CUDA: pinned memory and an asynchronous copy -------------------------------------------------

def cuda_batch(impl, length, context_length, batch_size, seed, offset=0, device="cuda"):
    """get_batch(..., device) under the profiler: the batch (copied back to the CPU), the devices,
    and the names (with counts) of the host-to-device copies and stream synchronisations it made.
    `device` is a string ("cuda", "cuda:0"), or "torch.device:<name>" for a torch.device."""
    if device.startswith("torch.device:"):
        device = torch.device(device.split(":", 1)[1])
    from torch.profiler import ProfilerActivity, profile

    tokens = np.arange(offset, offset + length, dtype=np.int64).astype(np.uint16)
    with _scratch() as folder:
        path = os.path.join(folder, "tokens.bin")
        tokens.tofile(path)
        data = np.memmap(path, dtype=np.uint16, mode="r")
        _seed_everything(seed)
        for _ in range(3):  # warm-up: CUDA context, pinned-memory pool, first-call allocations
            impl.data.get_batch(data, batch_size, context_length, device)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            x, y = impl.data.get_batch(data, batch_size, context_length, device)
            torch.cuda.synchronize()  # recorded as cudaDeviceSynchronize: the kit's, not the student's
        del data
    counts: dict[str, int] = {}
    for event in prof.events():
        name = event.name
        if name.startswith("Memcpy") or "Synchronize" in name or name.startswith("cudaMemcpy") \
                or name.startswith("cudaHostAlloc"):
            counts[name] = counts.get(name, 0) + 1
    return {"x": x.detach().cpu().clone(), "y": y.detach().cpu().clone(), "x_device": str(x.device),
            "y_device": str(y.device), "events": counts}
