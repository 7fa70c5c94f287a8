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

from tests.probes._checkpointing_train import (build, dataset, draws, isolated, odd_draws, seed_everything,
                                               snapshot, train)
from tests.probes._scratch import other_fs_dir, scratch

# The fresh process starts from other generator states and other initial weights than the run
# that saved, so anything the checkpoint forgot shows up as a different trajectory.
OTHER_SEED = 7919


def _plain(value: Any) -> Any:
    """`value` if it can cross the probe boundary, else a short description of what it was."""
    from grader.boundary.messages import BoundaryError, check_data

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
    from grader.boundary.messages import encode

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
    from grader.boundary.messages import decode
    from grader.boundary.fresh import serve_fresh

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
    """Train, leave a cached Gaussian in NumPy's and Python's generators (`odd_draws`), save (to an
    io.BytesIO, then to a pathlib.Path), scramble every generator, load: the next draws, per way."""
    results = {}
    with scratch("kit-ckpt-") as folder:
        for via in ("BytesIO", "pathlib"):
            with isolated():
                seed_everything(seed)
                model, opt = build()
                train(model, opt, dataset(seed), steps)
                odd_draws()
                target: Any = io.BytesIO() if via == "BytesIO" else pathlib.Path(folder) / "checkpoint.pt"
                impl.checkpointing.save_checkpoint(model, opt, steps, target)
                seed_everything(seed + OTHER_SEED)
                draws()
                odd_draws()
                if via == "BytesIO":
                    target.seek(0)
                model, opt = build()
                impl.checkpointing.load_checkpoint(target, model, opt)
                results[via] = draws()
    return results


FILE_PREFIX = b"kit: bytes before the checkpoint\n"


def file_object_round_trip(impl, seed, steps, target="BytesIO"):
    """Save into an io.BytesIO (`target` "file": a real file opened "wb") that already holds
    FILE_PREFIX (so the checkpoint starts at its current position, not at 0); load back from a
    BytesIO holding the prefix too, positioned after it, and from a real file opened "rb"."""
    scratch = tempfile.mkdtemp()
    try:
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), steps)
            written = os.path.join(scratch, "written.pt")
            buffer: Any = io.BytesIO() if target == "BytesIO" else open(written, "wb")  # noqa: SIM115
            try:
                buffer.write(FILE_PREFIX)  # the caller's own bytes: the checkpoint goes after them
                impl.checkpointing.save_checkpoint(model, opt, steps, buffer)
                closed = buffer.closed
                if closed:
                    return {"closed": True, "results": []}
                if target == "BytesIO":
                    whole = buffer.getvalue()
            finally:
                buffer.close()
            if target != "BytesIO":
                with open(written, "rb") as f:
                    whole = f.read()
            prefix_kept = whole[:len(FILE_PREFIX)] == FILE_PREFIX
            data = whole[len(FILE_PREFIX):]
            results = []
            for source in ("BytesIO", "file"):
                seed_everything(seed + OTHER_SEED)
                model, opt = build()
                if source == "BytesIO":  # the whole buffer, positioned where the checkpoint starts
                    reader = io.BytesIO(whole)
                    reader.seek(len(whole) - len(data))
                    iteration = impl.checkpointing.load_checkpoint(reader, model, opt)
                else:
                    path = os.path.join(scratch, "checkpoint.pt")
                    with open(path, "wb") as f:
                        f.write(data)
                    with open(path, "rb") as f:
                        iteration = impl.checkpointing.load_checkpoint(f, model, opt)
                results.append({"source": source, "iteration": _plain(iteration), **snapshot(model, opt)})
        return {"closed": closed, "prefix_kept": prefix_kept, "results": results}
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


# -- atomic saves: an interrupted save, the folder of the temporary file ------------------------

class KitCrash(Exception):
    """Raised by the kit's torch.save stand-in halfway through writing (a simulated crash)."""


class KitInterrupt(KeyboardInterrupt):
    """Raised instead of KitCrash when asked: Ctrl-C halfway through torch.save (not an Exception)."""


def _fd_path(fd: int, near: tuple[str, ...] = ()) -> str:
    """The file descriptor `fd` names, as a real path: Linux's /proc/self/fd, macOS's F_GETPATH,
    else (Windows, or a Linux without /proc) the file with the same identity (device, inode) in one
    of the folders `near`, the temp dir or the working directory; "<fd N>" when none has it."""
    try:
        return os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        import fcntl

        return os.path.realpath(os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).split(b"\0", 1)[0]))
    except (ImportError, AttributeError, OSError):
        pass
    try:
        st = os.fstat(fd)
    except OSError:
        return f"<fd {fd}>"
    for folder in (*near, tempfile.gettempdir(), os.getcwd()):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            try:  # (os.stat: a directory listing's stat has no inode on Windows)
                other = os.stat(os.path.join(folder, name), follow_symlinks=False)
            except OSError:
                continue
            if other.st_ino and (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return os.path.realpath(os.path.join(folder, name))
    return f"<fd {fd}>"


def _target_path(f: Any, near: tuple[str, ...] = ()) -> str | None:
    """The file a torch.save / rename target names, as an absolute real path (None: in memory)."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.realpath(os.fspath(f))
    name = getattr(f, "name", None)
    if isinstance(name, int):  # os.fdopen(fd): the name is the descriptor
        return _fd_path(name, near)
    if isinstance(name, (str, bytes)):
        return os.path.realpath(os.fsdecode(name))
    return None


def _synced_path(fd: Any, near: tuple[str, ...] = ()) -> str | None:
    """The file an os.fsync / os.fdatasync argument (a descriptor or an object with fileno()) names."""
    if not isinstance(fd, int):
        try:
            fd = fd.fileno()
        except Exception:  # noqa: BLE001 - reported as unknown
            return None
    return _fd_path(fd, near)


def _watch_saves(impl, record: dict[str, list], crash: list[bool], near: tuple[str, ...] = ()):
    """Wrap torch.save, os.replace, os.rename, shutil.move, os.fsync and os.fdatasync: record the
    paths they are given (a sync as [path, how many renames came before it, whether a torch.save to
    that path had finished before it]); when crash[0] is true torch.save writes half the bytes and
    raises crash[1] (KitCrash unless told).  Returns undo()."""
    finished: list[str | None] = []  # the paths torch.save has written completely so far
    real = {"save": torch.save, "replace": os.replace, "rename": os.rename, "move": shutil.move,
            "fsync": os.fsync, "fdatasync": os.fdatasync}

    def save(obj, f, *args, **kwargs):
        record["saved_to"].append(_target_path(f, near))
        if not crash[0]:
            out = real["save"](obj, f, *args, **kwargs)
            finished.append(record["saved_to"][-1])
            return out
        buffer = io.BytesIO()
        real["save"](obj, buffer, *args, **kwargs)
        half = buffer.getvalue()[: len(buffer.getvalue()) // 2]
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(half)
        else:
            f.write(half)
            getattr(f, "flush", lambda: None)()
        raise (crash[1] if len(crash) > 1 else KitCrash)("simulated crash halfway through torch.save")

    def renamer(kind):
        def rename(src, dst, *args, **kwargs):
            record["renames"].append([kind, _target_path(src, near), _target_path(dst, near)])
            return real[kind](src, dst, *args, **kwargs)
        return rename

    def syncer(kind):
        def sync(fd, *args, **kwargs):
            path = _synced_path(fd, near)
            record["syncs"].append([path, len(record["renames"]), path is not None and path in finished])
            return real[kind](fd, *args, **kwargs)
        return sync

    wrappers = {"replace": renamer("replace"), "rename": renamer("rename"), "move": renamer("move"),
                "fsync": syncer("fsync"), "fdatasync": syncer("fdatasync")}
    torch.save = torch.serialization.save = save
    os.replace, os.rename, shutil.move = wrappers["replace"], wrappers["rename"], wrappers["move"]
    os.fsync, os.fdatasync = wrappers["fsync"], wrappers["fdatasync"]
    module = impl.checkpointing
    aliased = []
    for name, value in list(vars(module).items()):  # `from os import replace` in the student's module
        for kind, original in real.items():
            if value is original:
                aliased.append((name, value))
                setattr(module, name, save if kind == "save" else wrappers[kind])

    def undo():
        torch.save = torch.serialization.save = real["save"]
        os.replace, os.rename, shutil.move = real["replace"], real["rename"], real["move"]
        os.fsync, os.fdatasync = real["fsync"], real["fdatasync"]
        for name, value in aliased:
            setattr(module, name, value)

    return undo


def interrupted_save(impl, seed, steps, via, interrupt=False):
    """Save after `steps` steps to a path (`via` "str", "pathlib", or "bare": the str
    "checkpoint.pt" with the folder as the working directory) in a folder on another file
    system than the temp dir when there is one; train on; save again to the same path with
    torch.save writing half the bytes and raising KitCrash (KitInterrupt, a KeyboardInterrupt,
    when `interrupt`).  Returns what each save did, the folder's files afterwards, the paths
    torch.save, the renames and the fsyncs were given, and what load_checkpoint makes of the
    path afterwards."""
    record: dict[str, list] = {"saved_to": [], "renames": [], "syncs": []}
    crash: list[Any] = [False, KitInterrupt if interrupt else KitCrash]
    cwd = os.getcwd()
    with scratch("kit-ckpt-", other_fs=True) as folder:
        folder = os.path.realpath(folder)
        path = os.path.join(folder, "checkpoint.pt")
        target: Any = {"pathlib": pathlib.Path(path), "bare": "checkpoint.pt"}.get(via, path)
        result: dict[str, Any] = {"folder": folder, "other_fs": other_fs_dir() is not None,
                                  "first": "saved", "second": "returned normally"}
        undo = _watch_saves(impl, record, crash, near=(folder,))
        try:
            if via == "bare":
                os.chdir(folder)
            with isolated():
                seed_everything(seed)
                model, opt = build()
                data = dataset(seed)
                train(model, opt, data, steps)
                try:
                    impl.checkpointing.save_checkpoint(model, opt, steps, target)
                except Exception as exc:  # noqa: BLE001 - reported as data
                    result["first"] = f"{type(exc).__name__}: {exc}"[:500]
                train(model, opt, data, 2)
                crash[0] = True
                try:
                    impl.checkpointing.save_checkpoint(model, opt, steps + 2, target)
                except (KitCrash, KitInterrupt):
                    result["second"] = "KitCrash"
                except Exception as exc:  # noqa: BLE001
                    result["second"] = f"{type(exc).__name__}: {exc}"[:500]
        finally:
            crash[0] = False
            undo()
            os.chdir(cwd)
        result["files"] = sorted(os.listdir(folder))
        with isolated():
            seed_everything(seed + OTHER_SEED)
            model, opt = build()
            try:
                iteration = impl.checkpointing.load_checkpoint(path if via == "bare" else target, model, opt)
                result["after"] = {"iteration": _plain(iteration), **snapshot(model, opt)}
            except Exception as exc:  # noqa: BLE001
                result["after"] = _error(exc)
    return {**result, **record}


# -- safe loading -------------------------------------------------------------------------------

def malicious_checkpoint(impl, seed, steps):
    """The student's own checkpoint with one more entry whose unpickling calls os.mkdir(marker)
    (a harmless stand-in for code execution); load_checkpoint on it: did it raise, did it run?"""
    import pickle

    class Payload:
        def __init__(self, marker: str):
            self.marker = marker

        def __reduce__(self):
            return (os.mkdir, (self.marker,))

    with scratch("kit-ckpt-") as folder:
        marker = os.path.join(folder, "code-ran")
        path = os.path.join(folder, "checkpoint.pt")
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), steps)
            buffer = io.BytesIO()
            impl.checkpointing.save_checkpoint(model, opt, steps, buffer)
            buffer.seek(0)
            state = torch.load(buffer, weights_only=True, map_location="cpu")
            if isinstance(state, dict):
                state["kit_payload"] = Payload(marker)
            else:
                state = {"checkpoint": state, "kit_payload": Payload(marker)}
            torch.save(state, path, pickle_module=pickle)
            model, opt = build()
            try:
                iteration = impl.checkpointing.load_checkpoint(path, model, opt)
                raised = None
                returned = _plain(iteration)
            except Exception as exc:  # noqa: BLE001 - the refusal is what we want
                raised, returned = f"{type(exc).__name__}: {str(exc)[:200]}", None
        return {"raised": raised, "returned": returned, "code_ran": os.path.exists(marker)}


# -- saving leaves the generators alone ---------------------------------------------------------

def save_leaves_generators(impl, seed, steps):
    """Train, leave cached Gaussians (`odd_draws`), save to a path and to an io.BytesIO: the next
    draws of every generator (a save must not draw random numbers)."""
    with scratch("kit-ckpt-") as folder:
        with isolated():
            seed_everything(seed)
            model, opt = build()
            train(model, opt, dataset(seed), steps)
            odd_draws()
            impl.checkpointing.save_checkpoint(model, opt, steps, os.path.join(folder, "checkpoint.pt"))
            impl.checkpointing.save_checkpoint(model, opt, steps, io.BytesIO())
            return draws()


# -- CUDA generators ----------------------------------------------------------------------------

def cuda_rng_round_trip(impl, seed, skip, count):
    """Seed every CUDA generator with `seed`, draw `skip` numbers on each device, save (io.BytesIO),
    reseed the CUDA generators otherwise and draw, load: the next `count` draws per device (CPU)."""
    devices = torch.cuda.device_count()
    saved = torch.cuda.get_rng_state_all()
    try:
        with isolated():
            seed_everything(seed)
            model, opt = build()
            torch.cuda.manual_seed_all(seed)
            for d in range(devices):
                torch.rand(skip, device=f"cuda:{d}")
            buffer = io.BytesIO()
            impl.checkpointing.save_checkpoint(model, opt, 0, buffer)
            torch.cuda.manual_seed_all(seed + OTHER_SEED)
            for d in range(devices):
                torch.rand(5, device=f"cuda:{d}")
            buffer.seek(0)
            model, opt = build()
            impl.checkpointing.load_checkpoint(buffer, model, opt)
            return [torch.rand(count, device=f"cuda:{d}").cpu() for d in range(devices)]
    finally:
        torch.cuda.set_rng_state_all(saved)
