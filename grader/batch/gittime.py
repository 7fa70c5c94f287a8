"""The time of a git submission: the committer date of the last commit touching the graded files.

    git log -1 --format=%cI HEAD -- <the graded files>

and only when those files, as graded, are exactly what ``HEAD`` holds (``git ls-tree`` against
the blob ids of the bytes on disk): the time of a commit says nothing about files changed after
it, or about files that were moved out of the folder the commits touched.

run so that nothing the submission controls can execute.  git reads a repository's own
``.git/config`` (where ``core.fsmonitor``, ``core.pager``, ``gpg.program`` with
``log.showSignature``, a promisor remote's ``ext::`` URL... name programs to run), so git never
sees the submission's ``.git`` as a repository: it runs on a *shadow* git directory of ours
(our config, the submission's ``HEAD``, ``packed-refs``, ``shallow`` and loose refs copied as
plain files, its object store reached read-only through ``objects/info/alternates``).  This also
makes ``safe.directory`` moot: the repository git opens is ours, so a repository owned by
another user needs no exception, and we never mark a student's repository safe.  On top:
no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), hooks off
(``core.hooksPath=/dev/null``), no replace refs, no commit-graph (its Bloom filters would let a
forged file hide the commits that touched a path), no lazy fetch, no protocol allowed, no
prompt, stdin closed, a memory limit, and a timeout.  Only small ref files are copied (a sparse
16 MiB "ref" cannot fill the disk), and the object format is one git knows (the value is
written into our config, never a line of the student's).  git only *parses* the submission's
objects, which git does for untrusted clones every day.

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
#: Refs copied at most (loose files under .git/refs), the size of one (a ref is one object id),
#: and of HEAD, packed-refs and shallow.
MAX_REFS = 10_000
MAX_REF_FILE = 4096
MAX_FILE = 16 * 2**20
#: Address space of one git process (a tree of a few MB can make git allocate gigabytes).
MEMORY_BYTES = 2 * 2**30
OBJECT_FORMATS = {"": "sha1", "sha1": "sha1", "sha256": "sha256"}


class GitTimeError(Exception):
    """No commit time could be read; the message says why in the grader's own words (a per-student
    note, shown to the student); `detail` is git's own last line (instructor-only: ref names and
    such come from the submission)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def is_git_repo(folder: Path) -> bool:
    return folder.is_dir() and os.path.lexists(folder / ".git")


def _copy_file(src: Path, dest: Path, limit: int = MAX_FILE) -> None:
    if src.is_symlink() or not src.is_file():
        return
    if src.stat().st_size > limit:
        raise GitTimeError(f".git/{src.name} is larger than {limit} bytes: not a ref git wrote")
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


def _limit_memory() -> None:  # in the git child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _git(shadow: Path, tmp: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false",
           "-c", "core.commitGraph=false", "--no-pager", "--git-dir", str(shadow), *args]
    try:
        return subprocess.run(cmd, cwd=tmp, env=_env(Path(tmp)), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        raise GitTimeError(f"git {args[0]} took longer than {timeout:g} s") from None


def blob_id(data: bytes, fmt: str) -> str:
    """git's object id of a file with these bytes (``git hash-object``)."""
    import hashlib

    return hashlib.new(OBJECT_FORMATS[fmt], b"blob %d\0" % len(data) + data).hexdigest()


def commit_time(folder: Path, files: list[str], timeout: float = TIMEOUT) -> datetime:
    """The committer date of the last commit touching `files` (paths relative to `folder`, the
    graded files) in `folder`'s repository (HEAD), when HEAD holds exactly those files' bytes."""
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
            raise GitTimeError("the repository stores its refs in a format this grader does not read")
        if fmt not in OBJECT_FORMATS:
            raise GitTimeError("the repository declares an object format git does not know")
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
        for root, _dirs, names in os.walk(dotgit / "refs"):  # os.walk does not follow symlinked folders
            for name in names:
                count += 1
                if count > MAX_REFS:
                    raise GitTimeError(f"more than {MAX_REFS} refs")
                src = Path(root) / name
                _copy_file(src, shadow / src.relative_to(dotgit), MAX_REF_FILE)
        if not files:
            raise GitTimeError("no graded file to date")
        _same_as_head(folder, files, fmt, shadow, tmp, timeout)
        proc = _git(shadow, tmp, ["log", "-1", "--no-show-signature", "--format=%cI", "HEAD", "--", *files], timeout)
        if proc.returncode != 0:  # git's last line, without this machine's paths
            why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            why = why.replace(str(shadow), ".git").replace(tmp, ".").replace(str(folder), ".")
            raise GitTimeError(f"git log failed (exit status {proc.returncode}): not a readable repository, or "
                               "no commit yet", detail=why[:300])
    text = proc.stdout.strip()
    if not text:
        raise GitTimeError("no commit touches the graded files")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise GitTimeError("git printed no date", detail=text[:100]) from None


def _same_as_head(folder: Path, files: list[str], fmt: str, shadow: Path, tmp: str, timeout: float) -> None:
    """GitTimeError unless every graded file's bytes are what HEAD holds at that path."""
    proc = _git(shadow, tmp, ["ls-tree", "-r", "--full-tree", "HEAD", "--", *files], timeout)
    if proc.returncode != 0:
        raise GitTimeError("git could not list the last commit's files (not a readable repository, or no commit yet)",
                           detail=(proc.stderr.strip().splitlines() or [""])[-1][:300])
    committed: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            committed[path] = parts[2]
    for rel in files:
        path = folder / rel
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        if rel not in committed:
            raise GitTimeError(f"{rel} is not in the last commit: the commit times say nothing about it")
        if data is None or blob_id(data, fmt) != committed[rel]:
            raise GitTimeError(f"{rel} differs from the last commit (changes not committed): the commit times say "
                               "nothing about it")
