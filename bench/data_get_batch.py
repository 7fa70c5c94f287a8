"""Benchmark: a `get_batch` (yours, or the reference) against the lecture's list-comprehension version.

Same memory-mapped token file, same batch shapes, same device, both measured in this run,
interleaved (so machine load affects both alike); prints the median time per batch of each and
the ratio.  The target is a ratio of at least 5× at batch 64, context 1024.

    lecture:   x = torch.tensor([data[s : s + T] for s in starts])      (and y likewise)
    reference: one vectorised gather data[starts[:, None] + arange(T + 1)], one int64 conversion

Run: ``python bench/data_get_batch.py [--target solutions|assignment|PATH] [--batch 64]
[--context 1024] [--tokens 100_000_000] [--device cpu|cuda] [--repeats 30]``.  The target
defaults to `solutions` in the instructor repo and to your `assignment/` in the student
release.  The token file (2 bytes per token, random ids below 50,257) is written to a
temporary folder and removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from grader.boundary.target import Implementation, resolve_target  # noqa: E402


def lecture_get_batch(data: np.ndarray, batch_size: int, context_length: int,
                      device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The lecture's version: a Python list of memmap slices turned into a tensor."""
    starts = torch.randint(len(data) - context_length, (batch_size,))
    x = torch.tensor([data[s:s + context_length] for s in starts])
    y = torch.tensor([data[s + 1:s + 1 + context_length] for s in starts])
    if device.startswith("cuda"):
        x, y = x.pin_memory(), y.pin_memory()
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def seconds_per_batch(fn, data, batch_size, context_length, device) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    x, y = fn(data, batch_size, context_length, device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    assert x.shape == y.shape == (batch_size, context_length)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--tokens", type=int, default=100_000_000, help="tokens in the file (2 bytes each)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--target", default=None, help="implementation: solutions, assignment or a folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Creating a tensor from a list of numpy.ndarrays")
    impl = Implementation(resolve_target(args.target))
    get_batch, load_tokens = impl.data.get_batch, impl.data.load_tokens

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tokens.bin")
        rng = np.random.default_rng(0)
        chunk = 10_000_000
        with open(path, "wb") as f:
            for start in range(0, args.tokens, chunk):
                rng.integers(0, 50_257, min(chunk, args.tokens - start), dtype=np.uint16).tofile(f)
        try:
            data = load_tokens(path)
            # the two versions must agree on the same starts
            torch.manual_seed(0)
            want = lecture_get_batch(data, 4, 16, "cpu")
            torch.manual_seed(0)
            got = get_batch(data, 4, 16, "cpu")
        except NotImplementedError:
            raise SystemExit(f"{impl.folder}/data.py: load_tokens or get_batch is not implemented yet") from None
        if not all(torch.equal(a.long(), b.long()) for a, b in zip(want, got)):
            raise SystemExit(f"{impl.folder}/data.py: get_batch disagrees with the lecture's version on the same "
                             "starts (run `grader check --module data`)")

        times: dict[str, list[float]] = {"lecture": [], "reference": []}  # "reference": the target's get_batch
        for fn in (lecture_get_batch, get_batch):  # warm-up (page cache, allocator, CUDA context)
            for _ in range(3):
                seconds_per_batch(fn, data, args.batch, args.context, args.device)
        for _ in range(args.repeats):
            times["lecture"].append(seconds_per_batch(lecture_get_batch, data, args.batch, args.context, args.device))
            times["reference"].append(seconds_per_batch(get_batch, data, args.batch, args.context, args.device))
        del data

    lecture, reference = statistics.median(times["lecture"]), statistics.median(times["reference"])
    print(f"get_batch, batch {args.batch}, context {args.context}, memmap of {args.tokens:,} uint16 tokens, "
          f"device {args.device}, median of {args.repeats} (interleaved)")
    print(f"  lecture (list comprehension) : {lecture * 1e3:9.3f} ms per batch")
    print(f"  {impl.folder.name} get_batch{' ' * max(0, 19 - len(impl.folder.name))}: {reference * 1e3:9.3f} ms per batch")
    print(f"  ratio lecture / {impl.folder.name}{' ' * max(0, 13 - len(impl.folder.name))}: {lecture / reference:9.1f}x   "
          "(target: >= 5x)")


if __name__ == "__main__":
    main()
