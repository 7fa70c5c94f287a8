"""Staging a submission's notebooks: ``.ipynb`` files read safely, turned into module files.

A submission may hand in notebooks (`grader.notebooks`) instead of, or beside, module files: one
``.ipynb`` alone (``grader grade memory.ipynb``, ``grader check memory.ipynb``), or in a folder or
an archive: ``memory.ipynb`` at the top, ``notebooks/memory.ipynb`` (a release copy), nbgrader's
``submitted/<student>/<assignment>/memory.ipynb`` (grading ``submitted/``), up to `MAX_DEPTH`
folders down.  The folder that holds notebooks nearest the top is taken (ties: sorted first);
notebooks elsewhere are named as not taken.

The caps, before anything is parsed: at most `MAX_NOTEBOOKS` notebooks, each at most
`grader.notebooks.convert.MAX_NOTEBOOK_BYTES` and all of them together as much (`_Budget`: a larger
one is refused unread, with the reason), read without following links (a linked one is listed as not
taken), from archives through `grader.intake.unpack`'s bounded readers.  Parsing and conversion are
`grader.notebooks.convert` (a bounded child each, outputs never read), within one parse deadline for
the whole submission (`PARSE_SECONDS`).

Which notebook is the module: the module its content names (kit metadata, else its answer cells'
``grade_id``s), else its file name ``<module>.ipynb``; a note says so when the name is another
module's.  Two notebooks for one module (``memory.ipynb`` and Colab's "Copy of memory.ipynb"): an
answered one before an untouched one, else ``<module>.ipynb``, else the first by name; the other is
named as not taken.  A notebook is graded for its module where the submission has no module file for
it, or only the untouched stub (`_normal`: line ends, a BOM and trailing white space do not count);
where the student also wrote the module file, the file is graded and the notebook named as not taken.
The module text is checked against the same caps as module files (one file, all files together)
and then staged like one.
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

from grader import MODULES
from grader.intake.take import SKIP_DIRS, Record, listed
from grader.intake.unpack import (MAX_MEMBERS, MAX_MODULE_BYTES, MAX_SOURCE_BYTES, RejectedSubmission, _normalise,
                                 _open_zip, _tar_members)

SUFFIX = ".ipynb"
MAX_DEPTH = 4  # folders above a notebook that is still found (submitted/alice/ps1/memory.ipynb from submitted/: 2)
MAX_NOTEBOOKS = len(MODULES)  # one per module: a submission is one student's work


def is_notebook(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(SUFFIX)


def _position(path: PurePosixPath) -> bool:
    """A notebook the grader looks at: ``.ipynb``, at most MAX_DEPTH folders down, none hidden or skipped
    (``.ipynb_checkpoints/`` holds Jupyter's autosaves)."""
    parts = path.parts
    return (bool(parts) and parts[-1].lower().endswith(SUFFIX) and len(parts) <= MAX_DEPTH + 1
            and not any(p.startswith(".") or p in SKIP_DIRS for p in parts))


def _cap() -> int:
    from grader.notebooks.convert import MAX_NOTEBOOK_BYTES

    return MAX_NOTEBOOK_BYTES


def _refuse_size(key: str, size: int, record: Record) -> None:
    from grader.notebooks.convert import too_big

    record.refuse(key, too_big(size))


class _Budget:
    """The bytes all of a submission's notebooks may hold together (`_cap()`, the cap of one), counted
    from their sizes before any is read: ten notebooks just under the cap are not ten times the work."""

    def __init__(self, record: Record) -> None:
        self.left, self.record = _cap(), record

    def take(self, key: str, size: int) -> bool:
        if size > _cap():
            _refuse_size(key, size, self.record)
            return False
        if size > self.left:
            self.record.refuse(key, f"not read: the submission's notebooks hold more than {_cap() // 2**20} MiB "
                                    "together (clear their outputs, Edit > Clear All Outputs)")
            return False
        self.left -= size
        return True


def notebook_paths(folder: Path, links: list[str] | None = None) -> dict[str, Path]:
    """The regular ``.ipynb`` files of a folder at notebook positions (relative path -> path); links not
    followed (a linked notebook's relative path goes to `links`)."""
    found: dict[str, Path] = {}
    count = 0

    def walk(d: Path, rel: PurePosixPath) -> None:
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
            if entry.is_dir(follow_symlinks=False) and len(sub.parts) <= MAX_DEPTH and _position(sub / "x.ipynb"):
                walk(Path(entry.path), sub)
            elif entry.is_file(follow_symlinks=False) and _position(sub):
                found[str(sub)] = Path(entry.path)
            elif links is not None and entry.is_symlink() and _position(sub):
                links.append(str(sub))

    walk(folder, PurePosixPath())
    return found


def _chosen(keys: list[str], record: Record) -> list[str]:
    """The notebooks of the folder nearest the top (ties: sorted first), at most MAX_NOTEBOOKS, ``<module>.ipynb``
    first; the others refused."""
    if not keys:
        return []
    folders = sorted({str(PurePosixPath(k).parent) for k in keys}, key=lambda f: (0 if f == "." else f.count("/") + 1, f))
    taken = sorted((k for k in keys if str(PurePosixPath(k).parent) == folders[0]),
                   key=lambda k: (PurePosixPath(k).stem not in MODULES, k))  # (module names first: caps, budget)
    for k in sorted(set(keys) - set(taken)):
        record.refuse(k, f"notebooks are taken from one folder: {listed(folders[0])}/")
    for k in taken[MAX_NOTEBOOKS:]:
        record.refuse(k, f"more than {MAX_NOTEBOOKS} notebooks")
    return taken[:MAX_NOTEBOOKS]


def _read_folder(folder: Path, record: Record) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    links: list[str] = []
    budget = _Budget(record)
    paths = notebook_paths(folder, links)
    for key in links:
        record.refuse(key, "a symlink (only regular files are taken)")
    for key in _chosen(list(paths), record):
        try:
            fd = os.open(folder / key, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            record.refuse(key, f"cannot be read ({exc.strerror})")
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                record.refuse(key, "not a regular file (only regular files are taken)")
            elif budget.take(key, st.st_size):
                data = f.read(_cap() + 1)
                if len(data) > _cap():
                    _refuse_size(key, len(data), record)
                else:
                    out[key] = data
    return out


def _read_zip(path: Path, record: Record) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    budget = _Budget(record)
    with _open_zip(path) as zf:
        infos = {str(n): i for i in zf.infolist() if not i.is_dir()
                 for n in [_normalise(i.filename)] if n is not None and _position(n)}
        for key in _chosen(list(infos), record):
            info = infos[key]
            if (info.external_attr >> 16) and stat.S_ISLNK(info.external_attr >> 16):
                record.refuse(key, "a symlink (only regular files are taken)")
            elif budget.take(key, info.file_size):
                try:
                    with zf.open(info) as f:
                        data = f.read(_cap() + 1)
                except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
                    raise RejectedSubmission(f"corrupt archive: cannot read {key} ({type(exc).__name__})") from None
                if len(data) > _cap():
                    _refuse_size(key, len(data), record)
                else:
                    out[key] = data
    return out


def _read_tar(path: Path, record: Record) -> dict[str, bytes]:
    sizes: dict[str, int] = {}
    for _, member in _tar_members(path):  # names and sizes first
        norm = _normalise(member.name)
        if norm is not None and _position(norm) and member.isreg():
            sizes[str(norm)] = member.size
    budget = _Budget(record)
    wanted = {key for key in _chosen(list(sizes), record) if budget.take(key, sizes[key])}
    out: dict[str, bytes] = {}
    if wanted:
        for tf, member in _tar_members(path):
            norm = _normalise(member.name)
            if norm is not None and str(norm) in wanted and member.isreg():
                f = tf.extractfile(member)
                if f is not None:
                    out[str(norm)] = f.read(_cap() + 1)[: _cap() + 1]
    return out


def read_notebooks(path: Path, record: Record) -> dict[str, bytes]:
    """The notebooks of a submission (a lone .ipynb, a folder, a .zip or a .tar.gz): key -> bytes."""
    if is_notebook(path):
        size = path.stat().st_size
        if size > _cap():
            _refuse_size(path.name, size, record)
            return {}
        with open(path, "rb") as f:
            return {path.name: f.read(_cap() + 1)}
    if path.is_dir():
        return _read_folder(path, record)
    if path.name.lower().endswith(".zip"):
        return _read_zip(path, record)
    return _read_tar(path, record)


def _normal(data: bytes) -> str:
    """A module file's text as far as "is it the untouched stub?" goes: no BOM, LF line ends, no
    trailing white space (a Windows checkout or an editor's save is not an answer)."""
    text = data.decode("utf-8-sig", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _candidates(notebooks: dict[str, bytes], layouts: dict, record: Record) -> dict[str, list[tuple]]:
    """module -> [(key, Converted, parsed)] of the notebooks that parse, in order (``<module>.ipynb`` first),
    all within one parse budget (`PARSE_SECONDS` for the submission)."""
    import time

    from grader.notebooks.convert import PARSE_SECONDS, NotebookRefused, convert, guess_module, parse

    wanted = [c.grade_id for _, cells in layouts.values() for c in cells]
    end = time.monotonic() + PARSE_SECONDS
    found: dict[str, list[tuple[str, object, dict]]] = {}
    for key in sorted(notebooks, key=lambda k: (PurePosixPath(k).stem not in layouts, k)):
        try:
            parsed = parse(notebooks.pop(key), wanted, end - time.monotonic())
        except NotebookRefused as exc:
            record.refuse(key, str(exc))
            continue
        stem = PurePosixPath(key).stem
        module = guess_module(parsed, layouts) or (stem if stem in layouts else "")
        if module not in MODULES:
            record.refuse(key, "not a notebook of this assignment's modules (no answer cell of the release in it)")
            continue
        done = convert(parsed, module, layouts[module][0], layouts[module][1])
        if stem in layouts and stem != module:
            done.notes.insert(0, f"a notebook of {module} named {listed(key)}: graded for {module}")
        found.setdefault(module, []).append((key, done, parsed))
    return found


def notebook_modules(path: Path, files: dict[str, bytes], record: Record) -> dict[str, bytes]:
    """The module files the submission's notebooks give (module -> bytes), where they apply (see the
    module docstring); `files` are the module files already taken.  Notes and refusals go to `record`."""
    from grader.notebooks.cells import load_layout
    from grader.notebooks.convert import stub_text

    notebooks = read_notebooks(path, record)
    if not notebooks:
        return {}
    layouts = load_layout()
    out: dict[str, bytes] = {}
    for module, found in sorted(_candidates(notebooks, layouts, record).items()):
        answered = [f for f in found if f[1].answered] or found[:1]  # an untouched one gives way to an answered copy
        key, done, _ = answered[0]
        for other, _, _ in found:
            if other != key:
                record.refuse(other, f"another notebook for {module} is graded ({listed(key)})")
        if module in files:  # a module file too: the notebook counts only beside an untouched stub
            edited = _normal(files[module]) != _normal(stub_text(layouts[module][1]).encode())
            if edited and done.answered:
                record.refuse(key, f"{module}.py holds answers too: the module file is graded, not the notebook")
            if edited or not done.answered:
                continue
        try:
            data = done.text.encode("utf-8")
        except UnicodeEncodeError:
            record.refuse(key, "holds text that is not valid Unicode (a lone surrogate)")
            continue
        if len(data) > MAX_MODULE_BYTES:
            raise RejectedSubmission(f"{listed(key)}: its answers make a module file larger than "
                                     f"{MAX_MODULE_BYTES // 1024} KiB")
        out[module] = data
        record.note("; ".join([f"{module}: graded from the notebook {listed(key)}", *done.notes]))
    total = sum(len(v) for k, v in files.items() if k not in out) + sum(map(len, out.values()))
    if total > MAX_SOURCE_BYTES:
        raise RejectedSubmission(f"the module files and notebooks hold more than {MAX_SOURCE_BYTES // 2**20} MiB of "
                                 "source together (the cap)")
    return out


def notebooks_at_top(folder: Path) -> bool:
    """A notebook right in `folder` or in its ``notebooks/`` (a student's folder, a release copy)."""
    for place in (folder, folder / "notebooks"):
        try:
            if any(e.is_file(follow_symlinks=False) and _position(PurePosixPath(e.name)) for e in os.scandir(place)):
                return True
        except OSError:
            continue
    return False


def holds_notebooks(folder: Path) -> bool:
    """Any notebook at a notebook position under `folder` (a student's folder in a folder of them)."""
    try:
        return bool(notebook_paths(folder))
    except RejectedSubmission:
        return True
