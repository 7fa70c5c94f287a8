"""Mutants of solutions/checkpointing.py: each is one bug a student plausibly writes."""

import os
import random
import tempfile

import numpy as np
import torch

from grader.mutants import edit, mutant


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


# == from the 2026-11-22 breaking pass (written before reading the suites) ==
# ---------------------------------------------------------------- save_checkpoint
@mutant(replaces="save_checkpoint", why="treats only str as a path: a pathlib.Path is torch.save'd directly, not atomically")
def save_checkpoint_str_only(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, str):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="temporary file in the system temp dir: os.replace fails across file systems")
def save_checkpoint_tmp_in_tempdir(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="temporary file in the system temp dir, moved with shutil.move (a copy across file systems: not atomic)")
def save_checkpoint_tmp_shutil_move(model, optimizer, iteration, out):
    import shutil
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    shutil.move(tmp, os.fspath(out))


@mutant(replaces="save_checkpoint", why="not atomic: torch.save straight to the path (fsync afterwards)")
def save_checkpoint_direct(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    with open(out, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(out, out)


@mutant(replaces="save_checkpoint", why="a failed save leaves its temporary file behind")
def save_checkpoint_no_cleanup(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    with os.fdopen(fd, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)


@mutant(replaces="save_checkpoint", why="a failed save is swallowed (except: pass): the caller believes it saved")
def save_checkpoint_swallows(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)


@mutant(replaces="save_checkpoint", why="names the temporary file with random.getrandbits: saving draws from Python's generator")
def save_checkpoint_draws_random(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    tmp = f"{os.fspath(out)}.{random.getrandbits(32):08x}.tmp"
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="drops numpy's has_gauss/cached_gaussian: state after an odd number of normal draws is lost")
def save_checkpoint_no_gauss(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": 0, "cached_gaussian": 0.0},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="forgets torch's CPU generator (dropout masks differ after resuming)")
def save_checkpoint_no_torch_rng(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.Generator().get_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="closes the file object it was given")
def save_checkpoint_closes_file(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        with out:
            torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="rewinds the file object (seek(0)) instead of writing at its current position")
def save_checkpoint_rewinds(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        out.seek(0)
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="saves numpy's state as the raw tuple (ndarray inside): not loadable with weights_only=True")
def save_checkpoint_raw_numpy(model, optimizer, iteration, out):
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="saves only the parameters (named_parameters), not the buffers")
def save_checkpoint_params_only(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {
        "python": random.getstate(),
        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                  "cached_gaussian": float(numpy_state[4])},
        "torch": torch.get_rng_state(),
    }
    params = {name: p.detach() for name, p in model.named_parameters()}
    state = {"model": params, "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- load_checkpoint
@mutant(replaces="load_checkpoint", why="torch.load(weights_only=False): a malicious checkpoint runs code")
def load_checkpoint_unsafe(src, model, optimizer):
    state = torch.load(src, weights_only=False, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="does not restore the optimizer state")
def load_checkpoint_no_optimizer(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="restores numpy with the 3-tuple (name, key, pos): drops the cached gaussian")
def load_checkpoint_numpy_3tuple(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32), numpy_state["pos"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="does not restore Python's random")
def load_checkpoint_no_python_rng(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="restores numpy's key but resets pos to 624 (a fresh twist)")
def load_checkpoint_numpy_pos_reset(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         624, numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="returns the iteration as loaded (a tensor if saved as one) and saves it as a tensor")
def load_checkpoint_iteration_tensor(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return torch.tensor(state["iteration"])


@mutant(replaces="load_checkpoint", why="non-strict model load that ignores missing buffers (strict=False)")
def load_checkpoint_non_strict(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict({k: v for k, v in state["model"].items() if "running" not in k}, strict=False)
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])




@mutant(replaces="load_checkpoint", why="rebuilds Python's state as (version, internal, None): drops random.gauss's cached value")
def load_checkpoint_python_gauss_dropped(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    version, internal, _ = rng["python"]
    random.setstate((version, tuple(internal), None))
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),
                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    return int(state["iteration"])


# --- breaking pass 2 (written without reading the tests) ---

@mutant(replaces="save_checkpoint", why="NumPy state saved without its cached Gaussian (has_gauss forced to 0)")
def save_checkpoint_numpy_no_gauss(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": 0, "cached_gaussian": 0.0},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="NumPy's cached Gaussian stored through a float32 tensor: off in the last bits")
def save_checkpoint_numpy_gauss_float32(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": torch.tensor(numpy_state[4]).item()},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="Python's random state saved without gauss_next (the cached random.gauss value)")
def save_checkpoint_python_no_gauss(model, optimizer, iteration, out):
    version, internal, _ = random.getstate()
    numpy_state = np.random.get_state()
    rng = {"python": (version, internal, None),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="temp file in the system temp dir, then shutil.move: a copy across file systems, not atomic")
def save_checkpoint_tmp_in_tempdir_move(model, optimizer, iteration, out):
    import shutil
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp()
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        shutil.move(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="dir=os.path.dirname(path) or None: a bare file name puts the temp file in the temp dir")
def save_checkpoint_dirname_or_none(model, optimizer, iteration, out):
    import shutil
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or None)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        shutil.move(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="cleans up on Exception only: a KeyboardInterrupt mid-save leaves the temp file")
def save_checkpoint_except_exception(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="removes the temp file on failure but swallows the error")
def save_checkpoint_swallows_error(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)


@mutant(replaces="save_checkpoint", why="renames first and fsyncs the final file afterwards: the rename can reach disk before the data")
def save_checkpoint_fsync_after_replace(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    with open(path, "rb") as f:
        os.fsync(f.fileno())


@mutant(replaces="save_checkpoint", why="fsyncs the directory, never the temp file's data")
def save_checkpoint_fsync_directory(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder)
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@mutant(replaces="save_checkpoint", why="only str counts as a path: a pathlib.Path goes straight to torch.save, not atomically")
def save_checkpoint_str_only_bp2(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, str):
        torch.save(state, out)
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="rewinds a file object to 0 before saving: overwrites what it already held")
def save_checkpoint_rewinds_file(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        out.seek(0)
        torch.save(state, out)
        return
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="a file object with a .name is saved atomically to that name: the caller's open handle gets nothing")
def save_checkpoint_file_by_name(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        name = getattr(out, "name", None)
        if not isinstance(name, str):
            torch.save(state, out)
            return
        out = name
    path = os.fspath(out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="temp file named with random.getrandbits: the save advances Python's generator")
def save_checkpoint_random_tmp_name(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    tmp = f"{path}.{random.getrandbits(32):08x}.tmp"
    try:
        with open(tmp, "xb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="save_checkpoint", why="temp suffix from np.random.randint: saving advances NumPy's generator")
def save_checkpoint_numpy_tmp_name(model, optimizer, iteration, out):
    numpy_state = np.random.get_state()
    rng = {"python": random.getstate(),
           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),
                     "cached_gaussian": float(numpy_state[4])},
           "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    path = os.fspath(out)
    tmp = f"{path}.{int(np.random.randint(1 << 30))}.tmp"
    try:
        with open(tmp, "xb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@mutant(replaces="load_checkpoint", why="restores the optimizer's state tensors but keeps its current param_groups (a changed lr is lost)")
def load_checkpoint_keeps_param_groups(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict({"state": state["optimizer"]["state"],
                               "param_groups": optimizer.state_dict()["param_groups"]})
    rng = state["rng"]
    random.setstate(rng["python"])
    n = rng["numpy"]
    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="loads only the parameters (strict=False): buffers such as BatchNorm's running stats stay fresh")
def load_checkpoint_parameters_only(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    names = {name for name, _ in model.named_parameters()}
    model.load_state_dict({k: v for k, v in state["model"].items() if k in names}, strict=False)
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    n = rng["numpy"]
    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="np.random.set_state with (name, key, pos) only: the cached Gaussian is dropped")
def load_checkpoint_numpy_three_parts(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    n = rng["numpy"]
    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="random.setstate without gauss_next: the cached random.gauss value is lost")
def load_checkpoint_python_no_gauss(src, model, optimizer):
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    version, internal, _ = rng["python"]
    random.setstate((version, tuple(internal), None))
    n = rng["numpy"]
    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


@mutant(replaces="load_checkpoint", why="rewinds a file object to 0: a checkpoint stored after other bytes is not found")
def load_checkpoint_rewinds_file(src, model, optimizer):
    if hasattr(src, "seek"):
        src.seek(0)
    state = torch.load(src, weights_only=True, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng = state["rng"]
    random.setstate(rng["python"])
    n = rng["numpy"]
    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(state["iteration"])


# -- GPU-only: bugs on the CUDA path, which only the GPU tests can see ----------------------------

edit("save_without_cuda_generators", within="save_checkpoint", gpu=True,
     why="saves Python's, NumPy's and torch's CPU generator but not the CUDA generators: a resumed GPU run draws "
         "other dropout masks",
     old='    if torch.cuda.is_available():\n        rng["cuda"] = torch.cuda.get_rng_state_all()\n',
     new='')
