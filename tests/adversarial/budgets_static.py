"""Root cause: the trusted process parses student bytes without a budget.

The static rules (`grader.rules.scope`) and staging used to read every file of a submission: a helper
nothing imports was parsed anyway (~0.7 GB of syntax tree per MB at peak), the scope builder
rescanned every def for each new name (quadratic: 6,000 defs, seconds to minutes per scope), and
32 files of 2 MiB were taken.  Each case here is an honest solution carrying that load; it must
score *exactly* what its honest twin scores, and the batch must go on.

* `STATIC_CASES` (graded by `tests/kit/test_rules_hold.py` with the module's own tests, so the
  static rules run): views with a never-imported 1.9 MiB helper and 6,000 defs its ruled
  functions reach by name; twin: the reference solutions.
* `BUDGET_BATCH_CASES` (graded in the adversarial batch of `tests/kit/test_grade.py`, the
  `memory` module): memory.py importing 6,000 defs, a never-imported 1.9 MiB helper (not taken:
  over the file cap) and four never-imported 250 KiB helpers (the last ones not taken: over the
  total cap); expected: full marks, and the results say which files were not taken and why.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader import KIT_ROOT
from grader.rules.sources import MAX_FILE_BYTES, MAX_TOTAL_BYTES, size_words
from tests.adversarial.batch import BatchCase
from tests.adversarial.cases import FULL, Ctx, folder, solution_text, with_code

BLOB = b"x = (" + b"a," * (950 * 1024) + b")\n"  # 1.9 MiB of the densest syntax tree per byte
DEFS = 6000


def many_defs(n: int, start: int = 0, last: bool = True) -> str:
    """`n` tiny defs `_d<start>`..., each naming the next (a scope reaches them all), none calling it
    at run time; the last one ends the chain (`last`) or names the next file's first."""
    lines = [f"def _d{i}(x):\n    return x if x is not None else _d{i + 1}(x)\n" for i in range(start, start + n)]
    end = f"def _d{start + n}(x):\n    return x\n" if last else f"from .many_defs{start // PER + 1} import _d{start + n}\n"
    return "".join(lines) + end


PER = 3000  # defs per helper file (~190 KB: under the file cap)


def chain_files(n: int = DEFS) -> dict[str, str]:
    """`n` chained defs spread over helper files many_defs0.py, many_defs1.py... (each under the
    file cap), many_defs0._d0 the first."""
    return {f"many_defs{k // PER}.py": many_defs(min(PER, n - k), k, last=k + PER >= n) for k in range(0, n, PER)}


@dataclass(frozen=True)
class StaticCase:
    name: str
    module: str
    build: Callable[[Path], Path]  # writes the submission folder, returns it
    twin: Callable[[Path], Path]  # its honest twin
    why: str


def _solutions(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for path in (KIT_ROOT / "solutions").glob("*.py"):
        shutil.copy2(path, dest / path.name)
    return dest


def bloated_views(dest: Path) -> Path:
    """The reference views.py whose ruled functions reach 6,000 defs of a helper (through the
    module-level code every views rule covers), plus a 1.9 MiB helper nothing imports."""
    dest = _solutions(dest)
    (dest / "blob.py").write_bytes(BLOB)
    for name, text in chain_files().items():
        (dest / name).write_text(text)
    views = dest / "views.py"
    views.write_text(views.read_text().rstrip() + "\n\n\nfrom .many_defs0 import _d0 as _chain\n\n"
                     "_honest_transpose_view = transpose_view\n\n\n"
                     "def transpose_view(x, dim0, dim1):\n"
                     "    return _chain(_honest_transpose_view(x, dim0, dim1))\n")
    return dest


STATIC_CASES: list[StaticCase] = [
    StaticCase("bloated_views", "views", bloated_views, _solutions,
               "a never-imported 1.9 MiB helper and 6,000 defs the views rules reach"),
]


# -- the batch: staging caps ---------------------------------------------------------------------

def bloated_memory(ctx: Ctx) -> Path:
    pad = "#" + "p" * 99 + "\n"
    extra = {**{f"assignment/{name}": text for name, text in chain_files().items()},
             **{f"assignment/pad{i}.py": pad * (250 * 1024 // len(pad)) for i in range(4)}}
    root = folder(ctx, "budget_bloated_memory", with_code(solution_text(), "from .many_defs0 import _d0 as _chain"),
                  extra)
    (root / "assignment" / "blob.py").write_bytes(BLOB)
    return root


def _says_what_was_not_taken(ctx: Ctx, doc: dict) -> list[str]:
    taken = doc["extra_data"].get("submission", {})
    not_taken = taken.get("not_taken") or {}
    output = doc.get("output", "")
    problems = []
    if f"larger than {size_words(MAX_FILE_BYTES)}" not in str(not_taken.get("assignment/blob.py", "")) + output:
        problems.append(f"blob.py is not listed as over the file cap: {not_taken}")
    total = [k for k, why in not_taken.items() if f"{size_words(MAX_TOTAL_BYTES)} of source together" in why]
    if not total or not all(k.startswith("assignment/pad") for k in total):
        problems.append(f"no padding helper listed as over the total cap: {not_taken}")
    if not {"many_defs0", "many_defs1"} <= set(taken.get("helpers") or {}):
        problems.append(f"many_defs0.py and many_defs1.py (imported by memory.py) were not both taken: {taken}")
    return problems


BUDGET_BATCH_CASES: list[BatchCase] = [
    BatchCase("budget_bloated_memory", bloated_memory, FULL,
              "6,000 imported defs, a never-imported 1.9 MiB helper, helpers past the total cap",
              message=f"larger than {size_words(MAX_FILE_BYTES)}", check=_says_what_was_not_taken),
]
