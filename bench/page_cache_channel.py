"""The page cache's timing channel between two sandboxes, measured: what is left once the seccomp
filter refuses the cache advice and the residency probes (`grader.sandbox.seccomp`, issue 30).

Two processes under the sandbox's seccomp filter (the program every launcher loads) share a file
they may only read, as two sandboxes share the Python installation.  The trusted side (this script)
writes the file and evicts it from the cache first, as pages nobody read lately are.  The sender
encodes a random message by *reading* the pages of its 1-bits (reading is what no filter can
refuse; MADV_RANDOM keeps read-ahead from reading their neighbours); the receiver touches every page
once and times it: a page the sender brought in is a minor fault, the others are read from the disk.  Printed: bits sent, bits wrong, the receiver's seconds, and the
channel's bandwidth in bits per second (after errors: bits x (1 - 2 x error rate), a crude bound).
Also printed: what the refused advice would have done (the sender's fadvise DONTNEED is EPERM).

    python bench/page_cache_channel.py [--pages 4096] [--dir /var/tmp]

The file must live on a disk-backed filesystem (tmpfs pages are never "cold"); the figure depends
on the disk (local NVMe, network block device) and on how busy the machine is.  Nothing here is a
test: the number goes, with its date and machine, into docs/ARCHITECTURE.md and `grader doctor`.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAGE = os.sysconf("SC_PAGE_SIZE")


def _filtered(fn, *args) -> object:  # noqa: ANN001 - a child under the sandbox's filter, its result by pipe
    import pickle

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            from grader.sandbox.seccomp import load_program, program

            load_program(program())
            out = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            out = exc
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def _mapped(path: str, pages: int) -> tuple[int, mmap.mmap]:
    """The file mapped with MADV_RANDOM (allowed: it only stops read-ahead, which would bring a page's
    neighbours in with it and blur the message)."""
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, pages * PAGE, prot=mmap.PROT_READ)
    m.madvise(mmap.MADV_RANDOM)
    return fd, m


def _send(path: str, bits: list[int]) -> str:
    fd, m = _mapped(path, len(bits))
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        advice = "fadvise(DONTNEED) succeeded"
    except OSError as exc:
        advice = f"fadvise(DONTNEED) refused: {os.strerror(exc.errno)}"
    for i, bit in enumerate(bits):
        if bit:
            m[i * PAGE]  # a major fault: the page is read into the cache
    m.close()
    os.close(fd)
    return advice


def _receive(path: str, pages: int) -> tuple[list[int], float]:
    fd, m = _mapped(path, pages)
    times = []
    t0 = time.perf_counter()
    for i in range(pages):
        s = time.perf_counter_ns()
        m[i * PAGE]  # a minor fault if the page is cached, a disk read if not
        times.append(time.perf_counter_ns() - s)
    seconds = time.perf_counter() - t0
    m.close()
    os.close(fd)
    ordered = sorted(times)
    fast = ordered[len(ordered) // 8]  # surely a cached page
    return [1 if t <= 8 * fast else 0 for t in times], seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=4096)
    parser.add_argument("--dir", default="/var/tmp")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bits = [rng.randint(0, 1) for _ in range(args.pages)]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="kit-channel-") as tmp:
        path = os.path.join(tmp, "shared.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(args.pages * PAGE))
            f.flush()
            os.fsync(f.fileno())
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the trusted side: pages nobody read lately
        os.close(fd)
        advice = _filtered(_send, path, bits)
        got = _filtered(_receive, path, args.pages)
    if isinstance(advice, BaseException) or isinstance(got, BaseException):
        print(f"failed: {advice!r} {got!r}")
        return 1
    received, seconds = got
    wrong = sum(a != b for a, b in zip(bits, received))
    rate = wrong / len(bits)
    useful = len(bits) * max(0.0, 1 - 2 * rate)
    print(f"sender: {advice}")
    print(f"{len(bits)} bits sent by reading pages, {wrong} wrong ({100 * rate:.1f}%), received in {seconds:.3f} s: "
          f"about {useful / seconds:,.0f} bits/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
