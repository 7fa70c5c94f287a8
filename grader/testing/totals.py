"""Points and counts, computed from the tests: the one source of every total the docs state.

A TA who adds a test or a mutant changes a number that the README, the handout's section headers,
docs/CONTRIBUTING.md's mutant table and docs/STUDENT_README.md state.  Nobody keeps those by hand:

* `module_totals` reads a module's graded test files (their syntax tree, never importing them):
  each top-level ``test_*`` function (or method of a ``Test*`` class) with its
  ``@pytest.mark.points(n)`` (times its parametrized cases), ``@pytest.mark.gpu`` (or a module's
  ``pytestmark``), public or hidden by its folder; and counts the module's mutants (``edit(...)``
  calls and ``@mutant`` definitions in tests/mutants/) and correct variants.  `tests/kit/test_totals.py`
  cross-checks it against pytest's own collection and the registered mutants;
* `totals(modules, gpu_tests=...)` sums them for an assignment (`grader.course.config.Assignment`: its
  modules, and whether its GPU tests count), which is what a release of one assignment shows;
* `points_phrase` writes a handout section's header, ``(12 public points, 1 of them on the GPU;
  hidden tests add 5)``, and `parse_points` reads one back;
* `grader.authoring.totals_docs` puts them into the docs: `grader stubs` writes them, `grader release
  --check` fails naming the stale file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path

from grader import KIT_ROOT

#: Mutants a module must have (`grader validate` fails below it: `min_mutants`): this many per
#: function or class the student writes (an answer region of its solution), within `MIN_MUTANTS_RANGE`
#: -- a one-function module is not as expensive as a twelve-function one, and every module has an
#: independent breaking pass's worth (docs/CONTRIBUTING.md, "Mutants").  A module may state its own
#: floor with a reason in tests/mutants/<module>.py: ``MIN_MUTANTS = 4`` and ``MIN_MUTANTS_REASON = "..."``.
MUTANTS_PER_FUNCTION = 3
MIN_MUTANTS_LOW, MIN_MUTANTS_HIGH = 6, 15
MIN_MUTANTS_RANGE = (MIN_MUTANTS_LOW, MIN_MUTANTS_HIGH)

WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen twenty").split()


class TotalsError(ValueError):
    """A graded test whose points cannot be read from its source (the message names it)."""


@dataclass(frozen=True)
class ModuleTotals:
    module: str
    public: int = 0  # points of the public tests, GPU ones included
    public_gpu: int = 0
    hidden: int = 0
    hidden_gpu: int = 0
    public_tests: int = 0  # graded tests (a parametrized test counts each case)
    hidden_tests: int = 0
    mutants: int = 0
    variants: int = 0

    @property
    def points(self) -> int:
        return self.public + self.hidden

    @property
    def gpu(self) -> int:
        return self.public_gpu + self.hidden_gpu

    def without_gpu(self) -> "ModuleTotals":
        """The module's points where its GPU tests do not count (`gpu_tests = false`)."""
        return replace(self, public=self.public - self.public_gpu, hidden=self.hidden - self.hidden_gpu,
                       public_gpu=0, hidden_gpu=0)


@dataclass(frozen=True)
class Totals:
    modules: tuple[ModuleTotals, ...]

    def __getitem__(self, module: str) -> ModuleTotals:
        return next(m for m in self.modules if m.module == module)

    @property
    def public(self) -> int:
        return sum(m.public for m in self.modules)

    @property
    def hidden(self) -> int:
        return sum(m.hidden for m in self.modules)

    @property
    def gpu(self) -> int:
        return sum(m.gpu for m in self.modules)

    @property
    def points(self) -> int:
        return self.public + self.hidden

    @property
    def mutants(self) -> int:
        return sum(m.mutants for m in self.modules)

    @property
    def variants(self) -> int:
        return sum(m.variants for m in self.modules)


def _mark(node: ast.expr) -> tuple[str, list[ast.expr]] | None:
    """`pytest.mark.NAME(args)` or `pytest.mark.NAME` -> (NAME, args)."""
    call = node if isinstance(node, ast.Call) else None
    func = call.func if call else node
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "mark":
        return func.attr, list(call.args) if call else []
    return None


def _cases(args: list[ast.expr], where: str) -> int:
    if len(args) >= 2 and isinstance(args[1], (ast.List, ast.Tuple)):
        return len(args[1].elts)
    raise TotalsError(f"{where}: @pytest.mark.parametrize with cases that are not a literal list: its points "
                      "cannot be counted from the source (write the cases as a list, or loop inside one test)")


def _tests(path: Path) -> list[tuple[int, bool, int]]:
    """(points, gpu, cases) of each graded test in one test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_gpu = False
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            marks = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
            module_gpu = any((_mark(m) or ("",))[0] == "gpu" for m in marks)
    found = []
    defs = [(s, module_gpu) for s in tree.body]
    defs += [(s, module_gpu or any((_mark(d) or ("",))[0] == "gpu" for d in c.decorator_list))
             for c in tree.body if isinstance(c, ast.ClassDef) and c.name.startswith("Test") for s in c.body]
    for node, gpu in defs:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.name.startswith("test"):
            continue
        where = f"{path.parent.name}/{path.name}::{node.name}"
        points, cases = None, 1
        for dec in node.decorator_list:
            mark = _mark(dec)
            if mark is None:
                continue
            name, args = mark
            if name == "points":
                if points is not None or len(args) != 1 or not isinstance(args[0], ast.Constant) \
                        or not isinstance(args[0].value, int):
                    raise TotalsError(f"{where}: a graded test needs exactly one @pytest.mark.points(n), n an int")
                points = args[0].value
            elif name == "gpu":
                gpu = True
            elif name == "parametrize":
                cases *= _cases(args, where)
        if points is not None:
            found.append((points, gpu, cases))
    return found


def _registered(path: Path, call: str) -> int:
    """`edit(...)` calls at the top level of a mutants file plus definitions decorated `@call(...)`."""
    if not path.exists():
        return 0
    tree = ast.parse(path.read_text(encoding="utf-8"))
    n = 0
    for stmt in tree.body:
        if call == "mutant" and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "edit":
            n += 1
        for dec in getattr(stmt, "decorator_list", []):
            func = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(func, ast.Name) and func.id == call:
                n += 1
    return n


def module_totals(module: str, root: Path | None = None) -> ModuleTotals:
    """A module's points and counts, read from its test, mutant and variant files under `root`."""
    root = root or KIT_ROOT
    counts: dict[str, int] = {}
    for kind in ("public", "hidden"):
        path = root / "tests" / kind / f"test_{module}.py"
        tests = _tests(path) if path.exists() else []
        counts[kind] = sum(p * c for p, _, c in tests)
        counts[f"{kind}_gpu"] = sum(p * c for p, gpu, c in tests if gpu)
        counts[f"{kind}_tests"] = sum(c for _, _, c in tests)
    return ModuleTotals(module, **counts,
                        mutants=_registered(root / "tests" / "mutants" / f"{module}.py", "mutant"),
                        variants=_registered(root / "tests" / "variants" / f"{module}.py", "variant"))


def totals(modules: tuple[str, ...], root: Path | None = None, *, gpu_tests: bool = True) -> Totals:
    """Per module and overall, for these modules (an assignment's); without the GPU tests' points
    where they do not count."""
    each = tuple(module_totals(m, root) for m in modules)
    return Totals(each if gpu_tests else tuple(m.without_gpu() for m in each))


def counted(n: float, noun: str) -> str:
    """``1 point``, ``2.5 points``, ``0 modules``: `n` (as %g) and `noun`, plural unless n is 1."""
    return f"{n:g} {noun}{'' if n == 1 else 's'}"


def count_word(n: int, like: str = "twelve") -> str:
    """`n` written as `like` is: a word ("Twelve", "twelve") or digits."""
    if like.isdigit() or n >= len(WORDS):
        return str(n)
    word = WORDS[n]
    return word.capitalize() if like[:1].isupper() else word


_PHRASE = re.compile(r"\((\d+) public points?(?:, (\d+) of them on the GPU)?; hidden tests add (\d+)"
                     r"(?: \((\d+) on the GPU\))?\)")


def points_phrase(m: ModuleTotals) -> str:
    """A handout section header's points: "(16 public points, 6 of them on the GPU; hidden tests add 8
    (2 on the GPU))"."""
    public = f"{m.public} public point{'s' if m.public != 1 else ''}"
    if m.public_gpu:
        public += f", {m.public_gpu} of them on the GPU"
    hidden = f"hidden tests add {m.hidden}" + (f" ({m.hidden_gpu} on the GPU)" if m.hidden_gpu else "")
    return f"({public}; {hidden})"


def parse_points(text: str) -> re.Match[str] | None:
    """The points phrase in a section header (`points_phrase`'s form), or None."""
    return _PHRASE.search(text)


def without_gpu_phrase(header: str) -> str:
    """A section header with its points less the GPU ones (an assignment whose GPU tests do not count)."""
    def fix(match: re.Match[str]) -> str:
        public, public_gpu, hidden, hidden_gpu = (int(g or 0) for g in match.groups())
        return points_phrase(ModuleTotals("", public=public - public_gpu, hidden=hidden - hidden_gpu))

    return _PHRASE.sub(fix, header)


def answer_regions(module: str, root: Path | None = None) -> int:
    """The functions and classes a student writes in `module`: its solution's ``### BEGIN SOLUTION`` regions."""
    path = (root or KIT_ROOT) / "solutions" / f"{module}.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if line.strip() == "### BEGIN SOLUTION")


def stated_min_mutants(module: str, root: Path | None = None) -> tuple[int, str] | None:
    """(floor, reason) a module states in tests/mutants/<module>.py (read with `ast`, never run), or None;
    TotalsError when one is stated without the other or is not a literal."""
    path = (root or KIT_ROOT) / "tests" / "mutants" / f"{module}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError):
        return None
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("MIN_MUTANTS", "MIN_MUTANTS_REASON"):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                raise TotalsError(f"{path}: {node.targets[0].id} must be a literal") from None
    if not found:
        return None
    floor, reason = found.get("MIN_MUTANTS"), found.get("MIN_MUTANTS_REASON")
    if type(floor) is not int or floor < 1 or not isinstance(reason, str) or not reason.strip():
        raise TotalsError(f"{path}: a module's own floor is MIN_MUTANTS = <a positive int> with "
                          "MIN_MUTANTS_REASON = \"why\" (both, at module level)")
    return floor, reason


def min_mutants(module: str, root: Path | None = None) -> int:
    """The mutants `module` must have: its own stated floor, else `MUTANTS_PER_FUNCTION` per answer
    region within `MIN_MUTANTS_RANGE`."""
    stated = stated_min_mutants(module, root)
    if stated is not None:
        return stated[0]
    low, high = MIN_MUTANTS_RANGE
    return max(low, min(high, MUTANTS_PER_FUNCTION * answer_regions(module, root)))
