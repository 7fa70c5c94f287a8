"""Scratch folders for probes, including one on *another file system* than the temp dir.

A checkpoint written into a folder on another file system than ``tempfile.gettempdir()``
exposes a temporary file created in the temp dir instead of next to the checkpoint: the final
``os.replace`` then fails with ``EXDEV`` (or ``shutil.move`` silently falls back to a copy,
which is not atomic).  The sandbox provides such a folder in ``$KIT_OTHER_FS_DIR``; elsewhere
`other_fs_dir` looks for one (``/dev/shm`` is a tmpfs on most Linux machines).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

#: Where to look for a writable folder on another file system, after $KIT_OTHER_FS_DIR.
CANDIDATES = ("/dev/shm", "/run/user/{uid}", "/var/tmp", ".")


def _writable(folder: str) -> bool:
    try:
        probe = tempfile.mkdtemp(prefix="kit-fs-check-", dir=folder)
    except OSError:
        return False
    os.rmdir(probe)
    return True


def _device(folder: str) -> int | None:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return None


def other_fs_dir() -> str | None:
    """A writable folder on another file system than the temp dir: ``$KIT_OTHER_FS_DIR`` when it
    is set and writable, else the first candidate (``/dev/shm``, ``/run/user/<uid>``,
    ``/var/tmp``, the working directory) that is writable and has another ``st_dev`` than
    ``tempfile.gettempdir()``; None when there is none (the caller then checks the temporary
    file's folder from the paths it records instead)."""
    env = os.environ.get("KIT_OTHER_FS_DIR")
    if env and os.path.isdir(env) and _writable(env):
        return env
    temp_dev = _device(tempfile.gettempdir())
    uid = os.getuid() if hasattr(os, "getuid") else 0
    for candidate in CANDIDATES:
        folder = os.path.abspath(candidate.format(uid=uid))
        dev = _device(folder)
        if dev is not None and dev != temp_dev and os.path.isdir(folder) and _writable(folder):
            return folder
    return None


@contextlib.contextmanager
def scratch(prefix: str = "kit-", other_fs: bool = False) -> Iterator[str]:
    """A fresh folder, removed afterwards: under `other_fs_dir()` when `other_fs` and there is
    one, else under the temp dir."""
    parent = other_fs_dir() if other_fs else None
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
