"""Static checks: read a submission's source with `ast`, never run it.

Used by graded tests to enforce the assignment's rules ("AdamW must not use torch.optim",
"the einops rewrites must not call transpose/permute/view").  A rule must hold for the
program that runs, not for one `def`: `build_scope` gathers what a rule about function F
covers (F, every submission function it can reach by name, the module-level code of its
file, every submission module imported from there, transitively) and lists every dynamic
lookup in it (`getattr`, `__dict__`, `sys.modules`, `importlib`, `eval`, `__subclasses__`,
frame inspection, `gc`, `ctypes`, ...) as a *breach*: a way to reach a name that no reading
of the source can see.  The helpers (`forbidden_uses`, `called_names`, ...) accept a
`Scope` or a single node.

Sources are parsed from their bytes (`ast.parse(bytes)` honours a coding cookie exactly as
the import does; staging rejects anything but UTF-8 anyway).  Rules are gates: a graded test
checks behaviour first and applies the rule after, so a rule can take points away but never
award them.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DYNAMIC_ESCAPES = frozenset({"getattr", "eval", "exec", "compile", "__import__", "importlib", "globals", "vars"})

#: Names (bare, or as an attribute) that look a name up at run time or reach interpreter internals.
BREACH_NAMES = frozenset({
    "getattr", "setattr", "delattr", "vars", "globals", "locals", "eval", "exec", "compile", "__import__",
    "__getattribute__", "__getattr__", "__dict__", "__subclasses__", "__globals__", "__closure__", "__code__",
    "__builtins__", "__wrapped__", "__func__", "__mro__", "__bases__", "__base__", "__loader__",
    "__spec__", "__reduce__", "__reduce_ex__", "__setattr__", "__delattr__", "__self__", "__kwdefaults__",
    "__defaults__", "attrgetter", "methodcaller", "f_globals", "f_locals", "f_back", "f_builtins", "f_code",
    "currentframe", "_getframe", "resolve_name", "import_module", "get_referrers", "get_referents",
    "get_objects", "breakpoint", "__kit_tripwire__",
    # string-to-object lookups outside the usual suspects (found by a red-team pass)
    "get_type_hints", "ForwardRef", "_eval_type", "get_field", "Formatter",
    # autograd's engine and the saved-tensor hooks behind the runtime tripwire
    "_C", "_ImperativeEngine", "_execution_engine", "run_backward", "_EngineBase",
    "saved_tensors_hooks", "disable_saved_tensors_hooks",
    # other processes computing for the function
    "system", "popen", "spawnv", "spawnl", "execv", "execl", "execvp", "execlp", "fork", "posix_spawn",
})
#: The only modules code under a rule may import (besides the submission's own): plain
#: computation.  Anything else (string, pickle, logging, sys, subprocess, ...) can turn a string
#: into an object or run code elsewhere, and no list of forbidden names can follow it there.
ALLOWED_IMPORTS = frozenset({
    "__future__", "torch", "einops", "jaxtyping", "beartype", "numpy", "math", "cmath", "typing", "collections",
    "dataclasses", "functools", "itertools", "operator", "numbers", "abc", "enum", "warnings", "time", "timeit",
    "os", "random", "tempfile", "pathlib", "io", "contextlib", "statistics", "copy", "fractions", "decimal",
    "heapq", "bisect", "json", "csv", "shutil", "glob", "struct", "hashlib", "sys", "array",
})
#: Modules whose import alone is a breach (they exist to look things up dynamically).
BREACH_MODULES = frozenset({"importlib", "pkgutil", "gc", "ctypes", "inspect", "builtins", "runpy", "code",
                            "codeop", "marshal", "types", "imp", "zipimport", "_ctypes", "pydoc"})


def find_definition(tree: ast.AST, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """Find `name` or `Class.method` among top-level definitions (the last one wins, as in Python)."""
    scope: list[ast.stmt] = list(getattr(tree, "body", []))
    node = None
    for part in qualname.split("."):
        node = None
        for stmt in scope:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == part:
                node = stmt
        if node is None:
            return None
        scope = list(node.body)
    return node


def _body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _raises_not_implemented(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def is_stub(node: ast.AST) -> bool:
    """A function whose body (after the docstring) only raises NotImplementedError; a class all of
    whose methods are such stubs."""
    if isinstance(node, ast.ClassDef):
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return bool(methods) and all(is_stub(m) for m in methods if m.name != "__repr__")
    body = _body_without_docstring(list(getattr(node, "body", [])))
    return bool(body) and all(_raises_not_implemented(s) or isinstance(s, ast.Pass) for s in body) \
        and any(_raises_not_implemented(s) for s in body)


def dotted_name(node: ast.AST) -> str:
    """`torch.optim.AdamW` -> "torch.optim.AdamW"; `x.transpose` -> "?.transpose"."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def called_names(node: "ast.AST | Scope") -> set[str]:
    """Dotted names of everything called inside `node` (`torch.matmul`, `?.transpose`, `rearrange`)."""
    return {dotted_name(n.func) for n in _walk(node) if isinstance(n, ast.Call)}


def referenced_names(node: "ast.AST | Scope") -> set[str]:
    """Every bare name and every attribute name used inside `node`."""
    names: set[str] = set()
    for n in _walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def imported_modules(tree: "ast.AST | Scope") -> set[str]:
    """Modules named by `import x.y` and `from x.y import z` anywhere in `tree` (`x.y` and `x.y.z`)."""
    found: set[str] = set()
    for n in _walk(tree):
        if isinstance(n, ast.Import):
            found.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module:
            found.add(n.module)
            found.update(f"{n.module}.{a.name}" for a in n.names)
    return found


def forbidden_uses(node: "ast.AST | Scope", forbidden: Iterable[str]) -> list[str]:
    """Which of `forbidden` (e.g. "transpose", "mT") appear in `node` as attribute names, or as
    bare names for names longer than two characters (so a local variable `t` is fine but
    `x.t()` is not), or as names imported with `from m import name`; plus any dynamic escape
    that could hide them (for a Scope: every breach, with where it is)."""
    attributes = {n.attr for n in _walk(node) if isinstance(n, ast.Attribute)}
    bare = {n.id for n in _walk(node) if isinstance(n, ast.Name)}
    imported = {a.name for n in _walk(node) if isinstance(n, ast.ImportFrom) for a in n.names}
    found = {f for f in forbidden if f in attributes or f in imported or (len(f) > 2 and f in bare)}
    found |= DYNAMIC_ESCAPES & (attributes | bare)
    out = sorted(found)
    if isinstance(node, Scope):
        out += [b for b in node.breaches if b.split(" (")[0] not in found]
    return out


def calls_from(node: "ast.AST | Scope", *args: object) -> set[str]:
    """Which of `names` are called inside `node` as functions of `package`: `package.name(...)`,
    or `name(...)` where the module did `from package import name`.

    `calls_from(scope, package, names)` (the imports are the scope's own) or
    `calls_from(node, tree, package, names)`."""
    if isinstance(node, Scope):
        tree: "ast.AST | Scope" = node
        package, names = args  # type: ignore[misc]
    else:
        tree, package, names = args  # type: ignore[misc, assignment]
    names = set(names)  # type: ignore[arg-type]
    imported = {a.asname or a.name: a.name for n in _walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == package for a in n.names}
    aliases = {a.asname or a.name for n in _walk(tree) if isinstance(n, ast.Import)
               for a in n.names if a.name == package}
    found = set()
    for called in called_names(node):
        head, _, last = called.rpartition(".")
        if head in aliases and last in names:
            found.add(last)
        elif not head and imported.get(last) in names:
            found.add(imported[last])
    return found


def uses_any(node: "ast.AST | Scope", wanted: Iterable[str]) -> bool:
    """Whether any of `wanted` (last component of a called name) is called in `node`."""
    wanted = set(wanted)
    return any(name.rsplit(".", 1)[-1] in wanted for name in called_names(node))


# -- the program a rule covers --------------------------------------------------------------

@dataclass
class Scope:
    """What a rule about `module.qualname` covers, and the dynamic lookups found in it."""

    module: str
    qualname: str
    nodes: list[ast.AST] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    breaches: list[str] = field(default_factory=list)
    _walked: Any = field(default=None, repr=False, compare=False)  # (ids of nodes, every node under them)


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """The code a module runs when imported: every top-level statement, but of a def only its
    decorators, defaults and annotations (its body runs when called), and of a class its bases,
    decorators and class-body statements (recursively, the same way)."""
    out: list[ast.AST] = []

    def visit(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
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
                visit(stmt.body)
            else:
                out.append(stmt)

    visit(tree.body)
    return out


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either order of the comparison)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return isinstance(stmt.test.ops[0], ast.Eq) and len(names) == 1 and len(consts) == 1


def _all_defs(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Every def and class of a module, at any depth, except those under a `__main__` guard."""
    body = [s for s in tree.body if not _is_main_guard(s)]
    return [n for n in ast.walk(ast.Module(body=body, type_ignores=[]))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _imported_submission_modules(nodes: Iterable[ast.AST], modules: set[str]) -> set[str]:
    """Submission modules named by the imports in `nodes` (`from .x import y`, `from . import x`,
    `import x`, and any dotted spelling whose first or last part is a submission module)."""
    found: set[str] = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.ImportFrom):
                parts = (n.module or "").split(".") if n.module else []
                found.update(p for p in parts if p in modules)
                found.update(a.name.split(".")[0] for a in n.names if a.name.split(".")[0] in modules)
            elif isinstance(n, ast.Import):
                for a in n.names:
                    found.update(p for p in a.name.split(".") if p in modules)
    return found


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
            out.add(n.name.rsplit(".", 1)[-1])
    return out


def _private_torch(n: ast.Attribute) -> bool:
    """`torch._C`, `torch.Tensor._make_subclass`: torch's private internals (not its dunders)."""
    parts = dotted_name(n).split(".")
    return parts[0] == "torch" and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                       for p in parts[1:])


def _breaches(node: ast.AST, file: str, modules: frozenset[str] = frozenset()) -> list[str]:
    found = []
    for n in ast.walk(node):
        name = None
        if isinstance(n, ast.Name) and n.id in BREACH_NAMES:
            name = n.id
        elif isinstance(n, ast.Attribute) and n.attr in BREACH_NAMES:
            name = n.attr
        elif isinstance(n, ast.Attribute) and n.attr == "modules" and dotted_name(n.value).endswith("sys"):
            name = "sys.modules"
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ("__getattr__", "__getattribute__"):
            name = f"def {n.name}"
        elif isinstance(n, ast.Attribute) and _private_torch(n):
            name = dotted_name(n)
        elif isinstance(n, ast.Import):
            name = next((a.name for a in n.names if a.name.split(".")[0] in BREACH_MODULES
                         or a.name.split(".")[0] not in ALLOWED_IMPORTS and a.name.split(".")[0] not in modules), None)
            name = f"import {name}" if name else None
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and (
                n.module.split(".")[0] in BREACH_MODULES or n.module.split(".")[0] not in ALLOWED_IMPORTS
                or any(a.name in BREACH_NAMES or (n.module == "sys" and a.name == "modules") for a in n.names)):
            name = f"from {n.module} import"
        if name is not None:
            found.append(f"{name} ({file}:{getattr(n, 'lineno', '?')})")
    return found


@dataclass(frozen=True)
class _FileInfo:
    tree: ast.Module
    defs: list
    global_breaches: list[str]


@functools.lru_cache(maxsize=256)
def _parse(name: str, text: bytes | str) -> _FileInfo:
    """One file's tree, its defs and its global breaches, keyed by its bytes: a suite asks for
    dozens of scopes over the same few files (the trees are shared, never modified)."""
    try:
        tree = ast.parse(text, filename=f"{name}.py")
    except SyntaxError as exc:
        raise SyntaxError(f"{name}.py does not parse: {exc}") from None
    return _FileInfo(tree, _all_defs(tree), global_breaches(tree, f"{name}.py"))


def parse(name: str, text: bytes | str) -> ast.Module:
    """`name`.py's tree, parsed once per content (shared between callers: read it, never change it).
    Raises SyntaxError naming the file."""
    return _parse(name, text).tree


def build_scope(sources: dict[str, bytes | str], module: str, qualname: str) -> Scope:
    """The program a rule about `module.qualname` covers, given every source file of the submission
    (`{"views": b"...", "utils": b"..."}`).  Raises SyntaxError (with the file name) if one does not parse,
    LookupError if `qualname` is not defined.

    A suite asks for the same scope several times (one rule per test, and a test per case): the
    answer is a function of the files' bytes, so it is kept (keyed by them) and each caller gets
    its own copy of the lists."""
    cached = _build_scope(tuple(sorted(sources.items())), module, qualname)
    return Scope(cached.module, cached.qualname, list(cached.nodes), list(cached.files), list(cached.breaches))


@functools.lru_cache(maxsize=256)
def _build_scope(items: tuple[tuple[str, bytes | str], ...], module: str, qualname: str) -> Scope:
    sources = dict(items)
    parsed = {name: _parse(name, text) for name, text in sources.items()}
    trees = {name: info.tree for name, info in parsed.items()}
    if module not in trees:
        raise LookupError(f"{module}.py is missing")
    target = find_definition(trees[module], qualname)
    if target is None:
        raise LookupError(f"{module}.py defines no {qualname}")
    defs = {name: info.defs for name, info in parsed.items()}
    scope = Scope(module, qualname)
    seen: set[int] = set()
    todo: list[tuple[str, ast.AST]] = []
    files: set[str] = set()

    def add(file: str, node: ast.AST) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            todo.append((file, node))

    def add_file(file: str) -> None:
        if file not in files:
            files.add(file)
            for node in _module_level(trees[file]):
                add(file, node)

    add(module, target)
    if "." in qualname:  # a method: its class's own code runs too
        cls = find_definition(trees[module], qualname.rsplit(".", 1)[0])
        if cls is not None:
            for node in _module_level(ast.Module(body=[cls], type_ignores=[])):
                add(module, node)
    add_file(module)
    referenced: set[str] = {qualname.rsplit(".", 1)[-1]}
    while todo:
        file, node = todo.pop()
        scope.nodes.append(node)
        scope.breaches.extend(_breaches(node, f"{file}.py", frozenset(trees)))
        for other in _imported_submission_modules([node], set(trees)):
            add_file(other)
        new = _names(node) - referenced
        referenced |= new
        if new:
            for other, nodes in defs.items():
                for d in nodes:
                    if d.name in referenced and id(d) not in seen:
                        add(other, d)
        if not todo:  # names referenced earlier may match defs of files added later
            for other in files:
                for d in defs[other]:
                    if d.name in referenced and id(d) not in seen:
                        add(other, d)
    for info in parsed.values():
        scope.breaches.extend(info.global_breaches)
    scope.files = sorted(f"{f}.py" for f in files)
    scope.breaches = sorted(set(scope.breaches))
    return scope


def global_breaches(tree: ast.Module, file: str) -> list[str]:
    """What no file of a submission may do, wherever it is, because it changes what *other* code
    (a ruled function, the probes) sees at run time: assign to an attribute of an imported module
    or class (`torch.Tensor.swap = torch.Tensor.transpose`; `torch.backends.*` settings are fine),
    `setattr`/`vars()`/`__dict__` on one, or import the kit's own packages (`grader`, `tests`)."""
    imported: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            imported.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.level == 0:
            imported.update(a.asname or a.name for a in n.names)
    found = []

    def rooted(expr: ast.AST) -> bool:
        chain = dotted_name(expr)
        return chain.split(".")[0] in imported and not chain.startswith("torch.backends")

    for stmt in tree.body:  # a module-level __getattr__ hands out names no reading can follow (PEP 562)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in ("__getattr__", "__dir__"):
            found.append(f"def {stmt.name} at module level ({file}:{stmt.lineno})")
    for n in ast.walk(tree):
        where = f"({file}:{getattr(n, 'lineno', '?')})"
        targets: list[ast.AST] = []
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = list(n.targets) if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and rooted(sub.value):
                    found.append(f"monkeypatches {dotted_name(sub)} {where}")
                elif isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute) and rooted(sub.value):
                    found.append(f"monkeypatches {dotted_name(sub.value)}[...] {where}")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("setattr", "delattr", "vars") \
                and n.args and rooted(n.args[0]):
            found.append(f"{n.func.id}({dotted_name(n.args[0])}, ...) {where}")
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] in ("grader", "tests") for a in n.names):
            found.append(f"imports the grader's own code {where}")
        if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] in ("grader", "tests"):
            found.append(f"imports the grader's own code {where}")
    return found


def read_sources(folder: Path) -> dict[str, bytes]:
    """Every module file of a submission folder as bytes (what the import reads), symlinks skipped."""
    out: dict[str, bytes] = {}
    for path in sorted(Path(folder).glob("*.py")):
        if path.is_file() and not path.is_symlink() and path.stem.isidentifier():
            out[path.stem] = path.read_bytes()
    return out


def _walk(target: "ast.AST | Scope") -> Iterable[ast.AST]:
    if isinstance(target, Scope):  # the rules walk one scope several times: walk it once
        key = tuple(id(n) for n in target.nodes)
        if target._walked is None or target._walked[0] != key:
            target._walked = (key, [n for node in target.nodes for n in ast.walk(node)])
        return target._walked[1]
    return ast.walk(target)
