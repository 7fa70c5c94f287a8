"""Public tests for `data`: expected values are computed here from the inputs (numpy, torch).

Batches are drawn from *arange* token files (the token at position i is offset + i), so each
row of x names its own start position (x[i, 0] − offset) and the target check y = x + 1 is exact.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from grader.testing import figures
from grader.testing.expect import assert_equal, assert_tensor
from grader.testing.student import NotAttempted, ProbeError

# -- token files ---------------------------------------------------------------------------------


def _raw(tokens, dtype: str) -> torch.Tensor:
    """The bytes a raw token file must hold: the ids as `dtype`, native byte order, no header."""
    raw = np.asarray(tokens, dtype=np.int64).astype(np.dtype(dtype)).tobytes()
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone() if raw else torch.zeros(0, dtype=torch.uint8)


@pytest.mark.points(1)
def test_write_tokens_raw_binary(student):
    """write_tokens writes the ids as raw uint16 (the default)/uint32 (no header) and raises ValueError for ids that do not fit"""
    rng = np.random.default_rng(0)
    cases = [([1, 2, 258], "uint16"), ([0, 65535, 50256, 32768, 7], "uint16"),
             (rng.integers(0, 50257, 1000).tolist(), "uint16"), ([70000, 0, 100277, 4294967295], "uint32")]
    for tokens, dtype in cases:
        got = student.probe("data.write_tokens", tokens=tokens, dtype=dtype)
        assert_tensor(got, like=_raw(tokens, dtype),
                      what=f"bytes of the file written for {len(tokens)} ids as {dtype} (first ids {tokens[:3]})")
    # no dtype given: the default, uint16
    got = student.probe("data.write_tokens", tokens=[1, 2, 258, 65535], dtype=None)
    assert_tensor(got, like=_raw([1, 2, 258, 65535], "uint16"),
                  what="bytes of the file written for [1, 2, 258, 65535] with no dtype given (the default: uint16)")
    got = student.probe("data.write_tokens", tokens=[5, 6], dtype="uint16", existing=100)
    assert_tensor(got, like=_raw([5, 6], "uint16"),
                  what="bytes of the file after writing [5, 6] as uint16 over an existing 100-byte file (overwrite it)")
    # no ids: an empty file (an empty list is float64 to np.asarray, yet has no non-integer id)
    got = student.probe("data.write_tokens", tokens=[], dtype="uint16")
    assert_tensor(got, like=_raw([], "uint16"), what="bytes of the file written for no ids ([]): an empty file")
    # a numpy int64 array is a valid input too: same bytes, and the range check still applies (a bare
    # .astype(dtype) wraps silently; the int64 array's own range is not the file's)
    tokens = [0, 65535, 40000, 3]
    got = student.probe("data.write_numpy_tokens", tokens=tokens, dtype="uint16")
    assert_tensor(got, like=_raw(tokens, "uint16"), what="bytes of the file written for np.array([0, 65535, 40000, 3]) as uint16")
    for tokens, dtype in [([1, 65536, 2], "uint16"), ([70000], "uint16"), ([3, -1], "uint16"), ([2**32], "uint32"),
                          ([-5, 1], "uint32"), ([1.5, 2.0], "uint16")]:
        student.raises("data.write_tokens", "ValueError", tokens=tokens, dtype=dtype)
    for tokens in ([1, 70000], [-1, 2]):
        try:
            student.raises("data.write_numpy_tokens", "ValueError", tokens=tokens, dtype="uint16")
        except AssertionError as exc:
            raise AssertionError(f"write_tokens(np.array({tokens}) (int64), dtype=uint16): {exc}") from None


@pytest.mark.points(1)
def test_load_tokens_is_read_only_memmap(student):
    """load_tokens maps a raw file as a read-only np.memmap of the given dtype (uint16 by default), with every id intact"""
    rng = np.random.default_rng(1)
    for tokens, dtype, default in [(rng.integers(0, 65536, 777).tolist(), "uint16", False),
                                   ([70000, 1, 100276], "uint32", False), ([40000, 7, 65535, 0], "uint16", True)]:
        got = student.probe("data.load_tokens", tokens=tokens, dtype=dtype, default=default)
        what = f"load_tokens of a raw {dtype} file of {len(tokens)} ids" + (" with no dtype given (the default: uint16)"
                                                                             if default else "")
        assert_equal(got["is_memmap"], True, f"{what}: is it an np.memmap (got a {got['type']})")
        assert_equal(got["dtype"], dtype, f"{what}: dtype")
        assert_equal(got["shape"], [len(tokens)], f"{what}: shape")
        assert_tensor(got["values"], like=torch.tensor(tokens, dtype=torch.int64), what=f"{what}: the ids")
        assert_equal(got["writeable"], False, f"{what}: writeable (open it with mode='r')")
    for nbytes, dtype, why in [(0, "uint16", "an empty file"), (7, "uint16", "a 7-byte file (not a whole number of uint16)"),
                               (6, "uint32", "a 6-byte file read as uint32")]:
        try:
            student.raises("data.load_tokens", "ValueError", tokens=[], dtype=dtype) if nbytes == 0 else \
                student.raises("data.load_raw", "ValueError", nbytes=nbytes, dtype=dtype)
        except AssertionError as exc:
            raise AssertionError(f"load_tokens of {why}: {exc}") from None


# -- get_batch -----------------------------------------------------------------------------------

def _check_batches(got, *, length, context_length, batch_size, calls, offset, device="cpu") -> torch.Tensor:
    """Type/dtype/device/shape of every batch, x rows are windows of the arange file, y = x + 1.
    Returns the start positions, shape [calls, batch_size]."""
    what = f"get_batch(data of {length} tokens, batch_size={batch_size}, context_length={context_length})"
    for seen in got["seen"]:
        for name in ("x", "y"):
            info = seen[name]
            if info["type"] != "Tensor":
                raise AssertionError(f"{what}: {name} should be a torch.Tensor, got {info['type']}")
            assert_equal(info["dtype"], "torch.int64", f"{what}: dtype of {name}")
            assert_equal(info["device"], device, f"{what}: device of {name}")
            assert_equal(info["contiguous"], True, f"{what}: {name}.is_contiguous()")
    x, y = got["x"], got["y"]
    shape = (calls, batch_size, context_length)
    assert_equal(tuple(x.shape), shape, f"{what}: shape of x (stacked over {calls} calls)")
    assert_equal(tuple(y.shape), shape, f"{what}: shape of y (stacked over {calls} calls)")
    starts = x[..., 0] - offset
    bad = (starts < 0) | (starts > length - context_length - 1)
    if bad.any():
        raise AssertionError(f"{what}: a row starts at position {int(starts[bad][0])}, outside the valid starts "
                             f"0..{length - context_length - 1} (x[i, 0] − {offset} is the start in this arange file)")
    assert_tensor(x, like=starts[..., None] + offset + torch.arange(context_length),
                  what=f"{what}: x rows are consecutive windows data[s : s + {context_length}]")
    assert_tensor(y, like=x + 1, what=f"{what}: y = x shifted by one token (y[i, j] = data[s_i + j + 1])")
    return starts


@pytest.mark.points(2)
def test_get_batch_targets_are_inputs_shifted(student):
    """get_batch returns int64 (B, T) windows x of the memmap and targets y = x shifted by one, ids ≥ 32768 intact, on `device`"""
    for length, context_length, batch_size, offset in [(1000, 32, 16, 40000), (300, 7, 5, 65000 - 300)]:
        got = student.probe("data.batches", length=length, context_length=context_length, batch_size=batch_size,
                            calls=3, seed=0, offset=offset)
        _check_batches(got, length=length, context_length=context_length, batch_size=batch_size, calls=3,
                       offset=offset)
    # `device` is honoured whatever it is: the meta device (shapes and dtypes, no data) works on
    # every machine, and a torch.device is as good as a string.
    devices = ["meta", "torch.device:meta", "torch.device:cpu"]
    seen = student.probe("data.batch_devices", devices=devices, batch_size=3, context_length=4)
    for spec, info in zip(devices, seen):
        arg = f"torch.device({spec.split(':', 1)[1]!r})" if spec.startswith("torch.device:") else repr(spec)
        for name in ("x", "y"):
            what = f"get_batch(data, 3, 4, device={arg}): {name}"
            assert_equal(info[name]["type"], "Tensor", f"{what}: type")
            assert_equal(info[name]["device"], spec.rsplit(":", 1)[-1], f"{what}: device")
            assert_equal(info[name]["dtype"], "torch.int64", f"{what}: dtype")
            assert_equal(info[name]["shape"], [3, 4], f"{what}: shape")


# Uniformity: data of 40 tokens, context 8, so 32 valid starts (0..31); 50 calls × batch 64 = 3200
# draws, 100 expected per start.
#  * Coverage: every start, the first (0) and the last (31) included, must appear.  For a uniform
#    sampler P(a given start never appears) = (31/32)^3200 < 1e-44, so over 32 starts < 1e-42.
#  * Chi-square goodness of fit, 31 degrees of freedom, fail if p < 1e-6: the false-failure rate
#    of a correct sampler is 1e-6 (the chi-square approximation is accurate with 100 per cell).
#  Total false-failure probability ≈ 1e-6 per run (and the probe seeds the generators, so a
#  given implementation gets the same verdict every run).  Off-by-one ranges miss the first or
#  last start; clamping out-of-range starts to the last one piles up 20% of draws on it
#  (chi-square ≈ 2e4); non-overlapping chunks cover only every 8th start.
UNIFORM = {"length": 40, "context_length": 8, "batch_size": 64, "calls": 50}
P_VALUE_FLOOR = 1e-6


def check_uniform_starts(student, *, seed: int, offset: int, **case) -> None:
    got = student.probe("data.batches", seed=seed, offset=offset, **case)
    got_starts = _check_batches(got, offset=offset, **case)
    starts = got_starts.flatten()
    num_starts = case["length"] - case["context_length"]
    counts = torch.bincount(starts, minlength=num_starts).to(torch.float64)
    what = (f"start positions of {starts.numel()} rows from data of {case['length']} tokens with "
            f"context_length={case['context_length']} (valid starts 0..{num_starts - 1})")
    missing = [i for i in range(num_starts) if counts[i] == 0]
    attach_start_counts(counts, starts.numel(), what)
    if missing:
        raise AssertionError(f"{what}: start(s) {missing[:8]} never drawn; every valid start, the first and the last "
                             "included, must be possible")
    check_rows_independent(got_starts, what)
    expected = starts.numel() / num_starts
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    dof = num_starts - 1
    p_value = float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                            torch.tensor(chi2 / 2, dtype=torch.float64)))
    if p_value < P_VALUE_FLOOR:
        worst = int((counts - expected).abs().argmax())
        raise AssertionError(f"{what}: not uniform (chi-square {chi2:.1f} with {dof} degrees of freedom, "
                             f"p = {p_value:.2g} < {P_VALUE_FLOOR:g}); start {worst} drawn {int(counts[worst])} times, "
                             f"expected about {expected:.0f}")


def check_rows_independent(starts: torch.Tensor, what: str) -> None:
    """Rows of one batch are drawn independently: next to each other, a row starts before or after
    its neighbour about equally often.  Sorted starts (for memmap locality) or consecutive starts
    from one random offset have uniform counts but (almost) no descending neighbours.
    `starts`: [calls, batch_size].  For independent uniform starts over n ≥ 17 positions each order has
    probability (1 − 1/n)/2 ≥ 0.47.  The neighbour pairs split into two sets of disjoint (so
    independent) pairs, ≥ 1550 each in the uniformity tests; a total under a quarter needs one set
    under a quarter: probability < 2·exp(−2·1550·0.22²) < 1e-60 (Hoeffding)."""
    steps = starts[:, 1:] - starts[:, :-1]
    pairs = steps.numel()
    if pairs == 0:
        return
    down, up = int((steps < 0).sum()), int((steps > 0).sum())
    if min(down, up) < pairs / 4:
        raise AssertionError(f"{what}: rows of a batch are not drawn independently: of {pairs} neighbouring rows "
                             f"{up} start after the previous row and {down} before it (about half each expected; "
                             "do not sort the starts or derive them from one another)")


def attach_start_counts(counts: torch.Tensor, draws: int, what: str) -> None:
    """The feedback page's picture: how often each valid start was drawn, against the uniform
    expectation (draws / starts) and its ±3σ band (binomial), from the probe's batches."""
    n = counts.numel()
    expected = draws / n
    sigma = (draws * (1 / n) * (1 - 1 / n)) ** 0.5
    starts = list(range(n))
    never = [i for i in starts if counts[i] == 0]
    figures.attach(figures.figure(
        "get_batch: how often each start position was drawn",
        [figures.series("your draws", counts.tolist(), x=starts, style="bar"),
         figures.series("uniform expectation", [expected] * n, x=starts, style="line"),
         figures.series("expectation ± 3σ", [expected + 3 * sigma] * n, x=starts, style="dashed"),
         figures.series("", [max(expected - 3 * sigma, 0.0)] * n, x=starts, style="dashed")],
        x_label="start position", y_label="rows starting there",
        marks=[figures.mark(i, 0, f"start {i} never drawn") for i in never], caption=what))


@pytest.mark.points(2)
def test_get_batch_starts_uniform(student):
    """get_batch draws every valid start, the first and the last included, uniformly (chi-square test, false-failure rate 1e-6)"""
    check_uniform_starts(student, seed=0, offset=100, **UNIFORM)


@pytest.mark.points(1)
def test_get_batch_too_short(student):
    """get_batch needs context_length + 1 tokens (exactly that many: start 0 only; fewer: ValueError) and batch_size, context_length ≥ 1"""
    got = student.probe("data.short_data", length=9, context_length=8, batch_size=3)
    assert_tensor(got["x"], like=torch.arange(8).expand(3, 8), what="get_batch(data of 9 tokens, 3, 8): x (one valid start: 0)")
    assert_tensor(got["y"], like=torch.arange(1, 9).expand(3, 8), what="get_batch(data of 9 tokens, 3, 8): y")
    for length in (8, 3, 0):
        student.raises("data.short_data", "ValueError", length=length, context_length=8)
    for batch_size, context_length in [(0, 4), (-1, 4), (2, 0), (2, -3)]:
        try:
            student.raises("data.short_data", "ValueError", length=20, context_length=context_length,
                           batch_size=batch_size)
        except AssertionError as exc:
            raise AssertionError(f"get_batch(data of 20 tokens, batch_size={batch_size}, "
                                 f"context_length={context_length}): {exc}") from None


# Memory: a sparse 5 GiB token file (2.7e9 uint16 tokens; no disk used) is loaded with
# load_tokens and batched 10 times (batch 4, context 64) by the probe, in the process that runs the
# code under test; the grader measures that process's peak memory growth during the call from the
# outside (student.measure: the sandbox's cgroup peak or /proc of the sandbox process; in-process,
# VmHWM or grader.boundary.peak).  It must stay under MEMORY_BOUND_BYTES = 64 MiB.  A correct get_batch touches 40 windows of
# 130 bytes; with the kernel's read-around and fault-around each costs at most ~64 KiB of mapped file
# pages, about 2.5 MiB in all (measured: 2.5 MiB), plus first-call allocations of numpy and torch (a
# few MiB; the probe warms them up before the file exists).  Reading or copying the file needs 5 GiB
# or more (an int64 copy 20 GiB): while the student's code runs the probe caps its anonymous memory
# 1 GiB above its baseline, so a copy fails at once with MemoryError.  Inside a sandbox whose rlimits
# forbid a 5 GiB file or mapping (RLIMIT_FSIZE, RLIMIT_AS), the probe uses the largest file they allow;
# it must still be at least MIN_FILE_BYTES = 255 MiB, four times the bound, so that a copy of it
# (≥ 255 MiB, 1 GiB as int64) still fails.
MEMORY_CASE = {"gigabytes": 5, "batch_size": 4, "context_length": 64, "calls": 10}
MEMORY_BOUND_BYTES = 64 << 20
MIN_FILE_BYTES = 255 << 20


@pytest.mark.points(2)
def test_get_batch_memory_bounded(student):
    """batching from a 5 GiB memory-mapped token file keeps the process's peak memory growth under 64 MiB"""
    try:
        got, mem = student.measure("data.batch_memory_here", **MEMORY_CASE)
    except NotAttempted:
        raise
    except ProbeError as exc:
        raise AssertionError(f"batching from a {MEMORY_CASE['gigabytes']} GiB memmap failed: {exc.detail} "
                             "(load_tokens must map the file read-only, get_batch must read only the batch's "
                             "tokens)") from None
    size = got["file_bytes"]
    if size < MIN_FILE_BYTES:
        raise AssertionError(f"the grader's limits ({got['limited_by']}) leave room for a token file of only "
                             f"{size >> 20} MiB, less than the {MIN_FILE_BYTES >> 20} MiB this test needs: a grader "
                             "configuration problem, not your code; tell the course staff")
    assert_equal(got["tokens"], size // 2, f"len(load_tokens(a {size / 2**30:.2f} GiB uint16 file))")
    shape = str((MEMORY_CASE["batch_size"], MEMORY_CASE["context_length"]))
    assert_equal(got["shapes"], [[shape, shape, "torch.int64", "torch.int64"]],
                 "shapes and dtypes of (x, y) from the large file")
    growth = mem["peak_growth_bytes"]
    if growth < 0:
        raise AssertionError(f"the grader could not measure memory here ({mem['method']}): a grader configuration "
                             "problem, not your code; tell the course staff")
    assert growth <= MEMORY_BOUND_BYTES, (
        f"batching from a {size / 2**30:.2f} GiB token file grew peak memory by {growth / 2**20:.0f} MiB "
        f"(bound {MEMORY_BOUND_BYTES >> 20} MiB, measured by {mem['method']}): get_batch must read only the "
        "tokens of the batch, never the whole memmap")


@pytest.mark.points(1)
def test_set_seed(student):
    """set_seed seeds Python's random, numpy and torch, so get_batch is reproducible"""
    for seed in (0, 1234):
        got = student.probe("data.seeded_draws", seed=seed)
        state = (random.getstate(), np.random.get_state(), torch.get_rng_state())
        try:
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            want = {"python": random.random(), "numpy": torch.from_numpy(np.random.rand(3)), "torch": torch.rand(3),
                    "numpy_normal": torch.from_numpy(np.random.standard_normal(3)), "python_gauss": random.gauss(0.0, 1.0)}
        finally:
            random.setstate(state[0])
            np.random.set_state(state[1])
            torch.set_rng_state(state[2])
        assert_equal(got["python"], want["python"], f"random.random() after set_seed({seed})")
        assert_tensor(got["numpy"], like=want["numpy"], what=f"np.random.rand(3) after set_seed({seed})")
        assert_tensor(got["torch"], like=want["torch"], what=f"torch.rand(3) after set_seed({seed})")
        # set_seed was called while both generators held a cached Gaussian (an odd number of normal
        # draws before): seeding discards it, as np.random.seed and random.seed do.
        assert_tensor(got["numpy_normal"], like=want["numpy_normal"],
                      what=f"np.random.standard_normal(3) after set_seed({seed}) (called after an odd number of normal draws)")
        assert_equal(got["python_gauss"], want["python_gauss"],
                     f"random.gauss(0, 1) after set_seed({seed}) (called after an odd number of random.gauss draws)")
    first, second = student.probe("data.batch_after_seed", seed=7)
    assert_tensor(second, like=first, what="get_batch after set_seed(7), twice (generators scrambled in between)")


@pytest.mark.gpu
@pytest.mark.points(1)
def test_set_seed_cuda(student):
    """with CUDA, set_seed also seeds every GPU's generator"""
    seed, count = 4242, 6
    got = student.probe("data.cuda_seeded_draws", seed=seed, count=count)
    saved = torch.cuda.get_rng_state_all()
    try:  # expected: each GPU's generator seeded directly, here
        want = []
        for d in range(torch.cuda.device_count()):
            with torch.cuda.device(d):
                torch.cuda.manual_seed(seed)
            want.append(torch.rand(count, device=f"cuda:{d}").cpu())
    finally:
        torch.cuda.set_rng_state_all(saved)
    assert_equal(len(got), len(want), "the number of GPUs whose draws were read")
    for d, (g, w) in enumerate(zip(got, want)):
        assert_tensor(g, like=w, what=f"torch.rand({count}, device='cuda:{d}') after set_seed({seed}) "
                                      "(seed the GPUs too: torch.cuda.manual_seed_all)")


@pytest.mark.gpu
@pytest.mark.points(1)
def test_get_batch_cuda_pinned_non_blocking(student):
    """on CUDA ("cuda", "cuda:0", a torch.device), get_batch returns int64 batches on the GPU, copied from pinned memory without a stream synchronisation"""
    length, context_length, batch_size, offset = 5000, 256, 32, 1000
    for device in ("cuda", "cuda:0", "torch.device:cuda:0"):
        got = student.probe("data.cuda_batch", length=length, context_length=context_length, batch_size=batch_size,
                            seed=0, offset=offset, device=device)
        arg = "torch.device('cuda:0')" if device.startswith("torch.device:") else repr(device)
        what = f"get_batch(data, {batch_size}, {context_length}, {arg})"
        assert_equal(got["x_device"].split(":")[0], "cuda", f"{what}: device of x")
        assert_equal(got["y_device"].split(":")[0], "cuda", f"{what}: device of y")
        x, y = got["x"], got["y"]
        assert_equal(x.dtype, torch.int64, f"{what}: dtype of x")
        assert_equal(tuple(x.shape), (batch_size, context_length), f"{what}: shape of x")
        starts = x[:, :1] - offset
        assert_tensor(x, like=starts + offset + torch.arange(context_length), what=f"{what}: x rows are windows")
        assert_tensor(y, like=x + 1, what=f"{what}: y = x shifted by one")
        events = got["events"]
        copies = {name: n for name, n in events.items() if name.startswith("Memcpy HtoD")}
        assert copies, f"{what}: the profiler saw no host-to-device copy (events: {events})"
        pageable = {name: n for name, n in copies.items() if "pinned" not in name.lower()}
        assert not pageable, f"{what}: copied from pageable memory ({pageable}); call .pin_memory() before the copy"
        syncs = {name: n for name, n in events.items() if name == "cudaStreamSynchronize"}
        assert not syncs, (f"{what}: the copy synchronised the stream ({syncs}); use .to(device, non_blocking=True)")
