"""`grader similarity`: which submissions share code, and which are close to the reference solutions.

Only the code inside the graded functions counts: every function or method that holds a
solution region in `solutions/` is taken from the submission (its body without the
docstring), because the stubs' signatures, docstrings and imports are the same for everybody.
The reference solutions join as one more "submission" (``<reference solutions>``): a
submission close to them points at leaked solutions.

The comparison is copydetect's (winnowing fingerprints over normalised tokens, as MOSS): for
each pair, the share of each side's tokens found in the other.  The page lists the pairs at
or above the threshold, highest first, with the matching regions highlighted side by side.
Submissions are staged exactly as `grader grade` stages them (`grader.batch.stage`), never run.
"""

from __future__ import annotations

import ast
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import KIT_ROOT, MODULES
from grader.batch.discover import discover
from grader.batch.stage import stage
from grader.batch.unpack import RejectedSubmission

REFERENCE = "<reference solutions>"
BEGIN = "### BEGIN SOLUTION"


class SimilarityError(Exception):
    """Bad input: no submissions found, a path that is not a submission."""


def graded_functions(solutions: Path = KIT_ROOT / "solutions") -> dict[str, list[str]]:
    """module -> qualified names of the functions/methods that hold a solution region."""
    out: dict[str, list[str]] = {}
    for module in MODULES:
        path = solutions / f"{module}.py"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        names = []
        for node, qual in _functions(ast.parse(text)):
            body = "\n".join(lines[node.lineno - 1:node.end_lineno])
            if BEGIN in body:
                names.append(qual)
        out[module] = names
    return out


def _functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, node.name
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield sub, f"{node.name}.{sub.name}"


def extract(folder: Path, wanted: dict[str, list[str]]) -> str:
    """The bodies (docstrings removed) of the graded functions found in `folder`, one after another."""
    parts = []
    for module, names in wanted.items():
        path = folder / f"{module}.py"
        if not path.is_file():
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except SyntaxError:
            continue
        found = {qual: node for node, qual in _functions(tree)}
        for qual in names:
            node = found.get(qual)
            if node is None:
                continue
            body = list(node.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            code = "\n".join(ast.unparse(stmt) for stmt in body)
            if code.strip() in ("raise NotImplementedError()", "pass", ""):
                continue  # an untouched stub is everybody's boilerplate
            parts.append(f"# {module}.{qual}\n{code}\n")
    return "\n".join(parts)


@dataclass
class Pair:
    a: str
    b: str
    share_a: float  # of a's tokens, the share found in b
    share_b: float
    tokens: int
    regions: tuple[list[tuple[int, int]], list[tuple[int, int]]] = field(default_factory=lambda: ([], []))

    @property
    def score(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass
class Similarity:
    codes: dict[str, str]
    pairs: list[Pair]
    skipped: dict[str, str]
    threshold: float


def analyse(paths: list[Path], threshold: float = 0.5, k: int = 25, window: int = 1,
            include_reference: bool = True) -> Similarity:
    import copydetect

    found = discover(paths)
    if found.errors:
        raise SimilarityError("; ".join(found.errors))
    codes: dict[str, str] = {}
    skipped: dict[str, str] = {f"{s.student}": why for s, why in found.refused}
    wanted = graded_functions()
    with tempfile.TemporaryDirectory(prefix="kit-similarity-") as tmp:
        for i, source in enumerate(found.sources):
            try:
                staged = stage(source, Path(tmp) / f"s{i}")
            except RejectedSubmission as exc:
                skipped[source.student] = f"rejected: {exc}"
                continue
            code = extract(staged.folder, wanted)
            if code.strip():
                codes[source.student] = code
            else:
                skipped[source.student] = "no graded function has code of its own (stubs only)"
    if include_reference and (KIT_ROOT / "solutions").is_dir():
        codes[REFERENCE] = extract(KIT_ROOT / "solutions", wanted)
    if len(codes) < 2:
        raise SimilarityError(f"{len(codes)} submission(s) with code of their own: nothing to compare")
    prints = {name: copydetect.CodeFingerprint(f"{name}.py", k, window, fp=io.StringIO(code), language="python")
              for name, code in codes.items()}
    names = sorted(codes)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            tokens, (share_a, share_b), (slices_a, slices_b) = copydetect.compare_files(prints[a], prints[b])
            pair = Pair(a, b, float(share_a), float(share_b), int(tokens),
                        ([(int(s), int(e)) for s, e in zip(*slices_a)], [(int(s), int(e)) for s, e in zip(*slices_b)]))
            pairs.append(pair)
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return Similarity(codes, pairs, skipped, threshold)


def _highlight(code: str, regions: list[tuple[int, int]]) -> str:
    from markupsafe import escape

    out, last = [], 0
    for start, end in sorted(regions):
        if start < last:
            start = last
        out.append(str(escape(code[last:start])))
        out.append(f"<mark>{escape(code[start:end])}</mark>")
        last = max(last, end)
    out.append(str(escape(code[last:])))
    return "".join(out)


def render(result: Similarity, top: int = 20) -> str:
    from grader.reports.page import environment

    env = environment()
    flagged = [p for p in result.pairs if p.score >= result.threshold][:top]
    shown = [{"pair": p, "left": _highlight(result.codes[p.a], p.regions[0]),
              "right": _highlight(result.codes[p.b], p.regions[1])} for p in flagged]
    return env.get_template("similarity.html.j2").render(result=result, shown=shown, reference=REFERENCE,
                                                          all_pairs=result.pairs[: max(top, 50)])


def write_similarity(paths: list[Path], out: Path, threshold: float = 0.5, top: int = 20) -> Similarity:
    result = analyse(paths, threshold)
    from grader.reports.page import write_page

    write_page(out, render(result, top))
    return result
