"""Every total the docs state follows from the tests (issue 26): `grader.testing.totals`, `grader.authoring.totals_docs`.

* the points read from the test files' source equal what pytest collects (points, GPU, hidden) for
  every module, and the mutants and variants counted in their files are the ones registered;
* README.md, handout.md and docs/*.md state those totals now (`grader release --check` fails
  otherwise, naming the file and `grader stubs`);
* in a copy of the kit, a new hidden test changes the totals of README.md, handout.md and of
  course.example.toml's table: `grader release --check` names them, `grader stubs` rewrites them, and
  a new mutant changes CONTRIBUTING's table;
* a header's points phrase round-trips, with and without the GPU tests.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.testing.totals import ModuleTotals, module_totals, parse_points, points_phrase, totals, without_gpu_phrase
from grader.authoring.totals_docs import plain, render, stale_docs, unmarked

pytestmark = pytest.mark.kit

COLLECT = """
import json, sys
import pytest

class Collect:
    def pytest_collection_finish(self, session):
        out = [{"id": i.nodeid, "points": [m.args[0] for m in i.iter_markers("points")],
                "gpu": i.get_closest_marker("gpu") is not None} for i in session.items]
        with open(sys.argv[1], "w") as f:
            json.dump(out, f)

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[2:]], plugins=[Collect()]))
"""


def test_the_points_read_from_the_source_are_the_ones_pytest_collects(tmp_path: Path) -> None:
    from grader.testing.suite_process import test_files

    out = tmp_path / "collected.json"
    proc = subprocess.run([sys.executable, "-c", COLLECT, str(out), *test_files(MODULES)], cwd=KIT_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    collected = json.loads(out.read_text())
    for module in MODULES:
        mine = [t for t in collected if re.search(rf"tests/(public|hidden)/test_{module}\.py::", t["id"])]
        public = [t for t in mine if "/public/" in t["id"]]
        hidden = [t for t in mine if "/hidden/" in t["id"]]
        assert all(len(t["points"]) == 1 for t in mine), module
        seen = ModuleTotals(module, public=sum(t["points"][0] for t in public),
                            public_gpu=sum(t["points"][0] for t in public if t["gpu"]),
                            hidden=sum(t["points"][0] for t in hidden),
                            hidden_gpu=sum(t["points"][0] for t in hidden if t["gpu"]),
                            public_tests=len(public), hidden_tests=len(hidden))
        counted = module_totals(module)
        assert (counted.public, counted.public_gpu, counted.hidden, counted.hidden_gpu, counted.public_tests,
                counted.hidden_tests) == (seen.public, seen.public_gpu, seen.hidden, seen.hidden_gpu,
                                          seen.public_tests, seen.hidden_tests), module


def test_the_mutants_and_variants_counted_are_the_ones_registered() -> None:
    from grader.authoring.mutants import load_mutants, load_variants

    mutants, variants = load_mutants(), load_variants()
    for module in MODULES:
        t = module_totals(module)
        assert t.mutants == sum(1 for m in mutants if m.module == module), module
        assert t.variants == sum(1 for v in variants if v.module == module), module


def test_the_docs_state_the_totals_of_the_tests() -> None:
    assert stale_docs() == []
    t = totals(MODULES)
    readme = plain((KIT_ROOT / "README.md").read_text(encoding="utf-8"))
    assert f"{t.points} points: {t.public} public, {t.hidden} hidden, {t.gpu} of them on the GPU" in readme


def test_points_phrase_round_trips() -> None:
    m = ModuleTotals("flops", public=16, public_gpu=6, hidden=8, hidden_gpu=2)
    header = f"## 4. `flops`: compute accounting and MFU {points_phrase(m)}"
    assert header.endswith("(16 public points, 6 of them on the GPU; hidden tests add 8 (2 on the GPU))")
    assert parse_points(header).groups() == ("16", "6", "8", "2")
    assert without_gpu_phrase(header).endswith("(10 public points; hidden tests add 6)")
    assert points_phrase(ModuleTotals("x", public=1, hidden=1)) == "(1 public point; hidden tests add 1)"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "kit"
    for rel in ("solutions", "tests/public", "tests/hidden", "tests/mutants", "tests/variants", "docs"):
        shutil.copytree(KIT_ROOT / rel, root / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("README.md", "handout.md", "course.example.toml"):
        shutil.copy2(KIT_ROOT / rel, root / rel)
    return root


def test_a_new_hidden_test_and_mutant_change_every_total_they_touch(tmp_path: Path) -> None:
    from grader.authoring.totals_docs import write_docs

    root = _copy(tmp_path)
    assert stale_docs(root) == []
    before = totals(MODULES, root)
    hidden = root / "tests" / "hidden" / "test_views.py"
    hidden.write_text(hidden.read_text() + '\n\n@pytest.mark.points(2)\ndef test_one_more(student):\n'
                      '    """one more"""\n    student.probe("views.transpose_view", specs=[])\n')
    mutants = root / "tests" / "mutants" / "memory.py"
    mutants.write_text(mutants.read_text() + '\n\nedit("one_more", within="storage_bytes", why="one more",\n'
                       '     old="return x.untyped_storage().nbytes()", new="return 0")\n')
    stale = stale_docs(root)
    assert {line.split(":")[0] for line in stale} == {"README.md", "handout.md", "docs/CONTRIBUTING.md"}, stale
    assert all(line.endswith("run `grader stubs`") for line in stale)
    assert sorted(write_docs(root)) == ["README.md", "docs/CONTRIBUTING.md", "handout.md"]
    assert stale_docs(root) == []
    readme = plain((root / "README.md").read_text())
    points = before.points + 2
    assert f"{points} points: {before.public} public, {before.hidden + 2} hidden," in readme
    assert f"{before.gpu} of the {points} points are GPU tests" in readme
    hw1 = totals(("memory", "views", "einops_rewrites", "flops", "gradients"), root)  # course.example.toml's hw1
    assert f"| 1 to 5 | {hw1.points} ({hw1.gpu} of them on the GPU) |" in readme
    views = totals(("views",), root)["views"]
    assert f"## 2. `views`: strides, views and copies {points_phrase(views)}" in (root / "handout.md").read_text()
    assert views.hidden == before["views"].hidden + 2
    memory_row = next(line for line in (root / "docs" / "CONTRIBUTING.md").read_text().splitlines()
                      if line.startswith("| memory |"))
    assert memory_row.endswith(f"| {before['memory'].mutants + 1} | {before['memory'].variants} |")


def test_only_marked_places_are_rewritten_and_stale_unmarked_numbers_are_named() -> None:
    """A value between markers follows the code; a measurement outside them is never rewritten, and an
    unmarked "N modules" that is no longer true, or any unmarked "default N", is named instead."""
    n = len(MODULES)
    text = ("We have <!--kit:modules-->two<!--/kit--> modules and <!--kit:points-->1<!--/kit--> points.\n"
            "Validate took 5 minutes for all 99 modules. <!--measured-->\n"
            "Grading 99 modules is easy.\n"
            "trials (the default <!--kit:default:flops.time_matmul.trials-->3<!--/kit-->), budget default 60.\n")
    out = render(text, "docs/X.md")
    from grader.testing.totals import count_word
    assert out.splitlines()[0] == (f"We have <!--kit:modules-->{count_word(n, 'two')}<!--/kit--> modules and "
                                   f"<!--kit:points-->{totals(MODULES).points}<!--/kit--> points.")
    assert out.splitlines()[1:3] == text.splitlines()[1:3]  # never rewritten
    assert "the default <!--kit:default:flops.time_matmul.trials-->10<!--/kit-->" in out  # solutions/flops.py: trials=10
    problems = unmarked(out, "docs/X.md", MODULES)
    assert [p.split(":")[1] for p in problems] == ["3", "4"], problems
    assert "'99 modules'" in problems[0] and "'default 60'" in problems[1]


def test_a_changed_default_changes_the_handout(tmp_path: Path) -> None:
    """The handout's "the default 10" is time_matmul's default: change it in solutions/ and the check names
    handout.md, `grader stubs`' writer rewrites it; an unknown marker is named, not guessed."""
    from grader.authoring.totals_docs import write_docs

    root = _copy(tmp_path)
    flops = root / "solutions" / "flops.py"
    flops.write_text(flops.read_text().replace("trials: int = 10)", "trials: int = 7)", 1))
    assert [line.split(":")[0] for line in stale_docs(root)] == ["handout.md"]
    assert write_docs(root) == ["handout.md"] and stale_docs(root) == []
    assert "the default 7)" in plain((root / "handout.md").read_text())
    (root / "docs" / "CONTRIBUTING.md").write_text("x <!--kit:default:flops.no_such.trials-->1<!--/kit-->\n")
    assert stale_docs(root) == ["default:flops.no_such.trials: solutions/flops.py has no function 'no_such'"]


def test_the_public_tests_expect_the_references_defaults() -> None:
    """A default a public test states as a constant (it ships, so it cannot import solutions/) is the reference's."""
    import inspect

    import solutions.flops
    from tests.public import test_flops

    trials = inspect.signature(solutions.flops.time_matmul).parameters["trials"].default
    assert test_flops.TIME_MATMUL_DEFAULT_TRIALS == trials


def test_the_mutant_floor_scales_with_the_functions_to_write(tmp_path: Path) -> None:
    """3 mutants per answer region, within 6..15, unless the module states its own floor with a reason."""
    from grader.testing.totals import TotalsError, min_mutants

    (tmp_path / "solutions").mkdir()
    (tmp_path / "tests" / "mutants").mkdir(parents=True)
    region = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    for name, regions in (("one", 1), ("four", 4), ("ten", 10)):
        (tmp_path / "solutions" / f"{name}.py").write_text(region * regions)
    assert [min_mutants(m, tmp_path) for m in ("one", "four", "ten")] == [6, 12, 15]
    (tmp_path / "tests" / "mutants" / "four.py").write_text('MIN_MUTANTS = 4\nMIN_MUTANTS_REASON = "small"\n')
    assert min_mutants("four", tmp_path) == 4
    (tmp_path / "tests" / "mutants" / "one.py").write_text("MIN_MUTANTS = 2\n")
    with pytest.raises(TotalsError, match="MIN_MUTANTS_REASON"):
        min_mutants("one", tmp_path)
