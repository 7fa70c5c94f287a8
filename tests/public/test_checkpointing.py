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
import os
import zipfile
from typing import Any

import pytest
import torch

from grader.rules import static
from grader.testing.contained import contained
from grader.testing.expect import assert_equal, assert_tensor, assert_type
from grader.boundary.messages import ErrorData
from grader.testing.student import NotAttempted, ProbeError, safe_repr
from grader.testing.reference import reference
from tests.probes._checkpointing_train import uninterrupted as _uninterrupted

# the uninterrupted run depends on its constants only: computed once per grading worker
uninterrupted = reference(_uninterrupted)

PARAMS = ["0.weight", "0.bias", "3.weight", "3.bias"]  # the kit model's parameters, in order
GENERATORS = {"python": "Python's `random`",
              "python_gauss": "Python's `random.gauss` (its cached second value, the 3rd item of random.getstate())",
              "numpy": "NumPy's global `np.random`",
              "numpy_normal": "NumPy's `np.random.standard_normal` (its cached Gaussian: has_gauss, cached_gaussian)",
              "torch": "torch's CPU generator"}

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
                                 f"(expected {w}, got {g if type(g) is torch.Tensor else safe_repr(g)})")


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
    names = PARAMS if len(want) == len(PARAMS) else [f"#{i}" for i in range(len(want))]
    for name, g, w in zip(names, got, want):
        assert_tensor(g, w, f"{what}: parameter {name}")


def _assert_buffers(got: Any, want: dict[str, torch.Tensor], what: str) -> None:
    """The model's buffers (BatchNorm's running statistics): part of model.state_dict()."""
    assert_type(got, dict, f"{what}: buffers")
    if sorted(got) != sorted(want):
        raise AssertionError(f"{what}: expected buffers {sorted(want)}, got {sorted(got)}")
    for name, w in want.items():
        assert_tensor(got[name], w, f"{what}: buffer {name} (save and load model.state_dict(), which holds the "
                                    "buffers as well as the parameters)")


def _assert_resumed(got: dict[str, Any], want: dict[str, Any], iteration: int, what: str) -> None:
    """Same iteration, same next random numbers, same optimizer state, same parameters."""
    assert_equal(got.get("iteration"), iteration, f"{what}: the iteration load_checkpoint returned")
    _assert_draws(got.get("draws"), want["draws"], what)
    _assert_state(got.get("state"), want["state"], f"{what}: optimizer state")
    _assert_params(got.get("params"), want["params"], what)
    if want.get("buffers"):
        _assert_buffers(got.get("buffers"), want["buffers"], what)


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


@pytest.mark.points(2)
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
                             f"(write the file with torch.save); the fresh process reported: {safe_repr(run.get('child'), 300)}")
    after = run.get("after_crash")
    assert_type(after, dict, "loading after the crash")
    if "error" in after:
        raise AssertionError("after a save to the same path was killed halfway, the previous checkpoint no longer "
                             f"loads ({after['error']}): write to a temporary file, then os.replace it over the path")
    assert_equal(after.get("iteration"), K, "the iteration of the checkpoint left after the crash")
    _assert_params(after.get("params"), uninterrupted(SEED, K)["params"], "the checkpoint left after the crash")
    for via in ("pathlib", "str"):
        _check_interrupted_in_process(student, seed=SEED + 40, steps=3, via=via)
    # Read, not run: a crash of the whole machine also needs the bytes on disk before the rename.  What
    # save_checkpoint runs: its own code, the helpers it reaches, the modules of yours it imports.
    scope = student.scope("checkpointing", "save_checkpoint")  # a file the checks cannot read: a plain failure
    called = {name.rsplit(".", 1)[-1] for name in static.called_names(scope)}
    if not called & {"fsync", "fdatasync"}:
        raise AssertionError("save_checkpoint (or the code it reaches) never calls os.fsync: flush and fsync the "
                             "temporary file before renaming it, or a machine crash can leave an empty checkpoint")
    if not called & {"replace", "rename", "move"}:
        raise AssertionError("save_checkpoint (or the code it reaches) never calls os.replace: move the finished "
                             "temporary file over the checkpoint path with an atomic rename")


# -- in-process tests ---------------------------------------------------------------------------

def _check_interrupted_in_process(student, *, seed: int, steps: int, via: str, interrupt: bool = False) -> None:
    """Save to a path given as `via` ("str", "pathlib.Path", or "bare": a file name relative to the
    working directory) in a folder on another file system than the temp dir (when the machine has
    one), then a second save whose torch.save writes half the bytes and raises (a KeyboardInterrupt
    when `interrupt`): the error propagates, no temporary file is left, the first checkpoint
    still loads, every file torch.save wrote and every rename source is in the checkpoint's
    own folder (so the rename is atomic: os.replace cannot cross file systems), and the file
    torch.save wrote was fsync'ed before it was renamed."""
    probe = "checkpointing.interrupted_save"
    got = student.probe(probe, seed=seed, steps=steps, via=via, **({"interrupt": True} if interrupt else {}))
    kind = {"pathlib": "a pathlib.Path", "bare": "a bare file name (relative to the working directory)"}.get(
        via, "a str path")
    what = f"save_checkpoint to {kind}"
    assert_type(got, dict, probe)
    folder = got["folder"]
    where = (" (the checkpoint's folder is on another file system than the temp dir)" if got["other_fs"] else "")
    if str(got["first"]).startswith("NotImplementedError"):
        raise NotAttempted(probe, detail=f"{what}: raises NotImplementedError")
    if got["first"] != "saved":
        raise AssertionError(f"{what}: saving to {folder}/checkpoint.pt failed{where}: {got['first']}; create the "
                             "temporary file in the checkpoint's own folder (tempfile.mkstemp(dir=...)), so that "
                             "os.replace stays on one file system")
    outside = [p for p in got["saved_to"] if p is not None and os.path.dirname(p) != folder]
    outside += [src for _, src, dst in got["renames"] if dst == os.path.join(folder, "checkpoint.pt")
                and src is not None and os.path.dirname(src) != folder]
    if outside:
        raise AssertionError(f"{what}: the checkpoint is {folder}/checkpoint.pt but the file written and renamed is "
                             f"{outside[0]}{where}: create the temporary file in the same folder "
                             "(tempfile.mkstemp(dir=os.path.dirname(path))); a rename across folders can cross file "
                             "systems, where it is a copy, not atomic")
    # The first save's file reaches the disk before the rename makes it the checkpoint (read from
    # the calls made, so an fsync of another file, one before torch.save has written it, or one after
    # the rename, does not count).
    written = got["saved_to"][0] if got["saved_to"] else None
    synced = [path for path, renames_before, after_save in got.get("syncs", []) if renames_before == 0 and after_save]
    if written is not None and written not in synced:
        raise AssertionError(f"{what}: the temporary file torch.save wrote was not os.fsync'ed after torch.save wrote "
                             f"it and before it was renamed over the checkpoint (fsync'ed in between: "
                             f"{synced or 'nothing'}): torch.save, flush and fsync that file, then os.replace it")
    crash = "a KeyboardInterrupt" if interrupt else "an exception"
    if got["second"] == "returned normally":
        raise AssertionError(f"{what}: torch.save raised {crash} halfway through a second save, but save_checkpoint "
                             "returned normally; remove the temporary file and re-raise the error")
    if got["files"] != ["checkpoint.pt"]:
        raise AssertionError(f"{what}: after a save that failed halfway ({crash}) the folder holds {safe_repr(got['files'], 300)}, "
                             "expected only ['checkpoint.pt'] (remove the temporary file when the save fails; "
                             "the checkpoint must stay)")
    after = got["after"]
    assert_type(after, dict, "loading after the failed save")
    if "error" in after:
        raise AssertionError(f"{what}: after a second save failed halfway through torch.save, the first checkpoint "
                             f"no longer loads ({after['error']}): write to a temporary file, then os.replace it over "
                             "the path")
    assert_equal(after.get("iteration"), steps, f"{what}: the iteration of the checkpoint left after a failed save")
    _assert_params(after.get("params"), uninterrupted(seed, steps)["params"],
                   f"{what}: the checkpoint left after a failed save")


# -- reading the student's file on the trusted side ---------------------------------------------
# torch.load(weights_only=True) is the point of the test, so it runs on the trusted side (code in
# the sandbox could patch torch.load to say anything), but the file steers its work: records
# deflated 1000:1, or lists shared to describe 10**7 items in 2 KB.  So the zip directory is
# screened first (bounded work, nothing inflated), then the load and one walk run in a throwaway
# child (grader.testing.contained: RLIMIT_AS, a time limit, the result back in the wire format), which
# sends back only the tensors that could be a parameter or a moment.

#: Address space the child may add for loading (a checkpoint of the kit's model needs a few KB and
#: loads in a tenth of a second), and its time: what the trusted worker may wait for, per submission.
LOAD_MEMORY, LOAD_SECONDS = 512 << 20, 20.0
#: Objects the walk of the loaded checkpoint visits (each once): a pickle needs a byte or more per
#: object it makes, so no file that crosses the probe boundary (grader.boundary.messages.MAX_REPLY_BYTES)
#: reaches this; it stops a walk all the same if one ever did.
MAX_OBJECTS = 1 << 24
#: Tensors of a parameter's shape and dtype sent back (the kit's checkpoint holds 12).
MAX_CANDIDATES = 1000


def _zip_problem(data: bytes) -> str | None:
    """Why torch's zip format in `data` is refused before anything is inflated, or None.
    torch.save stores every record uncompressed, so a compressed record (which torch.load would
    inflate, 1 MiB into 1 GiB) is refused, and so are records that declare more bytes in all than
    the file holds (stored records that overlap describe the same bytes many times over).  Reads
    the zip directory only.  (Not torch's reader: the child's limits hold whatever it sees.)"""
    if data[:4] != b"PK\x03\x04":  # not the zip format: torch's legacy format is read under the child's limits
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        return f"its zip directory cannot be read ({str(exc)[:200]})"
    declared = 0
    for record in records:
        if record.compress_type != zipfile.ZIP_STORED or record.compress_size != record.file_size:
            return (f"its record {record.filename[:100]!r} is compressed (torch.save stores every record as is; "
                    "a compressed one would be inflated by torch.load)")
        declared += record.file_size
    if declared > len(data):
        return f"its records declare {declared} bytes in all, more than the file's {len(data)} (records that overlap)"
    return None


def _weights_only_candidates(data: bytes, kinds: set[tuple[tuple[int, ...], str]]) -> dict[str, Any]:
    """(Runs in the contained child.)  torch.load(data, weights_only=True), then one walk of what
    it built (each object once, by id: shared lists cost nothing more) into dicts, lists and
    tuples: {"tensors": the tensors whose (shape, dtype) is in `kinds`, copied, "count": every
    tensor found} or {"refused": why torch.load refused the file}."""
    try:
        obj = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - the refusal is the finding
        text = str(exc)
        reason = text.split("WeightsUnpickler error:", 1)[-1].strip().splitlines()[0] if text else type(exc).__name__
        return {"refused": reason[:300]}
    seen, todo, candidates, count = set(), [obj], [], 0
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if len(seen) > MAX_OBJECTS:
            return {"refused": f"the loaded checkpoint holds more than {MAX_OBJECTS} objects"}
        if type(item) is torch.Tensor:
            count += 1
            if (tuple(item.shape), str(item.dtype)) in kinds:
                if len(candidates) == MAX_CANDIDATES:
                    return {"refused": f"it holds more than {MAX_CANDIDATES} tensors of a parameter's shape"}
                candidates.append(item.detach().clone())
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return {"tensors": candidates, "count": count}


def _weights_only_tensors(data: Any, wanted: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors of the checkpoint file `data` (a uint8 tensor of its bytes) that have the shape
    and dtype of one of `wanted`; AssertionError if torch.load(weights_only=True) refuses the
    file, or if it is refused before (`_zip_problem`) or cannot be read within the child's limits."""
    assert_type(data, torch.Tensor, "the checkpoint file's bytes")
    if data.numel() == 0:
        raise AssertionError("save_checkpoint left an empty file at the path")
    raw = data.numpy().tobytes()
    problem = _zip_problem(raw)
    if problem is None:
        kinds = {(tuple(w.shape), str(w.dtype)) for w in wanted}
        got = contained(_weights_only_candidates, raw, kinds, memory=LOAD_MEMORY, seconds=LOAD_SECONDS)
        if got.error is not None:
            problem = f"it could not be loaded: {got.error}"
        elif not isinstance(got.value, dict) or not ("refused" in got.value or "tensors" in got.value):
            problem = "it could not be loaded"
        elif "refused" in got.value:
            problem = str(got.value["refused"])
    if problem is not None:
        raise AssertionError(f"torch.load(checkpoint, weights_only=True) refuses the file: {problem} "
                             "(store only tensors, numbers, strings and lists/tuples/dicts of them)")
    tensors = got.value["tensors"]
    assert_type(tensors, list, "the checkpoint's tensors")
    return [t for t in tensors if type(t) is torch.Tensor]


@pytest.mark.points(1)
def test_checkpoint_loads_with_weights_only(student):
    """the file loads with torch.load(weights_only=True) and holds the parameters and AdamW's moments"""
    steps = 4
    want = uninterrupted(11, steps)
    wanted = [(f"parameter {n}", p) for n, p in zip(PARAMS, want["params"])]
    wanted += [(f"AdamW's {key} of parameter {n}", s[key]) for n, s in zip(PARAMS, want["state"])
               for key in ("exp_avg", "exp_avg_sq")]
    tensors = _weights_only_tensors(student.probe("checkpointing.checkpoint_bytes", seed=11, steps=steps),
                                    [w for _, w in wanted])
    for what, w in wanted:
        if not any(t.shape == w.shape and t.dtype == w.dtype and torch.equal(t, w) for t in tensors):
            raise AssertionError(f"the checkpoint file holds no tensor equal to {what}")
    got = student.probe("checkpointing.malicious_checkpoint", seed=12, steps=2)
    what = ("load_checkpoint on a checkpoint holding a pickled object whose unpickling calls os.mkdir "
            "(a stand-in for arbitrary code)")
    if got["code_ran"]:
        raise AssertionError(f"{what}: the code ran; load with torch.load(..., weights_only=True), which refuses "
                             "pickled objects")
    if got["raised"] is None:
        raise AssertionError(f"{what}: it returned {safe_repr(got['returned'])} instead of refusing the file (raising)")
    # The gate: the program that loads must ask torch.load for weights_only=True, literally (a load
    # that runs the payload and then deletes its traces passes every check above).
    scope = student.scope("checkpointing", "load_checkpoint")
    unsafe = [f"line {n.lineno}" for node in scope.nodes for n in ast.walk(node)
              if isinstance(n, ast.Call) and static.dotted_name(n.func).rsplit(".", 1)[-1] == "load"
              and not any(k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                          for k in n.keywords)]
    assert not unsafe and not scope.breaches, (
        f"load_checkpoint must read with torch.load(..., weights_only=True); found a load without it at "
        f"{unsafe}" if unsafe else f"load_checkpoint reaches dynamic lookups: {scope.breaches}")


@pytest.mark.points(1)
def test_load_restores_every_generator(student):
    """after load_checkpoint, Python's, NumPy's and torch's generators continue from the saved states"""
    steps = 3
    got = student.probe("checkpointing.rng_round_trip", seed=5, steps=steps)
    assert_type(got, dict, "rng_round_trip")
    want = uninterrupted(5, steps, odd=True)["draws"]
    for via, kind in (("BytesIO", "an io.BytesIO"), ("pathlib", "a pathlib.Path")):
        _assert_draws(got.get(via), want, f"after an odd number of normal draws, save_checkpoint to {kind} and "
                                          "load_checkpoint")


@pytest.mark.points(1)
def test_file_object_round_trip(student):
    """save_checkpoint writes into a binary file object (left open); load_checkpoint reads BytesIO and open(..., "rb")"""
    _check_file_object(student, seed=8, steps=4, target="BytesIO")


def _check_file_object(student, *, seed: int, steps: int, target: str) -> None:
    """Save into a file object (`target` "BytesIO", or "file": one opened "wb") that already holds
    some bytes; load the checkpoint back from an io.BytesIO and from open(..., "rb")."""
    got = student.probe("checkpointing.file_object_round_trip", seed=seed, steps=steps,
                        **({} if target == "BytesIO" else {"target": target}))
    kind = "an io.BytesIO" if target == "BytesIO" else 'a file opened with open(path, "wb")'
    assert_type(got, dict, "file_object_round_trip")
    if got.get("closed") is not False:
        raise AssertionError(f"save_checkpoint closed the file object it was given ({kind}): the caller owns it")
    if got.get("prefix_kept") is not True:
        raise AssertionError(f"save_checkpoint into {kind} that already held some bytes did not write after them: "
                             "write into the file object itself, at its current position (do not seek to 0, do "
                             "not replace the file it came from)")
    want = uninterrupted(seed, steps)
    assert_type(got.get("results"), list, "loaded checkpoints")
    assert_equal(len(got["results"]), 2, "the number of loaded checkpoints")
    for result in got["results"]:
        what = f"loaded from {'an io.BytesIO' if result.get('source') == 'BytesIO' else 'a file opened rb'}"
        assert_equal(result.get("iteration"), steps, f"{what}: the iteration")
        _assert_state(result.get("state"), want["state"], f"{what}: optimizer state")
        _assert_params(result.get("params"), want["params"], what)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_cuda_generators_restored(student):
    """with CUDA, the checkpoint holds every GPU's generator state and load_checkpoint restores it"""
    seed, skip, count = 17, 7, 5
    got = student.probe("checkpointing.cuda_rng_round_trip", seed=seed, skip=skip, count=count)
    saved = torch.cuda.get_rng_state_all()
    try:  # the expected draws: the same seed and skip, here, without a checkpoint in between
        torch.cuda.manual_seed_all(seed)
        want = []
        for d in range(torch.cuda.device_count()):
            torch.rand(skip, device=f"cuda:{d}")
            want.append(torch.rand(count, device=f"cuda:{d}").cpu())
    finally:
        torch.cuda.set_rng_state_all(saved)
    assert_type(got, list, "cuda_rng_round_trip")
    assert_equal(len(got), len(want), "the number of CUDA devices whose next draws were read")
    for d, (g, w) in enumerate(zip(got, want)):
        assert_tensor(g, w, f"torch.rand({count}, device='cuda:{d}') after load_checkpoint (save "
                            "torch.cuda.get_rng_state_all() and restore it with torch.cuda.set_rng_state_all)")
