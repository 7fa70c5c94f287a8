"""Correct but different formulations of solutions/checkpointing.py: every graded test must pass on each."""

import os
import random
import tempfile

import numpy as np
import torch

from grader.mutants import variant


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
