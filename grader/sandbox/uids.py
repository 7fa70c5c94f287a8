"""Sandbox uids and the kernel state tied to them (root only).

When the grader runs as root every sandbox runs under a uid of its own, leased from a pool
(64100.. by default; real accounts are never borrowed; an flock per uid keeps two grader
processes apart).  By default a SandboxBackend leases a fresh uid for each submission, so
nothing keyed by uid (RLIMIT_NPROC accounting, keyrings, files in /dev/shm) is shared between
two submissions graded one after the other on the same job slot; before a uid is handed out
and after a sandbox ends, every process of that uid is killed and its kernel state cleared:
its user keyrings are emptied, its SysV IPC objects removed and its files in /dev/shm, /tmp,
/var/tmp and /dev/mqueue deleted.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import pwd
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

UID_BASE = int(os.environ.get("KIT_SANDBOX_UID_BASE", "64100"))
UID_COUNT = 200
_LOCK_DIR = Path(tempfile.gettempdir()) / "kit-sandbox-uids"
_held: dict[int, int] = {}  # uid -> lock fd
_slot_uid: int | None = None

#: Folders where a uid may leave files that outlive its processes.
SHARED_DIRS = ("/dev/shm", "/tmp", "/var/tmp", "/dev/mqueue")


def is_root() -> bool:
    return os.geteuid() == 0


def _try_lock(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return False  # a real account: never borrow it
    except KeyError:
        pass
    _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(_LOCK_DIR / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[uid] = fd
    return True


def acquire_uid() -> int | None:
    """The job slot's uid (None when not root), held for the life of this process."""
    global _slot_uid
    if not is_root():
        return None
    if _slot_uid is None:
        _slot_uid = lease_uid()
    return _slot_uid


def lease_uid(avoid: int | None = None) -> int | None:
    """A free uid of the pool (not `avoid`), its processes killed and its state cleared first.
    Drawn at random: the sandbox sees its uid, which must not count the sandboxes before it or
    tell the grader's pid."""
    if not is_root():
        return None
    start = secrets.randbelow(UID_COUNT)
    for i in range(UID_COUNT):
        uid = UID_BASE + (start + i) % UID_COUNT
        if uid == avoid or uid in _held or not _try_lock(uid):
            continue
        kill_uid(uid)
        clear_uid_state(uid)
        return uid
    raise RuntimeError(f"no free sandbox uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")


def release_uid(uid: int | None) -> None:
    """Kill what runs under `uid`, clear its state and give it back to the pool."""
    if uid is None or not is_root():
        return
    kill_uid(uid)
    clear_uid_state(uid)
    if uid != _slot_uid and uid in _held:
        fd = _held.pop(uid)
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def hold_if_free(uid: int) -> bool:
    """Take `uid`'s lease for a moment, without killing or clearing anything, if no grader
    process holds it (to inspect what an ended sandbox left); `drop_hold` gives it back."""
    return is_root() and _try_lock(uid)


def drop_hold(uid: int) -> None:
    fd = _held.pop(uid, None)
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# -- processes -----------------------------------------------------------------------------------

def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real uid is `uid` (from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(entry))
                        break
        except (OSError, ValueError):
            continue
    return pids


def _as_uid(uid: int, action) -> int:
    """Run `action()` in a forked child that became `uid`; its exit status (0..255)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 255
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            code = int(action() or 0)
        except BaseException:  # noqa: BLE001
            code = 255
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def kill_uid(uid: int, attempts: int = 50) -> bool:
    """SIGKILL every process of `uid` (root only); True when none is left.

    A forked helper becomes `uid` and calls kill(-1, SIGKILL): the kernel signals every process
    of that uid in one pass under the tasklist lock, so a fork bomb cannot outrun it.  No exec
    happens after setuid, so RLIMIT_NPROC cannot stop the helper.
    """
    if not is_root():
        return True
    for _ in range(attempts):
        if not processes_of_uid(uid):
            return True
        _as_uid(uid, lambda: os.kill(-1, signal.SIGKILL))
        time.sleep(0.02)
    return not processes_of_uid(uid)


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def count_own_processes() -> int:
    return len(processes_of_uid(os.getuid()))


def others_can_read(path: str) -> bool:
    """Whether any uid can reach `path` (every ancestor searchable by others)."""
    p = Path(path)
    for q in (p, *p.parents):
        try:
            if not os.stat(q).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


# -- kernel state of a uid -------------------------------------------------------------------------

KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_READ = 0, 1, 7, 11
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_KEYCTL_NR = {"x86_64": 250, "aarch64": 219}


def keyctl_nr() -> int:
    try:
        from grader.sandbox.seccomp import syscall_number

        return syscall_number("keyctl")
    except Exception:  # noqa: BLE001 - no libseccomp: the table of the common architectures
        return _KEYCTL_NR.get(os.uname().machine, 250)


def _keyctl(*args: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return int(libc.syscall(keyctl_nr(), *[ctypes.c_long(a) for a in args]))


def _keyring_count() -> int:
    """(In a helper that became the uid) keys linked in its user and user-session keyrings."""
    _keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0)  # a session keyring of its own, not the grader's
    total = 0
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        n = _keyctl(KEYCTL_READ, ring, 0, 0)  # bytes needed: 4 per linked key
        total += max(0, n) // 4
    return min(total, 200)


def _keyring_clear() -> int:
    _keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0)
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        _keyctl(KEYCTL_CLEAR, ring)
    return 0


def _sysvipc(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of the SysV IPC objects created by or owned by `uid` (this IPC namespace)."""
    found = []
    for kind, id_col in (("shm", "shmid"), ("msg", "msqid"), ("sem", "semid")):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header = f.readline().split()
                for line in f:
                    row = dict(zip(header, line.split()))
                    if uid in (int(row.get("uid", -1)), int(row.get("cuid", -1))):
                        found.append((kind, int(row[id_col])))
        except (OSError, ValueError, KeyError):
            continue
    return found


def files_of(uid: int) -> list[str]:
    """The entries of `SHARED_DIRS` that `uid` owns (its files that outlive its processes)."""
    out = []
    for d in SHARED_DIRS:
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid == uid:
                    out.append(e.path)
            except OSError:
                continue
    return out


def uid_state(uid: int) -> dict[str, object]:
    """What `uid` holds in the kernel outside its processes (root only)."""
    if not is_root():
        return {}
    return {"keys": _as_uid(uid, _keyring_count), "sysvipc": _sysvipc(uid), "files": files_of(uid)}


def clear_uid_state(uid: int) -> None:
    """Empty the uid's keyrings, remove its SysV IPC objects and its files in the shared folders."""
    if not is_root():
        return
    _as_uid(uid, _keyring_clear)
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in _sysvipc(uid):
        if kind == "shm":
            libc.shmctl(ident, 0, None)  # IPC_RMID
        elif kind == "msg":
            libc.msgctl(ident, 0, None)
        else:
            libc.semctl(ident, 0, 0)
    for path in files_of(uid):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
