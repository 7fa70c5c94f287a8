"""Finding submissions and taking exactly the expected student files out of them, safely.

A submission is a directory, a ``.zip`` or a ``.tar.gz``/``.tgz`` (or a folder of those); the
student id is its name without the extension.  From it the grader takes the ten module files
`assignment/<module>.py` and nothing else: a ``conftest.py``, ``pytest.ini``,
``sitecustomize.py`` or any extra module in a submission never reaches the sandbox or the test
process.  The files are looked for, in this order, under one root:

1. ``assignment/<module>.py``                  (a copy of the student release)
2. ``<folder>/assignment/<module>.py``         (a zipped release folder, e.g. alice/assignment/)
3. ``<module>.py``                             (just the module files)
4. ``<folder>/<module>.py``                    (a zipped assignment folder)

The first layout that holds at least one module file wins, and all files are taken from that
single root (never mixed).  A module file that is missing grades as not attempted.

Safety: archive members are never extracted by name.  The grader reads only the few members
whose normalised path matches a layout above, into a staging folder it owns, under fixed names
(`<module>.py`), so ``../`` paths, absolute paths and symlinks cannot write or point anywhere.
Only regular files are taken (symlinks, hardlinks and devices are ignored, in archives and in
directories, where directory symlinks are not followed either).  Caps: archive size, member
count, total unpacked size (checked on the declared sizes and, for streamed tar, on the bytes
actually decompressed), and the size of each module file (read with a hard cap).  An archive
over a cap, or one that cannot be read, is rejected with a plain reason.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader import MODULES

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
MAX_ARCHIVE_BYTES = 64 * 2**20  # the archive file itself
MAX_MEMBERS = 20_000  # entries in an archive (or files walked in a directory)
MAX_UNPACKED_BYTES = 512 * 2**20  # declared/decompressed total of an archive
MAX_MODULE_BYTES = 2 * 2**20  # one module file
MAX_DIR_DEPTH = 3  # how deep a directory submission is searched
_SKIP_DIRS = {"__MACOSX", ".git", "__pycache__", ".venv", "node_modules"}


class RejectedSubmission(Exception):
    """A submission the grader refuses to read (bomb, corrupt, too large...), with a plain reason."""


@dataclass(frozen=True)
class Source:
    """One submission as found on disk."""

    student: str
    path: Path

    @property
    def kind(self) -> str:
        if self.path.is_dir():
            return "directory"
        return "zip" if self.path.name.lower().endswith(".zip") else "tar.gz"


@dataclass
class Staged:
    """What was taken from a submission."""

    folder: Path
    files: dict[str, str] = field(default_factory=dict)  # module -> sha256 of its text
    layout: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        return [m for m in MODULES if m not in self.files]


# -- discovery ---------------------------------------------------------------------------------

def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def student_id(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    clean = re.sub(r"[^A-Za-z0-9._@+-]+", "_", name).strip("._") or "submission"
    return clean[:100]


def _candidates_or_all(folder: Path) -> dict[str, tuple[int, str, str]] | None:
    """The folder's module files; None when it is too big to search (a submission to reject)."""
    try:
        return _dir_candidates(folder)
    except RejectedSubmission:
        return None


def _direct_layout(folder: Path) -> bool:
    """Module files right here or in `assignment/` (layouts 1 and 3), as regular files."""
    assignment = folder / "assignment"
    places = [folder] + ([assignment] if assignment.is_dir() and not assignment.is_symlink() else [])
    for place in places:
        for m in MODULES:
            try:
                if stat.S_ISREG(os.lstat(place / f"{m}.py").st_mode):
                    return True
            except OSError:
                continue
    return False


def _entries(folder: Path) -> list[Path]:
    children = sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in _SKIP_DIRS)
    return [p for p in children if is_archive(p) or (p.is_dir() and not p.is_symlink())]


def classify(folder: Path) -> str:
    """"submission" or "folder" (of submissions) for a directory given on the command line.

    A submission holds module files at its top or in `assignment/`; a folder holds archives or
    sub-folders with module files; a folder whose only module files sit one level down
    (`alice/assignment/...`) is one submission; an empty folder is an (empty) submission.
    """
    if _direct_layout(folder):
        return "submission"
    entries = _entries(folder)
    if any(is_archive(p) or _candidates_or_all(p) != {} for p in entries):
        return "folder"
    if _candidates_or_all(folder):
        return "submission"
    return "folder" if entries else "submission"


def discover(paths: Iterable[Path], exclude: Iterable[Path] = ()) -> tuple[list[Source], list[str]]:
    """Submissions from the command line: each path is a submission or a folder of them.

    Returns the sources (sorted by student id, unique ids) and plain-language problems
    (paths that are not submissions, duplicate ids).  Paths in `exclude` (the results folder)
    are never taken as submissions.
    """
    skip = {Path(p).resolve() for p in exclude}
    found: list[Source] = []
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_symlink() and not path.exists():
            problems.append(f"{path}: a broken link")
            continue
        if is_archive(path):
            found.append(Source(student_id(path), path))
        elif path.is_dir() and classify(path) == "submission":
            found.append(Source(student_id(path), path))
        elif path.is_dir():
            found.extend(Source(student_id(p), p) for p in _entries(path) if p.resolve() not in skip)
        else:
            problems.append(f"{path}: not a directory, .zip or .tar.gz")
    by_id: dict[str, Source] = {}
    for src in sorted(found, key=lambda s: (s.student, str(s.path))):
        if src.student in by_id:
            problems.append(f"{src.path}: student id {src.student!r} is already taken by "
                            f"{by_id[src.student].path}; skipped")
            continue
        by_id[src.student] = src
    return list(by_id.values()), problems


# -- layouts -----------------------------------------------------------------------------------

def _normalise(name: str) -> PurePosixPath | None:
    """A member name as a relative path, or None if it is absolute or climbs out (``..``)."""
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts) or not parts:
        return None
    return PurePosixPath(*parts)


def _layout_of(path: PurePosixPath) -> tuple[int, str, str] | None:
    """(priority, root, module) when `path` is a module file in one of the layouts."""
    parts = path.parts
    if any(p in _SKIP_DIRS for p in parts):
        return None
    module = parts[-1].removesuffix(".py") if parts[-1].endswith(".py") else None
    if module not in MODULES:
        return None
    if len(parts) == 2 and parts[0] == "assignment":
        return (0, "assignment", module)
    if len(parts) == 3 and parts[1] == "assignment":
        return (1, f"{parts[0]}/assignment", module)
    if len(parts) == 1:
        return (2, ".", module)
    if len(parts) == 2:
        return (3, parts[0], module)
    return None


def _choose(candidates: dict[str, tuple[int, str, str]], notes: list[str]) -> tuple[str, dict[str, str]]:
    """Pick one root: the best layout; ties between roots of that layout go to the sorted first."""
    if not candidates:
        return "", {}
    best = min(prio for prio, _, _ in candidates.values())
    roots = sorted({root for prio, root, _ in candidates.values() if prio == best})
    root = roots[0]
    if len(roots) > 1:
        notes.append(f"several folders hold module files ({', '.join(roots)}); took {root}/")
    chosen = {module: key for key, (prio, r, module) in sorted(candidates.items()) if prio == best and r == root}
    return root, chosen


# -- reading -----------------------------------------------------------------------------------

def _read_capped(stream: io.BufferedIOBase | io.RawIOBase | object, what: str) -> bytes:
    data = stream.read(MAX_MODULE_BYTES + 1)  # type: ignore[attr-defined]
    if len(data) > MAX_MODULE_BYTES:
        raise _TooBig(f"{what} is larger than {MAX_MODULE_BYTES // 2**20} MiB")
    return data


class _TooBig(Exception):
    pass


def _check_text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _TooBig(f"{what} is not UTF-8 text") from None


def _dir_candidates(folder: Path) -> dict[str, tuple[int, str, str]]:
    out: dict[str, tuple[int, str, str]] = {}
    count = 0

    def walk(d: Path, rel: PurePosixPath, depth: int) -> None:
        nonlocal count
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            count += 1
            if count > MAX_MEMBERS:
                raise RejectedSubmission(f"the folder holds more than {MAX_MEMBERS} entries")
            sub = rel / entry.name
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_DIR_DEPTH and entry.name not in _SKIP_DIRS:
                    walk(Path(entry.path), sub, depth + 1)
            elif entry.is_file(follow_symlinks=False):
                layout = _layout_of(sub)
                if layout is not None:
                    out[str(sub)] = layout

    walk(folder, PurePosixPath(), 1)
    return out


def _stage_directory(src: Path, notes: list[str]) -> tuple[str, dict[str, bytes]]:
    candidates = _dir_candidates(src)
    root, chosen = _choose(candidates, notes)
    files: dict[str, bytes] = {}
    for module, key in chosen.items():
        path = src / key
        try:  # open without following a symlink swapped in since the walk
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            notes.append(f"{key}: cannot be read ({exc.strerror}); graded as missing")
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                notes.append(f"{key}: not a regular file; graded as missing")
                continue
            if st.st_nlink > 1:  # a hard link could point at any file on this machine
                notes.append(f"{key}: a hard link, ignored (graded as missing)")
                continue
            files[module] = _read_capped(f, key)
    return root, files


def _zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def _stage_zip(src: Path, notes: list[str]) -> tuple[str, dict[str, bytes]]:
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise RejectedSubmission(f"corrupt archive: not a readable zip file ({exc})") from None
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
        for info in infos:
            norm = _normalise(info.filename)
            if norm is None:
                notes.append(f"ignored an entry with an unsafe path: {info.filename[:200]!r}")
                continue
            if info.is_dir():
                continue
            layout = _layout_of(norm)
            if layout is None:
                continue
            if _zip_is_symlink(info):
                notes.append(f"{norm}: a symlink, ignored (graded as missing)")
                continue
            candidates[str(norm)] = layout
            by_key[str(norm)] = info
        root, chosen = _choose(candidates, notes)
        files: dict[str, bytes] = {}
        for module, key in chosen.items():
            info = by_key[key]
            if info.file_size > MAX_MODULE_BYTES:
                raise _TooBig(f"{key} is larger than {MAX_MODULE_BYTES // 2**20} MiB")
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


def _stage_tar(src: Path, notes: list[str]) -> tuple[str, dict[str, bytes]]:
    try:
        raw = gzip.open(src, "rb")
        counting = io.BufferedReader(_CountingReader(raw, MAX_UNPACKED_BYTES), buffer_size=1 << 16)
        tf = tarfile.open(fileobj=counting, mode="r|")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise RejectedSubmission(f"corrupt archive: not a readable .tar.gz ({exc})") from None
    candidates: dict[str, tuple[int, str, str]] = {}
    contents: dict[str, bytes] = {}
    count = 0
    try:
        with tf:
            for member in tf:
                count += 1
                if count > MAX_MEMBERS:
                    raise RejectedSubmission(f"the archive has more than {MAX_MEMBERS} entries")
                norm = _normalise(member.name)
                if norm is None:
                    notes.append(f"ignored an entry with an unsafe path: {member.name[:200]!r}")
                    continue
                layout = _layout_of(norm)
                if layout is None:
                    continue
                if not member.isreg():
                    kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "special file"
                    notes.append(f"{norm}: a {kind}, ignored (graded as missing)")
                    continue
                if member.size > MAX_MODULE_BYTES:
                    raise _TooBig(f"{norm} is larger than {MAX_MODULE_BYTES // 2**20} MiB")
                f = tf.extractfile(member)
                if f is None:
                    continue
                candidates[str(norm)] = layout
                contents[str(norm)] = _read_capped(f, str(norm))
    except (RejectedSubmission, _TooBig):
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError) as exc:
        raise RejectedSubmission(f"corrupt archive: {type(exc).__name__}: {exc}") from None
    root, chosen = _choose(candidates, notes)
    return root, {module: contents[key] for module, key in chosen.items()}


def stage(source: Source, dest: Path) -> Staged:
    """Copy the expected module files of `source` into the fresh folder `dest` (0755/0644).

    Raises RejectedSubmission with a plain reason for a submission that cannot be read safely.
    """
    notes: list[str] = []
    path = source.path
    try:
        if path.is_dir():
            root, files = _stage_directory(path, notes)
        else:
            size = path.stat().st_size
            if size > MAX_ARCHIVE_BYTES:
                raise RejectedSubmission(f"the archive is {size / 2**20:.0f} MiB (the cap is "
                                         f"{MAX_ARCHIVE_BYTES // 2**20} MiB)")
            root, files = _stage_zip(path, notes) if path.name.lower().endswith(".zip") else _stage_tar(path, notes)
        texts = {m: _check_text(data, f"{m}.py") for m, data in files.items()}
    except _TooBig as exc:
        raise RejectedSubmission(str(exc)) from None
    dest.mkdir(parents=True, exist_ok=False)
    os.chmod(dest, 0o755)
    staged = Staged(folder=dest, notes=notes, layout=root)
    for module in MODULES:
        if module in texts:
            target = dest / f"{module}.py"
            target.write_text(texts[module], encoding="utf-8")
            os.chmod(target, 0o644)
            staged.files[module] = hashlib.sha256(texts[module].encode()).hexdigest()
    if not staged.files:
        notes.append("no module files found (expected assignment/<module>.py): everything is graded as not attempted")
    return staged


def fingerprint(source: Source) -> str:
    """A content hash of what was submitted (archive bytes, or the candidate files of a folder)."""
    h = hashlib.sha256()
    path = source.path
    if path.is_dir():
        found = _candidates_or_all(path)
        if found is None:
            return hashlib.sha256(b"too many entries: " + str(path).encode()).hexdigest()
        for key in sorted(found):
            h.update(key.encode() + b"\0")
            try:
                with open(path / key, "rb") as f:
                    h.update(f.read(MAX_MODULE_BYTES + 1))
            except OSError:
                h.update(b"<unreadable>")
    else:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()

