"""`grader new-module NAME`: the files of a new module, in the kit's style, that cannot pass as done.

It writes, for module NAME with one function FN (default: NAME):

* ``solutions/NAME.py``: FN with a docstring to write and a ``### BEGIN/END SOLUTION`` region that
  raises NotImplementedError (so the reference fails its own tests until it is written), and its
  stub ``assignment/NAME.py`` (`grader.course.stubs`);
* ``tests/probes/NAME.py``: a probe that builds the input from plain data and returns FN's result;
* ``tests/public/test_NAME.py``: the public cases as constants, a ``check_FN`` helper and one
  graded test (1 point); ``tests/hidden/test_NAME.py``: one hidden test (1 point) on other cases
  through the same helper (its constants live in the public file when both use them);
* ``tests/mutants/NAME.py``: an ``edit(...)`` example, commented; ``tests/variants/NAME.py``: a
  ``@variant`` example, commented;
* a numbered section at the end of handout.md (module discovery, `grader.course.config`, then puts NAME
  in every command), and the totals of every doc (`grader.authoring.totals_docs`).

Each placeholder is marked ``TODO(new-module)``: `grader validate` lists the files that still hold
one, and fails on the fresh scaffold (the reference raises, the expected values are not written,
there are fewer than `grader.testing.totals.min_mutants` mutants), saying what to do next.  A name that
is taken, not a lowercase identifier, a keyword, or a module Python or the kit already imports
is refused (`ScaffoldError`; the command exits 2, nothing written).
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

from grader import KIT_ROOT

TODO = "TODO(new-module)"
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_TAKEN = {"torch", "numpy", "einops", "jaxtyping", "beartype", "grader", "tests", "solutions", "assignment",
          "pytest", "hypothesis", "conftest", "setup"}


class ScaffoldError(ValueError):
    """A module name that cannot be used; the message says why."""


def files(name: str) -> list[str]:
    """The files `new_module` writes for `name` (relative to the kit root), the handout aside."""
    return [f"solutions/{name}.py", f"assignment/{name}.py", f"tests/probes/{name}.py",
            f"tests/public/test_{name}.py", f"tests/hidden/test_{name}.py", f"tests/mutants/{name}.py",
            f"tests/variants/{name}.py"]


def check_name(name: str, function: str, root: Path) -> None:
    from grader.course.modules import discover_modules

    for what, value in (("module", name), ("function", function)):
        if not _NAME.fullmatch(value) or keyword.iskeyword(value):
            raise ScaffoldError(f"{what} name {value!r}: use a lowercase Python identifier (letters, digits and _, "
                                "starting with a letter), not a keyword, e.g. `softmax` or `layer_norm`")
    if name.startswith("test") or name in _TAKEN or name in sys.stdlib_module_names:
        raise ScaffoldError(f"module name {name!r} is taken by a module Python, torch or the kit imports "
                            "(a student's file of that name would shadow it): choose another")
    if name in discover_modules(root):
        raise ScaffoldError(f"module {name!r} exists already (solutions/{name}.py)")
    there = [f for f in files(name) if (root / f).exists()]
    if there:
        raise ScaffoldError(f"module {name!r}: {', '.join(there)} exist already: remove them or choose another name")
    from grader.course.modules import handout_order

    if name in handout_order(root):
        raise ScaffoldError(f"module {name!r}: handout.md has a section for it already")


def _solution(name: str, fn: str) -> str:
    return f'''"""{TODO}: what `{name}` is about, in two or three sentences (students read this first).

Conventions used throughout (dtypes, shapes, units), as the other modules' docstrings do.
"""

from __future__ import annotations

import torch


def {fn}(x: torch.Tensor) -> torch.Tensor:
    """{TODO}: what {fn} returns, as a formula, for `x` of any shape.

    The docstring **is** the task (it ships in the stub): shapes, dtypes, edge cases (an empty
    tensor, a 0-d one) and the errors to raise, with a worked example.

    Args:
        x: a floating-point tensor.

    Returns:
        A tensor of x's shape and dtype.
    """
    ### BEGIN SOLUTION
    raise NotImplementedError("{TODO}: the reference solution of {fn}")
    ### END SOLUTION
'''


def _probes(name: str, fn: str) -> str:
    return f'''"""Probes for the `{name}` module: run next to the code under test and return what it produced,
never whether it is right (docs/CONTRIBUTING.md, Probes)."""

from __future__ import annotations

import torch


def {fn}(impl, values):
    """{fn} of a float32 tensor built here from `values` (plain data in, a tensor out)."""
    out = impl.{name}.{fn}(torch.tensor(values, dtype=torch.float32))
    return out.detach().clone() if isinstance(out, torch.Tensor) else out
'''


def _public(name: str, fn: str) -> str:
    return f'''"""Public tests for `{name}`: expected values come from torch itself or from closed-form facts,
computed here from the inputs, never from the code under test (docs/CONTRIBUTING.md, Graded tests)."""

from __future__ import annotations

import pytest
import torch

from grader.testing.expect import assert_tensor

#: The public cases.  A hidden test that needs them imports them from here (one place to change).
CASES = [[1.0, 2.0, 3.0], [-1.5, 0.0, 4.0, 0.25]]
#: The tolerance of every comparison of {fn}'s values (say why: the formulations the handout allows).
RTOL = 1e-6


def expected_{fn}(x: torch.Tensor) -> torch.Tensor:
    """{fn}(x) as the handout defines it, from torch itself or a closed form."""
    raise NotImplementedError("{TODO}: the expected value of {fn}(x), computed here")


def check_{fn}(student, cases) -> None:
    """{fn} of each case (a list of floats) against `expected_{fn}`; the probe runs first, so a stub
    is reported as not attempted."""
    for values in cases:
        got = student.probe("{name}.{fn}", values=values)
        assert_tensor(got, expected_{fn}(torch.tensor(values, dtype=torch.float32)), f"{fn}({{values}})", rtol=RTOL)


@pytest.mark.points(1)
def test_{fn}(student):
    """{fn} of small float32 tensors ({TODO}: say what is checked: grader check shows this line)"""
    check_{fn}(student, CASES)
'''


def _hidden(name: str, fn: str) -> str:
    return f'''"""Hidden tests for `{name}`: other inputs than the public ones; never shipped."""

from __future__ import annotations

import pytest

from tests.public.test_{name} import check_{fn}

#: Cases only the hidden tests use ({TODO}: the edge cases the docstring names).
HIDDEN_CASES = [[0.5], [2.0, -2.0, 7.25, 1e-3, 100.0]]


@pytest.mark.points(1)
def test_{fn}_more_cases(student):
    """{fn} of other lengths and values ({TODO}: say what is checked)"""
    check_{fn}(student, HIDDEN_CASES)
'''


def _mutants(name: str, fn: str) -> str:
    return f'''"""Mutants of solutions/{name}.py: each is one bug a student plausibly writes (docs/CONTRIBUTING.md,
Mutants).  `grader validate` needs at least 15 and proves each one is caught; `grader validate
--mutant {name}:ID` says which tests catch one.

Write each as an edit of the reference: `old` is text that occurs exactly once in the solution
region of `within`, `new` the student's version of it (``edits=[(old, new), ...]`` for a bug of
several changes).  It follows the reference as it changes, and validate names it when `old` is gone.
"""

from grader.authoring.mutants import edit  # noqa: F401

# edit("{fn}_off_by_one", within="{fn}", why="what the student got wrong, in the student's terms",
#      old="return x.sum(dim=-1)", new="return x.sum(dim=-1) + 1")
'''


def _variants(name: str, fn: str) -> str:
    return f'''"""Correct variants of solutions/{name}.py: other formulations the handout allows, which every graded
test must accept (docs/CONTRIBUTING.md, Correct variants).  They keep the tolerances honest."""

from grader.authoring.mutants import variant  # noqa: F401

# @variant(replaces="{fn}", why="the same result by another route")
# def {fn}_another_way(x):
#     ...
'''


def _section(number: int, name: str, fn: str) -> str:
    return f'''
## {number}. `{name}`: {TODO} a title

{TODO}: the task in the handout's words: implement `{fn}` in `assignment/{name}.py` (the
docstring is its full specification), the idea behind it, a worked example, and what the tests
check (the header's points are written by `grader stubs`).
'''


def new_module(name: str, function: str | None = None, root: Path | None = None) -> list[str]:
    """Scaffold module `name` (one function, `function` or `name`) under `root`; the paths written
    (relative), handout.md and the docs whose totals changed last.  ScaffoldError when refused."""
    from grader.course.modules import handout_order
    from grader.authoring.totals_docs import write_docs

    root = root or KIT_ROOT
    fn = function or name
    check_name(name, fn, root)
    texts = {f"solutions/{name}.py": _solution(name, fn), f"tests/probes/{name}.py": _probes(name, fn),
             f"tests/public/test_{name}.py": _public(name, fn), f"tests/hidden/test_{name}.py": _hidden(name, fn),
             f"tests/mutants/{name}.py": _mutants(name, fn), f"tests/variants/{name}.py": _variants(name, fn)}
    for rel, text in texts.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    handout = root / "handout.md"
    text = handout.read_text(encoding="utf-8") if handout.exists() else "# Handout\n"
    handout.write_text(text.rstrip("\n") + "\n" + _section(len(handout_order(root)) + 1, name, fn), encoding="utf-8")
    written = list(texts)
    try:  # the stub, as `grader stubs` makes it (nbgrader, a dev dependency)
        from grader.course.stubs import make_stub

        stub = make_stub(texts[f"solutions/{name}.py"], f"solutions/{name}.py")
        (root / "assignment").mkdir(exist_ok=True)
        (root / "assignment" / f"{name}.py").write_text(stub, encoding="utf-8")
        written.insert(1, f"assignment/{name}.py")
    except ModuleNotFoundError:
        pass
    return written + ["handout.md"] + [d for d in write_docs(root) if d != "handout.md"]


def unfinished(module: str, root: Path | None = None) -> list[str]:
    """Where the module's files (and its handout section) still hold a scaffold placeholder."""
    root = root or KIT_ROOT
    out = []
    for rel in files(module):
        path = root / rel
        if rel.startswith("assignment/") or not path.is_file():
            continue
        lines = [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if TODO in line]
        if lines:
            more = len(lines) - 1
            out.append(f"{rel}:{lines[0]}" + (f" (and {more} more line{'s' if more > 1 else ''})" if more else ""))
    handout = root / "handout.md"
    if handout.is_file():
        text = handout.read_text(encoding="utf-8")
        start = re.search(rf"^## \d+\. `{re.escape(module)}`", text, re.MULTILINE)
        if start:
            end = re.search(r"^## ", text[start.end():], re.MULTILINE)
            if TODO in text[start.start():start.end() + (end.start() if end else len(text))]:
                out.append(f"handout.md (the section of `{module}`)")
    return out
