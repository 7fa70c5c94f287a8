"""Which modules exist (discovered, not listed in code), in which order, and what each uses.

**Modules are discovered, not listed in code.**  A module is `solutions/NAME.py` (with its probes
`tests/probes/NAME.py` and its tests `tests/public/test_NAME.py`, `tests/hidden/test_NAME.py`).
Where there is no `solutions/` (the student release, the Gradescope bundle, the sandbox's kit
bundle) a module is a public probe file `tests/probes/NAME.py`, plus the modules a release's
marker says it carries over (below).  Names starting with ``_`` are helpers, never modules.
Their order (`grader.MODULES`): the handout's ``## N. `name` `` sections, then the assignments of
`course.toml` in their order, then by name; an assignment's own modules (its release's handout
sections, its summary tables and test numbers) are in the order course.toml lists them.
`discover_modules` is the one function that decides it (`grader new-module` builds on it).

**Dependencies between modules** (`dependencies`): a module uses another when its solution
imports it relatively (``from .flops import mfu``) or its probes reach it (``impl.optimizers``).
An assignment must hold what its modules use, or an earlier assignment must: such modules are
*carried over* (`Assignment.carried`): its release ships their stubs for the student to fill
with their own earlier work, and they are not graded again.

This module imports no other grader module: `grader.MODULES` is computed from it when the
package is imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

COURSE_FILE = "course.toml"
ENV = "KIT_COURSE"
_MODULE = re.compile(r"[a-z][a-z0-9_]*")
_SECTION = re.compile(r"^## (\d+)\. `([a-z_0-9]+)`", re.MULTILINE)
_IMPL = re.compile(r"\bimpl\.([a-z][a-z0-9_]*)")
_PROBE_IMPORT = re.compile(r"\btests\.probes\.(_?[a-z][a-z0-9_]*)")


def _kit_root() -> Path:
    return Path(__file__).resolve().parents[2]


def course_path(root: Path | None = None) -> Path:
    """The course file: ``$KIT_COURSE`` where set, else course.toml at the kit root."""
    env = os.environ.get(ENV, "").strip()
    if env and root is None:
        return Path(env).expanduser().resolve()
    return (root or _kit_root()) / COURSE_FILE


def _public_names(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return [p.stem for p in folder.glob("*.py") if _MODULE.fullmatch(p.stem) and not p.stem.startswith("_")]


def handout_order(root: Path) -> list[str]:
    """The modules in the order of the handout's ``## N. `name` `` sections."""
    try:
        text = (root / "handout.md").read_text(encoding="utf-8")
    except OSError:
        return []
    return [name for _, name in _SECTION.findall(text)]


def _raw(root: Path | None) -> dict[str, Any] | None:
    path = course_path(root)
    if not path.is_file():
        return None
    import tomllib

    with open(path, "rb") as f:
        return tomllib.load(f)


def discover_modules(root: Path | None = None) -> tuple[str, ...]:
    """Every module of this copy of the kit, in order (see the module docstring); never raises
    (a course.toml that cannot be read orders nothing here: the commands report it)."""
    given, root = root, root or _kit_root()
    names = _public_names(root / "solutions")
    listed: list[str] = []
    try:
        raw = _raw(given) or {}
        for a in raw.get("assignment") or []:
            if isinstance(a, dict):
                mods = [m for m in a.get("modules") or [] if isinstance(m, str)]
                listed += mods
                if not (root / "solutions").is_dir():
                    names += [m for m in a.get("carried") or [] if isinstance(m, str) and _MODULE.fullmatch(m)]
    except (OSError, ValueError, AttributeError):
        pass
    if not (root / "solutions").is_dir():
        names += _public_names(root / "tests" / "probes")
    found = set(names)
    order = [m for m in (*handout_order(root), *listed, *sorted(found)) if m in found]
    return tuple(dict.fromkeys(order))


def dependencies(module: str, root: Path | None = None, modules: Iterable[str] | None = None) -> set[str]:
    """The other modules `module` uses: relative imports in its solution, ``impl.X`` in its probes
    (and in the probe helpers they import)."""
    import ast

    root = root or _kit_root()
    known = set(modules if modules is not None else discover_modules(root))
    used: set[str] = set()
    try:
        tree = ast.parse((root / "solutions" / f"{module}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                used |= {node.module} if node.module else {a.name for a in node.names}
    except (OSError, SyntaxError):
        pass
    for path in probe_files([module], root):
        if path.name == "__init__.py":  # (its docstring names impl.memory, impl.views as examples)
            continue
        used |= set(_IMPL.findall(path.read_text(encoding="utf-8")))
    return {m for m in used if m in known and m != module}


def probe_files(modules: Iterable[str], root: Path | None = None, also: Iterable[Path] = ()) -> list[Path]:
    """tests/probes/<module>.py of `modules` and every probe helper (`_*.py`) that they, or the
    files `also` (public tests), import, transitively; tests/probes/__init__.py first."""
    root = root or _kit_root()
    probes = root / "tests" / "probes"
    todo = [probes / f"{m}.py" for m in modules] + list(also)
    seen: dict[Path, None] = {probes / "__init__.py": None} if (probes / "__init__.py").exists() else {}
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        todo += [probes / f"{n}.py" for n in _PROBE_IMPORT.findall(path.read_text(encoding="utf-8"))]
    return [p for p in seen if p.parent == probes]
