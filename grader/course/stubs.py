"""The student stubs, generated from `solutions/` (`grader stubs`), and what a release ships besides.

The stubs are made by nbgrader's own `ClearSolutions` preprocessor (each module becomes a
one-cell notebook for the purpose), so `### BEGIN SOLUTION` / `### END SOLUTION` behave
exactly as nbgrader users expect.  Before that, the markers are checked here so that a
malformed one is reported with its file and line rather than as nbgrader's bare RuntimeError.

The release itself (`grader release`: these stubs, `RELEASE_PATHS`, the handout's benchmarks, a
README) is written by `grader.authoring.release`, one assignment's by `grader.authoring.course_release`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader import KIT_ROOT, MODULES

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

#: What the student release contains, relative to the kit root (directories are copied whole), plus
#: every benchmark the handout names (`handout_benchmarks`).  Those take `--target` (default: the
#: student's `assignment/`); the others (grade_throughput, optimizers_tolerances) need solutions/
#: or the mutants: instructor-only.
RELEASE_PATHS = ("grader", "tests/__init__.py", "tests/generators.py", "tests/probes", "tests/public", "handout.md",
                 "pyproject.toml", "CHANGELOG.md", "bench/flops_mfu.py", "bench/mixed_precision.py",
                 "bench/data_get_batch.py")


def handout_benchmarks(text: str | None = None) -> list[str]:
    """Every `bench/<name>.py` the handout (or `text`, an assignment's handout) tells students to run:
    they ship with it (each takes `--target`, whose default in the release is the student's `assignment/`)."""
    import re

    handout = KIT_ROOT / "handout.md"
    if text is None:
        text = handout.read_text() if handout.exists() else ""
    return sorted(set(re.findall(r"bench/[A-Za-z0-9_]+\.py", text)))


class MarkerError(Exception):
    """A malformed solution marker; the message names the file and line."""


def check_markers(source: str, filename: str) -> int:
    """Check BEGIN/END pairs: each BEGIN closed, none nested, none stray, each inside a body.

    Returns the number of solution regions.
    """
    open_line = 0
    regions = 0
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        is_begin, is_end = "BEGIN SOLUTION" in line, "END SOLUTION" in line
        if (is_begin or is_end) and text not in (BEGIN, END):
            raise MarkerError(f"{filename}:{number}: a marker must be a line of its own, exactly {BEGIN!r} or {END!r}")
        if is_begin:
            if open_line:
                raise MarkerError(f"{filename}:{number}: nested {BEGIN!r} (the region opened at line {open_line} is not closed)")
            if line == text:
                raise MarkerError(f"{filename}:{number}: {BEGIN!r} at top level; solution regions go inside function bodies")
            open_line = number
        elif is_end:
            if not open_line:
                raise MarkerError(f"{filename}:{number}: {END!r} without a matching {BEGIN!r}")
            open_line = 0
            regions += 1
    if open_line:
        raise MarkerError(f"{filename}:{open_line}: {BEGIN!r} is never closed")
    return regions


def make_stub(source: str, filename: str = "<source>") -> str:
    """Clear every solution region with nbgrader's ClearSolutions preprocessor."""
    import nbformat
    from nbgrader.preprocessors import ClearSolutions

    check_markers(source, filename)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"language": "python", "name": "python3", "display_name": "Python 3"}
    nb.cells.append(nbformat.v4.new_code_cell(source))
    clear = ClearSolutions(code_stub={"python": CODE_STUB}, enforce_metadata=False)
    nb, _ = clear.preprocess(nb, {})
    return nb.cells[0].source


@dataclass
class GeneratedFile:
    name: str
    text: str


def generate_assignment(solutions: Path | None = None) -> list[GeneratedFile]:
    """The student files, in memory: `__init__.py` as is, each module stubbed."""
    solutions = solutions or KIT_ROOT / "solutions"
    files = [GeneratedFile("__init__.py", (solutions / "__init__.py").read_text())]
    for module in MODULES:
        path = solutions / f"{module}.py"
        if path.exists():
            files.append(GeneratedFile(path.name, make_stub(path.read_text(), f"solutions/{path.name}")))
    return files


def write_assignment(out: Path, solutions: Path | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in generate_assignment(solutions):
        (out / f.name).write_text(f.text)
        written.append(out / f.name)
    return written


def check_assignment(folder: Path | None = None, solutions: Path | None = None) -> list[str]:
    """Problems that make `assignment/` differ from what `grader release` would generate."""
    folder = folder or KIT_ROOT / "assignment"
    problems = []
    expected = {f.name: f.text for f in generate_assignment(solutions)}
    for name, text in expected.items():
        path = folder / name
        if not path.exists():
            problems.append(f"assignment/{name} is missing")
        elif path.read_text() != text:
            problems.append(f"assignment/{name} is out of date with solutions/{name}")
    for path in sorted(folder.glob("*.py")):
        if path.name not in expected:
            problems.append(f"assignment/{path.name} has no counterpart in solutions/")
    return problems


#: Never shipped, wherever it appears.
EXCLUDED_NAMES = {"__pycache__", ".pytest_cache", ".hypothesis"}


def solution_blocks(solutions: Path | None = None) -> list[tuple[str, str]]:
    """(file, text) of every solution region with at least two non-blank lines."""
    solutions = solutions or KIT_ROOT / "solutions"
    blocks = []
    for path in sorted(solutions.glob("*.py")):
        lines, inside, current = path.read_text().splitlines(), False, []
        for line in lines:
            if line.strip() == BEGIN:
                inside, current = True, []
            elif line.strip() == END:
                inside = False
                body = [ln.strip() for ln in current if ln.strip() and not ln.strip().startswith("#")]
                if len(body) >= 2:
                    blocks.append((path.name, "\n".join(body)))
            elif inside:
                current.append(line)
    return blocks


def audit_release(out: Path) -> list[str]:
    """Anything in `out` that must not ship: instructor folders, markers, solution code."""
    problems = []
    for forbidden in ("solutions", "tests/hidden", "tests/mutants", "tests/variants", "tests/kit"):
        if (out / forbidden).exists():
            problems.append(f"{forbidden}/ is in the release")
    texts = {p: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".toml", ".txt", ".yml", ".yaml", ".json", ".ipynb"}}
    for path, text in texts.items():
        if BEGIN in text and path.suffix == ".py" and path.parent.name == "assignment":
            problems.append(f"{path.relative_to(out)} still holds a solution marker")
    for name, block in solution_blocks():
        for path, text in texts.items():
            squashed = "\n".join(ln.strip() for ln in text.splitlines() if ln.strip())
            if block in squashed:
                problems.append(f"{path.relative_to(out)} contains the solution of solutions/{name}")
    return problems
