"""The time of a git submission: the committer date of the last commit touching ``assignment/``.

    git log -1 --format=%cI HEAD -- assignment

run so that nothing the submission controls can execute.  git reads a repository's own
``.git/config`` (where ``core.fsmonitor``, ``core.pager``, ``gpg.program`` with
``log.showSignature``, a promisor remote's ``ext::`` URL... name programs to run), so git never
sees the submission's ``.git`` as a repository: it runs on a *shadow* git directory of ours
(our config, the submission's ``HEAD``, ``packed-refs``, ``shallow`` and loose refs copied as
plain files, its object store reached read-only through ``objects/info/alternates``).  This also
makes ``safe.directory`` moot: the repository git opens is ours, so a repository owned by
another user needs no exception, and we never mark a student's repository safe.  On top:
no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), hooks off
(``core.hooksPath=/dev/null``), no replace refs, no lazy fetch, no protocol allowed, no
prompt, stdin closed, and a timeout.  git only *parses* the submission's objects, which git
does for untrusted clones every day.

A commit date is whatever the committer's clock (or ``GIT_COMMITTER_DATE``) said: results that
use it carry a warning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

#: Seconds one `git log` may take.
TIMEOUT = 20.0
#: Refs copied at most (loose files under .git/refs), and the size of each copied file.
MAX_REFS = 10_000
MAX_FILE = 16 * 2**20


class GitTimeError(Exception):
    """No commit time could be read; the message says why in the grader's own words (a per-student
    note, shown to the student); `detail` is git's own last line (instructor-only: ref names and
    such come from the submission)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def is_git_repo(folder: Path) -> bool:
    return folder.is_dir() and os.path.lexists(folder / ".git")


def _copy_file(src: Path, dest: Path) -> None:
    if src.is_symlink() or not src.is_file():
        return
    if src.stat().st_size > MAX_FILE:
        raise GitTimeError(f".git/{src.name} is larger than {MAX_FILE // 2**20} MiB")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())


def _object_format(dotgit: Path) -> tuple[str, str]:
    """(objectformat, refstorage) declared by the submission's config, read as a file (never run)."""
    values = []
    for key in ("extensions.objectformat", "extensions.refstorage"):
        proc = subprocess.run(["git", "config", "--file", str(dotgit / "config"), "--get", key],
                              capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                              env=_env(dotgit.parent))
        values.append(proc.stdout.strip().lower() if proc.returncode == 0 else "")
    return values[0], values[1]


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1", "GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": "none",
            "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "PAGER": "cat"}


def commit_time(folder: Path, timeout: float = TIMEOUT) -> datetime:
    """The committer date of the last commit touching assignment/ in `folder`'s repository (HEAD)."""
    if shutil.which("git") is None:
        raise GitTimeError("git is not installed on the grading machine")
    dotgit = folder / ".git"
    if dotgit.is_symlink() or not dotgit.is_dir():
        raise GitTimeError(".git is not a folder (a worktree or submodule link, or a symlink): not read")
    if not (dotgit / "objects").is_dir() or (dotgit / "objects").is_symlink():
        raise GitTimeError(".git has no objects folder")
    with tempfile.TemporaryDirectory(prefix="kit-gittime-") as tmp:
        shadow = Path(tmp) / "git"
        try:
            fmt, refs = _object_format(dotgit)
        except subprocess.TimeoutExpired:
            raise GitTimeError("git took too long to read .git/config") from None
        if refs not in ("", "files"):
            raise GitTimeError(f"the repository stores its refs as {refs!r}, which this grader does not read")
        config = "[core]\n\trepositoryformatversion = {}\n\tbare = true\n".format(1 if fmt else 0)
        if fmt:
            config += f"[extensions]\n\tobjectformat = {fmt}\n"
        (shadow / "objects" / "info").mkdir(parents=True)
        (shadow / "refs").mkdir()
        (shadow / "config").write_text(config)
        (shadow / "objects" / "info" / "alternates").write_text(str((dotgit / "objects").resolve()) + "\n")
        for name in ("HEAD", "packed-refs", "shallow"):
            _copy_file(dotgit / name, shadow / name)
        count = 0
        for root, dirs, files in os.walk(dotgit / "refs"):  # os.walk does not follow symlinked folders
            for name in files:
                count += 1
                if count > MAX_REFS:
                    raise GitTimeError(f"more than {MAX_REFS} refs")
                src = Path(root) / name
                _copy_file(src, shadow / src.relative_to(dotgit))
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false",
               "--no-pager", "--git-dir", str(shadow), "log", "-1", "--no-show-signature", "--format=%cI", "HEAD",
               "--", "assignment"]
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=_env(Path(tmp)), capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise GitTimeError(f"git log took longer than {timeout:g} s") from None
        if proc.returncode != 0:  # git's last line, without this machine's paths
            why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            why = why.replace(str(shadow), ".git").replace(tmp, ".").replace(str(folder), ".")
            raise GitTimeError(f"git log failed (exit status {proc.returncode}): not a readable repository, or "
                               "no commit yet", detail=why[:300])
    text = proc.stdout.strip()
    if not text:
        raise GitTimeError("no commit touches assignment/")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise GitTimeError("git printed no date", detail=text[:100]) from None
