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
