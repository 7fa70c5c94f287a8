"""Kit self-test: the rules the einops_rewrites and flops tests enforce are the rules the students
read.  Each test reads the ONE constant the graded test uses and checks that the module docstring
(solutions and the generated stubs) and the handout section name every entry."""

from __future__ import annotations

import ast
import re

import pytest

from grader import KIT_ROOT
from tests.public import test_einops_rewrites as einops_tests
from tests.public import test_flops as flops_tests


def handout_section(number: int) -> str:
    text = (KIT_ROOT / "handout.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {number}\. .*?(?=^## )", text, flags=re.S | re.M)
    assert match, f"handout.md has no section {number}"
    return match.group(0)


def docstring(folder: str, module: str, qualname: str | None = None) -> str:
    tree = ast.parse((KIT_ROOT / folder / f"{module}.py").read_text(encoding="utf-8"))
    if qualname is None:
        return ast.get_docstring(tree) or ""
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == qualname)
    return ast.get_docstring(node) or ""


def missing(names, text: str, quote: str) -> list[str]:
    return sorted(n for n in names if f"{quote}{n}{quote}" not in text)


@pytest.mark.parametrize("folder", ["solutions", "assignment"])
def test_einops_docstring_lists_every_rule_name(folder):
    doc = docstring(folder, "einops_rewrites")
    for constant in ("FORBIDDEN", "EINOPS_FUNCTIONS", "EINOPS_ONLY", "MATRIX_PRODUCTS"):
        names = getattr(einops_tests, constant)
        assert not missing(names, doc, "``"), (
            f"{folder}/einops_rewrites.py's docstring does not list {missing(names, doc, '``')} "
            f"(tests/public/test_einops_rewrites.py {constant})")
    assert "``@`` operator" in doc and "``torch.einsum``" in doc


def test_einops_handout_lists_every_rule_name():
    section = handout_section(3)
    assert "`einops_rewrites`" in section.splitlines()[0]
    for constant in ("FORBIDDEN", "EINOPS_FUNCTIONS", "EINOPS_ONLY", "MATRIX_PRODUCTS"):
        names = getattr(einops_tests, constant)
        assert not missing(names, section, "`"), (
            f"handout.md section 3 does not list {missing(names, section, '`')} "
            f"(tests/public/test_einops_rewrites.py {constant})")
    assert "`@` operator" in section and "`torch.einsum`" in section


@pytest.mark.parametrize("folder", ["solutions", "assignment"])
def test_flops_docstring_lists_every_rule_name(folder):
    doc = docstring(folder, "flops", "count_matmul_flops")
    for constant in ("FLOP_COUNTER_NAMES", "DYNAMIC_ESCAPES"):
        names = getattr(flops_tests, constant)
        assert not missing(names, doc, "``"), (
            f"{folder}/flops.py count_matmul_flops's docstring does not list {missing(names, doc, '``')} "
            f"(tests/public/test_flops.py {constant})")


def test_flops_handout_lists_every_rule_name():
    section = handout_section(4)
    assert "`flops`" in section.splitlines()[0]
    for constant in ("FLOP_COUNTER_NAMES", "DYNAMIC_ESCAPES"):
        names = getattr(flops_tests, constant)
        assert not missing(names, section, "`"), (
            f"handout.md section 4 does not list {missing(names, section, '`')} (tests/public/test_flops.py {constant})")
    # the datasheet facts the handout states (and the tolerance the tests use)
    assert "67.5e12" in section and "67e12" in section and f"{flops_tests.PEAK_REL:.0%}" in section
    assert "624e12" in section and "312e12" in section
