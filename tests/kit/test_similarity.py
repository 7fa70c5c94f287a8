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


def _hidden_behind_a_lookup(dest: Path, modules: tuple[str, ...]) -> None:
    """The red team's evasion (issue: similarity item 4): for each of `modules`, the reference
    module saved as ``_impl_<module>.py`` with its graded functions renamed ``_name``, and the module
    file the stub whose graded functions call them through ``getattr(_impl, "_" + name)``."""
    from grader.reports.similarity import graded_functions

    shutil.copytree(KIT_ROOT / "assignment", dest)
    for module in modules:
        names = [n for n in graded_functions()[module] if "." not in n]
        impl = (KIT_ROOT / "solutions" / f"{module}.py").read_text()
        for name in names:
            impl = re.sub(rf"\b{name}\b", f"_{name}", impl)
        (dest / f"_impl_{module}.py").write_text(impl)
        stub = (dest / f"{module}.py").read_text()
        stub = stub.replace("from __future__ import annotations\n",
                            f"from __future__ import annotations\n\nfrom . import _impl_{module}\n\n"
                            f"_F = {{n: getattr(_impl_{module}, '_' + n) for n in {names!r}}}\n", 1)
        bodies = {name: f"    return _F[{name!r}](*locals().values())\n" for name in names}
        (dest / f"{module}.py").write_text(_with_bodies(stub, bodies))


def test_a_copy_reached_through_a_computed_lookup_is_compared_and_flagged(tmp_path: Path) -> None:
    """Every file that can run is compared, not only what the graded functions reach by name: the
    reference hidden in helper modules reached by getattr scored 0% against the reference (the
    scopes stop at the lookup); now it opens the report, and is flagged with the lookups."""
    subs = tmp_path / "subs"
    _hidden_behind_a_lookup(subs / "hidden" / "assignment", ("memory", "views", "data"))
    _class(subs)
    out = tmp_path / "similarity.html"
    result = write_similarity([subs], out)
    pair = next(p for p in result.pairs if {p.a, p.b} == {"hidden", REFERENCE})
    assert pair.score > 0.65, result.pairs[:4]  # (0.73: the delegating stubs are the rest of its code)
    assert pair in result.pairs[:2]  # the leaked solutions open the list: dave's copy, and this one
    assert "hidden" in result.codes and "hidden" not in result.flagged
    assert any(b.startswith("getattr (memory.py:") for b in result.lookups["hidden"]), result.lookups
    assert set(result.lookups) == {"hidden"}  # honest ones, and the leaked copy (its torch._scaled_mm is the reference's), are not
    page = out.read_text()
    assert 'id="lookups"' in page and "getattr (memory.py:" in page


def test_each_submission_is_read_under_a_budget_a_spent_one_is_flagged(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Staging and reading run in a child under CPU-time, address-space and wall-clock limits
    (grader.testing.contained): a submission whose reading spins, or grows without end, is flagged with the
    budget it spent, and the report is written for everyone else."""
    import grader.reports.similarity as similarity

    _class(tmp_path / "subs")
    for name in ("spinner", "grower"):
        _student(tmp_path / "subs", name, ALICE)
        (tmp_path / "subs" / name / "assignment" / f"{name}.py").write_text("X = 1\n")  # (tells them apart)
    real = similarity.extract

    def costly(folder: Path, *args, **kwargs):  # (runs in the child: the fork carries the patch)
        if (folder / "spinner.py").exists():
            while True:
                pass
        if (folder / "grower.py").exists():
            hoard = []
            while True:
                hoard.append(bytearray(2**24))
        return real(folder, *args, **kwargs)

    monkeypatch.setattr(similarity, "extract", costly)
    monkeypatch.setattr(similarity, "READ_SECONDS", 3.0)
    monkeypatch.setattr(similarity, "READ_MEMORY", 256 * 2**20)
    out = tmp_path / "similarity.html"
    result = write_similarity([tmp_path / "subs"], out)
    assert re.search("did not finish in time|ran out of time", result.flagged["spinner"]), result.flagged
    assert "ran out of memory" in result.flagged["grower"], result.flagged
    assert {"alice", "bob", "dave", REFERENCE} <= set(result.codes)
    top = {frozenset((p.a, p.b)) for p in result.pairs[:2]}
    assert top == {frozenset(("alice", "bob")), frozenset(("dave", REFERENCE))}, result.pairs[:3]
    assert 'id="flagged"' in out.read_text()
