"""Statements and expressions, for the monkeypatch analysis (`grader.rules.monkeypatch`, whose docstring says
what each value may be and why): bindings, attribute and item writes, attribute loads (calls:
`grader.rules.monkeypatch_calls`)."""

from __future__ import annotations

import ast
from typing import Any

from grader.rules.monkeypatch_calls import Calls
from grader.rules.breaches import CODE_LOADERS, _loader, code_loader
from grader.rules.monkeypatch_values import (LOOKUP_ATTRS, MAX_CHAIN, NONE, PROTOCOL, TOP, W_FUNCS, W_METHODS, H, R, S, T, Val,
                                   W, container_of, def_head, dunder, elem, head, holdable, own_refs, refs_val,
                                   spelled)

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: The attribute names on the way to one of torch's code loaders (`torch.fx`, `utils.cpp_extension`...).
_LOADER_PARTS = frozenset(p for m in CODE_LOADERS for p in m.split(".")[1:]) - {"utils", "cuda", "ops", "classes"}


class Evaluator(Calls):
    """The statement and expression half of `grader.rules.monkeypatch._Analysis` (a mixin: the engine's
    `read`/`join`/`report`/`written`, scopes and summaries live there)."""

    funcs: list
    owner: list
    scopes: dict
    func_of: dict
    mod_scope: dict
    depth: int

    # -- statements -------------------------------------------------------------------------
    def statement(self: Any, stmt: ast.stmt, sc: Any) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._define(stmt, sc)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                if a.name != "*":
                    self.bind_name(sc, a.asname or a.name.split(".")[0], self._import(stmt, a))
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None and sc.fid is not None:
                self.join(("ret", sc.fid), self.ev(stmt.value, sc))
        elif isinstance(stmt, ast.Assign):
            v = self.ev(stmt.value, sc)
            for t in stmt.targets:
                self.bind(t, v, sc, stmt, stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            v = self.ev(stmt.value, sc)
            if isinstance(stmt.target, ast.Name):
                self.bind(stmt.target, self._binop(self.ev(stmt.target, sc), v), sc, stmt)
            else:
                self.bind(stmt.target, v, sc, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            self.ev(stmt.annotation, sc)
            if stmt.value is not None:
                self.bind(stmt.target, self.ev(stmt.value, sc), sc, stmt, stmt.value)
            elif not isinstance(stmt.target, ast.Name):
                self.ev(stmt.target.value, sc)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.bind(stmt.target, elem(self.ev(stmt.iter, sc)), sc, stmt)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                v = self.ev(item.context_expr, sc)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, elem(v) | self.read(("P", "enter")), sc, stmt)
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                if not isinstance(t, ast.Name):
                    self.bind(t, None, sc, stmt)
        elif isinstance(stmt, ast.Match):
            v = self.ev(stmt.subject, sc)
            for case in stmt.cases:
                self.pattern(case.pattern, v, sc)
                if case.guard is not None:
                    self.ev(case.guard, sc)
        else:  # Expr, If, While, Raise, Assert, Try (the types it catches)...
            for e in head(stmt):
                self.ev(e, sc)
            for h in getattr(stmt, "handlers", ()):
                if h.name:  # what an exception was raised with, it holds
                    self.bind_name(sc, h.name, Val(H))

    def pattern(self: Any, p: ast.pattern, v: Val, sc: Any) -> None:
        """Match `v` against the pattern `p`: each capture is what it is matched with (the subject,
        an element, an item, an attribute of a class pattern: never the subject for those)."""
        if isinstance(p, ast.MatchAs):
            if p.pattern is not None:
                self.pattern(p.pattern, v, sc)
            if p.name:
                self.bind_name(sc, p.name, v)
        elif isinstance(p, ast.MatchOr):
            for alternative in p.patterns:
                self.pattern(alternative, v, sc)
        elif isinstance(p, ast.MatchSequence):
            for sub in p.patterns:
                if isinstance(sub, ast.MatchStar):
                    if sub.name:
                        self.bind_name(sc, sub.name, container_of(elem(v)))
                else:
                    self.pattern(sub, elem(v), sc)
        elif isinstance(p, ast.MatchMapping):
            for key in p.keys:
                self.ev(key, sc)
            for sub in p.patterns:
                self.pattern(sub, elem(v) | self.read(("P", "item")), sc)
            if p.rest:
                self.bind_name(sc, p.rest, container_of(elem(v)))
        elif isinstance(p, ast.MatchClass):  # (a breach anyway: grader.rules.breaches.global_breaches)
            self.ev(p.cls, sc)
            for sub in p.patterns:  # whatever C.__match_args__ names (`case int(x)`: the subject itself)
                self.pattern(sub, v | Val(S | H), sc)
            for name, sub in zip(p.kwd_attrs, p.kwd_patterns):
                self.pattern(sub, self.attribute(v, name), sc)
        elif isinstance(p, ast.MatchValue):
            self.ev(p.value, sc)

    def _define(self: Any, stmt: Any, sc: Any) -> None:
        f = self.func_of[id(stmt)]
        head = [self.ev(e, sc) for e in def_head(stmt)]
        if isinstance(stmt, ast.ClassDef):
            bases = NONE
            for v in head:
                bases |= v
            self.join(("bases", f.fid), bases)
        else:
            self._defaults(stmt, f, sc)
        value = refs_val(("f", f.fid))
        for d in reversed(stmt.decorator_list):
            value = self.call(self.ev(d, sc), d, None, [value], {}, NONE, NONE, sc, d)
        self.bind_name(sc, stmt.name, value)
        if f.method and f.decorator == "property":
            self.join(("F", stmt.name), refs_val(("g", f.fid)))
        if f.method and stmt.name in PROTOCOL:  # every instance may be called, indexed, entered... through it
            got = self.apply_mode(f, True, NONE, [], {}, NONE, NONE, sc, None)
            kind = PROTOCOL[stmt.name]
            self.join(("F", "*") if kind == "attr" else ("P", kind), got)

    def _defaults(self: Any, node: Any, f: Any, sc: Any) -> None:
        """A parameter is its default, or what the caller passes."""
        a = node.args
        defaults = dict(zip([*a.posonlyargs, *a.args][-len(a.defaults):] if a.defaults else [], a.defaults))
        defaults.update((k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
        for arg, d in defaults.items():
            self.join(self._key(f.scope, arg.arg), self.ev(d, sc))

    # -- bindings and writes ---------------------------------------------------------------------
    def bind(self: Any, target: ast.AST, v: Val | None, sc: Any, node: ast.AST, value: ast.AST | None = None) -> None:
        """Assign `v` to `target` (None: delete it)."""
        if isinstance(target, ast.Name):
            if v is not None:
                self.bind_name(sc, target.id, v)
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value, sc)
            self.written(base, sc, node, f"monkeypatches {spelled(target)}")
            if v is not None:
                self.join(("F", target.attr), v)
        elif isinstance(target, ast.Subscript):
            base = self.ev(target.value, sc)
            self.ev(target.slice, sc)
            self.written(base, sc, node, f"monkeypatches {spelled(target.value)}[...]")
            if v is not None:
                self.hold(target.value, v, sc)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None if v is None else container_of(elem(v)), sc, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                and not any(isinstance(x, ast.Starred) for x in [*value.elts, *target.elts])
            for i, t in enumerate(target.elts):
                part = None if v is None else (self.ev(value.elts[i], sc) if pairs else elem(v))  # type: ignore[union-attr]
                self.bind(t, part, sc, node)

    def hold(self: Any, e: ast.AST, v: Val, sc: Any) -> None:
        """The container `e` now holds `v`."""
        if v == NONE:
            return
        while isinstance(e, ast.Subscript):
            e = e.value
        if isinstance(e, ast.Name):
            self.bind_name(sc, e.id, container_of(v))
        elif isinstance(e, ast.Attribute):
            self.join(("F", e.attr), container_of(v))

    # -- expressions -------------------------------------------------------------------------------
    def ev(self: Any, e: ast.AST, sc: Any) -> Val:
        """What `e` may evaluate to.  Each evaluation is a step of the budget (`grader.rules.monkeypatch`); one that
        reaches torch's compilers of code (`grader.rules.breaches.CODE_LOADERS`) under a name the syntactic
        check cannot see (`T = torch; T.fx`, a star import) is reported where it is written."""
        self.spend(1)
        v = self._ev(e, sc)
        if v.refs and isinstance(e, (ast.Name, ast.Attribute, ast.Call)) and _loader(e) is None:
            for r in v.refs:
                if r[0] == "o" and code_loader(r[1]):
                    prefix = next(m for m in sorted(CODE_LOADERS) if r[1] == m or r[1].startswith(m + "."))
                    self.report(sc, e, f"loads code from source text or a graph: {prefix}, as {spelled(e, 40)}")
        return v

    def _ev(self: Any, e: ast.AST, sc: Any) -> Val:
        if isinstance(e, ast.Name):
            return self.load(sc, e.id)
        if isinstance(e, ast.Attribute):
            base = self.ev(e.value, sc)
            if base.flags & (S | T) and e.attr in _LOADER_PARTS:  # `box[0].fx`: some shared object's fx may be torch's
                self.report(sc, e, f"loads code from source text or a graph: .{e.attr} of a shared object, "
                                   f"as {spelled(e, 40)}")
            return self.attribute(base, e.attr)
        if isinstance(e, ast.Call):
            return self._call_expr(e, sc)
        if isinstance(e, ast.Subscript):
            base = self.ev(e.value, sc)
            self.ev(e.slice, sc)
            if any(r[0] == "o" and r[1].startswith("jaxtyping.") for r in base.refs) and isinstance(e.slice, ast.Tuple) \
                    and not all(isinstance(x, ast.Constant) for x in e.slice.elts[1:]):  # its shape is evaluated
                self.report(sc, e, f"evaluates code in a string: a jaxtyping shape computed at run time, {spelled(e, 40)}")
            return elem(base) | self.read(("P", "item"))
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            out = NONE
            for x in e.elts:
                out |= self.ev(x, sc)
            return container_of(out)
        if isinstance(e, ast.Dict):
            out = NONE
            for x in [*e.keys, *e.values]:
                if x is not None:
                    out |= self.ev(x, sc)
            return container_of(out)
        if isinstance(e, _COMPS):
            return self._comprehension(e, sc)
        if isinstance(e, ast.Starred):
            return elem(self.ev(e.value, sc))
        if isinstance(e, (ast.BoolOp, ast.IfExp)):
            out = NONE
            if isinstance(e, ast.IfExp):
                self.ev(e.test, sc)
            for x in (e.values if isinstance(e, ast.BoolOp) else [e.body, e.orelse]):
                out |= self.ev(x, sc)
            return out
        if isinstance(e, ast.NamedExpr):
            v = self.ev(e.value, sc)
            self.bind(e.target, v, sc, e)
            return v
        if isinstance(e, ast.BinOp):
            return self._binop(self.ev(e.left, sc), self.ev(e.right, sc))
        if isinstance(e, ast.UnaryOp):
            return self._binop(self.ev(e.operand, sc), NONE)
        if isinstance(e, ast.Lambda):
            f = self.func_of[id(e)]
            self._defaults(e, f, sc)
            return refs_val(("f", f.fid))
        if isinstance(e, ast.Await):
            return self.ev(e.value, sc)
        if isinstance(e, (ast.Yield, ast.YieldFrom)):
            v = NONE if e.value is None else self.ev(e.value, sc)
            fn = sc
            while fn is not None and fn.fid is None:
                fn = fn.parent
            if fn is not None:
                self.join(("ret", fn.fid), container_of(elem(v) if isinstance(e, ast.YieldFrom) else v))
            return Val(S | H)  # what the caller sends in: anything
        for child in ast.iter_child_nodes(e):  # constants, comparisons, f-strings, slices: new objects
            if isinstance(child, ast.expr):
                self.ev(child, sc)
        return NONE

    def _binop(self, a: Val, b: Val) -> Val:
        v = a | b
        return TOP if v.flags & T else Val(H if holdable(v) else 0, own_refs(v))

    def _comprehension(self: Any, e: Any, sc: Any) -> Val:
        cs = self.scopes[id(e)]
        for i, gen in enumerate(e.generators):
            self.bind(gen.target, elem(self.ev(gen.iter, sc if i == 0 else cs)), cs, e)
            for cond in gen.ifs:
                self.ev(cond, cs)
        out = NONE
        for x in (getattr(e, "elt", None), getattr(e, "key", None), getattr(e, "value", None)):
            if x is not None:
                out |= self.ev(x, cs)
        return container_of(out)

    def attribute(self: Any, v: Val, a: str) -> Val:
        """`v.a`."""
        if v.flags & T:
            return TOP
        out = self.read(("F", a)) | self.read(("F", "*"))
        getters = [r for r in out.refs if r[0] == "g"]
        if getters:
            out = Val(out.flags, frozenset(r for r in out.refs if r[0] != "g"))
            for r in getters:
                out |= self.apply_mode(self.funcs[r[1]], True, v, [], {}, NONE, NONE, None, None)
        flags = v.flags & S | (S | H if v.flags & H else 0)  # what a holder hands out is shared
        flags |= (W if a in W_METHODS or a in W_FUNCS else 0) | (R if a in LOOKUP_ATTRS else 0)
        if a == "__dict__":  # a namespace: shared where its owner is
            flags |= H | (S if holdable(v) else 0)
        elif dunder(a):
            flags |= S  # __class__, __mro__, __globals__, __self__...: shared whatever they are reached from
        refs = set()
        for r in v.refs:
            if r[0] == "o":
                chain = f"{r[1]}.{a}"
                if dunder(a) or chain.count(".") >= MAX_CHAIN:
                    flags |= S
                    if a in W_FUNCS or a in LOOKUP_ATTRS:
                        refs.add(("o", chain))
                else:
                    refs.add(("o", chain))
            elif r[0] == "m":
                flags |= S
                out |= self._module_attr(r[1], a, {r[1]})
            elif r[0] == "f" and self.funcs[r[1]].kind == "class":
                out |= self.class_member(r[1], a, set())
            elif r[0] in "pq":
                refs.add(("q", r[1]))  # reached from what the caller passed
            elif r[0] == "c":
                refs.add(r)
        return out | Val(flags, frozenset(refs))

    def class_member(self: Any, fid: int, a: str, seen: set[int]) -> Val:
        """`C.a` for a submission class: its body's binding, else its bases'."""
        cs = self.funcs[fid].scope
        if a in cs.names:
            return self.read(self._key(cs, a))
        seen.add(fid)
        bases = self.read(("bases", fid))
        out = self.attribute(Val(bases.flags, frozenset(r for r in bases.refs if r[0] != "f")), a)
        for r in bases.refs:
            if r[0] == "f" and self.funcs[r[1]].kind == "class" and r[1] not in seen:
                out |= self.class_member(r[1], a, seen)
        return out
