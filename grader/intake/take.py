"""Which files the grader takes from a submission, and why the others are not taken.

From a submission the grader takes the module files `assignment/<module>.py` and the student's
own helper modules next to them (`assignment/utils.py`, imported relatively: ``from . import
utils``), and nothing else: a ``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``.pth``
file or any file outside that one folder never reaches the sandbox or the test process.  The
files are looked for, in this order, under one root:

1. ``assignment/<module>.py``                  (a copy of the student release)
2. ``<folder>/assignment/<module>.py``         (a zipped release folder, e.g. alice/assignment/)
3. ``<module>.py``                             (just the module files)
4. ``<folder>/<module>.py``                    (a zipped assignment folder)
5. deeper, up to `MAX_NEST` folders: ``Downloads/hw1/assignment/<module>.py``, ``a/b/<module>.py``
   (a shallower root first; at one depth, a folder named ``assignment`` first)

The first layout that holds at least one module file wins, and all files are taken from that
single root (never mixed).  A module file that is missing grades as not attempted; a file
that is not taken is named, with the reason, in the student's results.

Text: a file must be UTF-8 and may declare no other source encoding (a ``# -*- coding: latin-1
-*-`` cookie would make ``ast.parse(str)``, which the static checks use, read something other
than what the import runs); a leading UTF-8 byte-order mark is dropped (`source_bytes`).

Size: a file may have 256 KiB and the files taken 1 MiB together (the static checks' parse
budget, `grader.rules.sources`): a helper over either cap is not taken, module files over either make
the submission rejected (`grader.intake.unpack` applies them while reading).

Names: a helper's name has at most `MAX_HELPER_NAME` characters (it becomes a module name and a
file name in the staging folder), and a file at a layout position whose path is longer than
`MAX_PATH_CHARS` is not read (no file system holds one: each name has at most 255 bytes).

What staging says about a submission (the files not taken and why, notes, the names an "empty"
submission holds) is made from the submission's own names, so the submission steers its count and
length: `Record` caps it where it is made, the one place (see `Record`, `listed`).

These rules work on names and bytes only: reading the files out of a folder or an archive
safely is `grader.intake.unpack`, writing the staged folder `grader.intake.stage`.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePosixPath

from grader import MODULES
from grader.untrusted import shown

MAX_HELPERS = 20  # extra .py files (the student's own helper modules) taken next to the module files
#: Never taken as a helper: files that mean something to Python or pytest beyond an import by name.
RESERVED_NAMES = {"__init__", "__main__", "conftest", "sitecustomize", "usercustomize", "setup"}
#: Folders never searched (in archives, in directories, nor as submissions in a folder of them).
SKIP_DIRS = {"__MACOSX", ".git", "__pycache__", ".venv", "node_modules"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Characters of a helper's name (without ``.py``).  It becomes a module name, a file name in the
#: staging folder and a key in ``sys.modules``: 64 is far past any name a person types in an
#: import (PEP 8: short), and keeps the staged path well under the 255 bytes a file name may have
#: (a 10,000-character name made the write fail with "File name too long" on every rerun).
MAX_HELPER_NAME = 64
#: Characters of a path at a layout position that is read at all: a folder and a file name of 255
#: each (the most a file system allows) with ``assignment/`` fit; a longer one exists only in an
#: archive, and is refused with a reason before it is held anywhere.
MAX_PATH_CHARS = 512
#: Entries of each list staging records about a submission (files not taken, notes), and the
#: characters of each name and of each reason or note as recorded (`Record`).
MAX_LISTED, NAME_LIMIT, REASON_LIMIT = 20, 200, 300
#: Folders above a module file that is still found (``Downloads/hw1/assignment/memory.py``: 3):
#: a student zips the folder they worked in, wherever it sat.  Deeper ones are not looked for.
MAX_NEST = 4
#: Where module files are looked for, as said to a student whose submission holds none.
WHERE_LOOKED = (f"looked for <module>.py (e.g. memory.py) at the top, in assignment/, and in folders up to "
                f"{MAX_NEST} deep")


def listed(name: str) -> str:
    """A name from the submission (a path, an entry) as staging records it: through
    `grader.untrusted.shown` (control characters escaped), at most NAME_LIMIT characters."""
    return shown(name, NAME_LIMIT)


class Record:
    """What staging says about one submission: notes for the student, and the files not taken with
    the reason (path -> why).  The one place where both are capped, as they are made: every name
    through `listed`, every reason and note at REASON_LIMIT characters, at most MAX_LISTED entries
    each (a module file's refusal has room of its own: it says why a module scores nothing), and
    past that one line saying how many more there were.  A submission of 20,000 entries with
    5,000-character names wrote 386 MB of results (202 MB of results.json) before this."""

    def __init__(self) -> None:
        self._notes: list[str] = []
        self._not_taken: dict[str, str] = {}
        self._more_notes = 0
        self._more_files = 0

    def note(self, text: str) -> None:
        if len(self._notes) < MAX_LISTED:
            self._notes.append(shown(text, REASON_LIMIT))
        else:
            self._more_notes += 1

    def refuse(self, path: str, why: str) -> None:
        """`path` (a file in the submission) is not taken, because `why` (a later reason for the
        same path replaces the earlier one)."""
        key = listed(path)
        module = key.rsplit("/", 1)[-1].removesuffix(".py") in MODULES
        if key in self._not_taken or len(self._not_taken) < MAX_LISTED + (len(MODULES) if module else 0):
            self._not_taken[key] = shown(why, REASON_LIMIT)
        else:
            self._more_files += 1

    @property
    def notes(self) -> list[str]:
        more = [f"and {self._more_notes:,} more notes (not listed)"] if self._more_notes else []
        return self._notes + more

    @property
    def not_taken(self) -> dict[str, str]:
        more = {f"… and {self._more_files:,} more": "files not taken, not listed here"} if self._more_files else {}
        return {**self._not_taken, **more}


def layout_of(path: PurePosixPath) -> tuple[int, str, str] | None:
    """(priority, root, name) when `path` is a ``.py`` file directly in a root of one of the layouts.

    `name` is the file name without ``.py``; a module file when it is one of MODULES, else a
    candidate helper.  Only module files decide which root is taken (`choose`).
    """
    parts = path.parts
    if not parts or any(p in SKIP_DIRS for p in parts):
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
    if len(parts) - 1 <= MAX_NEST:  # deeper: shallower first, then `assignment/` first at one depth
        return (2 * (len(parts) - 1) + (parts[-2] != "assignment"), "/".join(parts[:-1]), name)
    return None


def _helper_refusal(name: str) -> str:
    """Why a ``.py`` file next to the module files is not taken as a helper ("" when it is)."""
    if len(name) > MAX_HELPER_NAME:  # (before anything else looks at a name of any length)
        return (f"a helper's name has at most {MAX_HELPER_NAME} characters (it becomes a module name); "
                f"this one has {len(name):,}")
    if not _IDENT.fullmatch(name):
        return "not an importable module name"
    if name in RESERVED_NAMES or (name.startswith("__") and name.endswith("__")):
        return f"{name}.py is reserved (it would mean more to Python or pytest than a helper module)"
    return ""


def too_long(path: str, record: Record) -> bool:
    """True (and `path` refused in `record`, with the reason) when a path at a layout position is
    longer than MAX_PATH_CHARS: it is never held, read or taken."""
    if len(path) <= MAX_PATH_CHARS:
        return False
    record.refuse(path, f"a path of {len(path):,} characters (at most {MAX_PATH_CHARS} are read)")
    return True


def choose(candidates: dict[str, tuple[int, str, str]], record: Record) -> tuple[str, dict[str, str]]:
    """Pick one root (the best layout holding module files; ties go to the sorted first) and the
    files taken from it: name -> key.  Helpers over the cap, and reserved, unimportable or too
    long names, are refused in `record` with the reason."""
    modules = {k: v for k, v in candidates.items() if v[2] in MODULES}
    if not modules:
        return "", {}
    best = min(prio for prio, _, _ in modules.values())
    roots = sorted({root for prio, root, _ in modules.values() if prio == best})
    root = roots[0]
    if len(roots) > 1:
        more = f" and {len(roots) - 3:,} more" if len(roots) > 3 else ""
        record.note(f"several folders hold module files ({', '.join(listed(r) for r in roots[:3])}{more}); "
                    f"took {listed(root)}/")
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
                record.refuse(key, why)
            continue
        helpers += 1
        chosen[name] = key
    return root, chosen


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
