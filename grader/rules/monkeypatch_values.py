"""The values of the monkeypatch analysis (`grader.rules.monkeypatch`): what an expression may be, and the
tables of library functions whose results are looked up, hold or hand back what they are given."""

from __future__ import annotations

import ast
import builtins
from typing import NamedTuple

from grader.rules.breaches import dotted_name

S, H, R, W, T = 1, 2, 4, 8, 16  # shared, holder, calling returns shared, calling writes its target, anything
MAX_REFS = 64
MAX_CHAIN = 8


class Val(NamedTuple):
    """What an expression may evaluate to: flags, and references ("o", chain) to a library object,
    ("m", module), ("f", def id), ("p", parameter id): what the caller passes, ("q", parameter id):
    something reached from it (an attribute, an item), ("c", parameter id): what calling it returns."""

    flags: int = 0
    refs: frozenset = frozenset()

    def __or__(self, other: Val) -> Val:  # type: ignore[override]
        if (self.flags | other.flags) & T:
            return TOP
        if not other.refs and other.flags | self.flags == self.flags:
            return self
        refs = self.refs | other.refs
        return TOP if len(refs) > MAX_REFS else Val(self.flags | other.flags, refs)


NONE = Val()
TOP = Val(S | H | R | W | T)
BUILTIN_NAMES = frozenset(dir(builtins))
#: Calling these writes an attribute or item of their first argument (or, as methods, of their receiver).
W_FUNCS = frozenset({"setattr", "delattr", "setitem", "delitem", "__setattr__", "__delattr__", "__setitem__",
                     "__delitem__"})
W_METHODS = frozenset({"__setattr__", "__delattr__", "__setitem__", "__delitem__", "update", "setdefault", "pop",
                       "popitem", "clear"})
#: Methods whose result is looked up at run time (a class, a member): shared.
LOOKUP_ATTRS = frozenset({"mro", "__subclasses__", "__getattribute__", "__getattr__", "__reduce__", "__reduce_ex__",
                          "__get__"})
LOOKUP_MODULES = frozenset({"inspect", "gc", "sys", "types", "importlib", "pkgutil", "typing", "abc", "weakref",
                            "copyreg", "ctypes"})
LOOKUP_CALLS = frozenset({"builtins.super", "builtins.globals", "builtins.locals", "builtins.__import__",
                          "weakref.proxy", "torch.overrides.get_overridable_functions",
                          "torch.overrides.get_testing_overrides"})
#: Standard containers and holders: what they are given, they hand out.
CONTAINERS = frozenset({f"builtins.{n}" for n in ("list", "tuple", "set", "frozenset", "dict", "sorted", "reversed",
                                                  "iter", "aiter", "filter", "map", "zip", "enumerate")}
                       | {f"collections.{n}" for n in ("deque", "ChainMap", "OrderedDict", "defaultdict", "Counter",
                                                       "UserDict", "UserList")}
                       | {"types.SimpleNamespace", "types.MappingProxyType", "weakref.WeakValueDictionary",
                          "weakref.WeakKeyDictionary", "weakref.WeakSet", "contextlib.nullcontext", "numpy.array",
                          "numpy.asarray", "array.array", "heapq.nsmallest", "heapq.nlargest", "random.sample",
                          "random.choices"})
#: ... and these return one of what they are given.
ELEMENTS = frozenset({"builtins.next", "builtins.anext", "builtins.min", "builtins.max", "builtins.sum",
                      "functools.reduce", "operator.getitem", "random.choice", "heapq.heappop", "typing.cast",
                      "copy.copy", "copy.deepcopy", "statistics.mode"})
#: Calling what these return looks something up (or calls what they were given).
LOOKUP_MAKERS = frozenset({"operator.attrgetter", "operator.itemgetter", "operator.methodcaller", "weakref.ref",
                           "weakref.WeakMethod", "functools.partial", "functools.partialmethod",
                           "collections.namedtuple", "typing.NamedTuple", "dataclasses.make_dataclass",
                           "types.new_class"})
PROTOCOL = {"__call__": "call", "__getitem__": "item", "__iter__": "item", "__next__": "item", "__missing__": "item",
            "__reversed__": "item", "__aiter__": "item", "__anext__": "item", "__class_getitem__": "item",
            "__enter__": "enter", "__aenter__": "enter", "__getattr__": "attr", "__getattribute__": "attr",
            "__get__": "attr"}


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def exempt(chain: str) -> bool:
    """`torch.backends.<sub>...` settings may be written (never through `torch` again or a private name)."""
    parts = chain.split(".")
    return parts[:2] == ["torch", "backends"] and len(parts) <= 5 \
        and not any(p == "torch" or p.startswith("_") for p in parts[2:])


def shared(v: Val) -> bool:
    """Whether `v` may be an object other code also sees (writing to it is a monkeypatch)."""
    return bool(v.flags & S) or any(r[0] == "m" or (r[0] == "o" and not exempt(r[1])) for r in v.refs)


def holdable(v: Val) -> bool:
    """Whether `v` may be, or hold, a shared object."""
    return bool(v.flags & (S | H)) or any(r[0] in "om" for r in v.refs)


def own_refs(v: Val) -> frozenset:
    return frozenset(r for r in v.refs if r[0] in "fpqc")


def container_of(v: Val) -> Val:
    """A new container holding `v`."""
    return Val((H if holdable(v) else 0) | (v.flags & (R | W | T)), own_refs(v))


def refs_val(*refs: tuple) -> Val:
    return Val(0, frozenset(refs))


def elem(v: Val) -> Val:
    """What a container hands out (an item, an element, a `with ... as`): shared if it holds anything shared."""
    if v.flags & T:
        return TOP
    return Val(v.flags | (S if holdable(v) else 0), frozenset(("q", r[1]) if r[0] == "p" else r for r in own_refs(v)))


def spelled(node: ast.AST, limit: int = 80) -> str:
    """How the source spells `node` (for a breach's message), cut at `limit` characters."""
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        text = dotted_name(node)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- the shapes of statements ----------------------------------------------------------------------

def def_head(stmt: ast.stmt) -> list[ast.expr]:
    """What a def or class statement evaluates where it stands (besides decorators)."""
    if isinstance(stmt, ast.ClassDef):
        return [*stmt.bases, *(k.value for k in stmt.keywords)]
    a = stmt.args  # type: ignore[attr-defined]
    out = [d for d in [*a.defaults, *a.kw_defaults] if d is not None]
    out += [x.annotation for x in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]
            if x is not None and x.annotation is not None]
    return out + ([stmt.returns] if stmt.returns is not None else [])  # type: ignore[attr-defined]


def head(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions of a statement itself (not of the statements nested in it)."""
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(stmt):
        if isinstance(child, ast.expr):
            out.append(child)
        elif isinstance(child, ast.withitem):
            out += [x for x in (child.context_expr, child.optional_vars) if x is not None]
        elif isinstance(child, ast.excepthandler) and child.type is not None:
            out.append(child.type)
        elif isinstance(child, ast.match_case):
            out += [x for x in ast.walk(child.pattern) if isinstance(x, ast.expr)]
            out += [child.guard] if child.guard is not None else []
    return out


def targets(stmt: ast.stmt) -> list[ast.expr]:
    """What `stmt` assigns to or deletes."""
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    return []


def target_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`; none for `x.a` or `x[0]`)."""
    out, todo = [], [target]
    while todo:
        t = todo.pop()
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            todo.extend(t.elts)
        elif isinstance(t, ast.Starred):
            todo.append(t.value)
    return out


def captures(pattern: ast.AST) -> set[str]:
    names = set()
    for p in ast.walk(pattern):
        for attr in ("name", "rest"):
            if isinstance(getattr(p, attr, None), str):
                names.add(getattr(p, attr))
    return names
