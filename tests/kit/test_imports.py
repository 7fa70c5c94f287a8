"""The grader's modules import one another without a cycle, its top level only calls downward
(`grader.LAYERS`), and so do the pipeline packages (their own `LAYERS`).

The import graph is read with `ast` from every module under ``grader/`` (nothing is imported).
An edge ``a -> b`` is an import statement in `a` that names `b`: at module level, inside a
function or a class, under ``if TYPE_CHECKING`` alike.  Function-level imports count: they are
how this code base keeps start-up cheap (torch, pytest and the sandbox are imported where they
are used), not a licence for two modules to need each other; a cycle behind a function-level
import is still two modules that cannot be read, tested or split apart, and it becomes a
start-up failure the day someone moves that import to the top.

What does not count: the parent packages Python runs on the way to a submodule (``import
a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``); counting them would make every package
whose ``__init__`` names a submodule a cycle.  An import that names a package itself (``from
grader import MODULES``) is an edge to that package's ``__init__``, and counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import KIT_ROOT

PACKAGE = "grader"


def modules(root: Path = KIT_ROOT) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's __init__) for every module under grader/."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path, package)
    return found


def _absolute(node: ast.ImportFrom, current: str, package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    """`name`, or the closest enclosing module of it that exists under grader/."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = KIT_ROOT) -> dict[str, set[str]]:
    """Module -> the grader modules it imports anywhere in its body (see the module docstring)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, (path, package) in known.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_known(alias.name, known) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, package)
                # `from pkg import sub` names the submodule; `from mod import func` names the module
                targets = [_known(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base, known)
                           for alias in node.names]
            edges.update(t for t in targets if t and t != name and t.split(".")[0] == PACKAGE)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative),
    each as one cycle through it, in a fixed order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(_one_cycle(sorted(component), graph))
    return sorted(components)


def _one_cycle(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A path a -> ... -> a inside a strongly connected `component` (breadth first from its first module)."""
    members, first = set(component), component[0]
    paths = {first: [first]}
    queue = [first]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == first:
                return paths[node] + [first]
            if child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return component  # (unreachable for a strongly connected component)


def test_no_import_cycle_in_the_grader() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles in grader/ (function-level imports count):\n" + "\n".join(
        "  " + " -> ".join(c) for c in found)


def test_a_cycle_would_be_found(tmp_path: Path) -> None:
    """The graph sees module-level, function-level and relative imports, and a package's __init__."""
    (tmp_path / PACKAGE / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from grader.a import x\n",
        "a.py": "x = 1\ndef f():\n    from grader.sub import b\n",
        "sub/__init__.py": "",
        "sub/b.py": "from ..c import y\n",
        "c.py": "from grader import MODULES\ny = 2\n",
        "d.py": "import grader.sub.b as b\n",
    }
    for name, text in files.items():
        (tmp_path / PACKAGE / name).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["grader.a"] == {"grader.sub.b"} and graph["grader.sub.b"] == {"grader.c"}
    assert graph["grader.d"] == {"grader.sub.b"}
    assert cycles(graph) == [["grader", "grader.a", "grader.sub.b", "grader.c", "grader"]]


#: At most this many modules directly under grader/ (the rest live in packages named by their concerns).
MAX_TOP_LEVEL_MODULES = 8
#: The longest module and function a reader should meet (lines, docstrings included).
MAX_MODULE_LINES = 420
MAX_FUNCTION_LINES = 80


def _unit(module: str) -> str:
    """The top-level unit of `module`: its package or module directly under grader/ ("" for grader itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_top_level_only_imports_downward() -> None:
    """Each package (or module) directly under grader/ imports only those after it in `grader.LAYERS`,
    and `LAYERS` names every one of them once.  Anything may import `grader` itself (MODULES, KIT_ROOT),
    which imports only `grader.course.modules`, which imports no other grader module."""
    from grader import LAYERS

    graph = import_graph()
    units = sorted({_unit(m) for m in graph} - {""})
    assert sorted(LAYERS) == units, "grader.LAYERS must name every package and module directly under grader/ once"
    upward = [f"{m} imports {target}" for m in sorted(graph) if _unit(m) for target in sorted(graph[m])
              if _unit(target) and _unit(target) != _unit(m) and LAYERS.index(_unit(target)) < LAYERS.index(_unit(m))]
    assert not upward, "grader/ imports against grader.LAYERS:\n  " + "\n  ".join(upward)
    assert graph[PACKAGE] == {"grader.course.modules"} and graph["grader.course.modules"] == set(), (
        "grader/__init__.py imports only grader.course.modules, which imports no other grader module")


def test_the_top_level_is_a_handful_of_packages() -> None:
    """At most `MAX_TOP_LEVEL_MODULES` modules directly under grader/; every package says in its
    docstring what it owns and what it may import."""
    top = sorted(p.stem for p in (KIT_ROOT / PACKAGE).glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules directly under grader/: {top}"
    for init in sorted((KIT_ROOT / PACKAGE).glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 20, f"{init.relative_to(KIT_ROOT)}: say what the package owns"
        assert "May import:" in doc, f"{init.relative_to(KIT_ROOT)}: say what the package may import (\"May import: ...\")"


def test_modules_and_functions_stay_readable() -> None:
    """No module under grader/ past `MAX_MODULE_LINES` lines, no function past `MAX_FUNCTION_LINES`."""
    long = []
    for path in sorted((KIT_ROOT / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(KIT_ROOT)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{rel}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "split these by concern:\n  " + "\n  ".join(long)


def test_the_architecture_page_names_every_package() -> None:
    """docs/ARCHITECTURE.md's table of the grader's packages names each entry of `grader.LAYERS`."""
    from grader import LAYERS

    text = (KIT_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## The grader's packages", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in LAYERS if f"`{name}`" not in section]
    assert not missing, f"docs/ARCHITECTURE.md, The grader's packages, does not name: {missing}"


@pytest.mark.parametrize("package", ["grader.batch", "grader.intake", "grader.results"])
def test_a_pipeline_package_only_calls_downward(package: str) -> None:
    """Each module of a pipeline package imports only the modules after it in the package's `LAYERS`
    (the orchestration above the stages, the stages in pipeline order, the shared pieces at the
    bottom), and the list names every module of the package."""
    import importlib

    layers = importlib.import_module(package).LAYERS
    graph = import_graph()
    prefix = package + "."
    here = sorted(m.removeprefix(prefix) for m in graph if m.startswith(prefix))
    assert sorted(layers) == here, f"{package}.LAYERS must name every module of the package once"
    upward = [f"{prefix}{m} imports {prefix}{other}"
              for i, m in enumerate(layers) for target in sorted(graph[prefix + m]) if target.startswith(prefix)
              for other in [target.removeprefix(prefix)] if layers.index(other) <= i]
    assert not upward, f"{package} imports against its LAYERS:\n  " + "\n  ".join(upward)
