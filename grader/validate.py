"""`grader validate`: test the tests.

1. every graded test passes on `solutions/` (GPU tests may be pending without CUDA);
2. every graded test fails on the stubs, reported "not attempted";
3. every mutant in `tests/mutants/` is caught by at least one graded test of its module;
4. every correct variant in `tests/variants/` passes every graded test of its module.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT, MODULES
from grader.mutants import Mutant, build_target, load_mutants, load_variants
from grader.release import write_assignment
from grader.runner import run_suite, test_files


#: Mutants each module must have: the kit's own plus an independent breaking pass of at least ten
#: subtle ones per module (docs/CONTRIBUTING.md, "Mutants").
MIN_MUTANTS = 15


@dataclass
class Validation:
    solution_failures: list[str] = field(default_factory=list)
    stub_failures: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)
    rejected_variants: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.solution_failures or self.stub_failures or self.survivors or self.rejected_variants)


def grade_targets(targets: list[tuple[Path, str]], jobs: int, *, maxfail: bool = False,
                  report_dir: Path | None = None) -> list[list[dict]]:
    """Grade each implementation folder with its module's graded tests; the records of each run.

    The runs go through `grader.forkrun`: one process imports torch and the tests once and
    forks a fresh child per run (isolated, and several times faster than a new interpreter).
    """
    import json
    import os
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="kit-runs-") as tmp:
        folder = Path(report_dir or tmp)
        runs, reports = [], []
        for i, (target, module) in enumerate(targets):
            report = folder / f"run{i}.json"
            reports.append(report)
            runs.append({"args": [*test_files((module,)), f"--target={target}", f"--kit-report={report}", "-q",
                                  "-p", "no:cacheprovider", *(["--maxfail=1"] if maxfail else []),
                                  "--continue-on-collection-errors",
                                  # pass-or-fail needs no assertion rewriting (the parent's import is reused)
                                  "--assert=plain"]})
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        subprocess.run([sys.executable, "-m", "grader.forkrun", str(max(1, jobs))], input=json.dumps(runs), text=True,
                       cwd=KIT_ROOT, env=env, capture_output=True, check=False, timeout=3600)
        return [json.loads(r.read_text())["tests"] if r.exists() else [] for r in reports]


def _fork_runs(items: list[Mutant], tmp: Path, jobs: int, prefix: str, maxfail: bool) -> list[list[dict]]:
    """Each mutant or variant applied to a copy of the solutions, graded by its module's tests."""
    targets = [(build_target(m, tmp / f"{prefix}{i}"), m.module) for i, m in enumerate(items)]
    return grade_targets(targets, jobs, maxfail=maxfail)


def run_variants(variants: list[Mutant], tmp: Path, jobs: int, result: "Validation") -> int:
    """Every correct variant must pass every graded test of its module; the number that do."""
    accepted = 0
    for v, records in zip(variants, _fork_runs(variants, tmp, jobs, "variant", maxfail=False)):
        bad = [r for r in records if r["status"] not in ("passed", "pending")]
        if records and not bad:
            accepted += 1
        else:
            first = f"{bad[0]['id']}: {bad[0]['message']}" if bad else "its test run did not report"
            result.rejected_variants.append(f"{v.id} ({v.replaces}: {v.why}): {first}")
    return accepted


def run_mutants(mutants: list[Mutant], tmp: Path, jobs: int, result: "Validation") -> int:
    """Grade each mutant with its module's tests (stop at the first failure); count the caught ones."""
    caught = 0
    for m, records in zip(mutants, _fork_runs(mutants, tmp, jobs, "mutant", maxfail=True)):
        if any(r["status"] in ("failed", "error") for r in records):
            caught += 1
        else:
            why = "" if records else " (its test run did not report)"
            result.survivors.append(f"{m.id} ({m.replaces}: {m.why}){why}")
    return caught


def make_stubs(dest: Path, console: Console) -> None:
    """The stubs, generated from solutions/ with nbgrader; where nbgrader (a dev dependency) is not
    installed, e.g. on a CUDA runner, the committed assignment/ (which `grader release --check`
    keeps in sync with solutions/), said on the console."""
    try:
        write_assignment(dest)
    except ModuleNotFoundError as exc:
        committed = KIT_ROOT / "assignment"
        if not committed.is_dir():
            raise SystemExit(f"validate makes the stubs with nbgrader ({exc}): pip install nbgrader") from None
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(committed, dest)
        console.print(f"[yellow]{exc.name} is not installed: the stubs are assignment/ as committed "
                      "(`grader release --check` keeps it in sync with solutions/)[/yellow]")


def validate(modules: tuple[str, ...] = MODULES, jobs: int = 2, console: Console | None = None) -> Validation:
    console = console or Console()
    result = Validation()
    files = test_files(modules)
    if not (KIT_ROOT / "solutions").is_dir():
        raise SystemExit("validate needs the instructor repo (solutions/ is missing)")

    sol = run_suite("solutions", files)
    if not sol.records:
        raise SystemExit(f"the graded suites did not run on solutions:\n{sol.log}")
    graded = len(sol.records)
    passed = [r for r in sol.records if r["status"] == "passed"]
    pending = [r for r in sol.records if r["status"] == "pending"]
    result.solution_failures = [f"{r['id']}: {r['status']}: {r['message']}" for r in sol.records
                                if r["status"] not in ("passed", "pending")]
    console.print(f"solutions: {len(passed)}/{graded} graded tests pass"
                  + (f", {len(pending)} pending (GPU, no CUDA here)" if pending else ""))

    with tempfile.TemporaryDirectory(prefix="kit-validate-") as tmp:
        stubs = Path(tmp) / "stubs"
        make_stubs(stubs, console)
        stub_run = run_suite(stubs, files)
        not_attempted = [r for r in stub_run.records if r["status"] == "not_attempted"]
        result.stub_failures = [f"{r['id']}: {r['status']}: {r['message']}" for r in stub_run.records
                                if r["status"] not in ("not_attempted", "pending")]
        if len(stub_run.records) != graded:
            result.stub_failures.append(f"{len(stub_run.records)} tests ran on the stubs, {graded} on solutions")
        stub_pending = sum(1 for r in stub_run.records if r["status"] == "pending")
        otherwise = len(stub_run.records) - len(not_attempted) - stub_pending
        console.print(f"stubs: {len(not_attempted)}/{graded - stub_pending} graded tests fail as not attempted"
                      + (f", {stub_pending} pending (GPU)" if stub_pending else "")
                      + (f", [red]{otherwise} otherwise[/red]" if otherwise else ""))

        mutants = load_mutants(modules)

        caught = run_mutants(mutants, Path(tmp), jobs, result)
        console.print(f"mutants: {caught}/{len(mutants)} caught")
        variants = load_variants(modules)
        accepted = run_variants(variants, Path(tmp), jobs, result) if variants else 0
        console.print(f"correct variants: {accepted}/{len(variants)} pass every graded test")
    per_module = {mod: sum(1 for m in mutants if m.module == mod) for mod in modules}
    thin = [mod for mod, n in per_module.items() if 0 < n < MIN_MUTANTS or (n == 0 and (KIT_ROOT / "solutions" / f"{mod}.py").exists())]
    for mod in thin:
        result.survivors.append(f"{mod}: only {per_module[mod]} mutants (at least {MIN_MUTANTS} per module)")
    result.counts = {"graded": graded, "passed": len(passed), "pending": len(pending),
                     "not_attempted": len(not_attempted), "mutants": len(mutants), "caught": caught,
                     "variants": len(variants), "variants_passed": accepted}
    for title, items in (("fail on solutions", result.solution_failures),
                         ("not reported as not attempted on stubs", result.stub_failures),
                         ("mutants not caught", result.survivors),
                         ("correct variants that lose points", result.rejected_variants)):
        if items:
            console.print(f"[red]{title}:[/red]")
            for line in items:
                console.print(f"  {line}", markup=False)
    return result
