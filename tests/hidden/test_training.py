"""Hidden tests for `training`: other sizes, seeds, kill points and path types."""

from __future__ import annotations

import pytest

from grader.testing.expect import assert_equal, assert_tensor, assert_type
from tests.public.test_training import (RTOL, check_checkpoint_calls, check_losses, check_step_flops, make_init,
                                        make_target, reference_run, run)


NAMES = {"sgd": "SGD", "adamw": "AdamW"}


@pytest.mark.points(2)
def test_train_other_runs(student):
    """train matches the reference on other sizes, a batch of 1, no square layers, SGD and AdamW, stale gradients; no checkpoint without a path"""
    for dim, layers, batch, steps, opt, lr, seed in [(5, 0, 1, 7, "sgd", 0.1, 11), (9, 4, 3, 5, "adamw", 0.003, 12),
                                                     (3, 1, 2, 9, "sgd", 0.2, 13)]:
        got, want, state = run(student, dim, layers, batch, steps, opt, lr, seed)
        what = f"train(deep linear model ({dim}, {layers} layers), torch.optim.{NAMES[opt]}(lr={lr}), batch {batch}, " \
               f"{steps} steps, seed {seed})"
        check_losses(got["losses"], want, what, RTOL)
        for key, value in state.items():
            assert_tensor(got["state"][key], value, f"{what}: final {key}", rtol=RTOL, atol=1e-7)
    # a model that arrives holding gradients of an earlier backward pass: step 0 must not add to them
    dim, layers, batch, steps, seed = 6, 2, 4, 5, 14
    init, w_true = make_init(dim, layers, seed), make_target(dim, seed)
    got = student.probe("training.run", init=init, w_true=w_true, dim=dim, num_layers=layers, batch=batch,
                        steps=steps, optimizer="sgd", lr=0.05, seed=seed, stale_grads=True)
    want, _ = reference_run(dim, layers, batch, steps, "sgd", 0.05, seed)
    what = "train(deep linear model (6, 2 layers), torch.optim.SGD) on a model already holding gradients"
    assert_equal(got["grads_none"], [True] * steps, f"{what}: p.grad is None as each step's forward pass begins")
    check_losses(got["losses"], want, what, RTOL)
    # checkpoint_every without a checkpoint path: nothing is saved (save_checkpoint is a recording stand-in)
    got = student.probe("training.run", init=init, w_true=w_true, dim=dim, num_layers=layers, batch=batch,
                        steps=steps, optimizer="sgd", lr=0.05, seed=seed, checkpoint_every=2)
    assert_equal([c for c in got["calls"] if c[0] == "save"], [],
                 "train(..., checkpoint_every=2) with no checkpoint_path: calls of save_checkpoint", kind=list)


@pytest.mark.points(2)
def test_train_resume_other_cases(student):
    """resuming works from a pathlib.Path, when killed right at a checkpoint, every step, with another cadence, with checkpoint_every=0 or not given, and under mixed precision"""
    # (3, 6, 4): resumed from step 6 with checkpoint_every=4, it saves after step 8 (steps done, a multiple
    # of 4), not after this call's 4th step (10)
    # rerun_every None: the third call gives no checkpoint_every at all (its default, 0: never save)
    for every, kill, kind, resume_every, mp, rerun_every in [(3, 6, "path", 4, False, 0), (1, 4, "str", 1, False, None),
                                                             (4, 9, "path", 4, False, 0), (2, 7, "str", 2, True, None)]:
        dim, layers, batch, steps = 5, 2, 3, 11
        got = student.probe("training.resume", init=make_init(dim, layers, 5), other_init=make_init(dim, layers, 6),
                            w_true=make_target(dim, 5), dim=dim, num_layers=layers, batch=batch, steps=steps,
                            every=every, kill_at=kill, path_kind=kind, optimizer="adamw", rerun=True,
                            resume_every=resume_every, mixed_precision=mp, rerun_every=rerun_every)
        what = f"resume (checkpoint every {every}, killed before step {kill}, path as {kind}" + (
            f", resumed with checkpoint_every={resume_every}" if resume_every != every else "") + (
            ", mixed_precision=True" if mp else "") + ")"
        check_checkpoint_calls(got, what)
        assert_type(got["resumed"], list, what)
        last = kill // every * every
        assert_equal(got["resumed"], got["full"][last:], f"{what}: losses of the resumed steps, bit for bit", kind=list)
        for key, value in got["full_state"].items():
            assert_tensor(got["resumed_state"][key], value, f"{what}: final {key}")
        # the resumed run's last checkpoint is after step steps // resume_every * resume_every; a third call
        # with the same path and checkpoint_every=0 resumes from it (an existing file is resumed whatever
        # checkpoint_every is) and never saves
        final = steps // resume_every * resume_every
        rerun = "checkpoint_every=0" if rerun_every == 0 else "no checkpoint_every (default 0)"
        assert_equal(got["rerun"], got["full"][final:], f"{what}, then train({steps} steps, same path, "
                     f"{rerun}): it resumes from the checkpoint of step {final}", kind=list)
        assert_equal(got["rerun_checkpoint_unchanged"], True, f"{what}, then {rerun}: no checkpoint saved")


@pytest.mark.points(1)
def test_step_flops_other_shapes(student):
    """step_flops matches FlopCounterMode on a real step for other shapes"""
    check_step_flops(student, [(1, 1, 0), (7, 3, 5), (4, 32, 1)])
