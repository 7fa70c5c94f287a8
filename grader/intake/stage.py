"""Staging: the files taken from a submission, written into a fresh folder the grader owns.

`stage` runs in the trusted worker before the tests; `grader check` stages the student's
folder with this very function, so a local check sees what `grader grade` sees.  Which files
are taken, and why others are not, is `grader.intake.take`; reading them out of a folder or an
archive safely (caps, `RejectedSubmission`) is `grader.intake.unpack`.  The staged bytes are
exactly the submitted bytes (a UTF-8 byte-order mark dropped): what is imported is what the
static checks read.  A module file that is missing grades as not attempted; a file that is not
taken is named, with the reason, in the student's results (`source_description`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from grader import MODULES
from grader.intake.discover import Source
from grader.intake.notebook import is_notebook, notebook_modules
from grader.intake.take import Record, listed, source_bytes
from grader.intake.unpack import first_entries, read_submission


@dataclass
class Staged:
    """What was taken from a submission.  Every name, reason and list in it is capped where it was
    made (`grader.intake.take.Record`; helper names by `MAX_HELPER_NAME`, at most `MAX_HELPERS` of
    them; `missing` names modules only), so what the results say about a submission is bounded."""

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


def stage(source: Source, dest: Path) -> Staged:
    """Copy the module files and helpers of `source` into the fresh folder `dest` (0755/0644).

    Raises RejectedSubmission with a plain reason for a submission that cannot be read safely.
    A file that is not taken (not UTF-8, another encoding declared, a symlink, a reserved
    name...) is listed in `Staged.not_taken` with the reason; its module grades as missing.
    """
    record = Record()
    path = source.path
    root, files = ("", {}) if is_notebook(path) else read_submission(path, record)
    files.update(notebook_modules(path, files, record))  # notebooks handed in: module files (grader.intake.notebook)
    dest.mkdir(parents=True, exist_ok=False)
    os.chmod(dest, 0o755)
    staged = Staged(folder=dest, layout=listed(root))
    prefix = "" if root in ("", ".") else root + "/"
    for name in sorted(files, key=lambda n: (n not in MODULES, MODULES.index(n) if n in MODULES else 0, n)):
        data, why = source_bytes(files[name])
        if data is None:
            record.refuse(f"{prefix}{name}.py", why)
            continue
        target = dest / f"{name}.py"
        target.write_bytes(data)
        os.chmod(target, 0o644)
        (staged.files if name in MODULES else staged.helpers)[name] = hashlib.sha256(data).hexdigest()
    staged.notes, staged.not_taken = record.notes, record.not_taken
    if staged.empty:
        staged.seen = first_entries(path)
    return staged


def source_description(staged: Staged) -> list[str]:
    """Plain lines about the files taken and not taken, for the student's summary."""
    lines = []
    if staged.helpers:
        lines.append("Helper modules taken: " + ", ".join(f"{h}.py" for h in sorted(staged.helpers)))
    for key, why in sorted(staged.not_taken.items()):
        lines.append(f"Not taken: {key}: {why}")
    return lines
