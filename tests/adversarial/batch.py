"""Adversarial submissions aimed at the batch side of `grader grade` (not at the sandbox).

One or more cases per root cause, each with the outcome it must get; they are graded in the
same batch as `tests/adversarial/cases.py` by `tests/kit/test_grade.py`
(``test_adversarial_suite``), which also runs `check` on each case's results folder entries.

* A1, sandbox statistics in results.json: a submission that encodes what it saw in the size of
  its output (crash and restart counts are the same channel).  Its results.json must carry the test outcomes and
  the trusted tests' messages only: no output size, no start/crash/timeout counts, no
  execution time (those are in instructor.json).
* A2, student ids: a submission named ``grades.csv`` (the batch's own file), one whose name
  sanitises to another student's id (``_honest_full`` next to ``honest_full``), one that starts
  with a spreadsheet formula, two with the same id (both refused, both listed, neither graded),
  and one that writes terminal escape sequences into its output and its exception messages
  (the logs the instructor reads must hold them escaped).
* A3, relative paths: a CLI run from another directory with relative paths
  (``test_relative_paths_resolve_in_the_callers_directory`` in test_grade.py builds it with
  `relative_paths_batch`).
* A4, source encoding: modules declaring another encoding than UTF-8 (latin-1, and UTF-7, where
  ``ast.parse(str)`` and the import would read different programs), a module that is not valid
  UTF-8, and an honest module saved with a UTF-8 byte-order mark (taken, full marks).
* A5, names: 3,000 files not taken with 400-character names (what staging records about them was
  copied whole into results.json, instructor.json and feedback.html: 20,000 such names wrote 386 MB),
  and helper names of 100 and 10,000 characters (the longer one made staging fail with "File name
  too long" on every rerun): graded with full marks, the names refused with a reason, and every file
  written for the student under `STUDENT_FILE_LIMIT` bytes.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader.intake.discover import student_id
from grader.results.layout import Layout
from tests.adversarial.cases import FULL, ZERO, Ctx, Expect, Twin, folder, redefine, solution_text, stub_text, with_code


@dataclass(frozen=True)
class Refused(Expect):
    """Not graded at all: listed in grades.csv as refused, no results.json."""


@dataclass(frozen=True)
class BatchCase:
    name: str  # the folder/archive name in the batch (what the student submitted)
    build: Callable[[Ctx], Path]
    expect: Expect
    why: str
    status: str = "graded"  # extra_data.status of its results.json
    message: str = ""  # words the student's summary (results.json "output") must contain
    check: Callable[[Ctx, dict], list[str]] | None = field(default=None)  # more problems, given (ctx, results doc)

    @property
    def student(self) -> str:
        return student_id(Path(self.name))


# -- A1: the sandbox's statistics never reach the student -------------------------------------

#: Keys a student's results.json may hold under extra_data.sandbox (the grader's own choices).
PUBLIC_SANDBOX_KEYS = {"launcher", "layers", "warning"}


#: What the grader chose for a sandbox, by the names it gives them (cgroups, scratch folders, the batch's own
#: trusted workers' cgroups): none may reach a student (a pid or a counter in one counts sandboxes and graders)
SANDBOX_NAMES = re.compile(r"kit-(?:sandbox|probe|scratch|trusted)-[0-9a-f]")


def no_sandbox_names(ctx: Ctx, doc: dict) -> list[str]:
    found = sorted(set(m.group(0) for m in SANDBOX_NAMES.finditer(json.dumps(doc))))
    return [f"results.json shows names the grader chose for its sandbox: {found}"] if found else []


def no_sandbox_statistics(ctx: Ctx, doc: dict) -> list[str]:
    problems = no_sandbox_names(ctx, doc)
    sandbox = doc["extra_data"].get("sandbox", {})
    if set(sandbox) - PUBLIC_SANDBOX_KEYS:
        problems.append(f"results.json carries sandbox statistics: {sorted(set(sandbox) - PUBLIC_SANDBOX_KEYS)}")
    if "execution_time" in doc:
        problems.append("results.json carries the execution time (the submission controls it)")
    text = json.dumps(doc)
    for word in ("output_bytes", "crashes", "timeouts", "restarts", "starts"):
        if f'"{word}"' in text:
            problems.append(f"results.json mentions {word!r}")
    return problems


def stats_channel(ctx: Ctx) -> Path:
    """Correct code that prints as many bytes as the tensor sizes it is asked about: with the
    output size in results.json, a student could read hidden-test inputs back from it."""
    code = """
    import sys as _sys
    _orig = storage_bytes
    def storage_bytes(x):
        _sys.stdout.write("#" * int(x.numel()))
        return _orig(x)
    """
    return folder(ctx, "stats_channel", with_code(solution_text(), code))


# -- A2: ids are injective and safe ---------------------------------------------------------------

def named_grades_csv(ctx: Ctx) -> Path:
    return folder(ctx, "grades.csv", solution_text())


def sanitises_to_honest_full(ctx: Ctx) -> Path:
    """`_honest_full` used to become `honest_full` and take the honest student's place."""
    return folder(ctx, "_honest_full", stub_text())


def formula_name(ctx: Ctx) -> Path:
    return folder(ctx, "=HYPERLINK(\"http:x\";\"y\")", solution_text())


def plus_name(ctx: Ctx) -> Path:
    return folder(ctx, "+1 555", solution_text())


def same_id_folder(ctx: Ctx) -> Path:
    return folder(ctx, "same_id", solution_text())


def same_id_zip(ctx: Ctx) -> Path:
    path = ctx.root / "same_id.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("assignment/memory.py", stub_text())
    return path


ESCAPES = "\x1b[2J\x1b[31m\x1b]0;pwned\x07\u202e"


def ansi_everywhere(ctx: Ctx) -> Path:
    """Terminal escape sequences in its output and in the exception message the logs quote."""
    text = redefine(solution_text(), f'print({ESCAPES!r} * 50)\nraise RuntimeError({ESCAPES!r})')
    return folder(ctx, "ansi_everywhere", with_code(text, f"print({ESCAPES!r})"))


def logs_escaped(ctx: Ctx, doc: dict) -> list[str]:
    """sandbox.log and the workers' logs hold no raw escape or bidi character."""
    layout = Layout(ctx.out)
    problems = []
    for path in [layout.sandbox_log("ansi_everywhere"), *layout.logs.glob("worker-*.log")]:
        data = path.read_bytes() if path.exists() else b""
        if not data and path.name == "sandbox.log":
            problems.append(f"{path} is missing")
        if b"\x1b" in data or b"\x07" in data or "\u202e".encode() in data:
            problems.append(f"{path.relative_to(ctx.out)} holds raw control characters")
    csv = layout.grades.read_text()
    if any(line[:1] in "=+-@" for line in csv.splitlines()) or any(f",{c}" in csv for c in "=+@"):
        problems.append("grades.csv holds a cell that starts with a formula character")
    return problems


# -- A4: UTF-8 only: what the import runs is what the static checks read ----------------------------

def latin1_cookie(ctx: Ctx) -> Path:
    root = ctx.root / "latin1_cookie" / "assignment"
    root.mkdir(parents=True)
    (root / "memory.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + solution_text().encode())
    return root.parent


def utf7_cookie(ctx: Ctx) -> Path:
    """In UTF-7, `+AAo-` is a newline: ast.parse(str) sees a comment, the import would run code."""
    root = ctx.root / "utf7_cookie" / "assignment"
    root.mkdir(parents=True)
    hidden = "# looks like a comment +AAo-import os as _os+AAo-_os.system('touch " + str(ctx.marker_dir / "utf7") + "')"
    (root / "memory.py").write_bytes(b"# coding: utf-7\n" + hidden.encode() + b"\n" + stub_text().encode())
    return root.parent


def not_utf8(ctx: Ctx) -> Path:
    root = ctx.root / "not_utf8" / "assignment"
    root.mkdir(parents=True)
    (root / "memory.py").write_bytes(solution_text().encode() + b"\n# \xff\xfe\n")
    (root / "views.py").write_text("X = 1\n")  # another file is still taken: the submission is graded
    return root.parent


def bom_honest(ctx: Ctx) -> Path:
    root = ctx.root / "bom_honest" / "assignment"
    root.mkdir(parents=True)
    (root / "memory.py").write_bytes(b"\xef\xbb\xbf" + solution_text().encode())
    return root.parent


def helper_module(ctx: Ctx) -> Path:
    """B5: a helper module next to memory.py, imported relatively (what students expect to work)."""
    text = redefine(solution_text(), "from .mem_helpers import storage_of\nreturn storage_of(x)")
    return folder(ctx, "helper_module", text,
                  {"assignment/mem_helpers.py": "def storage_of(x):\n    return x.untyped_storage().nbytes()\n"})


# -- A5: names a submission controls: capped where staging records them, refused past a length ----------

#: Bytes of any one file written for one student by these cases (results.json, instructor.json,
#: feedback.html, the logs): a memory-only submission's are under 100 KB.
STUDENT_FILE_LIMIT = 400_000


def names_bloat(ctx: Ctx) -> Path:
    """The solution, and 3,000 files next to it named ``-hNNNNN_xxx…x.py`` (400 characters, not
    importable), in GNU long-name headers."""
    import io
    import tarfile

    path = ctx.root / "names_bloat.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tf:
        for name, text in [("assignment/memory.py", solution_text()),
                           *((f"assignment/-h{i:05d}_{'x' * 400}.py", "X = 1\n") for i in range(3000))]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def long_helper_names(ctx: Ctx) -> Path:
    """The solution, and helper modules named with 100 and 10,000 characters (never imported)."""
    path = ctx.root / "long_helper_names.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("assignment/memory.py", solution_text())
        for n in (100, 10_000):
            zf.writestr(f"assignment/{'h' * n}.py", "X = 1\n")
    return path


def files_bounded(ctx: Ctx, doc: dict) -> list[str]:
    """Every file written for this student is under STUDENT_FILE_LIMIT bytes."""
    layout, student = Layout(ctx.out), doc["extra_data"]["student"]
    files = [p for d in (layout.students_dir / student, layout.instructor_dir / student) for p in d.rglob("*")
             if p.is_file()]
    big = [f"{p.relative_to(ctx.out)}: {p.stat().st_size:,} bytes" for p in files if p.stat().st_size > STUDENT_FILE_LIMIT]
    return ([f"files over {STUDENT_FILE_LIMIT:,} bytes: {big}"] if big else []) + \
        (["no feedback.html was written"] if not (layout.students_dir / student / "feedback.html").is_file() else [])


BATCH_CASES: list[BatchCase] = [
    BatchCase("stats_channel", stats_channel, FULL, "encodes what it saw in its output size",
              check=no_sandbox_statistics),
    BatchCase("grades.csv", named_grades_csv, FULL, "a submission named like the batch's own grades.csv"),
    BatchCase("_honest_full", sanitises_to_honest_full, ZERO, "a name that used to sanitise to honest_full"),
    BatchCase("=HYPERLINK(\"http:x\";\"y\")", formula_name, FULL, "a spreadsheet formula as its name"),
    BatchCase("+1 555", plus_name, FULL, "a leading + in its name"),
    BatchCase("same_id", same_id_folder, Refused(), "same id as same_id.zip: both refused"),
    BatchCase("same_id.zip", same_id_zip, Refused(), "same id as same_id/: both refused"),
    BatchCase("ansi_everywhere", ansi_everywhere, Twin("twin_raises"), "escape sequences in output and messages",
              check=logs_escaped),
    BatchCase("latin1_cookie", latin1_cookie, ZERO, "declares latin-1", message="declares the source encoding 'latin-1'"),
    BatchCase("utf7_cookie", utf7_cookie, ZERO, "declares utf-7 (a comment to ast, code to the import)",
              message="declares the source encoding 'utf-7'"),
    BatchCase("not_utf8", not_utf8, ZERO, "memory.py is not valid UTF-8", message="is not valid UTF-8"),
    BatchCase("bom_honest", bom_honest, FULL, "an honest module saved with a UTF-8 byte-order mark"),
    BatchCase("helper_module", helper_module, FULL, "imports its own helper module", message="mem_helpers.py"),
    BatchCase("names_bloat.tar.gz", names_bloat, FULL, "3,000 long names of files not taken",
              message="2,980 more: files not taken, not listed here", check=files_bounded),
    BatchCase("long_helper_names.zip", long_helper_names, FULL, "helper names of 100 and 10,000 characters",
              message="a helper's name has at most 64 characters", check=files_bounded),
]

#: extra_data.status of cases in tests/adversarial/cases.py that are not "graded".
STATUS = {"empty_folder": "empty", "empty_zip": "empty"}


def relative_paths_batch(cwd: Path) -> list[str]:
    """A3: a folder of submissions under `cwd`, and the relative command line that grades it."""
    sub = cwd / "subs" / "alice" / "assignment"
    sub.mkdir(parents=True)
    (sub / "memory.py").write_text(solution_text())
    return ["grade", "subs", "--out", "results", "--module", "memory", "-j", "1", "--no-progress"]
