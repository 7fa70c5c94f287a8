"""Mutants of solutions/data.py: each is one bug a student plausibly writes.

The bodies may use the solution module's imports (os, random, np, torch).
"""

import random

import numpy as np
import torch

from grader.mutants import edit, mutant


@mutant(replaces="write_tokens", why="saves with np.save, which writes an .npy header before the ids", against="245345ec4af3")
def write_tokens_npy(tokens, path, dtype=np.uint16):
    with open(path, "wb") as f:
        np.save(f, np.asarray(tokens).astype(dtype))


@mutant(replaces="write_tokens", why="casts without a range check: ids that do not fit the dtype wrap around silently", against="245345ec4af3")
def write_tokens_wraps(tokens, path, dtype=np.uint16):
    np.asarray(tokens).astype(dtype).tofile(path)


edit("load_tokens_reads_file", within="load_tokens",
     why="reads the whole file into memory (np.fromfile) instead of memory-mapping it",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new="return np.fromfile(path, dtype=dtype)")


edit("load_tokens_writable", within="load_tokens",
     why="opens the memmap read-write (mode='r+'): training could modify its data",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new='return np.memmap(path, dtype=dtype, mode="r+")')


@mutant(replaces="get_batch", why="off by one: the last valid start is never drawn", against="ffd73a790d93")
def get_batch_misses_last_start(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(max(len(data) - context_length - 1, 1), (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="the first position is never a start (starts drawn from 1)", against="ffd73a790d93")
def get_batch_misses_first_start(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(1, max(len(data) - context_length, 2), (batch_size,)).numpy()
    starts = np.minimum(starts, len(data) - context_length - 1)
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="draws a start anywhere in the data and clamps out-of-range ones to the last "
                                  "valid start (not uniform)", against="ffd73a790d93")
def get_batch_clamped_starts(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data), (batch_size,)).clamp(max=len(data) - context_length - 1).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="non-overlapping chunks: starts are multiples of context_length only", against="ffd73a790d93")
def get_batch_chunk_starts(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    chunks = (len(data) - 1) // context_length
    starts = (torch.randint(chunks, (batch_size,)) * context_length).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="targets not shifted: y is a second, independent random window", against="ffd73a790d93")
def get_batch_independent_targets(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    offsets = np.arange(context_length)
    xs = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    ys = torch.randint(len(data) - context_length, (batch_size,)).numpy() + 1
    x = torch.from_numpy(data[xs[:, None] + offsets].astype(np.int64))
    y = torch.from_numpy(data[ys[:, None] + offsets].astype(np.int64))
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="copies the whole memmap into an int64 tensor before indexing", against="ffd73a790d93")
def get_batch_copies_everything(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    everything = torch.from_numpy(np.array(data, dtype=np.int64))
    starts = torch.randint(len(everything) - context_length, (batch_size,))
    index = starts[:, None] + torch.arange(context_length + 1)
    windows = everything[index]
    return windows[:, :-1].contiguous().to(device), windows[:, 1:].contiguous().to(device)


@mutant(replaces="get_batch", why="keeps the file's dtype (uint16 → int32 via int16 view): ids ≥ 32768 turn negative", against="ffd73a790d93")
def get_batch_int16(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int16).astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="get_batch", why="returns x and y as (non-contiguous) slices of one (B, T + 1) tensor", against="ffd73a790d93")
def get_batch_views(data, batch_size, context_length, device):
    if len(data) < context_length + 1:
        raise ValueError("data too short")
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = torch.from_numpy(data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)).to(device)
    return windows[:, :-1], windows[:, 1:]


@mutant(replaces="get_batch", why="no length check: too-short data surfaces as torch's RuntimeError, not ValueError", against="ffd73a790d93")
def get_batch_no_length_check(data, batch_size, context_length, device):
    starts = torch.randint(len(data) - context_length, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    return x.to(device), y.to(device)


@mutant(replaces="set_seed", why="seeds torch only, not Python's random or numpy", against="362c6cf3202c")
def set_seed_torch_only(seed):
    torch.manual_seed(seed)


edit("set_seed_default_rng", within="set_seed",
     why="seeds numpy's new-style Generator (default_rng) instead of the global generator",
     edits=[("np.random.seed(seed)", "np.random.default_rng(seed)"),
           (("\n"
            "    if torch.cuda.is_available():\n"
            "        torch.cuda.manual_seed_all(seed)"),
            "")])


# == from the 2026-11-22 breaking pass (written before reading the suites) ==
# ---------------------------------------------------------------- write_tokens
@mutant(replaces="write_tokens", why="no range check: 70000 silently wraps to 4464 in uint16", against="245345ec4af3")
def write_tokens_astype_wraps(tokens, path, dtype=np.uint16):
    np.asarray(tokens).astype(dtype).tofile(path)


@mutant(replaces="write_tokens", why="checks only the upper bound: a negative id wraps to 65535", against="245345ec4af3")
def write_tokens_no_negative_check(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    if array.size and array.max() > np.iinfo(dtype).max:
        raise ValueError("token id too large")
    array.astype(dtype).tofile(path)


@mutant(replaces="write_tokens", why="off by one: rejects the largest valid id 65535 (>= instead of >)", against="245345ec4af3")
def write_tokens_rejects_max(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    info = np.iinfo(dtype)
    if array.size and (array.min() < 0 or array.max() >= info.max):
        raise ValueError("token id out of range")
    array.astype(dtype).tofile(path)


@mutant(replaces="write_tokens", why="hard-codes the uint16 bound: uint32 files with ids > 65535 are refused", against="245345ec4af3")
def write_tokens_uint16_bound(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    if array.size and (array.min() < 0 or array.max() > 65535):
        raise ValueError("token id out of range")
    array.astype(dtype).tofile(path)


@mutant(replaces="write_tokens", why="np.save adds a 128-byte .npy header", against="245345ec4af3")
def write_tokens_npy_header(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise ValueError("token id out of range")
    with open(path, "wb") as f:
        np.save(f, array.astype(dtype))


@mutant(replaces="write_tokens", why="writes big-endian ('>u2') instead of native byte order", against="245345ec4af3")
def write_tokens_big_endian(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise ValueError("token id out of range")
    array.astype(np.dtype(dtype).newbyteorder(">")).tofile(path)


edit("write_tokens_accepts_floats", within="write_tokens",
     why="float ids (1.5) are silently truncated instead of raising ValueError",
     edits=[(("    if array.size and not np.issubdtype(array.dtype, np.integer):\n"
            '        raise ValueError(f"token ids must be integers, got {array.dtype}")\n'),
            ""),
           (('raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
            '                         f"got ids in [{array.min()}, {array.max()}]")'),
            'raise ValueError("token id out of range")')])


@mutant(replaces="write_tokens", why="appends to an existing file instead of overwriting it", against="245345ec4af3")
def write_tokens_appends(tokens, path, dtype=np.uint16):
    array = np.asarray(tokens)
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise ValueError("token id out of range")
    with open(path, "ab") as f:
        f.write(array.astype(dtype).tobytes())


# ---------------------------------------------------------------- load_tokens
edit("load_tokens_mode_r_plus", within="load_tokens",
     why="opens the map writable (mode='r+'): training could modify its data",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new='return np.memmap(path, dtype=dtype, mode="r+")')


edit("load_tokens_copy_on_write", within="load_tokens",
     why="copy-on-write map (mode='c') is writeable, not read-only",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new='return np.memmap(path, dtype=dtype, mode="c")')


edit("load_tokens_fromfile", within="load_tokens",
     why="reads the whole file with np.fromfile instead of mapping it",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new="return np.fromfile(path, dtype=dtype)")


edit("load_tokens_ignores_dtype", within="load_tokens",
     why="ignores the dtype argument (always uint16)",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new='return np.memmap(path, dtype=np.uint16, mode="r")')


edit("load_tokens_empty_ok", within="load_tokens",
     why="an empty file returns an empty array instead of raising ValueError",
     old='    return np.memmap(path, dtype=dtype, mode="r")',
     new=("    if os.path.getsize(path) == 0:\n"
          "        return np.zeros(0, dtype=dtype)\n"
          '    return np.memmap(path, dtype=dtype, mode="r")'))


# ---------------------------------------------------------------- get_batch
edit("get_batch_randint_minus_one", within="get_batch",
     why="off by one: never draws the last valid start len(data) - T - 1",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("starts = torch.randint(num_starts, (batch_size,)).numpy()",
            "starts = torch.randint(max(num_starts - 1, 1), (batch_size,)).numpy()"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_randint_from_one", within="get_batch",
     why="never draws start 0 (randint(1, n))",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("starts = torch.randint(num_starts, (batch_size,)).numpy()",
            "starts = torch.randint(min(1, num_starts - 1), num_starts, (batch_size,)).numpy()"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_modulo_bias", within="get_batch",
     why="starts = randint(len(data)) % num_starts: the first starts twice as likely",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("starts = torch.randint(num_starts, (batch_size,)).numpy()",
            "starts = (torch.randint(len(data), (batch_size,)) % num_starts).numpy()"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_without_replacement", within="get_batch",
     why="starts without replacement (randperm): batch larger than the number of starts is short",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("starts = torch.randint(num_starts, (batch_size,)).numpy()",
            "starts = torch.randperm(num_starts)[:batch_size].numpy()"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_copies_all", within="get_batch",
     why="converts the whole memmap to int64 first (data.astype): 4x the file in RAM",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            ('raise ValueError("too short")\n'
            "    whole = data.astype(np.int64)")),
           ("windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)",
            "windows = whole[starts[:, None] + np.arange(context_length + 1)]"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


@mutant(replaces="get_batch", why="casts to int16: uint16 ids >= 32768 become negative", against="ffd73a790d93")
def get_batch_int16_cast(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    num_starts = len(data) - context_length
    if num_starts < 1:
        raise ValueError("too short")
    starts = torch.randint(num_starts, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int16)
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1])).long()
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:])).long()
    return x.to(device), y.to(device)


edit("get_batch_int32", within="get_batch",
     why="returns int32 tensors, not int64",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)",
            "windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int32)"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


@mutant(replaces="get_batch", why="x and y are non-contiguous column slices of one (B, T+1) tensor", against="ffd73a790d93")
def get_batch_noncontiguous(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    num_starts = len(data) - context_length
    if num_starts < 1:
        raise ValueError("too short")
    starts = torch.randint(num_starts, (batch_size,)).numpy()
    windows = torch.from_numpy(data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64))
    return windows[:, :-1].to(device), windows[:, 1:].to(device)


edit("get_batch_ignores_device", within="get_batch",
     why="ignores `device` except for CUDA: device='meta' still gives CPU tensors",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           (("device = torch.device(device)\n"
            '    if device.type == "cuda":'),
            'if str(device).startswith("cuda"):'),
           ("return x.to(device), y.to(device)", "return x, y")])


edit("get_batch_string_device_only", within="get_batch",
     why="device.startswith(...) breaks on a torch.device",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           (("device = torch.device(device)\n"
            '    if device.type == "cuda":'),
            'if device.startswith("cuda"):')])


edit("get_batch_no_size_check", within="get_batch",
     why="no size check: batch_size=0 returns empty tensors instead of ValueError",
     edits=[(("    if batch_size < 1 or context_length < 1:\n"
            '        raise ValueError(f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}")\n'),
            ""),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_exact_length_refused", within="get_batch",
     why="off by one: data of exactly T + 1 tokens is refused",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           (("if num_starts < 1:\n"
            '        raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")'),
            ("if num_starts < 2:\n"
            '        raise ValueError("too short")')),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_skips_length_check", within="get_batch",
     why="no length check: too-short data raises torch's RuntimeError, not ValueError",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           (("    if num_starts < 1:\n"
            '        raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")\n'),
            ""),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


edit("get_batch_unseeded_generator", within="get_batch",
     why="draws starts from an unseeded np.random.default_rng(): set_seed cannot reproduce batches",
     edits=[('f"batch_size and context_length must be ≥ 1, got {batch_size} and {context_length}',
            '"bad sizes'),
           ('raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")',
            'raise ValueError("too short")'),
           ("starts = torch.randint(num_starts, (batch_size,)).numpy()",
            "starts = np.random.default_rng().integers(0, num_starts, batch_size)"),
           (("    device = torch.device(device)\n"
            '    if device.type == "cuda":\n'
            "        return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)\n"),
            "")])


@mutant(replaces="get_batch", why="x and y swapped: y is the window, x the shifted one", against="ffd73a790d93")
def get_batch_swapped(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    num_starts = len(data) - context_length
    if num_starts < 1:
        raise ValueError("too short")
    starts = torch.randint(num_starts, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    y = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    x = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x.to(device), y.to(device)


# ---------------------------------------------------------------- set_seed
edit("set_seed_no_numpy", within="set_seed",
     why="forgets numpy's global generator",
     old="    np.random.seed(seed)\n",
     new="")


edit("set_seed_no_python", within="set_seed",
     why="forgets Python's random",
     old="    random.seed(seed)\n",
     new="")


edit("set_seed_new_generator", within="set_seed",
     why="seeds a new numpy Generator (default_rng) that nothing uses, not the global one",
     old="np.random.seed(seed)",
     new="np.random.default_rng(seed)")


edit("set_seed_keeps_cached_gaussian", within="set_seed",
     why="resets numpy's key and position but keeps a cached gaussian from before",
     old="np.random.seed(seed)",
     new=("old = np.random.get_state()\n"
          "    fresh = np.random.RandomState(seed).get_state()\n"
          "    np.random.set_state((fresh[0], fresh[1], fresh[2], old[3], old[4]))"))


edit("set_seed_no_torch", within="set_seed",
     why="forgets torch's generator",
     old="    torch.manual_seed(seed)\n",
     new="")


@mutant(replaces="get_batch", why="computes the targets as x + 1 instead of reading them from the data", against="ffd73a790d93")
def get_batch_targets_plus_one(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    num_starts = len(data) - context_length
    if num_starts < 1:
        raise ValueError("too short")
    starts = torch.randint(num_starts, (batch_size,)).numpy()
    x = torch.from_numpy(data[starts[:, None] + np.arange(context_length)].astype(np.int64))
    return x.to(device), (x + 1).to(device)


# ---- second breaking pass (BREAK5.md, session 5) ----


edit("b5_wt_empty_raises", within="write_tokens",
     why="b5: checks the dtype of an empty list (float64) without a size guard: [] raises",
     edits=[(("if array.size and not np.issubdtype(array.dtype, np.integer):\n"
            '        raise ValueError(f"token ids must be integers, got {array.dtype}")'),
            ("if not np.issubdtype(array.dtype, np.integer):\n"
            '        raise ValueError("token ids must be integers")')),
           (('raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
            '                         f"got ids in [{array.min()}, {array.max()}]")'),
            'raise ValueError("out of range")')])


@mutant(replaces="write_tokens", why="b5: lets numpy convert (np.asarray(tokens, dtype)): a numpy int64 array wraps silently", against="245345ec4af3")
def b5_wt_numpy_converts(tokens, path, dtype=np.uint16):
    try:
        array = np.asarray(tokens, dtype=dtype)
    except (OverflowError, TypeError) as e:
        raise ValueError(str(e)) from e
    if isinstance(tokens, (list, tuple)) and any(isinstance(t, float) for t in tokens):
        raise ValueError("token ids must be integers")
    array.tofile(path)


@mutant(replaces="write_tokens", why="b5: isinstance(t, int) per id: rejects a numpy integer array", against="245345ec4af3")
def b5_wt_python_int_only(tokens, path, dtype=np.uint16):
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ValueError("token ids must be integers")
    info = np.iinfo(dtype)
    if any(t < info.min or t > info.max for t in tokens):
        raise ValueError("out of range")
    np.asarray(tokens).astype(dtype).tofile(path)


edit("b5_wt_checks_source_range", within="write_tokens",
     why="b5: numpy array input checked against its own dtype's range (int64), not the target's",
     edits=[('raise ValueError(f"token ids must be integers, got {array.dtype}")',
            'raise ValueError("token ids must be integers")'),
           ("info = np.iinfo(dtype)",
            ("if isinstance(tokens, np.ndarray):\n"
            "        info = np.iinfo(array.dtype)\n"
            "    else:\n"
            "        info = np.iinfo(dtype)")),
           (('raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
            '                         f"got ids in [{array.min()}, {array.max()}]")'),
            'raise ValueError("out of range")')])


@mutant(replaces="get_batch", why="b5: sorts the starts (for memmap locality): row i is not uniform, row 0 is the minimum", against="ffd73a790d93")
def b5_gb_sorted_starts(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    n = len(data) - context_length
    if n < 1:
        raise ValueError("too short")
    starts = torch.randint(n, (batch_size,)).sort().values.numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x.to(torch.device(device)), y.to(torch.device(device))


@mutant(replaces="get_batch", why="b5: int64 through int32 (x.int().long() style): fine for uint16, wraps uint32 ids ≥ 2**31", against="ffd73a790d93")
def b5_gb_via_int32(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    n = len(data) - context_length
    if n < 1:
        raise ValueError("too short")
    starts = torch.randint(n, (batch_size,)).numpy()
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int32).astype(np.int64)
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x.to(torch.device(device)), y.to(torch.device(device))


@mutant(replaces="get_batch", why="b5: one random offset, consecutive starts (s0 + i) mod n: each row uniform, rows not independent", against="ffd73a790d93")
def b5_gb_consecutive_starts(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    n = len(data) - context_length
    if n < 1:
        raise ValueError("too short")
    s0 = int(torch.randint(n, ()))
    starts = (s0 + np.arange(batch_size)) % n
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x.to(torch.device(device)), y.to(torch.device(device))


@mutant(replaces="get_batch", why="b5: random.sample(range(n), B): distinct starts, falls back to choices when B > n", against="ffd73a790d93")
def b5_gb_sample(data, batch_size, context_length, device):
    if batch_size < 1 or context_length < 1:
        raise ValueError("bad sizes")
    n = len(data) - context_length
    if n < 1:
        raise ValueError("too short")
    if batch_size <= n:
        starts = np.array(random.sample(range(n), batch_size))
    else:
        starts = np.array(random.choices(range(n), k=batch_size))
    windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)
    x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
    return x.to(torch.device(device)), y.to(torch.device(device))


# -- GPU-only: bugs on the CUDA path, which only the GPU tests can see ----------------------------

edit("pin_only_cuda_string", within="get_batch", gpu=True,
     why="pins only when device == 'cuda' as a string: 'cuda:0' and torch.device('cuda') get pageable, blocking copies",
     old='    device = torch.device(device)\n    if device.type == "cuda":',
     new='    if device == "cuda":')


# -- every default and every case the docstrings name (issue 30) --------------------------------------

@mutant(replaces="write_tokens", why="i30: dtype defaults to uint32 (room for any vocabulary), not uint16", against="245345ec4af3")
def i30_write_default_uint32(tokens, path, dtype=np.uint32):
    array = np.asarray(tokens)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError("token ids must be integers")
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise ValueError("token ids out of range")
    array.astype(dtype).tofile(path)


@mutant(replaces="load_tokens", why="i30: dtype defaults to uint32, not uint16", against="da4577c26cdc")
def i30_load_default_uint32(path, dtype=np.uint32):
    return np.memmap(path, dtype=dtype, mode="r")
