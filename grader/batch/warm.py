"""The expected values a batch needs, named for the next batch's fork-server to compute before it forks.

A trusted worker computes the tests' expected values (`grader.testing.reference`: torch.optim's
trajectories, FlopCounterMode's counts, the uninterrupted training run...) during its first
submission, about as long as the rest of that submission.  So that the next batch graded by the
same suite pays that once and not once per worker:

* each worker, after its first submission, writes which calls it made (`grader.testing.reference.computed`:
  each function's name and its arguments as text, never a value) into the batch's progress folder
  (`record`);
* the grading pool merges them, at the end of the batch, into the file of the suite digest
  (`grader.batch.suite`; the last batch's calls) in the kit's cache folder: ``$KIT_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/resource-accounting-kit``, else ``~/.cache/resource-accounting-kit`` (`merge`);
* the next batch's trusted fork-server reads it (`load`) and makes those calls
  (`grader.testing.reference.precompute`) before it forks the workers, which inherit the values.

The file only says which calls to make: a value is always computed here, by the test's own
function, from arguments that parse back to plain data (an entry that does not is skipped), so a
stale or altered file costs at most time and memory, bounded (`PRECOMPUTE_SECONDS`,
`PRECOMPUTE_BYTES`), never a verdict; and only once: a worker records the calls its tests made,
not the values it inherited, so an entry no test makes is gone after the next batch.  Who can
write the file is who can write the grader's home (the grader's uid outside a sandbox).  Bounded: at most
`MAX_ENTRIES` entries and `MAX_BYTES` bytes are read.  The first batch after a change of the suite
computes the values in its workers, as without this file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

MAX_ENTRIES = 2000
MAX_BYTES = 8 * 2**20
#: Files of this many suites are kept (a TA editing the tests makes a new suite digest each time).
KEEP = 16
#: At most this long in the fork-server (what a worker's first submission would spend, and more);
#: past it plus 10 s, the fork-server ends (grader.batch.forkserver._bounded).
PRECOMPUTE_SECONDS = 20.0
#: At most this much address space above the fork-server's own while it computes them (the whole
#: suite's expected values take a few MiB).
PRECOMPUTE_BYTES = 512 << 20
_RECORD = "reference-calls-{pid}.json"


def cache_folder() -> Path:
    explicit = os.environ.get("KIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "resource-accounting-kit"


def cache_file(suite: str) -> Path | None:
    """Where the calls of batches graded by `suite` are kept (None without a suite digest)."""
    if not suite or not all(c in "0123456789abcdef" for c in suite):
        return None
    return cache_folder() / f"reference-calls-{suite}.json"


def record(progress: Path) -> None:
    """In a trusted worker, after its first submission: the calls it made, into the batch's
    progress folder (best effort: without them the next batch computes in its workers)."""
    from grader.testing.reference import computed

    try:
        (progress / _RECORD.format(pid=os.getpid())).write_text(json.dumps(computed()))
    except OSError:
        pass


def merge(progress: Path, suite: str) -> None:
    """In the grading pool, at the end of the batch: the calls its workers recorded, as the suite's
    file (replaced, atomically; best effort).  Only this batch's: a call no batch makes any more
    leaves the file with the next batch.  The folder keeps the `KEEP` most recent suites' files."""
    target = cache_file(suite)
    if target is None:
        return
    entries: set[tuple[str, ...]] = set()
    for path in sorted(progress.glob(_RECORD.format(pid="*"))):
        entries |= {tuple(e) for e in _read(path)}
    if not entries:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(sorted(list(e) for e in entries)[:MAX_ENTRIES]))
        os.replace(tmp, target)
        kept = sorted(target.parent.glob("reference-calls-*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def load(suite: str) -> list[list[str]]:
    """The calls kept for `suite` ([] when there are none, or the file is not what `merge` writes)."""
    target = cache_file(suite)
    return _read(target) if target is not None else []


def _read(path: Path) -> list[list[str]]:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
        data: Any = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):
        return []
    if not isinstance(data, list):
        return []
    return [e for e in data[:MAX_ENTRIES] if isinstance(e, list) and len(e) == 2 and all(type(x) is str for x in e)]
