"""Token files and batches: feeding a language model from a memory-mapped token file.

A tokenized training corpus is one long sequence of token ids.  Stored as raw uint16 (enough
for a vocabulary of up to 65,536 tokens, e.g. GPT-2's 50,257), 10 billion tokens take 20 GB:
more than you want to read into memory, and more than you need, since each training step
looks at only ``batch_size × (context_length + 1)`` of them.  ``np.memmap`` maps the file into
the address space without reading it; the operating system loads just the pages that a batch
touches.  A language model learns to predict the next token, so a batch is ``batch_size``
windows of the sequence: the inputs ``x`` and the same windows shifted by one, the targets ``y``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch


def write_tokens(tokens: Sequence[int] | npt.NDArray[np.integer], path: str | os.PathLike[str],
                 dtype: npt.DTypeLike = np.uint16) -> None:
    """Write token ids to `path` as a raw binary file: the ids one after another, nothing else.

    No header, no shape, no dtype marker (so not ``np.save``): the file is exactly
    ``len(tokens) × itemsize`` bytes, each id stored as one `dtype` element in the machine's
    native byte order (what ``ndarray.tofile`` writes).  ``[1, 2, 258]`` as uint16 is the 6
    bytes ``01 00 02 00 02 01`` on a little-endian machine.  An existing file is overwritten.  No
    ids at all (``[]``, an empty array; note ``np.asarray([])`` is float64) write an empty file.

    Args:
        tokens: a 1-D sequence (list, tuple, numpy array) of integer token ids.
        path: where to write.
        dtype: an unsigned integer numpy dtype, ``np.uint16`` by default (ids 0..65535);
            ``np.uint32`` for vocabularies larger than 65,536.

    Raises:
        ValueError: if any id does not fit in `dtype` (negative, or ≥ 65536 for uint16),
            instead of silently wrapping around; or if `tokens` are not integers (e.g.
            ``[1.5, 2.0]``).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def load_tokens(path: str | os.PathLike[str], dtype: npt.DTypeLike = np.uint16) -> np.memmap:
    """Map a raw token file (as written by `write_tokens`) into memory without reading it.

    Return an ``np.memmap`` of `dtype` over the whole file, opened **read-only**
    (``mode="r"``): training must never modify its data, and a read-only shared mapping costs
    no memory until pages are touched.  Do not read the file (no ``np.fromfile``, no
    ``np.array(...)`` of the map): loading a 20 GB file must take no time and no memory.

    Args:
        path: the token file.
        dtype: the dtype the file was written with (``np.uint16`` by default).

    Returns:
        A 1-D ``np.memmap`` with ``len`` = file size / itemsize.

    Raises:
        ValueError: if the file size is not a multiple of the item size (numpy's memmap raises
            this for you) or the file is empty.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def get_batch(data: npt.NDArray[np.integer], batch_size: int, context_length: int,
              device: str | torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample a batch of training windows and their next-token targets.

    Draw ``batch_size`` start positions ``s``, each independently and uniformly from *every*
    valid start ``0, 1, …, len(data) − context_length − 1`` (the first and the last
    included; the same start may appear twice in a batch).  Then, for batch row ``i``:

        x[i] = data[s_i     : s_i + context_length]
        y[i] = data[s_i + 1 : s_i + context_length + 1]        (x shifted by one)

    With ``data = [10, 11, 12, 13, 14]`` and ``context_length = 3`` the valid starts are 0
    and 1: rows are ``x = [10, 11, 12], y = [11, 12, 13]`` or ``x = [11, 12, 13], y = [12, 13, 14]``.
    Draw the starts from a global generator that `set_seed` seeds (``torch.randint``, or
    numpy's ``np.random.randint``) so that training runs are reproducible.

    Memory: `data` may be a memmap of a file far larger than RAM.  Read only the
    ``batch_size × (context_length + 1)`` tokens you need, in one vectorised gather (index
    the array with a ``(batch_size, context_length + 1)`` integer index array).  Never
    convert or copy the whole of `data` (no ``np.array(data)``, ``data[:]`` copies,
    ``torch.from_numpy(data).long()``, ``data.astype(...)``); and avoid a Python loop that
    builds a list of slices: it is many times slower (see the benchmark in the handout).

    Device: the result is ``int64`` (the dtype embedding layers and cross-entropy take),
    whatever `data`'s dtype; uint16 ids ≥ 32768 stay positive.  When `device` is a CUDA
    device, put the CPU tensors in *pinned* (page-locked) memory (``.pin_memory()``) and copy
    them with ``.to(device, non_blocking=True)``: the copy is then asynchronous and overlaps
    with the GPU's work.  On the CPU, no pinning.

    Args:
        data: a 1-D integer numpy array or memmap of token ids.
        batch_size: B ≥ 1.
        context_length: T ≥ 1, tokens per input row.
        device: e.g. ``"cpu"``, ``"cuda"``, ``"cuda:0"`` or a ``torch.device``; any device torch
            accepts is honoured (``"meta"`` gives meta tensors).

    Returns:
        ``(x, y)``: two contiguous ``int64`` tensors of shape ``(B, T)`` on `device`.

    Raises:
        ValueError: if ``len(data) < context_length + 1`` (not even one window with its
            target fits), or if ``batch_size`` or ``context_length`` is < 1.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def set_seed(seed: int) -> None:
    """Seed every random number generator training uses: Python's ``random``, numpy's global
    generator (``np.random.seed``), torch's CPU generator (``torch.manual_seed``) and, when
    CUDA is available, every GPU's generator (``torch.cuda.manual_seed_all``).

    After ``set_seed(s)``, ``random.random()``, ``np.random.rand()`` and ``torch.rand(...)``
    give exactly what they give after seeding each library with ``s`` directly, and
    ``get_batch`` returns the same batch every time.  That includes normal draws
    (``random.gauss``, ``np.random.standard_normal``) when the generators held a cached
    Gaussian from an odd number of normal draws before: seeding discards it (``random.seed``
    and ``np.random.seed`` do).

    Args:
        seed: a non-negative int.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
