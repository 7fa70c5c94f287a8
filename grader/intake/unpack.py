"""Reading a submission's files out of a folder, a ``.zip`` or a ``.tar.gz``, safely.

Archive members are never extracted by name.  The grader reads only the few members whose
normalised path matches a layout (`grader.intake.take`), into memory, and `grader.intake.stage`
writes them into a staging folder it owns under fixed names (`<name>.py`, a Python
identifier), so ``../`` paths, absolute paths and symlinks cannot write or point anywhere.
Only regular files are taken (symlinks, hardlinks and devices are ignored, in archives and in
directories, where directory symlinks are not followed either).  Caps: archive size, member
count, total unpacked size (checked on the declared sizes and, for streamed tar, on the bytes
actually decompressed), the archive's own headers before a library builds objects from them (a
zip's central directory, tar's pax and GNU long-name headers: `grader.intake.archive_headers`), the size of each file (read with a hard cap), the size of the files
taken together, and the number of helper files (`grader.intake.take.MAX_HELPERS`).  The two size
caps are the static checks' parse budget (`grader.rules.sources`: 256 KiB a file, 1 MiB in all; the
trusted process holds syntax trees of what it takes, ~230 bytes of tree per byte of source at
worst).  An archive over a cap, a module file over the file cap, or module files over the total,
is rejected (`RejectedSubmission`) with a plain reason; a helper over a cap is not taken (named,
with the reason, in the student's results).  A .tar.gz is streamed twice (the names first, then
only the files taken), so no more than one file is held that is not taken.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections import deque
from pathlib import Path, PurePosixPath

from grader import MODULES
from grader.intake.archive_headers import ArchiveRefused, BoundedTarInfo, zip_directory_bounded
from grader.intake.take import MAX_NEST, REASON_LIMIT, SKIP_DIRS, Record, choose, layout_of, listed, too_long
from grader.rules.sources import MAX_FILE_BYTES, MAX_TOTAL_BYTES, size_words
from grader.untrusted import shown

MAX_ARCHIVE_BYTES = 64 * 2**20  # the archive file itself
MAX_MEMBERS = 20_000  # entries in an archive (or files walked in a directory)
MAX_UNPACKED_BYTES = 512 * 2**20  # declared/decompressed total of an archive
MAX_MODULE_BYTES = MAX_FILE_BYTES  # one module or helper file (what the static checks parse at most)
MAX_SOURCE_BYTES = MAX_TOTAL_BYTES  # the files taken, together
MAX_DIR_DEPTH = 3  # how deep a directory submission is searched, over MAX_MEMBERS entries rejected (its top is 1)
#: Where that finds no module file, a second search down to `MAX_NEST` folders, with a budget of
#: MAX_MEMBERS entries of its own that, once spent, ends the search (what it found stands) and rejects
#: nothing: a folder of 30,000 images three levels down was never a reason to refuse a submission.
MAX_DEEP_DEPTH = MAX_NEST + 1


class RejectedSubmission(Exception):
    """A submission the grader refuses to read (bomb, corrupt, too large...), with a plain reason
    (capped where it is made, as everything staging records: it may quote a name or a library's
    message about the submission's bytes)."""

    def __init__(self, reason: object) -> None:
        super().__init__(shown(reason, REASON_LIMIT))


class _TooBig(Exception):
    pass


def _larger() -> str:
    return f"larger than {size_words(MAX_MODULE_BYTES)}"


def _read_capped(stream: io.BufferedIOBase | io.RawIOBase | object, what: str) -> bytes:
    data = stream.read(MAX_MODULE_BYTES + 1)  # type: ignore[attr-defined]
    if len(data) > MAX_MODULE_BYTES:
        raise _TooBig(f"{what} is {_larger()}")
    return data


def _within_total(root: str, files: dict[str, bytes], record: Record) -> dict[str, bytes]:
    """The files taken, at most `MAX_SOURCE_BYTES` together: the module files first (in handout
    order; past the cap the submission is rejected), then the helpers by name (past the cap, not
    taken)."""
    prefix = "" if root in ("", ".") else root + "/"
    order = sorted(files, key=lambda n: (n not in MODULES, MODULES.index(n) if n in MODULES else 0, n))
    kept: dict[str, bytes] = {}
    total = 0
    for name in order:
        total += len(files[name])
        if total <= MAX_SOURCE_BYTES:
            kept[name] = files[name]
        elif name in MODULES:
            raise RejectedSubmission(f"the module files hold more than {size_words(MAX_SOURCE_BYTES)} of source "
                                     "together (the cap)")
        else:
            total -= len(files[name])
            record.refuse(f"{prefix}{name}.py", f"with it, the files taken would hold more than "
                                                f"{size_words(MAX_SOURCE_BYTES)} of source together (the cap)")
    return kept


def _normalise(name: str) -> PurePosixPath | None:
    """A member name as a relative path, or None if it is absolute or climbs out (``..``).  The
    archive's own root (``./``, which ``tar czf x.tar.gz .`` writes first) is the empty path."""
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    return PurePosixPath(*parts)


def read_submission(path: Path, record: Record) -> tuple[str, dict[str, bytes]]:
    """(the root taken, name -> the bytes of each file taken) from the folder or archive `path`.

    Raises RejectedSubmission with a plain reason for a submission that cannot be read safely
    (over a cap, corrupt, unreadable).  Notes for the student, and the files that are not taken
    (a symlink, a reserved name...) with the reason, go to `record` (which caps them).
    """
    try:
        if path.is_dir():
            root, files = _read_directory(path, record)
        else:
            size = path.stat().st_size
            if size > MAX_ARCHIVE_BYTES:
                raise RejectedSubmission(f"the archive is {size / 2**20:.0f} MiB (the cap is "
                                         f"{MAX_ARCHIVE_BYTES // 2**20} MiB)")
            reader = _read_zip if path.name.lower().endswith(".zip") else _read_tar
            root, files = reader(path, record)
        return root, _within_total(root, files, record)
    except _TooBig as exc:
        raise RejectedSubmission(str(exc)) from None
    except OSError as exc:
        raise RejectedSubmission(f"cannot be read: {exc.strerror or exc}") from None


# -- directories -------------------------------------------------------------------------------

def dir_candidates(folder: Path, links: dict[str, str] | None = None) -> dict[str, tuple[int, str, str]]:
    """The regular ``.py`` files at layout positions (key: relative path).  Symlinks at those
    positions (and a symlinked ``assignment/`` folder) are never followed; they are recorded in
    `links` (relative path -> why not taken) when given.  Searched `MAX_DIR_DEPTH` deep, then, where
    that holds no module file, `MAX_DEEP_DEPTH` deep within a budget of its own (see there)."""
    out: dict[str, tuple[int, str, str]] = {}
    count = 0

    class _Spent(Exception):
        """The deeper search's budget is spent."""

    def walk(deepest: int) -> None:  # breadth first: a level's entries before any deeper one's
        nonlocal count
        queue = deque([(folder, PurePosixPath(), 1)])
        while queue:
            d, rel, depth = queue.popleft()
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                visit(entry, rel, depth, deepest, queue)

    def visit(entry: os.DirEntry, rel: PurePosixPath, depth: int, deepest: int, queue: deque) -> None:
        """Count `entry`, queue a folder to search, record a file or symlink at a layout position."""
        nonlocal count
        count += 1
        if count > MAX_MEMBERS:
            if deepest > MAX_DIR_DEPTH:
                raise _Spent
            raise RejectedSubmission(f"the folder holds more than {MAX_MEMBERS} entries")
        sub = rel / entry.name
        if entry.is_dir(follow_symlinks=False):
            if depth < deepest and entry.name not in SKIP_DIRS:
                queue.append((Path(entry.path), sub, depth + 1))
        elif entry.is_file(follow_symlinks=False):
            layout = layout_of(sub)
            if layout is not None:
                out[str(sub)] = layout
        elif entry.is_symlink() and links is not None:
            if entry.name == "assignment" and depth <= 2:
                links[f"{sub}/"] = "a symlink to a folder (never followed; only regular files are taken)"
            elif layout_of(sub) is not None and layout_of(sub)[2] in MODULES:
                links[str(sub)] = "a symlink (only regular files are taken)"

    walk(MAX_DIR_DEPTH)
    if not any(name in MODULES for _, _, name in out.values()):
        count = 0
        try:
            walk(MAX_DEEP_DEPTH)
        except _Spent:
            pass
    return out


def _read_directory(src: Path, record: Record) -> tuple[str, dict[str, bytes]]:
    links: dict[str, str] = {}
    candidates = dir_candidates(src, links)
    root, chosen = choose(candidates, record)
    prefix = "" if root == "." else root + "/"
    for key, why in links.items():  # nothing regular to take: every link refused; else those in the root
        if not chosen or (key.startswith(prefix) and "/" not in key[len(prefix):]):
            record.refuse(key, why)
    files: dict[str, bytes] = {}
    for module, key in chosen.items():
        path = src / key
        try:  # open without following a symlink swapped in since the walk
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # (Windows has none: `grader check` there)
        except OSError as exc:
            record.refuse(key, f"cannot be read ({exc.strerror})")
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if module not in MODULES and st.st_size > MAX_MODULE_BYTES:
                record.refuse(key, _larger())
                continue
            if not stat.S_ISREG(st.st_mode):
                record.refuse(key, "not a regular file")
                continue
            if st.st_nlink > 1:  # a hard link could point at any file on this machine
                record.refuse(key, "a hard link (only regular files are taken)")
                continue
            files[module] = _read_capped(f, key)
    return root, files


# -- archives ----------------------------------------------------------------------------------

def _note_unsafe(count: int, record: Record) -> None:
    """One note for the archive entries with absolute or ``..`` paths (their names are not echoed:
    they may hold anything, including paths of this machine)."""
    if count:
        record.note(f"ignored {count} archive entr{'y' if count == 1 else 'ies'} with an unsafe path "
                    "(absolute, or climbing out with ..)")


def _zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def _open_zip(src: Path) -> zipfile.ZipFile:
    """The zip `src`, its central directory bounded first (`grader.intake.archive_headers`)."""
    try:
        zip_directory_bounded(src, MAX_MEMBERS)
    except ArchiveRefused as exc:
        raise RejectedSubmission(str(exc)) from None
    try:
        return zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as exc:
        raise RejectedSubmission(f"corrupt archive: not a readable zip file ({exc})") from None


def _read_zip(src: Path, record: Record) -> tuple[str, dict[str, bytes]]:
    zf = _open_zip(src)
    with zf:
        try:
            infos = zf.infolist()
        except Exception as exc:  # noqa: BLE001
            raise RejectedSubmission(f"corrupt archive: {exc}") from None
        if len(infos) > MAX_MEMBERS:
            raise RejectedSubmission(f"the archive has {len(infos)} entries (the cap is {MAX_MEMBERS})")
        declared = sum(max(0, i.file_size) for i in infos)
        if declared > MAX_UNPACKED_BYTES:
            raise RejectedSubmission(
                f"the archive would unpack to {declared / 2**20:.0f} MiB (the cap is "
                f"{MAX_UNPACKED_BYTES // 2**20} MiB): a zip bomb?")
        candidates: dict[str, tuple[int, str, str]] = {}
        by_key: dict[str, zipfile.ZipInfo] = {}
        unsafe = 0
        for info in infos:
            norm = _normalise(info.filename)
            if norm is None:
                unsafe += 1
                continue
            if info.is_dir():
                continue
            layout = layout_of(norm)
            if layout is None or too_long(str(norm), record):
                continue
            if _zip_is_symlink(info):
                record.refuse(str(norm), "a symlink (only regular files are taken)")
                continue
            candidates[str(norm)] = layout
            by_key[str(norm)] = info
        _note_unsafe(unsafe, record)
        root, chosen = choose(candidates, record)
        files: dict[str, bytes] = {}
        for module, key in chosen.items():
            info = by_key[key]
            if info.file_size > MAX_MODULE_BYTES and module not in MODULES:
                record.refuse(key, _larger())
                continue
            if info.file_size > MAX_MODULE_BYTES:
                raise _TooBig(f"{key} is {_larger()}")
            try:
                with zf.open(info) as f:
                    files[module] = _read_capped(f, key)
            except _TooBig:
                raise
            except Exception as exc:  # noqa: BLE001 - bad CRC, unsupported compression, encryption...
                raise RejectedSubmission(f"corrupt archive: cannot read {key} ({type(exc).__name__}: {exc})") from None
    return root, files


class _CountingReader(io.RawIOBase):
    """Raises once more than `cap` decompressed bytes have been read (a gzip bomb)."""

    def __init__(self, inner: io.BufferedIOBase, cap: int):
        self.inner = inner
        self.cap = cap
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.inner.read(len(b))
        self.count += len(data)
        if self.count > self.cap:
            raise RejectedSubmission(
                f"the archive unpacks to more than {self.cap // 2**20} MiB: a zip bomb?")
        b[: len(data)] = data
        return len(data)


_CORRUPT = (tarfile.TarError, OSError, EOFError, zlib.error, ValueError, RecursionError)


def _tar_members(src: Path):
    """The members of the .tar.gz `src`, streamed (decompressed bytes counted against the cap,
    extended headers bounded by `grader.intake.archive_headers`, no member kept once the next is read)."""
    try:
        raw = gzip.open(src, "rb")
        counting = io.BufferedReader(_CountingReader(raw, MAX_UNPACKED_BYTES), buffer_size=1 << 16)
        tf = tarfile.open(fileobj=counting, mode="r|", tarinfo=BoundedTarInfo)
    except ArchiveRefused as exc:
        raise RejectedSubmission(str(exc)) from None
    except _CORRUPT + (gzip.BadGzipFile,) as exc:
        raise RejectedSubmission(f"corrupt archive: not a readable .tar.gz ({exc})") from None
    count = 0
    try:
        with tf:
            while (member := tf.next()) is not None:
                tf.members.clear()  # (tarfile keeps every member it read: 20,000 long names held 100 MB)
                count += 1
                if count > MAX_MEMBERS:
                    raise RejectedSubmission(f"the archive has more than {MAX_MEMBERS} entries")
                yield tf, member
    except (RejectedSubmission, _TooBig):
        raise
    except ArchiveRefused as exc:
        raise RejectedSubmission(str(exc)) from None
    except _CORRUPT as exc:
        raise RejectedSubmission(f"corrupt archive: {type(exc).__name__}: {exc}") from None
    finally:
        raw.close()


def _read_tar(src: Path, record: Record) -> tuple[str, dict[str, bytes]]:
    candidates: dict[str, tuple[int, str, str]] = {}
    unsafe = 0
    for _, member in _tar_members(src):  # first pass: names and sizes only
        norm = _normalise(member.name)
        if norm is None:
            unsafe += 1
            continue
        layout = layout_of(norm)
        if layout is None or too_long(str(norm), record):
            continue
        if not member.isreg():
            kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "special file"
            record.refuse(str(norm), f"a {kind} (only regular files are taken)")
            candidates.pop(str(norm), None)
            continue
        if member.size > MAX_MODULE_BYTES and layout[2] not in MODULES:
            record.refuse(str(norm), _larger())
            candidates.pop(str(norm), None)
            continue
        if member.size > MAX_MODULE_BYTES:
            raise _TooBig(f"{norm} is {_larger()}")
        candidates[str(norm)] = layout
    _note_unsafe(unsafe, record)
    root, chosen = choose(candidates, record)
    wanted = {key: module for module, key in chosen.items()}
    files: dict[str, bytes] = {}
    for tf, member in _tar_members(src):  # second pass: only the files taken (the last of a name wins)
        norm = _normalise(member.name)
        if norm is not None and str(norm) in wanted and member.isreg():
            try:
                f = tf.extractfile(member)
                if f is not None:
                    files[wanted[str(norm)]] = _read_capped(f, str(norm))
            except _CORRUPT as exc:
                raise RejectedSubmission(f"corrupt archive: {type(exc).__name__}: {exc}") from None
    return root, files


def first_entries(path: Path, limit: int = 5) -> list[str]:
    """A few names the submission holds (to tell a student what an "empty" submission held), read
    within the same bounds as the files taken, each as staging records a name (`listed`)."""
    names: list[str] = []
    try:
        if path.is_dir():
            for entry in sorted(os.scandir(path), key=lambda e: e.name)[:limit]:
                names.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
        elif path.name.lower().endswith(".zip"):
            with _open_zip(path) as zf:
                names = [i.filename for i in zf.infolist()[:limit]]
        else:
            for _, member in _tar_members(path):
                names.append(member.name)
                if len(names) >= limit:
                    break
    except Exception:  # noqa: BLE001 - only for a message
        pass
    return [listed(n[:80]) for n in names]
