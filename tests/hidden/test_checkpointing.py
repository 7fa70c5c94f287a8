"""Hidden tests for `checkpointing`: other seeds, SGD with momentum, pathlib paths and file
objects, and saving over an existing checkpoint.  Expected values: the kit's training loop run
here without stopping."""

from __future__ import annotations

import pytest

from grader.testing.expect import assert_equal, assert_type
from tests.public.test_checkpointing import (_assert_draws, _assert_params, _assert_resumed, _assert_state,
                                             _check_file_object, _check_interrupted_in_process, uninterrupted)

CASES = [  # seed, total steps, saved after, optimizer, how the checkpoint is passed
    (21, 10, 4, "sgd", "pathlib"),
    (22, 9, 6, "adamw", "BytesIO"),
    (23, 8, 1, "adamw+bn", "str"),     # +bn: a BatchNorm1d layer, whose running statistics are buffers
    (24, 7, 3, "sgd+bn", "BytesIO"),
    (25, 8, 3, "adamw+decay", "pathlib"),  # +decay: the lr drops every step, so the fresh optimizer's lr is stale
    (26, 6, 4, "sgd+decay", "BytesIO"),
]


@pytest.mark.points(2)
def test_resume_variants(student):
    """resuming is exact for SGD with momentum and AdamW, with BatchNorm buffers and a changed lr, via str,
    pathlib.Path, io.BytesIO and a file opened "wb" holding other bytes"""
    for seed, total, k, optimizer, via in CASES:
        got = student.probe("checkpointing.resume_in_process", seed=seed, total=total, k=k, optimizer=optimizer, via=via)
        assert_type(got, dict, "resume_in_process")
        _assert_resumed(got, uninterrupted(seed, total, optimizer), k,
                        f"{optimizer} resumed after {k} of {total} steps through a {via} checkpoint"
                        + (" (the lr changed every step: restore the optimizer's param_groups too)"
                           if "decay" in optimizer else ""))
    _check_file_object(student, seed=27, steps=3, target="file")


@pytest.mark.points(1)
def test_save_over_existing_checkpoint(student):
    """a second save to the same path replaces the first, leaves no temporary file, and draws no random numbers;
    a bare file name keeps its temporary file in the working directory, and a KeyboardInterrupt mid-save
    leaves no temporary file"""
    first, second = 3, 7
    got = student.probe("checkpointing.overwrite", seed=31, first=first, second=second)
    assert_type(got, dict, "overwrite")
    assert_equal(got.get("files"), ["checkpoint.pt"], "the files in the checkpoint's folder after two saves")
    assert_equal(got.get("iteration"), second, "the iteration loaded after saving twice to one path")
    want = uninterrupted(31, second)
    _assert_draws(got.get("draws"), want["draws"], "after saving twice to one path",
                  "so a save drew random numbers (save_checkpoint must leave the generators alone)")
    # The checkpoint holds step `second` of a run that saved at step `first` on the way: equal to
    # a run that never saved, unless a save changed something (e.g. drew a random number).
    what = "after saving twice to one path, the run differs from the same run without saves (saving must not " \
           "draw random numbers or touch the model)"
    _assert_params(got.get("params"), want["params"], what)
    _assert_state(got.get("state"), want["state"], f"{what}; optimizer state")
    # With cached Gaussians in NumPy's and Python's generators, saving to a path and to a BytesIO
    # must leave every generator exactly where it was.
    got = student.probe("checkpointing.save_leaves_generators", seed=32, steps=2)
    _assert_draws(got, uninterrupted(32, 2, odd=True)["draws"], "after save_checkpoint (to a path, then to an io.BytesIO)",
                  "so a save drew random numbers or changed a generator's state (save_checkpoint must leave the "
                  "generators alone)")
    _check_interrupted_in_process(student, seed=33, steps=2, via="bare", interrupt=True)
