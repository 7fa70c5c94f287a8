"""Mutants of solutions/data.py: each is one bug a student plausibly writes.

The bodies may use the solution module's imports (os, random, np, torch).
"""

import random

import numpy as np
import torch

from grader.mutants import mutant


@mutant(replaces="write_tokens", why="saves with np.save, which writes an .npy header before the ids")
def write_tokens_npy(tokens, path, dtype=np.uint16):
    with open(path, "wb") as f:
        np.save(f, np.asarray(tokens).astype(dtype))


@mutant(replaces="write_tokens", why="casts without a range check: ids that do not fit the dtype wrap around silently")
def write_tokens_wraps(tokens, path, dtype=np.uint16):
    np.asarray(tokens).astype(dtype).tofile(path)


@mutant(replaces="load_tokens", why="reads the whole file into memory (np.fromfile) instead of memory-mapping it")
def load_tokens_reads_file(path, dtype=np.uint16):
    return np.fromfile(path, dtype=dtype)


@mutant(replaces="load_tokens", why="opens the memmap read-write (mode='r+'): training could modify its data")
def load_tokens_writable(path, dtype=np.uint16):
    return np.memmap(path, dtype=dtype, mode="r+")


@mutant(replaces="get_batch", why="off by one: the last valid start is never drawn")
def get_batch_misses_last_start(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(max(len(data) - context_length - 1, 1), (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="the first position is never a start (starts drawn from 1)")
def get_batch_misses_first_start(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(1, max(len(data) - context_length, 2), (batch_size,)).numpy()
    starts = np.minimum(starts, len(data) - context_length - 1)
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="draws a start anywhere in the data and clamps out-of-range ones to the last "
                                  "valid start (not uniform)")
def get_batch_clamped_starts(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data), (batch_size,)).clamp(max=len(data) - context_length - 1).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="non-overlapping chunks: starts are multiples of context_length only")
def get_batch_chunk_starts(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    chunks = (len(data) - 1) // context_length
    starts = (torch.randint(chunks, (batch_size,)) * context_length).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="targets not shifted: y is a second, independent random window")
def get_batch_independent_targets(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    offsets = np.arange(context_length)
    xs = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    ys = torch.randint(len(data) - context_length, (batch_size,)).numpy() + 1
    x = torch.from_numpy(data[xs[:, None] + offsets].astype(np.int64))
    y = torch.from_numpy(data[ys[:, None] + offsets].astype(np.int64))
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="copies the whole memmap into an int64 tensor before indexing")
def get_batch_copies_everything(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    everything = torch.from_numpy(np.array(data, dtype=np.int64))
    starts = torch.randint(len(everything) - context_length, (batch_size,))
    index = starts[:, None] + torch.arange(context_length + 1)
    windows = everything[index]
    return windows[:, :-1].contiguous().to(device), windows[:, 1:].contiguous().to(device)


@mutant(replaces="get_batch", why="keeps the file's dtype (uint16 → int32 via int16 view): ids ≥ 32768 turn negative")
def get_batch_int16(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int16).astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="returns x and y as (non-contiguous) slices of one (B, T + 1) tensor")
def get_batch_views(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = torch.from_numpy(data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)).to(device)
    return windows[:, :-1], windows[:, 1:]


@mutant(replaces="get_batch", why="no length check: too-short data surfaces as torch's RuntimeError, not ValueError")
def get_batch_no_length_check(data, batch_size, context_length, device):
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="set_seed", why="seeds torch only, not Python's random or numpy")
def set_seed_torch_only(seed):
    torch.manual_seed(seed)


@mutant(replaces="set_seed", why="seeds numpy's new-style Generator (default_rng) instead of the global generator")
def set_seed_default_rng(seed):
    random.seed(seed)
    np.random.default_rng(seed)
    torch.manual_seed(seed)
