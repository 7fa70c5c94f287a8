"""Hidden tests for `data`: other dtypes, plain arrays, torch.device arguments, other seeds and sizes."""

from __future__ import annotations

import pytest
import torch

from grader.testing.expect import assert_equal, assert_tensor
from tests.public.test_data import _check_batches, check_uniform_starts


@pytest.mark.points(1)
def test_get_batch_other_inputs(student):
    """get_batch on a uint32 memmap (ids ≥ 2^31), a plain int32 array, a torch.device, batch/context of 1; starts drawn with replacement"""
    cases = [
        # ids 2^32 − 1000 … 2^32 − 501: above 65535 and above int32's range (a detour through int32 wraps them)
        {"length": 500, "context_length": 20, "batch_size": 6, "offset": 2**32 - 1000, "dtype": "uint32", "kind": "memmap"},
        {"length": 200, "context_length": 10, "batch_size": 4, "offset": 7, "dtype": "int32", "kind": "array"},
        {"length": 64, "context_length": 5, "batch_size": 3, "offset": 0, "dtype": "uint16", "kind": "memmap",
         "torch_device": True},
        {"length": 2, "context_length": 1, "batch_size": 1, "offset": 9, "dtype": "uint16", "kind": "array"},
    ]
    for i, case in enumerate(cases):
        got = student.probe("data.batches", calls=2, seed=20 + i, **case)
        _check_batches(got, length=case["length"], context_length=case["context_length"],
                       batch_size=case["batch_size"], calls=2, offset=case["offset"])
    # "the same start may appear twice in a batch": 32 independent rows over 32 valid starts are all
    # distinct with probability 32!/32^32 < 4e-13, in both of two batches < 2e-25 (drawing without
    # replacement, random.sample or randperm, never repeats a start)
    got = student.probe("data.batches", length=40, context_length=8, batch_size=32, calls=2, seed=24)
    starts = _check_batches(got, length=40, context_length=8, batch_size=32, calls=2, offset=0)
    if all(len(set(row.tolist())) == 32 for row in starts):
        raise AssertionError("get_batch(data of 40 tokens, batch_size=32, context_length=8): no start repeats within "
                             "a batch of 32 rows over 32 valid starts (twice): the starts are drawn without "
                             "replacement; draw each one independently (repeats allowed)")


@pytest.mark.points(1)
def test_get_batch_uniform_other_sizes_and_round_trip(student):
    """starts are uniform for other sizes and seeds; write_tokens → load_tokens → get_batch gives the written windows"""
    # 17 valid starts, 40 × 100 = 4000 draws (235 per start): P(a start missing) < 17·(16/17)^4000 < 1e-100;
    # chi-square false-failure rate 1e-6 as in the public test.
    check_uniform_starts(student, seed=5, offset=3000, length=20, context_length=3, batch_size=100, calls=40)
    tokens = [int(t) for t in torch.randint(0, 65536, (300,), generator=torch.Generator().manual_seed(9))]
    context_length = 12
    got = student.probe("data.round_trip_batch", tokens=tokens, context_length=context_length, batch_size=5, seed=4)
    what = "get_batch(load_tokens(a file written by write_tokens), 5, 12)"
    data = torch.tensor(tokens, dtype=torch.int64)
    x, y = got["x"], got["y"]
    assert_equal(tuple(x.shape), (5, context_length), f"{what}: shape of x")
    windows = data.unfold(0, context_length, 1)[: len(tokens) - context_length]  # valid starts only
    for i, row in enumerate(x):
        matches = (windows == row).all(dim=1).nonzero().flatten()
        if matches.numel() == 0:
            raise AssertionError(f"{what}: row {i} of x is not a window of the written ids")
        start = int(matches[0])
        assert_tensor(y[i], like=data[start + 1:start + 1 + context_length], what=f"{what}: y[{i}] = the next tokens")
