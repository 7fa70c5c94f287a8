"""The kit's own mutants: buggy variants of the solutions, one plausible bug each.

A mutant lives in `tests/mutants/<module>.py`, written one of two ways:

* as an *edit* of the reference (the way to write one): ``edit("pin_only_cuda_string",
  within="get_batch", old="...", new="...", why="...")`` replaces the text `old`, which must occur
  exactly once inside the definition `within` of `solutions/<module>.py` (inside its solution
  regions, when it has any: the code, not the signature or the docstring), by `new`; a bug that
  needs several changes takes ``edits=[(old, new), ...]`` instead, made in order, each `old` once.
  It follows the reference as it evolves, and breaks loudly (validate names it) when an `old`
  is no longer there;
* as a whole definition decorated with ``@mutant(replaces=..., why=..., against=...)``, where no
  edit can say it (a rewrite, another signature): `replaces` names the definition it stands in
  for (`"storage_bytes"`, or `"AdamW.step"` for a method); the mutant's own name is free (it is
  renamed on substitution), and its body may use anything the solution module imports.  A
  parameter default written ``...`` is the reference's default of that parameter (a whole copy
  that changes one default, or a correct variant, states only the defaults it means).
  `against` is the `fingerprint` of the reference definition it was written against: when the
  reference changes, validate fails naming the mutant (a whole copy does not follow the
  reference), and ``grader validate --refresh-fingerprints`` records the new one after a person
  has looked at the mutant.

`grader validate` builds, for each mutant, a copy of the solutions with that one change and
proves that at least one graded test of the module fails.  ``gpu=True`` marks a bug only the GPU
tests can see (a CUDA-only code path): validate checks it on a machine with CUDA and lists it as
not checkable elsewhere.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import inspect
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader import KIT_ROOT, MODULES
from grader.rules.static import find_definition

_REGISTRY: list["Mutant"] = []
_VARIANTS: list["Mutant"] = []


@dataclass(frozen=True)
class Mutant:
    module: str
    replaces: str  # the definition changed (`within` for an edit)
    why: str
    name: str
    source: str  # the definition, decorator stripped, renamed to the last part of `replaces`; "" for an edit
    old: str = ""  # an edit of one change: this text of the definition ...
    new: str = ""  # ... becomes this
    gpu: bool = False  # only the GPU tests can see it
    edits: tuple[tuple[str, str], ...] = ()  # an edit: every (old, new), in order (`old`/`new` first)
    against: str = ""  # a whole copy: the fingerprint of the reference definition it was written against

    def __post_init__(self) -> None:
        if self.old and not self.edits:
            object.__setattr__(self, "edits", ((self.old, self.new),))

    @property
    def id(self) -> str:
        return f"{self.module}:{self.name}"


def mutant(*, replaces: str, why: str, gpu: bool = False, against: str = "") -> Callable[[Any], Any]:
    """Register the decorated function or class as a mutant of `replaces` in its module; `against`:
    the `fingerprint` of the reference it was written against (``grader validate
    --refresh-fingerprints`` writes it)."""
    return _registrar(_REGISTRY, "mutants", replaces, why, gpu, against)


def edit(name: str, *, within: str, why: str, old: str = "", new: str = "",
         edits: list[tuple[str, str]] | tuple[tuple[str, str], ...] = (), gpu: bool = False) -> None:
    """Register a mutant of the calling `tests/mutants/<module>.py`'s module that replaces the text
    `old` (exactly once inside the definition `within`'s solution regions) by `new`; or, for a bug
    of several changes, makes each (old, new) of `edits` in turn."""
    import sys

    caller = sys._getframe(1).f_globals["__name__"]
    module = caller.rsplit(".", 1)[-1]
    if module not in MODULES or not caller.startswith("tests.mutants."):
        raise ValueError(f"edit() is for tests/mutants/<module>.py, not {caller}")
    changes = tuple((o, n) for o, n in edits)
    if bool(old) == bool(changes):
        raise ValueError(f"mutant {module}:{name}: an edit takes old= and new=, or edits=[(old, new), ...]")
    if old:
        changes = ((old, new),)
    for o, n in changes:
        if not isinstance(o, str) or not isinstance(n, str) or not o or o == n:
            raise ValueError(f"mutant {module}:{name}: each edit needs an `old` text and a different `new` one")
    _REGISTRY.append(Mutant(module, within, why, name, "", gpu=gpu, edits=changes))


def variant(*, replaces: str, why: str) -> Callable[[Any], Any]:
    """Register a *correct* alternative formulation of `replaces` (in `tests/variants/<module>.py`):
    `grader validate` proves that it passes every graded test of its module, so the suites
    accept every correct formulation the handout allows."""
    return _registrar(_VARIANTS, "variants", replaces, why)


def _registrar(registry: list["Mutant"], folder: str, replaces: str, why: str,
               gpu: bool = False, against: str = "") -> Callable[[Any], Any]:
    def register(obj: Any) -> Any:
        module = obj.__module__.rsplit(".", 1)[-1]
        if module not in MODULES:
            raise ValueError(f"{folder} must live in tests/{folder}/<module>.py, not {obj.__module__}")
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        node = tree.body[0]
        assert isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        node.decorator_list = [d for d in node.decorator_list if not _is_registering_decorator(d)]
        original_name = node.name
        node.name = replaces.rsplit(".", 1)[-1]
        registry.append(Mutant(module, replaces, why, original_name, ast.unparse(node), gpu=gpu, against=against))
        return obj

    return register


def _is_registering_decorator(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    names = ("mutant", "variant")
    return (isinstance(func, ast.Name) and func.id in names) or (isinstance(func, ast.Attribute) and func.attr in names)


def _import_all(folder: str, modules: tuple[str, ...], root: Path | None) -> None:
    """Import tests/<folder>/<module>.py of each module that has one, from `root` (a snapshot of the
    kit, `grader.authoring.validate`) when it is not imported yet; their decorators and `edit` calls register."""
    import importlib.util
    import sys

    if str(KIT_ROOT) not in sys.path:
        sys.path.insert(0, str(KIT_ROOT))
    for module in modules:
        name, path = f"tests.{folder}.{module}", (root or KIT_ROOT) / "tests" / folder / f"{module}.py"
        if name in sys.modules or not path.exists():
            continue
        if root is None:
            importlib.import_module(name)
            continue
        importlib.import_module(f"tests.{folder}")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            spec.loader.exec_module(loaded)
        except BaseException:
            del sys.modules[name]
            raise


def load_mutants(modules: tuple[str, ...] = MODULES, root: Path | None = None) -> list[Mutant]:
    """Import tests/mutants/<module>.py for each module that has one (from `root`, a copy of the
    kit, where given); all registered mutants."""
    _import_all("mutants", modules, root)
    return [m for m in _REGISTRY if m.module in modules]


def load_variants(modules: tuple[str, ...] = MODULES, root: Path | None = None) -> list[Mutant]:
    """Import tests/variants/<module>.py for each module that has one; all registered variants."""
    _import_all("variants", modules, root)
    return [m for m in _VARIANTS if m.module in modules]


BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def editable_regions(lines: list[str], node: ast.AST) -> list[tuple[int, int]]:
    """Where an edit of the definition `node` may change text: the [first, last) line indices of each
    solution region inside it (the code between its markers: not its signature, docstring or
    decorators), or, with none, the whole definition."""
    first, last = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1, node.end_lineno
    regions, i = [], first
    while i < last:
        if lines[i].strip() == BEGIN:
            end = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == END), None)  # (may follow the def)
            if end is None:
                break
            regions.append((i + 1, end))
            i = end
        i += 1
    return regions or [(first, last)]


def apply(m: Mutant, solution_source: str) -> str:
    """The solution module's source with `m.replaces` swapped for the mutant's definition, or
    with the edits made.  LookupError when the definition, or an edit's old text (exactly once
    inside its solution regions), is not there; SyntaxError when the edited module does not parse."""
    tree = ast.parse(solution_source)
    node = find_definition(tree, m.replaces)
    if node is None:
        raise LookupError(f"mutant {m.id}: solutions/{m.module}.py defines no {m.replaces}")
    lines = solution_source.splitlines()
    if m.edits:  # inside the definition's solution regions (its code, not its docstring), else the definition
        regions = editable_regions(lines, node)
        texts = ["\n".join(lines[a:b]) for a, b in regions]
        for number, (old, new) in enumerate(m.edits, start=1):
            counts = [t.count(old) for t in texts]
            if sum(counts) != 1:
                which = f"its old text {number} of {len(m.edits)}" if len(m.edits) > 1 else "its old text"
                raise LookupError(f"mutant {m.id}: {which} occurs {sum(counts)} times in {m.replaces} of "
                                  f"solutions/{m.module}.py (exactly once needed): update the edit to the reference")
            k = counts.index(1)
            texts[k] = texts[k].replace(old, new)
        for (a, b), text in sorted(zip(regions, texts), reverse=True):
            lines[a:b] = text.splitlines()
        out = "\n".join(lines) + "\n"
    else:
        first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        indent = " " * node.col_offset
        body = textwrap.indent(reference_defaults(m, node), indent).splitlines()
        out = "\n".join(lines[:first] + body + lines[node.end_lineno:]) + "\n"
    try:
        ast.parse(out)
    except SyntaxError as exc:
        raise SyntaxError(f"mutant {m.id}: solutions/{m.module}.py with it does not parse (line {exc.lineno}: "
                          f"{exc.msg}): fix the mutant") from None
    return out


def _defaults(args: ast.arguments) -> dict[str, ast.expr]:
    positional = args.posonlyargs + args.args
    found = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    found.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return found


def reference_defaults(m: Mutant, reference: ast.AST) -> str:
    """The whole copy `m`'s source with each parameter default written ``...`` replaced by the
    reference definition's default of that parameter; the source unchanged when it has none.
    LookupError when the reference gives that parameter no default, or where ``...`` is the default
    of anything but the copy's own signature (a method of a whole class, a nested def, a lambda):
    there it would silently stay an Ellipsis."""
    tree = ast.parse(m.source)
    node = tree.body[0]
    own = node.args if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    for inner in ast.walk(tree):
        if isinstance(inner, ast.arguments) and inner is not own and any(
                isinstance(d, ast.Constant) and d.value is Ellipsis for d in (*inner.defaults, *inner.kw_defaults)):
            raise LookupError(f"mutant {m.id}: a default `...` stands for the reference's only in the signature "
                              f"of the definition it replaces, not in a nested def, lambda or a whole class's method")
    if own is None:
        return m.source
    theirs = _defaults(reference.args) if isinstance(reference, (ast.FunctionDef, ast.AsyncFunctionDef)) else {}
    changed = False

    def resolve(arg: ast.arg, default: ast.expr) -> ast.expr:
        nonlocal changed
        if not (isinstance(default, ast.Constant) and default.value is Ellipsis):
            return default
        if arg.arg not in theirs:
            raise LookupError(f"mutant {m.id}: its default `...` of {arg.arg} stands for the reference's, and "
                              f"{m.replaces} of solutions/{m.module}.py gives {arg.arg} none")
        changed = True
        return theirs[arg.arg]

    args = node.args
    positional = args.posonlyargs + args.args
    args.defaults = [resolve(a, d) for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)]
    args.kw_defaults = [d if d is None else resolve(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return ast.unparse(tree) if changed else m.source


def mutated_definition(m: Mutant, solution_source: str) -> Mutant:
    """The mutant as a whole definition: `m.replaces` as it reads in the solution with `m` applied
    (to put the bug into another implementation of the module, which an edit may not apply to)."""
    if not m.edits:
        return m
    node = find_definition(ast.parse(apply(m, solution_source)), m.replaces)
    assert node is not None
    return Mutant(m.module, m.replaces, m.why, m.name, ast.unparse(node), gpu=m.gpu)


def _without_docstrings(node: ast.AST) -> ast.AST:
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            n.body = body[1:] or [ast.Pass()]
    return node


def fingerprint(module: str, replaces: str, solutions: Path | None = None) -> str:
    """The fingerprint of the reference definition `replaces` of solutions/<module>.py: a sha256
    prefix of its syntax tree without docstrings (comments, blank lines and docstrings may change
    without making a whole-copy mutant stale; any change to the code does); "" when it is gone."""
    path = (solutions or KIT_ROOT / "solutions") / f"{module}.py"
    node = find_definition(ast.parse(path.read_text(encoding="utf-8")), replaces) if path.exists() else None
    if node is None:
        return ""
    return hashlib.sha256(ast.dump(_without_docstrings(node)).encode()).hexdigest()[:12]


def stale(mutants: list[Mutant], solutions: Path | None = None) -> list[str]:
    """One line per whole-copy mutant whose reference definition changed since it was written
    (its `against` is not the definition's fingerprint), or that records none."""
    out = []
    for m in mutants:
        if m.edits:
            continue
        now = fingerprint(m.module, m.replaces, solutions)
        if m.against != now:
            was = f"written against {m.against}" if m.against else "records no fingerprint"
            out.append(f"{m.id}: a whole copy of {m.replaces}, {was}; the reference is now {now or 'gone'}: "
                       "check that the mutant is still the same bug of the new reference (or make it an edit), then "
                       f"`grader validate --refresh-fingerprints --module {m.module}`")
    return out


def refresh_fingerprints(modules: tuple[str, ...] = MODULES, root: Path | None = None) -> list[str]:
    """Record the reference's current `fingerprint` in every whole-copy ``@mutant(...)`` of these
    modules' tests/mutants/<module>.py whose `against` differs (adding ``against=`` where it is
    missing); the ids of the mutants changed.  For after a person has looked at them (`stale`)."""
    root = root or KIT_ROOT
    changed = []
    for module in modules:
        path = root / "tests" / "mutants" / f"{module}.py"
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def at(lineno: int, col: int) -> int:  # (ast's columns count UTF-8 bytes)
            return starts[lineno - 1] + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8"))
        edits = []  # (start, end, replacement), as offsets into text
        for node in ast.parse(text).body:
            for dec in getattr(node, "decorator_list", []):
                if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Name) and dec.func.id == "mutant"):
                    continue
                keywords = {k.arg: k.value for k in dec.keywords}
                if not isinstance(keywords.get("replaces"), ast.Constant):
                    continue
                now = fingerprint(module, keywords["replaces"].value, root / "solutions")
                was = keywords.get("against")
                if isinstance(was, ast.Constant) and was.value == now:
                    continue
                if was is not None:
                    edits.append((at(was.lineno, was.col_offset), at(was.end_lineno, was.end_col_offset), f'"{now}"'))
                else:  # before the call's closing parenthesis
                    close = at(dec.end_lineno, dec.end_col_offset) - 1
                    edits.append((close, close, f', against="{now}"'))
                changed.append(f"{module}:{node.name}")
        for start, end, replacement in sorted(edits, reverse=True):
            text = text[:start] + replacement + text[end:]
        if edits:
            path.write_text(text, encoding="utf-8")
    return changed


def build_target(m: Mutant, out: Path, solutions: Path | None = None) -> Path:
    """Write a complete implementation folder: the solutions with this one mutant applied."""
    solutions = solutions or KIT_ROOT / "solutions"
    out.mkdir(parents=True, exist_ok=True)
    for path in solutions.glob("*.py"):
        shutil.copy2(path, out / path.name)
    target = out / f"{m.module}.py"
    target.write_text(apply(m, (solutions / f"{m.module}.py").read_text()))
    return out
