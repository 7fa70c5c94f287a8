"""The rule lists of `views` cannot drift: the ONE list each graded test enforces
(`TRANSPOSE_FORBIDDEN`, `VIEW_FORBIDDEN` in tests/public/test_views.py) must be spelled out,
name by name, in the function's docstring (solutions/ and the generated assignment/ stub) and
in the handout's views section.  A student is never graded on a name nobody told them about.

(`memory` has no rule list; its facts are checked against torch in the graded tests.)
"""

from __future__ import annotations

import ast
import re

import pytest

from grader import KIT_ROOT
from tests.public import test_views

pytestmark = pytest.mark.kit

RULES = [("transpose_view", test_views.TRANSPOSE_FORBIDDEN), ("can_view", test_views.VIEW_FORBIDDEN)]


def _docstring(path, name: str) -> str:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_docstring(node) or ""
    raise AssertionError(f"{path} defines no {name}")


def _handout_section(title_word: str) -> str:
    text = (KIT_ROOT / "handout.md").read_text()
    match = re.search(rf"^## \d+\. `{title_word}`.*?(?=^## )", text, re.S | re.M)
    assert match, f"handout.md has no section for `{title_word}`"
    return match.group(0)


def _paragraph_of(section: str, function: str) -> str:
    """The handout paragraph that introduces `function` (starts with its name in backticks)."""
    for paragraph in section.split("\n\n"):
        if paragraph.lstrip().startswith(f"`{function}("):
            return paragraph
    raise AssertionError(f"the handout's views section has no paragraph starting with `{function}(...)`")


@pytest.mark.parametrize("function,names", RULES, ids=[f for f, _ in RULES])
def test_every_forbidden_name_is_in_the_docstrings(function, names):
    for folder in ("solutions", "assignment"):
        doc = _docstring(KIT_ROOT / folder / "views.py", function)
        missing = sorted(n for n in names if f"``{n}``" not in doc)
        assert not missing, f"{folder}/views.py:{function} docstring does not name {missing} (the test forbids them)"


@pytest.mark.parametrize("function,names", RULES, ids=[f for f, _ in RULES])
def test_every_forbidden_name_is_in_the_handout(function, names):
    paragraph = _paragraph_of(_handout_section("views"), function)
    missing = sorted(n for n in names if f"`{n}`" not in paragraph)
    assert not missing, f"handout.md (views, {function}) does not name {missing} (the test forbids them)"


@pytest.mark.parametrize("function,names", RULES, ids=[f for f, _ in RULES])
def test_no_extra_names_in_the_docstring_rule(function, names):
    """The docstring's rule sentence names nothing the test does not enforce (no phantom rules)."""
    doc = _docstring(KIT_ROOT / "solutions" / "views.py", function)
    rule = doc[doc.index("Rules ("):].split("\n\n")[0]
    named = set(re.findall(r"``([A-Za-z_]\w*)``", rule))
    assert named <= set(names), f"{function}'s rule names {sorted(named - set(names))}, which the test does not forbid"


def test_memory_format_facts_agree_with_torch_finfo():
    """The public test's table of (sign, exponent, mantissa) facts is what torch.finfo states:
    the bits add up to finfo.bits and eps is 2**-mantissa (so the table cannot drift either)."""
    from tests.probes._tensors import dtype_of
    from tests.public.test_memory import FORMATS

    for name, (sign, exponent, mantissa) in FORMATS.items():
        info = __import__("torch").finfo(dtype_of(name))
        assert sign + exponent + mantissa == info.bits, name
        assert info.eps == 2.0 ** -mantissa, name


def test_memory_subnormal_closed_form_agrees_with_torch_conversion():
    """The closed form the memory tests expect (|v| <= s/2 rounds to zero) is what torch's own
    conversion does on every value the graded tests use."""
    import math

    import torch

    from tests.hidden.test_memory import MANTISSA
    from tests.probes._tensors import dtype_of

    for name, mantissa in MANTISSA.items():
        s = math.ldexp(torch.finfo(dtype_of(name)).tiny, -mantissa)
        for value in (s, 0.75 * s, s / 2, s / 2 * (1 + 2 ** -10), s / 4, -s / 2, 3 * s):
            if value == 0.0:
                continue
            stored = torch.tensor(value, dtype=torch.float64).to(dtype_of(name)).item()
            assert (stored == 0.0) == (abs(value) <= s / 2), (name, value)


def test_same_storage_facts_agree_with_torch():
    """The public same_storage expectations (facts of torch's ops) are what torch's storages say."""
    import torch

    from tests.probes._tensors import build, derive
    from tests.public.test_views import SAME_STORAGE_OPS, _same_storage_want

    specs = ({"shape": [4, 6]}, {"shape": [3, 5], "permute": [1, 0]}, {"shape": [6, 5], "slices": [[2, 6, 2], [1, 5, 1]]},
             {"shape": [1, 3]}, {"shape": [2, 2, 2], "permute": [2, 0, 1]})
    for spec in specs:
        for op in SAME_STORAGE_OPS:
            if op == "from_numpy_twice":
                array = build(spec).numpy()
                x, y = torch.from_numpy(array), torch.from_numpy(array)
            else:
                x = build(spec)
                y = derive(x, op)
            shared = x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
            assert shared == _same_storage_want(spec, op), (spec, op)
