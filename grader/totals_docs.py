"""The totals the docs state, written from the tests (`grader.totals`), never by hand.

`grader stubs` (which a TA runs after changing solutions/ or tests) rewrites them; `grader release
--check` and `tests/kit/test_totals.py` fail naming a file whose numbers differ from the tests'.
What is generated, in README.md, handout.md and docs/*.md:

* the handout's section headers: ``## 1. `memory`: ... (12 public points, 1 of them on the GPU;
  hidden tests add 5)`` (a header without its points gets them);
* every "N modules" (the number of modules, in words or digits as written), and "at least N per
  module" (`grader.totals.MIN_MUTANTS`);
* the README's opening totals "(twelve modules, 181 points: 134 public, 47 hidden, 19 of them on
  the GPU" and "19 of the 181 points are GPU tests";
* the README's table of course.example.toml's homeworks (handout sections and points of each) and
  "its points in the table (hw3: 29)";
* docs/CONTRIBUTING.md's mutant table: the mutants and correct variants each module has now (a
  module without a row gets one).

CHANGELOG.md is history: its entries keep the numbers of their release.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from grader import KIT_ROOT
from grader.totals import MIN_MUTANTS, Totals, count_word, parse_points, points_phrase, totals

DOC_FILES = ("README.md", "handout.md", "docs/CONTRIBUTING.md", "docs/STUDENT_README.md", "docs/ARCHITECTURE.md")
_WORD = "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
        "sixteen|seventeen|eighteen|nineteen|twenty"
_MODULE_COUNT = re.compile(rf"\b({_WORD}|\d+)([ -](?:graded |assignment )?modules\b)(?!')", re.IGNORECASE)
_AT_LEAST = re.compile(rf"\b(at least\s+)({_WORD}|\d+)(\s+per module)\b", re.IGNORECASE)
_HEADER = re.compile(r"^(## \d+\. `([a-z_0-9]+)`[^\n]*)$", re.MULTILINE)
_OPENING = re.compile(rf"\(({_WORD}|\d+) modules, \d+ points: \d+ public, \d+ hidden, \d+ of them on the GPU",
                      re.IGNORECASE)
_GPU_SHARE = re.compile(r"\b\d+ of the \d+ points are GPU tests")
_COURSE_ROW = re.compile(r"^\| `([\w-]+)`, \*[^*|]*\* \| ([^|]+?) \| ([^|]+?) \|", re.MULTILINE)
_COURSE_TOTAL = re.compile(r"its points in the table \(([\w-]+): \d+\)")
_MUTANT_TABLE = re.compile(r"^\|[^\n]*mutants now[^\n]*\|\n\|[-| ]+\|\n((?:\|[^\n]*\|\n)*)", re.MULTILINE)


def _modules(root: Path) -> tuple[str, ...]:
    from grader.course import discover_modules

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


def _course_example(text: str, root: Path, modules: tuple[str, ...]) -> str:
    """The README's table of course.example.toml's homeworks, and "(hw3: 29)"."""
    import tomllib

    from grader.course import CourseError, parse_course

    path = root / "course.example.toml"
    if not path.is_file():
        return text
    try:
        course = parse_course(tomllib.loads(path.read_text(encoding="utf-8")), path, modules, root)
    except (CourseError, tomllib.TOMLDecodeError):
        return text  # (tests/kit/test_course.py reports a broken example)

    def points(name: str) -> tuple[int, int] | None:
        a = course.get(name)
        if a is None:
            return None
        t = totals(a.modules, root, gpu_tests=a.gpu_tests)
        return t.points, t.gpu

    def row(match: re.Match[str]) -> str:
        a = course.get(match.group(1))
        if a is None:
            return match.group(0)
        total, gpu = points(a.name)
        shown = f"{total} ({gpu} of them on the GPU)" if gpu else str(total)
        sections = _sections([modules.index(m) + 1 for m in a.modules if m in modules])
        start, end = match.span()
        line = match.group(0)
        line = line[:match.start(2) - start] + sections + line[match.end(2) - start:match.start(3) - start] + shown \
            + line[match.end(3) - start:]
        return line

    def total(match: re.Match[str]) -> str:
        got = points(match.group(1))
        return match.group(0) if got is None else f"its points in the table ({match.group(1)}: {got[0]})"

    return _COURSE_TOTAL.sub(total, _COURSE_ROW.sub(row, text))


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
    """`text` (the doc `rel`, e.g. "README.md") with every generated total as the tests give it."""
    root = root or KIT_ROOT
    modules = _modules(root)
    t = t or totals(modules, root)
    rules: list[Callable[[str], str]] = [
        lambda s: _MODULE_COUNT.sub(lambda m: count_word(len(modules), m.group(1)) + m.group(2), s),
        lambda s: _AT_LEAST.sub(lambda m: m.group(1) + count_word(MIN_MUTANTS, m.group(2)) + m.group(3), s),
    ]
    if rel == "handout.md":
        rules.append(lambda s: _headers(s, t, modules))
    if rel == "README.md":
        rules += [
            lambda s: _OPENING.sub(lambda m: f"({count_word(len(modules), m.group(1))} modules, {t.points} points: "
                                             f"{t.public} public, {t.hidden} hidden, {t.gpu} of them on the GPU", s),
            lambda s: _GPU_SHARE.sub(f"{t.gpu} of the {t.points} points are GPU tests", s),
            lambda s: _course_example(s, root, modules),
        ]
    if rel == "docs/CONTRIBUTING.md":
        rules.append(lambda s: _mutant_table(s, t, modules))
    for rule in rules:
        text = rule(text)
    return text


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
    """One line per doc whose totals differ from the tests' (the first difference shown), or that
    lost a phrase the totals are kept in; [] when every doc is up to date."""
    root = root or KIT_ROOT
    problems = []
    for rel, _, text, want in _rendered(root):
        if want != text:
            number, old, new = next((i, a, b) for i, (a, b) in enumerate(zip(text.splitlines(), want.splitlines()),
                                                                          start=1) if a != b)
            problems.append(f"{rel}:{number}: {_change(old, new)} (a number that follows from the tests, the mutants "
                            "or the modules): run `grader stubs`")
    readme = root / "README.md"
    if readme.is_file() and not _OPENING.search(readme.read_text(encoding="utf-8")):
        problems.append("README.md: the opening totals '(N modules, P points: P public, H hidden, G of them on the GPU'"
                        " are gone: grader.totals_docs keeps them there")
    return problems


def write_docs(root: Path | None = None) -> list[str]:
    """Rewrite the totals in every doc that states them; the docs changed."""
    changed = []
    for rel, path, text, want in _rendered(root or KIT_ROOT):
        if want != text:
            path.write_text(want, encoding="utf-8")
            changed.append(rel)
    return changed
