"""Kit self-test: `grader validate` (tests pass on solutions, fail as not attempted on stubs,
every mutant caught, every correct variant accepted) over every module the kit has."""

from __future__ import annotations

from rich.console import Console

from grader import KIT_ROOT, MODULES
from grader.validate import MIN_MUTANTS, validate


def test_validate_all_modules():
    modules = tuple(m for m in MODULES if (KIT_ROOT / "solutions" / f"{m}.py").exists())
    console = Console(record=True, width=200)
    result = validate(modules, jobs=2, console=console)
    assert result.ok, console.export_text()
    assert result.counts["passed"] + result.counts["pending"] == result.counts["graded"]
    assert result.counts["caught"] == result.counts["mutants"] >= MIN_MUTANTS * len(modules)
    assert result.counts["variants_passed"] == result.counts["variants"] >= len(modules)


def test_without_nbgrader_the_stubs_are_the_committed_assignment(tmp_path, monkeypatch):
    """A CUDA runner may lack nbgrader (a dev dependency): validate then takes assignment/ as committed."""
    import grader.validate as v

    def no_nbgrader(dest):
        raise ModuleNotFoundError("No module named 'nbgrader'", name="nbgrader")

    monkeypatch.setattr(v, "write_assignment", no_nbgrader)
    console = Console(record=True, width=200)
    v.make_stubs(tmp_path / "stubs", console)
    committed = sorted(p.name for p in (KIT_ROOT / "assignment").glob("*.py"))
    assert sorted(p.name for p in (tmp_path / "stubs").glob("*.py")) == committed and committed
    assert all((tmp_path / "stubs" / n).read_text() == (KIT_ROOT / "assignment" / n).read_text() for n in committed)
    assert "nbgrader is not installed" in console.export_text()
