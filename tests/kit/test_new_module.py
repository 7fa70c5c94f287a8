"""One more module, end to end, as docs/CONTRIBUTING.md (*Adding a module*) walks a TA through it
(issue 26), on a copy of the kit (whatever number of modules it has: issue 33):

`grader new-module softclip --function soft_clip` scaffolds it (a taken name or a non-identifier is
refused, exit 2, nothing written); `grader validate --module softclip` fails on the fresh scaffold,
saying what to do next; then a tiny reference (softsign), its expected value in the public test, the
TODOs replaced and 15 edit mutants: `grader stubs`, `grader validate --module softclip` passes,
`grader release --check` finds every doc's totals right (the module count, the README's points,
CONTRIBUTING's mutant table), the kit's own doc tests pass in the copy, and `grader release` ships the
module (stub, public test, probes, handout section) and not its hidden tests or mutants.  Nothing
under grader/ is edited.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.testing.totals import count_word

pytestmark = pytest.mark.kit

IGNORED = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info")
#: 15 plausible bugs of softsign, x / (1 + |x|): each an edit of the reference's one line.
BUGS = {
    "no_abs": "x / (1 + x)", "minus": "x / (1 - x.abs())", "sign": "x / x.abs()", "two": "x / (2 + x.abs())",
    "reciprocal": "1 / (1 + x.abs())", "times": "x * (1 + x.abs())", "abs_numerator": "x.abs() / (1 + x.abs())",
    "square": "x / (1 + x * x)", "sqrt": "x / (1 + x.abs()).sqrt()", "tanh": "torch.tanh(x)",
    "shifted": "x / (1 + x.abs()) + 0.5", "float64": "(x / (1 + x.abs())).double()",
    "drops_first": "(x / (1 + x.abs()))[..., 1:]", "mean": "x / (1 + x.abs().mean())", "negated": "-x / (1 + x.abs())",
}


def _grader(kit: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KIT_COURSE"}
    env["COLUMNS"] = "250"
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], cwd=kit, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def _fill_in(kit: Path) -> None:
    """What the TA writes after the scaffold: the task, the reference, the expected value, the mutants."""
    solution = kit / "solutions" / "softclip.py"
    text = solution.read_text()
    text = re.sub(r'"""TODO\(new-module\)[^\n]*\n', '"""Soft clipping: squashing any real number into (-1, 1).\n', text,
                  count=1)
    text = text.replace("TODO(new-module): what soft_clip returns, as a formula, for `x` of any shape.",
                        "Softsign, x / (1 + |x|), elementwise, for `x` of any shape.")
    text = text.replace('raise NotImplementedError("TODO(new-module): the reference solution of soft_clip")',
                        "return x / (1 + x.abs())")
    solution.write_text(text)
    public = kit / "tests" / "public" / "test_softclip.py"
    _replace(public, 'raise NotImplementedError("TODO(new-module): the expected value of soft_clip(x), computed here")',
             "return x / (1 + torch.abs(x))")
    _replace(public, "(TODO(new-module): say what is checked: grader check shows this line)", "is x / (1 + |x|)")
    hidden = kit / "tests" / "hidden" / "test_softclip.py"
    _replace(hidden, "(TODO(new-module): the edge cases the docstring names)", "(one value, large values)")
    _replace(hidden, " (TODO(new-module): say what is checked)", "")
    handout = kit / "handout.md"
    text = handout.read_text()
    text = text.replace("`softclip`: TODO(new-module) a title", "`softclip`: squashing into (-1, 1)")
    text = re.sub(r"TODO\(new-module\): the task in the handout's words:[^#]*$",
                  "Implement `soft_clip` in `assignment/softclip.py`: softsign, x / (1 + |x|).\n", text, flags=re.S)
    handout.write_text(text)
    mutants = kit / "tests" / "mutants" / "softclip.py"
    mutants.write_text(mutants.read_text() + "".join(
        f'\nedit("{name}", within="soft_clip", why="softsign written as {new}",\n'
        f'     old="x / (1 + x.abs())", new="{new}")\n' for name, new in BUGS.items()))


def test_a_new_module_from_scaffold_to_release(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    shutil.copytree(KIT_ROOT, kit, ignore=IGNORED)
    grader_files = {p: p.read_bytes() for p in (kit / "grader").rglob("*.py")}
    for bad, why in (("memory", "exists already"), ("Soft", "lowercase Python identifier"), ("class", "keyword"),
                     ("random", "taken by a module Python")):
        proc = _grader(kit, "new-module", bad)
        assert proc.returncode == 2 and why in proc.stdout and "nothing written" in proc.stdout, proc.stdout
    assert not (kit / "solutions" / "Soft.py").exists()

    proc = _grader(kit, "new-module", "softclip", "--function", "soft_clip")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rel in ("solutions/softclip.py", "assignment/softclip.py", "tests/probes/softclip.py",
                "tests/public/test_softclip.py", "tests/hidden/test_softclip.py", "tests/mutants/softclip.py",
                "tests/variants/softclip.py"):
        assert (kit / rel).is_file(), rel
    assert f"## {len(MODULES) + 1}. `softclip`" in (kit / "handout.md").read_text()
    assert "Adding a module" in proc.stdout

    proc = _grader(kit, "validate", "--module", "softclip")  # the fresh scaffold is not a module yet
    said = " ".join(proc.stdout.split())  # (long lines wrap)
    assert proc.returncode == 1 and "validate: FAILED" in said, said
    assert "solutions/softclip.py still raises NotImplementedError: write the reference solution there" in said
    # one function to write: the floor is the lower bound of grader.testing.totals.MIN_MUTANTS_RANGE, 6
    assert "softclip: 0 mutants, at least 6 needed: write them in tests/mutants/softclip.py" in said
    assert "TODO(new-module) is still in solutions/softclip.py" in said

    _fill_in(kit)
    assert _grader(kit, "stubs").returncode == 0
    proc = _grader(kit, "validate", "--module", "softclip")
    assert proc.returncode == 0 and "validate: OK" in proc.stdout, proc.stdout[-4000:]
    assert "mutants: 15/15 caught" in proc.stdout and "solutions: 2/2 graded tests pass" in proc.stdout

    proc = _grader(kit, "release", "--check")
    assert proc.returncode == 0, proc.stdout
    from grader.authoring.totals_docs import plain

    readme = plain((kit / "README.md").read_text())
    assert f"({count_word(len(MODULES) + 1)} modules" in readme  # as the README writes it ("twelve"), one more
    assert re.search(r"^\| softclip \| — \| — \| 15 \| 0 \|$", (kit / "docs" / "CONTRIBUTING.md").read_text(), re.M)
    env = {k: v for k, v in os.environ.items() if k != "KIT_COURSE"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/kit/test_docs.py",
                           "tests/kit/test_totals.py", "-k", "not pytest_collects and not registered"],
                          cwd=kit, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]

    proc = _grader(kit, "release", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "out"
    for rel in ("assignment/softclip.py", "tests/public/test_softclip.py", "tests/probes/softclip.py"):
        assert (out / rel).is_file(), rel
    assert "raise NotImplementedError()" in (out / "assignment" / "softclip.py").read_text()
    assert "`softclip`: squashing into (-1, 1) (1 public point; hidden tests add 1)" in (out / "handout.md").read_text()
    assert not (out / "tests" / "hidden").exists() and not (out / "tests" / "mutants").exists()
    assert {p: p.read_bytes() for p in (kit / "grader").rglob("*.py")} == grader_files  # grader/ untouched
