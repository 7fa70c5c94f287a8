"""Mutants of solutions/data.py: each is one bug a student plausibly writes.

The bodies may use the solution module's imports (os, random, np, torch).
"""

import numpy as np

from grader.authoring.mutants import edit, mutant


edit("write_tokens_npy", within="write_tokens",
     why="saves with np.save, which writes an .npy header before the ids",
     old="array.astype(dtype).tofile(path)",
     new=('with open(path, "wb") as f:\n'
          "        np.save(f, array.astype(dtype))"))


edit("write_tokens_wraps", within="write_tokens",
     why="casts without a range check: ids that do not fit the dtype wrap around silently",
     old=("    if array.size and (array.min() < info.min or array.max() > info.max):\n"
          '        raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
          '                         f"got ids in [{array.min()}, {array.max()}]")\n'),
     new="")


edit("load_tokens_reads_file", within="load_tokens",
     why="reads the whole file into memory (np.fromfile) instead of memory-mapping it",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new="return np.fromfile(path, dtype=dtype)")


edit("load_tokens_writable", within="load_tokens",
     why="opens the memmap read-write (mode='r+'): training could modify its data",
     old='return np.memmap(path, dtype=dtype, mode="r")',
     new='return np.memmap(path, dtype=dtype, mode="r+")')


edit("get_batch_misses_last_start", within="get_batch",
     why="off by one: the last valid start is never drawn",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = torch.randint(max(num_starts - 1, 1), (batch_size,)).numpy()")


edit("get_batch_misses_first_start", within="get_batch",
     why="the first position is never a start (starts drawn from 1)",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = np.minimum(torch.randint(1, max(num_starts, 2), (batch_size,)).numpy(), num_starts - 1)")


edit("get_batch_clamped_starts", within="get_batch",
     why="draws a start anywhere in the data and clamps out-of-range ones to the last valid start (not uniform)",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = torch.randint(len(data), (batch_size,)).clamp(max=num_starts - 1).numpy()")


edit("get_batch_chunk_starts", within="get_batch",
     why="non-overlapping chunks: starts are multiples of context_length only",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = (torch.randint((len(data) - 1) // context_length, (batch_size,)) * context_length).numpy()")


edit("get_batch_independent_targets", within="get_batch",
     why="targets not shifted: y is a second, independent random window",
     old="y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))",
     new=("other = torch.randint(num_starts, (batch_size,)).numpy() + 1\n"
          "    y = torch.from_numpy(data[other[:, None] + np.arange(context_length)].astype(np.int64))"))


edit("get_batch_copies_everything", within="get_batch",
     why="copies the whole memmap into an int64 tensor before indexing",
     old="windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)",
     new=("everything = np.array(data, dtype=np.int64)\n"
          "    windows = everything[starts[:, None] + np.arange(context_length + 1)]"))


edit("get_batch_int16", within="get_batch",
     why="keeps the file's dtype (uint16 → int32 via int16 view): ids ≥ 32768 turn negative",
     old=".astype(np.int64)",
     new=".astype(np.int16).astype(np.int64)")


edit("get_batch_views", within="get_batch",
     why="returns x and y as (non-contiguous) slices of one (B, T + 1) tensor",
     edits=[("windows = data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64)",
             "windows = torch.from_numpy(data[starts[:, None] + np.arange(context_length + 1)].astype(np.int64))"),
            ("x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))",
             "x = windows[:, :-1]"),
            ("y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))",
             "y = windows[:, 1:]")])


edit("get_batch_no_length_check", within="get_batch",
     why="no length check: too-short data surfaces as torch's RuntimeError, not ValueError",
     old=("    if num_starts < 1:\n"
          '        raise ValueError(f"need at least context_length + 1 = {context_length + 1} tokens, got {len(data)}")\n'),
     new="")


edit("set_seed_torch_only", within="set_seed",
     why="seeds torch only, not Python's random or numpy",
     old=("random.seed(seed)\n"
          "    np.random.seed(seed)\n"
          "    torch.manual_seed(seed)"),
     new="torch.manual_seed(seed)")


edit("set_seed_default_rng", within="set_seed",
     why="seeds numpy's new-style Generator (default_rng) instead of the global generator",
     edits=[("np.random.seed(seed)", "np.random.default_rng(seed)"),
           (("\n"
            "    if torch.cuda.is_available():\n"
            "        torch.cuda.manual_seed_all(seed)"),
            "")])


# == from the 2026-11-22 breaking pass (written before reading the suites) ==
# ---------------------------------------------------------------- write_tokens
edit("write_tokens_astype_wraps", within="write_tokens",
     why="no range check: 70000 silently wraps to 4464 in uint16",
     old=("    if array.size and (array.min() < info.min or array.max() > info.max):\n"
          '        raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
          '                         f"got ids in [{array.min()}, {array.max()}]")\n'),
     new="")


edit("write_tokens_no_negative_check", within="write_tokens",
     why="checks only the upper bound: a negative id wraps to 65535",
     old="array.min() < info.min or array.max() > info.max",
     new="array.max() > info.max")


edit("write_tokens_rejects_max", within="write_tokens",
     why="off by one: rejects the largest valid id 65535 (>= instead of >)",
     old="array.max() > info.max",
     new="array.max() >= info.max")


edit("write_tokens_uint16_bound", within="write_tokens",
     why="hard-codes the uint16 bound: uint32 files with ids > 65535 are refused",
     old="array.max() > info.max",
     new="array.max() > 65535")


edit("write_tokens_npy_header", within="write_tokens",
     why="np.save adds a 128-byte .npy header",
     old="array.astype(dtype).tofile(path)",
     new=('with open(path, "wb") as f:\n'
          "        np.save(f, array.astype(dtype))"))


edit("write_tokens_big_endian", within="write_tokens",
     why="writes big-endian ('>u2') instead of native byte order",
     old="array.astype(dtype).tofile(path)",
     new='array.astype(np.dtype(dtype).newbyteorder(">")).tofile(path)')


edit("write_tokens_accepts_floats", within="write_tokens",
     why="float ids (1.5) are silently truncated instead of raising ValueError",
     edits=[(("    if array.size and not np.issubdtype(array.dtype, np.integer):\n"
            '        raise ValueError(f"token ids must be integers, got {array.dtype}")\n'),
            ""),
           (('raise ValueError(f"token ids must lie in [{info.min}, {info.max}] to be stored as {np.dtype(dtype)}; "\n'
            '                         f"got ids in [{array.min()}, {array.max()}]")'),
            'raise ValueError("token id out of range")')])


edit("write_tokens_appends", within="write_tokens",
     why="appends to an existing file instead of overwriting it",
     old="array.astype(dtype).tofile(path)",
     new=('with open(path, "ab") as f:\n'
          "        f.write(array.astype(dtype).tobytes())"))


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


edit("get_batch_int16_cast", within="get_batch",
     why="casts to int16: uint16 ids >= 32768 become negative",
     old=".astype(np.int64)",
     new=".astype(np.int16).astype(np.int64)")


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


edit("get_batch_noncontiguous", within="get_batch",
     why="x and y are non-contiguous column slices of one (B, T+1) tensor",
     edits=[("x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))",
             "x = torch.from_numpy(windows[:, :-1])"),
            ("y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))",
             "y = torch.from_numpy(windows[:, 1:])")])


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


edit("get_batch_swapped", within="get_batch",
     why="x and y swapped: y is the window, x the shifted one",
     old=("x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))\n"
          "    y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))"),
     new=("y = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))\n"
          "    x = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))"))


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


edit("get_batch_targets_plus_one", within="get_batch",
     why="computes the targets as x + 1 instead of reading them from the data",
     old="y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))",
     new="y = x + 1")


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


edit("b5_wt_numpy_converts", within="write_tokens",
     why="b5: lets numpy convert (np.asarray(tokens, dtype)): a numpy int64 array wraps silently",
     edits=[("array = np.asarray(tokens)",
             ("try:\n"
              "        array = np.asarray(tokens, dtype=dtype)\n"
              "    except (OverflowError, TypeError) as e:\n"
              "        raise ValueError(str(e)) from e")),
            ("not np.issubdtype(array.dtype, np.integer)",
             "not np.issubdtype(np.asarray(tokens).dtype, np.integer)")])


edit("b5_wt_python_int_only", within="write_tokens",
     why="b5: isinstance(t, int) per id: rejects a numpy integer array",
     old="if array.size and not np.issubdtype(array.dtype, np.integer):",
     new="if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):")


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


edit("b5_gb_sorted_starts", within="get_batch",
     why="b5: sorts the starts (for memmap locality): row i is not uniform, row 0 is the minimum",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = torch.randint(num_starts, (batch_size,)).sort().values.numpy()")


edit("b5_gb_via_int32", within="get_batch",
     why="b5: int64 through int32 (x.int().long() style): fine for uint16, wraps uint32 ids ≥ 2**31",
     old=".astype(np.int64)",
     new=".astype(np.int32).astype(np.int64)")


edit("b5_gb_consecutive_starts", within="get_batch",
     why="b5: one random offset, consecutive starts (s0 + i) mod n: each row uniform, rows not independent",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new="starts = (int(torch.randint(num_starts, ())) + np.arange(batch_size)) % num_starts")


edit("b5_gb_sample", within="get_batch",
     why="b5: random.sample(range(n), B): distinct starts, falls back to choices when B > n",
     old="starts = torch.randint(num_starts, (batch_size,)).numpy()",
     new=("if batch_size <= num_starts:\n"
          "        starts = np.array(random.sample(range(num_starts), batch_size))\n"
          "    else:\n"
          "        starts = np.array(random.choices(range(num_starts), k=batch_size))"))


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
