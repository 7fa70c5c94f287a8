"""Probes for the `checkpointing` module.

The training loop (tests/probes/_checkpointing_train.py) is the kit's own and draws from
Python's, NumPy's and torch's generators at every step; the code under test only saves and
loads.  Models are torch.nn modules and optimizers torch.optim ones, so these probes depend on
no other assignment module.
"""

from __future__ import annotations

import copy
import io
import os
import pathlib
import shutil
import tempfile
from typing import Any

import torch

from tests.probes._checkpointing_train import (build, dataset, draws, isolated, seed_everything, snapshot,
                                               train)

# The fresh process starts from other generator states and other initial weights than the run
# that saved, so anything the checkpoint forgot shows up as a different trajectory.
OTHER_SEED = 7919


def _plain(value: Any) -> Any:
    """`value` if it can cross the probe boundary, else a short description of what it was."""
    from grader.protocol import BoundaryError, check_data

    try:
        check_data(value)
        return value
    except BoundaryError:
        return f"<{type(value).__module__}.{type(value).__qualname__}> {value!r}"[:200]


def _error(exc: BaseException) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}"[:1000], "not_implemented": isinstance(exc, NotImplementedError)}


def _interrupt_torch_save(impl, marker: str) -> None:
    """Make torch.save write half of its bytes, then kill this process (a crash mid-save)."""
    real_save = torch.save

    def save_half_then_die(obj, f, *args, **kwargs):
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        half = buffer.getvalue()[: len(buffer.getvalue()) // 2]
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(half)
        else:
            f.write(half)
            getattr(f, "flush", lambda: None)()
        with open(marker, "w"):
            pass
        os._exit(3)

    torch.save = save_half_then_die
    torch.serialization.save = save_half_then_die
    module = impl.checkpointing
    for name, value in list(vars(module).items()):  # `from torch import save` in the student's module
        if value is real_save:
            setattr(module, name, save_half_then_die)


def _skip_dynamo_import() -> None:
    """Speed only: torch.optim's methods import torch._dynamo (seconds) on first use, merely to
    mark themselves "not for torch.compile".  In a throwaway process that never compiles, tell
    them they are already marked.  (If torch changes this, the import simply happens.)"""
    for member in vars(torch.optim.Optimizer).values():
        fn, code = getattr(member, "__wrapped__", None), getattr(member, "__code__", None)
        if fn is not None and code is not None and "disable_fn" in code.co_varnames:
            setattr(fn, "__dynamo_disable", fn)


def _training_state(model, opt) -> dict[str, Any]:
    """Everything that decides the rest of a run, as plain data: weights, optimizer state dict
    (param_groups included) and the three generators' states."""
    import random

    import numpy as np

    name, key, pos, has_gauss, cached = np.random.get_state()
    return {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "optimizer": copy.deepcopy(opt.state_dict()),
            "rng": {"python": random.getstate(), "torch": torch.get_rng_state(),
                    "numpy": [str(name), torch.from_numpy(key.astype("int64")), int(pos), int(has_gauss), float(cached)]}}


def _continue(state: dict[str, Any], seed: int, steps: int) -> dict[str, Any]:
    """Rebuild the run from `_training_state` data and train `steps` more steps (kit code only)."""
    import random

    import numpy as np

    model, opt = build()
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    name, key, pos, has_gauss, cached = state["rng"]["numpy"]
    random.setstate(state["rng"]["python"])
    np.random.set_state((name, key.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["rng"]["torch"])
    train(model, opt, dataset(seed), steps)
    return {**snapshot(model, opt), "draws": draws()}


def load_then_crash(impl, path, result_path, marker, seed):
    """(Runs in a fresh process.)  Load the checkpoint at `path` into a freshly initialised model
    whose generators hold other states, and write the training state it leaves to `result_path`;
    then save again to `path` with torch.save dying halfway."""
    from grader.protocol import encode

    _skip_dynamo_import()
    torch.set_num_threads(1)  # as in the run it is compared with (and few threads in a sandbox)
    seed_everything(seed + OTHER_SEED)
    model, opt = build()
    try:
        iteration = impl.checkpointing.load_checkpoint(path, model, opt)
        loaded = {"iteration": _plain(iteration), "state": _training_state(model, opt)}
    except Exception as exc:  # noqa: BLE001 - reported as data by the test
        loaded = _error(exc)
    with open(result_path, "wb") as f:
        f.write(encode(loaded))
    _interrupt_torch_save(impl, marker)
    impl.checkpointing.save_checkpoint(model, opt, 10**6, path)
    return "saved without calling torch.save"


def resume_in_fresh_process(impl, seed, total, k):
    """Train k steps here and save to a path.  In a fresh Python process: load the checkpoint
    (into a freshly initialised model, with every generator in another state), hand back the
    complete training state that leaves (weights, optimizer state dict, generator states), then
    start another save to the same path and get killed halfway through torch.save.  Back here,
    train total - k more steps from exactly that state.  (Training on in the fresh process
    would give the same numbers; it would also cost it seconds of one-off torch.optim imports.)

    Returns {"resumed": iteration, snapshot and next draws (or an error), "interrupted":
    whether the second save was cut off inside torch.save, "child": the fresh process's own
    outcome, "after_crash": what the student's load_checkpoint makes of the file left at the
    path}.
    """
    from grader.protocol import decode
    from grader.serve import serve_fresh

    scratch = tempfile.mkdtemp()
    try:
        path = os.path.join(scratch, "checkpoint.pt")
        result_path, marker = os.path.join(scratch, "loaded.pt"), os.path.join(scratch, "interrupted")
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), k)
            impl.checkpointing.save_checkpoint(model, opt, k, path)

        child: Any = "replied"
        try:
            child = serve_fresh(str(impl.folder), "checkpointing.load_then_crash",
                                {"path": path, "result_path": result_path, "marker": marker, "seed": seed})
        except Exception as exc:  # noqa: BLE001 - the expected death, or the student's error
            child = f"{type(exc).__name__}: {exc}"[:1000]
        if not os.path.exists(result_path):
            resumed: dict[str, Any] = {"error": f"the fresh process produced no result ({child})", "not_implemented": False}
        else:
            with open(result_path, "rb") as f:
                loaded = decode(f.read())
            if "error" in loaded:
                resumed = loaded
            else:
                with isolated():
                    try:
                        resumed = {"iteration": loaded["iteration"], **_continue(loaded["state"], seed, total - k)}
                    except Exception as exc:  # noqa: BLE001 - e.g. a state dict of the wrong shape
                        resumed = _error(exc)

        with isolated():
            seed_everything(seed + 2 * OTHER_SEED)
            model, opt = build()
            try:
                iteration = impl.checkpointing.load_checkpoint(path, model, opt)
                after = {"iteration": _plain(iteration), **snapshot(model, opt)}
            except Exception as exc:  # noqa: BLE001
                after = _error(exc)
        return {"resumed": resumed, "interrupted": os.path.exists(marker), "child": _plain(child),
                "after_crash": after}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def checkpoint_bytes(impl, seed, steps):
    """Train `steps` steps, save to a path; the file's bytes (uint8 tensor) and what was saved."""
    scratch = tempfile.mkdtemp()
    try:
        path = os.path.join(scratch, "checkpoint.pt")
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), steps)
            impl.checkpointing.save_checkpoint(model, opt, steps, path)
        with open(path, "rb") as f:
            data = f.read()
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).clone() if data else torch.zeros(0, dtype=torch.uint8)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def rng_round_trip(impl, seed, steps):
    """Train, save (to a file object), scramble every generator, load: the next draws."""
    with isolated():
        seed_everything(seed)
        model, opt = build()
        train(model, opt, dataset(seed), steps)
        buffer = io.BytesIO()
        impl.checkpointing.save_checkpoint(model, opt, steps, buffer)
        seed_everything(seed + OTHER_SEED)
        draws()
        buffer.seek(0)
        model, opt = build()
        impl.checkpointing.load_checkpoint(buffer, model, opt)
        return draws()


def file_object_round_trip(impl, seed, steps):
    """Save into an io.BytesIO; load back from it and from a real file opened "rb"."""
    scratch = tempfile.mkdtemp()
    try:
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), steps)
            buffer = io.BytesIO()
            impl.checkpointing.save_checkpoint(model, opt, steps, buffer)
            closed = buffer.closed
            if closed:
                return {"closed": True, "results": []}
            data = buffer.getvalue()
            results = []
            for source in ("BytesIO", "file"):
                seed_everything(seed + OTHER_SEED)
                model, opt = build()
                if source == "BytesIO":
                    iteration = impl.checkpointing.load_checkpoint(io.BytesIO(data), model, opt)
                else:
                    path = os.path.join(scratch, "checkpoint.pt")
                    with open(path, "wb") as f:
                        f.write(data)
                    with open(path, "rb") as f:
                        iteration = impl.checkpointing.load_checkpoint(f, model, opt)
                results.append({"source": source, "iteration": _plain(iteration), **snapshot(model, opt)})
        return {"closed": closed, "results": results}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def resume_in_process(impl, seed, total, k, optimizer, via):
    """Train k steps, save (`via` "str", "pathlib" or "BytesIO"), then in this process build a
    fresh model with scrambled generators, load, train total - k steps."""
    scratch = tempfile.mkdtemp()
    try:
        path = os.path.join(scratch, "checkpoint.pt")
        target: Any = {"str": path, "pathlib": pathlib.Path(path), "BytesIO": io.BytesIO()}[via]
        with isolated():
            seed_everything(seed)
            model, opt = build(optimizer)
            train(model, opt, dataset(seed), k)
            impl.checkpointing.save_checkpoint(model, opt, k, target)
            del model, opt
            if via == "BytesIO":
                target.seek(0)
            seed_everything(seed + OTHER_SEED)
            model, opt = build(optimizer)
            iteration = impl.checkpointing.load_checkpoint(target, model, opt)
            train(model, opt, dataset(seed), total - k)
            return {"iteration": _plain(iteration), **snapshot(model, opt), "draws": draws()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def overwrite(impl, seed, first, second):
    """Save at iteration `first`, train on, save again to the same path: what the folder holds
    afterwards and what loading the path gives."""
    scratch = tempfile.mkdtemp()
    try:
        path = os.path.join(scratch, "checkpoint.pt")
        with isolated():
            seed_everything(seed)
            model, opt = build()
            data = dataset(seed)
            train(model, opt, data, first)
            impl.checkpointing.save_checkpoint(model, opt, first, pathlib.Path(path))
            train(model, opt, data, second - first)
            impl.checkpointing.save_checkpoint(model, opt, second, path)
            files = sorted(os.listdir(scratch))
            seed_everything(seed + OTHER_SEED)
            model, opt = build()
            iteration = impl.checkpointing.load_checkpoint(path, model, opt)
            return {"files": files, "iteration": _plain(iteration), **snapshot(model, opt), "draws": draws()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
