"""`grader validate`: test the tests.

1. every graded test passes on `solutions/` (GPU tests may be pending without CUDA);
2. every graded test fails on the stubs, reported "not attempted";
3. every mutant in `tests/mutants/` is caught by at least one graded test of its module.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT, MODULES
from grader.mutants import Mutant, build_target, load_mutants
from grader.release import write_assignment
from grader.runner import run_suite, test_files


@dataclass
class Validation:
    solution_failures: list[str] = field(default_factory=list)
    stub_failures: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.solution_failures or self.stub_failures or self.survivors)


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
        write_assignment(stubs)
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

        def run_mutant(item: tuple[int, Mutant]) -> tuple[Mutant, list[str]]:
            i, m = item
            target = build_target(m, Path(tmp) / f"mutant{i}")
            run = run_suite(target, test_files((m.module,)), extra=("--maxfail=1",))
            return m, [r["id"] for r in run.records if r["status"] in ("failed", "error")]

        caught = 0
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for m, killers in pool.map(run_mutant, enumerate(mutants)):
                if killers:
                    caught += 1
                else:
                    result.survivors.append(f"{m.id} ({m.replaces}: {m.why})")
        console.print(f"mutants: {caught}/{len(mutants)} caught")
    per_module = {mod: sum(1 for m in mutants if m.module == mod) for mod in modules}
    thin = [mod for mod, n in per_module.items() if 0 < n < 3 or (n == 0 and (KIT_ROOT / "solutions" / f"{mod}.py").exists())]
    for mod in thin:
        result.survivors.append(f"{mod}: only {per_module[mod]} mutants (at least 3 per module)")
    result.counts = {"graded": graded, "passed": len(passed), "pending": len(pending),
                     "not_attempted": len(not_attempted), "mutants": len(mutants), "caught": caught}
    for title, items in (("fail on solutions", result.solution_failures),
                         ("not reported as not attempted on stubs", result.stub_failures),
                         ("mutants not caught", result.survivors)):
        if items:
            console.print(f"[red]{title}:[/red]")
            for line in items:
                console.print(f"  {line}", markup=False)
    return result
