"""Correct but different formulations of solutions/checkpointing.py: every graded test must pass on each."""

import os
import random
import tempfile

import numpy as np
import torch

from grader.authoring.mutants import variant


@variant(replaces="save_checkpoint", why="NamedTemporaryFile(delete=False) + Path.replace; numpy key stored as an int32 view")
def save_checkpoint_named_tmp(model, optimizer, iteration, out):
    import pathlib
    name, key, pos, has_gauss, cached = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": name, "key": torch.from_numpy(key.view(np.int32).copy()), "pos": int(pos),
                     "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration, "rng": rng}
    if isinstance(out, (str, os.PathLike)):
        path = pathlib.Path(out)
        f = tempfile.NamedTemporaryFile(dir=path.resolve().parent, prefix=path.name, delete=False)
        try:
            with f:
                torch.save(state, f)
                f.flush()
                os.fdatasync(f.fileno())
            pathlib.Path(f.name).replace(path)
        except BaseException:
            pathlib.Path(f.name).unlink(missing_ok=True)
            raise
    else:
        torch.save(state, out)


@variant(replaces="save_checkpoint", why="fixed temporary name next to the file, os.open/os.write-free: open() + os.rename")
def save_checkpoint_fixed_tmp(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": dict(zip(("name", "key", "pos", "has_gauss", "cached_gaussian"),
                             (numpy_state[0], torch.tensor(numpy_state[1].tolist(), dtype=torch.int64),
                              int(numpy_state[2]), int(numpy_state[3]), float(numpy_state[4])))),
           "torch": torch.get_rng_state().clone()}
    if torch.cuda.is_available():
        rng["cuda"] = [s.clone() for s in torch.cuda.get_rng_state_all()]
    state = {"iteration": int(iteration), "rng": rng, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    if hasattr(out, "write"):
        torch.save(state, out)
        return
    path = os.path.abspath(os.fspath(out))
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".partial")
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise


@variant(replaces="load_checkpoint", why="opens paths itself, np.asarray(key, uint32), rebuilds the Python state tuple")
def load_checkpoint_alt(src, model, optimizer):
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as f:
            state = torch.load(f, weights_only=True, map_location=torch.device("cpu"))
    else:
        state = torch.load(src, map_location="cpu", weights_only=True)
    rng = state["rng"]
    version, internal, gauss = rng["python"]
    random.setstate((version, tuple(int(v) for v in internal), gauss))
    n = rng["numpy"]
    np.random.set_state((n["name"], np.asarray(n["key"], dtype=np.int64).astype(np.uint32), int(n["pos"]),
                         int(n["has_gauss"]), float(n["cached_gaussian"])))
    torch.set_rng_state(rng["torch"].to(torch.uint8))
    if rng.get("cuda") is not None and torch.cuda.is_available():
        for i, s in enumerate(rng["cuda"]):
            torch.cuda.set_rng_state(s, i)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["iteration"])


# --- breaking pass 2 ---

@variant(replaces="save_checkpoint", why="NamedTemporaryFile(dir=..., delete=False), fdatasync, os.rename; key kept as a uint32 tensor")
def save_checkpoint_named_temp(model, optimizer, iteration, out):
    name, key, pos, has_gauss, cached = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": name, "key": torch.from_numpy(key.copy()), "pos": int(pos),
                     "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"iteration": int(iteration), "rng": rng, "optimizer": optimizer.state_dict(), "model": model.state_dict()}
    if isinstance(out, (str, os.PathLike)):
        target = os.path.abspath(os.fspath(out))
        f = tempfile.NamedTemporaryFile(dir=os.path.dirname(target), delete=False)
        try:
            with f:
                torch.save(state, f)
                f.flush()
                os.fdatasync(f.fileno())
            os.rename(f.name, target)
        except BaseException:
            try:
                os.unlink(f.name)
            except FileNotFoundError:
                pass
            raise
    else:
        torch.save(state, out)


@variant(replaces="save_checkpoint", why="legacy=False NumPy state, a fixed sibling temp name opened with O_EXCL-less 'wb', Path.replace")
def save_checkpoint_pathlib(model, optimizer, iteration, out):
    from pathlib import Path
    np_state = np.random.get_state(legacy=False)
    rng = {"python": random.getstate(),
           "numpy": {"name": np_state["bit_generator"],
                     "key": torch.tensor(np_state["state"]["key"].tolist(), dtype=torch.int64),
                     "pos": int(np_state["state"]["pos"]), "has_gauss": int(np_state["has_gauss"]),
                     "cached_gaussian": float(np_state["gauss"])},
           "torch": torch.get_rng_state().clone()}
    if torch.cuda.is_available():
        rng["cuda"] = [s.clone() for s in torch.cuda.get_rng_state_all()]
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if hasattr(out, "write"):
        torch.save(state, out)
        return
    target = Path(out).absolute()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@variant(replaces="load_checkpoint", why="generators first, then optimizer and model; NumPy restored from its dict form; file objects read into memory")
def load_checkpoint_dict_numpy(src, model, optimizer):
    import io
    if hasattr(src, "read"):
        src = io.BytesIO(src.read())
    state = torch.load(src, weights_only=True, map_location="cpu")
    rng = state["rng"]
    version, internal, gauss_next = rng["python"]
    random.setstate((version, tuple(int(v) for v in internal), gauss_next))
    n = rng["numpy"]
    np.random.set_state({"bit_generator": n["name"],
                         "state": {"key": np.asarray(n["key"].tolist(), dtype=np.int64).astype(np.uint32), "pos": n["pos"]},
                         "has_gauss": n["has_gauss"], "gauss": n["cached_gaussian"]})
    torch.set_rng_state(rng["torch"].to(torch.uint8).cpu())
    if torch.cuda.is_available() and rng.get("cuda") is not None:
        torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
    optimizer.load_state_dict(state["optimizer"])
    model.load_state_dict(state["model"], strict=True)
    return int(state["iteration"])
