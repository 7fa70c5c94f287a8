"""A module's stub text cut into notebook cells, and the release's layout of every module.

`cut` reads the stub of a module (``assignment/<module>.py``, made by `grader.course.stubs` from
``solutions/``) with `ast` and cuts it, line for line, into:

* locked cells: the module's docstring, imports and constants (``<module>-imports``), and any other
  top-level code between two answers (``<module>-after-<name>``);
* answer cells: each top-level function or class that holds a stub (``# YOUR CODE HERE``), with
  the comment lines right above it, as ``<module>-<name>``: nbgrader's ``grade_id``, stable as
  long as the function keeps its name.

`join` puts cells back together as module text (two blank lines between cells, as PEP 8 puts
them between top-level definitions); ``join`` of a stub's own cells gives the stub back, byte for
byte (tests/kit/test_notebooks.py checks it for every module), so a notebook handed in untouched
is exactly the stub file and one answered is exactly the module file with the same answers.

The layout of the release (every module's cells, and a digest per module that a notebook records
so that a notebook from another release is recognised) is ``layout.json`` next to this file:
written by ``grader stubs``, checked by ``grader release --check``, shipped with the grader package
(a student's ``grader check NOTEBOOK`` and the check cell read it; the solutions do not ship).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import KIT_ROOT

LAYOUT_PATH = Path(__file__).with_name("layout.json")
STUB_MARK = "# YOUR CODE HERE"
SOLUTION_MARK = "### BEGIN SOLUTION"  # (cut of a solution file: the reference answers, for the kit's tests)
_RELATIVE = re.compile(r"^from \.([A-Za-z_][A-Za-z0-9_]*) import ", re.MULTILINE)


@dataclass(frozen=True)
class Cell:
    kind: str  # "locked" or "answer"
    grade_id: str  # nbgrader's grade_id: "<module>-imports", "<module>-<name>"
    source: str  # the cell as module text (what is graded), no leading or trailing blank line
    name: str = ""  # an answer cell: the function or class it defines


def _text(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n")


def _answers(tree: ast.Module, lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, name), 0-based and inclusive, of each top-level definition holding a
    stub; the first line takes in its decorators and the comment lines right above it."""
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        last = node.end_lineno - 1
        nxt = last + 1
        while nxt < len(lines) and (not lines[nxt].strip() or lines[nxt][:1] in " \t"):  # indented comments
            last = nxt if lines[nxt].strip() else last  # (``### END SOLUTION``) still belong to the body
            nxt += 1
        if not any(STUB_MARK in line or SOLUTION_MARK in line for line in lines[first:last + 1]):
            continue
        while first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1
        found.append((first, last, node.name))
    return found


def cut(stub: str, module: str) -> list[Cell]:
    """The cells of a module's stub text (see the module docstring)."""
    lines = stub.splitlines()
    units = _answers(ast.parse(stub), lines)
    cells: list[Cell] = []
    start, previous = 0, ""
    for first, last, name in units:
        gap = _text(lines[start:first])
        if gap:
            cells.append(Cell("locked", f"{module}-after-{previous}" if previous else f"{module}-imports", gap))
        cells.append(Cell("answer", f"{module}-{name}", _text(lines[first:last + 1]), name))
        start, previous = last + 1, name
    tail = _text(lines[start:])
    if tail:
        cells.append(Cell("locked", f"{module}-after-{previous}" if previous else f"{module}-imports", tail))
    return cells


def join(sources: list[str]) -> str:
    """Cells' module texts as one module file (the inverse of `cut`)."""
    return "\n\n\n".join(s.strip("\n") for s in sources if s.strip()) + "\n"


def kernel_source(cell: Cell) -> str:
    """A locked cell as the notebook shows it: a kernel has no package to import relatively from, so
    ``from .flops import mfu`` reads ``from assignment.flops import mfu`` there (the graded module
    keeps the relative import: `cell.source`)."""
    return _RELATIVE.sub(r"from assignment.\1 import ", cell.source)


def digest(cells: list[Cell]) -> str:
    """What identifies a module's release: its cells' ids and texts (12 hex digits)."""
    h = hashlib.sha256()
    for c in cells:
        h.update(f"{c.kind}\0{c.grade_id}\0{c.source}\0".encode())
    return h.hexdigest()[:12]


def generate_layout(solutions: Path | None = None) -> dict:
    """Every module's cells, from the stubs `grader stubs` would write (in memory)."""
    from grader.course.stubs import generate_assignment

    modules = {}
    for f in generate_assignment(solutions or KIT_ROOT / "solutions"):
        if f.name != "__init__.py":
            module = f.name.removesuffix(".py")
            cells = cut(f.text, module)
            modules[module] = {"release": digest(cells), "cells": [asdict(c) for c in cells]}
    return {"about": "written by `grader stubs` (grader/notebooks/cells.py); do not edit", "modules": modules}


def _dumps(layout: dict) -> str:
    return json.dumps(layout, indent=1, ensure_ascii=False) + "\n"


def write_layout(path: Path = LAYOUT_PATH) -> bool:
    """Write layout.json from solutions/; True when it changed."""
    text = _dumps(generate_layout())
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def check_layout(path: Path = LAYOUT_PATH) -> list[str]:
    """Problems that make layout.json differ from what `grader stubs` would write."""
    if not path.exists():
        return [f"{path.relative_to(KIT_ROOT)} is missing"]
    if path.read_text(encoding="utf-8") != _dumps(generate_layout()):
        return [f"{path.relative_to(KIT_ROOT)} is out of date with solutions/"]
    return []


def load_layout(path: Path = LAYOUT_PATH) -> dict[str, tuple[str, list[Cell]]]:
    """module -> (release digest, cells), as the release wrote them (trusted: it ships with the grader)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {m: (v["release"], [Cell(**c) for c in v["cells"]]) for m, v in data["modules"].items()}
