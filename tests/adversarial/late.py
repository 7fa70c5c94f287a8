"""Adversarial git submissions aimed at the late policy (issue 23, root cause 5).

A submission's time, when no ``--submitted-at`` row names it, is the date of the last commit
touching its graded files, provided the files are what that commit holds
(`grader.intake.gittime`).  A check that is easy to break gives a late student an *unknown*
time, i.e. no penalty by default.  Every case here is committed five days after the deadline
and must get the same late decision as its honest twin (``late_plain``: an ASCII repository,
no attributes): status ``late`` from ``git``, the cap (50% at 10%/day), the same final score.

* ``late_non_ascii_crlf``: the module folder has a non-ASCII name (``git ls-tree`` quotes such
  a path unless asked for raw bytes), ``.gitattributes`` says ``* text eol=crlf ident``, so the
  checkout holds CRLF lines and an expanded ``$Id: <blob> $`` where the repository holds LF and
  ``$Id$``; the Python files carry ``filter=evil``, a driver the repository's own config names
  (``touch`` a marker file): it must never run.
* ``late_crlf_committed``: files committed with CRLF line endings as such (no conversion), in a
  folder whose name is pathspec magic (``:(exclude)``, ``*``, ``[``).

They are built as a grader sees them: a `git clone` of the student's repository (the checkout
applies the student's attributes).  Graded, with a late policy, by
``tests/kit/test_late_policy.py::test_adversarial_late_git_submissions``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from grader import KIT_ROOT

#: Committed five days (and a bit) after the deadline the test grades with.
DEADLINE = "2026-12-01T23:59:00Z"
LATE = "2026-12-06T10:00:00Z"
TWIN = "late_plain"


def git(repo: Path | None, *args: str, date: str | None = None) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "s",
           "GIT_AUTHOR_EMAIL": "s@x", "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@x",
           **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})}
    subprocess.run(["git", *args] if repo is None else ["git", "-C", str(repo), *args], check=True, env=env,
                   capture_output=True, timeout=60)


def _commit(work: Path, files: dict[str, bytes], *config: tuple[str, str]) -> None:
    work.mkdir(parents=True)
    git(work, "init", "-q")
    for key, value in config:
        git(work, "config", key, value)
    for rel, data in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "work", date=LATE)


def _clone(work: Path, dest: Path) -> Path:
    git(None, "clone", "-q", str(work), str(dest))
    return dest


def _solution() -> bytes:
    return (KIT_ROOT / "solutions" / "memory.py").read_bytes()


def late_plain(root: Path, scratch: Path, marker: Path) -> Path:
    _commit(scratch / "late_plain", {"assignment/memory.py": _solution()})
    return _clone(scratch / "late_plain", root / "late_plain")


def late_non_ascii_crlf(root: Path, scratch: Path, marker: Path) -> Path:
    work = scratch / "late_non_ascii_crlf"
    _commit(work, {".gitattributes": b"* text eol=crlf ident\n*.py filter=evil\n",
                   "devoir é/assignment/memory.py": b"# $Id$\n" + _solution()})
    dest = _clone(work, root / "late_non_ascii_crlf")
    for key in ("clean", "smudge", "process"):  # the student's own config names a program: never run
        git(dest, "config", f"filter.evil.{key}", f"touch {marker}; cat")
    git(dest, "config", "filter.evil.required", "true")
    return dest


def late_crlf_committed(root: Path, scratch: Path, marker: Path) -> Path:
    work = scratch / "late_crlf_committed"
    _commit(work, {":(exclude)*[1]/assignment/memory.py": _solution().replace(b"\n", b"\r\n")},
            ("core.autocrlf", "false"))
    return _clone(work, root / "late_crlf_committed")


#: name -> builder(root of submissions, scratch folder, marker path that must never appear)
CASES: dict[str, Callable[[Path, Path, Path], Path]] = {
    TWIN: late_plain,
    "late_non_ascii_crlf": late_non_ascii_crlf,
    "late_crlf_committed": late_crlf_committed,
}


def build(root: Path, scratch: Path, marker: Path) -> dict[str, Path]:
    """Every case, cloned into `root` (a folder of submissions)."""
    root.mkdir(parents=True, exist_ok=True)
    out = {name: make(root, scratch, marker) for name, make in CASES.items()}
    assert not marker.exists(), "a filter ran while building the cases"
    shutil.rmtree(scratch, ignore_errors=True)
    return out
