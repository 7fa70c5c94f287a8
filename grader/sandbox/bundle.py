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
import tempfile
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

    root = Path(tempfile.mkdtemp(prefix=f"kit-bundle-{os.getpid()}-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(KIT_ROOT / "grader", root / "grader", ignore=ignore)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    from grader.stubs import RELEASE_PATHS

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
    atexit.register(shutil.rmtree, root, True)
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


def sandbox_python(launcher: str) -> str:
    """The interpreter path the worker is started with (inside the sandbox's view)."""
    venv = venv_inside() if launcher == BUBBLEWRAP else None
    if venv:
        return str(Path(SANDBOX_VENV) / _exe_in(Path(venv)))
    return sys.executable
