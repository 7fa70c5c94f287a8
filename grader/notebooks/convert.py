"""A handed-in notebook (untrusted JSON) back into the text of a module file, on the trusted side.

A notebook is a file the student controls, byte for byte.  Its budget:

* size: at most `MAX_NOTEBOOK_BYTES`, and as many bytes for all of a submission's notebooks
  together, checked by whoever reads it (`grader.intake.notebook`) BEFORE anything parses it; a
  larger one is refused with the reason (clear your outputs);
* parsing: `json.loads` in a child under `PARSE_MEMORY` bytes, within `PARSE_SECONDS` seconds for
  all of a submission's notebooks together (`grader.testing.contained`: nesting, a million tiny objects),
  which sends back plain data only: each
  cell's type, its nbgrader ``grade_id`` (at most `MAX_ID_CHARS`), and the source of the cells the
  release knows by ``grade_id`` (each at most `grader.rules.sources.MAX_FILE_BYTES`, at most
  `MAX_CELLS` cells looked at); outputs are never read, only counted;
* what comes back: the release's locked cells (never the notebook's), then each answer cell whose
  ``grade_id`` the release has, in the release's order (`grader.notebooks.cells.join`).  What is
  not graded (cells the student added, a changed locked cell, a missing answer cell, outputs, a
  notebook from another release) becomes a note for the student's results; every name and text
  from the notebook in a note goes through `grader.untrusted.shown`.

The module text then goes where a ``.py`` file goes: the same staging caps, static checks and
sandbox.  This module does not use nbformat to read (it validates the whole document with
jsonschema, outputs included, and would upgrade old formats in the trusted process): the few
fields needed are picked out of the parsed JSON in the child.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field

from grader.notebooks.cells import Cell, join, kernel_source
from grader.rules.sources import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from grader.untrusted import shown

MAX_NOTEBOOK_BYTES = 16 * 2**20  # the .ipynb file, before it is parsed (a notebook of code is ~100 KB)
PARSE_MEMORY, PARSE_SECONDS = 512 * 2**20, 20.0
MAX_CELLS = 2_000
MAX_ID_CHARS = 100
_CHUNK = 4000  # characters per string sent back (grader.boundary.messages cuts strings at 4,096)
_LISTED = 8  # cell numbers named per kind of note
_MAGIC = re.compile(r"^(\s*)([%!].*)$")


def _source(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return "".join(value)
    return None


def extract(data: bytes, wanted: list[str]) -> dict:
    """(In the child.) The notebook's cells as plain data: [type, grade_id, source chunks or None,
    has outputs]; sources only for cells whose grade_id is in `wanted`."""
    doc = json.loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no list of cells)")
    major = doc.get("nbformat")
    if major != 4:
        raise ValueError(f"nbformat {shown(major, 20)} (the grader reads nbformat 4, what Jupyter and Colab save)")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    kit = meta.get("kit") if isinstance(meta.get("kit"), dict) else {}
    wanted_ids, budget, cells = set(wanted), MAX_TOTAL_BYTES, []
    for cell in doc["cells"][:MAX_CELLS]:
        cell = cell if isinstance(cell, dict) else {}
        kind = cell.get("cell_type") if isinstance(cell.get("cell_type"), str) else "?"
        md = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbg = md.get("nbgrader") if isinstance(md.get("nbgrader"), dict) else {}
        gid = nbg.get("grade_id")[:MAX_ID_CHARS] if isinstance(nbg.get("grade_id"), str) else ""
        chunks = None
        if gid in wanted_ids and kind == "code":
            text = _source(cell.get("source"))
            if text is not None and len(text) <= min(MAX_FILE_BYTES, budget):
                budget -= len(text)
                chunks = [text[i:i + _CHUNK] for i in range(0, len(text), _CHUNK)]
            elif text is not None:
                chunks = ["\0too large"]
        outputs = cell.get("outputs")
        cells.append([kind[:20], gid, chunks, bool(isinstance(outputs, list) and outputs)])
    release = kit.get("release") if isinstance(kit.get("release"), str) else ""
    module = kit.get("module") if isinstance(kit.get("module"), str) else ""
    return {"cells": cells, "more": max(0, len(doc["cells"]) - MAX_CELLS), "release": release[:40],
            "module": module[:40]}


class NotebookRefused(Exception):
    """A notebook that cannot be read (the reason is plain, capped text)."""


def parse(data: bytes, wanted: list[str], seconds: float = PARSE_SECONDS) -> dict:
    """`extract` in a bounded child (at most `seconds`: what is left of the submission's parse time);
    NotebookRefused with a plain reason when it cannot be read."""
    from grader.testing.contained import contained

    if len(data) > MAX_NOTEBOOK_BYTES:  # (the readers check the size before they read; this holds for any caller)
        raise NotebookRefused(too_big(len(data)))
    if seconds <= 0:
        raise NotebookRefused(f"not read: the submission's notebooks took their {PARSE_SECONDS:g} seconds of reading")
    got = contained(extract, data, wanted, memory=PARSE_MEMORY, seconds=seconds)
    if got.error is not None or not isinstance(got.value, dict):
        raise NotebookRefused("not a readable notebook (" + shown(got.error or "no result", 200) + ")")
    return got.value


def too_big(size: int) -> str:
    return (f"a notebook of {size / 2**20:.1f} MiB (at most {MAX_NOTEBOOK_BYTES // 2**20} MiB are read): "
            "clear its outputs (Edit > Clear All Outputs), save and hand it in again")


def guess_module(parsed: dict, layouts: dict[str, tuple[str, list[Cell]]]) -> str:
    """The module a notebook is for, from what it holds: its kit metadata, else its answer cells' grade_ids."""
    if parsed["module"] in layouts:
        return parsed["module"]
    for _, gid, _, _ in parsed["cells"]:
        for module, (_, cells) in layouts.items():
            if any(c.grade_id == gid and c.kind == "answer" for c in cells):
                return module
    return ""


@dataclass
class Converted:
    text: str  # the module file
    notes: list[str] = field(default_factory=list)
    answered: int = 0  # answer cells taken from the notebook


def _numbers(found: list[int]) -> str:
    more = f" and {len(found) - _LISTED} more" if len(found) > _LISTED else ""
    return ", ".join(f"#{n}" for n in found[:_LISTED]) + more


def logical_starts(text: str) -> set[int]:
    """The 0-based numbers of the lines a logical line of Python starts on, the way Jupyter finds where
    a magic may stand: IPython's ``make_tokens_by_line``, restated with the standard library (IPython is
    not a dependency of the grader, and every grading machine must give the same module): tokens are
    grouped into logical lines at NEWLINE, and at NL outside brackets; a line inside brackets, a
    string or after a backslash does not start one.  Past a point the tokenizer cannot read on from
    (input IPython cannot tokenize either), every line is taken as a start."""
    lines = text.splitlines(keepends=True)
    starts, depth, at_start, row = {0}, 0, True, 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            row = tok.end[0]
            if at_start and tok.type not in (tokenize.INDENT, tokenize.DEDENT):
                starts.add(tok.start[0] - 1)
                at_start = False
            if tok.type == tokenize.NEWLINE or (tok.type == tokenize.NL and depth <= 0):
                at_start = True
                starts.add(tok.end[0])  # (the line after it, blank or not)
            elif tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(0, depth - 1)
    except (tokenize.TokenError, SyntaxError):  # (an open bracket or string at the end: IPython stops there too)
        if depth <= 0 and at_start:
            starts.update(range(row, len(lines)))
    return {n for n in starts if n < len(lines)}


def _unmagic(text: str) -> tuple[str, int]:
    """IPython magics and shell escapes (``%timeit``, ``!pip``) are not Python.  Jupyter takes them
    only at the start of a logical line (`logical_starts`); there each becomes a ``pass`` (a comment
    could leave an empty block) with the line kept as a comment.  A ``%`` or ``!`` line inside
    brackets or a string is Python (``n = (a`` then ``% b)``) and is kept as written."""
    lines, count = text.splitlines(keepends=True), 0
    for n in sorted(logical_starts(text)):
        m = _MAGIC.match(lines[n].rstrip("\r\n"))
        if m:
            ending = lines[n][len(lines[n].rstrip("\r\n")):]
            lines[n] = f"{m.group(1)}pass  # (notebook magic, not run) {m.group(2)}{ending}"
            count += 1
    return "".join(lines), count


def convert(parsed: dict, module: str, release: str, cells: list[Cell]) -> Converted:
    """The module text of a parsed notebook, and notes on what was not graded (see the module docstring)."""
    by_id: dict[str, list[tuple[int, str, list[str] | None]]] = {}
    known = {c.grade_id for c in cells} | {f"{module}-setup", f"{module}-check"}  # (the release's own code cells)
    added, outputs = [], 0
    for number, (kind, gid, chunks, has_out) in enumerate(parsed["cells"], start=1):
        outputs += has_out
        if gid.startswith(f"{module}-") and (gid in known or kind == "markdown"):
            by_id.setdefault(gid, []).append((number, kind, chunks))
        else:
            added.append(number)
    sources, notes, answered = [], [], 0
    changed, missing, duplicated, big = [], [], [], []
    for cell in cells:
        found = [f for f in by_id.get(cell.grade_id, []) if f[1] == "code"]
        duplicated += [n for n, _, _ in found[1:]]
        chunks = found[0][2] if found else None
        text = None if chunks is None or chunks == ["\0too large"] else "".join(chunks)
        if found and chunks == ["\0too large"]:
            big.append(found[0][0])
        if cell.kind == "locked":
            if text is None or text.strip() != kernel_source(cell).strip():
                changed.append(shown(cell.grade_id, 60))
            sources.append(cell.source)
        elif text is None:
            missing.append(cell.name)
            sources.append(cell.source)
        else:
            text, magics = _unmagic(text.replace("\r\n", "\n"))
            if magics:
                notes.append(f"{magics} notebook magic line(s) (% or !) in {cell.name} are not run")
            answered += text.strip() != cell.source.strip()
            sources.append(text)
    if parsed["release"] and parsed["release"] != release and parsed["module"] in ("", module):
        notes.append(f"made for another release of the kit (release {shown(parsed['release'], 40)}, this "
                     f"one is {release}): its answer cells are taken by their grade_id")
    if missing:
        notes.append(f"no answer cell for {', '.join(missing)} (graded as not attempted)")
    if changed:
        notes.append(f"locked cell(s) changed or missing, the release's version is graded: {', '.join(changed)}")
    if added or parsed["more"]:
        notes.append(f"cells not graded (not answer cells of the release): "
                     f"{_numbers(added)}" + (f", and {parsed['more']:,} cells past the first {MAX_CELLS:,}" if parsed["more"] else ""))
    if duplicated:
        notes.append(f"copies of an answer cell not graded (the first one is): {_numbers(duplicated)}")
    if big:
        notes.append(f"answer cells too large to take (graded as the stub): {_numbers(big)}")
    if outputs:
        notes.append(f"the outputs of {outputs} cell(s) were not read (outputs are never graded)")
    return Converted(join(sources), notes, answered)


def stub_text(cells: list[Cell]) -> str:
    """The module file of an untouched notebook: the stub, as `grader stubs` writes it."""
    return join([c.source for c in cells])

