"""Adversarial submissions whose *data* expands on the trusted side (issue 23).

Root causes, one case or more each:

* **a reply that expands past its budget**: the encoder writes a shared sub-list once per use, so
  a reply of one row shared a few hundred times is a few hundred KB that the trusted side decodes,
  checks and scrubs value by value (a submission doing so at every call cost the trusted worker
  58 s where its twin of stubs cost 4.5 s).  One reply is capped (`grader.boundary.messages.MAX_NODES`) and
  each module's replies, and the whole submission's, share a `grader.boundary.messages.DecodeBudget`: past
  it a reply is refused where the decoder reaches the limit, and later calls are not run;
* **untrusted strings without a cap**: an exception whose class name is 1 MB, with a chain of
  1,000 bases, a 1 MB message, raised in a function whose name is 1 MB (one results.json held a
  1,000,179-character output): every field is cut where it is decoded (`grader.boundary.messages.ErrorData`),
  a test's message and a student's messages in all are capped where they are written;
* **a checkpoint that expands in the trusted process**: the checkpointing test loads the student's
  file with ``torch.load(weights_only=True)`` on the trusted side.  A 2 KB file of nested shared
  lists (2**40 items) and a zip whose records are deflated (256 MiB of zeros in 256 KB) are read
  in a throwaway child under a memory and time limit (`grader.testing.contained`), the zip refused before
  anything is inflated, the lists walked once per object.

Each case scores no more than its honest twin (exactly its twin where the attack changes nothing
else), the batch does not stall (the trusted worker stays inside its time and memory budgets:
`tests.adversarial.budgets_worker.within_budgets`), and what is written for the student stays small
(`small_files`).  `DATA_CASES` are graded with the `memory` module in the adversarial batch of
`tests/kit/test_grade.py`; `CHECKPOINT_CASES`, which need the checkpointing tests, in a batch of
their own there (``test_adversarial_checkpoints``).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader import KIT_ROOT
from grader.results.layout import Layout
from grader.results.results_json import MESSAGE_LIMIT
from grader.boundary.messages import MAX_NODES
from tests.adversarial.batch import BatchCase
from tests.adversarial.budgets_worker import within_budgets
from tests.adversarial.cases import FULL, ZERO, Ctx, Expect, Twin, folder, redefine, solution_text, stub_text, with_code

#: What one student's files may weigh after any of these cases (the honest twins: about 12 KB of
#: results.json and 30 KB of instructor.json for the memory module), and all of them together
#: (feedback.html, sandbox.log and the test log included; one student once had 20 MiB).
RESULTS_BYTES, INSTRUCTOR_BYTES, STUDENT_BYTES = 200_000, 400_000, 1_000_000


class AtMost(Expect):
    """No more than the score of the honest twin `name` (graded in the same batch): an attack that
    spends a module's decoding budget may lose that module's later calls too."""

    def __init__(self, name: str):
        self.name = name


def small_files(ctx: Ctx, doc: dict) -> list[str]:
    """results.json, instructor.json and all of the student's files stay small, and no test's output
    passes the message cap."""
    layout = Layout(ctx.out)
    student = doc["extra_data"]["student"]
    problems = []
    for path, bound in ((layout.results(student), RESULTS_BYTES), (layout.instructor(student), INSTRUCTOR_BYTES)):
        if path.stat().st_size > bound:
            problems.append(f"{path.name} is {path.stat().st_size} bytes (bound {bound})")
    files = [p for d in (layout.results(student).parent, layout.instructor(student).parent) for p in d.rglob("*")
             if p.is_file()]
    if sum(p.stat().st_size for p in files) > STUDENT_BYTES:
        problems.append(f"the student's files weigh {sum(p.stat().st_size for p in files)} bytes (bound {STUDENT_BYTES})")
    long = [t["name"][:80] for t in doc["tests"] if len(t.get("output", "")) > MESSAGE_LIMIT + 200]
    if long:
        problems.append(f"test outputs longer than the cap: {long}")
    return problems


def at_most(twin: str):
    def check(ctx: Ctx, doc: dict) -> list[str]:
        path = Layout(ctx.out).results(twin)
        if not path.exists():
            return [f"its honest twin {twin} has no results"]
        want = json.loads(path.read_text())["score"]
        return [] if doc["score"] <= want else [f"scored {doc['score']}, more than its honest twin {twin} ({want})"]
    return check


def refused_by_budget(ctx: Ctx, doc: dict) -> list[str]:
    """The decoding budget was reached (instructor.json's events) and not a single reply was garbage."""
    sandbox = json.loads(Layout(ctx.out).instructor(doc["extra_data"]["student"]).read_text()).get("sandbox", {})
    problems = [] if any(e.get("kind") == "budget" for e in sandbox.get("events", [])) else [
        "no reply reached the decoding budget (instructor.json has no budget event)"]
    return problems + ([f"{sandbox['garbage']} replies were counted as garbage"] if sandbox.get("garbage") else [])


def checks(*fns):
    def check(ctx: Ctx, doc: dict) -> list[str]:
        return [p for fn in fns for p in fn(ctx, doc)]
    return check


# -- a reply that expands past its budget --------------------------------------------------------

#: A reply as large as one reply may be, of one row shared by every other: sized from the probe's
#: list of cases (the student's function is called once per case).
_SHARED_ROWS = f"""
import sys as _sys
_MAX = {MAX_NODES}


def _shared_rows(*_args, **_kwargs):
    _cases = 1
    for _name in ("specs", "cases"):
        _v = _sys._getframe(2).f_locals.get(_name)
        if isinstance(_v, (list, tuple)) and _v:
            _cases = len(_v)
    _side = max(1, int((0.98 * _MAX / _cases) ** 0.5) - 1)
    _row = [0] * _side
    return [_row] * _side
"""


def shared_rows_reply(ctx: Ctx) -> Path:
    """storage_bytes returns, at every call, a reply at the value cap built from one shared row."""
    text = with_code(solution_text(), _SHARED_ROWS + "\nstorage_bytes = _shared_rows\n")
    return folder(ctx, "shared_rows_reply", text)


def shared_rows_everywhere(ctx: Ctx) -> Path:
    """Every function returns such a reply at every call: the memory module's budget runs out."""
    names = ("get_memory_usage", "storage_bytes", "float_format", "rounds_to_zero", "bytes_per_parameter",
             "max_trainable_parameters")
    text = with_code(stub_text(), _SHARED_ROWS + "".join(f"\n{n} = _shared_rows" for n in names) + "\n")
    return folder(ctx, "shared_rows_everywhere", text)


# -- untrusted strings without a cap ----------------------------------------------------------------

def huge_exception_names(ctx: Ctx) -> Path:
    """storage_bytes raises (as its twin twin_raises does: a RuntimeError) an exception whose class
    name is 1 MB, whose class has 1,000 bases above it, with a 1 MB message, from a function of the
    submission's own file whose name is 1 MB (the `where` of the error)."""
    code = """
    _base = RuntimeError
    for _i in range(1000):
        _base = type(f"Base{_i}", (_base,), {})
    _Huge = type("E" * 10**6, (_base,), {})
    _name = "f" * 10**6
    exec(compile(f"def {_name}():\\n    raise _Huge('m' * 10**6)\\n", __file__, "exec"), globals())
    _raiser = globals()[_name]
    """
    text = redefine(with_code(solution_text(), code), "_raiser()")
    return folder(ctx, "huge_exception_names", text)


DATA_CASES: list[BatchCase] = [
    BatchCase("shared_rows_reply", shared_rows_reply, AtMost("twin_raises"),
              "a reply at the value cap, of one shared row, at every call of one function",
              check=checks(at_most("twin_raises"), within_budgets, small_files)),
    BatchCase("shared_rows_everywhere", shared_rows_everywhere, ZERO,
              "replies at the value cap at every call of every function: the module's budget runs out",
              check=checks(refused_by_budget, within_budgets, small_files)),
    BatchCase("huge_exception_names", huge_exception_names, Twin("twin_raises"),
              "an exception with a 1 MB class name, 1,000 bases, a 1 MB message and `where`",
              check=checks(within_budgets, small_files)),
]


# -- a checkpoint that expands in the trusted process ----------------------------------------------

CHECKPOINT_MODULE = "checkpointing"


def _checkpoint_folder(ctx: Ctx, name: str, replace: dict[str, str], code: str = "") -> Path:
    """The reference checkpointing.py with `replace` applied (each text must be there) and `code`
    appended: honest code throughout (no lookup a rule would flag), so only what the file holds
    decides the scores."""
    text = (KIT_ROOT / "solutions" / f"{CHECKPOINT_MODULE}.py").read_text()
    for old, new in replace.items():
        if old not in text:
            raise ValueError(f"the reference checkpointing.py no longer holds {old!r}: update {name}")
        text = text.replace(old, new)
    root = ctx.root / name
    (root / "assignment").mkdir(parents=True)
    (root / "assignment" / f"{CHECKPOINT_MODULE}.py").write_text(with_code(text, code) if code else text)
    return root


#: Every torch.save of the reference goes through `_save`, which writes the same records deflated
#: (still torch.save's bytes first, so the tests that interrupt torch.save see it called).
_DEFLATED = {"            torch.save(state, f)\n": "            _save(state, f)\n",
             "        torch.save(state, out)\n": "        _save(state, out)\n"}
_SAVE_DEFLATED = """
import io as _io
import zipfile as _zipfile


def _save(state, f):
    plain = _io.BytesIO()
    torch.save(state, plain)
    source, deflated = _zipfile.ZipFile(plain), _io.BytesIO()
    with _zipfile.ZipFile(deflated, "w", compression=_zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, source.read(info.filename))
    f.write(deflated.getvalue())
"""
#: The state the reference saves, as its dict is written.
_STATE = '"iteration": int(iteration), "rng": rng}'


def ckpt_honest(ctx: Ctx) -> Path:
    return _checkpoint_folder(ctx, "ckpt_honest", {})


def ckpt_deflated(ctx: Ctx) -> Path:
    """The honest twin: the reference's checkpoints with their records deflated (torch.load reads
    them; the trusted test refuses them before inflating anything, as torch.save never compresses)."""
    return _checkpoint_folder(ctx, "ckpt_deflated", _DEFLATED, _SAVE_DEFLATED)


def ckpt_deflate_bomb(ctx: Ctx) -> Path:
    """The same, and after 4 steps (the file the trusted test loads) 256 MiB of zeros beside the
    state: 256 KB on disk that torch.load would inflate in the trusted process."""
    pad = {_STATE: '"iteration": int(iteration), "rng": rng, **({"pad": torch.zeros(2**26)} if iteration == 4 else {})}'}
    return _checkpoint_folder(ctx, "ckpt_deflate_bomb", {**_DEFLATED, **pad}, _SAVE_DEFLATED)


def ckpt_shared_lists(ctx: Ctx) -> Path:
    """The reference's checkpoints with, beside the state, 2 KB of lists nested 40 deep, each
    holding the one below twice (2**40 items to a walk that does not remember what it saw): valid
    weights-only checkpoints, which load_checkpoint reads as before."""
    return _checkpoint_folder(ctx, "ckpt_shared_lists", {_STATE: '"iteration": int(iteration), "rng": rng, "nested": _nested()}'},
                              """
        def _nested():
            nested = [0]
            for _ in range(40):
                nested = [nested, nested]
            return nested
        """)


CHECKPOINT_CASES: list[BatchCase] = [
    BatchCase("ckpt_honest", ckpt_honest, FULL, "the reference solution", check=small_files),
    BatchCase("ckpt_deflated", ckpt_deflated, Twin("ckpt_deflated"),
              "honest twin: the reference's checkpoints, deflated", message="is compressed", check=small_files),
    BatchCase("ckpt_deflate_bomb", ckpt_deflate_bomb, Twin("ckpt_deflated"),
              "deflated, and the file the trusted test loads holds 256 MiB of zeros in 256 KB",
              message="is compressed", check=checks(within_budgets, small_files)),
    BatchCase("ckpt_shared_lists", ckpt_shared_lists, FULL,
              "every checkpoint holds lists shared to describe 2**40 items in 2 KB",
              check=checks(within_budgets, small_files)),
]
