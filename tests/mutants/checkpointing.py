"""Mutants of solutions/checkpointing.py: each is one bug a student plausibly writes."""

import os
import random
import tempfile

import numpy as np
import torch

from grader.mutants import mutant


@mutant(replaces="load_checkpoint", why="restores weights, optimizer and iteration but no RNG state (as if none was saved)")
def load_without_rng(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="forgets to restore NumPy's generator")
def load_without_numpy_rng(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    random.setstate(state["rng"]["python"])
    torch.set_rng_state(state["rng"]["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="forgets to restore Python's `random` generator")
def load_without_python_rng(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    s = state["rng"]["numpy"]
    np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))
    torch.set_rng_state(state["rng"]["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="forgets to restore torch's generator (dropout masks differ)")
def load_without_torch_rng(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    random.setstate(state["rng"]["python"])
    s = state["rng"]["numpy"]
    np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="restores the model but not the optimizer state (AdamW restarts from zero moments)")
def load_without_optimizer(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    rng = state["rng"]
    random.setstate(rng["python"])
    s = rng["numpy"]
    np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="restores everything but forgets to return the iteration")
def load_returns_nothing(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    s = rng["numpy"]
    np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])


@mutant(replaces="save_checkpoint", why="not atomic: torch.save straight to the path, so a crash leaves a truncated file")
def save_not_atomic(model, optimizer, iteration, out):
    s = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": s[0], "key": torch.from_numpy(s[1].astype(np.int64)), "pos": int(s[2]),
                     "has_gauss": int(s[3]), "cached_gaussian": float(s[4])},
           "torch": torch.get_rng_state()}
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration),
                "rng": rng}, out)


@mutant(replaces="save_checkpoint", why="temp file and os.replace, but no flush/fsync before the rename")
def save_without_fsync(model, optimizer, iteration, out):
    s = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": s[0], "key": torch.from_numpy(s[1].astype(np.int64)), "pos": int(s[2]),
                     "has_gauss": int(s[3]), "cached_gaussian": float(s[4])},
           "torch": torch.get_rng_state()}
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    tmp = os.fspath(out) + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, out)


@mutant(replaces="save_checkpoint", why="stores NumPy's state tuple as is (an ndarray): weights_only=True refuses the file")
def save_numpy_state_raw(model, optimizer, iteration, out):
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration),
             "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    with os.fdopen(fd, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)


@mutant(replaces="save_checkpoint", why="handles only paths: opens `out` itself, so a file object fails")
def save_paths_only(model, optimizer, iteration, out):
    s = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": s[0], "key": torch.from_numpy(s[1].astype(np.int64)), "pos": int(s[2]),
                     "has_gauss": int(s[3]), "cached_gaussian": float(s[4])},
           "torch": torch.get_rng_state()}
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    with os.fdopen(fd, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)


@mutant(replaces="save_checkpoint", why="saves the RNG states after drawing a number from each (e.g. a random temp-file name from `random`)")
def save_consumes_rng(model, optimizer, iteration, out):
    s = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": s[0], "key": torch.from_numpy(s[1].astype(np.int64)), "pos": int(s[2]),
                     "has_gauss": int(s[3]), "cached_gaussian": float(s[4])},
           "torch": torch.get_rng_state()}
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    tmp = f"{os.fspath(out)}.{random.randrange(1 << 30)}.tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)
