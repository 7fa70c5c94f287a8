"""Static checks: read a submission's source with `ast`, never run it.

Used by graded tests to enforce the assignment's rules ("AdamW must not use torch.optim",
"the einops rewrites must not call transpose/permute/view").  The helpers are deliberately
simple: they look at names that appear in calls and attribute accesses, and they also
report dynamic escapes (`getattr`, `eval`, `exec`, `__import__`, `importlib`) so that a rule
cannot be sidestepped by spelling a name at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

DYNAMIC_ESCAPES = frozenset({"getattr", "eval", "exec", "compile", "__import__", "importlib", "globals", "vars"})


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


def called_names(node: ast.AST) -> set[str]:
    """Dotted names of everything called inside `node` (`torch.matmul`, `?.transpose`, `rearrange`)."""
    return {dotted_name(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}


def referenced_names(node: ast.AST) -> set[str]:
    """Every bare name and every attribute name used inside `node`."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def imported_modules(tree: ast.AST) -> set[str]:
    """Modules named by `import x.y` and `from x.y import z` anywhere in `tree` (`x.y` and `x.y.z`)."""
    found: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module:
            found.add(n.module)
            found.update(f"{n.module}.{a.name}" for a in n.names)
    return found


def forbidden_uses(node: ast.AST, forbidden: Iterable[str]) -> list[str]:
    """Which of `forbidden` (e.g. "transpose", "mT") appear in `node` as attribute names, or as
    bare names for names longer than two characters (so a local variable `t` is fine but
    `x.t()` is not), plus any dynamic escape that could hide them."""
    attributes = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    bare = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    found = {f for f in forbidden if f in attributes or (len(f) > 2 and f in bare)}
    found |= DYNAMIC_ESCAPES & (attributes | bare)
    return sorted(found)


def calls_from(node: ast.AST, tree: ast.AST, package: str, names: Iterable[str]) -> set[str]:
    """Which of `names` are called inside `node` as functions of `package`: `package.name(...)`,
    or `name(...)` where the module did `from package import name`."""
    names = set(names)
    imported = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == package for a in n.names}
    aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names if a.name == package}
    found = set()
    for called in called_names(node):
        head, _, last = called.rpartition(".")
        if head in aliases and last in names:
            found.add(last)
        elif not head and imported.get(last) in names:
            found.add(imported[last])
    return found


def uses_any(node: ast.AST, wanted: Iterable[str]) -> bool:
    """Whether any of `wanted` (last component of a called name) is called in `node`."""
    wanted = set(wanted)
    return any(name.rsplit(".", 1)[-1] in wanted for name in called_names(node))
