"""The time of a git submission: the committer date of the last commit touching the graded files.

    git log -1 --format=%cI HEAD -- <the graded files>

and only when those files, as graded, are exactly what ``HEAD`` holds: the time of a commit says
nothing about files changed after it, or about files that were moved out of the folder the
commits touched.  "Exactly what HEAD holds" means the graded bytes are what a checkout of HEAD's
blob at that path writes, under any of git's *own* conversions: the blob as it is, or with
every lone LF written as CRLF (``eol=crlf``, ``core.autocrlf=true``), each with or without
``$Id$`` expanded to ``$Id: <blob id> $`` (``ident``).  Which one a checkout used is decided by
attributes and settings the student controls, so all are accepted, and nothing else: not the
student's filters (a ``filter=`` driver is a program, never run), and not "equal once line
endings are normalised" (a file that reads its own bytes could hide a late payload in which
lines end in CRLF).  Paths go to git and come back byte for byte (``--literal-pathspecs``,
``ls-tree -z``: a non-ASCII or quoted folder name, a ``*`` or ``:(exclude)`` in a name, is just
a name).  Anything else (a file changed after the commit, never committed, a symlink, a
``working-tree-encoding``, an unreadable repository) leaves the time unknown: `GitTimeError`,
and `grader.course.late` lists it for the instructor's decision.

It runs so that nothing the submission controls can execute.  git reads a repository's own
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
import re
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

from grader.untrusted import shown

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


def _git(shadow: Path, tmp: str, args: list[str], timeout: float,
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """git on the shadow directory; output as bytes (paths are bytes: never decoded, never quoted)."""
    cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false",
           "-c", "core.commitGraph=false", "--no-pager", "--literal-pathspecs", "--git-dir", str(shadow), *args]
    try:
        return subprocess.run(cmd, cwd=tmp, env=_env(Path(tmp)), capture_output=True, timeout=timeout,
                              preexec_fn=_limit_memory, **({"input": stdin} if stdin is not None
                                                           else {"stdin": subprocess.DEVNULL}))
    except subprocess.TimeoutExpired:
        raise GitTimeError(f"git {args[0]} took longer than {timeout:g} s") from None


def _last_line(proc: subprocess.CompletedProcess[bytes], *paths: tuple[str, str]) -> str:
    """git's last line on stderr, without this machine's paths (instructor-only: it may quote the
    submission's ref names; shown through `grader.untrusted.shown` wherever it is printed)."""
    why = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1][:1000]
    for path, name in paths:
        why = why.replace(path, name)
    return why[:300]


def blob_id(data: bytes, fmt: str) -> str:
    """git's object id of a file with these bytes (``git hash-object --no-filters``)."""
    import hashlib

    return hashlib.new(OBJECT_FORMATS[fmt], b"blob %d\0" % len(data) + data).hexdigest()


_LONE_LF = re.compile(rb"(?<!\r)\n")


def checkouts(blob: bytes, oid: str) -> set[bytes]:
    """The bytes a git checkout writes for `blob` (object id `oid`) under git's own conversions, in
    git's order (``ident`` first, then end of lines: convert.c): as is, every lone LF as CRLF, each
    with or without ``$Id$`` expanded.  Nothing a filter driver would write."""
    forms = {blob, blob.replace(b"$Id$", b"$Id: %s $" % oid.encode())}
    return forms | {_LONE_LF.sub(b"\r\n", f) for f in forms}


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
        proc = _git(shadow, tmp, ["log", "-1", "-z", "--no-show-signature", "--format=%cI", "HEAD", "--", *files],
                    timeout)
        if proc.returncode != 0:
            raise GitTimeError(f"git log failed (exit status {proc.returncode}): not a readable repository, or "
                               "no commit yet", detail=_last_line(proc, (str(shadow), ".git"), (tmp, "."),
                                                                  (str(folder), ".")))
    text = proc.stdout.strip(b"\0\n ").decode("ascii", "replace")
    if not text:
        raise GitTimeError("no commit touches the graded files")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise GitTimeError("git printed no date", detail=text[:100]) from None


def _same_as_head(folder: Path, files: list[str], fmt: str, shadow: Path, tmp: str, timeout: float) -> None:
    """GitTimeError unless every graded file's bytes are a checkout of HEAD's blob at that path
    (`checkouts`).  The blobs are read only when the bytes on disk are not the blob as is, and
    only blobs no larger than the file (a checkout never shrinks a blob)."""
    proc = _git(shadow, tmp, ["ls-tree", "-r", "-l", "-z", "--full-tree", "HEAD", "--", *files], timeout)
    if proc.returncode != 0:
        raise GitTimeError("git could not list the last commit's files (not a readable repository, or no commit yet)",
                           detail=_last_line(proc, (str(shadow), ".git"), (tmp, ".")))
    committed: dict[bytes, tuple[str, int]] = {}  # path -> (object id, size) of a regular file's blob
    for record in proc.stdout.split(b"\0"):
        meta, tab, path = record.partition(b"\t")
        parts = meta.decode("ascii", "replace").split()
        if tab and len(parts) == 4 and parts[0] in ("100644", "100755") and parts[1] == "blob" \
                and parts[3].isdigit():
            committed[path] = (parts[2], int(parts[3]))
    unread: dict[str, tuple[str, bytes]] = {}  # rel -> (object id, bytes on disk)
    for rel in files:
        path = folder / rel
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        if os.fsencode(rel) not in committed:
            raise GitTimeError(f"{shown(rel)} is not in the last commit (as a file): the commit times say nothing "
                               "about it")
        oid, size = committed[os.fsencode(rel)]
        if data is None or size > len(data):
            raise _differs(rel)
        if blob_id(data, fmt) != oid:
            unread[rel] = (oid, data)
    if not unread:
        return
    oids = sorted({oid for oid, _ in unread.values()})
    proc = _git(shadow, tmp, ["cat-file", "--batch"], timeout, stdin="".join(f"{o}\n" for o in oids).encode())
    blobs = _parse_batch(proc.stdout) if proc.returncode == 0 else {}
    for rel, (oid, data) in unread.items():
        if oid not in blobs or data not in checkouts(blobs[oid], oid):
            raise _differs(rel)


def _differs(rel: str) -> GitTimeError:
    return GitTimeError(f"{shown(rel)} differs from the last commit (changes not committed): the commit times say "
                        "nothing about it")


def _parse_batch(out: bytes) -> dict[str, bytes]:
    """The blobs of ``git cat-file --batch`` output (``<oid> blob <size>\\n<bytes>\\n`` each)."""
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.find(b"\n", at)
        if end < 0:
            break
        head = out[at:end].decode("ascii", "replace").split()
        at = end + 1
        if len(head) != 3 or not head[2].isdigit():  # "<oid> missing"
            continue
        size = int(head[2])
        if head[1] == "blob":
            blobs[head[0]] = out[at:at + size]
        at += size + 1
    return blobs
