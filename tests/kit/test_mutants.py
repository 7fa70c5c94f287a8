"""The mutants themselves (issue 26): edits of the reference, whole copies that know what they were
written against, and a validation run that reads one snapshot of the kit.

* every mutant of every module applies to the reference as it is and changes its code (an edit
  whose old text is gone, or a mutant that changes nothing, is named here in a second, not after
  a 50-minute `grader validate`), and no whole copy is stale;
* an edit of several changes, an edit inside a class's methods, and the refusals (old text gone
  or twice, a result that does not parse);
* a whole-copy mutant records the fingerprint of the reference definition it was written against:
  a change to the definition's code (not to its docstring or comments) makes it stale, named with
  the command that refreshes it, and ``--refresh-fingerprints`` writes the new one into the file;
* validate reads a snapshot: every path it hands to the test runs lies in the copy, and the copy's
  own ``grader`` is the one its pytest processes import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.authoring.mutants import Mutant, apply, fingerprint, load_mutants, mutated_definition, refresh_fingerprints, stale
from grader.rules.static import find_definition

pytestmark = pytest.mark.kit


def _code(source: str, qualname: str) -> str:
    node = find_definition(ast.parse(source), qualname)
    assert node is not None
    if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
        node.body = node.body[1:]
    return ast.dump(node)


def test_every_mutant_applies_and_changes_the_code() -> None:
    mutants = load_mutants()
    problems = []
    for m in mutants:
        reference = (KIT_ROOT / "solutions" / f"{m.module}.py").read_text(encoding="utf-8")
        try:
            mutated = apply(m, reference)
        except (LookupError, SyntaxError) as exc:
            problems.append(str(exc))
            continue
        if _code(mutated, m.replaces) == _code(reference, m.replaces):
            problems.append(f"{m.id}: changes nothing in {m.replaces}")
    assert not problems, "\n".join(problems)
    assert not stale(mutants), "\n".join(stale(mutants))
    assert {m.module for m in mutants} == set(MODULES)
    assert sum(1 for m in mutants if m.edits) > len(mutants) / 2  # most are edits of the reference


SOURCE = '''\
def f(x):
    """Add one, twice."""
    ### BEGIN SOLUTION
    y = x + 1
    return y + 1
    ### END SOLUTION


class C:
    """Two methods, a region each."""

    def a(self, x):
        ### BEGIN SOLUTION
        return x * 2
        ### END SOLUTION

    def b(self, x):
        ### BEGIN SOLUTION
        return x * 3
        ### END SOLUTION
'''


def test_an_edit_of_several_changes_and_one_inside_a_class() -> None:
    m = Mutant("memory", "f", "adds 3", "f3", "", edits=(("y = x + 1", "y = x + 2"), ("return y + 1", "return y")))
    assert "y = x + 2\n    return y\n" in apply(m, SOURCE)
    c = Mutant("memory", "C", "both wrong", "c", "", edits=(("x * 2", "x * 4"), ("x * 3", "x * 9")))
    out = apply(c, SOURCE)
    assert "return x * 4" in out and "return x * 9" in out and '"""Two methods, a region each."""' in out
    whole = mutated_definition(c, SOURCE)  # the same bug as a whole definition (for another implementation)
    assert not whole.edits and "x * 9" in whole.source and apply(whole, SOURCE).count("x * 9") == 1


@pytest.mark.parametrize("edits, words", [
    ((("Add one", "Add two"),), "occurs 0 times"),           # the docstring is not the solution region
    ((("x + 1", "x - 1"), ("x + 1", "x")), "old text 2 of 2 occurs 0 times"),
    ((("y + 1", "y +"),), "does not parse"),
])
def test_an_edit_that_cannot_be_made_is_refused_by_name(edits, words) -> None:
    with pytest.raises((LookupError, SyntaxError), match=rf"memory:f_bad.*{words}"):
        apply(Mutant("memory", "f", "?", "f_bad", "", edits=edits), SOURCE)


def test_an_ellipsis_default_of_a_whole_copy_is_the_references() -> None:
    """`trials=...` in a variant or whole-copy mutant means the reference's default (not copied by hand, so it
    follows the solution); a parameter the reference gives no default is refused by name."""
    source = "def g(a, b=3, *, c=0.5):\n    return a * b + c\n"
    m = Mutant("memory", "g", "?", "g_ok", "def g(a, b=..., *, c=...):\n    return b * a + c")
    assert "def g(a, b=3, *, c=0.5):" in apply(m, source)
    assert "def g(a, b=7, *, c=0.5):" in apply(m, source.replace("b=3", "b=7"))
    kept = Mutant("memory", "g", "?", "g_own", "def g(a, b=4, *, c=...):\n    return b * a + c")
    assert "def g(a, b=4, *, c=0.5):" in apply(kept, source)
    bad = Mutant("memory", "g", "?", "g_bad", "def g(a=..., b=3, *, c=0.5):\n    return a * b + c")
    with pytest.raises(LookupError, match=r"memory:g_bad.*default `...` of a"):
        apply(bad, source)
    nested = Mutant("memory", "g", "?", "g_nested", "def g(a, b=..., *, c=...):\n    h = lambda t=...: t\n    return h(a)")
    with pytest.raises(LookupError, match=r"memory:g_nested.*not in a nested def"):
        apply(nested, source)


def _kit_copy(tmp_path: Path) -> Path:
    root = tmp_path / "kit"
    (root / "solutions").mkdir(parents=True)
    (root / "tests" / "mutants").mkdir(parents=True)
    (root / "solutions" / "memory.py").write_text(SOURCE)
    return root


def test_a_whole_copy_knows_the_reference_it_was_written_against(tmp_path: Path) -> None:
    root = _kit_copy(tmp_path)
    solutions = root / "solutions"
    mutants_file = root / "tests" / "mutants" / "memory.py"
    mutants_file.write_text('from grader.authoring.mutants import mutant\n\n\n'
                            '@mutant(replaces="f", why="adds one only (x · 1)")\n'
                            'def f_once(x):\n    return x + 1\n')
    was = fingerprint("memory", "f", solutions)
    m = Mutant("memory", "f", "adds one only", "f_once", "def f(x):\n    return x + 1")
    assert [line.split(",")[0] for line in stale([m], solutions)] == ["memory:f_once: a whole copy of f"]  # none yet
    assert refresh_fingerprints(("memory",), root) == ["memory:f_once"]
    assert f'why="adds one only (x · 1)", against="{was}")' in mutants_file.read_text()
    assert refresh_fingerprints(("memory",), root) == []  # up to date: nothing written
    m = Mutant("memory", "f", "adds one only", "f_once", m.source, against=was)
    assert stale([m], solutions) == []
    # docstrings and comments may change; code may not
    (solutions / "memory.py").write_text(SOURCE.replace("Add one, twice.", "Adds 2.").replace(
        "    y = x + 1\n", "    y = x + 1  # first\n"))
    assert fingerprint("memory", "f", solutions) == was and stale([m], solutions) == []
    (solutions / "memory.py").write_text(SOURCE.replace("return y + 1", "return 1 + y"))
    [line] = stale([m], solutions)
    assert line.startswith(f"memory:f_once: a whole copy of f, written against {was}")
    assert line.endswith("`grader validate --refresh-fingerprints --module memory`")
    assert refresh_fingerprints(("memory",), root) == ["memory:f_once"]
    assert f'against="{fingerprint("memory", "f", solutions)}")' in mutants_file.read_text()


def test_validate_reads_a_snapshot_of_the_kit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path validate hands to a test run (targets, test files, working directory) lies in the
    copy it made at its start, and the mutants it grades were read from there."""
    from rich.console import Console

    import grader.authoring.validate as v

    seen: list[Path] = []

    def fake_suite(target, files, cwd=None):
        seen.extend([Path(target), Path(cwd), *map(Path, files)])
        from grader.testing.suite_process import SuiteRun

        return SuiteRun(records=[{"id": "tests/public/test_memory.py::t", "status": "passed", "message": ""}])

    def fake_mutants(ms, tmp, jobs, result, console=None, root=None):
        seen.append(Path(root))
        return len(ms)

    monkeypatch.setattr(v, "run_suite", fake_suite)
    monkeypatch.setattr(v, "run_mutants", fake_mutants)
    monkeypatch.setattr(v, "run_variants", lambda *a, **kw: 0)
    monkeypatch.setattr(v, "make_stubs", lambda dest, console, root=None: seen.append(Path(root)))
    result = v.validate(("memory",), console=Console(record=True, width=200))
    snapshot = seen[1]
    assert snapshot.name == "kit" and snapshot != KIT_ROOT and not snapshot.exists()  # (removed afterwards)
    # (the stubs are generated from the copy's solutions next to it, in the run's own folder)
    assert all(p.is_relative_to(snapshot.parent) and not p.is_relative_to(KIT_ROOT) for p in seen), seen
    assert all(p.is_relative_to(snapshot) for p in seen if p.name != "stubs"), seen
    assert result.counts["mutants"] >= 15


def test_the_snapshots_pytest_imports_the_snapshots_grader(tmp_path: Path) -> None:
    from grader.authoring.snapshot import snapshot_kit

    copy = snapshot_kit(tmp_path / "kit")
    assert (copy / "tests" / "mutants" / "memory.py").read_text() == \
        (KIT_ROOT / "tests" / "mutants" / "memory.py").read_text()
    proc = subprocess.run([sys.executable, "-c", "import grader; print(grader.KIT_ROOT)"], cwd=copy,
                          capture_output=True, text=True, timeout=120)
    assert Path(proc.stdout.strip()) == copy, proc.stdout + proc.stderr
