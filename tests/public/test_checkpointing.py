"""Public tests for `checkpointing`.

The expected results come from the kit's own training loop run here without stopping
(tests/probes/_checkpointing_train.py: a torch.nn model, a torch.optim optimizer, and a batch,
noise and dropout drawn from Python's, NumPy's and torch's generators at every step).  A
correct checkpoint makes the interrupted run equal to it bit for bit, so every comparison is
exact.
"""

from __future__ import annotations

import ast
import io
from typing import Any

import pytest
import torch

from grader import static
from grader.expect import assert_equal, assert_tensor, assert_type
from grader.protocol import ErrorData
from grader.student import NotAttempted, ProbeError
from tests.probes._checkpointing_train import uninterrupted

PARAMS = ["0.weight", "0.bias", "3.weight", "3.bias"]  # the kit model's parameters, in order
GENERATORS = {"python": "Python's `random`", "numpy": "NumPy's global `np.random`", "torch": "torch's CPU generator"}

SEED, TOTAL, K = 3, 12, 5


# -- helpers (also used by the hidden tests) ---------------------------------------------------

def _value(outcome: Any, probe: str) -> Any:
    """A probe outcome kept by a fixture: the value, or the failure raised afresh in this test."""
    if isinstance(outcome, ProbeError):
        raise type(outcome)(outcome.probe, outcome.error, outcome.detail)
    if isinstance(outcome, ErrorData):
        raise (NotAttempted if outcome.not_implemented else ProbeError)(probe, outcome)
    return outcome


def _no_error(result: Any, probe: str, context: str) -> dict[str, Any]:
    """A probe's sub-result that may carry the student's exception as {"error": ...}."""
    assert_type(result, dict, context)
    if "error" in result:
        if result.get("not_implemented"):
            raise NotAttempted(probe, detail=f"{context}: raises NotImplementedError")
        raise ProbeError(probe, detail=f"{context}: your code raised {result['error']}")
    return result


def _assert_draws(got: Any, want: dict[str, Any], what: str,
                  hint: str = "so its state was not saved or not restored") -> None:
    """The next numbers of each generator equal the uninterrupted run's: its state was restored."""
    assert_type(got, dict, what)
    for name, label in GENERATORS.items():
        g, w = got.get(name), want[name]
        same = torch.equal(g, w) if type(g) is torch.Tensor and g.shape == w.shape else g == w
        if not same:
            raise AssertionError(f"{what}: the next numbers from {label} differ from the uninterrupted run, {hint} "
                                 f"(expected {w}, got {g})")


def _assert_state(got: Any, want: list[dict[str, torch.Tensor]], what: str) -> None:
    assert_type(got, list, what)
    if len(got) != len(want):
        raise AssertionError(f"{what}: expected optimizer state for {len(want)} parameters, got {len(got)}")
    for name, g, w in zip(PARAMS, got, want):
        assert_type(g, dict, f"{what} of {name}")
        if sorted(g) != sorted(w):
            raise AssertionError(f"{what} of parameter {name}: expected entries {sorted(w)}, got {sorted(g)} "
                                 "(was optimizer.state_dict() saved and loaded?)")
        for key in w:
            assert_tensor(g[key], w[key], f"{what} of parameter {name}, {key!r} (was the optimizer state "
                                          "saved and loaded?)")


def _assert_params(got: Any, want: list[torch.Tensor], what: str) -> None:
    assert_type(got, list, what)
    if len(got) != len(want):
        raise AssertionError(f"{what}: expected {len(want)} parameters, got {len(got)}")
    for name, g, w in zip(PARAMS, got, want):
        assert_tensor(g, w, f"{what}: parameter {name}")


def _assert_resumed(got: dict[str, Any], want: dict[str, Any], iteration: int, what: str) -> None:
    """Same iteration, same next random numbers, same optimizer state, same parameters."""
    assert_equal(got.get("iteration"), iteration, f"{what}: the iteration load_checkpoint returned")
    _assert_draws(got.get("draws"), want["draws"], what)
    _assert_state(got.get("state"), want["state"], f"{what}: optimizer state")
    _assert_params(got.get("params"), want["params"], what)


# -- one fresh-process run, shared by two tests ------------------------------------------------

@pytest.fixture(scope="module")
def fresh_run(student):
    """Train K steps, save, then in a fresh Python process load, train TOTAL - K steps, and start a
    second save that is killed halfway.  A fresh process costs seconds of start-up, so the two
    tests below share one."""
    try:
        return student.outcome("checkpointing.resume_in_fresh_process", seed=SEED, total=TOTAL, k=K)
    except ProbeError as exc:
        return exc


@pytest.mark.points(3)
def test_resume_in_fresh_process_is_bit_exact(fresh_run):
    """train k steps, save, load in a fresh process, train N-k: identical to N steps in one go"""
    probe = "checkpointing.resume_in_fresh_process"
    run = _value(fresh_run, probe)
    assert_type(run, dict, "the fresh-process run")
    resumed = _no_error(run.get("resumed"), probe, "loading the checkpoint in a fresh process")
    _assert_resumed(resumed, uninterrupted(SEED, TOTAL), K, f"resumed after {K} of {TOTAL} steps in a fresh process")


@pytest.mark.points(2)
def test_interrupted_save_keeps_previous_checkpoint(student, fresh_run):
    """a save killed halfway through torch.save leaves the previous checkpoint intact (temp file, fsync, os.replace)"""
    probe = "checkpointing.resume_in_fresh_process"
    run = _value(fresh_run, probe)
    assert_type(run, dict, "the fresh-process run")
    if run.get("interrupted") is not True:
        raise AssertionError("the second save_checkpoint never reached torch.save, so it could not be interrupted "
                             f"(write the file with torch.save); the fresh process reported: {run.get('child')}")
    after = run.get("after_crash")
    assert_type(after, dict, "loading after the crash")
    if "error" in after:
        raise AssertionError("after a save to the same path was killed halfway, the previous checkpoint no longer "
                             f"loads ({after['error']}): write to a temporary file, then os.replace it over the path")
    assert_equal(after.get("iteration"), K, "the iteration of the checkpoint left after the crash")
    _assert_params(after.get("params"), uninterrupted(SEED, K)["params"], "the checkpoint left after the crash")
    # Read, not run: a crash of the whole machine also needs the bytes on disk before the rename.
    called = {name.rsplit(".", 1)[-1] for name in static.called_names(ast.parse(student.source("checkpointing")))}
    if not called & {"fsync", "fdatasync"}:
        raise AssertionError("checkpointing.py never calls os.fsync: flush and fsync the temporary file before "
                             "renaming it, or a machine crash can leave an empty checkpoint")
    if not called & {"replace", "rename", "move"}:
        raise AssertionError("checkpointing.py never calls os.replace: move the finished temporary file over the "
                             "checkpoint path with an atomic rename")


# -- in-process tests ---------------------------------------------------------------------------

def _find_tensors(obj: Any, found: list[torch.Tensor]) -> list[torch.Tensor]:
    if type(obj) is torch.Tensor:
        found.append(obj)
    elif isinstance(obj, dict):
        for value in obj.values():
            _find_tensors(value, found)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _find_tensors(value, found)
    return found


def _weights_only_load(data: Any) -> Any:
    assert_type(data, torch.Tensor, "the checkpoint file's bytes")
    if data.numel() == 0:
        raise AssertionError("save_checkpoint left an empty file at the path")
    try:
        return torch.load(io.BytesIO(data.numpy().tobytes()), weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - the refusal is the finding
        text = str(exc)
        reason = text.split("WeightsUnpickler error:", 1)[-1].strip().splitlines()[0] if text else type(exc).__name__
        raise AssertionError(f"torch.load(checkpoint, weights_only=True) refuses the file: {reason[:300]} "
                             "(store only tensors, numbers, strings and lists/tuples/dicts of them)") from None


@pytest.mark.points(1)
def test_checkpoint_loads_with_weights_only(student):
    """the file loads with torch.load(weights_only=True) and holds the parameters and AdamW's moments"""
    steps = 4
    obj = _weights_only_load(student.probe("checkpointing.checkpoint_bytes", seed=11, steps=steps))
    tensors = _find_tensors(obj, [])
    want = uninterrupted(11, steps)
    wanted = [(f"parameter {n}", p) for n, p in zip(PARAMS, want["params"])]
    wanted += [(f"AdamW's {key} of parameter {n}", s[key]) for n, s in zip(PARAMS, want["state"])
               for key in ("exp_avg", "exp_avg_sq")]
    for what, w in wanted:
        if not any(t.shape == w.shape and t.dtype == w.dtype and torch.equal(t, w) for t in tensors):
            raise AssertionError(f"the checkpoint file holds no tensor equal to {what}")


@pytest.mark.points(1)
def test_load_restores_every_generator(student):
    """after load_checkpoint, Python's, NumPy's and torch's generators continue from the saved states"""
    steps = 3
    got = student.probe("checkpointing.rng_round_trip", seed=5, steps=steps)
    _assert_draws(got, uninterrupted(5, steps)["draws"], "after load_checkpoint")


@pytest.mark.points(1)
def test_file_object_round_trip(student):
    """save_checkpoint writes into a binary file object (left open); load_checkpoint reads BytesIO and open(..., "rb")"""
    steps = 4
    got = student.probe("checkpointing.file_object_round_trip", seed=8, steps=steps)
    assert_type(got, dict, "file_object_round_trip")
    if got.get("closed") is not False:
        raise AssertionError("save_checkpoint closed the file object it was given: the caller owns it")
    want = uninterrupted(8, steps)
    assert_type(got.get("results"), list, "loaded checkpoints")
    assert_equal(len(got["results"]), 2, "the number of loaded checkpoints")
    for result in got["results"]:
        what = f"loaded from {'an io.BytesIO' if result.get('source') == 'BytesIO' else 'a file opened rb'}"
        assert_equal(result.get("iteration"), steps, f"{what}: the iteration")
        _assert_state(result.get("state"), want["state"], f"{what}: optimizer state")
        _assert_params(result.get("params"), want["params"], what)
