"""Kit self-test: `grader validate` (tests pass on solutions, fail as not attempted on stubs,
every mutant caught, every correct variant accepted) over every module the kit has."""

from __future__ import annotations

from rich.console import Console

from grader import KIT_ROOT
from grader.authoring.validate import validate
from grader.testing.totals import min_mutants


def test_validate_all_modules():
    """The whole validate, over every module; started in the background at collection (conftest.py)
    and waited for here, or run here when it was not started."""
    from tests.kit import background_validate

    found = background_validate.result()
    if found is None:
        console = Console(record=True, width=200)
        result = validate(background_validate.modules(), jobs=2, console=console)
        found = {"ok": result.ok, "counts": result.counts, "text": console.export_text()}
    counts, modules = found["counts"], background_validate.modules()
    assert found["ok"], found["text"]
    assert counts["passed"] + counts["pending"] == counts["graded"], found["text"]
    assert counts["caught"] == counts["mutants"] >= sum(min_mutants(m) for m in modules), found["text"]
    assert counts["variants_passed"] == counts["variants"] >= len(modules), found["text"]


def test_without_nbgrader_the_stubs_are_the_committed_assignment(tmp_path, monkeypatch):
    """A CUDA runner may lack nbgrader (a dev dependency): validate then takes assignment/ as committed."""
    import grader.authoring.validate as v

    def no_nbgrader(dest, solutions=None):
        raise ModuleNotFoundError("No module named 'nbgrader'", name="nbgrader")

    monkeypatch.setattr(v, "write_assignment", no_nbgrader)
    console = Console(record=True, width=200)
    v.make_stubs(tmp_path / "stubs", console)
    committed = sorted(p.name for p in (KIT_ROOT / "assignment").glob("*.py"))
    assert sorted(p.name for p in (tmp_path / "stubs").glob("*.py")) == committed and committed
    assert all((tmp_path / "stubs" / n).read_text() == (KIT_ROOT / "assignment" / n).read_text() for n in committed)
    assert "nbgrader is not installed" in console.export_text()


def test_an_edit_mutant_follows_the_reference_or_says_it_cannot():
    """An edit mutant changes exactly its old text inside its definition; when the reference no longer
    holds that text (or holds it twice), applying it is refused, naming the mutant, never a silent no-op."""
    import pytest

    from grader.authoring.mutants import Mutant, apply

    source = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    return x + 1\n"
    m = Mutant("memory", "f", "adds 2", "f_plus_two", "", old="x + 1", new="x + 2")
    assert apply(m, source) == source.replace("y = x + 1", "y = x + 2")  # g's "x + 1" is outside `within`
    for old in ("x + 3", "x"):  # gone, or not once
        with pytest.raises(LookupError, match="memory:f_plus_two"):
            apply(Mutant("memory", "f", "?", "f_plus_two", "", old=old, new="0"), source)


def test_gpu_mutants_are_not_counted_as_survivors_without_cuda(monkeypatch):
    """A mutant marked gpu=True is listed as not checkable on a machine without CUDA (validate says so),
    and graded like any other where CUDA is available."""
    import grader.authoring.validate as v
    from grader.authoring.mutants import load_mutants

    gpu = [m for m in load_mutants() if m.gpu]
    assert {m.id for m in gpu} >= {"data:pin_only_cuda_string", "checkpointing:save_without_cuda_generators"}
    graded: list = []
    monkeypatch.setattr(v, "run_mutants", lambda ms, tmp, jobs, result, console=None, root=None:
                        graded.extend(ms) or len(ms))
    monkeypatch.setattr(v, "run_variants", lambda *a, **kw: 0)
    monkeypatch.setattr(v, "load_variants", lambda modules, root=None: [])
    monkeypatch.setattr(v, "run_suite", lambda target, files, cwd=None: _fake_suite())
    monkeypatch.setattr(v, "make_stubs", lambda dest, console, root=None: None)
    for cuda in (False, True):
        graded.clear()
        monkeypatch.setattr(v, "_cuda_available", lambda: cuda)
        console = Console(record=True, width=200)
        result = v.validate(("data",), console=console)
        ids = {m.id for m in graded}
        assert ("data:pin_only_cuda_string" in ids) is cuda
        assert result.counts["gpu_mutants_not_checked"] == (0 if cuda else 1)
        assert ("GPU-only not checked here" in console.export_text()) is not cuda


def _fake_suite():
    from grader.testing.suite_process import SuiteRun

    return SuiteRun(records=[{"id": "t", "status": "passed", "message": ""}])
