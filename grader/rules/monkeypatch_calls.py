"""Calls, for the monkeypatch analysis (`grader.rules.monkeypatch`): of library functions (by the tables of
`grader.rules.monkeypatch_values`), of the submission's own functions and classes (through their summaries:
what they return, which parameters they write), and of what writes its target (`setattr`,
`X.__setattr__`, `X.update`...)."""

from __future__ import annotations

import ast
from typing import Any

from grader.rules.monkeypatch_values import (CONTAINERS, ELEMENTS, LOOKUP_ATTRS, LOOKUP_CALLS, LOOKUP_MAKERS, LOOKUP_MODULES,
                                   NONE, TOP, W_FUNCS, W_METHODS, H, R, S, T, Val, W, container_of, dunder, elem,
                                   holdable, own_refs, refs_val, shared, spelled)

_PLAIN_WRITERS = frozenset({"setattr", "delattr", "setitem", "delitem"})  # write their first argument
_BOUND_ARITY = {"__setattr__": 2, "__setitem__": 2, "__delattr__": 1, "__delitem__": 1}  # more: called unbound
_ADDERS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft", "put",
                     "put_nowait", "push", "__setitem__", "__iadd__", "__ior__"})  # what they are given, their receiver holds
_MAX_DEPTH = 40  # calls followed inside one another (a summary calling what it was given...)


def _constant_name(node: Any) -> str | None:
    """The attribute name a `getattr(x, "name")` / `setattr(x, "name", v)` call spells out, if it does."""
    args = node.args if isinstance(node, ast.Call) else []
    if len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args[:2]) \
            and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
        return args[1].value
    return None


def _is_super_call(e: ast.AST) -> bool:
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "super"


class Calls:
    """The call half of `grader.rules.monkeypatch_statements.Evaluator` (a mixin over the engine of `grader.rules.monkeypatch`)."""

    funcs: list
    owner: list
    depth: int

    # -- calls ---------------------------------------------------------------------------------
    def _call_expr(self: Any, e: ast.Call, sc: Any) -> Val:
        receiver = None
        if isinstance(e.func, ast.Attribute):
            receiver = self.ev(e.func.value, sc)
            callee = self.attribute(receiver, e.func.attr)
        else:
            callee = self.ev(e.func, sc)
        args, kws, star, dstar = [], {}, NONE, NONE
        for a in e.args:
            if isinstance(a, ast.Starred):
                star |= self.ev(a.value, sc)
            else:
                args.append(self.ev(a, sc))
        for k in e.keywords:
            v = self.ev(k.value, sc)
            if k.arg is None:
                dstar |= v
            else:
                kws[k.arg] = v
        if isinstance(e.func, ast.Attribute) and e.func.attr in _ADDERS:  # L.append(x): L holds x
            held = star | dstar
            for v in [*args, *kws.values()]:
                held |= v
            self.hold(e.func.value, held, sc)
        return self.call(callee, e.func, receiver, args, kws, star, dstar, sc, e)

    def call(self: Any, callee: Val, func: ast.AST | None, receiver: Val | None, args: list[Val],
             kws: dict[str, Val], star: Val, dstar: Val, sc: Any, node: ast.AST | None) -> Val:
        """What calling `callee` returns; reports the writes the call makes to shared objects."""
        if callee.flags & T:
            self.written(TOP, sc, node, f"monkeypatches through {spelled(func) if func else 'a call'}(...)")
            return TOP
        given = [*args, *kws.values(), star, dstar]
        self.spend(len(given) + len(callee.refs))
        everything = NONE
        for v in given:
            everything |= v
        out = NONE if any(r[0] in "of" for r in callee.refs) else self.read(("P", "call"))  # an instance's __call__
        if callee.flags & R:
            out |= Val(S)
        if callee.flags & H:
            out |= Val(S | H)
        if self._writer(callee):
            self._writer_call(callee, func, receiver, args, star, sc, node)
        resolved = False
        for r in callee.refs:
            if r[0] == "o":
                out |= self._library(r[1], node, args, kws, star, everything, sc)
            elif r[0] == "f":
                resolved = True
                out |= self._apply(self.funcs[r[1]], func, receiver, args, kws, star, dstar, sc, node)
            elif r[0] in "pqc":  # calling what the caller passed
                out |= refs_val(("c", r[1]))
                if holdable(everything):
                    self.join(("w", self.owner[r[1]]), refs_val(("x", r[1])))
        if not resolved:
            for k, v in kws.items():  # a library object may keep a keyword argument as an attribute
                self.join(("F", k), v)
            out |= Val(0, frozenset(r for r in everything.refs if r[0] == "f"))  # a wrapper of a function given
        patchers = [i for i, v in enumerate(given) if self.patcher(v)]
        if patchers and any(holdable(v) for i, v in enumerate(given) if i not in patchers):
            self.report(sc, node, f"monkeypatches through {spelled(func) if func else 'a call'}(...): "
                                  "passes a function that writes its argument, with a shared object")
        return out

    def _writer(self, callee: Val) -> bool:
        return bool(callee.flags & W) or any(r[0] == "o" and r[1].rsplit(".", 1)[-1] in W_FUNCS for r in callee.refs)

    def _writer_call(self: Any, callee: Val, func: ast.AST | None, receiver: Val | None, args: list[Val], star: Val,
                     sc: Any, node: Any) -> None:
        """`setattr(X, ...)`, `X.__setattr__(...)`, `type.__setattr__(X, ...)`, `X.update(...)`: X is written."""
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        unbound = receiver is not None and (any(r[0] == "o" and r[1].startswith("builtins.") for r in receiver.refs)
                                            or len(args) > _BOUND_ARITY.get(name, 99))  # C.__setattr__(obj, k, v)
        if isinstance(func, ast.Attribute) and receiver is not None and name in W_METHODS and not unbound \
                and not _is_super_call(func.value):  # X.__setattr__(...), X.update(...): X is written
            self.written(receiver, sc, node, f"monkeypatches {spelled(func)}(...)")
        if not isinstance(func, ast.Attribute) and callee.flags & W and callee.flags & S:
            self.report(sc, node, f"monkeypatches through {spelled(func) if func else 'a call'}(...)")  # u = X.update
        plain = name in _PLAIN_WRITERS or unbound or any(r[0] == "o" and r[1].rsplit(".", 1)[-1] in _PLAIN_WRITERS
                                                         for r in callee.refs)
        if plain and args:  # setattr(X, ...), object.__setattr__(X, ...): X is
            first = node.args[0] if isinstance(node, ast.Call) and node.args else None
            what = spelled(first) if first is not None else "..."
            self.written(args[0], sc, node, f"{spelled(func) if func else name}({what}, ...)")
        if plain and holdable(star):
            self.report(sc, node, f"{spelled(func) if func else name}(*...)")

    def _library(self: Any, chain: str, node: Any, args: list[Val], kws: dict, star: Val, everything: Val,
                 sc: Any) -> Val:
        """What a library function returns, by the tables (a new object for most)."""
        head, last = chain.split(".", 1)[0], chain.rsplit(".", 1)[-1]
        given = everything
        for v in [*args, *kws.values(), star]:  # a function handed to map, filter, reduce... is called there
            if v.flags & R or any(r[0] == "f" for r in v.refs):
                given |= self.call(v, None, None, [], {}, NONE, NONE, sc, None)
        if chain == "builtins.type":  # a class, or a new class of what it is given
            return Val(S)
        if last in ("property", "cached_property"):  # a property is what its getter returns
            return Val(0, frozenset(("g", r[1]) for r in everything.refs if r[0] == "f"))
        if chain == "builtins.getattr":
            name = _constant_name(node) or ("*" if self._delegated(node, sc) else None)
            got = self.attribute(args[0], name) if args and name and not dunder(name) else Val(S)
            return got | (args[2] if len(args) > 2 else NONE)
        if chain == "builtins.vars":
            return Val(S | H) if not args or holdable(args[0]) else Val(H, own_refs(args[0]))
        if chain == "builtins.setattr" and len(args) >= 3:
            self.join(("F", _constant_name(node) or "*"), args[2])
            return NONE
        if chain == "builtins.super":
            return Val(S)
        if chain in LOOKUP_CALLS or last in LOOKUP_ATTRS:
            return Val(S | H)
        if chain in CONTAINERS or head == "itertools":
            return container_of(given)
        if chain in ELEMENTS:
            return given | elem(given)
        if chain in LOOKUP_MAKERS:
            return container_of(given) | Val(R)
        if head in LOOKUP_MODULES:
            return Val(S | H)
        return NONE


    # -- the submission's own functions ---------------------------------------------------------
    def _apply(self: Any, f: Any, func: Any, receiver: Val | None, args: list[Val], kws: dict, star: Val, dstar: Val,
               sc: Any, node: Any) -> Val:
        """Calling the submission's def, lambda or class `f`."""
        if f.kind == "class":
            return self.construct(f, args, kws, star, dstar, sc, node)
        if f.decorator == "static" or not f.method or not isinstance(func, ast.Attribute):
            modes = [f.decorator == "class"]
        elif f.decorator == "class" or receiver is None:
            modes = [True]
        elif shared(receiver) or any(r[0] == "f" and self.funcs[r[1]].kind == "class" for r in receiver.refs):
            modes = [True, False]  # C.method(obj, ...) or obj.method(...): either
        else:
            modes = [True]
        out = NONE
        for bound in modes:
            out |= self.apply_mode(f, bound, receiver or NONE, args, kws, star, dstar, sc, node)
        return out

    def apply_mode(self: Any, f: Any, bound: bool, receiver: Val, args: list[Val], kws: dict, star: Val,
                   dstar: Val, sc: Any, node: Any) -> Val:
        """Its summary, with the arguments in place of its parameters: what it returns, and the
        writes it makes to them (a monkeypatch where one is shared)."""
        if self.depth > _MAX_DEPTH:
            return TOP
        given: dict[int, Val] = {}

        def give(pid: int | None, v: Val) -> None:
            if pid is not None:
                given[pid] = given.get(pid, NONE) | v

        positional = list(f.positional)
        if bound and positional:
            give(positional.pop(0), receiver)
        for i, v in enumerate(args):
            give(positional[i] if i < len(positional) else f.vararg, v if i < len(positional) else container_of(v))
        for k, v in kws.items():
            give(f.byname.get(k, f.kwarg), v if k in f.byname else container_of(v))
        spread = star | dstar
        if spread != NONE:
            for pid in [*positional, *f.byname.values(), f.vararg, f.kwarg]:
                give(pid, spread | elem(spread))
        ret = self.read(("ret", f.fid))
        writes = self.read(("w", f.fid))
        self.spend(1 + len(given) + len(ret.refs) + len(writes.refs))  # the work below, in references
        out = Val(ret.flags, frozenset(r for r in ret.refs if r[0] not in "pqc" or self.owner[r[1]] != f.fid))
        self.depth += 1
        try:
            for r in ret.refs:
                if r[0] in "pqc" and self.owner[r[1]] == f.fid:
                    out |= self._passed(r, given.get(r[1], NONE), sc)
            what = f"monkeypatches through {spelled(node.func) if isinstance(node, ast.Call) else 'a call'}(...)"
            for r in writes.refs:
                if bound and r[1] == f.self_pid:
                    continue  # a method writes its own instance
                v = given.get(r[1], NONE)
                if r[0] == "x":
                    if self.patcher(v):
                        self.report(sc, node, what + ": passes a function that writes its argument")
                    for p in v.refs:
                        if p[0] in "pqc":
                            self.join(("w", self.owner[p[1]]), refs_val(("x", p[1])))
                    continue
                self.written(self._passed(r, v, sc), sc, node, what, holders=True)
        finally:
            self.depth -= 1
        return out

    def _delegated(self: Any, node: Any, sc: Any) -> bool:
        """`getattr(x, name)` inside `__getattr__(self, name)`: Python calls it implicitly only for a
        name that is not a dunder (a dunder load is shared where it is written), and an explicit
        `obj.__getattr__(...)` is a lookup there: so `name` is some plain attribute name."""
        arg = node.args[1] if isinstance(node, ast.Call) and len(node.args) > 1 else None
        f = self.funcs[sc.fid] if sc is not None and sc.fid is not None else None
        return isinstance(arg, ast.Name) and f is not None and getattr(f.node, "name", "") in (
            "__getattr__", "__getattribute__") and arg.id in f.byname and self._resolve(sc, arg.id) is f.scope

    def _passed(self: Any, r: tuple, v: Val, sc: Any) -> Val:
        """The argument `v` in place of the parameter reference `r`: itself, something reached from
        it (an item, an attribute: shared if it holds or is anything shared), or what calling it returns."""
        if r[0] == "p":
            return v
        return elem(v) if r[0] == "q" else self.call(v, None, None, [], {}, NONE, NONE, sc, None)

    def construct(self: Any, f: Any, args: list[Val], kws: dict, star: Val, dstar: Val, sc: Any, node: Any) -> Val:
        """`C(...)` for a submission class: its __new__, __init__ and __post_init__ run; a dataclass
        keeps its arguments as its annotated fields."""
        out = NONE
        for name in ("__new__", "__init__", "__post_init__"):
            for r in self.class_member(f.fid, name, set()).refs:
                if r[0] == "f" and self.funcs[r[1]].kind != "class":
                    got = self.apply_mode(self.funcs[r[1]], True, NONE, args, kws, star, dstar, sc, node)
                    out |= got if name == "__new__" else NONE
        everything = star | dstar
        for v in [*args, *kws.values()]:
            everything |= v
        for name in f.annotated:
            self.join(("F", name), everything)
        return out

    def patcher(self: Any, v: Val) -> bool:
        """Whether calling `v` may write an attribute or item of what it is given."""
        if v.flags & (W | T) or self._writer(v):
            return True
        for r in v.refs:
            if r[0] != "f":
                continue
            f = self.funcs[r[1]]
            if f.kind == "class":
                init = self.class_member(f.fid, "__init__", set())
                if any(self.patcher(refs_val(x)) for x in init.refs if x[0] == "f" and x[1] != f.fid):
                    return True
            elif any(w[1] != f.self_pid for w in self.read(("w", f.fid)).refs):
                return True
        return False
