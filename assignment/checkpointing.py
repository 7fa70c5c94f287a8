"""Checkpointing: save a training run and resume it exactly.

Long runs get interrupted: a preempted job, a failed node, a bug found at step 90,000.  A
checkpoint must hold *everything* that decides the rest of the run: the model's parameters,
the optimizer's state (AdamW's two moments and step counts), the iteration number, and the
state of every random number generator the training loop draws from (dropout masks, which
examples go into a batch, noise).  Restore all of it and the resumed run is, bit for bit, the
run that never stopped; forget any piece and it quietly becomes a different run.
"""

from __future__ import annotations

import os
import random
import tempfile
from typing import BinaryIO

import numpy as np
import torch


def save_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer, iteration: int,
                    out: str | os.PathLike[str] | BinaryIO) -> None:
    """Save everything needed to resume training exactly to `out`.

    What to save, in one dict written with a single ``torch.save`` call:

    * ``model.state_dict()`` and ``optimizer.state_dict()``;
    * ``iteration`` (a Python ``int``);
    * the state of every random number generator a training loop may draw from:
      Python's ``random.getstate()``, NumPy's global ``np.random.get_state()``, torch's CPU
      generator ``torch.get_rng_state()``, and, when ``torch.cuda.is_available()``, every
      CUDA generator ``torch.cuda.get_rng_state_all()``.

    The file must load with ``torch.load(path, weights_only=True)``, which accepts only
    tensors (and ``torch.Size``, dtypes, devices), ``int``/``float``/``complex``/``bool``/
    ``str``/``bytes``/``None`` and lists, tuples, sets, dicts and ``OrderedDict``s of those
    (never other pickled objects, numpy arrays included).  Python's random state is already
    such a tuple, ``(3, tuple of 625 ints, gauss_next)`` (``gauss_next`` is ``None``, or a
    ``float`` after an odd number of ``random.gauss`` calls); NumPy's is the tuple
    ``(name, key, pos, has_gauss, cached_gaussian)`` whose ``key`` is a uint32 ndarray (624
    values): store ``key`` as a tensor or a list of ints, and ``pos`` and ``has_gauss`` as
    ``int``, ``cached_gaussian`` as ``float``.  Save all five parts (after an odd number of
    normal draws ``has_gauss`` is 1 and ``cached_gaussian`` is the next normal value).

    Where to write:

    * ``out`` a path (``str`` or ``os.PathLike``): the save must be **atomic**.  A process
      killed halfway through ``torch.save`` must leave the previous checkpoint at that path
      intact, never a truncated file.  Write to a temporary file in the *same directory*
      (``tempfile.mkstemp(dir=...)``; for a bare file name that is the working directory;
      never the temp dir, which may be another file system), ``flush`` it and ``os.fsync``
      it, then move it over the path with ``os.replace`` (an atomic rename).  If anything
      fails (an exception, or a ``KeyboardInterrupt``), remove the temporary file and
      re-raise; after a successful save no temporary file is left behind.
    * ``out`` a binary file object opened for writing (``open(..., "wb")``, ``io.BytesIO``):
      ``torch.save`` into it at its current position; do not close it.

    Write the file with ``torch.save`` (the tests interrupt ``torch.save`` to simulate a
    crash), and do not draw random numbers while saving.

    Args:
        model: the model being trained.
        optimizer: its optimizer (any ``torch.optim.Optimizer``).
        iteration: the number of training steps done so far.
        out: a path or a writable binary file object.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def load_checkpoint(src: str | os.PathLike[str] | BinaryIO, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer) -> int:
    """Restore a checkpoint written by `save_checkpoint`; return its iteration.

    Read ``src`` with ``torch.load(src, weights_only=True, map_location="cpu")`` (never
    unpickle arbitrary objects from a file: a checkpoint holding one must be refused, i.e.
    raise, without running its code), then restore, in place:

    * the model's parameters and buffers (``model.load_state_dict``);
    * the optimizer's state (``optimizer.load_state_dict``; it moves the state to the
      parameters' device);
    * every random number generator saved: ``random.setstate`` (it needs tuples, not
      lists), ``np.random.set_state`` (with ``key`` back as a uint32 ndarray),
      ``torch.set_rng_state`` (a CPU ``torch.uint8`` tensor), and
      ``torch.cuda.set_rng_state_all`` when CUDA states were saved and CUDA is available.

    After ``load_checkpoint`` the next random numbers drawn from Python's ``random``,
    ``np.random`` and ``torch`` are the ones that would have come next when the checkpoint
    was saved, so that training k steps, saving, loading in a *fresh process* (where the
    model was freshly initialised and the generators hold other states) and training N-k
    more steps gives the same parameters and optimizer state, bit for bit, as training N
    steps without stopping.

    Args:
        src: a path, or a binary file object positioned at the start of a checkpoint.
        model: a model of the same architecture (its parameters are overwritten).
        optimizer: an optimizer of the same kind over ``model``'s parameters (its state is
            overwritten).

    Returns:
        The saved iteration, as a Python ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
