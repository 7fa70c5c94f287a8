"""`grader similarity`: near-copies and copies of the reference solutions top the report."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader import KIT_ROOT
from grader.cli import main as cli
from grader.reports.similarity import REFERENCE, analyse, write_similarity

pytestmark = pytest.mark.kit

ALICE = {
    "views": {
        "contiguous_strides": """
    strides = []
    running = 1
    for size in reversed(shape):
        strides.insert(0, running)
        running = running * max(size, 1)
    return tuple(strides)
""",
        "element_offset": """
    total = storage_offset
    for position, step in zip(index, stride):
        total += position * step
    return total
""",
    },
}


def _with_bodies(text: str, bodies: dict[str, str]) -> str:
    for name, body in bodies.items():
        pattern = re.compile(rf"(def {name}\(.*?\"\"\"\n)(\s+# YOUR CODE HERE\n\s+raise NotImplementedError\(\)\n)", re.S)
        text, n = pattern.subn(lambda m: m.group(1) + body.lstrip("\n"), text, count=1)
        assert n == 1, name
    return text


def _student(root: Path, name: str, bodies: dict[str, dict[str, str]], rename: dict[str, str] | None = None) -> None:
    dest = root / name / "assignment"
    shutil.copytree(KIT_ROOT / "assignment", dest)
    for module, funcs in bodies.items():
        text = _with_bodies((dest / f"{module}.py").read_text(), funcs)
        for old, new in (rename or {}).items():
            text = re.sub(rf"\b{old}\b", new, text)
        (dest / f"{module}.py").write_text(text)


def _class(root: Path) -> None:
    _student(root, "alice", ALICE)
    _student(root, "bob", ALICE, rename={"running": "acc", "total": "off", "strides": "out", "position": "i",
                                         "step": "s"})
    _student(root, "carol", {})  # untouched stubs
    shutil.copytree(KIT_ROOT / "solutions", root / "dave" / "assignment")  # a leaked solution


def test_copies_top_the_report(tmp_path: Path) -> None:
    _class(tmp_path / "subs")
    result = analyse([tmp_path / "subs"], threshold=0.5)
    top = [(p.a, p.b) for p in result.pairs[:2]]
    assert ("dave", REFERENCE) in top or (REFERENCE, "dave") in top, result.pairs[:3]
    assert ("alice", "bob") in top, result.pairs[:3]
    assert result.pairs[0].score > 0.9 and result.pairs[1].score > 0.9
    assert "carol" in result.skipped and "stubs only" in result.skipped["carol"]
    rest = [p for p in result.pairs if {p.a, p.b} not in ({"alice", "bob"}, {"dave", REFERENCE})]
    assert all(p.score < 0.5 for p in rest), rest[:3]


def test_page_and_bad_input(tmp_path: Path) -> None:
    _class(tmp_path / "subs")
    out = tmp_path / "similarity.html"
    write_similarity([tmp_path / "subs"], out)
    page = out.read_text()
    assert page.count('class="pair"') == 2 and "<mark>" in page
    assert cli(["similarity", str(tmp_path / "nope"), "--out", str(tmp_path / "x.html")]) == 2
    assert cli(["similarity", str(tmp_path / "subs"), "--out", str(tmp_path / "x.html"), "--threshold", "7"]) == 2
    assert not (tmp_path / "x.html").exists()
    chromium = shutil.which("chromium")
    if chromium:
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", f"--user-data-dir={tmp_path / 'p'}", "--dump-dom",
                              out.as_uri()], capture_output=True, text=True, timeout=120).stdout
        assert 'id="pairs"' in dom


def _renamed_copy(dest: Path) -> None:
    """The reference solutions with every graded function and method renamed, the old name
    delegating to it (`def f(*a, **k): return _f_impl(*a, **k)`, `self._m_impl(...)`)."""
    from grader.reports.similarity import graded_functions

    shutil.copytree(KIT_ROOT / "solutions", dest)
    for module, names in graded_functions().items():
        path = dest / f"{module}.py"
        text = path.read_text()
        tops = [n for n in names if "." not in n]
        for name in tops:
            text = re.sub(rf"^def {name}\(", f"def _{name}_impl(", text, flags=re.M)
        for method in sorted({n.split(".")[1] for n in names if "." in n}):
            text = re.sub(rf"^    def {method}\(", f"    def {method}(self, *args, **kwargs):\n        return "
                          f"self._{method}_impl(*args, **kwargs)\n\n    def _{method}_impl(", text, flags=re.M)
        text += "".join(f"\n\ndef {n}(*args, **kwargs):\n    return _{n}_impl(*args, **kwargs)\n" for n in tops)
        path.write_text(text)


def test_a_renamed_and_delegating_copy_is_still_a_copy(tmp_path: Path) -> None:
    """The rules' scope is compared, not the bodies of the defs with the graded names."""
    _renamed_copy(tmp_path / "subs" / "erin" / "assignment")
    _student(tmp_path / "subs", "alice", ALICE)
    result = analyse([tmp_path / "subs"], threshold=0.5)
    pair = next(p for p in result.pairs if {p.a, p.b} == {"erin", REFERENCE})
    assert pair.score > 0.9, result.pairs[:3]


def test_a_submission_that_cannot_be_read_is_flagged_and_the_report_written(tmp_path: Path) -> None:
    """A 600-term expression (ast.unparse recurses once per term) in one submission: that student
    is flagged with the reason, everyone else is compared, the page is written."""
    _class(tmp_path / "subs")
    deep = {"views": {"element_offset": "\n    return " + " + ".join(["storage_offset"] * 600) + "\n"}}
    _student(tmp_path / "subs", "mallory", deep)
    out = tmp_path / "similarity.html"
    result = write_similarity([tmp_path / "subs"], out)
    assert "mallory" in result.flagged and "RecursionError" in result.flagged["mallory"], result.flagged
    assert "mallory" not in result.codes
    top = {frozenset((p.a, p.b)) for p in result.pairs[:2]}
    assert top == {frozenset(("alice", "bob")), frozenset(("dave", REFERENCE))}, result.pairs[:3]
    page = out.read_text()
    assert 'id="flagged"' in page and "mallory" in page and "RecursionError" in page
    assert page.count("<mark>") == page.count("</mark>") > 0
    assert "&lt;" in page and " < " not in page  # the code's own `<` is escaped, by the template alone
