"""Monkeypatching, followed through aliases: a global breach of every rule (see `grader.rules.scope`).

No file of a submission that can run may change what other code sees at run time: writing an
attribute or item of an object that other code also holds (a module, class or function imported
from torch, the standard library or another file of the submission) is *monkeypatching*, and
`torch.Tensor._swap = torch.Tensor.transpose` would let a ruled function call a forbidden op under
another name.  A reading of names alone cannot see it once the object has another name
(`T = torch.Tensor; T._swap = ...`), and a rule by names alone would flag honest code
(`t.grad = None`).  So `monkeypatches` follows *values*: an abstract interpretation of every file
that can run, all at once, with Python's scopes (module, class body, function, lambda,
comprehension, `global` and `nonlocal`), to a fixed point.

What a value may be (`Val`: flags and references, joined flow-insensitively per name):

* *shared* (`S`, an origin chain such as ``torch.nn.functional``, or a submission module): every
  imported name and every attribute chain of one (``F = torch.nn.functional``); ``type(x)``,
  ``x.__class__`` and every other dunder attribute (``__mro__``, ``__globals__``...), ``super()``,
  ``vars(...)``, ``globals()``, ``getattr(x, computed)``, ``getattr(shared, ...)``, what the
  introspection modules return (``inspect``, ``gc``, ``sys``, ``types``, ``importlib``) and the
  lookup methods (``mro``, ``__subclasses__``, ``__getattribute__``).  Writing an attribute or an item
  of a shared value is a monkeypatch (`torch.backends.*` settings excepted, but never a chain that
  comes back to ``torch`` or through a private name); so is calling ``setattr``/``delattr``/
  ``operator.setitem``/``X.__setattr__``/``X.__setitem__``/``X.update``/``X.pop``... on one, under
  any alias.
* *a holder* (`H`): a container the submission built that may hold shared objects (a literal, a
  comprehension, ``L.append(T)``, ``list``/``dict``/``zip``/``deque``/``SimpleNamespace``/
  ``partial``/``nullcontext``/``namedtuple`` and the other standard containers, `CONTAINERS`):
  whatever it hands out (an item, an element of a ``for`` or of an unpacking, ``with ... as``, an
  attribute, a method's result) is shared.  Writing into it is fine.
* a submission function or class (``f``), followed into its summary: what it returns, and which
  of its parameters it writes an attribute or item of (``def patch(c): c._swap = c.transpose``):
  calling one with a shared object (or a holder of one) there is a monkeypatch, and so is passing
  a function that patches to any call together with a shared object (``map(patch, [T])``).  A
  parameter's value is its default joined with "whatever the caller passes" (``p``); a method
  writing its own ``self`` is no monkeypatch.
* attributes by name (``F``): whatever the submission stores as ``X.name`` (an assignment, a class
  body, a keyword argument to a library constructor, ``setattr`` with a constant name; with a
  computed name, every name) is what ``anything.name`` may be; a property is its getter's result,
  ``__getattr__``/``__get__`` of any class flow into every attribute, ``__call__``/``__getitem__``/
  ``__iter__``/``__enter__`` into every call, element and ``with``.

Deliberately *new objects*, never shared: the result of calling a library function or class
(``torch.zeros(3)``, ``nn.Linear(2, 2)``, ``model.to(torch.float64)``), of arithmetic, of a
comparison.  So ``p = nn.Parameter(...); p.grad = None``, ``self.weight = ...``,
``model.layers[0].weight.data = ...``, ``opt.param_groups[0]["lr"] = ...`` stay clean.  Calls are
the one place a static reading must decide: a call of the submission's own function is what its
summary says (``def get(): return torch.Tensor`` makes ``get()`` shared, through any alias, module
or decorator), a call of the lookups above is shared, a standard container's is a holder, a
caught exception and a value sent into a generator are holders, any other library call is new.
What that leaves undecided, and answered "new": a library object outside the tables that keeps a
*positional* argument and hands it back as an attribute (keyword arguments are followed: they
name the attribute), ``**kwargs`` spread into a library constructor, a function passed as an
argument and called by the callee with the callee's own arguments (``apply(ident, T)`` where
``def apply(f, x): return f(x)``; a function that *patches*, passed with a shared object, is
caught at that call), descriptors other than properties and ``__get__``, metaclasses, a default
factory of a dataclass.  The runtime tripwires (`grader.rules.tripwire`) still watch the forbidden
callables of each rule.  Soundly, but with a false alarm: a literal container of imported objects
passed to a helper that writes into it.  Anything past the size caps (`MAX_REFS` references in one
value, `MAX_CHAIN` parts of an origin chain) is *anything* (`TOP`), which any write or call flags;
code nested past the interpreter's recursion limit is reported as not followed.  The analysis ends:
a statement is evaluated again only when a value it read grows, values only grow (a few flags,
bounded sets), and what a statement reports only grows with them.  But a value may grow `MAX_REFS`
times and each evaluation may apply up to `MAX_REFS` summaries, so a program can be built to cost
minutes (64 chained globals fed to 3,000 calls: 104 s of CPU for 70 KB).  Hence an explicit
budget (`budget`): evaluation steps in proportion to the syntax nodes read, with a floor; a program
that spends it is reported as too complex for the checks to follow (a breach of every rule, as a
program nested too deeply is), never as clean.

The same reading of values finds torch's compilers of code (`grader.rules.breaches.CODE_LOADERS`:
TorchScript, FX, export, compile, C++ extensions...) under any alias (`T = torch; T.fx.Graph()`, a
star import, `getattr(torch, "jit")`): each is reported where it is written, as the syntactic
check reports `torch.jit` spelled out.  Class patterns capture what they match: a keyword
sub-pattern the subject's attribute (`case C(name=v)`), a positional one anything (`__match_args__`).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from grader.rules.monkeypatch_statements import Evaluator
from grader.rules.monkeypatch_values import captures, def_head, head, target_names, targets
from grader.rules.monkeypatch_values import BUILTIN_NAMES, NONE, H, S, T, Val, shared
from grader.rules.breaches import dotted_name

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(eq=False)
class _Scope:
    kind: str  # module, class, function, lambda, comp
    parent: _Scope | None
    file: str
    names: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    fid: int | None = None
    module: _Scope | None = None

    def __post_init__(self) -> None:
        self.module = self if self.parent is None else self.parent.module


@dataclass(eq=False)
class _Func:
    fid: int
    node: ast.AST
    kind: str  # function, lambda, class
    scope: _Scope  # its body's scope
    positional: list[int] = field(default_factory=list)
    byname: dict[str, int] = field(default_factory=dict)
    vararg: int | None = None
    kwarg: int | None = None
    method: bool = False
    decorator: str | None = None  # static, class, property
    annotated: list[str] = field(default_factory=list)  # a class's annotated body names (dataclass fields)

    @property
    def self_pid(self) -> int | None:
        return self.positional[0] if self.method and self.decorator != "static" and self.positional else None


def monkeypatches(trees: Mapping[str, ast.Module], modules: Iterable[str] = ()) -> dict[str, list[str]]:
    """`{module: [breach, ...]}` for the program made of `trees` (`{module name: tree}`, the files
    that can run; `modules`: every submission module name).  Each breach names what is written and
    where ("monkeypatches T._swap (memory.py:7)"), or the compiler of code reached through an alias;
    a program past the budget is one breach, "too complex for the checks to follow", on its first file."""
    sizes = {name: sum(1 for _ in ast.walk(tree)) for name, tree in trees.items()}
    analysis = _Analysis(trees, frozenset(modules) | frozenset(trees), budget(sum(sizes.values())))
    try:
        analysis.run()
    except RecursionError:  # parsed, but nested past what the analysis follows: nothing can be vouched for
        first = next(iter(trees), "?")
        return {first: [f"nests too deeply for the monkeypatch check to follow ({first}.py)"]}
    except Exhausted as exc:  # as above, for the whole program: which file made it costly is not known
        names = [f"{name}.py" for name in sorted(trees, key=lambda n: -sizes[n])]  # the largest first
        listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        return {next(iter(trees)): [f"too complex for the checks to follow: {exc} on the program of {listed}"]}
    return {name: sorted(found) for name, found in analysis.found.items()}


#: The evaluation budget of one program (`budget`): steps (an expression evaluated, a call and each
#: summary it applies, counted in the references they handle) per syntax node read, with a floor.
#: Measured: the reference solutions take 1.0 step a node (7,500 nodes, 40 ms), the solutions with
#: every variant file 1.2, the 6,000 chained defs of tests/adversarial/budgets_static.py 1.5; the red
#: team's 70 KB program (64 chained globals fed to 3,000 calls) took 104 s of CPU without a budget
#: and ~1 s with this one.  tests/kit/test_rules_syntax.py holds honest code to a quarter of it.
STEPS_PER_NODE = 12
MIN_STEPS = 50_000


class Exhausted(Exception):
    """The analysis spent its budget: the program is too complex for the checks to follow."""


def budget(nodes: int) -> int:
    """The steps an analysis of a program of `nodes` syntax nodes may take."""
    return max(MIN_STEPS, STEPS_PER_NODE * nodes)


class _Analysis(Evaluator):
    def __init__(self, trees: Mapping[str, ast.Module], modules: frozenset[str], steps: int = MIN_STEPS):
        self.steps_left = steps
        self.steps = steps
        self.trees = trees
        self.modules = modules
        self.mod_scope: dict[str, _Scope] = {}
        self.stars: dict[str, list[tuple[str, str]]] = {}
        self.scopes: dict[int, _Scope] = {}  # id(node) of a def, lambda, class or comprehension -> its scope
        self.sid: dict[int, int] = {}  # id(scope) -> a small int
        self.funcs: list[_Func] = []
        self.func_of: dict[int, _Func] = {}  # id(node) -> _Func
        self.owner: list[int] = []  # parameter id -> the fid it belongs to
        self.items: list[tuple[_Scope, ast.AST]] = []
        self.cells: dict[tuple, Val] = {}
        self.deps: dict[tuple, set[int]] = {}
        self.queue: deque[int] = deque()
        self.queued: list[bool] = []
        self.current = -1
        self.found: dict[str, set[str]] = {}
        self.depth = 0

    # -- the engine: cells, joined until nothing grows ----------------------------------------
    def run(self) -> None:
        for name, tree in self.trees.items():
            sc = self._new_scope("module", None, name)
            self.mod_scope[name] = sc
            self._scan_body(tree.body, sc)
        self.queue.extend(range(len(self.items)))
        self.queued = [True] * len(self.items)
        while self.queue:  # an item runs again whenever a value it read grew, so its last run sees the final
            self.current = self.queue.popleft()  # values; what it reports only grows with them (kept in a set)
            self.queued[self.current] = False
            self._run_item(*self.items[self.current])

    def spend(self, steps: int) -> None:
        """Take `steps` from the budget; Exhausted when it is spent."""
        self.steps_left -= steps
        if self.steps_left < 0:
            raise Exhausted(f"{self.steps:,} evaluation steps spent")

    def read(self, key: tuple) -> Val:
        self.deps.setdefault(key, set()).add(self.current)
        return self.cells.get(key, NONE)

    def join(self, key: tuple, v: Val) -> None:
        if v == NONE:
            return
        old = self.cells.get(key, NONE)
        new = old | v
        if new != old:
            self.cells[key] = new
            for i in self.deps.get(key, ()):
                if not self.queued[i]:
                    self.queued[i] = True
                    self.queue.append(i)

    def report(self, sc: _Scope, node: ast.AST | None, message: str) -> None:
        if node is not None:
            self.found.setdefault(sc.file, set()).add(f"{message} ({sc.file}.py:{getattr(node, 'lineno', '?')})")

    def written(self, v: Val, sc: _Scope, node: ast.AST | None, message: str, holders: bool = False) -> None:
        """`v` has an attribute or item written: a monkeypatch if it is shared (or, for a write made
        through a callee, holds something shared); a write of a parameter goes into its function's summary."""
        if shared(v) or (holders and v.flags & H) or v.flags & T:
            self.report(sc, node, message)
        for r in v.refs:
            if r[0] in "pqc":
                self.join(("w", self.owner[r[1]]), Val(0, frozenset([r])))

    # -- scopes and names ----------------------------------------------------------------------
    def _new_scope(self, kind: str, parent: _Scope | None, file: str, node: ast.AST | None = None) -> _Scope:
        sc = _Scope(kind, parent, file)
        self.sid[id(sc)] = len(self.sid)
        if node is not None:
            self.scopes[id(node)] = sc
        return sc

    def _key(self, sc: _Scope, name: str) -> tuple:
        return ("v", self.sid[id(sc)], name)

    def _resolve(self, sc: _Scope, name: str) -> _Scope | None:
        """The scope that binds `name` as seen from `sc` (Python's rules); None: not bound in the module."""
        s: _Scope | None = sc
        first = True
        while s is not None:
            if s.kind == "module":
                return s if name in s.names else None
            if name in s.globals:
                return s.module if name in s.module.names else None  # type: ignore[union-attr]
            if name in s.names and name not in s.nonlocals and (first or s.kind != "class"):
                return s
            first = False
            s = s.parent
        return None

    def load(self, sc: _Scope, name: str) -> Val:
        s = self._resolve(sc, name)
        return self.read(self._key(s, name)) if s is not None else self._miss(sc.module, name, set())  # type: ignore[arg-type]

    def _miss(self, mod: _Scope, name: str, seen: set[str]) -> Val:
        """A name the module does not bind: from a star import, or a builtin."""
        out = NONE
        for kind, src in self.stars.get(mod.file, ()):
            if kind == "o":
                out |= Val(0, frozenset([("o", f"{src}.{name}")]))
            elif src not in seen:
                out |= Val(S) | self._module_attr(src, name, seen | {src})
        if name in BUILTIN_NAMES:
            out |= Val(0, frozenset([("o", f"builtins.{name}")]))
        return out

    def _module_attr(self, module: str, name: str, seen: set[str]) -> Val:
        ms = self.mod_scope.get(module)
        if ms is None:
            return Val(S)
        return self.read(self._key(ms, name)) if name in ms.names else self._miss(ms, name, seen)

    def bind_name(self, sc: _Scope, name: str, v: Val) -> None:
        s = self._resolve(sc, name) or sc.module
        self.join(self._key(s, name), v)  # type: ignore[arg-type]
        if s.kind == "class":  # a class attribute: what `anything.name` may be
            self.join(("F", name), v)

    # -- scanning: scopes, names, and one item per statement ---------------------------------
    def _scan_body(self, body: list[ast.stmt], sc: _Scope) -> None:
        for stmt in body:
            self._scan_stmt(stmt, sc)

    def _scan_stmt(self, stmt: ast.stmt, sc: _Scope) -> None:
        self.items.append((sc, stmt))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            sc.names.add(stmt.name)
            for e in [*stmt.decorator_list, *def_head(stmt)]:
                self._scan_expr(e, sc)
            kind = "class" if isinstance(stmt, ast.ClassDef) else "function"
            body_scope = self._new_scope(kind, sc, sc.file, stmt)
            f = self._new_func(stmt, kind, body_scope, sc)
            if isinstance(stmt, ast.ClassDef):
                f.annotated = [s.target.id for s in stmt.body if isinstance(s, ast.AnnAssign)
                               and isinstance(s.target, ast.Name)]
            self._scan_body(stmt.body, body_scope)
            return
        if isinstance(stmt, ast.Global):
            sc.globals.update(stmt.names)
            sc.module.names.update(stmt.names)  # type: ignore[union-attr]
            return
        if isinstance(stmt, ast.Nonlocal):
            sc.nonlocals.update(stmt.names)
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                if a.name == "*":
                    self.stars.setdefault(sc.file, []).append(self._star_source(stmt))
                else:
                    sc.names.add(a.asname or a.name.split(".")[0])
            return
        for target in targets(stmt):  # the names this statement binds
            sc.names.update(target_names(target))
        for h in getattr(stmt, "handlers", ()):
            if h.name:
                sc.names.add(h.name)
        for case in getattr(stmt, "cases", ()):
            sc.names.update(captures(case.pattern))
        for e in head(stmt):
            self._scan_expr(e, sc)
        for attr in ("body", "orelse", "finalbody"):
            self._scan_body(getattr(stmt, attr, []), sc)
        for h in getattr(stmt, "handlers", ()):
            self._scan_body(h.body, sc)
        for case in getattr(stmt, "cases", ()):
            self._scan_body(case.body, sc)

    def _scan_expr(self, e: ast.AST, sc: _Scope) -> None:
        todo: list[tuple[ast.AST, _Scope]] = [(e, sc)]
        while todo:
            n, s = todo.pop()
            if isinstance(n, ast.Lambda):
                todo.extend((d, s) for d in [*n.args.defaults, *n.args.kw_defaults] if d is not None)
                ls = self._new_scope("lambda", s, s.file, n)
                self._new_func(n, "lambda", ls, s)
                self.items.append((ls, n))
                todo.append((n.body, ls))
            elif isinstance(n, _COMPS):
                cs = self._new_scope("comp", s, s.file, n)
                for i, gen in enumerate(n.generators):
                    todo.append((gen.iter, s if i == 0 else cs))
                    cs.names.update(target_names(gen.target))
                    todo.append((gen.target, cs))
                    todo.extend((c, cs) for c in gen.ifs)
                todo.extend((x, cs) for x in (getattr(n, "elt", None), getattr(n, "key", None),
                                               getattr(n, "value", None)) if x is not None)
            else:
                if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                    owner = s
                    while owner.kind == "comp" and owner.parent is not None:
                        owner = owner.parent
                    owner.names.add(n.target.id)
                todo.extend((c, s) for c in ast.iter_child_nodes(n))

    def _new_func(self, node: ast.AST, kind: str, body: _Scope, outer: _Scope) -> _Func:
        f = _Func(len(self.funcs), node, kind, body, method=outer.kind == "class" and kind == "function")
        body.fid = f.fid
        self.funcs.append(f)
        self.func_of[id(node)] = f
        for d in getattr(node, "decorator_list", ()):
            last = dotted_name(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
            f.decorator = {"staticmethod": "static", "classmethod": "class", "property": "property",
                           "cached_property": "property", "getter": "property"}.get(last, f.decorator)
        if kind != "class":
            a = node.args  # type: ignore[attr-defined]
            for i, arg in enumerate([*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]):
                if arg is None:
                    continue
                pid = len(self.owner)
                self.owner.append(f.fid)
                body.names.add(arg.arg)
                self.cells[self._key(body, arg.arg)] = Val(0, frozenset([("p", pid)]))
                if arg is a.vararg:
                    f.vararg = pid
                elif arg is a.kwarg:
                    f.kwarg = pid
                else:
                    if i < len(a.posonlyargs) + len(a.args):
                        f.positional.append(pid)
                    if i >= len(a.posonlyargs):
                        f.byname[arg.arg] = pid
        return f

    def _star_source(self, node: ast.ImportFrom) -> tuple[str, str]:
        parts = [p for p in (node.module or "").split(".") if p]
        if parts and parts[-1] in self.modules:
            return ("m", parts[-1])
        return ("o", node.module or "") if node.level == 0 else ("m", "")

    def _import(self, node: ast.Import | ast.ImportFrom, a: ast.alias) -> Val:
        if isinstance(node, ast.Import):
            name = a.name if a.asname else a.name.split(".")[0]
            last = name.rsplit(".", 1)[-1]
            return Val(0, frozenset([("m", last) if last in self.modules else ("o", name)]))
        parts = [p for p in (node.module or "").split(".") if p]
        if parts and parts[-1] in self.modules:
            return Val(S) | self._module_attr(parts[-1], a.name, {parts[-1]})
        if a.name in self.modules:  # from . import views, from assignment import views
            return Val(0, frozenset([("m", a.name)]))
        if node.level:
            return Val(S)
        return Val(0, frozenset([("o", f"{node.module}.{a.name}")]))

    def _run_item(self, sc: _Scope, node: ast.AST) -> None:
        if isinstance(node, ast.Lambda):
            self.join(("ret", sc.fid), self.ev(node.body, sc))
        else:
            self.statement(node, sc)  # type: ignore[arg-type]
