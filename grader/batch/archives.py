"""Finding submissions and taking exactly the student's module files out of them, safely.

A submission is a directory, a ``.zip`` or a ``.tar.gz``/``.tgz`` (or a folder of those); the
student id is its name without the extension (see `student_id`: ids are injective, and two
submissions with the same id are both refused, never one graded in place of the other).
From it the grader takes the module files `assignment/<module>.py` and the student's own
helper modules next to them (`assignment/utils.py`, imported relatively: ``from . import
utils``), and nothing else: a ``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``.pth``
file or any file outside that one folder never reaches the sandbox or the test process.  The
files are looked for, in this order, under one root:

1. ``assignment/<module>.py``                  (a copy of the student release)
2. ``<folder>/assignment/<module>.py``         (a zipped release folder, e.g. alice/assignment/)
3. ``<module>.py``                             (just the module files)
4. ``<folder>/<module>.py``                    (a zipped assignment folder)

The first layout that holds at least one module file wins, and all files are taken from that
single root (never mixed).  A module file that is missing grades as not attempted; a file
that is not taken is named, with the reason, in the student's results.  `grader check` stages
the student's folder with this very function, so a local check sees what `grader grade` sees.

Text: a file must be UTF-8 and may declare no other source encoding (a ``# -*- coding: latin-1
-*-`` cookie would make ``ast.parse(str)``, which the static checks use, read something other
than what the import runs); a leading UTF-8 byte-order mark is dropped.  Otherwise the staged
bytes are exactly the submitted bytes: what is imported is what the static checks read.

Safety: archive members are never extracted by name.  The grader reads only the few members
whose normalised path matches a layout above, into a staging folder it owns, under fixed names
(`<name>.py`, a Python identifier), so ``../`` paths, absolute paths and symlinks cannot write
or point anywhere.  Only regular files are taken (symlinks, hardlinks and devices are ignored,
in archives and in directories, where directory symlinks are not followed either).  Caps:
archive size, member count, total unpacked size (checked on the declared sizes and, for
streamed tar, on the bytes actually decompressed), the size of each file (read with a hard
cap), and the number of helper files.  An archive over a cap, or one that cannot be read, is
rejected with a plain reason.
"""

from __future__ import annotations

import codecs
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
MAX_HELPERS = 20  # extra .py files (the student's own helper modules) taken next to the module files
#: Never taken as a helper: files that mean something to Python or pytest beyond an import by name.
RESERVED_NAMES = {"__init__", "__main__", "conftest", "sitecustomize", "usercustomize", "setup"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
    files: dict[str, str] = field(default_factory=dict)  # module -> sha256 of its staged bytes
    helpers: dict[str, str] = field(default_factory=dict)  # helper module -> sha256 of its staged bytes
    layout: str = ""
    notes: list[str] = field(default_factory=list)
    not_taken: dict[str, str] = field(default_factory=dict)  # file in the submission -> why it was not taken
    seen: list[str] = field(default_factory=list)  # a few of the submission's entries (for "empty" messages)

    @property
    def missing(self) -> list[str]:
        return [m for m in MODULES if m not in self.files]

    @property
    def empty(self) -> bool:
        """The submission holds nothing to take: no module file, no helper, and no file refused
        (a module file that was not taken, e.g. not UTF-8, makes it a graded submission whose
        results name that file)."""
        return not self.files and not self.helpers and not self.not_taken


# -- discovery ---------------------------------------------------------------------------------

def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")


def student_id(path: Path) -> str:
    """The student id of a submission: its name without the archive extension, made safe.

    Injective: a name that is already safe (a letter or digit first, then letters, digits and
    ``. _ @ + -``, at most 100 characters) is its own id; any other name becomes its safe part
    followed by ``~`` and a hash of the whole name (``~`` never occurs in a safe name), so two
    different names never share an id and no name can take another student's id.  Ids never
    start with a spreadsheet formula character (``= + - @``) nor with a dot.
    """
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    if _SAFE_ID.fullmatch(name):
        return name
    raw = name.encode("utf-8", "surrogateescape")
    clean = re.sub(r"[^A-Za-z0-9._@+-]+", "_", name)
    clean = re.sub(r"^[^A-Za-z0-9]+", "", clean)[:80] or "submission"
    return f"{clean}~{hashlib.sha256(raw).hexdigest()[:10]}"


def _candidates_or_all(folder: Path, modules_only: bool = False) -> dict[str, tuple[int, str, str]] | None:
    """The folder's candidate files (module files only with `modules_only`); None when it is too
    big to search (a submission to reject)."""
    try:
        found = _dir_candidates(folder)
    except RejectedSubmission:
        return None
    return {k: v for k, v in found.items() if v[2] in MODULES} if modules_only else found


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
    if any(is_archive(p) or _candidates_or_all(p, modules_only=True) != {} for p in entries):
        return "folder"
    if _candidates_or_all(folder, modules_only=True):
        return "submission"
    return "folder" if entries else "submission"


@dataclass
class Discovery:
    """What the command line named: the submissions to grade, and what is wrong with the rest."""

    sources: list[Source] = field(default_factory=list)  # sorted by student id, ids unique
    refused: list[tuple[Source, str]] = field(default_factory=list)  # colliding ids: (submission, why), all listed
    errors: list[str] = field(default_factory=list)  # command-line paths that are not submissions (fatal)
    warnings: list[str] = field(default_factory=list)  # entries of a folder of submissions that were skipped


def _entry_warnings(folder: Path) -> list[str]:
    """Files in a folder of submissions that are not submissions (a .rar, a stray file)."""
    out = []
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return out
    for p in children:
        if p.name.startswith(".") and p.name not in _SKIP_DIRS and (is_archive(p) or p.is_dir()):
            out.append(f"{p}: a hidden entry (its name starts with '.'); skipped")
            continue
        if p.name.startswith(".") or p.name in _SKIP_DIRS or is_archive(p) or (p.is_dir() and not p.is_symlink()):
            continue
        out.append(f"{p}: not a submission (a folder, .zip, .tar.gz or .tgz); skipped")
    return out


def discover(paths: Iterable[Path], exclude: Iterable[Path] = ()) -> Discovery:
    """Submissions from the command line: each path is a submission or a folder of them.

    A path that does not exist (or is neither a folder nor an archive) is an error: the caller
    stops before writing anything.  Two submissions with the same student id (``bob/`` and
    ``bob.zip``, or the same name in two folders, or ids that differ only in case) are both
    refused: neither is graded in the other's place.  Paths in `exclude` (the results
    folder) are never taken as submissions.
    """
    skip = {Path(p).resolve() for p in exclude}
    found: list[Source] = []
    result = Discovery()
    for raw in paths:
        path = Path(raw)
        if path.is_symlink() and not path.exists():
            result.errors.append(f"{path}: a broken link")
        elif not path.exists():
            result.errors.append(f"{path}: no such file or directory")
        elif is_archive(path):
            found.append(Source(student_id(path), path))
        elif path.is_dir() and classify(path) == "submission":
            found.append(Source(student_id(path), path))
        elif path.is_dir():
            found.extend(Source(student_id(p), p) for p in _entries(path) if p.resolve() not in skip)
            result.warnings.extend(_entry_warnings(path))
        else:
            result.errors.append(f"{path}: not a directory, .zip, .tar.gz or .tgz")
    groups: dict[str, list[Source]] = {}
    for src in found:
        groups.setdefault(src.student.casefold(), []).append(src)
    for key in sorted(groups):
        group = sorted(set(groups[key]), key=lambda s: (s.student, str(s.path)))
        if len(group) == 1:
            result.sources.append(group[0])
            continue
        for src in group:
            others = ", ".join(str(o.path) for o in group if o is not src)
            result.refused.append((src, f"student id {src.student!r} is also the id of {others}: neither is "
                                        "graded; rename one of them"))
    result.sources.sort(key=lambda s: s.student)
    return result


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
    """(priority, root, name) when `path` is a ``.py`` file directly in a root of one of the layouts.

    `name` is the file name without ``.py``; a module file when it is one of MODULES, else a
    candidate helper.  Only module files decide which root is taken (`_choose`).
    """
    parts = path.parts
    if any(p in _SKIP_DIRS for p in parts):
        return None
    if not parts[-1].endswith(".py"):
        return None
    name = parts[-1][:-3]
    if len(parts) == 2 and parts[0] == "assignment":
        return (0, "assignment", name)
    if len(parts) == 3 and parts[1] == "assignment":
        return (1, f"{parts[0]}/assignment", name)
    if len(parts) == 1:
        return (2, ".", name)
    if len(parts) == 2:
        return (3, parts[0], name)
    return None


def _helper_refusal(name: str) -> str:
    """Why a ``.py`` file next to the module files is not taken as a helper ("" when it is)."""
    if not _IDENT.fullmatch(name):
        return "not an importable module name"
    if name in RESERVED_NAMES or (name.startswith("__") and name.endswith("__")):
        return f"{name}.py is reserved (it would mean more to Python or pytest than a helper module)"
    return ""


def _choose(candidates: dict[str, tuple[int, str, str]], notes: list[str],
            not_taken: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Pick one root (the best layout holding module files; ties go to the sorted first) and the
    files taken from it: name -> key.  Helpers over the cap, and reserved or unimportable names,
    are recorded in `not_taken` with the reason."""
    modules = {k: v for k, v in candidates.items() if v[2] in MODULES}
    if not modules:
        return "", {}
    best = min(prio for prio, _, _ in modules.values())
    roots = sorted({root for prio, root, _ in modules.values() if prio == best})
    root = roots[0]
    if len(roots) > 1:
        notes.append(f"several folders hold module files ({', '.join(roots)}); took {root}/")
    chosen: dict[str, str] = {}
    helpers = 0
    for key, (prio, r, name) in sorted(candidates.items()):
        if prio != best or r != root:
            continue
        if name in MODULES:
            chosen[name] = key
            continue
        why = _helper_refusal(name)
        if not why and helpers >= MAX_HELPERS:
            why = f"more than {MAX_HELPERS} helper files"
        if why:
            if name != "__init__":  # every release copy has one: not worth a note
                not_taken[key] = why
            continue
        helpers += 1
        chosen[name] = key
    return root, chosen


# -- reading -----------------------------------------------------------------------------------

def _read_capped(stream: io.BufferedIOBase | io.RawIOBase | object, what: str) -> bytes:
    data = stream.read(MAX_MODULE_BYTES + 1)  # type: ignore[attr-defined]
    if len(data) > MAX_MODULE_BYTES:
        raise _TooBig(f"{what} is larger than {MAX_MODULE_BYTES // 2**20} MiB")
    return data


class _TooBig(Exception):
    pass


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def source_bytes(data: bytes) -> tuple[bytes | None, str]:
    """(the bytes to stage, "") for a UTF-8 Python source, or (None, why it is refused).

    Refused: bytes that are not valid UTF-8, and a coding declaration (PEP 263, first two
    lines) naming any encoding other than UTF-8.  A leading UTF-8 byte-order mark is dropped
    (`ast.parse` of the text would choke on it while the import skips it).
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    for line in data.splitlines()[:2]:
        m = _COOKIE.match(line)
        if m:
            declared = m.group(1).decode("ascii", "replace")
            try:
                name = codecs.lookup(declared).name
            except LookupError:
                name = ""
            if name != "utf-8":
                return None, (f"declares the source encoding {declared!r}; only UTF-8 is accepted "
                              "(remove the coding line and save the file as UTF-8)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not valid UTF-8 (byte {exc.start}); save it as UTF-8"
    return data, ""


def _dir_candidates(folder: Path, links: dict[str, str] | None = None) -> dict[str, tuple[int, str, str]]:
    """The regular ``.py`` files at layout positions (key: relative path).  Symlinks at those
    positions (and a symlinked ``assignment/`` folder) are never followed; they are recorded in
    `links` (relative path -> why not taken) when given."""
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
            elif entry.is_symlink() and links is not None:
                if entry.name == "assignment" and depth <= 2:
                    links[f"{sub}/"] = "a symlink to a folder (never followed; only regular files are taken)"
                elif _layout_of(sub) is not None and _layout_of(sub)[2] in MODULES:
                    links[str(sub)] = "a symlink (only regular files are taken)"

    walk(folder, PurePosixPath(), 1)
    return out


def _stage_directory(src: Path, notes: list[str], not_taken: dict[str, str]) -> tuple[str, dict[str, bytes]]:
    links: dict[str, str] = {}
    candidates = _dir_candidates(src, links)
    root, chosen = _choose(candidates, notes, not_taken)
    if not chosen:  # nothing regular to take: say which links were refused
        not_taken.update(links)
    else:
        prefix = "" if root == "." else root + "/"
        not_taken.update({k: v for k, v in links.items() if k.startswith(prefix) and "/" not in k[len(prefix):]})
    files: dict[str, bytes] = {}
    for module, key in chosen.items():
        path = src / key
        try:  # open without following a symlink swapped in since the walk
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            not_taken[key] = f"cannot be read ({exc.strerror})"
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if module not in MODULES and st.st_size > MAX_MODULE_BYTES:
                not_taken[key] = f"larger than {MAX_MODULE_BYTES // 2**20} MiB"
                continue
            if not stat.S_ISREG(st.st_mode):
                not_taken[key] = "not a regular file"
                continue
            if st.st_nlink > 1:  # a hard link could point at any file on this machine
                not_taken[key] = "a hard link (only regular files are taken)"
                continue
            files[module] = _read_capped(f, key)
    return root, files


def _note_unsafe(count: int, notes: list[str]) -> None:
    """One note for the archive entries with absolute or ``..`` paths (their names are not echoed:
    they may hold anything, including paths of this machine)."""
    if count:
        notes.append(f"ignored {count} archive entr{'y' if count == 1 else 'ies'} with an unsafe path "
                     "(absolute, or climbing out with ..)")


def _zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def _stage_zip(src: Path, notes: list[str], not_taken: dict[str, str]) -> tuple[str, dict[str, bytes]]:
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
        unsafe = 0
        for info in infos:
            norm = _normalise(info.filename)
            if norm is None:
                unsafe += 1
                continue
            if info.is_dir():
                continue
            layout = _layout_of(norm)
            if layout is None:
                continue
            if _zip_is_symlink(info):
                not_taken[str(norm)] = "a symlink (only regular files are taken)"
                continue
            candidates[str(norm)] = layout
            by_key[str(norm)] = info
        _note_unsafe(unsafe, notes)
        root, chosen = _choose(candidates, notes, not_taken)
        files: dict[str, bytes] = {}
        for module, key in chosen.items():
            info = by_key[key]
            if info.file_size > MAX_MODULE_BYTES and module not in MODULES:
                not_taken[key] = f"larger than {MAX_MODULE_BYTES // 2**20} MiB"
                continue
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


def _stage_tar(src: Path, notes: list[str], not_taken: dict[str, str]) -> tuple[str, dict[str, bytes]]:
    try:
        raw = gzip.open(src, "rb")
        counting = io.BufferedReader(_CountingReader(raw, MAX_UNPACKED_BYTES), buffer_size=1 << 16)
        tf = tarfile.open(fileobj=counting, mode="r|")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise RejectedSubmission(f"corrupt archive: not a readable .tar.gz ({exc})") from None
    candidates: dict[str, tuple[int, str, str]] = {}
    contents: dict[str, bytes] = {}
    count = 0
    unsafe = 0
    try:
        with tf:
            for member in tf:
                count += 1
                if count > MAX_MEMBERS:
                    raise RejectedSubmission(f"the archive has more than {MAX_MEMBERS} entries")
                norm = _normalise(member.name)
                if norm is None:
                    unsafe += 1
                    continue
                layout = _layout_of(norm)
                if layout is None:
                    continue
                if not member.isreg():
                    kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "special file"
                    not_taken[str(norm)] = f"a {kind} (only regular files are taken)"
                    continue
                if member.size > MAX_MODULE_BYTES and layout[2] not in MODULES:
                    not_taken[str(norm)] = f"larger than {MAX_MODULE_BYTES // 2**20} MiB"
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
    _note_unsafe(unsafe, notes)
    root, chosen = _choose(candidates, notes, not_taken)
    return root, {module: contents[key] for module, key in chosen.items()}


def stage(source: Source, dest: Path) -> Staged:
    """Copy the module files and helpers of `source` into the fresh folder `dest` (0755/0644).

    Raises RejectedSubmission with a plain reason for a submission that cannot be read safely.
    A file that is not taken (not UTF-8, another encoding declared, a symlink, a reserved
    name...) is listed in `Staged.not_taken` with the reason; its module grades as missing.
    """
    notes: list[str] = []
    not_taken: dict[str, str] = {}
    path = source.path
    try:
        if path.is_dir():
            root, files = _stage_directory(path, notes, not_taken)
        else:
            size = path.stat().st_size
            if size > MAX_ARCHIVE_BYTES:
                raise RejectedSubmission(f"the archive is {size / 2**20:.0f} MiB (the cap is "
                                         f"{MAX_ARCHIVE_BYTES // 2**20} MiB)")
            stager = _stage_zip if path.name.lower().endswith(".zip") else _stage_tar
            root, files = stager(path, notes, not_taken)
    except _TooBig as exc:
        raise RejectedSubmission(str(exc)) from None
    except OSError as exc:
        raise RejectedSubmission(f"cannot be read: {exc.strerror or exc}") from None
    dest.mkdir(parents=True, exist_ok=False)
    os.chmod(dest, 0o755)
    staged = Staged(folder=dest, notes=notes, layout=root, not_taken=not_taken)
    prefix = "" if root in ("", ".") else root + "/"
    for name in sorted(files, key=lambda n: (n not in MODULES, MODULES.index(n) if n in MODULES else 0, n)):
        data, why = source_bytes(files[name])
        if data is None:
            staged.not_taken[f"{prefix}{name}.py"] = why
            continue
        target = dest / f"{name}.py"
        target.write_bytes(data)
        os.chmod(target, 0o644)
        (staged.files if name in MODULES else staged.helpers)[name] = hashlib.sha256(data).hexdigest()
    if staged.empty:
        staged.seen = _first_entries(path)
    return staged


def _first_entries(path: Path, limit: int = 5) -> list[str]:
    """A few names the submission holds (to tell a student what an "empty" submission held)."""
    names: list[str] = []
    try:
        if path.is_dir():
            for entry in sorted(os.scandir(path), key=lambda e: e.name)[:limit]:
                names.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
        elif path.name.lower().endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                names = [i.filename for i in zf.infolist()[:limit]]
        else:
            with tarfile.open(path, "r:gz") as tf:
                for member in tf:
                    names.append(member.name)
                    if len(names) >= limit:
                        break
    except Exception:  # noqa: BLE001 - only for a message
        pass
    return [n[:80] for n in names]


def source_description(staged: Staged) -> list[str]:
    """Plain lines about the files taken and not taken, for the student's summary."""
    lines = []
    if staged.helpers:
        lines.append("Helper modules taken: " + ", ".join(f"{h}.py" for h in sorted(staged.helpers)))
    for key, why in sorted(staged.not_taken.items()):
        lines.append(f"Not taken: {key}: {why}")
    return lines


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

