"""The scratch folders of a landlock or rlimits sandbox on the host (bubblewrap's are its own tmpfs).

`make_scratch`: TMPDIR on a tmpfs where /dev/shm has room (as bubblewrap's /tmp), the second on
another filesystem; each one a folder of the sandbox's uid, mode 0700, inside a parent of its own named at random, owned by root and only
traversable by the sandbox's group (mode 0710; without root: the grader's own 0700 folder,
Landlock keeping the sandboxes apart): a submission cannot open its parent to another uid, and
nothing in the names counts sandboxes or shows the grader's pid.  What they hold is watched from
outside against bubblewrap's tmpfs sizes (`grader.sandbox.watch.Monitor`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

SCRATCH_PREFIX = "kit-scratch-"
#: The file in a host folder of the grader's holding the pid of the process that made it (for the sweeps
#: of folders a killed grader left): the pid is never part of a name a sandbox could see.
OWNER = ".owner"
_swept = False


def owned_tempdir(prefix: str) -> Path:
    """A new folder in the temporary directory named `prefix` + random letters only (no pid: a sandbox
    sees the names of the folders it is given), holding `OWNER` (this process's pid, mode 0600) for
    `owner_alive`; the folder's other contents are the caller's."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    fd = os.open(path / OWNER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    return path


def owner_alive(path: Path) -> bool | None:
    """Is the process that made `path` (`owned_tempdir`) still running?  None: no readable owner file."""
    try:
        pid = int((path / OWNER).read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Scratch:
    """A sandbox's scratch folders on the host (landlock and rlimits launchers)."""

    tmp: str  # TMPDIR and HOME, the working directory
    other: str  # KIT_OTHER_FS_DIR: on another filesystem than `tmp`
    parents: list[str]  # what to remove when the sandbox ends (each holds one of the two)


def make_scratch(uid: int | None, tmp_bytes: int = 256 * 2**20) -> Scratch:
    """The two scratch folders of one sandbox, each in a private parent (see the module's docstring).

    TMPDIR is on a tmpfs, as bubblewrap's /tmp, where /dev/shm has room for twice `tmp_bytes`:
    its pages are then memory, charged to the sandbox's cgroup, and a sparse file reads as the
    zero page (on disk, read-ahead fills the page cache: 180 MiB of "memory" for batching from a
    sparse 256 MiB token file, measured under a cgroup, where bubblewrap's tmpfs shows none).
    Else the disk.  The second folder is on another filesystem: the disk when the first is on
    /dev/shm, else /dev/shm, else /var/tmp; on the same filesystem only where no other is writable."""
    global _swept
    if not _swept:
        _swept = True
        sweep_stale_scratch()
    disk = tempfile.gettempdir()
    try:
        shm = os.statvfs("/dev/shm")
        on_shm = shm.f_bavail * shm.f_frsize >= 2 * tmp_bytes and os.access("/dev/shm", os.W_OK)
    except OSError:
        on_shm = False
    parents: list[str] = []
    try:
        first = "/dev/shm" if on_shm else disk
        tmp = _private_folder(first, "tmp", uid, parents)
        dev = os.stat(tmp).st_dev
        other = None
        for base in (disk if on_shm else "/dev/shm", "/var/tmp", first):  # the last: the same filesystem
            try:
                if base != first and os.stat(base).st_dev == dev:
                    continue
                other = _private_folder(base, "scratch", uid, parents)
                break
            except OSError:
                continue
        if other is None:
            raise OSError("no folder for a second scratch")
    except BaseException:
        for p in parents:
            shutil.rmtree(p, ignore_errors=True)
        raise
    return Scratch(tmp, other, parents)


def _private_folder(base: str, name: str, uid: int | None, parents: list[str]) -> str:
    """`base`/kit-scratch-RANDOM/`name`: the parent is this process's (root's), 0700, or 0710 with the
    sandbox's group when it has a uid; the folder is the uid's, 0700.  The parent also holds
    `owner` (this process's pid, unreadable by the sandbox) for `sweep_stale_scratch`."""
    parent = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=base)
    parents.append(parent)
    fd = os.open(os.path.join(parent, "owner"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    path = os.path.join(parent, name)
    os.mkdir(path, 0o700)
    if uid is not None:
        os.chown(path, uid, uid)
        os.chown(parent, os.geteuid(), uid)
        os.chmod(parent, 0o710)
    return path


def sweep_stale_scratch() -> None:
    """Remove the scratch folders of sandboxes whose grader process is gone (killed before it could)."""
    for base in {tempfile.gettempdir(), "/dev/shm", "/var/tmp"}:
        try:
            entries = [e for e in os.scandir(base) if e.name.startswith(SCRATCH_PREFIX) and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                    continue
                with open(os.path.join(entry.path, "owner")) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if not os.path.exists(f"/proc/{pid}"):
                shutil.rmtree(entry.path, ignore_errors=True)
