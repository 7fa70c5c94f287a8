"""`grader similarity`: which submissions share code, and which are close to the reference solutions.

The code of every file that can run is compared: the graded modules and every submission module
they import, transitively (`grader.rules.scope.closure`), each def's body and each statement.  It is
listed graded function by graded function first (for every function or method that holds a
solution region in `solutions/`, the code its rule covers, `grader.rules.static.build_scope`: the
function, every submission def it reaches by name, in any module, and the module-level code it
runs), then whatever else those files hold, so neither renaming a graded function and delegating
to it nor reaching the copied code through a lookup by a computed name (``getattr(_impl, "_" +
name)``) hides anything.  A submission whose graded functions reach code through such a lookup
(the rules' *breaches*, `grader.rules.breaches`, less those the reference solutions' own functions have)
is also *flagged for a look*: compared as usual, and listed with the lookups at the top of the page.
What every submission shares is left out: docstrings, signatures, and any statement or function
body that is exactly as the stubs in `assignment/` have it (an untouched stub, a helper the
release provides).  The reference solutions join as one more "submission"
(``<reference solutions>``): a submission close to them points at leaked solutions.

The comparison is copydetect's (winnowing fingerprints over normalised tokens, as MOSS): for
each pair, the share of each side's tokens found in the other.  The page lists the pairs at
or above the threshold, those with the reference solutions first, then highest first, with the
matching regions highlighted side by side.
Submissions are staged exactly as `grader grade` stages them (`grader.intake.stage`, with its byte
caps and header bounds), read within the static checks' budget, never run; each one's staging and
reading run in a child under a CPU-time, address-space and wall-clock budget (`grader.testing.contained`:
`READ_SECONDS`, `READ_MEMORY`), as `grader grade`'s workers are budgeted.  A submission that cannot
be read for any reason (a file that does not parse, an expression too deep to print back, code
over `MAX_CODE_CHARS`, a budget spent) is *flagged*: listed at the top of the page with the
reason, not compared, and the report is written for everyone else.
"""

from __future__ import annotations

import ast
import io
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import KIT_ROOT, MODULES
from grader.intake.discover import Source, discover
from grader.intake.stage import stage
from grader.intake.unpack import RejectedSubmission
from grader.testing.contained import contained
from grader.rules.scope import closure
from grader.rules.static import SourceSet, build_scope
from grader.untrusted import shown

REFERENCE = "<reference solutions>"
BEGIN = "### BEGIN SOLUTION"
MAX_CODE_CHARS = 256 * 1024  # of one submission's extracted code (a copy of the reference is ~60,000)
#: One submission's staging and reading, in a child (`grader.testing.contained`): CPU seconds (and wall
#: seconds) and bytes of address space beyond the grader's.  An honest submission takes well under
#: a second and a few MiB; 70 KB of aliasing code held the alias analysis for 104 s of CPU, and
#: 150 MiB of pax keywords held 4 GB, before these.
READ_SECONDS, READ_MEMORY = 60.0, 1 << 30
#: Lookups listed per flagged submission.
MAX_LOOKUPS = 10
_AT = re.compile(r" \([^()]*:\d+\)$")  # a breach's place: "getattr (memory.py:15)"


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


def _body(node: ast.AST) -> list[ast.stmt]:
    body = list(getattr(node, "body", []))
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _is_docstring(stmt: ast.AST) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _code(stmts: list[ast.stmt]) -> str:
    return "\n".join(ast.unparse(stmt) for stmt in stmts)


def boilerplate(stubs: Path = KIT_ROOT / "assignment") -> set[str]:
    """What every submission has: each statement and each def's body (docstring removed) of the
    stub modules, as `ast.unparse` prints it."""
    out = {"", "pass", "raise NotImplementedError()", "raise NotImplementedError"}
    for module in MODULES:
        path = stubs / f"{module}.py"
        if path.is_file():
            for n in ast.walk(ast.parse(path.read_bytes())):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.add(_code(_body(n)))
                elif isinstance(n, ast.stmt) and not isinstance(n, ast.ClassDef):
                    out.add(ast.unparse(n))
    return out


@dataclass
class Extracted:
    code: str  # what is compared
    lookups: list[str]  # the breaches the graded functions' scopes hold ("getattr (memory.py:15)")


def extract(folder: Path, wanted: dict[str, list[str]], boiler: set[str] | None = None) -> Extracted:
    """The code of every file in `folder` that can run (the graded modules and the submission modules
    they import, transitively), without what the stubs have (`boilerplate`): each def's body and each
    statement once; first the graded functions in handout order, each followed by what its rule covers
    (`build_scope`, by file and line), then each file's remaining code.  With the breaches those scopes
    hold.  Raises whatever reading it raises (the caller flags the submission)."""
    boiler = boilerplate() if boiler is None else boiler
    sources = SourceSet(folder)
    done: set[int] = set()
    parts = []
    lookups: set[str] = set()
    present = [module for module in wanted if module in sources.names]
    for module in present:
        for qual in wanted[module]:
            try:
                scope = build_scope(sources, module, qual)
            except LookupError:  # the function is not defined: nothing of it to compare
                continue
            lookups.update(scope.breaches)
            target, rest = scope.nodes[0], scope.nodes[1:]
            pieces = _pieces(target, done, boiler)
            for node in sorted(rest, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
                pieces += _pieces(node, done, boiler)
            if pieces:
                parts.append(f"# {module}.{qual}\n" + "\n".join(pieces) + "\n")
    for file in closure(sources, present):  # the rest of every file that can run
        pieces = [piece for stmt in sources.tree(file).body for piece in _pieces(stmt, done, boiler)]
        if pieces:
            parts.append(f"# {file}.py\n" + "\n".join(pieces) + "\n")
    return Extracted("\n".join(parts), sorted(lookups))


def _pieces(node: ast.AST, done: set[int], boiler: set[str]) -> list[str]:
    """The code of one node of a scope not shown yet: a def's body, a class's own statements and
    methods, a module-level statement; nothing the stubs have."""
    if id(node) in done or not isinstance(node, ast.stmt):
        return []  # (a decorator, default or annotation is an expression: its statement counts)
    done.add(id(node))
    if _is_docstring(node):
        return []
    if isinstance(node, ast.ClassDef):
        return [piece for stmt in _body(node) for piece in _pieces(stmt, done, boiler)]
    code = _code(_body(node)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else ast.unparse(node)
    return [] if code.strip() in boiler else [code]


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
    skipped: dict[str, str]  # nothing to compare: rejected, stubs only
    threshold: float
    flagged: dict[str, str] = field(default_factory=dict)  # could not be read (why): look at these by hand
    lookups: dict[str, list[str]] = field(default_factory=dict)  # compared, but reach code by a lookup: look too


def analyse(paths: list[Path], threshold: float = 0.5, k: int = 25, window: int = 1,
            include_reference: bool = True) -> Similarity:
    import copydetect

    found = discover(paths)
    if found.errors:
        raise SimilarityError("; ".join(found.errors))
    codes: dict[str, str] = {}
    skipped: dict[str, str] = {f"{s.student}": why for s, why in found.refused}
    flagged: dict[str, str] = {}
    lookups: dict[str, list[str]] = {}
    wanted = graded_functions()
    boiler = boilerplate()
    reference = None
    if include_reference and (KIT_ROOT / "solutions").is_dir():
        reference = extract(KIT_ROOT / "solutions", wanted, boiler)
        codes[REFERENCE] = reference.code
    expected = {_AT.sub("", b) for b in reference.lookups} if reference else set()  # (torch._scaled_mm in fp8)
    with tempfile.TemporaryDirectory(prefix="kit-similarity-") as tmp:
        for i, source in enumerate(found.sources):
            got = contained(_read, source, Path(tmp) / f"s{i}", wanted, boiler, k, window,
                            memory=READ_MEMORY, seconds=READ_SECONDS)
            reply = got.value if isinstance(got.value, dict) else {}
            if got.error is not None or not reply:  # a budget spent, or anything else the child said
                flagged[source.student] = shown(f"reading it (in a child with {READ_SECONDS:g} s and "
                                                f"{READ_MEMORY / 2**20:g} MiB more): {got.error or 'no result'}")
            elif "rejected" in reply:
                skipped[source.student] = f"rejected: {reply['rejected']}"
            elif "flagged" in reply:
                flagged[source.student] = str(reply["flagged"])
            elif not reply.get("code"):
                skipped[source.student] = "no graded function has code of its own (stubs only)"
            else:
                codes[source.student] = "".join(reply["code"])
                found_lookups = [b for b in reply.get("lookups", []) if _AT.sub("", b) not in expected]
                if found_lookups:
                    lookups[source.student] = found_lookups[:MAX_LOOKUPS]
    if len(codes) < 2:
        raise SimilarityError(f"{len(codes)} submission(s) with code of their own: nothing to compare"
                              + (f" ({len(flagged)} flagged: {', '.join(shown(n, 40) for n in sorted(flagged)[:5])})"
                                 if flagged else ""))
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
    # leaked solutions first: pairs with the reference at or above the threshold, then everyone, highest first
    pairs.sort(key=lambda p: (not (REFERENCE in (p.a, p.b) and p.score >= threshold), -p.score, p.a, p.b))
    return Similarity(codes, pairs, skipped, threshold, flagged, lookups)


def _read(source: Source, dest: Path, wanted: dict[str, list[str]], boiler: set[str], k: int,
          window: int) -> dict[str, object]:
    """One submission staged into `dest` and read (`extract`), in the budgeted child: plain data
    back (`grader.testing.contained`): {"code": [pieces], "lookups": [...]}, {"rejected": why} or
    {"flagged": why}.  The code travels in pieces under the wire's cap on one string."""
    import copydetect

    try:
        staged = stage(source, dest)
    except RejectedSubmission as exc:
        return {"rejected": str(exc)}
    try:  # anything at all: this submission is flagged, the others are still compared
        got = extract(staged.folder, wanted, boiler)
        if len(got.code) > MAX_CODE_CHARS:
            raise ValueError(f"the code of the files that can run is {len(got.code):,} characters "
                             f"(the report compares at most {MAX_CODE_CHARS:,})")
        if got.code.strip():
            copydetect.CodeFingerprint("s.py", k, window, fp=io.StringIO(got.code), language="python")
    except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError, SyntaxError...
        return {"flagged": _why(exc)}
    if not got.code.strip():
        return {"code": []}
    return {"code": [got.code[i:i + 4000] for i in range(0, len(got.code), 4000)],
            "lookups": [shown(b) for b in got.lookups[:100]]}


def _why(exc: BaseException) -> str:
    """Why a submission could not be read, in plain words (the message is the grader's, or capped)."""
    if isinstance(exc, RecursionError):
        return "an expression nests too deeply to be read back (RecursionError)"
    if isinstance(exc, MemoryError):
        return "reading it ran out of memory (MemoryError)"
    if isinstance(exc, SyntaxError):
        return shown(exc.msg or str(exc))
    return shown(f"{type(exc).__name__}: {exc}")


def _segments(code: str, regions: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`code` cut into (text, matched) pieces; the template escapes the text (one escaping path)."""
    out, last = [], 0
    for start, end in sorted(regions):
        start = max(start, last)
        if start > last:
            out.append((code[last:start], False))
        if end > start:
            out.append((code[start:end], True))
        last = max(last, end)
    if last < len(code):
        out.append((code[last:], False))
    return out


def render(result: Similarity, top: int = 20) -> str:
    from grader.reports.page import environment

    env = environment()
    env.filters["shown"] = shown  # names and reasons: capped, control characters escaped (then autoescaped)
    above = [p for p in result.pairs if p.score >= result.threshold][:top]
    pairs = [{"pair": p, "left": _segments(result.codes[p.a], p.regions[0]),
              "right": _segments(result.codes[p.b], p.regions[1])} for p in above]
    return env.get_template("similarity.html.j2").render(result=result, shown=pairs, reference=REFERENCE,
                                                          all_pairs=result.pairs[: max(top, 50)])


def write_similarity(paths: list[Path], out: Path, threshold: float = 0.5, top: int = 20) -> Similarity:
    result = analyse(paths, threshold)
    from grader.reports.page import write_page

    write_page(out, render(result, top))
    return result
