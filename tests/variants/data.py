"""Correct but different formulations of solutions/data.py: every graded test must pass on each."""

import os
import random
import tempfile

import numpy as np
import torch

from grader.authoring.mutants import variant


@variant(replaces="write_tokens", why="checks via int64 copy and writes bytes through open().write")
def write_tokens_bytes(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    if array.size == 0:
        array = array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError("token ids must be integers")
    info = np.iinfo(dtype)
    if array.size and (int(array.min()) < int(info.min) or int(array.max()) > int(info.max)):
        raise ValueError("token id out of range")
    with open(path, "wb") as f:
        f.write(array.astype(dtype).tobytes())


@variant(replaces="load_tokens", why="explicit size check and shape, np.dtype(dtype)")
def load_tokens_explicit(path, dtype=np.uint16):
    dtype = np.dtype(dtype)
    size = os.path.getsize(path)
    if size == 0 or size % dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes is not a positive multiple of {dtype.itemsize}")
    return np.memmap(os.fspath(path), dtype=dtype, mode="r", shape=(size // dtype.itemsize,))


@variant(replaces="get_batch", why="numpy's global generator and a sliding_window_view gather")
def get_batch_sliding(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("sizes must be >= 1")
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = np.random.randint(0, len(data) - context_length, size=batch_size)
    windows = np.lib.stride_tricks.sliding_window_view(data, context_length + 1)[starts]
    windows = torch.from_numpy(windows.astype(np.int64))
    x, y = windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
    device = torch.device(device)
    if device.type == "cuda":
        x, y = x.pin_memory(), y.pin_memory()
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    return x.to(device), y.to(device)


@variant(replaces="get_batch", why="Python's random for starts, two separate gathers, torch index arithmetic")
def get_batch_two_gathers(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1 or len(data) - context_length < 1:
        raise ValueError("bad sizes")
    starts = np.array([random.randrange(len(data) - context_length) for _ in range(batch_size)], dtype=np.int64)
    index = starts[:, None] + np.arange(context_length)
    x = torch.tensor(data[index].astype(np.int64))
    y = torch.tensor(data[index + 1].astype(np.int64))
    if torch.device(device).type == "cuda":
        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    return x.to(device=device), y.to(device=device)


@variant(replaces="set_seed", why="RandomState-level seeding and torch.random.manual_seed")
def set_seed_alt(seed):
    np.random.mtrand._rand.seed(seed)
    random.seed(seed, version=2)
    torch.random.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


@variant(replaces="get_batch", why="the lecture's list of slices (correct, only slower): torch.tensor of stacked rows")
def get_batch_list_of_slices(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("batch_size and context_length must be >= 1")
    if len(data) <= context_length:
        raise ValueError("data too short")
    starts = torch.randint(0, len(data) - context_length, (batch_size,)).tolist()
    rows = np.stack([np.asarray(data[s:s + context_length + 1], dtype=np.int64) for s in starts])
    x = torch.tensor(rows[:, :-1])
    y = torch.tensor(rows[:, 1:])
    if torch.device(device).type == "cuda":
        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    return x.to(device), y.to(device)


# ---- second breaking pass (BREAK5.md, session 5) ----


@variant(replaces="get_batch", why="b5: numpy's global generator, x and y gathered by two fancy indexes, non_blocking .to on every device")
def b5_gb_numpy_randint(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    if len(data) < context_length + 1:
        raise ValueError("too short")
    starts = np.random.randint(0, len(data) - context_length, size=batch_size)
    idx = starts[:, None] + np.arange(context_length)
    x = torch.from_numpy(data[idx].astype(np.int64))
    y = torch.from_numpy(data[idx + 1].astype(np.int64))
    device = torch.device(device)
    if device.type == "cuda":
        x, y = x.pin_memory(), y.pin_memory()
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


@variant(replaces="set_seed", why="b5: set_state from fresh generators; torch.manual_seed also seeds CUDA")
def b5_ss_via_states(seed):
    random.setstate(random.Random(seed).getstate())
    np.random.set_state(np.random.RandomState(seed).get_state())
    torch.manual_seed(seed)


@variant(replaces="write_tokens", why="b5: numpy arrays by dtype kind, lists id by id (operator.index), then np.array(..., dtype)")
def b5_wt_index_check(tokens, path, dtype=np.uint16):
    import operator
    info = np.iinfo(dtype)
    if isinstance(tokens, np.ndarray):
        if tokens.size and tokens.dtype.kind not in "iu":
            raise ValueError("ids must be integers")
        ids = [int(t) for t in tokens]
    else:
        try:
            ids = [operator.index(t) for t in tokens]
        except TypeError as e:
            raise ValueError("ids must be integers") from e
    if any(t < info.min or t > info.max for t in ids):
        raise ValueError("out of range")
    np.array(ids, dtype=dtype).tofile(path)
