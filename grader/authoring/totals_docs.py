"""The numbers the docs state about the code, written from it (`grader.testing.totals`), never by hand.

**Generated numbers live in marked places.**  A number that follows from the tests, the mutants,
the modules or a default in the code is written between markers that name where it comes from,
``<!--kit:NAME-->VALUE<!--/kit-->`` (invisible when the page renders); `grader stubs` (which a TA
runs after changing solutions/ or tests) rewrites every VALUE, and only those; `grader release
--check` and `tests/kit/test_totals.py` fail naming a file whose values differ.  The NAMEs
(`VALUES`):

* ``modules`` (the number of modules, in words or digits as written), ``points``, ``public``,
  ``hidden``, ``gpu`` (the whole kit's totals), ``points:ASSIGNMENT`` (an assignment of
  course.example.toml);
* ``default:MODULE.FUNCTION.PARAMETER``: a default of a function of solutions/MODULE.py (read with
  `ast`), e.g. the handout's "the default 10" trials of `time_matmul`;
* ``const:grader.PACKAGE.MODULE.NAME``: a constant of the grader (an int, float or string), e.g.
  the mutants each function needs.

Structured places are generated whole: the handout's section headers ``## 1. `memory`: ... (12
public points, 1 of them on the GPU; hidden tests add 5)`` (a header without its points gets
them), the README's table of course.example.toml's homeworks, docs/CONTRIBUTING.md's mutant table.

**A number outside them is never rewritten**: a measurement ("5 minutes for all twelve modules on
a quiet 2-core machine") stays as measured.  Such a number is still *checked* where it can go stale:
an unmarked "N modules" that is no longer the number of modules fails the check (mark it, or
mark the line ``<!--measured-->`` when it is a measurement of its day), and a "default N" outside a
marker fails always (mark it with where the default lives).

CHANGELOG.md is history: its entries keep the numbers of their release.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader import KIT_ROOT
from grader.testing.totals import Totals, count_word, parse_points, points_phrase, totals

DOC_FILES = ("README.md", "handout.md", "docs/CONTRIBUTING.md", "docs/STUDENT_README.md", "docs/ARCHITECTURE.md",
             "docs/INSTRUCTORS.md", "docs/NOTEBOOKS.md", "docs/PRAIRIELEARN.md")
_WORD = "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
        "sixteen|seventeen|eighteen|nineteen|twenty"
MARK = re.compile(r"<!--kit:(?P<name>[\w:.\-]+)-->(?P<value>.*?)<!--/kit-->")
_MODULE_COUNT = re.compile(rf"\b({_WORD}|\d+)([ -](?:graded |assignment )?modules\b)(?!')", re.IGNORECASE)
_DEFAULT = re.compile(r"\b(?:the )?default(?:s to| is| of)? \(?-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", re.IGNORECASE)
MEASURED = "<!--measured-->"
_HEADER = re.compile(r"^(## \d+\. `([a-z_0-9]+)`[^\n]*)$", re.MULTILINE)
_COURSE_ROW = re.compile(r"^\| `([\w-]+)`, \*[^*|]*\* \| ([^|]+?) \| ([^|]+?) \|", re.MULTILINE)
_MUTANT_TABLE = re.compile(r"^\|[^\n]*mutants now[^\n]*\|\n\|[-| ]+\|\n((?:\|[^\n]*\|\n)*)", re.MULTILINE)


class UnknownMark(ValueError):
    """A marker whose NAME the kit does not know (a typo, a renamed function): the check names it."""


_CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|(`+).+?\2", re.MULTILINE | re.DOTALL)  # a fence, a code span


def plain(text: str) -> str:
    """`text` as a reader sees it: the markers gone, their values kept; a marker shown inside a code
    span or fence (the CHANGELOG quoting the syntax) is text, kept as written."""
    out, at = [], 0
    for code in _CODE.finditer(text):
        out += [MARK.sub(lambda m: m.group("value"), text[at:code.start()]).replace(MEASURED, ""), code.group(0)]
        at = code.end()
    return "".join(out) + MARK.sub(lambda m: m.group("value"), text[at:]).replace(MEASURED, "")


def _modules(root: Path) -> tuple[str, ...]:
    from grader.course.modules import discover_modules

    return discover_modules(root)

def _headers(text: str, t: Totals, modules: tuple[str, ...]) -> str:
    def fix(match: re.Match[str]) -> str:
        line, module = match.group(1), match.group(2)
        if module not in modules:
            return line
        phrase = points_phrase(t[module])
        found = parse_points(line)
        return line[:found.start()] + phrase + line[found.end():] if found else f"{line} {phrase}"

    return _HEADER.sub(fix, text)


def _sections(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return str(numbers[0])
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]} to {numbers[-1]}"
    return ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def _course(root: Path, modules: tuple[str, ...]):  # -> grader.course.config.Course | None
    import tomllib

    from grader.course.config import CourseError, parse_course

    path = root / "course.example.toml"
    if not path.is_file():
        return None
    try:
        return parse_course(tomllib.loads(path.read_text(encoding="utf-8")), path, modules, root)
    except (CourseError, tomllib.TOMLDecodeError):
        return None  # (tests/kit/test_course.py reports a broken example)


def _course_table(text: str, root: Path, modules: tuple[str, ...]) -> str:
    """The README's table of course.example.toml's homeworks: each one's handout sections and points."""
    course = _course(root, modules)
    if course is None:
        return text

    def row(match: re.Match[str]) -> str:
        a = course.get(match.group(1))
        if a is None:
            return match.group(0)
        t = totals(a.modules, root, gpu_tests=a.gpu_tests)
        shown = f"{t.points} ({t.gpu} of them on the GPU)" if t.gpu else str(t.points)
        sections = _sections([modules.index(m) + 1 for m in a.modules if m in modules])
        start, line = match.start(), match.group(0)
        return line[:match.start(2) - start] + sections + line[match.end(2) - start:match.start(3) - start] + shown \
            + line[match.end(3) - start:]

    return _COURSE_ROW.sub(row, text)


def _default(spec: str, root: Path) -> str:
    """``MODULE.FUNCTION.PARAMETER``: that parameter's default in solutions/MODULE.py, as written there."""
    import ast

    module, _, rest = spec.partition(".")
    function, _, parameter = rest.rpartition(".")
    path = root / "solutions" / f"{module}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError) as exc:
        raise UnknownMark(f"default:{spec}: cannot read {path.name}: {exc}") from None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, value in pairs:
                if arg.arg == parameter:
                    return ast.unparse(value)
            raise UnknownMark(f"default:{spec}: {function}() has no parameter {parameter!r} with a default")
    raise UnknownMark(f"default:{spec}: solutions/{module}.py has no function {function!r}")


def _const(spec: str) -> str:
    """``grader.X.NAME``: a constant of the grader (int, float or str)."""
    import importlib

    module, _, name = spec.rpartition(".")
    if not module.startswith("grader."):
        raise UnknownMark(f"const:{spec}: only the grader's own constants (grader.PACKAGE.MODULE.NAME)")
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UnknownMark(f"const:{spec}: {exc}") from None
    if type(value) not in (int, float, str):
        raise UnknownMark(f"const:{spec}: {type(value).__name__}, not a number or a string")
    return f"{value:g}" if type(value) is float else str(value)


def value(name: str, old: str, root: Path, t: Totals, modules: tuple[str, ...]) -> str:
    """What the marker NAME stands for now (`old`: its value as written, for the form of a count)."""
    kind, _, spec = name.partition(":")
    if name == "modules":
        return count_word(len(modules), old)
    if name in ("points", "public", "hidden", "gpu"):
        return str(getattr(t, name))
    if kind == "points" and spec:
        course = _course(root, modules)
        a = course.get(spec) if course is not None else None
        if a is None:
            raise UnknownMark(f"points:{spec}: course.example.toml has no assignment {spec!r}")
        return str(totals(a.modules, root, gpu_tests=a.gpu_tests).points)
    if kind == "default" and spec:
        return _default(spec, root)
    if kind == "const" and spec:
        return _const(spec)
    raise UnknownMark(f"unknown marker <!--kit:{name}--> (the names: see grader.authoring.totals_docs)")


def _mutant_table(text: str, t: Totals, modules: tuple[str, ...]) -> str:
    def fix(match: re.Match[str]) -> str:
        rows, seen = [], set()
        for line in match.group(1).splitlines():
            cells = line.split("|")
            name = cells[1].strip().strip("`")
            if name in modules and len(cells) >= 4:
                cells[-3], cells[-2] = f" {t[name].mutants} ", f" {t[name].variants} "
                seen.add(name)
            rows.append("|".join(cells))
        columns = match.group(0).splitlines()[0].count("|") - 1
        for name in modules:
            if name not in seen:  # a new module: no breaking pass yet
                rows.append("| " + " | ".join([name] + ["—"] * (columns - 3)
                                              + [str(t[name].mutants), str(t[name].variants)]) + " |")
        head = match.group(0)[:match.start(1) - match.start(0)]
        return head + "".join(r + "\n" for r in rows)

    return _MUTANT_TABLE.sub(fix, text)


def render(text: str, rel: str, root: Path | None = None, t: Totals | None = None) -> str:
    """`text` (the doc `rel`, e.g. "README.md") with every marked value and structured place as the code gives it."""
    root = root or KIT_ROOT
    modules = _modules(root)
    t = t or totals(modules, root)
    text = MARK.sub(lambda m: f"<!--kit:{m['name']}-->{value(m['name'], m['value'], root, t, modules)}<!--/kit-->", text)
    if rel == "handout.md":
        text = _headers(text, t, modules)
    if rel == "README.md":
        text = _course_table(text, root, modules)
    if rel == "docs/CONTRIBUTING.md":
        text = _mutant_table(text, t, modules)
    return text


def unmarked(text: str, rel: str, modules: tuple[str, ...]) -> list[str]:
    """Numbers about the code stated outside a marker that can go stale: a "default N" (always), an
    "N modules" that is not the number of modules (unless its line is marked ``<!--measured-->``)."""
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if MEASURED in line:
            continue
        bare = MARK.sub("", line)
        for m in _DEFAULT.finditer(bare):
            problems.append(f"{rel}:{number}: {m.group(0)!r} is a number about the code: mark it "
                            "<!--kit:default:MODULE.FUNCTION.PARAMETER--> or <!--kit:const:grader.X.NAME-->")
        for m in _MODULE_COUNT.finditer(bare):
            if count_word(len(modules), m.group(1)).lower() != m.group(1).lower():
                problems.append(f"{rel}:{number}: {m.group(0)!r}, but the kit has {len(modules)} modules: mark it "
                                "<!--kit:modules-->, or mark the line <!--measured--> when it is a measurement")
    return problems


def _rendered(root: Path) -> list[tuple[str, Path, str, str]]:
    """(doc, path, its text, the text with the tests' totals) of every doc that exists."""
    t = totals(_modules(root), root)
    out = []
    for rel in DOC_FILES:
        path = root / rel
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            out.append((rel, path, text, render(text, rel, root, t)))
    return out


def _change(old: str, new: str) -> str:
    """"'53 (5 on the GPU)' should read '53 (5 of them on the GPU)'": the words that differ, one word of context."""
    a, b = old.split(" "), new.split(" ")
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo, hi_a, hi_b = max(head - 1, 0), len(a) - max(tail - 1, 0), len(b) - max(tail - 1, 0)
    return f"{' '.join(a[lo:hi_a]).strip()[:120]!r} should read {' '.join(b[lo:hi_b]).strip()[:120]!r}"


def stale_docs(root: Path | None = None) -> list[str]:
    """One line per doc whose generated values differ from the code's (the first difference shown),
    per number about the code outside a marker that can go stale, per unknown marker; [] when every
    doc is up to date."""
    root = root or KIT_ROOT
    problems = []
    try:
        rendered = _rendered(root)
    except UnknownMark as exc:
        return [f"{exc}"]
    modules = _modules(root)
    for rel, _, text, want in rendered:
        if want != text:
            number, old, new = next((i, a, b) for i, (a, b) in enumerate(zip(text.splitlines(), want.splitlines()),
                                                                          start=1) if a != b)
            problems.append(f"{rel}:{number}: {_change(plain(old), plain(new))} (a number that follows from the code): "
                            "run `grader stubs`")
        problems += unmarked(text, rel, modules)
    readme = root / "README.md"
    if readme.is_file() and "<!--kit:points-->" not in readme.read_text(encoding="utf-8"):
        problems.append("README.md: the kit's total points are gone (<!--kit:points-->): "
                        "grader.authoring.totals_docs keeps them there")
    return problems


def unmarked_problems(root: Path | None = None) -> list[str]:
    """`unmarked` of every doc: what `grader stubs` cannot fix, said after it wrote the rest."""
    root = root or KIT_ROOT
    modules = _modules(root)
    return [p for rel in DOC_FILES if (root / rel).is_file()
            for p in unmarked((root / rel).read_text(encoding="utf-8"), rel, modules)]


def write_docs(root: Path | None = None) -> list[str]:
    """Rewrite the totals in every doc that states them; the docs changed."""
    changed = []
    for rel, path, text, want in _rendered(root or KIT_ROOT):
        if want != text:
            path.write_text(want, encoding="utf-8")
            changed.append(rel)
    return changed
