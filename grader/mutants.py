"""The kit's own mutants: buggy variants of the solutions, one plausible bug each.

A mutant lives in `tests/mutants/<module>.py`, written one of two ways:

* as an *edit* of the reference: ``edit("pin_only_cuda_string", within="get_batch", old="...",
  new="...", why="...")`` replaces the text `old`, which must occur exactly once inside the
  definition `within` of `solutions/<module>.py` (inside its solution region, when it has one:
  the code, not the docstring), by `new`.  It follows the reference as it
  evolves, and breaks loudly (validate names it) when `old` is no longer there;
* as a whole definition decorated with ``@mutant(replaces=..., why=...)``: `replaces` names the
  definition it stands in for (`"storage_bytes"`, or `"AdamW.step"` for a method); the mutant's
  own name is free (it is renamed on substitution), and its body may use anything the solution
  module imports.

`grader validate` builds, for each mutant, a copy of the solutions with that one change and
proves that at least one graded test of the module fails.  ``gpu=True`` marks a bug only the GPU
tests can see (a CUDA-only code path): validate checks it on a machine with CUDA and lists it as
not checkable elsewhere.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader import KIT_ROOT, MODULES
from grader.static import find_definition

_REGISTRY: list["Mutant"] = []
_VARIANTS: list["Mutant"] = []


@dataclass(frozen=True)
class Mutant:
    module: str
    replaces: str  # the definition changed (`within` for an edit)
    why: str
    name: str
    source: str  # the definition, decorator stripped, renamed to the last part of `replaces`; "" for an edit
    old: str = ""  # an edit: this text of the definition ...
    new: str = ""  # ... becomes this
    gpu: bool = False  # only the GPU tests can see it

    @property
    def id(self) -> str:
        return f"{self.module}:{self.name}"


def mutant(*, replaces: str, why: str, gpu: bool = False) -> Callable[[Any], Any]:
    """Register the decorated function or class as a mutant of `replaces` in its module."""
    return _registrar(_REGISTRY, "mutants", replaces, why, gpu)


def edit(name: str, *, within: str, old: str, new: str, why: str, gpu: bool = False) -> None:
    """Register a mutant of the calling `tests/mutants/<module>.py`'s module that replaces the text
    `old` (exactly once inside the definition `within`) by `new`."""
    import sys

    caller = sys._getframe(1).f_globals["__name__"]
    module = caller.rsplit(".", 1)[-1]
    if module not in MODULES or not caller.startswith("tests.mutants."):
        raise ValueError(f"edit() is for tests/mutants/<module>.py, not {caller}")
    if not old or old == new:
        raise ValueError(f"mutant {module}:{name}: an edit needs an `old` text and a different `new` one")
    _REGISTRY.append(Mutant(module, within, why, name, "", old, new, gpu))


def variant(*, replaces: str, why: str) -> Callable[[Any], Any]:
    """Register a *correct* alternative formulation of `replaces` (in `tests/variants/<module>.py`):
    `grader validate` proves that it passes every graded test of its module, so the suites
    accept every correct formulation the handout allows."""
    return _registrar(_VARIANTS, "variants", replaces, why)


def _registrar(registry: list["Mutant"], folder: str, replaces: str, why: str,
               gpu: bool = False) -> Callable[[Any], Any]:
    def register(obj: Any) -> Any:
        module = obj.__module__.rsplit(".", 1)[-1]
        if module not in MODULES:
            raise ValueError(f"{folder} must live in tests/{folder}/<module>.py, not {obj.__module__}")
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        node = tree.body[0]
        assert isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        node.decorator_list = [d for d in node.decorator_list if not _is_registering_decorator(d)]
        original_name = node.name
        node.name = replaces.rsplit(".", 1)[-1]
        registry.append(Mutant(module, replaces, why, original_name, ast.unparse(node), gpu=gpu))
        return obj

    return register


def _is_registering_decorator(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    names = ("mutant", "variant")
    return (isinstance(func, ast.Name) and func.id in names) or (isinstance(func, ast.Attribute) and func.attr in names)


def load_mutants(modules: tuple[str, ...] = MODULES) -> list[Mutant]:
    """Import tests/mutants/<module>.py for each module that has one; all registered mutants."""
    import sys

    if str(KIT_ROOT) not in sys.path:
        sys.path.insert(0, str(KIT_ROOT))
    for module in modules:
        if (KIT_ROOT / "tests" / "mutants" / f"{module}.py").exists():
            importlib.import_module(f"tests.mutants.{module}")
    return [m for m in _REGISTRY if m.module in modules]


def load_variants(modules: tuple[str, ...] = MODULES) -> list[Mutant]:
    """Import tests/variants/<module>.py for each module that has one; all registered variants."""
    import sys

    if str(KIT_ROOT) not in sys.path:
        sys.path.insert(0, str(KIT_ROOT))
    for module in modules:
        if (KIT_ROOT / "tests" / "variants" / f"{module}.py").exists():
            importlib.import_module(f"tests.variants.{module}")
    return [m for m in _VARIANTS if m.module in modules]


def apply(m: Mutant, solution_source: str) -> str:
    """The solution module's source with `m.replaces` swapped for the mutant's definition, or
    with the edit made.  LookupError when the definition, or the edit's old text (exactly once
    inside it), is not there."""
    tree = ast.parse(solution_source)
    node = find_definition(tree, m.replaces)
    if node is None:
        raise LookupError(f"mutant {m.id}: solutions/{m.module}.py defines no {m.replaces}")
    lines = solution_source.splitlines()
    if m.old:  # inside the definition's solution region (its code, not its docstring), else the definition
        first, last = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1, node.end_lineno
        begin = next((i for i in range(first, last) if lines[i].strip() == "### BEGIN SOLUTION"), None)
        end = None if begin is None else next((i for i in range(begin, len(lines))  # (after the def's last line)
                                               if lines[i].strip() == "### END SOLUTION"), None)
        if begin is not None and end is not None:
            first, last = begin + 1, end
        body = "\n".join(lines[first:last])
        count = body.count(m.old)
        if count != 1:
            raise LookupError(f"mutant {m.id}: its old text occurs {count} times in {m.replaces} of "
                              f"solutions/{m.module}.py (exactly once needed): update the edit to the reference")
        return "\n".join(lines[:first] + body.replace(m.old, m.new).splitlines() + lines[last:]) + "\n"
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    indent = " " * node.col_offset
    body = textwrap.indent(m.source, indent).splitlines()
    return "\n".join(lines[:first] + body + lines[node.end_lineno:]) + "\n"


def build_target(m: Mutant, out: Path, solutions: Path | None = None) -> Path:
    """Write a complete implementation folder: the solutions with this one mutant applied."""
    solutions = solutions or KIT_ROOT / "solutions"
    out.mkdir(parents=True, exist_ok=True)
    for path in solutions.glob("*.py"):
        shutil.copy2(path, out / path.name)
    target = out / f"{m.module}.py"
    target.write_text(apply(m, (solutions / f"{m.module}.py").read_text()))
    return out
