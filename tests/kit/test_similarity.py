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
