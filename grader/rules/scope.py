"""The program a static rule covers (`build_scope`), and the breaches found in it (`grader.rules.breaches`).

A rule about function F of module M holds for the program that runs, not for one `def`.  Its
*scope* is F, every submission def it can reach by name, the module-level code of M and of every
submission module imported from code in the scope (transitively), with the *breaches* found
there: dynamic lookups no reading of the source can follow (`getattr`, `__dict__`,
`sys.modules`, `importlib`, `eval`, `__subclasses__`, frame inspection, `gc`, `ctypes`, imports
outside an allowlist, torch's private internals, spelled out or imported).  Added to them, the
*global breaches* of every file that can run (`global_breaches`): what changes the code other
files see at run time, or looks names up where no reading follows, wherever it is written (a
module `__getattr__`, importing the kit, loading code by a computed name or from source text, a
class pattern), and every monkeypatch of the program those files make (`grader.rules.monkeypatch`: a write to
an imported module, class or function, followed through any alias, container or call; within a
budget).

Which files are read.  Never all of them: a file that nothing imports is never parsed.

* For the scope: M, and the submission modules named by an import statement anywhere in M (reached
  or not), and anywhere in those, transitively (`closure`).  Defs are matched by name in these
  files only, through an index name -> defs built once per file, so building a scope is linear in
  the code it reads (6,000 chained defs used to take 90 s: every new name rescanned every def).
* For the global breaches: every file that can run, the closure of every graded module present
  (the sandbox imports any of them in the same process as M's probes) and of M.

Why that is sound.  A file's code runs only once the file is imported.  Every import statement
of a file that can run is followed, whether or not it is reached, so a file outside the closure
can only be loaded by a *computed* name (`importlib`, `__import__`, `exec` of a string, a pickle,
`torch.hub`...).  Such a loader is a breach where it is written: inside a rule's scope through
`_breach` (a dynamic lookup or a forbidden import), and in any file that can run through
`global_breaches` ("loads code by a computed name").  So a file outside the closure never runs
without a breach being reported, and reading it would add nothing: a loader can run an inline
string just as well.  Defs outside the closure cannot be reached by name from the scope either: a
name resolves in its own module, in what that module imports, or in builtins, and putting a
function there from elsewhere is an assignment to an attribute of an imported module (a global
breach) or a dynamic lookup (a breach).  What stays out of reach of any reading (a computed lookup
in a file outside every rule's scope that finds a loader by a computed name) is left to the runtime
tripwires, as before.

Sources are read through a `grader.rules.sources.SourceSet` (on demand, byte caps, any parse failure a
plain "does not parse"); the scopes of a run are kept in it, never process-wide.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grader import MODULES
from grader.rules.monkeypatch import monkeypatches
from grader.rules.breaches import _breach, class_pattern_names, global_breaches, string_names
from grader.rules.sources import SourceSet, Unparsable

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Scope:
    """What a rule about `module.qualname` covers, and the dynamic lookups found in it."""

    module: str
    qualname: str
    nodes: list[ast.AST] = field(default_factory=list)  # the function itself first
    files: list[str] = field(default_factory=list)
    breaches: list[str] = field(default_factory=list)
    _walked: Any = field(default=None, repr=False, compare=False)  # (ids of nodes, every node under them)


def find_definition(tree: ast.AST, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """Find `name` or `Class.method` among top-level definitions (the last one wins, as in Python)."""
    scope: list[ast.stmt] = list(getattr(tree, "body", []))
    node = None
    for part in qualname.split("."):
        node = None
        for stmt in scope:
            if isinstance(stmt, _DEFS) and stmt.name == part:
                node = stmt
        if node is None:
            return None
        scope = list(node.body)
    return node


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either order of the comparison)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return isinstance(stmt.test.ops[0], ast.Eq) and len(names) == 1 and len(consts) == 1


def _module_level(body: list[ast.stmt]) -> list[ast.AST]:
    """The code a module runs when imported: every top-level statement, but of a def only its
    decorators, defaults and annotations (its body runs when called), and of a class its bases,
    decorators and class-body statements (recursively, the same way)."""
    out: list[ast.AST] = []
    todo = list(reversed(body))
    while todo:
        stmt = todo.pop()
        if _is_main_guard(stmt):
            continue  # `if __name__ == "__main__":` never runs when the module is imported
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = stmt.args
            out.extend(stmt.decorator_list)
            out.extend(d for d in [*a.defaults, *a.kw_defaults] if d is not None)
            out.extend(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                       if x is not None and x.annotation is not None)
            if stmt.returns is not None:
                out.append(stmt.returns)
        elif isinstance(stmt, ast.ClassDef):
            out.extend([*stmt.decorator_list, *stmt.bases, *stmt.keywords])
            todo.extend(reversed(stmt.body))
        else:
            out.append(stmt)
    return out


def _submission_imports(n: ast.AST, modules: frozenset[str]) -> set[str]:
    """Submission modules named by the import `n` (`from .x import y`, `from . import x`, `import x`,
    and any dotted spelling whose first or last part is a submission module); empty for other nodes."""
    found: set[str] = set()
    if isinstance(n, ast.ImportFrom):
        found.update(p for p in (n.module or "").split(".") if p in modules)
        found.update(a.name.split(".")[0] for a in n.names if a.name.split(".")[0] in modules)
    elif isinstance(n, ast.Import):
        for a in n.names:
            found.update(p for p in a.name.split(".") if p in modules)
    return found


# -- which files, and the scope -------------------------------------------------------------

@dataclass(frozen=True)
class _Facts:
    """What one file tells every scope of a run (computed once per file)."""

    defs: dict[str, list[ast.AST]]  # name -> its defs and classes, any depth, not under a __main__ guard
    imports: frozenset[str]  # submission modules named by any import statement of the file
    global_breaches: tuple[str, ...]


def _tree(sources: SourceSet, name: str) -> ast.Module | None:
    """`name`.py's tree; None when it is not Python (a syntax error: the import refuses it too, so
    none of its code ever runs).  Unparsable when it is beyond what the checks read."""
    try:
        return sources.tree(name)
    except Unparsable as exc:
        if exc.invalid:
            return None
        raise


def _facts(sources: SourceSet, name: str) -> _Facts:
    key = ("facts", name)
    if key not in sources.memo:
        tree = _tree(sources, name)
        if tree is None:
            sources.memo[key] = _Facts({}, frozenset(), ())
            return sources.memo[key]
        defs: dict[str, list[ast.AST]] = {}
        imports: set[str] = set()
        for stmt in tree.body:  # one walk: defs (none under a __main__ guard: never run), imports (all)
            guarded = _is_main_guard(stmt)
            for n in ast.walk(stmt):
                if isinstance(n, _DEFS) and not guarded:
                    defs.setdefault(n.name, []).append(n)
                elif isinstance(n, (ast.Import, ast.ImportFrom)):
                    imports |= _submission_imports(n, sources.names)
        sources.memo[key] = _Facts(defs, frozenset(imports), tuple(global_breaches(tree, f"{name}.py")))
    return sources.memo[key]


def closure(sources: SourceSet, roots: Iterable[str]) -> list[str]:
    """The files of `roots` (those that exist) and every submission module named by an import
    statement anywhere in them, transitively, in the order found.  Parses exactly these files."""
    found = [r for r in dict.fromkeys(roots) if r in sources.names]
    seen = set(found)
    for name in found:  # (the list grows while it is read)
        for other in sorted(_facts(sources, name).imports - seen):
            seen.add(other)
            found.append(other)
    return found


def _monkeypatches(sources: SourceSet, files: list[str]) -> list[str]:
    """The monkeypatches of the program made of `files` (`grader.rules.monkeypatch`: followed through aliases,
    so the whole program at once), computed once per run for each set of files."""
    key = ("monkeypatches", tuple(files))
    if key not in sources.memo:
        trees = {f: t for f in files if (t := _tree(sources, f)) is not None}
        found = monkeypatches(trees, sources.names)
        sources.memo[key] = [b for f in files for b in found.get(f, [])]
    return sources.memo[key]


def runnable(sources: SourceSet, module: str) -> list[str]:
    """The files that can run in the process that runs `module`'s probes: the closure of every
    graded module present, and of `module`."""
    return closure(sources, [*MODULES, module])


def build_scope(sources: Mapping[str, bytes | str] | SourceSet, module: str, qualname: str) -> Scope:
    """The program a rule about `module.qualname` covers, given the submission's source files
    (a `SourceSet`, or `{"views": b"...", "utils": b"..."}`).  Raises SyntaxError
    (`grader.rules.sources.Unparsable`, naming the file) if a file it needs does not parse or is over the
    budget, LookupError if `qualname` is not defined.

    A suite asks for the same scope several times: it is kept in the SourceSet (one run) and each
    caller gets its own copy of the lists."""
    if not isinstance(sources, SourceSet):
        sources = SourceSet(sources)
    key = ("scope", module, qualname)
    if key not in sources.memo:
        sources.memo[key] = _build(sources, module, qualname)
    cached = sources.memo[key]
    return Scope(cached.module, cached.qualname, list(cached.nodes), list(cached.files), list(cached.breaches))


def _build(sources: SourceSet, module: str, qualname: str) -> Scope:
    if module not in sources.names:
        raise LookupError(f"{module}.py is missing")
    tree = sources.tree(module)
    target = find_definition(tree, qualname)
    if target is None:
        raise LookupError(f"{module}.py defines no {qualname}")
    reachable = closure(sources, [module])
    index: dict[str, list[tuple[str, ast.AST]]] = {}
    for file in reachable:
        for name, defs in _facts(sources, file).defs.items():
            index.setdefault(name, []).extend((file, d) for d in defs)
    scope = Scope(module, qualname)
    seen: set[int] = set()
    todo: list[tuple[str, ast.AST]] = []
    files: set[str] = set()
    referenced: set[str] = set()

    def add(file: str, node: ast.AST) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            todo.append((file, node))

    def add_file(file: str) -> None:
        if file not in files:
            files.add(file)
            for node in _module_level(getattr(_tree(sources, file), "body", [])):
                add(file, node)

    def refer(names: set[str]) -> None:  # every def of a newly referenced name, through the index
        for name in names - referenced:
            referenced.add(name)
            for file, d in index.get(name, ()):
                add(file, d)

    seen.add(id(target))
    if "." in qualname:  # a method: its class's own code runs too
        cls = find_definition(tree, qualname.rsplit(".", 1)[0])
        if cls is not None:
            for node in _module_level([cls]):
                add(module, node)
    add_file(module)
    refer({qualname.rsplit(".", 1)[-1]})  # an earlier def of the same name may have been kept under another
    todo.append((module, target))  # walked first: scope.nodes[0] is the function itself
    while todo:
        file, node = todo.pop()
        scope.nodes.append(node)
        names: set[str] = set()
        for n in ast.walk(node):  # one walk: breaches, names, imports, and the defs inside (walked here)
            if (b := _breach(n, f"{file}.py", sources.names)) is not None:
                scope.breaches.append(b)
            if isinstance(n, (ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign, ast.Subscript)):
                names |= string_names(n)  # x: "K[0]": beartype evaluates it, K's code runs
            if isinstance(n, ast.Name):
                names.add(n.id)
            elif isinstance(n, ast.Attribute):
                names.add(n.attr)
            elif isinstance(n, ast.MatchClass):  # case C(run=r): r is subject.run, maybe a def of the submission
                names.update(class_pattern_names(n))
            elif isinstance(n, ast.alias):
                names.add((n.asname or n.name).split(".")[0])
                names.add(n.name.rsplit(".", 1)[-1])
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for other in _submission_imports(n, sources.names):
                    add_file(other)
            elif isinstance(n, _DEFS) and n is not node:
                seen.add(id(n))
        refer(names)
    program = runnable(sources, module)
    for file in program:
        scope.breaches.extend(_facts(sources, file).global_breaches)
    scope.breaches.extend(_monkeypatches(sources, program))
    scope.files = sorted(f"{f}.py" for f in files)
    scope.breaches = sorted(set(scope.breaches))
    return scope
