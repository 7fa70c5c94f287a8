"""What a sandbox may read besides the system: the kit bundle and the Python installation.

The kit bundle (`kit_bundle`) is a read-only copy of `grader/` and of what ships under `tests/`
(the probes and their helpers, never the public or hidden tests), built once per process: the
repository itself (solutions, hidden tests) is never mounted into a sandbox.  `python_mounts` are
the folders of the Python installation and its site-packages, bound (bubblewrap) or readable
(Landlock) read-only; a virtual environment inside the repository appears at `SANDBOX_VENV`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
from pathlib import Path

from grader import KIT_ROOT
from grader.sandbox.config import BUBBLEWRAP

_bundle: Path | None = None


def kit_bundle() -> Path:
    """A read-only copy of the `grader` package (subpackages included), `tests/probes/` and the
    other shipped helpers under `tests/` (built once per process; a trusted worker of `grader grade`
    takes the batch's, built once by the grading pool: ``KIT_BUNDLE``).

    The repository itself is never mounted into the sandbox: it holds `solutions/` and
    `tests/hidden/`.  The `grader` package and the probes ship to students anyway.
    """
    global _bundle
    if _bundle is not None and _bundle.is_dir():
        return _bundle
    handed = _handed_bundle()
    if handed is not None:  # the grading pool's, built once for the batch (removed by the pool)
        _bundle = handed
        return handed
    import compileall

    from grader.sandbox.scratch import owned_tempdir

    top = owned_tempdir("kit-bundle-")  # holds the owner file, out of the sandbox's sight, and `venv_config`
    os.chmod(top, 0o711)  # a sandbox uid goes through it to the bundle, never lists it
    root = top / "kit"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(KIT_ROOT / "grader", root / "grader", ignore=ignore)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    from grader.course.stubs import RELEASE_PATHS

    for rel in RELEASE_PATHS:  # what ships under tests/, except the public tests themselves
        src = KIT_ROOT / rel
        if not rel.startswith("tests/") or rel == "tests/public" or not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=ignore)
        else:
            shutil.copy2(src, root / rel)
    compileall.compile_dir(str(root), quiet=2)
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    _bundle = root
    atexit.register(shutil.rmtree, top, True)
    return root


def _handed_bundle() -> Path | None:
    """The bundle named by ``KIT_BUNDLE`` (the grading pool builds one per batch and hands it to its
    workers), when it is one: a folder of this user's holding the kit, that no one else can write."""
    import stat

    path = os.environ.get("KIT_BUNDLE")
    if not path:
        return None
    root = Path(path)
    try:
        for p in (root, root / "grader", root / "grader" / "__init__.py"):
            info = os.lstat(p)
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or stat.S_ISLNK(info.st_mode):
                return None
    except OSError:
        return None
    return root


def python_mounts() -> list[str]:
    """Folders of the Python installation and its site-packages (mounted / readable read-only)."""
    roots: set[Path] = set()
    exe = Path(sys.executable)
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix, exe.parent.parent,
              Path(os.path.realpath(exe)).parent.parent):
        roots.add(Path(p))
    prefix = Path(sys.prefix).resolve()
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        p = Path(entry).resolve()
        if p == KIT_ROOT or (KIT_ROOT in p.parents and prefix not in (p, *p.parents)):
            continue  # never the repository (solutions/, tests/hidden/)
        roots.add(p)
    out: list[Path] = []
    for p in sorted(roots, key=lambda r: len(r.parts)):
        if p in (Path("/"), Path("/tmp")) or str(p).startswith(("/usr/", "/proc/", "/dev/")) or str(p) == "/usr":
            continue  # (a venv under /tmp is fine: it is bound read-only on top of the private /tmp)
        if p == KIT_ROOT or (KIT_ROOT in p.parents and prefix not in (p, *p.parents)):
            continue
        if any(q in p.parents for q in out):
            continue
        out.append(p)
    return [str(p) for p in out]


SANDBOX_VENV = "/venv"


def venv_inside() -> str | None:
    """The virtual environment's folder when it lives inside the kit's repository (bubblewrap mounts
    it at /venv, so the worker's command line, /proc/1/cmdline inside, shows no host path)."""
    prefix = Path(sys.prefix).resolve()
    if sys.prefix == sys.base_prefix or KIT_ROOT not in prefix.parents or _exe_in(prefix) is None:
        return None
    return str(prefix) if str(prefix) in python_mounts() else None


def _exe_in(prefix: Path) -> Path | None:
    """sys.executable relative to `prefix` (its folder resolved, not the interpreter symlink)."""
    exe = Path(sys.executable)
    try:
        return (exe.parent.resolve() / exe.name).relative_to(prefix)
    except (ValueError, OSError):
        return None


def sandbox_site(launcher: str) -> list[str]:
    """`site_dirs` as the worker sees them (bubblewrap: a venv inside the kit at /venv)."""
    venv = venv_inside() if launcher == BUBBLEWRAP else None
    return [SANDBOX_VENV + d[len(venv):] if venv and d.startswith(venv + "/") else d for d in site_dirs()]


def sandbox_python(launcher: str) -> str:
    """The interpreter path the worker is started with (inside the sandbox's view)."""
    venv = venv_inside() if launcher == BUBBLEWRAP else None
    if venv:
        return str(Path(SANDBOX_VENV) / _exe_in(Path(venv)))
    return sys.executable


def site_dirs() -> list[str]:
    """The site-packages folders of this interpreter that lie in `python_mounts` (the sandbox's
    interpreter runs with -S, `sandbox_env` puts them on its PYTHONPATH: no .pth file of theirs runs)."""
    mounts = [Path(m) for m in python_mounts()]
    out = []
    for entry in sys.path:
        p = Path(entry) if entry else None
        if p and p.name in ("site-packages", "dist-packages") and p.is_dir() and any(m == p or m in p.parents for m in mounts):
            out.append(str(p))
    return list(dict.fromkeys(out))


def kit_install_files() -> list[str]:
    """Files of the Python installation whose text names the kit's folder: what an editable install
    (``pip install -e .``) leaves in site-packages (``__editable__*.pth``, its finder and that
    finder's cached bytecode, ``direct_url.json``, an ``.egg-link``).  No sandbox may read them
    (bubblewrap: /dev/null bound over each; Landlock: left out of its rules)."""
    needle = str(KIT_ROOT).encode()
    out = []
    for site in site_dirs():
        top = Path(site)
        candidates = [p for p in top.iterdir() if p.is_file()]
        candidates += list(top.glob("__pycache__/__editable__*")) + list(top.glob("*.dist-info/direct_url.json"))
        for p in candidates:
            try:
                if p.stat().st_size <= 2**20 and needle in p.read_bytes():
                    out.append(str(p))
            except OSError:
                continue
    return sorted(out)


def kit_root_visible() -> str:
    """Why a sandbox without a mount namespace (the landlock launcher) would learn the kit's folder
    ("" when it would not): a part of the Python installation inside it (a virtual environment in
    the repository).  The paths the interpreter loads from are in its own memory (the loader's list,
    ``sys.path``, ``__file__``), in /proc/self/map_files and behind any symlink to them: no rule
    hides them, only a path outside the kit does."""
    for path in [*python_mounts(), os.path.realpath(sys.executable)]:
        p = Path(path).resolve()
        if p == KIT_ROOT or KIT_ROOT in p.parents:
            return (f"the Python installation {path} lies inside the kit's folder, and a sandbox without a mount "
                    "namespace sees the paths it loads from")
    return ""


def venv_config(bundle: Path) -> Path | None:
    """A copy of the virtual environment's pyvenv.cfg with only what the interpreter needs (its
    ``command`` line names the venv's path: the kit's, for a venv inside it), next to `bundle`
    (bubblewrap binds it over /venv/pyvenv.cfg); None without a venv inside the kit."""
    venv = venv_inside()
    if venv is None:
        return None
    out = bundle.parent / "pyvenv.cfg"
    if not out.exists():
        keep = ("home", "include-system-site-packages", "version", "implementation")
        lines = [ln for ln in (Path(venv) / "pyvenv.cfg").read_text().splitlines()
                 if ln.split("=", 1)[0].strip() in keep]
        tmp = out.with_name(f".pyvenv.{os.getpid()}")
        tmp.write_text("\n".join(lines) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    return out
