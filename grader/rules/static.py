"""Static checks: read a submission's source with `ast`, never run it.

Used by graded tests to enforce the assignment's rules ("AdamW must not use torch.optim",
"the einops rewrites must not call transpose/permute/view").  A rule must hold for the
program that runs, not for one `def`: `build_scope` (`grader.rules.scope`) gathers what a rule about
function F covers (F, every submission function it can reach by name, the module-level code of
its file, every submission module imported from there, transitively) and lists every dynamic
lookup in it (`getattr`, `__dict__`, `sys.modules`, `importlib`, `eval`, `__subclasses__`,
frame inspection, `gc`, `ctypes`, a class pattern, torch's compilers of source text, ...) as a
*breach*: a way to reach a name that no reading of the source can see.  The helpers here (`forbidden_uses`, `called_names`, ...) accept a
`Scope` or a single node.

Sources are read and parsed within a budget, only the files a question needs, and kept for one
run (`grader.rules.sources.SourceSet`; `ast.parse(bytes)` honours a coding cookie exactly as the
import does; staging rejects anything but UTF-8 anyway).  Rules are gates: a graded test
checks behaviour first and applies the rule after, so a rule can take points away but never
award them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from grader.rules.breaches import ALLOWED_IMPORTS, BREACH_MODULES, BREACH_NAMES, dotted_name, global_breaches  # noqa: F401
from grader.rules.breaches import class_pattern_names
from grader.rules.scope import Scope, build_scope, closure, find_definition, runnable  # noqa: F401
from grader.rules.scope import _is_main_guard as is_main_guard  # noqa: F401
from grader.rules.sources import MAX_FILE_BYTES, MAX_TOTAL_BYTES, SourceSet, Unparsable, run_cache  # noqa: F401

DYNAMIC_ESCAPES = frozenset({"getattr", "eval", "exec", "compile", "__import__", "importlib", "globals", "vars"})


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


def called_names(node: "ast.AST | Scope") -> set[str]:
    """Dotted names of everything called inside `node` (`torch.matmul`, `?.transpose`, `rearrange`)."""
    return {dotted_name(n.func) for n in _walk(node) if isinstance(n, ast.Call)}


def attribute_names(node: "ast.AST | Scope") -> set[str]:
    """Every attribute name looked up inside `node`: `x.name`, and the keyword names of a class
    pattern (`case C(name=v)` fetches `subject.name` with no attribute node; a class pattern is a
    breach anyway, `grader.rules.breaches.global_breaches`)."""
    names: set[str] = set()
    for n in _walk(node):
        if isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, ast.MatchClass):
            names.update(class_pattern_names(n))
    return names


def referenced_names(node: "ast.AST | Scope") -> set[str]:
    """Every bare name and every attribute name used inside `node`."""
    return {n.id for n in _walk(node) if isinstance(n, ast.Name)} | attribute_names(node)


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
    """Which of `forbidden` (e.g. "transpose", "mT") appear in `node` as attribute names (a class
    pattern's keyword names included), or as
    bare names the code reads without binding them itself (a local variable, parameter or def of
    its own named `view` or `t` is fine, `x.view(...)` and `x.t()` are not: the values bound are in
    the node too, and checked), or as names imported with `from m import name`; plus any dynamic
    escape that could hide them (for a Scope: every breach, with where it is)."""
    attributes = attribute_names(node)
    bound = {n.id for n in _walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    bound |= {n.arg for n in _walk(node) if isinstance(n, ast.arg)}
    bound |= {n.name for n in _walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bare = {n.id for n in _walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    imported = {a.name for n in _walk(node) if isinstance(n, ast.ImportFrom) for a in n.names}
    found = {f for f in forbidden if f in attributes or f in imported or f in bare}
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


def _walk(target: "ast.AST | Scope") -> Iterable[ast.AST]:
    if isinstance(target, Scope):  # the rules walk one scope several times: walk it once
        key = tuple(id(n) for n in target.nodes)
        if target._walked is None or target._walked[0] != key:
            target._walked = (key, [n for node in target.nodes for n in ast.walk(node)])
        return target._walked[1]
    return ast.walk(target)
