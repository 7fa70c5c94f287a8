"""Mutants of solutions/checkpointing.py: each is one bug a student plausibly writes."""

from grader.authoring.mutants import edit


edit("load_without_rng", within="load_checkpoint",
     why="restores weights, optimizer and iteration but no RNG state (as if none was saved)",
     old=('    rng = state["rng"]\n'
          '    random.setstate(rng["python"])\n'
          '    numpy_state = rng["numpy"]\n'
          '    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
          '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))\n'
          '    torch.set_rng_state(rng["torch"])\n'
          '    if "cuda" in rng and torch.cuda.is_available():\n'
          '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
     new="")


edit("load_without_numpy_rng", within="load_checkpoint",
     why="forgets to restore NumPy's generator",
     old=('    numpy_state = rng["numpy"]\n'
          '    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
          '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))\n'),
     new="")


edit("load_without_python_rng", within="load_checkpoint",
     why="forgets to restore Python's `random` generator",
     old='    random.setstate(rng["python"])\n',
     new="")


edit("load_without_torch_rng", within="load_checkpoint",
     why="forgets to restore torch's generator (dropout masks differ)",
     old='    torch.set_rng_state(rng["torch"])\n',
     new="")


edit("load_without_optimizer", within="load_checkpoint",
     why="restores the model but not the optimizer state (AdamW restarts from zero moments)",
     edits=[('    optimizer.load_state_dict(state["optimizer"])\n', ""),
           ('numpy_state = rng["numpy"]', 's = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))'),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


edit("load_returns_nothing", within="load_checkpoint",
     why="restores everything but forgets to return the iteration",
     edits=[('numpy_state = rng["numpy"]', 's = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((s["name"], s["key"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"]))'),
           (("\n"
            '    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'
            '    return int(state["iteration"])'),
            "")])


edit("save_not_atomic", within="save_checkpoint",
     why="not atomic: torch.save straight to the path, so a crash leaves a truncated file",
     old=("    path = os.fspath(out)\n"
          "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
          '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")\n'
          "    try:\n"
          '        with os.fdopen(fd, "wb") as f:\n'
          "            torch.save(state, f)\n"
          "            f.flush()\n"
          "            os.fsync(f.fileno())\n"
          "        os.replace(tmp, path)\n"
          "    except BaseException:\n"
          "        if os.path.exists(tmp):\n"
          "            os.unlink(tmp)\n"
          "        raise"),
     new="    torch.save(state, out)")


edit("save_without_fsync", within="save_checkpoint",
     why="temp file and os.replace, but no flush/fsync before the rename",
     old=("            f.flush()\n"
          "            os.fsync(f.fileno())\n"),
     new="")


edit("save_numpy_state_raw", within="save_checkpoint",
     why="stores NumPy's state tuple as is (an ndarray): weights_only=True refuses the file",
     old=('"numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
          '                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
          '                  "cached_gaussian": float(numpy_state[4])},'),
     new='"numpy": numpy_state,')


edit("save_paths_only", within="save_checkpoint",
     why="handles only paths: opens `out` itself, so a file object fails",
     old=("    if not isinstance(out, (str, os.PathLike)):\n"
          "        torch.save(state, out)\n"
          "        return\n"),
     new="")


edit("save_consumes_rng", within="save_checkpoint",
     why="saves the RNG states after drawing a number from each (e.g. a random temp-file name from `random`)",
     old='prefix=f".{os.path.basename(path)}.", suffix=".tmp")',
     new='prefix=f".{os.path.basename(path)}.{random.randrange(1 << 30)}.", suffix=".tmp")')


# == from the 2026-11-22 breaking pass (written before reading the suites) ==
# ---------------------------------------------------------------- save_checkpoint
edit("save_checkpoint_str_only", within="save_checkpoint",
     why="treats only str as a path: a pathlib.Path is torch.save'd directly, not atomically",
     edits=[("if not isinstance(out, (str, os.PathLike)):", "if not isinstance(out, str):"),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_tmp_in_tempdir", within="save_checkpoint",
     why="temporary file in the system temp dir: os.replace fails across file systems",
     edits=[(("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            'fd, tmp = tempfile.mkstemp(suffix=".tmp")'),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_tmp_shutil_move", within="save_checkpoint",
     why="temporary file in the system temp dir, moved with shutil.move (a copy across file systems: not atomic)",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
              '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
             ("import shutil\n"
              "\n"
              '    fd, tmp = tempfile.mkstemp(suffix=".tmp")')),
            ("os.replace(tmp, path)",
             "shutil.move(tmp, path)")])


edit("save_checkpoint_direct", within="save_checkpoint",
     why="not atomic: torch.save straight to the path (fsync afterwards)",
     old=("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
          '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
     new="fd, tmp = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), path")


edit("save_checkpoint_no_cleanup", within="save_checkpoint",
     why="a failed save leaves its temporary file behind",
     old=("        if os.path.exists(tmp):\n"
          "            os.unlink(tmp)\n"),
     new="        pass\n")


edit("save_checkpoint_swallows", within="save_checkpoint",
     why="a failed save is swallowed (except: pass): the caller believes it saved",
     edits=[(("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           (("os.replace(tmp, path)\n"
            "    except BaseException:"),
            ("os.replace(tmp, out)\n"
            "    except Exception:")),
           (("\n"
            "        raise"),
            "")])


edit("save_checkpoint_draws_random", within="save_checkpoint",
     why="names the temporary file with random.getrandbits: saving draws from Python's generator",
     edits=[(("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            'tmp = f"{os.fspath(out)}.{random.getrandbits(32):08x}.tmp"'),
           ('with os.fdopen(fd, "wb") as f:', 'with open(tmp, "wb") as f:'),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_no_gauss", within="save_checkpoint",
     why="drops numpy's has_gauss/cached_gaussian: state after an odd number of normal draws is lost",
     edits=[(('"pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                  "cached_gaussian": float(numpy_state[4])},'),
            '"pos": int(numpy_state[2]), "has_gauss": 0, "cached_gaussian": 0.0},'),
           (("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_no_torch_rng", within="save_checkpoint",
     why="forgets torch's CPU generator (dropout masks differ after resuming)",
     edits=[('"torch": torch.get_rng_state(),', '"torch": torch.Generator().get_state(),'),
           (("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_closes_file", within="save_checkpoint",
     why="closes the file object it was given",
     edits=[(("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           ("torch.save(state, out)",
            ("with out:\n"
            "            torch.save(state, out)")),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_rewinds", within="save_checkpoint",
     why="rewinds the file object (seek(0)) instead of writing at its current position",
     edits=[(("    if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()\n'),
            ""),
           ("if not isinstance(out, (str, os.PathLike)):",
            ("if not isinstance(out, (str, os.PathLike)):\n"
            "        out.seek(0)")),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_raw_numpy", within="save_checkpoint",
     why="saves numpy's state as the raw tuple (ndarray inside): not loadable with weights_only=True",
     old=('"numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
          '                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
          '                  "cached_gaussian": float(numpy_state[4])},'),
     new='"numpy": numpy_state,')


edit("save_checkpoint_params_only", within="save_checkpoint",
     why="saves only the parameters (named_parameters), not the buffers",
     edits=[(("if torch.cuda.is_available():\n"
            '        rng["cuda"] = torch.cuda.get_rng_state_all()'),
            "params = {name: p.detach() for name, p in model.named_parameters()}"),
           (('state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),\n'
            '             "iteration": int(iteration), "rng": rng}'),
            'state = {"model": params, "optimizer": optimizer.state_dict(), "iteration": int(iteration), "rng": rng}'),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


# ---------------------------------------------------------------- load_checkpoint
edit("load_checkpoint_unsafe", within="load_checkpoint",
     why="torch.load(weights_only=False): a malicious checkpoint runs code",
     old='state = torch.load(src, weights_only=True, map_location="cpu")',
     new='state = torch.load(src, weights_only=False, map_location="cpu")')


edit("load_checkpoint_no_optimizer", within="load_checkpoint",
     why="does not restore the optimizer state",
     edits=[('    optimizer.load_state_dict(state["optimizer"])\n', ""),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


edit("load_checkpoint_numpy_3tuple", within="load_checkpoint",
     why="restores numpy with the 3-tuple (name, key, pos): drops the cached gaussian",
     old=('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
          '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
     new='np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32), numpy_state["pos"]))')


edit("load_checkpoint_no_python_rng", within="load_checkpoint",
     why="does not restore Python's random",
     edits=[('    random.setstate(rng["python"])\n', ""),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


edit("load_checkpoint_numpy_pos_reset", within="load_checkpoint",
     why="restores numpy's key but resets pos to 624 (a fresh twist)",
     edits=[('numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))',
            '624, numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


edit("load_checkpoint_iteration_tensor", within="load_checkpoint",
     why="returns the iteration as loaded (a tensor if saved as one) and saves it as a tensor",
     old=('if "cuda" in rng and torch.cuda.is_available():\n'
          '        torch.cuda.set_rng_state_all(rng["cuda"])\n'
          '    return int(state["iteration"])'),
     new='return torch.tensor(state["iteration"])')


edit("load_checkpoint_non_strict", within="load_checkpoint",
     why="non-strict model load that ignores missing buffers (strict=False)",
     edits=[('model.load_state_dict(state["model"])',
            'model.load_state_dict({k: v for k, v in state["model"].items() if "running" not in k}, strict=False)'),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


edit("load_checkpoint_python_gauss_dropped", within="load_checkpoint",
     why="rebuilds Python's state as (version, internal, None): drops random.gauss's cached value",
     edits=[('random.setstate(rng["python"])',
            ('version, internal, _ = rng["python"]\n'
            "    random.setstate((version, tuple(internal), None))")),
           (('    if "cuda" in rng and torch.cuda.is_available():\n'
            '        torch.cuda.set_rng_state_all(rng["cuda"])\n'),
            "")])


# --- breaking pass 2 (written without reading the tests) ---

edit("save_checkpoint_numpy_no_gauss", within="save_checkpoint",
     why="NumPy state saved without its cached Gaussian (has_gauss forced to 0)",
     edits=[(("rng = {\n"
            '        "python": random.getstate(),\n'
            '        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                  "cached_gaussian": float(numpy_state[4])},\n'
            '        "torch": torch.get_rng_state(),\n'
            "    }"),
            ('rng = {"python": random.getstate(),\n'
            '           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                     "pos": int(numpy_state[2]), "has_gauss": 0, "cached_gaussian": 0.0},\n'
            '           "torch": torch.get_rng_state()}')),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))")])


edit("save_checkpoint_numpy_gauss_float32", within="save_checkpoint",
     why="NumPy's cached Gaussian stored through a float32 tensor: off in the last bits",
     edits=[(("rng = {\n"
            '        "python": random.getstate(),\n'
            '        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                  "cached_gaussian": float(numpy_state[4])},\n'
            '        "torch": torch.get_rng_state(),\n'
            "    }"),
            ('rng = {"python": random.getstate(),\n'
            '           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                     "cached_gaussian": torch.tensor(numpy_state[4]).item()},\n'
            '           "torch": torch.get_rng_state()}')),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))")])


edit("save_checkpoint_python_no_gauss", within="save_checkpoint",
     why="Python's random state saved without gauss_next (the cached random.gauss value)",
     edits=[("    numpy_state = np.random.get_state()",
            ("    version, internal, _ = random.getstate()\n"
            "    numpy_state = np.random.get_state()")),
           (("rng = {\n"
            '        "python": random.getstate(),\n'
            '        "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                  "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                  "cached_gaussian": float(numpy_state[4])},\n'
            '        "torch": torch.get_rng_state(),\n'
            "    }"),
            ('rng = {"python": (version, internal, None),\n'
            '           "numpy": {"name": str(numpy_state[0]), "key": torch.from_numpy(numpy_state[1].astype(np.int64)),\n'
            '                     "pos": int(numpy_state[2]), "has_gauss": int(numpy_state[3]),\n'
            '                     "cached_gaussian": float(numpy_state[4])},\n'
            '           "torch": torch.get_rng_state()}')),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))")])


edit("save_checkpoint_tmp_in_tempdir_move", within="save_checkpoint",
     why="temp file in the system temp dir, then shutil.move: a copy across file systems, not atomic",
     edits=[("    numpy_state = np.random.get_state()",
            ("    import shutil\n"
            "    numpy_state = np.random.get_state()")),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp()"),
           ("os.replace(tmp, path)", "shutil.move(tmp, path)")])


edit("save_checkpoint_dirname_or_none", within="save_checkpoint",
     why="dir=os.path.dirname(path) or None: a bare file name puts the temp file in the temp dir",
     edits=[("    numpy_state = np.random.get_state()",
            ("    import shutil\n"
            "    numpy_state = np.random.get_state()")),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or None)"),
           ("os.replace(tmp, path)", "shutil.move(tmp, path)")])


edit("save_checkpoint_except_exception", within="save_checkpoint",
     why="cleans up on Exception only: a KeyboardInterrupt mid-save leaves the temp file",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))"),
           ("except BaseException:", "except Exception:")])


edit("save_checkpoint_swallows_error", within="save_checkpoint",
     why="removes the temp file on failure but swallows the error",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))"),
           ("except BaseException:", "except Exception:"),
           (("\n"
            "        raise"),
            "")])


edit("save_checkpoint_fsync_after_replace", within="save_checkpoint",
     why="renames first and fsyncs the final file afterwards: the rename can reach disk before the data",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))"),
           (("            f.flush()\n"
            "            os.fsync(f.fileno())\n"),
            ""),
           ("raise",
            ("raise\n"
            '    with open(path, "rb") as f:\n'
            "        os.fsync(f.fileno())"))])


edit("save_checkpoint_fsync_directory", within="save_checkpoint",
     why="fsyncs the directory, never the temp file's data",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            ("folder = os.path.dirname(os.path.abspath(path))\n"
            "    fd, tmp = tempfile.mkstemp(dir=folder)\n"
            "    os.close(fd)")),
           (('with os.fdopen(fd, "wb") as f:\n'
            "            torch.save(state, f)\n"
            "            f.flush()\n"
            "            os.fsync(f.fileno())"),
            "torch.save(state, tmp)"),
           ("raise",
            ("raise\n"
            "    dfd = os.open(folder, os.O_RDONLY)\n"
            "    try:\n"
            "        os.fsync(dfd)\n"
            "    finally:\n"
            "        os.close(dfd)"))])


edit("save_checkpoint_str_only_bp2", within="save_checkpoint",
     why="only str counts as a path: a pathlib.Path goes straight to torch.save, not atomically",
     edits=[("if not isinstance(out, (str, os.PathLike)):", "if not isinstance(out, str):"),
           (("path = os.fspath(out)\n"
            "    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)))"),
           ("os.replace(tmp, path)", "os.replace(tmp, out)")])


edit("save_checkpoint_rewinds_file", within="save_checkpoint",
     why="rewinds a file object to 0 before saving: overwrites what it already held",
     edits=[("        torch.save(state, out)",
            ("        out.seek(0)\n"
            "        torch.save(state, out)")),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))")])


edit("save_checkpoint_file_by_name", within="save_checkpoint",
     why="a file object with a .name is saved atomically to that name: the caller's open handle gets "
         "nothing",
     edits=[(("torch.save(state, out)\n"
            "        return"),
            ('name = getattr(out, "name", None)\n'
            "        if not isinstance(name, str):\n"
            "            torch.save(state, out)\n"
            "            return\n"
            "        out = name")),
           (("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))")])


edit("save_checkpoint_random_tmp_name", within="save_checkpoint",
     why="temp file named with random.getrandbits: the save advances Python's generator",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            'tmp = f"{path}.{random.getrandbits(32):08x}.tmp"'),
           ('with os.fdopen(fd, "wb") as f:', 'with open(tmp, "xb") as f:')])


edit("save_checkpoint_numpy_tmp_name", within="save_checkpoint",
     why="temp suffix from np.random.randint: saving advances NumPy's generator",
     edits=[(("fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),\n"
            '                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")'),
            'tmp = f"{path}.{int(np.random.randint(1 << 30))}.tmp"'),
           ('with os.fdopen(fd, "wb") as f:', 'with open(tmp, "xb") as f:')])


edit("load_checkpoint_keeps_param_groups", within="load_checkpoint",
     why="restores the optimizer's state tensors but keeps its current param_groups (a changed lr is lost)",
     edits=[('optimizer.load_state_dict(state["optimizer"])',
            ('optimizer.load_state_dict({"state": state["optimizer"]["state"],\n'
            '                               "param_groups": optimizer.state_dict()["param_groups"]})')),
           ('numpy_state = rng["numpy"]', 'n = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))')])


edit("load_checkpoint_parameters_only", within="load_checkpoint",
     why="loads only the parameters (strict=False): buffers such as BatchNorm's running stats stay fresh",
     edits=[('model.load_state_dict(state["model"])',
            ("names = {name for name, _ in model.named_parameters()}\n"
            '    model.load_state_dict({k: v for k, v in state["model"].items() if k in names}, strict=False)')),
           ('numpy_state = rng["numpy"]', 'n = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))')])


edit("load_checkpoint_numpy_three_parts", within="load_checkpoint",
     why="np.random.set_state with (name, key, pos) only: the cached Gaussian is dropped",
     edits=[('numpy_state = rng["numpy"]', 'n = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"]))')])


edit("load_checkpoint_python_no_gauss", within="load_checkpoint",
     why="random.setstate without gauss_next: the cached random.gauss value is lost",
     old=('random.setstate(rng["python"])\n'
          '    numpy_state = rng["numpy"]\n'
          '    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
          '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
     new=('version, internal, _ = rng["python"]\n'
          "    random.setstate((version, tuple(internal), None))\n"
          '    n = rng["numpy"]\n'
          '    np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))'))


edit("load_checkpoint_rewinds_file", within="load_checkpoint",
     why="rewinds a file object to 0: a checkpoint stored after other bytes is not found",
     edits=[('    state = torch.load(src, weights_only=True, map_location="cpu")',
            ('    if hasattr(src, "seek"):\n'
            "        src.seek(0)\n"
            '    state = torch.load(src, weights_only=True, map_location="cpu")')),
           ('numpy_state = rng["numpy"]', 'n = rng["numpy"]'),
           (('np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32),\n'
            '                         numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))'),
            'np.random.set_state((n["name"], n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))')])


# -- GPU-only: bugs on the CUDA path, which only the GPU tests can see ----------------------------

edit("save_without_cuda_generators", within="save_checkpoint", gpu=True,
     why="saves Python's, NumPy's and torch's CPU generator but not the CUDA generators: a resumed GPU run draws "
         "other dropout masks",
     old='    if torch.cuda.is_available():\n        rng["cuda"] = torch.cuda.get_rng_state_all()\n',
     new='')
