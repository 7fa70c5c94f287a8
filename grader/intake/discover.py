"""Finding the submissions a command line names, their student ids, and their fingerprints.

A submission is a directory, a ``.zip``, a ``.tar.gz``/``.tgz`` or a ``.ipynb`` (or a folder of those); the
student id is its name without the extension (see `student_id`: ids are injective, and two
submissions with the same id are both refused, never one graded in place of the other).
`fingerprint` is a content hash of what was submitted (a submission already graded for the
same content is kept).  Nothing here reads a module file for grading: what is taken out of a
submission is `grader.intake.take`, how it is read `grader.intake.unpack`, where it is written
`grader.intake.stage`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader import MODULES
from grader.intake.notebook import holds_notebooks, is_notebook, notebook_paths, notebooks_at_top
from grader.intake.take import SKIP_DIRS
from grader.notebooks.convert import MAX_NOTEBOOK_BYTES
from grader.intake.unpack import MAX_MODULE_BYTES, RejectedSubmission, dir_candidates

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")

#: What a command that found no submission says it expected (README: "What a submissions folder
#: looks like").
SUBMISSIONS_LAYOUT = """\
expected a folder of submissions, one folder or archive per student (the student id is its name), e.g.
  submissions/alice/assignment/memory.py   a folder: module files in assignment/ or at its top
  submissions/bob.zip                      a .zip, .tar.gz or .tgz holding the same
  submissions/carol/memory.py
or one student's folder or archive itself: grader grade submissions/alice --out results/"""


@dataclass(frozen=True)
class Source:
    """One submission as found on disk."""

    student: str
    path: Path

    @property
    def kind(self) -> str:
        if self.path.is_dir():
            return "directory"
        return "zip" if self.path.name.lower().endswith(".zip") else "notebook" if is_notebook(self.path) else "tar.gz"


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
    for suffix in (*ARCHIVE_SUFFIXES, ".ipynb"):
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
        found = dir_candidates(folder)
    except RejectedSubmission:
        return None
    return {k: v for k, v in found.items() if v[2] in MODULES} if modules_only else found


def _modules_near_top(folder: Path) -> bool:
    """Module files in one of the four layouts near `folder`'s top (`take.layout_of` priorities
    0-3), or too many entries to tell: a submission of a folder of them.  A module file found only
    deeper (``a/b/c/memory.py``) makes `folder` a student's own nested folder, not a student."""
    found = _candidates_or_all(folder, modules_only=True)
    return found is None or any(prio <= 3 for prio, _, _ in found.values())


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
    """The entries of a folder of submissions: archives, folders and notebooks (``alice_memory.ipynb``)."""
    children = sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in SKIP_DIRS)
    return [p for p in children if is_archive(p) or is_notebook(p) or (p.is_dir() and not p.is_symlink())]


#: A notebook name a release or Jupyter/Colab gives a module's notebook: ``memory.ipynb``,
#: ``Copy of memory.ipynb``, ``memory (1).ipynb``, ``memory-Copy1.ipynb``.
_RELEASE_NAME = re.compile(r"(?:Copy of )?(?P<m>[a-z][a-z0-9_]*)(?: \(\d+\)|-Copy\d+)?", re.IGNORECASE)


def _notebook_module(name: str) -> tuple[str, bool]:
    """(the module a notebook's file name names, whether it is a release name); ("", False) for none."""
    stem = name[: -len(".ipynb")]
    m = _RELEASE_NAME.fullmatch(stem)
    if m and m["m"].lower() in MODULES:
        return m["m"].lower(), True
    named = [mod for mod in MODULES if mod in stem.lower()]
    return (max(named, key=len), False) if named else ("", False)


def _notebook_kind(folder: Path) -> str:
    """For notebooks (`grader.intake.notebook`): "submission" (one student's notebooks at the top or
    in ``notebooks/``), "folder" (notebooks of several students: two named for the same module other
    than by a release name, ``alice_memory.ipynb`` and ``bob_memory.ipynb``), "ambiguous" (a
    student's notebooks beside what looks like other students' submissions), or "" (no notebook)."""
    loose: dict[str, int] = {}
    own = False
    for p in (p for p in _entries(folder) if is_notebook(p)):
        module, release = _notebook_module(p.name)
        own |= release
        loose[module] = loose.get(module, 0) + (not release)
    several = any(n > 1 for m, n in loose.items() if m)
    own = own or notebooks_at_top(folder / "notebooks") or (sum(loose.values()) > 0 and not several)
    if not own:
        return "folder" if several else ""
    others = any(p.name not in ("notebooks", "assignment") and not is_notebook(p)
                 and (is_archive(p) or _modules_near_top(p) or holds_notebooks(p)) for p in _entries(folder))
    return "ambiguous" if others or several else "submission"


def classify(folder: Path) -> str:
    """"submission", "folder" (of submissions) or "ambiguous" for a directory given on the command line.

    A submission holds module files at its top or in `assignment/`, or one student's notebooks; a
    folder holds archives, per-student notebooks or sub-folders with module files or notebooks; a
    folder whose only module files sit one level down (`alice/assignment/...`) is one submission; an
    empty folder is an (empty) submission.  A folder that holds a student's notebooks beside other
    students' submissions is "ambiguous": refused, never guessed (two students' files never merge).
    """
    if _direct_layout(folder):
        return "submission"
    kind = _notebook_kind(folder)
    if kind:
        return kind
    entries = _entries(folder)
    if any(is_archive(p) or _modules_near_top(p) or holds_notebooks(p) for p in entries):
        return "folder"
    if _modules_near_top(folder) and _candidates_or_all(folder, modules_only=True):  # (None: too big)
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
        if p.name.startswith(".") and p.name not in SKIP_DIRS and (is_archive(p) or p.is_dir()):
            out.append(f"{p}: a hidden entry (its name starts with '.'); skipped")
            continue
        if p.name.startswith(".") or p.name in SKIP_DIRS or is_archive(p) or is_notebook(p) or \
                (p.is_dir() and not p.is_symlink()):
            continue
        out.append(f"{p}: not a submission (a folder, .zip, .tar.gz, .tgz or .ipynb); skipped")
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
        elif is_archive(path) or is_notebook(path):
            found.append(Source(student_id(path), path))
        elif path.is_dir() and (kind := classify(path)) == "submission":
            found.append(Source(student_id(path), path))
        elif path.is_dir() and kind == "ambiguous":
            result.errors.append(f"{path}: holds notebooks of one submission (at its top or in notebooks/) beside "
                                 "other students' folders, archives or notebooks: is it one student's submission or a "
                                 "folder of them? Move the notebooks into a student's folder, or name the submissions "
                                 "one by one")
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
        try:
            notebooks = notebook_paths(path)  # (what grader.intake.notebook may take)
        except RejectedSubmission:
            notebooks = {}
        for key, file in sorted(notebooks.items()):
            h.update(key.encode() + b"\0")
            try:
                with open(file, "rb") as f:
                    h.update(f.read(MAX_NOTEBOOK_BYTES + 1))
            except OSError:
                h.update(b"<unreadable>")
    else:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
